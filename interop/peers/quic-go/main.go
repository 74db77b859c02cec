// quic-go-peer: a quic-go HTTP/3 server and client for
// `nc-experiment --compete` (flows `quic-go:cubic`).
//
//	quic-go-peer server -addr 127.0.0.1:4433 -cert cert.pem -key key.pem
//	quic-go-peer client -url https://127.0.0.1:4433/bytes/N -ca ca.pem [-out FILE]
//
// The server serves GET /bytes/N: N bytes of the same pattern as
// qnc-server (byte i is 'a' + i%26). It prints "listening ADDR" once its
// socket is bound. The client downloads one URL (verifying the server
// against -ca), optionally writes the body to -out, and prints one JSON
// line {"role":"client","bytes":...,"duration_s":...,"status":...};
// duration_s runs from before the handshake to the last body byte, like
// qnc-client's. quic-go's congestion controller is its CUBIC (the only one
// it has). Flow-control windows are set far above the link's BDP.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

const maxBytes = 10_000_000_000 // like qnc-server's cap

func quicConfig(idle time.Duration) *quic.Config {
	return &quic.Config{
		MaxIdleTimeout:                 idle,
		InitialStreamReceiveWindow:     16 << 20,
		MaxStreamReceiveWindow:         64 << 20,
		InitialConnectionReceiveWindow: 24 << 20,
		MaxConnectionReceiveWindow:     96 << 20,
	}
}

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "quic-go-peer: "+format+"\n", a...)
	os.Exit(1)
}

// pattern writes n bytes of the /bytes/<n> pattern to w.
func pattern(w io.Writer, n int64) error {
	chunk := make([]byte, 64*1024+26)
	for i := range chunk {
		chunk[i] = 'a' + byte(i%26)
	}
	var off int64
	for off < n {
		l := min(n-off, 64*1024)
		s := off % 26
		if _, err := w.Write(chunk[s : s+l]); err != nil {
			return err
		}
		off += l
	}
	return nil
}

func serve(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:4433", "listen address")
	cert := fs.String("cert", "cert.pem", "certificate chain (PEM)")
	key := fs.String("key", "key.pem", "private key (PEM)")
	idle := fs.Duration("idle-timeout", 30*time.Second, "QUIC idle timeout")
	fs.Parse(args)
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		die("%v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/bytes/", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/bytes/"), 10, 64)
		if err != nil || n < 0 || n > maxBytes {
			http.Error(w, "/bytes/<n> needs a decimal count up to 10 GB", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		w.Header().Set("Content-Type", "application/octet-stream")
		pattern(w, n)
	})
	udp, err := net.ListenPacket("udp", *addr)
	if err != nil {
		die("%v", err)
	}
	fmt.Printf("listening %s\n", udp.LocalAddr())
	srv := http3.Server{
		Handler:    mux,
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}}),
		QUICConfig: quicConfig(*idle),
	}
	if err := srv.Serve(udp); err != nil {
		die("%v", err)
	}
}

func client(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	url := fs.String("url", "", "URL to download")
	ca := fs.String("ca", "", "trust anchor (PEM); the system roots if empty")
	out := fs.String("out", "", "write the body here (default: discard)")
	timeout := fs.Duration("timeout", 300*time.Second, "overall timeout")
	fs.Parse(args)
	if *url == "" {
		die("client needs -url")
	}
	tlsConf := &tls.Config{}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			die("%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			die("%s: no certificate", *ca)
		}
		tlsConf.RootCAs = pool
	}
	var sink io.Writer = io.Discard
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			die("%v", err)
		}
		defer f.Close()
		sink = f
	}
	tr := &http3.Transport{TLSClientConfig: tlsConf, QUICConfig: quicConfig(30 * time.Second)}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		die("%v", err)
	}
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		die("%v", err)
	}
	n, err := io.Copy(sink, resp.Body)
	resp.Body.Close()
	dur := time.Since(start)
	if err != nil {
		die("after %d bytes: %v", n, err)
	}
	line, _ := json.Marshal(map[string]any{
		"role":       "client",
		"bytes":      n,
		"duration_s": dur.Seconds(),
		"status":     resp.StatusCode,
	})
	fmt.Println(string(line))
}

func main() {
	if len(os.Args) < 2 {
		die("usage: quic-go-peer server|client [flags]")
	}
	switch os.Args[1] {
	case "server":
		serve(os.Args[2:])
	case "client":
		client(os.Args[2:])
	default:
		die("unknown mode %q (server|client)", os.Args[1])
	}
}
