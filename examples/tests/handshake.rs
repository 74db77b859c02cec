//! Handshake features of the tools, end to end: address validation with
//! Retry, session resumption from a stored ticket, 0-RTT requests, and
//! IPv6. Each download is checked by sha256, and the JSON lines of both
//! ends must say what happened.

use std::process::Command;

mod common;
use common::*;

/// Fetches `/data.bin` with `extra` client flags; returns the client's JSON
/// line after checking the download.
fn fetch(s: &Scratch, url: &str, extra: &[&str]) -> serde_json::Value {
    let out = s.path("out");
    let o = run(Command::new(CLIENT)
        .arg("--ca")
        .arg(s.path("certs/ca.pem"))
        .arg("--out")
        .arg(&out)
        .args(["--json", "--timeout", "20"])
        .args(extra)
        .arg(url));
    assert!(o.status.success(), "client failed: {:?}", stderr_lines(&o));
    assert_eq!(
        sha256(&out.join("data.bin")),
        sha256(&s.path("root/data.bin"))
    );
    std::fs::remove_file(out.join("data.bin")).unwrap();
    json_lines(&o).pop().expect("one JSON line")
}

/// The server's JSON lines for the `n` connections made, then stops it.
fn server_lines(srv: Server, n: usize) -> Vec<serde_json::Value> {
    let v = srv.json_lines(n);
    srv.stop();
    v
}

#[test]
fn retry_then_resumption_then_zero_rtt() {
    let s = setup("handshake");
    let srv = Server::start(&s, &["--retry", "--early-data", "--stats-json"]);
    let url = srv.url("/data.bin");
    let ticket = s.path("session.bin");
    let ticket_s = ticket.to_str().unwrap();

    // First connection: full handshake; the ticket is stored.
    let first = fetch(&s, &url, &["--session-file", ticket_s, "--early-data"]);
    assert_eq!(first["resumed"], false);
    assert_eq!(first["early_data"], false);
    assert!(
        std::fs::metadata(&ticket).unwrap().len() > 0,
        "no ticket stored"
    );

    // Second: resumed, requests in 0-RTT.
    let second = fetch(&s, &url, &["--session-file", ticket_s, "--early-data"]);
    assert_eq!(second["resumed"], true, "{second}");
    assert_eq!(second["early_data"], true, "{second}");

    // Third: resumed, but without --early-data the request waits for 1-RTT.
    let third = fetch(&s, &url, &["--session-file", ticket_s]);
    assert_eq!(third["resumed"], true);
    assert_eq!(third["early_data"], false);

    let lines = server_lines(srv, 3);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines.iter().all(|l| l["retry"] == true), "{lines:?}");
    let resumed: Vec<_> = lines.iter().map(|l| l["resumed"] == true).collect();
    assert_eq!(resumed.iter().filter(|r| **r).count(), 2, "{lines:?}");
    assert_eq!(lines.iter().filter(|l| l["early_data"] == true).count(), 1);
}

#[test]
fn server_without_early_data_refuses_zero_rtt_but_resumes() {
    let s = setup("no-0rtt");
    let srv = Server::start(&s, &["--stats-json"]);
    let url = srv.url("/data.bin");
    let ticket = s.path("session.bin");
    let t = ticket.to_str().unwrap();
    fetch(&s, &url, &["--session-file", t, "--early-data"]);
    let again = fetch(&s, &url, &["--session-file", t, "--early-data"]);
    assert_eq!(again["resumed"], true);
    assert_eq!(
        again["early_data"], false,
        "0-RTT accepted by a server without --early-data"
    );
    let lines = server_lines(srv, 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l["retry"] == false), "{lines:?}");
}

#[test]
fn a_corrupt_session_file_means_a_full_handshake() {
    let s = setup("bad-ticket");
    let srv = Server::start(&s, &[]);
    let ticket = s.path("session.bin");
    std::fs::write(&ticket, b"not a ticket").unwrap();
    let r = fetch(
        &s,
        &srv.url("/data.bin"),
        &["--session-file", ticket.to_str().unwrap()],
    );
    assert_eq!(r["resumed"], false);
    // The good ticket of this connection replaced the corrupt one.
    assert_ne!(std::fs::read(&ticket).unwrap(), b"not a ticket");
}

#[test]
fn downloads_over_ipv6() {
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback on this machine");
        return;
    }
    let s = setup("ipv6");
    let srv = Server::start_on(&s, "[::1]:0", &["--retry"], &[]);
    let url = format!("https://[::1]:{}/data.bin", srv.port);
    let r = fetch(&s, &url, &[]);
    assert_eq!(r["status"], 200);
}

/// Initial datagrams a client sends to a port that never answers, until
/// its 2 s handshake limit; `cache` is its --rtt-cache file.
fn initials_to_a_silent_port(s: &Scratch, cache: &std::path::Path, rtt_us: Option<u64>) -> usize {
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(std::time::Duration::from_millis(50)))
        .unwrap();
    let port = sink.local_addr().unwrap().port();
    let _ = std::fs::remove_file(cache);
    if let Some(us) = rtt_us {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        std::fs::write(cache, format!("127.0.0.1:{port} {us} {now}\n")).unwrap();
    }
    let mut child = Command::new(CLIENT)
        .arg("--ca")
        .arg(s.path("certs/ca.pem"))
        .args(["--idle-timeout", "2000", "--rtt-cache"])
        .arg(cache)
        .arg(format!("https://127.0.0.1:{port}/x"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + HANG_GUARD;
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "client hangs");
        if let Ok(len) = sink.recv(&mut buf) {
            assert!(len >= 1200, "Initial datagrams are padded");
            n += 1;
        }
    }
    n
}

#[test]
fn the_rtt_cache_speeds_up_handshake_retransmission_and_learns_the_rtt() {
    let s = setup("rtt-cache");
    let cache = s.path("rtt-cache");
    // RFC 9002's 333 ms start: probes after 1 s (and 3 s, past the limit).
    let default = initials_to_a_silent_port(&s, &cache, None);
    // A cached 10 ms: probes after 30, 90, 210, 450, 930 and 1890 ms.
    let cached = initials_to_a_silent_port(&s, &cache, Some(10_000));
    assert!(
        cached >= default + 4,
        "Initials in 2 s: {default} by default, {cached} with a cached RTT"
    );

    // A completed download stores the measured RTT (loopback: far below
    // the 333 ms default) under the server's host:port.
    let srv = Server::start(&s, &[]);
    let url = srv.url("/data.bin");
    std::fs::remove_file(&cache).unwrap();
    fetch(&s, &url, &["--rtt-cache", cache.to_str().unwrap()]);
    let text = std::fs::read_to_string(&cache).unwrap();
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let f: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(f.len(), 3, "{text}");
    assert_eq!(f[0], format!("127.0.0.1:{port}"));
    let us: u64 = f[1].parse().unwrap();
    assert!(us > 0 && us < 100_000, "loopback RTT {us} µs");

    // The cache is a hint: a file that cannot be written only warns.
    let unwritable = s.path("no-such-dir/rtt-cache");
    fetch(&s, &url, &["--rtt-cache", unwritable.to_str().unwrap()]);
    srv.stop();
}
