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

fn json_file(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Runs a subcommand that must succeed; returns its stdout.
fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// The markdown and JSON report a benchmark wrote into `dir`.
fn reports(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let find = |ext: &str| {
        files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == ext))
            .unwrap_or_else(|| panic!("no .{ext} in {files:?}"))
            .clone()
    };
    (find("md"), find("json"))
}

#[test]
fn matrix_with_failures_reported_as_rows() {
    let dir = bin_dir("matrix");
    let json = dir.join("out.json");
    let pidfile = dir.join("hang.pid");
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap(), "--linkem", LINKEM])
        .args([
            "--rows",
            "cubic,reno+nc=off,fail,hang,nostart",
            "--loss",
            "0,0.3",
            "--size",
            "50000",
            "--runs",
            "1",
        ])
        .args([
            "--rate",
            "20mbit",
            "--rtt",
            "10ms",
            "--timeout",
            "1s",
            "--idle-timeout",
            "500",
            "--markdown",
            "--per-run",
        ])
        .args(["--json", json.to_str().unwrap()])
        .env("FAKE_QNC_PIDFILE", &pidfile)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v = json_file(&json);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    let row = |name: &str, loss: &str| {
        rows.iter()
            .find(|r| r["row"] == name && r["loss"] == loss)
            .unwrap()
    };

    let c0 = row("cubic", "0%");
    assert_eq!(c0["outcome"], "ok", "{c0}");
    assert_eq!(c0["title"], "coded+cubic");
    assert_eq!(c0["bytes"], 50000);
    assert_eq!(c0["server_packets_sent"], 50);
    assert_eq!(c0["repair_overhead"], 0.04); // the fake: 2 repairs per 50
    assert_eq!(c0["emulator"]["down"]["forwarded_packets"], 50);
    assert_eq!(c0["emulator"]["up"]["arrived_packets"], 1);
    assert_eq!(c0["queue_drops"], 0);
    assert!(c0["cpu_client_s"].as_f64().unwrap() >= 0.0);
    assert!(c0["cpu_server_s"].as_f64().unwrap() >= 0.0);
    let r0 = row("reno+nc=off", "0%");
    assert_eq!(r0["title"], "reno (no coding)");
    assert!(r0["repair_overhead"].is_null(), "{r0}");

    // 30 % loss both ways: the emulator must have dropped something
    // (or lost the request: then the fake client gets 0 bytes → failed).
    let c30 = row("cubic", "30%");
    let em = &c30["emulator"];
    assert_eq!(
        c30["outcome"], "failed",
        "the fake transport cannot deliver everything: {c30}"
    );
    assert!(c30["error"].as_str().unwrap().contains("bytes"), "{c30}");
    assert!(
        em["down"]["lost_packets"].as_u64().unwrap() + em["up"]["lost_packets"].as_u64().unwrap()
            > 0
    );

    let f = row("fail", "0%");
    assert_eq!(f["outcome"], "failed");
    assert!(
        f["error"].as_str().unwrap().contains("simulated failure"),
        "{f}"
    );
    // The hanging client ignored its timeout: killed, counted as capped
    // with the emulator's delivered bytes as partial goodput.
    let h = row("hang", "0%");
    assert_eq!(h["outcome"], "capped", "{h}");
    assert_eq!(h["goodput_source"], "emulator", "{h}");
    assert!(h["error"].as_str().unwrap().contains("killed"), "{h}");
    assert!(h["completion_s"].as_f64().unwrap() >= 1.0, "{h}");
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

    // Cells: failed runs counted, not dropped.
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10);
    let f0 = cells
        .iter()
        .find(|c| c["row"] == "fail" && c["loss"] == "0%")
        .unwrap();
    assert_eq!(
        (f0["runs"].as_u64(), f0["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(f0["time_s"].is_null());

    // Markdown: the cell table (header + separator + 10 cells), then the
    // per-run table (header + separator + 10 runs).
    let table: Vec<&str> = stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 24, "{stdout}");
    assert!(
        stdout.contains("| coded+hang | 0% | 1 (1 capped) | >"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| coded+fail | 0% | 0/1 (1 failed) |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("- failed: coded+fail, 0%: run 0 (seed 1): qnc-client exited"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn runs_interleaved_with_medians_caps_and_ratios() {
    let dir = bin_dir("runs");
    let json = dir.join("out.json");
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap(), "--linkem", LINKEM])
        .args([
            "--rows",
            "cubic+nc=off,cubic,slow",
            "--loss",
            "0",
            "--size",
            "20000",
        ])
        .args([
            "--runs",
            "3",
            "--seed",
            "7",
            "--timeout",
            "0.12",
            "--rtt",
            "10ms",
        ])
        .args(["--reference", "cubic", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v = json_file(&json);
    let runs = v["results"].as_array().unwrap();
    assert_eq!(runs.len(), 9);
    // Interleaved: run 0 of every row, then run 1, ...; seed = 7 + run.
    let order: Vec<(String, u64, u64)> = runs
        .iter()
        .map(|r| {
            (
                r["row"].as_str().unwrap().to_string(),
                r["run"].as_u64().unwrap(),
                r["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(order[0], ("cubic+nc=off".into(), 0, 7));
    assert_eq!(order[2], ("slow".into(), 0, 7));
    assert_eq!(order[3], ("cubic+nc=off".into(), 1, 8));
    assert_eq!(order[8], ("slow".into(), 2, 9));
    // The slow server cannot deliver 20 kB in 0.12 s: the client gives up
    // and reports its partial bytes.
    for r in runs.iter().filter(|r| r["row"] == "slow") {
        assert_eq!(r["outcome"], "capped", "{r}");
        assert_eq!(r["goodput_source"], "client", "{r}");
        assert!(r["bytes"].as_u64().unwrap() < 20000, "{r}");
    }
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3);
    let cell = |row: &str| cells.iter().find(|c| c["row"] == row).unwrap();
    let slow = cell("slow");
    assert_eq!(slow["capped"], 3);
    assert_eq!(slow["time_s"]["n"], 3);
    assert_eq!(slow["time_s"]["median"]["bound"], "at_least");
    assert_eq!(cell("cubic")["repair_overhead"]["median"]["v"], 0.05);
    assert!(cell("cubic+nc=off")["repair_overhead"].is_null());
    // Ratios to the reference row (coded cubic).
    assert_eq!(cell("cubic")["goodput_ratio"]["v"], 1.0);
    assert_eq!(slow["time_ratio"]["bound"], "at_least");
    assert!(slow["goodput_ratio"]["v"].as_f64().unwrap() < 1.0);
    // Plain table: caption, header, three cells.
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("# GET /bytes/20000"), "{stdout}");
    assert!(lines[0].contains("3 runs per cell"), "{stdout}");
    assert!(lines[1].starts_with("row "), "{stdout}");
    assert_eq!(lines.len(), 5, "{stdout}");
    assert!(
        lines[4].starts_with("coded+slow") && lines[4].contains("3 (3 capped)"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn streaming_rows_report_delivery_delays() {
    let dir = bin_dir("stream");
    let json = dir.join("out.json");
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap(), "--linkem", LINKEM])
        .args([
            "--rows",
            "hybrid,hybrid+nc=off",
            "--loss",
            "0",
            "--stream",
            "2mbit/0.3s",
        ])
        .args([
            "--runs",
            "2",
            "--rtt",
            "20ms",
            "--markdown",
            "--timeout",
            "10",
        ])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v = json_file(&json);
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(r["bytes"], 75000, "{r}");
        let d = &r["delivery"];
        // One-way: 10 ms of propagation plus serialisation, plus noise.
        let mean = d["mean_ms"].as_f64().unwrap();
        assert!((9.0..200.0).contains(&mean), "{r}");
        assert!(d["p99_ms"].as_f64().unwrap() >= d["p50_ms"].as_f64().unwrap());
    }
    let c = &v["cells"][0];
    assert_eq!(c["delay_p99_ms"]["n"], 2);
    assert!(
        stdout.contains("| delay mean ms | p50 ms | p99 ms | max ms |"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stamped_bulk_rows_report_in_order_delivery_delays() {
    let dir = bin_dir("stamped");
    let json = dir.join("out.json");
    let out = Command::new(RUNNER)
        .args(["--bin-dir", dir.to_str().unwrap(), "--linkem", LINKEM])
        .args(["--rows", "hybrid,hybrid+nc=off", "--loss", "0", "--stamped"])
        .args(["--size", "240000", "--runs", "2", "--rtt", "20ms"])
        .args(["--markdown", "--timeout", "10"])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("# GET /stamped/240000"), "{stdout}");
    let v = json_file(&json);
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(r["bytes"], 240000, "{r}");
        assert!(r["delivery"]["chunks"].as_u64().unwrap() > 0, "{r}");
        // One-way: 10 ms of propagation at least.
        assert!(r["delivery"]["p50_ms"].as_f64().unwrap() >= 9.0, "{r}");
    }
    assert_eq!(v["cells"][0]["delay_p99_ms"]["n"], 2);
    assert!(
        stdout.contains("| delivery p50 ms | delivery p95 ms | delivery p99 ms |"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_e2e_subset_writes_tables_targets_and_json() {
    let dir = bin_dir("bench");
    let out_dir = dir.join("results");
    let stdout = run_ok(
        Command::new(RUNNER)
            .args([
                "bench-e2e",
                "--bin-dir",
                dir.to_str().unwrap(),
                "--linkem",
                LINKEM,
            ])
            .args([
                "--tables",
                "short,stream,cost",
                "--runs",
                "2",
                "--loss",
                "0",
            ])
            .args(["--rows", "hybrid,hybrid+nc=off", "--short-size", "20000"])
            .args([
                "--stream",
                "2mbit/0.2s",
                "--cost-size",
                "30000",
                "--rtt",
                "10ms",
            ])
            .args(["--out", out_dir.to_str().unwrap()]),
    );
    for h in [
        "### Short flows",
        "### Streaming /stream/2mbit/0.2s",
        "### Cost",
        "### Target check",
    ] {
        assert!(stdout.contains(h), "{h}: {stdout}");
    }
    assert!(stdout.contains("capped at 60 s"), "{stdout}");
    assert!(
        stdout.contains("CPU s/MB coded+hybrid ≤ 1.3 × hybrid (no coding)"),
        "{stdout}"
    );
    // Loss-free only: the 5 % streaming targets cannot be judged.
    assert!(
        stdout.contains("n/a (needs the coded+hybrid stream cells at 0% and 5%)"),
        "{stdout}"
    );
    let (_, json) = reports(&out_dir);
    let v = json_file(&json);
    let tables = v["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 3);
    assert_eq!(tables[0]["kind"], "short");
    assert_eq!(tables[0]["results"].as_array().unwrap().len(), 4);
    assert_eq!(tables[1]["cells"][0]["delay_mean_ms"]["n"], 2);
    let cost = &tables[2];
    assert_eq!(cost["opts"]["direct"], true);
    for r in cost["results"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert!(r["emulator"].is_null());
        assert!(r["cpu_client_s"].as_f64().is_some());
    }
    let targets = v["targets"].as_array().unwrap();
    assert!(targets
        .iter()
        .any(|t| t["name"].as_str().unwrap().starts_with("CPU")));
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

#[test]
fn bench_fairness_runs_every_cell_and_writes_a_target_check() {
    let dir = bin_dir("fairness");
    let out_dir = dir.join("results");
    let stdout = run_ok(
        Command::new(RUNNER)
            .args(["bench-fairness", "--bin-dir", dir.to_str().unwrap()])
            .args(["--linkem", LINKEM, "--out", out_dir.to_str().unwrap()])
            .args(["--groups", "shallow,rtt-mix", "--others", "reno"])
            .args(["--buffers", "20kB", "--runs", "2", "--size", "200000"])
            .args(["--rate", "50mbit", "--rtt", "10ms", "--seed", "5"]),
    );
    for h in [
        "#### shallow",
        "#### rtt-mix",
        "#### Target check",
        "| 20kB: hybrid, reno |",
        "| 20kB: hybrid alone |",
        "| hybrid 20 ms, cubic+nc=off 10 ms |",
        "| reference: cubic+nc=off 20 ms, cubic+nc=off 10 ms |",
        "2 runs, seeds 5–6 per cell",
        "- shallow: ",
        "- rtt-mix: ",
    ] {
        assert!(stdout.contains(h), "{h}: {stdout}");
    }
    let (md, json) = reports(&out_dir);
    assert!(std::fs::read_to_string(md)
        .unwrap()
        .contains("#### Target check"));
    let v = json_file(&json);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6, "{v}");
    // "hybrid 20 ms, cubic 10 ms": the flow under test on the longer path.
    assert_eq!(cells[3]["flow_rtt"][0]["nanos"], 20_000_000, "{}", cells[3]);
    assert_eq!(cells[3]["flows"][1], "cubic+nc=off", "{}", cells[3]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    assert_eq!(v["verdicts"].as_array().unwrap().len(), 6);
    for r in runs {
        let cell = r["cell"].as_u64().unwrap() as usize;
        // The alone cell is a plain run, the others competing runs with
        // the cell's flows and per-run seed.
        let (done, other) = if cell == 1 {
            (&r["alone"], &r["compete"])
        } else {
            (&r["compete"], &r["alone"])
        };
        assert!(done.is_object() && other.is_null(), "{r}");
        assert_eq!(done["seed"], 5 + r["run"].as_u64().unwrap(), "{r}");
        if cell != 1 {
            assert_eq!(done["flows"].as_array().unwrap().len(), 2, "{r}");
            assert!(done["error"].is_null(), "{r}");
        }
    }
    // The alone run is measured: its efficiency is the figure.
    let alone = runs.iter().find(|r| r["cell"] == 1).unwrap();
    assert_eq!(alone["value"], alone["alone"]["efficiency"], "{alone}");
    assert!(alone["value"].as_f64().is_some(), "{alone}");

    // --merge: the same campaign's seeds 7-8 (a copy with its seed moved)
    // and seeds 5-6 make one report of four runs per cell, without running
    // anything (no --bin-dir needed).
    let mut later = v.clone();
    later["options"]["base"]["seed"] = 7.into();
    later["seeds"] = serde_json::json!([7, 8]);
    let later_path = dir.join("later.json");
    std::fs::write(&later_path, later.to_string()).unwrap();
    let merged_dir = dir.join("merged");
    let merge = |files: String| {
        Command::new(RUNNER)
            .args(["bench-fairness", "--merge", &files])
            .args(["--out", merged_dir.to_str().unwrap()])
            .args(["--groups", "shallow,rtt-mix", "--others", "reno"])
            .args(["--buffers", "20kB", "--size", "200000"])
            .args(["--rate", "50mbit", "--rtt", "10ms"])
            .output()
            .unwrap()
    };
    let out = merge(format!("{},{}", later_path.display(), json.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("4 runs, seeds 5–8 per cell"), "{stdout}");
    assert!(stdout.contains("Merged from "), "{stdout}");
    let (_, merged) = reports(&merged_dir);
    let m = json_file(&merged);
    assert_eq!(m["runs"].as_array().unwrap().len(), 24, "{m}");
    assert_eq!(m["merged_from"].as_array().unwrap().len(), 2, "{m}");
    // The alone cell's figures of seeds 5 and 7 are the same run's.
    let figure = |seed_run: u64| {
        m["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["cell"] == 1 && r["run"] == seed_run)
            .map(|r| r["value"].clone())
            .unwrap()
    };
    assert_eq!(figure(0), figure(2));
    assert_eq!(figure(0), alone["value"]);
    // A report merged with itself would count its runs twice.
    let out = merge(format!("{},{}", json.display(), merged.display()));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("both planned seed 5"));
    let _ = std::fs::remove_dir_all(&dir);
}
