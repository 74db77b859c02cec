//! End-to-end tests across the link emulator: `qnc-server` and `qnc-client`
//! processes with an in-process `interop::Relay` between them, on random
//! free loopback ports.
//!
//! The assertions are about correctness (bytes identical, counters
//! consistent), never about speed.

use std::time::Duration;

use interop::link::{Buffer, LinkConfig};
use interop::relay::RelayHandle;

mod common;
use common::*;

/// A relay to `server_port` with rate, one-way delay and Bernoulli loss `p`
/// in both directions.
fn relay(server_port: u16, rate_bps: u64, delay_ms: u64, p: f64, seed: u64) -> RelayHandle {
    let l = link(rate_bps, Duration::from_millis(delay_ms), bernoulli(p));
    relay_with(server_port, l, seed)
}

fn url(r: &RelayHandle, path: &str) -> String {
    relay_url(r, path)
}

/// `qnc-client` with `flags` fetches `/data.bin` through `r` into `out/`;
/// it must succeed with the file intact.
fn fetch_data(s: &Scratch, r: &RelayHandle, flags: &[&str]) -> std::process::Output {
    let out_dir = s.path("out");
    let u = url(r, "/data.bin");
    let mut args = flags.to_vec();
    args.extend(["--out", out_dir.to_str().unwrap(), "--json", &u]);
    let o = client(s, &args);
    assert!(
        o.status.success(),
        "{flags:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        sha256(&out_dir.join("data.bin")),
        sha256(&s.path("root/data.bin")),
        "{flags:?}"
    );
    o
}

/// Downloads the 2 MB file at 10% loss each way and checks its sha256, for
/// quiche's CUBIC and for our hybrid controller on both ends.
#[test]
fn file_survives_ten_percent_loss() {
    for cc in ["cubic", "hybrid"] {
        let s = setup(&format!("loss10-{cc}"));
        let server = Server::start(&s, &["--cc", cc]);
        let r = relay(server.port, 50_000_000, 5, 0.10, 7);
        let o = fetch_data(&s, &r, &["--cc", cc]);
        let stats = r.stop();
        let j = &json_lines(&o)[0];
        assert_eq!(j["bytes"], 2_000_000, "{cc}");
        // The emulator did drop packets, in both directions.
        assert!(
            stats.up.link.lost_packets > 0 && stats.down.link.lost_packets > 0,
            "{cc}: {stats:?}"
        );
    }
}

/// A download across a trace-driven link (a synthetic cellular-like trace:
/// capacity swinging between about 36 and 3 Mbit/s every 200 ms, with a
/// 300 ms outage), coded and plain; bytes identical, and the emulator's
/// offered-capacity counter covers what it delivered.
#[test]
fn file_crosses_a_trace_driven_link() {
    use interop::trace::{Trace, TraceConfig};
    let mut ms = Vec::new();
    for t in 0..2000u64 {
        let per_ms = match t {
            1200..=1499 => 0,
            _ if (t / 200) % 2 == 0 => 3,
            _ => usize::from(t % 4 == 0) as u64,
        };
        ms.extend(std::iter::repeat_n(t, per_ms as usize));
    }
    ms.push(2000);
    let trace = Trace::from_ms(ms).unwrap();
    for nc in ["auto", "off"] {
        let s = setup(&format!("trace-{nc}"));
        let server = Server::start(&s, &["--nc", nc]);
        let link = LinkConfig {
            delay: Duration::from_millis(10),
            buffer: Buffer::Packets(100),
            loss: bernoulli(0.02),
            trace: Some(TraceConfig::new(
                trace.clone(),
                "synthetic",
                Duration::from_millis(700),
            )),
            ..LinkConfig::default()
        };
        let r = relay_with(server.port, link, 5);
        fetch_data(&s, &r, &["--nc", nc]);
        let stats = r.stop();
        let d = &stats.down.link;
        let offered = d
            .offered_bytes
            .expect("trace link reports offered capacity");
        // Forwarded counts packets still queued at the stop (at most the
        // 100-packet buffer) that the offered count has not reached yet.
        assert!(
            d.forwarded_bytes > 2_000_000 && d.forwarded_bytes <= offered + 100 * 1500,
            "{nc}: {d:?}"
        );
        assert!(
            d.sojourn_p95_us > 0 && d.sojourn_max_us >= d.sojourn_p95_us,
            "{nc}: {d:?}"
        );
    }
}

/// Several parallel requests across a lossy link.
#[test]
fn parallel_requests_cross_a_lossy_link() {
    let s = setup("loss-parallel");
    let server = Server::start(&s, &[]);
    let r = relay(server.port, 50_000_000, 5, 0.02, 11);
    let out_dir = s.path("out");
    let o = client(
        &s,
        &[
            "--json",
            "--out",
            out_dir.to_str().unwrap(),
            &url(&r, "/data.bin"),
            &url(&r, "/bytes/300000"),
            &url(&r, "/bytes/700000"),
        ],
    );
    r.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = &json_lines(&o)[0];
    assert_eq!(j["requests"], 3);
    assert_eq!(j["bytes"], 3_000_000);
    assert_eq!(
        sha256(&out_dir.join("data.bin")),
        sha256(&s.path("root/data.bin"))
    );
}

/// A link that drops everything looks like an unreachable server.
#[test]
fn dead_link_is_one_error_line() {
    let s = setup("dead-link");
    let server = Server::start(&s, &[]);
    let r = relay(server.port, 50_000_000, 1, 1.0, 1);
    let o = client(&s, &["--idle-timeout", "500", &url(&r, "/bytes/10")]);
    r.stop();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: no response from"), "{err}");
}

/// With one of our controllers, the server's qlog carries its state
/// (`nc:cc_state`, including the backoff factor after losses) next to
/// quiche's recovery metrics, and the coding layer's events.
#[test]
fn controller_state_reaches_qlog() {
    use quic_nc::qlog::names;
    let s = setup("qlog-cc");
    let qdir = s.path("qlog");
    std::fs::create_dir_all(&qdir).unwrap();
    let server = Server::start_with_env(&s, &["--cc", "hybrid"], &[("QLOGDIR", &qdir)]);
    let r = relay(server.port, 50_000_000, 5, 0.05, 3);
    let o = client(&s, &[&url(&r, "/bytes/1000000")]);
    r.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Killed, the server could leave its qlog's last line half written.
    server.stop();
    let f = std::fs::read_dir(&qdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("server-")
        })
        .expect("server qlog");
    let text = std::fs::read_to_string(f).unwrap();
    let events: Vec<serde_json::Value> = text
        .split(['\u{1e}', '\n'])
        .filter(|l| l.contains("\"nc:"))
        .map(|l| serde_json::from_str(l.trim()).unwrap())
        .collect();
    let named = |n: &'static str| events.iter().filter(move |e| e["name"] == n);
    let states: Vec<_> = named(names::CC_STATE).collect();
    assert!(!states.is_empty(), "no nc:cc_state events");
    assert!(states
        .iter()
        .all(|e| e["data"]["cwnd"].as_u64().unwrap() > 0));
    assert!(
        states.iter().any(|e| e["data"]["beta"].is_number()),
        "{states:?}"
    );
    assert!(text.contains("quic:recovery_metrics_updated"));
    // The sender's side of the coding layer: at 5% loss over ~800 packets
    // both ways, sources, repairs, NC_ACKs and deferrals show up, and every
    // event name is one of the documented ones.
    for n in [
        names::PARAMETERS,
        names::SOURCE_SENT,
        names::REPAIR_SENT,
        names::ACK_RECEIVED,
        names::DEFERRED,
    ] {
        assert!(named(n).next().is_some(), "no {n} event");
    }
    assert!(events
        .iter()
        .all(|e| names::ALL.contains(&e["name"].as_str().unwrap())));
}
