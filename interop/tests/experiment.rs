//! `nc-experiment` orchestration, with `nc-fake-qnc` standing in for the
//! QUIC binaries (symlinked as qnc-certs/qnc-server/qnc-client).

use std::path::PathBuf;
use std::process::Command;

const RUNNER: &str = env!("CARGO_BIN_EXE_nc-experiment");
const FAKE: &str = env!("CARGO_BIN_EXE_nc-fake-qnc");
const LINKEM: &str = env!("CARGO_BIN_EXE_linkem");

fn bin_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nc-exp-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for n in ["qnc-certs", "qnc-server", "qnc-client"] {
        std::os::unix::fs::symlink(FAKE, d.join(n)).unwrap();
    }
    d
}

#[test]
fn matrix_with_failures_reported_as_rows() {
    let dir = bin_dir("matrix");
    let json = dir.join("out.json");
    let pidfile = dir.join("hang.pid");
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap(), "--linkem", LINKEM])
        .args([
            "--cc",
            "cubic,reno,fail,hang,nostart",
            "--loss",
            "0,0.3",
            "--size",
            "50000",
        ])
        .args([
            "--rate",
            "20mbit",
            "--rtt",
            "10ms",
            "--timeout",
            "3s",
            "--markdown",
        ])
        .args(["--json", json.to_str().unwrap()])
        .env("FAKE_QNC_PIDFILE", &pidfile)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    let row = |cc: &str, loss: &str| {
        rows.iter()
            .find(|r| r["cc"] == cc && r["loss"] == loss)
            .unwrap()
    };

    let c0 = row("cubic", "0%");
    assert!(c0["error"].is_null(), "{c0}");
    assert_eq!(c0["bytes"], 50000);
    assert_eq!(c0["ratio_to_cubic"], 1.0);
    assert_eq!(c0["server_packets_sent"], 50);
    assert_eq!(c0["emulator"]["down"]["forwarded_packets"], 50);
    assert_eq!(c0["emulator"]["up"]["arrived_packets"], 1);
    assert!(row("reno", "0%")["ratio_to_cubic"].as_f64().unwrap() > 0.0);

    // 30 % loss both ways: the emulator must have dropped something
    // (or lost the request: then the fake client gets 0 bytes → error row).
    let c30 = row("cubic", "30%");
    let em = &c30["emulator"];
    if c30["error"].is_null() {
        panic!("the fake transport is unreliable; 30 % loss cannot deliver everything: {c30}");
    }
    assert!(c30["error"].as_str().unwrap().contains("bytes"), "{c30}");
    assert!(
        em["down"]["lost_packets"].as_u64().unwrap() + em["up"]["lost_packets"].as_u64().unwrap()
            > 0
    );

    let f = row("fail", "0%");
    assert!(
        f["error"].as_str().unwrap().contains("simulated failure"),
        "{f}"
    );
    let h = row("hang", "0%");
    assert!(h["error"].as_str().unwrap().contains("timeout"), "{h}");
    let n = row("nostart", "0%");
    assert!(
        n["error"]
            .as_str()
            .unwrap()
            .contains("simulated start failure"),
        "{n}"
    );

    // The hanging client was killed.
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert!(
        !PathBuf::from(format!("/proc/{}", pid.trim())).exists(),
        "hung client {pid} still alive"
    );

    // Markdown table: header + separator + 10 rows.
    let table: Vec<&str> = stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 12, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_binaries_fail_cleanly() {
    let dir = std::env::temp_dir().join(format!("nc-exp-test-{}-empty", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("nc-experiment: error:") && err.contains("qnc-certs"),
        "{err}"
    );
    let out = Command::new(RUNNER)
        .args(["--loss", "2.0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compete_two_flows_through_one_linkem() {
    let dir = bin_dir("compete");
    let json = dir.join("out.json");
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap(), "--linkem", LINKEM])
        .args(["--compete", "cubic,reno", "--loss", "0", "--size", "100000"])
        .args(["--rate", "50mbit", "--rtt", "10ms", "--timeout", "60s"])
        .args(["--stagger", "0.1", "--runs", "2", "--markdown"])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["options"]["compete"][1], "reno");
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["pair"], "cubic,reno");
        let flows = r["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2);
        let em = &r["emulator"];
        let pc = em["per_client"].as_array().unwrap();
        assert_eq!(pc.len(), 2);
        for (k, f) in flows.iter().enumerate() {
            assert_eq!(f["bytes"], 100000, "{f}");
            // Client k was relayed to its own server.
            assert_eq!(pc[k]["upstream"], f["server"], "{r}");
            // The fake server sends 100 datagrams of 1000 bytes; no loss.
            assert_eq!(pc[k]["down_sent_bytes"], 100000, "{r}");
            assert!(f["goodput_mbps"].as_f64().unwrap() > 0.0);
        }
        assert_ne!(flows[0]["server"], flows[1]["server"]);
        assert_eq!(flows[0]["cc"], "cubic");
        assert_eq!(flows[1]["cc"], "reno");
        // B started at least the stagger after A.
        assert!(flows[1]["start_s"].as_f64().unwrap() >= 0.1);
        // Ratio and Jain follow from the reported shares (when the flows
        // overlapped at all, which timing cannot guarantee).
        if let (Some(a), Some(b)) = (
            flows[0]["share_mbps"].as_f64(),
            flows[1]["share_mbps"].as_f64(),
        ) {
            if b > 0.0 {
                let q = r["ratio"].as_f64().unwrap();
                assert!((q - a / b).abs() < 1e-9 * q.max(1.0));
                let j = r["jain"].as_f64().unwrap();
                let want = (a + b) * (a + b) / (2.0 * (a * a + b * b));
                assert!((j - want).abs() < 1e-9);
                assert!(j > 0.5 - 1e-12 && j <= 1.0 + 1e-12);
            }
        }
    }
    // Markdown: per-run table (header + separator + 2 rows) and summary
    // (header + separator + 1 row).
    let table: Vec<&str> = stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 7, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
