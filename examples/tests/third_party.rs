//! Coded QUIC falls back to plain QUIC with third-party stacks, in both
//! roles. Our tools offer `nc_parameters` by default (`--nc auto`); aioquic,
//! quic-go, ngtcp2 and kwik do not know it, skip it and send none of their own,
//! so the connection must be ordinary QUIC: every transfer is checked by
//! sha256, and our JSON lines must say that coding was not negotiated.
//!
//! The peers are installed on first use by
//! `interop/peers/setup-third-party.sh` into `<target>/third-party` (a
//! virtualenv with a pinned aioquic from PyPI running our
//! `interop/peers/aioquic/peer.py`; `interop/peers/quic-go` built with
//! `go build`; `interop/peers/kwik` compiled with `javac` against kwik's
//! and flupke's jars from Maven Central) and Debian's ngtcp2 example
//! programs. Without network access, Python's venv module, Go or a JDK,
//! these tests fail with the script's message.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use interop::relay::{RelayHandle, Stats};
use serde_json::Value;
use sha2::{Digest, Sha256};

mod common;
use common::*;

/// QUIC-NC's transport parameter id; the aioquic peer reports the ids it
/// received.
const NC_PARAMETERS: u64 = quic_nc::TRANSPORT_PARAM_ID;

/// Size of the `/bytes/N` downloads.
const N: usize = 1_000_000;

/// ngtcp2's example programs (Debian's `ngtcp2-server`, `ngtcp2-client`).
const GTLS_SERVER: &str = "/usr/sbin/gtlsserver";
const GTLS_CLIENT: &str = "/usr/bin/gtlsclient";

/// The installed peers.
struct Peers {
    aioquic: PathBuf,
    quic_go: PathBuf,
    kwik: PathBuf,
}

/// The peers [`third_party_dir`] installed.
fn peers() -> Peers {
    let dest = third_party_dir();
    Peers {
        aioquic: dest.join("aioquic-peer"),
        quic_go: dest.join("quic-go-peer"),
        kwik: dest.join("kwik-peer"),
    }
}

#[derive(Clone, Copy, Debug)]
enum Stack {
    Aioquic,
    QuicGo,
    Ngtcp2,
    Kwik,
}

use Stack::*;

impl Stack {
    /// What our client downloads from this stack's server, and its sha256:
    /// a file of the scratch root (aioquic, ngtcp2, kwik) or `/bytes/N` (quic-go,
    /// which serves nothing else). The file name qnc-client saves it under.
    fn resource(self, s: &Scratch) -> (String, Vec<u8>, &'static str) {
        match self {
            QuicGo => (format!("/bytes/{N}"), pattern_sha(N), "1000000"),
            Aioquic | Ngtcp2 | Kwik => (
                "/data.bin".into(),
                sha256(&s.path("root/data.bin")),
                "data.bin",
            ),
        }
    }

    /// Starts this stack's server on a free loopback port (serving the
    /// scratch root where it can).
    fn server(self, s: &Scratch) -> PeerServer {
        let cert = s.path("certs/cert.pem");
        let key = s.path("certs/key.pem");
        let err = s.path(&format!("{self:?}-server.err"));
        match self {
            Aioquic | Kwik => {
                let p = peers();
                let bin = if let Aioquic = self {
                    p.aioquic
                } else {
                    p.kwik
                };
                let mut c = Command::new(bin);
                c.args(["server", "--addr", "127.0.0.1:0", "--cert"])
                    .arg(cert)
                    .arg("--key")
                    .arg(key)
                    .arg("--root")
                    .arg(s.path("root"));
                PeerServer::start(c, err)
            }
            QuicGo => {
                let mut c = Command::new(&peers().quic_go);
                c.args(["server", "-addr", "127.0.0.1:0", "-cert"])
                    .arg(cert)
                    .arg("-key")
                    .arg(key);
                PeerServer::start(c, err)
            }
            Ngtcp2 => {
                peers();
                // gtlsserver prints no address: give it a free port and wait
                // until the port is bound.
                let mut last = String::new();
                for _ in 0..3 {
                    let port = UdpSocket::bind("127.0.0.1:0")
                        .unwrap()
                        .local_addr()
                        .unwrap()
                        .port();
                    let mut c = Command::new(GTLS_SERVER);
                    c.arg("-q")
                        .arg(format!("--htdocs={}", s.path("root").display()))
                        .arg("127.0.0.1")
                        .arg(port.to_string())
                        .arg(&key)
                        .arg(&cert);
                    let mut child = c
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(File::create(&err).unwrap())
                        .spawn()
                        .unwrap_or_else(|e| panic!("{GTLS_SERVER}: {e}"));
                    let until = Instant::now() + Duration::from_secs(20);
                    while Instant::now() < until {
                        if udp_port_bound(port) {
                            let (_tx, lines) = channel();
                            return PeerServer {
                                child,
                                port,
                                lines,
                                stderr: err,
                            };
                        }
                        if child.try_wait().unwrap().is_some() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    let _ = child.kill();
                    let _ = child.wait();
                    last = std::fs::read_to_string(&err).unwrap_or_default();
                }
                panic!("{GTLS_SERVER} did not start:\n{last}");
            }
        }
    }

    /// This stack's client downloads `url` (GET) into the scratch
    /// directory; returns the file and the client's JSON line (if it prints
    /// one).
    fn download(self, s: &Scratch, url: &str, tag: &str) -> (PathBuf, Option<Value>) {
        let ca = s.path("certs/ca.pem");
        match self {
            Aioquic => {
                let out = s.path(&format!("{tag}.bin"));
                let j = aioquic_client(s, url, Some(&out), None);
                assert_eq!(j["status"], 200, "{j}");
                assert_offered(&j, "aioquic client");
                (out, Some(j))
            }
            QuicGo => {
                let out = s.path(&format!("{tag}.bin"));
                let o = run(Command::new(&peers().quic_go)
                    .args(["client", "-url", url, "-ca"])
                    .arg(ca)
                    .arg("-out")
                    .arg(&out));
                ok(&o, "quic-go client");
                let j = json_lines(&o).remove(0);
                assert_eq!(j["status"], 200, "{j}");
                (out, Some(j))
            }
            Kwik => {
                // kwik checks the certificate against DNS names only: the
                // name "localhost", the packets to the URL's address.
                let dir = s.path(tag);
                let o = run(Command::new(&peers().kwik)
                    .args(["client", "--server-name", "localhost", "--ca"])
                    .arg(ca)
                    .arg("--outdir")
                    .arg(&dir)
                    .arg(url));
                ok(&o, "kwik client");
                let name = url.rsplit('/').next().unwrap();
                (dir.join(name), None)
            }
            Ngtcp2 => {
                // gtlsclient does not verify the server's certificate and
                // prints nothing useful: the file is the evidence.
                peers();
                let dir = s.path(tag);
                std::fs::create_dir_all(&dir).unwrap();
                let addr = url
                    .strip_prefix("https://")
                    .and_then(|r| r.split('/').next())
                    .unwrap();
                let (host, port) = addr.rsplit_once(':').unwrap();
                let o = run(Command::new(GTLS_CLIENT)
                    .args(["-q", "--exit-on-all-streams-close", "--disable-early-data"])
                    .arg(format!("--download={}", dir.display()))
                    .args([host, port, url]));
                ok(&o, "ngtcp2 client");
                let name = url.rsplit('/').next().unwrap();
                (dir.join(name), None)
            }
        }
    }
}

/// Whether some socket is bound to UDP 127.0.0.1:`port` (/proc/net/udp).
fn udp_port_bound(port: u16) -> bool {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string("/proc/net/udp")
        .map(|t| {
            t.lines()
                .skip(1)
                .any(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
        })
        .unwrap_or(false)
}

/// A third-party server process, killed on drop; its stdout lines after
/// its `listening ADDR` line arrive on `lines`, its stderr goes to a file.
struct PeerServer {
    child: Child,
    port: u16,
    lines: Receiver<String>,
    stderr: PathBuf,
}

impl PeerServer {
    fn start(mut cmd: Command, stderr: PathBuf) -> PeerServer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let Ok(first) = lines.recv_timeout(Duration::from_secs(30)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not print its address:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        };
        let addr = first.strip_prefix("listening ").expect("listening line");
        let port = addr.rsplit(':').next().unwrap().parse().unwrap();
        PeerServer {
            child,
            port,
            lines,
            stderr,
        }
    }

    /// The server's next JSON line (the aioquic peer prints one per request).
    fn line(&self) -> Value {
        let line = self.lines.recv_timeout(HANG_GUARD).unwrap_or_else(|_| {
            panic!(
                "no line from the server:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            )
        });
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The aioquic peer as a client of `url` (GET into `out`, or POST `upload`).
fn aioquic_client(s: &Scratch, url: &str, out: Option<&Path>, upload: Option<&Path>) -> Value {
    let mut c = Command::new(&peers().aioquic);
    c.args(["client", "--url", url, "--ca"])
        .arg(s.path("certs/ca.pem"));
    if let Some(o) = out {
        c.arg("--out").arg(o);
    }
    if let Some(u) = upload {
        c.arg("--upload").arg(u);
    }
    let o = run(&mut c);
    ok(&o, "aioquic client");
    json_lines(&o).remove(0)
}

/// `qnc-server --stats-json`'s line for the connection just closed.
fn server_line(srv: &Server) -> Value {
    let line = srv
        .lines
        .recv_timeout(HANG_GUARD)
        .expect("qnc-server stats line");
    serde_json::from_str(&line).unwrap()
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn hex(h: &[u8]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of `/bytes/n`: byte i is `'a' + i % 26`.
fn pattern_sha(n: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
    Sha256::digest(data).to_vec()
}

/// Our JSON line (client or server) says plain QUIC: coding not negotiated,
/// nothing coded sent or received.
fn assert_plain(j: &Value, what: &str) {
    assert_eq!(j["coded"], false, "{what}: coded: {j}");
    assert_eq!(j["nc"]["negotiated"], false, "{what}: negotiated: {j}");
    for k in ["sources", "repairs"] {
        assert_eq!(j["nc"]["sent"][k], 0, "{what}: nc.sent.{k}: {j}");
        assert_eq!(j["nc"]["received"][k], 0, "{what}: nc.received.{k}: {j}");
    }
}

/// The aioquic peer received our `nc_parameters`: we did offer coding.
fn assert_offered(j: &Value, what: &str) {
    assert_eq!(j["peer_offered_nc"], true, "{what}: {j}");
    let ids = j["peer_transport_parameters"].as_array().unwrap();
    assert!(
        ids.iter().any(|v| v.as_u64() == Some(NC_PARAMETERS)),
        "{what}: {j}"
    );
}

/// A relay to `port`: 50 Mbit/s, 5 ms each way, a BDP buffer, Bernoulli
/// loss `p` both ways.
fn relay(port: u16, p: f64, seed: u64) -> RelayHandle {
    relay_with(
        port,
        link(50_000_000, Duration::from_millis(5), bernoulli(p)),
        seed,
    )
}

fn url(port: u16, path: &str) -> String {
    format!("https://127.0.0.1:{port}{path}")
}

fn assert_lossy(stats: &Stats, what: &str) {
    assert!(
        stats.up.link.lost_packets > 0 && stats.down.link.lost_packets > 0,
        "{what}: the relay dropped nothing: {stats:?}"
    );
}

/// qnc-client downloads `stack`'s resource from its server (directly or
/// through a relay with loss `p`); checks the file and the plain-QUIC JSON
/// line.
fn our_client_downloads(stack: Stack, p: f64) {
    let s = setup(&format!("tp-{stack:?}-server-{p}"));
    let srv = stack.server(&s);
    let r = (p > 0.0).then(|| relay(srv.port, p, 31));
    let port = r.as_ref().map_or(srv.port, |r| r.local_addr().port());
    let (path, sha, name) = stack.resource(&s);
    let out = s.path("out");
    let o = client(
        &s,
        &["--json", "--out", out.to_str().unwrap(), &url(port, &path)],
    );
    let stats = r.map(RelayHandle::stop);
    ok(&o, &format!("qnc-client from {stack:?}"));
    assert_eq!(sha256(&out.join(name)), sha, "{stack:?}: file differs");
    let c = json_lines(&o).remove(0);
    assert_eq!(c["status"], 200, "{c}");
    assert_plain(&c, &format!("qnc-client from {stack:?} at loss {p}"));
    if let Some(stats) = stats {
        assert_lossy(&stats, &format!("{stack:?}"));
    }
    if let Aioquic = stack {
        assert_offered(&srv.line(), "aioquic server");
    }
}

/// `stack`'s client downloads `/data.bin` from qnc-server (directly or
/// through a relay with loss `p`); checks the file and our server's
/// plain-QUIC JSON line. Returns the server's line.
fn our_server_serves(stack: Stack, p: f64) -> Value {
    let s = setup(&format!("tp-{stack:?}-client-{p}"));
    let srv = Server::start(&s, &["--stats-json"]);
    let r = (p > 0.0).then(|| relay(srv.port, p, 21));
    let port = r.as_ref().map_or(srv.port, |r| r.local_addr().port());
    let (file, j) = stack.download(&s, &url(port, "/data.bin"), "dl");
    let l = server_line(&srv);
    let stats = r.map(RelayHandle::stop);
    assert_eq!(
        sha256(&file),
        sha256(&s.path("root/data.bin")),
        "{stack:?}: file differs"
    );
    if let Some(j) = j {
        assert_eq!(j["bytes"], 2_000_000, "{j}");
    }
    assert_plain(&l, &format!("qnc-server serving {stack:?} at loss {p}"));
    if let Some(stats) = stats {
        assert_lossy(&stats, &format!("{stack:?}"));
    }
    l
}

/// qnc-client fetches `paths` from the server on `port` in one connection
/// into `out/`; returns that directory and the client's JSON line.
fn our_client_fetches(s: &Scratch, port: u16, paths: &[&str]) -> (PathBuf, Value) {
    let out = s.path("out");
    let urls: Vec<String> = paths.iter().map(|p| url(port, p)).collect();
    let mut args = vec!["--json", "--out", out.to_str().unwrap()];
    args.extend(urls.iter().map(String::as_str));
    let o = client(s, &args);
    ok(&o, "qnc-client");
    let c = json_lines(&o).remove(0);
    (out, c)
}

/// qnc-client against the aioquic server: a file and `/bytes/N` in one
/// connection, then an upload; plain QUIC although the aioquic server did
/// receive our `nc_parameters`.
#[test]
fn our_client_falls_back_with_aioquic_server() {
    let s = setup("tp-aioquic-srv");
    let srv = Aioquic.server(&s);
    let (out, c) = our_client_fetches(&s, srv.port, &["/data.bin", &format!("/bytes/{N}")]);
    assert_eq!(
        sha256(&out.join("data.bin")),
        sha256(&s.path("root/data.bin"))
    );
    assert_eq!(sha256(&out.join(N.to_string())), pattern_sha(N));
    assert_eq!(c["requests"], 2);
    assert_eq!(c["bytes"], 2_000_000 + N as u64);
    assert_plain(&c, "qnc-client download from aioquic");
    for _ in 0..2 {
        let l = srv.line();
        assert_eq!(l["status"], 200, "{l}");
        assert_offered(&l, "aioquic server");
    }

    // Upload: the aioquic server's x-sha256 receipt must match (qnc-client
    // checks it and fails otherwise).
    let file = s.path("root/data.bin");
    let o = client(
        &s,
        &[
            "--json",
            "--upload",
            file.to_str().unwrap(),
            &url(srv.port, "/upload"),
        ],
    );
    ok(&o, "qnc-client --upload");
    let c = json_lines(&o).remove(0);
    assert_eq!(c["uploaded"], 2_000_000);
    assert_eq!(c["upload_sha256"], hex(&sha256(&file)).as_str());
    assert_plain(&c, "qnc-client upload to aioquic");
    let l = srv.line();
    assert_eq!(l["bytes_received"], 2_000_000, "{l}");
    assert_offered(&l, "aioquic server (upload)");
}

/// The aioquic client against qnc-server: `/bytes/N`, `/data.bin` and an
/// upload; our server offered `nc_parameters` (the client saw them) and
/// ran plain QUIC each time.
#[test]
fn our_server_falls_back_with_aioquic_client() {
    let s = setup("tp-aioquic-cli");
    let srv = Server::start(&s, &["--stats-json"]);
    let out = s.path("dl.bin");
    let c = aioquic_client(&s, &srv.url(&format!("/bytes/{N}")), Some(&out), None);
    assert_eq!(c["status"], 200, "{c}");
    assert_eq!(c["bytes"], N as u64);
    assert_eq!(sha256(&out), pattern_sha(N));
    assert_offered(&c, "aioquic client");
    let l = server_line(&srv);
    assert_plain(&l, "qnc-server serving aioquic");
    assert!(l["bytes_sent"].as_u64().unwrap() >= N as u64, "{l}");

    our_server_serves(Aioquic, 0.0);

    let file = s.path("root/data.bin");
    let c = aioquic_client(&s, &srv.url("/upload"), None, Some(&file));
    assert_eq!(c["status"], 200, "{c}");
    assert_eq!(c["uploaded"], 2_000_000);
    assert_eq!(c["upload_sha256"], hex(&sha256(&file)).as_str());
    assert_plain(&server_line(&srv), "qnc-server receiving from aioquic");
}

/// qnc-client against the quic-go server: two `/bytes/N` in one connection.
#[test]
fn our_client_falls_back_with_quic_go_server() {
    let s = setup("tp-quic-go-srv");
    let srv = QuicGo.server(&s);
    let (out, c) = our_client_fetches(&s, srv.port, &[&format!("/bytes/{N}"), "/bytes/300000"]);
    assert_eq!(sha256(&out.join(N.to_string())), pattern_sha(N));
    assert_eq!(sha256(&out.join("300000")), pattern_sha(300_000));
    assert_eq!(c["requests"], 2);
    assert_eq!(c["bytes"], N as u64 + 300_000);
    assert_plain(&c, "qnc-client download from quic-go");
}

/// The quic-go client against qnc-server.
#[test]
fn our_server_falls_back_with_quic_go_client() {
    our_server_serves(QuicGo, 0.0);
}

/// qnc-client against ngtcp2's server.
#[test]
fn our_client_falls_back_with_ngtcp2_server() {
    our_client_downloads(Ngtcp2, 0.0);
}

/// ngtcp2's client against qnc-server.
#[test]
fn our_server_falls_back_with_ngtcp2_client() {
    our_server_serves(Ngtcp2, 0.0);
}

/// qnc-client against kwik's (flupke's) HTTP/3 server.
#[test]
fn our_client_falls_back_with_kwik_server() {
    our_client_downloads(Kwik, 0.0);
}

/// kwik's (flupke's) HTTP/3 client against qnc-server.
#[test]
fn our_server_falls_back_with_kwik_client() {
    our_server_serves(Kwik, 0.0);
}

/// Across 3 % Bernoulli loss each way, both roles of every stack: the
/// fallback connection recovers by retransmission (our server sends no
/// repair symbols but retransmits) and every transfer arrives intact.
#[test]
fn fallback_recovers_losses_by_retransmission() {
    for stack in [Aioquic, QuicGo, Ngtcp2, Kwik] {
        let l = our_server_serves(stack, 0.03);
        assert!(
            l["packets_lost"].as_u64().unwrap() > 0 && l["retrans_bytes"].as_u64().unwrap() > 0,
            "{stack:?}: qnc-server retransmitted nothing: {l}"
        );
        our_client_downloads(stack, 0.03);
    }
}
