//! Model curves a scenario's plot can overlay, by name.
//!
//! Each model is defined for one x axis (loss) and a few y metrics, in the
//! units the runner reports; elsewhere it draws nothing. The parameters
//! come from the scenario's link (rate, RTT); the packet size is 1,200
//! bytes (our datagrams), and the papers' own constants are stated below.

use crate::model::{ctcp, kim, von};

/// The names a scenario may list in `plot.models`.
pub const NAMES: [&str; 5] = ["ideal", "ctcp-bound", "kim-tcp", "von-delay", "fair"];

/// Bytes per packet in the models.
pub const PACKET_BYTES: f64 = 1200.0;
/// CTCP's block size N (Section V-B).
pub const CTCP_BLOCK: u32 = 32;
/// Kim's time-out, in rounds (the value behind Table 1).
pub const KIM_TIMEOUT_ROUNDS: f64 = 3.75;

/// What a model needs to know of the scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// Bottleneck rate, bit/s.
    pub rate_bps: f64,
    /// Round-trip propagation delay, s.
    pub rtt_s: f64,
    /// The plot's x axis.
    pub x: String,
    /// The plot's y metric.
    pub y: String,
}

/// A readable legend for model `name`.
pub fn legend(name: &str) -> &'static str {
    match name {
        "ideal" => "ideal: C(1-p)",
        "ctcp-bound" => "CTCP Eq. (5) bound, N = 32",
        "kim-tcp" => "Kim Eq. (16): TCP, Wmax = 2 BDP, To = 3.75 rounds",
        "von-delay" => "TCP VON Sec. IV: decoding delay",
        "fair" => "fair share",
        _ => "?",
    }
}

/// `y` of model `name` at x, if the model covers this plot.
pub fn value(name: &str, c: &Context, x: f64) -> Option<f64> {
    if name == "fair" {
        return matches!(c.y.as_str(), "ratio" | "jain").then_some(1.0);
    }
    if c.x != "loss" {
        return None;
    }
    let p = x;
    let fair = c.rate_bps * (1.0 - p) / 1e6; // Mbit/s
    let bdp_packets = c.rate_bps / 8.0 * c.rtt_s / PACKET_BYTES;
    let v = match (name, c.y.as_str()) {
        ("ideal", "efficiency") => 1.0,
        ("ideal", "goodput_mbps") => fair,
        ("ctcp-bound", "efficiency") => {
            ctcp::efficiency_bound(p, CTCP_BLOCK, ctcp::Eq5::BlockErasures).ok()?
        }
        ("kim-tcp", "goodput_mbps" | "efficiency") => {
            let pkts =
                kim::tcp_throughput(p, c.rtt_s, 2.0 * bdp_packets, KIM_TIMEOUT_ROUNDS).ok()?;
            let mbps = (pkts * PACKET_BYTES * 8.0 / 1e6).min(fair);
            if c.y == "efficiency" {
                mbps / fair
            } else {
                mbps
            }
        }
        ("von-delay", "delay_mean_ms") => {
            let l = von::Link {
                t0: c.rtt_s / 2.0,
                packet_bits: PACKET_BYTES * 8.0,
                capacity_bps: c.rate_bps,
                p,
            };
            l.average_decoding_delay().ok()? * 1e3
        }
        _ => return None,
    };
    v.is_finite().then_some(v)
}

/// The curve of model `name` over `[lo, hi]` (`n` points), empty if the
/// model does not cover this plot.
pub fn curve(name: &str, c: &Context, lo: f64, hi: f64, n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .filter_map(|k| {
            let x = lo + (hi - lo) * k as f64 / (n.max(2) - 1) as f64;
            value(name, c, x).map(|y| (x, y))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(y: &str) -> Context {
        Context {
            rate_bps: 25e6,
            rtt_s: 0.02,
            x: "loss".into(),
            y: y.into(),
        }
    }

    #[test]
    fn every_name_draws_on_some_plot() {
        let ys = ["efficiency", "goodput_mbps", "delay_mean_ms", "ratio"];
        for n in NAMES {
            assert!(
                ys.iter().any(|y| value(n, &ctx(y), 0.05).is_some()),
                "{n} draws nothing"
            );
            assert_ne!(legend(n), "?");
        }
    }

    #[test]
    fn curves_have_the_papers_shapes() {
        // Ideal goodput falls linearly with loss.
        assert_eq!(value("ideal", &ctx("goodput_mbps"), 0.2), Some(20.0));
        // Loss-based TCP collapses with loss; coding's bound stays high.
        let t1 = value("kim-tcp", &ctx("efficiency"), 0.01).unwrap();
        let t5 = value("kim-tcp", &ctx("efficiency"), 0.05).unwrap();
        assert!(t5 < t1 && t5 < 0.5, "{t1} {t5}");
        let b = value("ctcp-bound", &ctx("efficiency"), 0.1).unwrap();
        assert!(b > 0.9 && b <= 1.0, "{b}");
        // Decoding delay grows with loss.
        let d1 = value("von-delay", &ctx("delay_mean_ms"), 0.01).unwrap();
        let d2 = value("von-delay", &ctx("delay_mean_ms"), 0.1).unwrap();
        assert!(d2 > d1, "{d1} {d2}");
        // Other axes: nothing.
        let mut c = ctx("efficiency");
        c.x = "size".into();
        assert!(curve("ideal", &c, 0.0, 1.0, 10).is_empty());
    }
}
