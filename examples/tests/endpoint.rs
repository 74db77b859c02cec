//! `docker/run_endpoint.sh`, the quic-interop-runner entrypoint, run
//! without Docker: the runner's variables (ROLE, TESTCASE, REQUESTS,
//! SERVER_PARAMS, CLIENT_PARAMS, QLOGDIR, SSLKEYLOGFILE) against temporary
//! directories in place of /www, /downloads and /certs, with the
//! simulator's setup and wait steps switched off. Downloads are compared
//! byte for byte with the served files, and the server's JSON lines show
//! how many connections each case made and how they went.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::*;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker/run_endpoint.sh")
}

/// Scratch directories shaped like the runner's mounts; `www` holds `files`
/// (name, size).
fn mounts(tag: &str, files: &[(&str, usize)]) -> Scratch {
    let s = Scratch::new(tag);
    certs(&s.path("certs"));
    // The runner names the server key priv.key.
    std::fs::copy(s.path("certs/key.pem"), s.path("certs/priv.key")).unwrap();
    std::fs::create_dir_all(s.path("www")).unwrap();
    for (i, (name, size)) in files.iter().enumerate() {
        let data: Vec<u8> = (0..*size)
            .map(|j| (j * 31 + i * 7 + j / 251) as u8)
            .collect();
        std::fs::write(s.path("www").join(name), data).unwrap();
    }
    s
}

/// The script with the runner's variables for `role` and `testcase`.
fn endpoint(s: &Scratch, role: &str, testcase: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg(script())
        .env("ROLE", role)
        .env("TESTCASE", testcase)
        .env("QNC_BIN", Path::new(SERVER).parent().unwrap())
        .env("QNC_WWW", s.path("www"))
        .env("QNC_DOWNLOADS", s.path("downloads"))
        .env("QNC_CERTS", s.path("certs"))
        .env("QNC_SETUP", s.path("no-setup"))
        .env("QNC_WAIT", "")
        .env("QNC_SESSION", s.path("session.bin"))
        .env("QNC_RTT_CACHE", s.path("rtt-cache"))
        .env("QLOGDIR", s.path(&format!("logs/{role}/qlog")))
        .env("SSLKEYLOGFILE", s.path(&format!("logs/{role}/keys.log")))
        .env_remove("REQUESTS")
        .env_remove("SERVER_PARAMS")
        .env_remove("CLIENT_PARAMS");
    c
}

fn server(s: &Scratch, testcase: &str, params: &str) -> Server {
    let mut c = endpoint(s, "server", testcase);
    c.env("QNC_LISTEN", "127.0.0.1:0").env(
        "SERVER_PARAMS",
        format!("--stats-json --idle-timeout 5000 {params}"),
    );
    Server::spawn(c)
}

fn client(s: &Scratch, testcase: &str, srv: &Server, files: &[&str], params: &str) -> Output {
    let urls: Vec<String> = files.iter().map(|f| srv.url(&format!("/{f}"))).collect();
    run(endpoint(s, "client", testcase)
        .env("REQUESTS", urls.join(" "))
        .env("CLIENT_PARAMS", format!("--timeout 30 {params}")))
}

/// /downloads holds exactly the served `files`, byte for byte.
fn assert_downloaded(s: &Scratch, files: &[&str]) {
    let mut got: Vec<String> = std::fs::read_dir(s.path("downloads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    got.sort();
    let mut want: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    for f in files {
        let a = std::fs::read(s.path("www").join(f)).unwrap();
        let b = std::fs::read(s.path("downloads").join(f)).unwrap();
        assert!(a == b, "{f} differs");
    }
}

/// Runs one test case, ours against ours; returns the server's JSON lines
/// for the `conns` connections the case must make.
fn case(
    testcase: &str,
    files: &[(&str, usize)],
    conns: usize,
    cparams: &str,
) -> Vec<serde_json::Value> {
    let s = mounts(testcase, files);
    let names: Vec<&str> = files.iter().map(|f| f.0).collect();
    let srv = server(&s, testcase, "");
    let o = client(&s, testcase, &srv, &names, cparams);
    assert!(
        o.status.success(),
        "{testcase}: client failed: {:?}",
        stderr_lines(&o)
    );
    assert_downloaded(&s, &names);
    let lines = srv.json_lines(conns);
    srv.stop();
    assert_eq!(lines.len(), conns, "{testcase}: {lines:?}");
    for role in ["client", "server"] {
        let keys = std::fs::read_to_string(s.path(&format!("logs/{role}/keys.log"))).unwrap();
        assert!(
            keys.contains("SERVER_HANDSHAKE_TRAFFIC_SECRET"),
            "{role} key log"
        );
        let qlogs = std::fs::read_dir(s.path(&format!("logs/{role}/qlog")))
            .unwrap()
            .count();
        assert!(qlogs >= 1, "{role} wrote no qlog");
    }
    lines
}

#[test]
fn one_connection_cases_fetch_every_file() {
    for tc in ["handshake", "transfer", "http3"] {
        let lines = case(
            tc,
            &[("a", 1_000), ("bb", 300_000), ("c", 2_000_000)],
            1,
            "",
        );
        assert_eq!(lines[0]["coded"], true, "{tc}: ours against ours codes");
        assert_eq!(lines[0]["retry"], false);
    }
}

#[test]
fn multiplexing_many_small_files_on_one_connection() {
    // The runner's multiplexing case (TESTCASE transfer): 1999 files of
    // 32 bytes; the server allows 1000 concurrent streams.
    let names: Vec<String> = (0..1999).map(|i| format!("f{i}")).collect();
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), 32)).collect();
    case("transfer", &files, 1, "");
}

#[test]
fn multiconnect_uses_one_connection_per_file() {
    let lines = case(
        "multiconnect",
        &[("x", 1_000), ("y", 1_000), ("z", 1_000)],
        3,
        "",
    );
    assert!(lines.iter().all(|l| l["resumed"] == false));
}

#[test]
fn multiconnect_connections_start_from_the_previous_rtt() {
    let s = mounts("rtt", &[("x", 1_000), ("y", 1_000)]);
    let srv = server(&s, "multiconnect", "");
    std::fs::write(s.path("rtt-cache"), "stale 1 1\n").unwrap();
    let o = client(&s, "multiconnect", &srv, &["x", "y"], "");
    assert!(o.status.success(), "{:?}", stderr_lines(&o));
    srv.stop();
    // A fresh file per test case, written by its connections.
    let text = std::fs::read_to_string(s.path("rtt-cache")).unwrap();
    assert!(!text.contains("stale"), "{text}");
    assert_eq!(text.lines().count(), 1, "one server: {text}");
}

#[test]
fn retry_validates_the_address() {
    let lines = case("retry", &[("r", 10_000)], 1, "");
    assert_eq!(lines[0]["retry"], true);
}

#[test]
fn resumption_and_zero_rtt_split_the_requests() {
    // Connections are reported as they finish draining, so the order of
    // the two lines is not fixed.
    let count =
        |lines: &[serde_json::Value], k: &str| lines.iter().filter(|l| l[k] == true).count();
    let lines = case("resumption", &[("first", 5_000), ("second", 10_000)], 2, "");
    assert_eq!(count(&lines, "resumed"), 1, "{lines:?}");
    assert_eq!(count(&lines, "early_data"), 0, "{lines:?}");

    let files: Vec<(String, usize)> = (0..10).map(|i| (format!("z{i}"), 32)).collect();
    let files: Vec<(&str, usize)> = files.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    let lines = case("zerortt", &files, 2, "");
    assert_eq!(count(&lines, "resumed"), 1, "{lines:?}");
    assert_eq!(count(&lines, "early_data"), 1, "{lines:?}");
    assert!(
        lines.iter().all(|l| l["resumed"] == l["early_data"]),
        "{lines:?}"
    );
}

#[test]
fn client_params_reach_the_client() {
    let lines = case("transfer", &[("p", 100_000)], 1, "--nc off");
    assert_eq!(lines[0]["coded"], false);
}

#[test]
fn unsupported_cases_exit_127() {
    let s = mounts("unsupported", &[]);
    for tc in ["keyupdate", "chacha20", "v2", "ecn", "zzz-random"] {
        let o = run(endpoint(&s, "client", tc).env("REQUESTS", "https://127.0.0.1:1/x"));
        assert_eq!(o.status.code(), Some(127), "client {tc}");
    }
    for tc in ["chacha20", "connectionmigration", "v2", "ecn", "zzz-random"] {
        let o = run(&mut endpoint(&s, "server", tc));
        assert_eq!(o.status.code(), Some(127), "server {tc}");
    }
}

#[test]
fn a_missing_file_fails_the_client() {
    let s = mounts("missing", &[("there", 10)]);
    let srv = server(&s, "transfer", "");
    let o = client(&s, "transfer", &srv, &["there", "not-there"], "");
    assert_eq!(o.status.code(), Some(1));
}
