//! Time series of one connection, read as a stream: goodput, the
//! controller's window, RTT and pacing, and the coding layer's seen /
//! decoded indices, in time bins, plus totals (repair overhead, losses
//! recovered by decoding vs sent again).
//!
//! Only the record being read and the bins are held: a file of hundreds
//! of MB is read in bounded memory. When the bins would exceed their
//! limit, neighbours merge and the bin width doubles (counters add,
//! gauges keep the later value, maxima the larger).

use std::io::BufRead;

use serde_json::Value;

use crate::events;
use crate::records::Records;

/// One time bin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bin {
    /// Application bytes delivered in order (`quic:stream_data_moved` to
    /// the application; the receiver's goodput).
    pub delivered_bytes: u64,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Source symbols sent.
    pub sources_sent: u64,
    /// Repair symbols sent.
    pub repairs_sent: u64,
    /// Repair symbols received.
    pub repairs_received: u64,
    /// Packets recovered by decoding.
    pub recovered: u64,
    /// Lost data held back for decoding instead of retransmitted.
    pub deferred: u64,
    /// Held-back data sent again after all (the peer did not decode it).
    pub deferral_timed_out: u64,
    /// Congestion window at the end of the bin, bytes.
    pub cwnd: Option<f64>,
    /// Bytes in flight at the end of the bin.
    pub bytes_in_flight: Option<f64>,
    /// Smoothed RTT at the end of the bin, ms.
    pub srtt_ms: Option<f64>,
    /// Minimum RTT at the end of the bin, ms.
    pub min_rtt_ms: Option<f64>,
    /// Pacing rate at the end of the bin, bit/s.
    pub pacing_bps: Option<f64>,
    /// Highest seen index (I_q) by the end of the bin.
    pub seen: Option<u64>,
    /// Highest decoded index (I_p) by the end of the bin.
    pub decoded: Option<u64>,
}

impl Bin {
    fn absorb(&mut self, later: &Bin) {
        self.delivered_bytes += later.delivered_bytes;
        self.sent_bytes += later.sent_bytes;
        self.lost_packets += later.lost_packets;
        self.sources_sent += later.sources_sent;
        self.repairs_sent += later.repairs_sent;
        self.repairs_received += later.repairs_received;
        self.recovered += later.recovered;
        self.deferred += later.deferred;
        self.deferral_timed_out += later.deferral_timed_out;
        let keep = |a: &mut Option<f64>, b: Option<f64>| {
            if b.is_some() {
                *a = b;
            }
        };
        keep(&mut self.cwnd, later.cwnd);
        keep(&mut self.bytes_in_flight, later.bytes_in_flight);
        keep(&mut self.srtt_ms, later.srtt_ms);
        keep(&mut self.min_rtt_ms, later.min_rtt_ms);
        keep(&mut self.pacing_bps, later.pacing_bps);
        self.seen = self.seen.max(later.seen);
        self.decoded = self.decoded.max(later.decoded);
    }
}

/// The time series of one connection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// `client` or `server`.
    pub role: String,
    /// Width of a bin, s.
    pub bin_s: f64,
    /// Bins from time 0.
    pub bins: Vec<Bin>,
    /// Time of the last event, s.
    pub duration_s: f64,
    /// Events read.
    pub events: u64,
}

/// Default first bin width, s.
pub const BIN_S: f64 = 0.1;
/// Default bin limit.
pub const MAX_BINS: usize = 2048;

fn f(v: &Value, p: &str) -> Option<f64> {
    v.pointer(p).and_then(Value::as_f64)
}

impl Timeline {
    /// Reads a qlog stream with bins of `bin_s` seconds, merging them
    /// when there would be more than `max_bins`.
    pub fn read<R: BufRead>(input: R, bin_s: f64, max_bins: usize) -> Result<Timeline, String> {
        let mut t = Timeline {
            bin_s: if bin_s > 0.0 { bin_s } else { BIN_S },
            ..Default::default()
        };
        let max_bins = max_bins.max(2);
        let mut recs = Records::new(input);
        // Gauges carry over: quiche logs only the fields that changed.
        let mut g = Bin::default();
        while let Some((_, v)) = recs.next_record()? {
            if let Some(tr) = v.get("trace") {
                if let Some(r) = tr.pointer("/vantage_point/type").and_then(Value::as_str) {
                    t.role = r.to_string();
                }
                continue;
            }
            let (Some(ms), Some(name)) = (f(&v, "/time"), v.get("name").and_then(Value::as_str))
            else {
                continue;
            };
            if !ms.is_finite() || ms < 0.0 {
                continue;
            }
            t.events += 1;
            let s = ms / 1e3;
            t.duration_s = t.duration_s.max(s);
            let mut k = (s / t.bin_s) as usize;
            while k >= max_bins {
                t.halve();
                k = (s / t.bin_s) as usize;
            }
            if t.bins.len() <= k {
                t.bins.resize(k + 1, Bin::default());
            }
            let d = &v["data"];
            let b = &mut t.bins[k];
            match name {
                "quic:stream_data_moved" if d["to"] == "application" => {
                    b.delivered_bytes += f(d, "/raw/length").unwrap_or(0.0) as u64;
                }
                "quic:packet_sent" => b.sent_bytes += f(d, "/raw/length").unwrap_or(0.0) as u64,
                "quic:recovery_metrics_updated" => {
                    b.lost_packets += f(d, "/cf_lost_packets/delta").unwrap_or(0.0) as u64;
                    let set = |dst: &mut Option<f64>, v: Option<f64>, k: f64| {
                        if let Some(v) = v {
                            *dst = Some(v * k);
                        }
                    };
                    set(&mut g.cwnd, f(d, "/congestion_window"), 1.0);
                    set(&mut g.bytes_in_flight, f(d, "/bytes_in_flight"), 1.0);
                    set(&mut g.srtt_ms, f(d, "/smoothed_rtt"), 1.0);
                    set(&mut g.min_rtt_ms, f(d, "/min_rtt"), 1.0);
                    set(&mut g.pacing_bps, f(d, "/pacing_rate"), 8.0);
                }
                events::SOURCE_SENT => b.sources_sent += 1,
                events::REPAIR_SENT => b.repairs_sent += 1,
                events::REPAIR_RECEIVED => b.repairs_received += 1,
                events::PACKET_RECOVERED => b.recovered += 1,
                events::DEFERRED => b.deferred += 1,
                events::DEFERRAL_TIMED_OUT => b.deferral_timed_out += 1,
                events::DECODER_UPDATED => {
                    let u = |p| f(d, p).map(|x| x as u64);
                    g.seen = g.seen.max(u("/i_q"));
                    g.decoded = g.decoded.max(u("/i_p"));
                }
                _ => {}
            }
            b.cwnd = g.cwnd;
            b.bytes_in_flight = g.bytes_in_flight;
            b.srtt_ms = g.srtt_ms;
            b.min_rtt_ms = g.min_rtt_ms;
            b.pacing_bps = g.pacing_bps;
            b.seen = g.seen;
            b.decoded = g.decoded;
        }
        // Bins without events keep the gauges of the bin before.
        for k in 1..t.bins.len() {
            let prev = t.bins[k - 1].clone();
            let b = &mut t.bins[k];
            b.cwnd = b.cwnd.or(prev.cwnd);
            b.bytes_in_flight = b.bytes_in_flight.or(prev.bytes_in_flight);
            b.srtt_ms = b.srtt_ms.or(prev.srtt_ms);
            b.min_rtt_ms = b.min_rtt_ms.or(prev.min_rtt_ms);
            b.pacing_bps = b.pacing_bps.or(prev.pacing_bps);
            b.seen = b.seen.or(prev.seen);
            b.decoded = b.decoded.or(prev.decoded);
        }
        Ok(t)
    }

    /// Merges neighbouring bins; the width doubles.
    fn halve(&mut self) {
        let old = std::mem::take(&mut self.bins);
        for pair in old.chunks(2) {
            let mut b = pair[0].clone();
            if let Some(later) = pair.get(1) {
                b.absorb(later);
            }
            self.bins.push(b);
        }
        self.bin_s *= 2.0;
    }

    /// Bin start times, s.
    pub fn times(&self) -> Vec<f64> {
        (0..self.bins.len())
            .map(|k| k as f64 * self.bin_s)
            .collect()
    }

    /// Goodput per bin, Mbit/s.
    pub fn goodput_mbps(&self) -> Vec<f64> {
        self.bins
            .iter()
            .map(|b| b.delivered_bytes as f64 * 8.0 / self.bin_s / 1e6)
            .collect()
    }

    /// Totals over the connection.
    pub fn totals(&self) -> Totals {
        let sum = |f: fn(&Bin) -> u64| self.bins.iter().map(f).sum::<u64>();
        let sources = sum(|b| b.sources_sent);
        let repairs = sum(|b| b.repairs_sent);
        Totals {
            delivered_bytes: sum(|b| b.delivered_bytes),
            sent_bytes: sum(|b| b.sent_bytes),
            lost_packets: sum(|b| b.lost_packets),
            sources_sent: sources,
            repairs_sent: repairs,
            repair_overhead: (sources > 0).then(|| repairs as f64 / sources as f64),
            recovered: sum(|b| b.recovered),
            deferred: sum(|b| b.deferred),
            sent_again: sum(|b| b.deferral_timed_out),
        }
    }
}

/// Totals of a [`Timeline`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Application bytes delivered in order.
    pub delivered_bytes: u64,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Source symbols sent.
    pub sources_sent: u64,
    /// Repair symbols sent.
    pub repairs_sent: u64,
    /// Repairs / sources.
    pub repair_overhead: Option<f64>,
    /// Packets the receiver recovered by decoding.
    pub recovered: u64,
    /// Losses whose data the sender held back for decoding.
    pub deferred: u64,
    /// Of those, sent again after all.
    pub sent_again: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: f64, name: &str, data: &str) -> String {
        format!("\u{1e}{{\"time\":{t},\"name\":\"{name}\",\"data\":{data}}}\n")
    }

    fn sample() -> String {
        let mut s = String::from("\u{1e}{\"trace\":{\"vantage_point\":{\"type\":\"client\"}}}\n");
        s += &rec(
            10.0,
            "quic:recovery_metrics_updated",
            r#"{"congestion_window":13500,"smoothed_rtt":40.0,"min_rtt":40.0}"#,
        );
        s += &rec(
            50.0,
            "quic:stream_data_moved",
            r#"{"to":"application","raw":{"length":1000}}"#,
        );
        s += &rec(
            60.0,
            "quic:stream_data_moved",
            r#"{"to":"transport","raw":{"length":999}}"#,
        );
        s += &rec(150.0, "nc:decoder_updated", r#"{"i_p":3,"i_q":5}"#);
        s += &rec(160.0, "nc:packet_recovered", r#"{"index":4,"length":1200}"#);
        s += &rec(
            350.0,
            "quic:recovery_metrics_updated",
            r#"{"congestion_window":27000,"cf_lost_packets":{"total":2,"delta":2}}"#,
        );
        s += &rec(360.0, "nc:source_sent", "{}");
        s += &rec(370.0, "nc:repair_sent", "{}");
        s += &rec(371.0, "nc:source_sent", "{}");
        s
    }

    #[test]
    fn bins_counters_and_carried_gauges() {
        let t = Timeline::read(sample().as_bytes(), 0.1, 100).unwrap();
        assert_eq!(t.role, "client");
        assert_eq!(t.bins.len(), 4);
        assert_eq!(t.bins[0].delivered_bytes, 1000);
        assert_eq!(t.bins[0].cwnd, Some(13500.0));
        assert_eq!(t.bins[1].seen, Some(5));
        assert_eq!(t.bins[1].decoded, Some(3));
        assert_eq!(t.bins[1].recovered, 1);
        // Bin 2 has no event: the gauges carry over; the RTT too in bin 3.
        assert_eq!(t.bins[2].cwnd, Some(13500.0));
        assert_eq!(t.bins[3].cwnd, Some(27000.0));
        assert_eq!(t.bins[3].srtt_ms, Some(40.0));
        assert_eq!(t.bins[3].lost_packets, 2);
        assert!((t.goodput_mbps()[0] - 0.08).abs() < 1e-12);
        let tot = t.totals();
        assert_eq!(tot.repair_overhead, Some(0.5));
        assert_eq!(tot.delivered_bytes, 1000);
    }

    #[test]
    fn bins_merge_to_stay_bounded() {
        let t = Timeline::read(sample().as_bytes(), 0.1, 2).unwrap();
        assert!(t.bins.len() <= 2, "{}", t.bins.len());
        assert!((t.bin_s - 0.2).abs() < 1e-12);
        let tot = t.totals();
        // Nothing is lost by merging.
        assert_eq!(
            (tot.delivered_bytes, tot.recovered, tot.lost_packets),
            (1000, 1, 2)
        );
        assert_eq!(t.bins.last().unwrap().cwnd, Some(27000.0));
        assert_eq!(t.bins[0].seen, Some(5));
    }

    #[test]
    fn a_long_file_stays_within_the_bin_limit() {
        // 200,000 events over 2,000 s: memory is the bins, not the events.
        let mut s = String::new();
        for k in 0..200_000u64 {
            s += &rec(
                k as f64 * 10.0,
                "quic:packet_sent",
                r#"{"raw":{"length":1200}}"#,
            );
        }
        let t = Timeline::read(s.as_bytes(), 0.1, 512).unwrap();
        assert!(t.bins.len() <= 512);
        assert_eq!(t.totals().sent_bytes, 200_000 * 1200);
        assert_eq!(t.events, 200_000);
    }

    #[test]
    fn broken_input_is_an_error_not_a_panic() {
        let s = format!(
            "{}\u{1e}{{nonsense\n{}",
            rec(1.0, "x", "{}"),
            rec(2.0, "y", "{}")
        );
        assert!(Timeline::read(s.as_bytes(), 0.1, 10).is_err());
        let t = Timeline::read(rec(-5.0, "x", "{}").as_bytes(), 0.0, 0).unwrap();
        assert!(t.bins.is_empty());
    }
}
