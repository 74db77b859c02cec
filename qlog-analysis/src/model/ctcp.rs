//! Kim, Cloud, ParandehGheibi, Urbina, Fouli, Leith, Médard, "Congestion
//! Control for Coded Transport Layers" (IEEE ICC 2014).
//!
//! AIMD with the adaptive backoff `beta = RTT_min/RTT` (Eq. (1)), its
//! stationary mean rate and capacity share (Eq. (3)-(4), Section IV), and
//! the efficiency bound of block coding with `N` packets a block (Eq. (5),
//! Section V-B).

use super::{finite, positive, probability, ModelError, Result};

/// Largest number of coded packets per block Eq. (5) sums over.
pub const MAX_CODED_PER_BLOCK: f64 = 1e6;

/// Adaptive backoff factor, Eq. (1): `beta = RTT_min / RTT`, for
/// `0 < RTT_min <= RTT`.
pub fn adaptive_backoff(rtt_min: f64, rtt: f64) -> Result<f64> {
    let rtt_min = positive(rtt_min, "rtt_min must be finite and > 0")?;
    let rtt = positive(rtt, "rtt must be finite and > 0")?;
    if rtt < rtt_min {
        return Err(ModelError::InvalidParameter("rtt must be >= rtt_min"));
    }
    Ok(rtt_min / rtt)
}

/// Mean backoff factor of a flow at a network backoff event (Section IV):
/// the flow sees no loss during its RTT with probability
/// `gamma = (1-p)^(s T)` (`s T` = packets it sends per RTT) and keeps its
/// window; otherwise it multiplies it by `beta`. So
/// `E[beta~] = gamma + (1 - gamma) beta`.
pub fn mean_backoff(p: f64, packets_per_rtt: f64, beta: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    let beta = probability(beta, "beta must be in [0, 1]")?;
    if !(packets_per_rtt.is_finite() && packets_per_rtt >= 0.0) {
        return Err(ModelError::InvalidParameter(
            "packets_per_rtt must be finite and >= 0",
        ));
    }
    let gamma = (1.0 - p).powf(packets_per_rtt);
    Ok(gamma + (1.0 - gamma) * beta)
}

/// One AIMD flow of Eq. (2)-(4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Flow {
    /// Additive increase `alpha`, packets per RTT.
    pub alpha: f64,
    /// Round-trip propagation delay `T_i`, seconds.
    pub rtt: f64,
    /// Stationary mean backoff factor `E[beta~_i]`, in `[0, 1)`.
    pub mean_backoff: f64,
}

impl Flow {
    /// The weight `alpha~_i / (1 - E[beta~_i])` with
    /// `alpha~_i = alpha / T_i^2`, which sets the flow's share in Eq. (4).
    pub fn weight(&self) -> Result<f64> {
        let alpha = positive(self.alpha, "alpha must be finite and > 0")?;
        let rtt = positive(self.rtt, "rtt must be finite and > 0")?;
        let b = probability(self.mean_backoff, "mean_backoff must be in [0, 1)")?;
        if b == 1.0 {
            return Err(ModelError::OutOfDomain(
                "mean_backoff = 1: the flow never backs off, Eq. (4) diverges",
            ));
        }
        finite(alpha / (rtt * rtt) / (1.0 - b), "weight")
    }

    /// Stationary mean rate, Eq. (4):
    /// `E[s_i] = alpha~_i / (1 - E[beta~_i]) * E[T]`, in packets per second,
    /// with `mean_interval` = `E[T]`, the mean time between network backoff
    /// events in seconds.
    pub fn mean_rate(&self, mean_interval: f64) -> Result<f64> {
        let t = positive(mean_interval, "mean_interval must be finite and > 0")?;
        finite(self.weight()? * t, "rate")
    }
}

/// Fraction of the link capacity each flow gets on average (Eq. (4): the
/// common factor `E[T]` cancels). At least one flow is needed.
pub fn capacity_shares(flows: &[Flow]) -> Result<Vec<f64>> {
    if flows.is_empty() {
        return Err(ModelError::InvalidParameter("no flows"));
    }
    let weights = flows.iter().map(Flow::weight).collect::<Result<Vec<_>>>()?;
    let total = finite(weights.iter().sum(), "sum of weights")?;
    Ok(weights.into_iter().map(|w| w / total).collect())
}

/// How the binomial term of Eq. (5) is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eq5 {
    /// As printed: `C(n,k) p^k (1-p)^(N-k)`. For `p > 1/2` this is not a
    /// probability and the result can exceed 1 (at `p = 1/2` the bound
    /// is exactly 1/2).
    AsPrinted,
    /// The number of erasures among the block's `N + n` packets,
    /// `C(N+n,k) p^k (1-p)^(N+n-k)`, which matches the paper's wording
    /// ("unnecessary because there are fewer than `n` erasures") and keeps
    /// `eta <= n/N`.
    BlockErasures,
}

/// Coded packets sent with each block of `block` packets (Section V-B):
/// `n = floor(N/(1-p)) - N`. `p` must be below 1.
pub fn coded_per_block(p: f64, block: u32) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    if block == 0 {
        return Err(ModelError::InvalidParameter("block must be >= 1"));
    }
    let q = positive(1.0 - p, "p must be below 1")?;
    let big_n = f64::from(block);
    let n = (big_n / q).floor() - big_n;
    if n > MAX_CODED_PER_BLOCK {
        return Err(ModelError::TooLarge("more than 10^6 coded packets a block"));
    }
    Ok(n)
}

/// Eq. (5): mean number of unnecessary coded packets per information
/// packet, `eta = (1/N) sum_{k=0}^{n-1} (n-k) B(k)` with
/// `n = floor(N/(1-p)) - N` and `B(k)` read as `reading` says.
pub fn unnecessary_coded(p: f64, block: u32, reading: Eq5) -> Result<f64> {
    let n = coded_per_block(p, block)?;
    let big_n = f64::from(block);
    if n < 1.0 {
        return Ok(0.0);
    }
    // n >= 1 implies 0 < p < 1, so both logs are finite.
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let (trials, q_exp) = match reading {
        Eq5::AsPrinted => (n, big_n),
        Eq5::BlockErasures => (big_n + n, big_n + n),
    };
    let mut ln_c = 0.0; // ln C(trials, k)
    let mut sum = 0.0;
    let mut k = 0.0;
    while k < n {
        sum += (n - k) * (ln_c + k * ln_p + (q_exp - k) * ln_q).exp();
        ln_c += (trials - k).ln() - (k + 1.0).ln();
        k += 1.0;
    }
    finite(sum / big_n, "eta")
}

/// Upper bound on CTCP's efficiency (goodput over link capacity), the
/// "Theory" curve of Fig. 2b, read as `1 - eta` with `eta` from Eq. (5):
/// the paper says the bound is "calculated using" (5) and calls `eta` the
/// mean number of unnecessary coded packets (per information packet,
/// given the `1/N`).
pub fn efficiency_bound(p: f64, block: u32, reading: Eq5) -> Result<f64> {
    unnecessary_coded(p, block, reading).map(|eta| 1.0 - eta)
}

/// Standard TCP's window under random loss, `sqrt(1.5/p)` packets per RTT
/// (the Padhye model the paper compares with, Sections III and V-B).
pub fn reno_window(p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    positive(p, "p must be > 0").map(|p| (1.5 / p).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eq. (1): with a bandwidth-delay product of buffering
    /// `RTT_max = 2 RTT_min` and `beta = 0.5`; an idle path gives 1.
    #[test]
    fn adaptive_backoff_eq_1() {
        assert_eq!(adaptive_backoff(0.02, 0.04), Ok(0.5));
        assert_eq!(adaptive_backoff(0.02, 0.02), Ok(1.0));
        assert!(adaptive_backoff(0.04, 0.02).is_err());
    }

    /// Eq. (4) is the fixed point of the recursion (3): iterate (3) and
    /// compare.
    #[test]
    fn eq_4_is_the_fixed_point_of_eq_3() {
        let flow = Flow {
            alpha: 1.0,
            rtt: 0.05,
            mean_backoff: 0.7,
        };
        let mean_t = 0.3;
        let alpha_t = flow.alpha / (flow.rtt * flow.rtt);
        let mut s = 0.0;
        for _ in 0..500 {
            s = flow.mean_backoff * s + alpha_t * mean_t;
        }
        let eq4 = flow.mean_rate(mean_t).unwrap();
        assert!((s - eq4).abs() <= 1e-9 * eq4, "{s} vs {eq4}");
    }

    /// Section IV: same RTT and backoff share equally; same backoff and
    /// different RTTs give `E[s_i]/E[s_j] = (T_j/T_i)^2`.
    #[test]
    fn fairness_statements() {
        let a = Flow {
            alpha: 1.0,
            rtt: 0.02,
            mean_backoff: 0.6,
        };
        assert_eq!(capacity_shares(&[a, a]), Ok(vec![0.5, 0.5]));
        let b = Flow { rtt: 0.06, ..a };
        let ratio = a.mean_rate(1.0).unwrap() / b.mean_rate(1.0).unwrap();
        assert!((ratio - 9.0).abs() < 1e-9, "{ratio}");
    }

    /// Section IV, friendliness on a loss-free link: a fixed-0.5 flow
    /// against an adaptive flow gets `2(1 - beta_j)` times its rate, equal
    /// when `q_max = B T_j` (then `beta_j = T_j / (T_j + q_max/B) = 0.5`).
    #[test]
    fn friendliness_with_fixed_backoff() {
        let (t, b) = (0.025, 25e6 / 12_000.0); // 25 Mbit/s in 1500 B packets
        for (buffer, expect) in [(b * t, 1.0), (0.25 * b * t, 2.0 * (1.0 - 0.8))] {
            let beta_j = adaptive_backoff(t, t + buffer / b).unwrap();
            let reno = Flow {
                alpha: 1.0,
                rtt: t,
                mean_backoff: 0.5,
            };
            let ctcp = Flow {
                mean_backoff: beta_j,
                ..reno
            };
            let ratio = reno.mean_rate(1.0).unwrap() / ctcp.mean_rate(1.0).unwrap();
            assert!((ratio - 2.0 * (1.0 - beta_j)).abs() < 1e-12);
            assert!((ratio - expect).abs() < 1e-12, "{ratio}");
        }
    }

    /// Section IV: a flow with no loss in its RTT keeps its window
    /// (gamma = 1); with losses `E[beta~]` moves toward `beta`.
    #[test]
    fn mean_backoff_section_iv() {
        assert_eq!(mean_backoff(0.0, 50.0, 0.5), Ok(1.0));
        let m = mean_backoff(0.01, 50.0, 0.5).unwrap();
        let gamma = 0.99_f64.powi(50);
        assert!((m - (gamma + (1.0 - gamma) * 0.5)).abs() < 1e-15);
        let never = Flow {
            alpha: 1.0,
            rtt: 0.02,
            mean_backoff: 1.0,
        };
        assert!(never.mean_rate(1.0).is_err());
    }

    /// Section V-B: n = floor(N/(1-p)) - N with N = 32. No coded packet is
    /// sent below p = 1/33, so the bound is 1 at the 1% loss where CTCP
    /// measured "> 96%" of capacity.
    #[test]
    fn coded_packets_per_block() {
        assert_eq!(coded_per_block(0.01, 32), Ok(0.0));
        assert_eq!(coded_per_block(0.05, 32), Ok(1.0));
        assert_eq!(coded_per_block(0.2, 32), Ok(8.0));
        for r in [Eq5::AsPrinted, Eq5::BlockErasures] {
            let bound = efficiency_bound(0.01, 32, r).unwrap();
            assert!(bound >= 0.96 && bound == 1.0);
        }
    }

    /// Eq. (5) evaluated by hand where it has one term (n = 1, p = 0.05):
    /// as printed, eta = (1-p)^N / N; block reading,
    /// eta = (1-p)^(N+1) / N. At p = 1/2 the printed form gives exactly
    /// 1/2 (n = N = 32, K ~ Bin(32, 1/2), E[32 - K] = 16).
    #[test]
    fn eq_5_single_term_and_half() {
        let p: f64 = 0.05;
        let printed = unnecessary_coded(p, 32, Eq5::AsPrinted).unwrap();
        assert!((printed - (1.0 - p).powi(32) / 32.0).abs() < 1e-15);
        let block = unnecessary_coded(p, 32, Eq5::BlockErasures).unwrap();
        assert!((block - (1.0 - p).powi(33) / 32.0).abs() < 1e-15);
        let half = unnecessary_coded(0.5, 32, Eq5::AsPrinted).unwrap();
        assert!((half - 0.5).abs() < 1e-12, "{half}");
    }

    /// The block reading is a mean of (n - K)^+: between (n - E[K])^+/N
    /// (Jensen) and n/N.
    #[test]
    fn eq_5_block_reading_bounds() {
        for p in [0.04, 0.1, 0.2, 0.3, 0.5, 0.8] {
            let n = coded_per_block(p, 32).unwrap();
            let eta = unnecessary_coded(p, 32, Eq5::BlockErasures).unwrap();
            let low = (n - (32.0 + n) * p).max(0.0) / 32.0;
            assert!(eta >= low - 1e-12 && eta <= n / 32.0, "p {p}: {eta}");
        }
    }

    /// Section V-B: with a 52-packet bandwidth-delay product (25 Mbit/s,
    /// 25 ms, 1500 B) the Padhye window sqrt(1.5/p) at p = 1% is about a
    /// fifth of the link (paper: standard TCP falls "to 20%", in "good
    /// agreement" with Padhye; the model gives 23.6%).
    #[test]
    fn padhye_at_one_percent() {
        let bdp: f64 = 25e6 * 0.025 / 12_000.0;
        assert_eq!(bdp.round(), 52.0);
        let eff = reno_window(0.01).unwrap() / bdp;
        assert!((eff - 0.235).abs() < 1e-3, "{eff}");
        assert!(reno_window(0.0).is_err());
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        assert!(coded_per_block(1.0, 32).is_err());
        assert!(coded_per_block(0.1, 0).is_err());
        assert!(coded_per_block(1.0 - 1e-12, 32).is_err());
        assert!(unnecessary_coded(f64::NAN, 32, Eq5::AsPrinted).is_err());
        assert!(capacity_shares(&[]).is_err());
        assert!(mean_backoff(0.1, -1.0, 0.5).is_err());
        assert!(mean_backoff(0.1, 1.0, 1.5).is_err());
        let bad = Flow {
            alpha: f64::NAN,
            rtt: 0.1,
            mean_backoff: 0.5,
        };
        assert!(bad.mean_rate(1.0).is_err());
        // The printed reading grows without bound for large p; it stays
        // finite or reports overflow, never NaN.
        let r = unnecessary_coded(0.99, 32, Eq5::AsPrinted);
        assert!(r.map_or(true, f64::is_finite));
    }
}
