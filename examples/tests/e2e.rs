//! End-to-end tests: real `qnc-certs`, `qnc-server` and `qnc-client`
//! processes talking over loopback.
//!
//! Timeouts are generous and only guard against hangs; nothing depends on
//! how fast the machine is.

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

#[test]
fn downloads_synthetic_and_real_files() {
    let s = setup("dl");
    let srv = Server::start(&s, &["--stats-json"]);

    let out = client(
        &s,
        &["--json", "--out"]
            .iter()
            .copied()
            .chain([s.path("dl").to_str().unwrap()])
            .chain([srv.url("/bytes/1000000").as_str()])
            .collect::<Vec<_>>(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = &json_lines(&out)[0];
    assert_eq!(j["role"], "client");
    assert_eq!(j["status"], 200);
    assert_eq!(j["bytes"], 1_000_000);
    assert_eq!(j["requests"], 1);
    let body = std::fs::read(s.path("dl/1000000")).unwrap();
    assert_eq!(body.len(), 1_000_000);
    assert!(body
        .iter()
        .enumerate()
        .all(|(i, b)| *b == b'a' + (i % 26) as u8));

    let out = client(
        &s,
        &[
            "--out",
            s.path("dl").to_str().unwrap(),
            &srv.url("/data.bin"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sha256(&s.path("dl/data.bin")),
        sha256(&s.path("root/data.bin"))
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("2000000 bytes"), "{summary}");
    assert!(summary.contains("Mbit/s"), "{summary}");

    // Each closed connection yields one server JSON line.
    for _ in 0..2 {
        let line = srv
            .lines
            .recv_timeout(HANG_GUARD)
            .expect("server stats line");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["role"], "server");
        assert_eq!(v["cc"], "hybrid", "the default controller");
        assert_eq!(v["coded"], true, "coding is negotiated by default");
        assert!(v["nc"]["sent"]["sources"].as_u64().unwrap() > 500);
        assert!(v["bytes_sent"].as_u64().unwrap() > 1_000_000);
        for k in [
            "scid",
            "peer",
            "packets_sent",
            "packets_lost",
            "retrans_bytes",
            "lost_bytes",
            "duration_s",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
    }
}

#[test]
fn parallel_requests_share_one_connection() {
    let s = setup("par");
    let srv = Server::start(&s, &["--cc", "bbr2"]);
    let dl = s.path("dl");
    let out = client(
        &s,
        &[
            "--json",
            "--cc",
            "reno",
            "--out",
            dl.to_str().unwrap(),
            &srv.url("/bytes/300000"),
            &srv.url("/data.bin"),
            &srv.url("/bytes/5"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "one line per connection");
    assert_eq!(lines[0]["requests"], 3);
    assert_eq!(lines[0]["bytes"], 300_000 + 2_000_000 + 5);
    assert_eq!(std::fs::read(dl.join("5")).unwrap(), b"abcde");
    assert_eq!(
        sha256(&dl.join("data.bin")),
        sha256(&s.path("root/data.bin"))
    );
}

#[test]
fn missing_resource_is_one_error_line() {
    let s = setup("404");
    let srv = Server::start(&s, &[]);
    let url = srv.url("/no/such/file");
    let out = client(&s, &[&url]);
    assert!(!out.status.success());
    assert_eq!(
        stderr_lines(&out),
        vec![format!("error: GET {url}: status 404")]
    );

    let out = client(&s, &[&srv.url("/%2e%2e/etc/passwd")]);
    assert!(!out.status.success());
    assert!(
        stderr_lines(&out)[0].ends_with("status 400"),
        "{:?}",
        stderr_lines(&out)
    );
}

#[test]
fn unreachable_server_fails_within_the_idle_timeout() {
    let s = setup("unreach");
    // A socket that never answers: no ICMP, so only the timeout helps.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let url = format!("https://127.0.0.1:{port}/x");
    let start = Instant::now();
    let out = client(&s, &["--idle-timeout", "300", &url]);
    assert!(!out.status.success());
    assert_eq!(
        stderr_lines(&out),
        vec![format!("error: no response from 127.0.0.1:{port}")]
    );
    assert!(start.elapsed() < Duration::from_secs(60));

    // A closed port answers with ICMP: refused at once.
    drop(silent);
    let out = client(&s, &["--idle-timeout", "300", &url]);
    assert!(!out.status.success());
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].starts_with("error: no response from"), "{lines:?}");
}

#[test]
fn wrong_ca_is_a_tls_error() {
    let s = setup("tls");
    let srv = Server::start(&s, &[]);
    certs(&s.path("other"));
    let out = run(Command::new(CLIENT)
        .arg("--ca")
        .arg(s.path("other/ca.pem"))
        .arg(srv.url("/bytes/1")));
    assert!(!out.status.success());
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("certificate verification failed"),
        "{lines:?}"
    );

    // By name, the same server verifies fine with the right CA.
    let url = format!("https://localhost:{}/bytes/1", srv.port);
    let out = client(&s, &[&url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn missing_files_are_reported() {
    let s = setup("missing");
    let out = run(Command::new(SERVER)
        .args(["--listen", "127.0.0.1:0", "--cert", "/nonexistent/cert.pem"])
        .arg("--key")
        .arg(s.path("certs/key.pem")));
    assert!(!out.status.success());
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("error: cannot read certificate file /nonexistent/cert.pem"));
    assert!(out.stdout.is_empty());

    let out =
        run(Command::new(CLIENT).args(["--ca", "/nonexistent/ca.pem", "https://127.0.0.1:1/"]));
    assert!(!out.status.success());
    assert_eq!(stderr_lines(&out).len(), 1);
}

#[test]
fn server_exits_cleanly_on_sigint() {
    let s = setup("sigint");
    let mut srv = Server::start(&s, &[]);
    let out = client(&s, &[&srv.url("/bytes/10")]);
    assert!(out.status.success());
    let pid = srv.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let start = Instant::now();
    let status = loop {
        if let Some(st) = srv.child.try_wait().unwrap() {
            break st;
        }
        assert!(start.elapsed() < HANG_GUARD, "server ignored SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}

#[test]
fn qlog_and_keylog_files_are_written() {
    let s = setup("qlog");
    let qlogdir = s.path("qlog");
    let keylog = s.path("keys.log");
    let srv = Server::start_with_env(&s, &[], &[("QLOGDIR", qlogdir.as_path())]);
    let out = run(Command::new(CLIENT)
        .env("QLOGDIR", &qlogdir)
        .env("SSLKEYLOGFILE", &keylog)
        .arg("--ca")
        .arg(s.path("certs/ca.pem"))
        .arg(srv.url("/bytes/1000")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = std::fs::read_dir(&qlogdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("client-") && n.ends_with(".sqlog")),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("server-") && n.ends_with(".sqlog")),
        "{names:?}"
    );
    let keys = std::fs::read_to_string(&keylog).unwrap();
    assert!(keys.contains("CLIENT_TRAFFIC_SECRET_0"), "{keys}");
}

#[test]
fn client_reports_and_exits_on_sigint() {
    let s = setup("cint");
    let srv = Server::start(&s, &[]);
    let mut child = Command::new(CLIENT)
        .arg("--ca")
        .arg(s.path("certs/ca.pem"))
        .arg("--json")
        .arg(srv.url("/bytes/10000000000"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < HANG_GUARD, "client ignored SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(stderr_lines(&out), vec!["error: interrupted".to_string()]);
    // If the connection was up, its summary was still printed.
    for v in json_lines(&out) {
        assert_eq!(v["role"], "client");
    }
}
