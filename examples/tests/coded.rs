//! Coded HTTP/3 across the link emulator: `qnc-server` and `qnc-client`
//! processes with an in-process `interop::Relay` between them, on random
//! loopback ports. Every transfer is checked byte for byte (sha256), and
//! that coding was in fact negotiated and recovered losses; nothing is
//! asserted about speed.

use std::time::Duration;

use interop::loss::LossSchedule;
use interop::relay::RelayHandle;

mod common;
use common::*;

/// A relay to `server_port`: 50 Mbit/s, 5 ms each way, a BDP buffer, and
/// the loss spec (a linkem `--loss` value) in both directions.
fn relay(server_port: u16, loss: &str, seed: u64) -> RelayHandle {
    let loss = LossSchedule::parse(loss).unwrap();
    relay_with(
        server_port,
        link(50_000_000, Duration::from_millis(5), loss),
        seed,
    )
}

fn url(r: &RelayHandle, path: &str) -> String {
    relay_url(r, path)
}

/// The server's JSON line for the connection just closed.
fn server_line(srv: &Server) -> serde_json::Value {
    let line = srv
        .lines
        .recv_timeout(HANG_GUARD)
        .expect("server stats line");
    serde_json::from_str(&line).unwrap()
}

/// One request for `path` through `loss`, with the transport flags `t` on
/// both ends and `extra` client arguments; checks that the client
/// succeeded and returns its JSON line and the server's.
fn request(
    s: &Scratch,
    tag: &str,
    loss: &str,
    seed: u64,
    t: &[&str],
    extra: &[&str],
    path: &str,
) -> (serde_json::Value, serde_json::Value) {
    let mut server_args = vec!["--stats-json"];
    server_args.extend_from_slice(t);
    let srv = Server::start(s, &server_args);
    let r = relay(srv.port, loss, seed);
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    args.extend_from_slice(t);
    let u = url(&r, path);
    args.push(&u);
    let o = client(s, &args);
    r.stop();
    assert!(
        o.status.success(),
        "{tag}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (json_lines(&o).remove(0), server_line(&srv))
}

/// Downloads `/data.bin` (2 MB) through `loss` with the transport flags
/// `t` on both ends; checks the file and returns the client's and the
/// server's JSON lines.
fn download(tag: &str, loss: &str, t: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let s = setup(tag);
    let out = s.path("out");
    let lines = request(
        &s,
        tag,
        loss,
        11,
        t,
        &["--out", out.to_str().unwrap()],
        "/data.bin",
    );
    assert_eq!(
        sha256(&out.join("data.bin")),
        sha256(&s.path("root/data.bin")),
        "{tag}: the downloaded file differs"
    );
    lines
}

/// Uploads the 2 MB file through `loss`; the server's receipt (sha256) must
/// match what the client sent (the client checks it and fails otherwise).
fn upload(tag: &str, loss: &str, t: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let s = setup(tag);
    let file = s.path("root/data.bin");
    let (c, srv) = request(
        &s,
        tag,
        loss,
        12,
        t,
        &["--upload", file.to_str().unwrap()],
        "/upload",
    );
    assert_eq!(c["uploaded"], 2_000_000, "{tag}");
    let want: String = sha256(&file).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(c["upload_sha256"], want.as_str(), "{tag}: server receipt");
    (c, srv)
}

#[test]
fn coded_downloads_and_uploads_are_intact_at_0_5_and_20_percent_loss() {
    for (loss, p) in [
        ("none", 0.0),
        ("bernoulli:0.05", 0.05),
        ("bernoulli:0.2", 0.2),
    ] {
        let (c, srv) = download(&format!("dl-{p}"), loss, &[]);
        assert_eq!(c["coded"], true);
        assert_eq!(srv["coded"], true);
        let recovered = c["nc"]["received"]["recovered"].as_u64().unwrap();
        if p > 0.0 {
            assert!(
                recovered > 0,
                "download at {p}: nothing recovered by decoding"
            );
            assert!(srv["nc"]["sent"]["repairs"].as_u64().unwrap() > 0);
        } else {
            // No random loss, but slow start can overflow the buffer: no
            // more repairs than losses (plus tail protection's few).
            let lost = srv["packets_lost"].as_u64().unwrap();
            let repairs = srv["nc"]["sent"]["repairs"].as_u64().unwrap();
            assert!(
                repairs <= 2 * lost + 4,
                "{repairs} repairs for {lost} losses"
            );
            // Retransmitted bytes are not bounded by the losses here: on a
            // loaded machine a late ACK lets a PTO fire, and its probe
            // resends data that was not lost (seen in CI). Deferral and its
            // accounting are checked deterministically in tests/tests/coding.rs.
        }
        // Uploads are coded too: the server recovers the client's losses.
        let (c, srv) = upload(&format!("ul-{p}"), loss, &[]);
        assert_eq!(c["coded"], true);
        if p > 0.0 {
            assert!(
                srv["nc"]["received"]["recovered"].as_u64().unwrap() > 0,
                "upload at {p}: the server recovered nothing"
            );
            assert!(c["nc"]["sent"]["repairs"].as_u64().unwrap() > 0);
        }
    }
}

#[test]
fn every_policy_and_both_modes_deliver_intact() {
    for policy in ["adaptive", "fixed:1.3", "ctcp", "von", "fnc"] {
        for mode in ["systematic", "full"] {
            let tag = format!("{policy}-{mode}").replace(':', "_");
            let t = ["--nc-policy", policy, "--nc-mode", mode];
            let (c, srv) = download(&tag, "bernoulli:0.1", &t);
            assert_eq!(srv["nc"]["policy"], policy, "{tag}");
            assert_eq!(srv["nc"]["mode"], mode, "{tag}");
            assert!(
                c["nc"]["received"]["recovered"].as_u64().unwrap() > 0,
                "{tag}: nothing recovered"
            );
            if mode == "full" {
                assert!(
                    srv["nc"]["sent"]["coded_new"].as_u64().unwrap() > 500,
                    "{tag}"
                );
            }
        }
    }
}

#[test]
fn bursty_loss_is_recovered() {
    // Gilbert–Elliott: mean loss about 5%, bursts of 4 packets on average.
    let loss = "ge:0.0132,0.25";
    let (c, _) = download("ge-dl", loss, &[]);
    assert!(c["nc"]["received"]["recovered"].as_u64().unwrap() > 0);
    let (_, srv) = upload("ge-ul", loss, &[]);
    assert!(srv["nc"]["received"]["recovered"].as_u64().unwrap() > 0);
}

#[test]
fn a_two_second_outage_is_survived() {
    // Total loss both ways from 0.3 s to 2.3 s into the connection, while
    // a 2 MB download at a reduced rate is still running.
    let s = setup("outage");
    let srv = Server::start(&s, &["--stats-json"]);
    let loss = LossSchedule::parse("schedule:0-300ms=none;300ms-2300ms=all;2300ms-=none").unwrap();
    let r = relay_with(
        srv.port,
        link(10_000_000, Duration::from_millis(10), loss),
        1,
    );
    let out = s.path("out");
    let o = client(
        &s,
        &[
            "--json",
            "--idle-timeout",
            "10000",
            "--out",
            out.to_str().unwrap(),
            &url(&r, "/data.bin"),
        ],
    );
    let stats = r.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        sha256(&out.join("data.bin")),
        sha256(&s.path("root/data.bin"))
    );
    assert!(
        stats.down.link.lost_packets > 0,
        "the outage hit the transfer"
    );
    let c = json_lines(&o).remove(0);
    assert_eq!(c["coded"], true);
    assert!(c["duration_s"].as_f64().unwrap() > 2.0);
}

#[test]
fn many_parallel_streams_over_a_lossy_link() {
    let s = setup("parallel");
    let srv = Server::start(&s, &["--stats-json"]);
    let r = relay(srv.port, "bernoulli:0.05", 13);
    let out = s.path("out");
    let mut args: Vec<String> = vec![
        "--json".into(),
        "--out".into(),
        out.to_str().unwrap().into(),
    ];
    let sizes: Vec<u64> = (0..40).map(|i| 1 + i * 9_973).collect();
    for n in &sizes {
        args.push(url(&r, &format!("/bytes/{n}")));
    }
    args.push(url(&r, "/data.bin"));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = client(&s, &refs);
    r.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = json_lines(&o).remove(0);
    assert_eq!(c["requests"], 41);
    assert_eq!(c["coded"], true);
    for n in &sizes {
        let body = std::fs::read(out.join(n.to_string())).unwrap();
        assert_eq!(body.len() as u64, *n);
        assert!(body
            .iter()
            .enumerate()
            .all(|(k, &b)| b == b'a' + (k % 26) as u8));
    }
    assert_eq!(
        sha256(&out.join("data.bin")),
        sha256(&s.path("root/data.bin"))
    );
    let _ = server_line(&srv);
}

#[test]
fn plain_quic_with_nc_off_on_either_side() {
    // Coding is used only if both ends offer it.
    for (server, client_side) in [
        (&["--nc", "off"][..], &[][..]),
        (&[][..], &["--nc", "off"][..]),
    ] {
        let s = setup("nc-off");
        let mut sa = vec!["--stats-json"];
        sa.extend_from_slice(server);
        let srv = Server::start(&s, &sa);
        let r = relay(srv.port, "bernoulli:0.05", 14);
        let out = s.path("out");
        let mut args = vec!["--json", "--out", out.to_str().unwrap()];
        args.extend_from_slice(client_side);
        let u = url(&r, "/data.bin");
        args.push(&u);
        let o = client(&s, &args);
        r.stop();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            sha256(&out.join("data.bin")),
            sha256(&s.path("root/data.bin"))
        );
        let c = json_lines(&o).remove(0);
        let sv = server_line(&srv);
        assert_eq!(c["coded"], false);
        assert_eq!(sv["coded"], false);
        assert_eq!(sv["nc"]["sent"]["sources"], 0);
        assert!(
            sv["retrans_bytes"].as_u64().unwrap() > 0,
            "plain QUIC retransmits"
        );
    }
}

#[test]
fn stream_resource_reports_delivery_delay() {
    let s = setup("stream");
    let srv = Server::start(&s, &["--stats-json"]);
    let r = relay(srv.port, "bernoulli:0.05", 15);
    let log = s.path("delays.csv");
    let o = client(
        &s,
        &[
            "--json",
            "--delay-log",
            log.to_str().unwrap(),
            &url(&r, "/stream/2mbit/1500ms"),
        ],
    );
    r.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = json_lines(&o).remove(0);
    let d = &c["delivery"];
    // 2 Mbit/s for 1.5 s in 1200-byte chunks.
    assert_eq!(d["chunks"], 313);
    assert_eq!(d["out_of_order"], 0);
    let (p50, p99, max) = (
        d["p50_ms"].as_f64().unwrap(),
        d["p99_ms"].as_f64().unwrap(),
        d["max_ms"].as_f64().unwrap(),
    );
    // At least the one-way propagation delay, and ordered.
    assert!(p50 >= 5.0 && p50 <= p99 && p99 <= max, "{d}");
    let csv = std::fs::read_to_string(log).unwrap();
    assert_eq!(csv.lines().count(), 314);
}

#[test]
fn stamped_bulk_reports_in_order_delivery_delay() {
    let s = setup("stamped");
    let srv = Server::start(&s, &["--stats-json"]);
    let r = relay(srv.port, "bernoulli:0.05", 16);
    let o = client(&s, &["--json", &url(&r, "/stamped/1000001")]);
    r.stop();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = json_lines(&o).remove(0);
    // Exactly the bytes asked for; the short last chunk is not measured.
    assert_eq!(c["bytes"], 1_000_001);
    let d = &c["delivery"];
    assert_eq!(d["chunks"], 833, "{d}");
    assert_eq!(d["out_of_order"], 0, "{d}");
    let (p50, p99) = (d["p50_ms"].as_f64().unwrap(), d["p99_ms"].as_f64().unwrap());
    // At least the one-way propagation delay (5 ms), ordered, and no
    // longer than the whole download.
    let total_ms = c["duration_s"].as_f64().unwrap() * 1e3;
    assert!(
        p50 >= 5.0 && p50 <= p99 && p99 <= total_ms,
        "{d} in {total_ms} ms"
    );
}
