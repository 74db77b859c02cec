//! The `linkem` binary: first line, stats file on exit/SIGUSR1/SIGTERM, errors.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_linkem");

fn tmpfile(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("linkem-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn spawn(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening ")
        .expect("first line 'listening ADDR'")
        .to_string();
    (child, addr)
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: plain kill(2) on the pid of our own child process.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(r, 0);
}

fn recv_one(sock: &UdpSocket, buf: &mut [u8]) {
    loop {
        match sock.recv_from(buf) {
            Ok(_) => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("no forwarded packet: {e} ({:?})", e.kind()),
        }
    }
}

fn read_stats(p: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("linkem did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn stats_on_duration_exit() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let up = server.local_addr().unwrap().to_string();
    let stats = tmpfile("duration.json");
    let (mut child, addr) = spawn(&[
        "--upstream",
        &up,
        "--loss",
        "all",
        "--duration",
        "500ms",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..5 {
        c.send_to(b"hello", &addr).unwrap();
    }
    assert!(wait_exit(&mut child).success());
    let v = read_stats(&stats);
    // Packets sent before exit were all lost (100 % loss) — none forwarded.
    assert_eq!(v["up"]["forwarded_packets"], 0);
    assert_eq!(v["up"]["lost_packets"], v["up"]["arrived_packets"]);
    assert_eq!(v["listen"], addr);
    let _ = std::fs::remove_file(&stats);
}

#[test]
fn sigusr1_dumps_and_sigterm_exits_with_stats() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let up = server.local_addr().unwrap().to_string();
    let stats = tmpfile("signals.json");
    let (mut child, addr) = spawn(&[
        "--upstream",
        &up,
        "--delay",
        "5ms",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = [0u8; 64];
    for _ in 0..3 {
        c.send_to(b"x", &addr).unwrap();
        recv_one(&server, &mut buf);
    }
    signal(&child, libc::SIGUSR1);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !stats.exists() {
        assert!(Instant::now() < deadline, "no stats after SIGUSR1");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(read_stats(&stats)["up"]["sent_packets"], 3);
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGUSR1 must not stop linkem"
    );
    c.send_to(b"y", &addr).unwrap();
    recv_one(&server, &mut buf);
    signal(&child, libc::SIGTERM);
    assert!(wait_exit(&mut child).success());
    assert_eq!(read_stats(&stats)["up"]["sent_packets"], 4);
    let _ = std::fs::remove_file(&stats);
}

#[test]
fn parameter_errors_exit_nonzero_with_one_line() {
    for args in [
        vec!["--upstream", "127.0.0.1:9", "--rate", "-20mbit"],
        vec!["--upstream", "127.0.0.1:9", "--rate", "nan"],
        vec!["--upstream", "127.0.0.1:9", "--loss", "bernoulli:1.2"],
        vec![
            "--upstream",
            "127.0.0.1:9",
            "--rate",
            "10mbit",
            "--buffer",
            "100B",
        ],
        vec!["--upstream", "127.0.0.1:9", "--delay", "20 lightyears"],
        vec!["--rate", "10mbit"],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("linkem: error:"), "{err}");
        assert!(out.stdout.is_empty());
    }
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
}
