// quic-go-peer: a quic-go HTTP/3 server and client, for
// `nc-experiment --compete` (flows `quic-go:cubic`), the third-party
// fallback tests and nc-interop (interop/peers/endpoints/quic-go.sh).
//
//	quic-go-peer server -addr 127.0.0.1:4433 -cert cert.pem -key key.pem
//	                    [-idle-timeout D] [-root DIR] [-retry] [-0rtt]
//	quic-go-peer client -url https://127.0.0.1:4433/bytes/N -ca ca.pem [-out FILE]
//	                    [-timeout D] [-url URL ...] [-outdir DIR]
//	                    [-multiconnect | -resume [-0rtt]] [URL ...]
//
// The server serves GET /bytes/N: N bytes of the same pattern as
// qnc-server (byte i is 'a' + i%26), and with -root the files of DIR
// (GET /<name>). It prints "listening ADDR" once its socket is bound.
// -retry makes it send a Retry to every connection attempt that carries
// no valid token (quic.Transport.VerifySourceAddress); -0rtt makes it
// accept 0-RTT (quic.Config.Allow0RTT; session tickets are issued in any
// case, by crypto/tls).
//
// The client downloads its URLs (-url, repeatable, and the positional
// arguments), verifying the server against -ca, and prints one JSON line
// per URL {"role":"client","bytes":...,"duration_s":...,"status":...,
// "url":...,"conn":...,"resumed":...,"used_0rtt":...}; duration_s runs
// from before the handshake of the URL's connection to the last body
// byte, like qnc-client's. A body goes to -out (one URL only) or to
// -outdir/<last path segment of the URL>, else it is discarded. The
// client exits non-zero unless every URL answered 200 and was saved.
// Connections:
//
//   - by default all URLs go in parallel on one connection;
//   - -multiconnect: one new connection per URL, one after the other;
//   - -resume: the first URL on connection 1; once it brought a session
//     ticket, connection 1 is closed and the other URLs go in parallel on
//     connection 2, which resumes the TLS session (the ticket is kept in
//     memory: tls.ClientSessionCache) without 0-RTT, and must resume;
//     connection 2 waits for the next whole second after the ticket
//     arrived (up to 1 s; see ceilSecond);
//   - -0rtt (implies -resume): connection 2 sends its requests in 0-RTT
//     (http3.MethodGet0RTT on a quic.Transport.DialEarly connection), and
//     the server must accept them.
//
// SSLKEYLOGFILE (TLS secrets) and QLOGDIR (qlog files, quic-go's
// qlog.DefaultConnectionTracer) are honoured when set. quic-go's
// congestion controller is its CUBIC (the only one it has). Flow-control
// windows are set far above the link's BDP. quic-go initiates a key update
// on its own once 100 packets went either way with the first 1-RTT keys.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
)

const maxBytes = 10_000_000_000 // like qnc-server's cap

func quicConfig(idle time.Duration) *quic.Config {
	c := &quic.Config{
		MaxIdleTimeout:                 idle,
		InitialStreamReceiveWindow:     16 << 20,
		MaxStreamReceiveWindow:         64 << 20,
		InitialConnectionReceiveWindow: 24 << 20,
		MaxConnectionReceiveWindow:     96 << 20,
	}
	if os.Getenv("QLOGDIR") != "" {
		c.Tracer = qlog.DefaultConnectionTracer
	}
	return c
}

// keyLog opens $SSLKEYLOGFILE for crypto/tls's KeyLogWriter (nil if unset).
func keyLog() io.Writer {
	name := os.Getenv("SSLKEYLOGFILE")
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		die("SSLKEYLOGFILE: %v", err)
	}
	return f
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
	root := fs.String("root", "", "also serve the files of this directory (GET /<name>)")
	retry := fs.Bool("retry", false, "send a Retry to every connection attempt without a valid token")
	early := fs.Bool("0rtt", false, "accept 0-RTT")
	fs.Parse(args)
	if fs.NArg() > 0 {
		die("server: unexpected arguments %q", fs.Args())
	}
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
	if *root != "" {
		if st, err := os.Stat(*root); err != nil || !st.IsDir() {
			die("-root %s: not a directory", *root)
		}
		mux.Handle("/", http.FileServer(http.Dir(*root)))
	}
	udp, err := net.ListenPacket("udp", *addr)
	if err != nil {
		die("%v", err)
	}
	fmt.Printf("listening %s\n", udp.LocalAddr())
	tlsConf := &tls.Config{Certificates: []tls.Certificate{pair}, KeyLogWriter: keyLog()}
	qc := quicConfig(*idle)
	qc.Allow0RTT = *early
	srv := http3.Server{
		Handler:    mux,
		TLSConfig:  http3.ConfigureTLSConfig(tlsConf),
		QUICConfig: qc,
	}
	if !*retry {
		err = srv.Serve(udp)
	} else {
		// Address validation is a property of the quic.Transport, which
		// http3.Server.Serve would create itself: build it here and serve
		// its listener.
		tr := &quic.Transport{
			Conn:                udp,
			VerifySourceAddress: func(net.Addr) bool { return true },
		}
		ln, lerr := tr.ListenEarly(http3.ConfigureTLSConfig(tlsConf), qc)
		if lerr != nil {
			die("%v", lerr)
		}
		err = srv.ServeListener(ln)
	}
	if err != nil {
		die("%v", err)
	}
}

// urlList collects repeated -url flags.
type urlList []string

func (u *urlList) String() string     { return strings.Join(*u, " ") }
func (u *urlList) Set(v string) error { *u = append(*u, v); return nil }

// ticketCache is a tls.ClientSessionCache that says when a ticket arrives.
type ticketCache struct {
	tls.ClientSessionCache
	put  chan struct{}
	mu   sync.Mutex
	last time.Time // when the last ticket was put
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.mu.Lock()
		c.last = time.Now()
		c.mu.Unlock()
		select {
		case c.put <- struct{}{}:
		default:
		}
	}
}

func (c *ticketCache) lastPut() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// ceilSecond rounds t up to a whole second. crypto/tls stamps a ticket
// with its arrival time in whole seconds (tls.Config.Time, truncated), so
// on the real clock the obfuscated_ticket_age of a resumption overstates
// the age by up to 1 s, and GnuTLS (ngtcp2's server) rejects 0-RTT
// whenever the client's age exceeds its own ("replay detected"). With
// connection 1 on this clock, the stamp is at or after the arrival and the
// age errs on the young side instead (by less than 1 s); connection 2
// starts once the real clock has passed the stamp, so the age is not
// negative.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// clientRun is what the client's connections share.
type clientRun struct {
	tls     *tls.Config
	quic    *quic.Config
	udp     *quic.Transport // one UDP socket for every connection
	ctx     context.Context
	out     string // -out
	outdir  string // -outdir
	printMu sync.Mutex
	conns   int // connections opened so far
}

// result of one URL.
type result struct {
	url    string
	status int
	bytes  int64
	dur    time.Duration
	err    error
}

// connection opens HTTP/3 connection number c.conns+1 (lazily, at its
// first request): early selects quic.Transport.DialEarly (0-RTT).
func (r *clientRun) connection(early bool) (*http3.Transport, func() *quic.Conn) {
	r.conns++
	var mu sync.Mutex
	var qconn *quic.Conn
	h3 := &http3.Transport{
		TLSClientConfig: r.tls,
		QUICConfig:      r.quic,
		Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			ua, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			var c *quic.Conn
			if early {
				c, err = r.udp.DialEarly(ctx, ua, tlsConf, qc)
			} else {
				c, err = r.udp.Dial(ctx, ua, tlsConf, qc)
			}
			if err == nil {
				mu.Lock()
				qconn = c
				mu.Unlock()
			}
			return c, err
		},
	}
	return h3, func() *quic.Conn { mu.Lock(); defer mu.Unlock(); return qconn }
}

// sink opens where the body of u goes.
func (r *clientRun) sink(u string) (io.WriteCloser, error) {
	switch {
	case r.out != "":
		return os.Create(r.out)
	case r.outdir != "":
		pu, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		name := path.Base(pu.Path)
		if name == "/" || name == "." || name == "" {
			name = "index.html"
		}
		return os.Create(filepath.Join(r.outdir, name))
	default:
		return nopCloser{io.Discard}, nil
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (r *clientRun) fetch(h3 *http3.Transport, u string, early bool, start time.Time) result {
	res := result{url: u}
	method := http.MethodGet
	if early {
		method = http3.MethodGet0RTT
	}
	req, err := http.NewRequestWithContext(r.ctx, method, u, nil)
	if err != nil {
		res.err = err
		return res
	}
	resp, err := h3.RoundTrip(req)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	w, err := r.sink(u)
	if err != nil {
		res.err = err
		return res
	}
	res.bytes, err = io.Copy(w, resp.Body)
	res.dur = time.Since(start)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		res.err = fmt.Errorf("after %d bytes: %w", res.bytes, err)
	} else if res.status != http.StatusOK {
		res.err = fmt.Errorf("status %d", res.status)
	}
	return res
}

// batch fetches urls in parallel on one new connection, prints their
// JSON lines, runs beforeClose (if any and all went well) and closes the
// connection; it returns the connection's state (if it got that far) and
// the first error.
func (r *clientRun) batch(urls []string, early bool, beforeClose func() error) (*quic.ConnectionState, error) {
	h3, conn := r.connection(early)
	defer h3.Close()
	n := r.conns
	start := time.Now()
	results := make([]result, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.fetch(h3, u, early, start)
		}()
	}
	wg.Wait()
	var state *quic.ConnectionState
	if c := conn(); c != nil {
		s := c.ConnectionState()
		state = &s
	}
	var first error
	for _, res := range results {
		if res.err != nil && first == nil {
			first = fmt.Errorf("%s: %w", res.url, res.err)
		}
		if res.err != nil && res.status == 0 {
			continue // no response: no line
		}
		line := map[string]any{
			"role":       "client",
			"bytes":      res.bytes,
			"duration_s": res.dur.Seconds(),
			"status":     res.status,
			"url":        res.url,
			"conn":       n,
		}
		if state != nil {
			line["resumed"] = state.TLS.DidResume
			line["used_0rtt"] = state.Used0RTT
		}
		b, _ := json.Marshal(line)
		r.printMu.Lock()
		fmt.Println(string(b))
		r.printMu.Unlock()
	}
	if first == nil && beforeClose != nil {
		first = beforeClose()
	}
	return state, first
}

func client(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	var urls urlList
	fs.Var(&urls, "url", "URL to download (repeatable; positional URLs are added)")
	ca := fs.String("ca", "", "trust anchor (PEM); the system roots if empty")
	out := fs.String("out", "", "write the body here, one URL only (default: discard)")
	outdir := fs.String("outdir", "", "write each body to DIR/<last path segment of its URL>")
	timeout := fs.Duration("timeout", 300*time.Second, "overall timeout")
	multi := fs.Bool("multiconnect", false, "one new connection per URL")
	resume := fs.Bool("resume", false, "first URL on connection 1, the rest on a resumed connection 2")
	early := fs.Bool("0rtt", false, "like -resume, with connection 2's requests in 0-RTT")
	ticketWait := fs.Duration("ticket-wait", 5*time.Second, "-resume: how long to wait for a session ticket")
	fs.Parse(args)
	urls = append(urls, fs.Args()...)
	if len(urls) == 0 {
		die("client needs -url")
	}
	if *out != "" && len(urls) > 1 {
		die("-out takes one URL; use -outdir for several")
	}
	if *early {
		*resume = true
	}
	if *multi && *resume {
		die("-multiconnect and -resume/-0rtt exclude each other")
	}
	tlsConf := &tls.Config{KeyLogWriter: keyLog()}
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
	tickets := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(8), put: make(chan struct{}, 1)}
	if *resume {
		tlsConf.ClientSessionCache = tickets
		tlsConf.Time = func() time.Time { return ceilSecond(time.Now()) }
	}
	if *outdir != "" {
		if err := os.MkdirAll(*outdir, 0o755); err != nil {
			die("%v", err)
		}
	}
	udp, err := net.ListenUDP("udp", nil)
	if err != nil {
		die("%v", err)
	}
	qtr := &quic.Transport{Conn: udp}
	defer qtr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	r := &clientRun{
		tls:    tlsConf,
		quic:   quicConfig(30 * time.Second),
		udp:    qtr,
		ctx:    ctx,
		out:    *out,
		outdir: *outdir,
	}
	fail := func(err error) {
		qtr.Close()
		die("%v", err)
	}
	switch {
	case *multi:
		for _, u := range urls {
			if _, err := r.batch([]string{u}, false, nil); err != nil {
				fail(err)
			}
		}
	case *resume:
		// Connection 1 stays open until the session ticket is in the cache.
		waitTicket := func() error {
			select {
			case <-tickets.put:
				return nil
			case <-time.After(*ticketWait):
				return errors.New("the server sent no session ticket on connection 1")
			}
		}
		if _, err := r.batch(urls[:1], false, waitTicket); err != nil {
			fail(err)
		}
		if len(urls) == 1 {
			break
		}
		// Connection 2 on the real clock, once that has passed the
		// (rounded-up) time stamp of every ticket: see ceilSecond.
		if d := time.Until(ceilSecond(tickets.lastPut())); d > 0 {
			time.Sleep(d + time.Millisecond)
		}
		r.tls = r.tls.Clone()
		r.tls.Time = nil
		st, err := r.batch(urls[1:], *early, nil)
		if err != nil {
			fail(err)
		}
		if st == nil || !st.TLS.DidResume {
			fail(errors.New("connection 2 did not resume the TLS session"))
		}
		if *early && !st.Used0RTT {
			fail(errors.New("the server rejected 0-RTT on connection 2"))
		}
	default:
		if _, err := r.batch(urls, false, nil); err != nil {
			fail(err)
		}
	}
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
