//! Reading the tools' JSON lines: `qnc-client --json` (also printed by the
//! quic-go peer), `qnc-server --stats-json` (also the quinn peer's).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The JSON objects among `lines` whose `role` is `role`.
pub(crate) fn json_objects(lines: &[String], role: &str) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(|v| v.get("role").and_then(Value::as_str) == Some(role))
        .collect()
}

/// Whether `line` is a JSON object with `role` = `role`.
pub(crate) fn is_role_line(line: &str, role: &str) -> bool {
    serde_json::from_str::<Value>(line.trim())
        .is_ok_and(|v| v.get("role").and_then(Value::as_str) == Some(role))
}

pub(crate) fn as_u64(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

pub(crate) fn as_f64(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// Per-chunk delivery delays of a `/stream/` response, as the client's
/// `delivery` object reports them (read time minus the server's write
/// stamp, milliseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// Chunks measured.
    pub chunks: u64,
    /// Mean delay.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// What the runner takes from a client line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientLine {
    /// HTTP status.
    pub status: Option<u64>,
    /// Body bytes received.
    pub bytes: Option<u64>,
    /// Connection start to the end of the last response (or to giving up).
    pub duration_s: Option<f64>,
    /// `bytes`·8 / `duration_s`, Mbit/s.
    pub goodput_mbps: Option<f64>,
    /// Client's stream bytes retransmitted.
    pub retrans_bytes: Option<u64>,
    /// Client's packets declared lost.
    pub packets_lost: Option<u64>,
    /// Coding negotiated.
    pub coded: Option<bool>,
    /// Delivery delays (streams only).
    pub delivery: Option<Delivery>,
}

impl ClientLine {
    /// Reads the fields the runner uses (missing ones stay `None`).
    pub fn parse(v: &Value) -> ClientLine {
        let bytes = as_u64(v, "bytes");
        let duration_s = as_f64(v, "duration_s");
        ClientLine {
            status: as_u64(v, "status"),
            bytes,
            duration_s,
            goodput_mbps: as_f64(v, "goodput_mbps").or_else(|| match (bytes, duration_s) {
                (Some(b), Some(d)) if d > 0.0 => Some(b as f64 * 8.0 / d / 1e6),
                _ => None,
            }),
            retrans_bytes: as_u64(v, "retrans_bytes"),
            packets_lost: as_u64(v, "packets_lost"),
            coded: v.get("coded").and_then(Value::as_bool),
            delivery: v
                .get("delivery")
                .and_then(|d| serde_json::from_value(d.clone()).ok()),
        }
    }
}

/// What the runner takes from a server line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerLine {
    /// Server's stream bytes retransmitted (quinn: lost bytes).
    pub retrans_bytes: Option<u64>,
    /// Server's packets declared lost.
    pub packets_lost: Option<u64>,
    /// Server's packets sent.
    pub packets_sent: Option<u64>,
    /// Coding negotiated.
    pub coded: Option<bool>,
    /// Repair symbols sent / source symbols sent, if coding was negotiated
    /// and at least one source symbol was sent.
    pub repair_overhead: Option<f64>,
}

impl ServerLine {
    /// Reads the fields the runner uses (missing ones stay `None`).
    pub fn parse(v: &Value) -> ServerLine {
        let nc = v.get("nc");
        let negotiated = nc
            .and_then(|n| n.get("negotiated"))
            .and_then(Value::as_bool)
            .or_else(|| v.get("coded").and_then(Value::as_bool));
        let sent = nc.and_then(|n| n.get("sent"));
        let repair_overhead = match (negotiated, sent) {
            (Some(true), Some(s)) => match (as_u64(s, "sources"), as_u64(s, "repairs")) {
                (Some(src), Some(rep)) if src > 0 => Some(rep as f64 / src as f64),
                _ => None,
            },
            _ => None,
        };
        ServerLine {
            retrans_bytes: as_u64(v, "retrans_bytes"),
            packets_lost: as_u64(v, "packets_lost"),
            packets_sent: as_u64(v, "packets_sent"),
            coded: v.get("coded").and_then(Value::as_bool).or(negotiated),
            repair_overhead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_STREAM: &str = r#"{"role":"client","url":"https://127.0.0.1:4433/stream/8mbit/20s","status":200,"bytes":20000000,"duration_s":20.21,"goodput_mbps":7.92,"packets_sent":900,"packets_lost":3,"retrans_bytes":0,"requests":1,"cc":"hybrid","coded":true,"nc":{"negotiated":true,"mode":"systematic","policy":"adaptive","sent":{"sources":10,"repairs":0},"received":{"sources":14800,"repairs":800,"recovered":740,"redundant":60,"shed":0,"acks_sent":500}},"delivery":{"chunks":2000,"mean_ms":24.5,"p50_ms":21.0,"p95_ms":40.2,"p99_ms":61.7,"max_ms":130.0}}"#;

    const SERVER: &str = r#"{"role":"server","scid":"ab","peer":"127.0.0.1:5","bytes_sent":10500000,"packets_sent":7800,"packets_lost":390,"retrans_bytes":1200,"lost_bytes":520000,"duration_s":4.6,"cc":"hybrid","coded":true,"nc":{"negotiated":true,"mode":"systematic","policy":"adaptive","sent":{"sources":7400,"source_bytes":9990000,"repairs":370,"repair_bytes":499500,"repair_overhead":0.05,"tail_repairs":3,"probes":0,"deferred":0,"released":0,"timed_out":0,"abandoned":0,"peer_recovered":360,"loss_estimate":0.049},"received":{"sources":1,"repairs":0,"recovered":0,"redundant":0,"shed":0,"acks_sent":2}}}"#;

    #[test]
    fn client_line_with_delivery() {
        let lines = vec![
            "listening 1.2.3.4:5".to_string(),
            CLIENT_STREAM.to_string(),
            "{\"role\":\"server\"}".into(),
        ];
        let v = json_objects(&lines, "client");
        assert_eq!(v.len(), 1);
        let c = ClientLine::parse(&v[0]);
        assert_eq!(c.status, Some(200));
        assert_eq!(c.bytes, Some(20_000_000));
        assert_eq!(c.goodput_mbps, Some(7.92));
        assert_eq!(c.coded, Some(true));
        let d = c.delivery.unwrap();
        assert_eq!(d.chunks, 2000);
        assert_eq!((d.mean_ms, d.p50_ms, d.p95_ms), (24.5, 21.0, 40.2));
        assert_eq!((d.p99_ms, d.max_ms), (61.7, 130.0));
    }

    #[test]
    fn client_line_minimal() {
        // The quic-go peer's and the test fake's lines: no nc, no goodput.
        let v: Value = serde_json::from_str(
            r#"{"role":"client","status":200,"bytes":1000000,"duration_s":0.5}"#,
        )
        .unwrap();
        let c = ClientLine::parse(&v);
        assert_eq!(c.goodput_mbps, Some(16.0));
        assert_eq!((c.coded, c.delivery), (None, None));
        assert!(is_role_line(CLIENT_STREAM, "client"));
        assert!(!is_role_line("listening x", "client"));
    }

    #[test]
    fn server_line_repair_overhead() {
        let v: Value = serde_json::from_str(SERVER).unwrap();
        let s = ServerLine::parse(&v);
        assert_eq!(s.retrans_bytes, Some(1200));
        assert_eq!(s.packets_lost, Some(390));
        assert_eq!(s.coded, Some(true));
        assert!((s.repair_overhead.unwrap() - 0.05).abs() < 1e-12);
        // Not negotiated, or a quinn line without nc: no overhead.
        let plain = SERVER.replace("\"negotiated\":true", "\"negotiated\":false");
        let s = ServerLine::parse(&serde_json::from_str(&plain).unwrap());
        assert_eq!(s.repair_overhead, None);
        let quinn: Value = serde_json::from_str(
            r#"{"role":"server","peer":"x","packets_sent":10,"packets_lost":1,"lost_bytes":1350,"retrans_bytes":1350,"cc":"bbr"}"#,
        )
        .unwrap();
        let s = ServerLine::parse(&quinn);
        assert_eq!(
            (s.retrans_bytes, s.coded, s.repair_overhead),
            (Some(1350), None, None)
        );
    }
}
