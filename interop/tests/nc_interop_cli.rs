//! `nc-interop`'s command line: listing, and clear errors for unknown or
//! not-run test cases and implementations (the matrix itself is tested in
//! examples/tests/interop_matrix.rs, where our binaries are built).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_nc-interop");

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn lists_implementations_and_cases() {
    let (code, out, _) = run(&["--list"]);
    assert_eq!(code, 0);
    for w in [
        "quic-nc",
        "ngtcp2",
        "aioquic",
        "handshake",
        "zerortt",
        "goodput",
        "not run:",
        "chacha20",
    ] {
        assert!(out.contains(w), "{w} missing from:\n{out}");
    }
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("usage: nc-interop"));
}

#[test]
fn unknown_and_not_run_cases_are_errors() {
    let (code, _, err) = run(&["--cases", "nope", "--list"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown test case 'nope'"), "{err}");
    let (code, _, err) = run(&["--cases", "chacha20"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("not run: needs a TLS 1.3 cipher choice"),
        "{err}"
    );
    let (code, _, err) = run(&["--clients", "msquic", "--list"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown implementation 'msquic'"), "{err}");
    let (code, _, err) = run(&["--runs", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--runs"), "{err}");
}
