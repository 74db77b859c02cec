//! Per-connection statistics: JSON lines for scripts, one-line summaries
//! for people.

use std::time::Duration;

use quic_nc::CodingStats;
use serde_json::json;

/// The transport counters the tools report, taken from `quiche::Stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bytes sent in UDP payloads (`sent_bytes`).
    pub bytes_sent: u64,
    /// Bytes received in UDP payloads (`recv_bytes`).
    pub bytes_recv: u64,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// QUIC packets received.
    pub packets_recv: u64,
    /// QUIC packets declared lost.
    pub packets_lost: u64,
    /// Stream bytes retransmitted (`stream_retrans_bytes`).
    pub retrans_bytes: u64,
    /// Bytes declared lost (`lost_bytes`).
    pub lost_bytes: u64,
    /// Smoothed RTT of the active path, if known.
    pub rtt: Option<Duration>,
}

impl Counters {
    /// Reads the counters of `conn`.
    pub fn of(conn: &quiche::Connection) -> Counters {
        let s = conn.stats();
        let rtt = conn.path_stats().find(|p| p.active).map(|p| p.rtt);
        Counters {
            bytes_sent: s.sent_bytes,
            bytes_recv: s.recv_bytes,
            packets_sent: s.sent as u64,
            packets_recv: s.recv as u64,
            packets_lost: s.lost as u64,
            retrans_bytes: s.stream_retrans_bytes,
            lost_bytes: s.lost_bytes,
            rtt,
        }
    }
}

/// BoringSSL's `ssl_early_data_accepted` reason.
const EARLY_DATA_ACCEPTED: u32 = 2;

/// How a connection's handshake went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handshake {
    /// The TLS session was resumed from a ticket (no certificate sent).
    pub resumed: bool,
    /// 0-RTT data was accepted by the server.
    pub early_data: bool,
    /// The server validated the client's address with a Retry (known on
    /// the server only).
    pub retry: Option<bool>,
}

impl Handshake {
    /// Reads resumption and 0-RTT from `conn`.
    pub fn of(conn: &quiche::Connection) -> Handshake {
        Handshake {
            resumed: conn.is_resumed(),
            early_data: conn.early_data_reason() == EARLY_DATA_ACCEPTED,
            retry: None,
        }
    }

    /// The words of a human-readable summary ("" for a full handshake).
    pub fn human(&self) -> String {
        let mut parts = Vec::new();
        if self.retry == Some(true) {
            parts.push("after Retry");
        }
        if self.resumed {
            parts.push("resumed");
        }
        if self.early_data {
            parts.push("0-RTT accepted");
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("; handshake {}", parts.join(", "))
        }
    }
}

/// The JSON line `qnc-server --stats-json` prints per closed connection.
pub fn server_json(
    scid: &str,
    peer: &str,
    c: &Counters,
    duration: Duration,
    cc: &str,
    nc: &CodingStats,
    hs: Handshake,
) -> String {
    json!({
        "role": "server",
        "scid": scid,
        "peer": peer,
        "bytes_sent": c.bytes_sent,
        "packets_sent": c.packets_sent,
        "packets_lost": c.packets_lost,
        "retrans_bytes": c.retrans_bytes,
        "lost_bytes": c.lost_bytes,
        "duration_s": duration.as_secs_f64(),
        "cc": cc,
        "coded": nc.negotiated,
        "nc": nc.to_json(),
        "resumed": hs.resumed,
        "early_data": hs.early_data,
        "retry": hs.retry.unwrap_or(false),
    })
    .to_string()
}

/// The coding part of a human-readable summary.
pub fn coding_summary(nc: &CodingStats) -> String {
    if !nc.negotiated {
        return "coding not negotiated".into();
    }
    format!(
        "coded ({}, {}): recovered {} packets, peer recovered {}, repair overhead {:.3} \
         ({} repairs sent), deferrals released {} / timed out {}",
        nc.mode.unwrap_or("?"),
        nc.policy,
        nc.recovered,
        nc.peer_recovered,
        nc.repair_overhead(),
        nc.repairs_sent,
        nc.released,
        nc.timed_out,
    )
}

/// What the client reports for one connection.
#[derive(Debug, Clone)]
pub struct ClientReport {
    /// The first URL fetched on the connection.
    pub url: String,
    /// The HTTP status of the first response (0 if none arrived).
    pub status: u16,
    /// Response body bytes received over all requests.
    pub bytes: u64,
    /// Time from connection start to the last response end.
    pub duration: Duration,
    /// Number of requests made on the connection.
    pub requests: usize,
    /// Transport counters.
    pub counters: Counters,
    /// Congestion controller name.
    pub cc: String,
    /// Coding statistics of the connection.
    pub nc: CodingStats,
    /// Request body bytes uploaded (POST) over all requests.
    pub uploaded: u64,
    /// SHA-256 of the upload, as the server confirmed it.
    pub upload_sha256: Option<String>,
    /// Delivery delay of the stream response(s), if any.
    pub delivery: Option<crate::stream::DelaySummary>,
    /// Resumption and 0-RTT.
    pub handshake: Handshake,
}

impl ClientReport {
    /// Body goodput in Mbit/s: response and upload bytes over the
    /// connection's duration.
    pub fn goodput_mbps(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs > 0.0 {
            (self.bytes + self.uploaded) as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        }
    }

    /// The JSON line `qnc-client --json` prints.
    pub fn json(&self) -> String {
        json!({
            "role": "client",
            "url": self.url,
            "status": self.status,
            "bytes": self.bytes,
            "duration_s": self.duration.as_secs_f64(),
            "goodput_mbps": self.goodput_mbps(),
            "packets_sent": self.counters.packets_sent,
            "packets_lost": self.counters.packets_lost,
            "retrans_bytes": self.counters.retrans_bytes,
            "requests": self.requests,
            "cc": self.cc,
            "coded": self.nc.negotiated,
            "nc": self.nc.to_json(),
            "uploaded": self.uploaded,
            "upload_sha256": self.upload_sha256,
            "delivery": self.delivery.map(|d| d.to_json()),
            "resumed": self.handshake.resumed,
            "early_data": self.handshake.early_data,
        })
        .to_string()
    }

    /// The human-readable summary line.
    pub fn human(&self) -> String {
        let c = &self.counters;
        let rtt = c
            .rtt
            .map(|r| format!("{:.1} ms", r.as_secs_f64() * 1e3))
            .unwrap_or_else(|| "n/a".into());
        format!(
            "{} ({} request{}, status {}): {} bytes in {:.3} s = {:.2} Mbit/s; \
             client sent {} packets, lost {}, retransmitted {} bytes; \
             received {} packets; rtt {}; cc {}; {}",
            self.url,
            self.requests,
            if self.requests == 1 { "" } else { "s" },
            self.status,
            self.bytes,
            self.duration.as_secs_f64(),
            self.goodput_mbps(),
            c.packets_sent,
            c.packets_lost,
            c.retrans_bytes,
            c.packets_recv,
            rtt,
            self.cc,
            coding_summary(&self.nc),
        ) + &self.extras()
            + &self.handshake.human()
    }

    /// Upload and delivery-delay parts of the summary line.
    fn extras(&self) -> String {
        let mut s = String::new();
        if self.uploaded > 0 || self.upload_sha256.is_some() {
            s += &format!(
                "; uploaded {} bytes, sha256 {}",
                self.uploaded,
                match &self.upload_sha256 {
                    Some(h) => format!("{} (confirmed by the server)", &h[..h.len().min(16)]),
                    None => "not confirmed".into(),
                }
            );
        }
        if let Some(d) = &self.delivery {
            s += &format!(
                "; delivery delay of {} chunks: mean {:.1} ms, p50 {:.1}, p95 {:.1}, p99 {:.1}, max {:.1}",
                d.chunks, d.mean_ms, d.p50_ms, d.p95_ms, d.p99_ms, d.max_ms
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters() -> Counters {
        Counters {
            bytes_sent: 10,
            bytes_recv: 20,
            packets_sent: 3,
            packets_recv: 4,
            packets_lost: 1,
            retrans_bytes: 5,
            lost_bytes: 6,
            rtt: Some(Duration::from_millis(2)),
        }
    }

    #[test]
    fn server_line_has_the_contract_fields() {
        let line = server_json(
            "ab",
            "127.0.0.1:5",
            &counters(),
            Duration::from_millis(1500),
            "cubic",
            &CodingStats::default(),
            Handshake {
                resumed: true,
                early_data: false,
                retry: Some(true),
            },
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["role"], "server");
        assert_eq!(v["scid"], "ab");
        assert_eq!(v["peer"], "127.0.0.1:5");
        assert_eq!(v["bytes_sent"], 10);
        assert_eq!(v["packets_sent"], 3);
        assert_eq!(v["packets_lost"], 1);
        assert_eq!(v["retrans_bytes"], 5);
        assert_eq!(v["lost_bytes"], 6);
        assert_eq!(v["duration_s"], 1.5);
        assert_eq!(v["cc"], "cubic");
        assert_eq!(v["coded"], false);
        assert!(v["nc"]["sent"]["repairs"].is_u64());
        assert_eq!(v["resumed"], true);
        assert_eq!(v["early_data"], false);
        assert_eq!(v["retry"], true);
        assert!(!line.contains('\n'));
    }

    #[test]
    fn client_line_and_goodput() {
        let r = ClientReport {
            url: "https://h/x".into(),
            status: 200,
            bytes: 1_000_000,
            duration: Duration::from_secs(2),
            requests: 3,
            counters: counters(),
            cc: "reno".into(),
            nc: CodingStats::default(),
            uploaded: 0,
            upload_sha256: None,
            delivery: None,
            handshake: Handshake::default(),
        };
        assert!((r.goodput_mbps() - 4.0).abs() < 1e-9);
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        for k in [
            "role",
            "url",
            "status",
            "bytes",
            "duration_s",
            "goodput_mbps",
            "packets_sent",
            "packets_lost",
            "retrans_bytes",
            "requests",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["requests"], 3);
        assert!(r.human().contains("4.00 Mbit/s"));
        assert!(!r.human().contains("handshake"));
        let resumed = ClientReport {
            handshake: Handshake {
                resumed: true,
                early_data: true,
                retry: None,
            },
            ..r.clone()
        };
        assert!(resumed
            .human()
            .ends_with("; handshake resumed, 0-RTT accepted"));
        let v: serde_json::Value = serde_json::from_str(&resumed.json()).unwrap();
        assert_eq!(
            (v["resumed"].as_bool(), v["early_data"].as_bool()),
            (Some(true), Some(true))
        );
        let zero = ClientReport {
            duration: Duration::ZERO,
            ..r
        };
        assert_eq!(zero.goodput_mbps(), 0.0);
    }
}
