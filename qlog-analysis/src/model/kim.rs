//! Kim, Médard, Barros, "Modeling Network Coded TCP Throughput: A Simple
//! Model and its Validation" (ICST/ACM Valuetools 2011).
//!
//! TCP (Go-Back-N, Reno-like) over a link that erases packets independently
//! with probability `p`, modelled in rounds of one RTT (Section 5), and
//! end-to-end TCP/NC ("E2E") on the same link (Section 6).
//!
//! Units: windows in packets, RTT and SRTT in seconds, the time-out `T_o`
//! in rounds, throughput in packets per second.

use super::{finite, positive, probability, ModelError, Result};

/// Largest `p` for which Eq. (9) is real: `(1-p)/p >= 1/12`.
pub const P_MAX_TCP: f64 = 12.0 / 13.0;

/// Largest number of coded packets per round [`masking_probability`]
/// sums over.
pub const MAX_CODED_PER_ROUND: f64 = 1e6;

/// `sqrt(-1/18 + (2/3)(1-p)/p)`, the root shared by Eq. (9) and (16), for
/// `0 < p <= 12/13`.
fn root(p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    if p == 0.0 {
        return Err(ModelError::OutOfDomain(
            "p = 0: no losses, so no triple-duplicate cycle",
        ));
    }
    let inner = 2.0 / 3.0 * (1.0 - p) / p - 1.0 / 18.0;
    // Rounding can put p = 12/13 a hair outside.
    if inner < -1e-12 {
        return Err(ModelError::OutOfDomain("Eq. (9) needs p <= 12/13"));
    }
    Ok(inner.max(0.0).sqrt())
}

/// Expected number of rounds between two triple-duplicate events,
/// Eq. (9): `E[r] = 2/3 + sqrt(-1/18 + (2/3)(1-p)/p)`, for
/// `0 < p <= 12/13`.
pub fn expected_rounds(p: f64) -> Result<f64> {
    root(p).map(|s| 2.0 / 3.0 + s)
}

/// Steady-state mean TCP window, Eq. (10): `E[W] = (3/2) E[r] - 1`.
pub fn expected_window(p: f64) -> Result<f64> {
    expected_rounds(p).map(|r| 1.5 * r - 1.0)
}

/// Throughput with triple-duplicate losses only and no window limit,
/// Eq. (11): `T' = ((1-p)/p) / (RTT (E[r] + 1))`.
pub fn td_throughput(p: f64, rtt: f64) -> Result<f64> {
    let rtt = positive(rtt, "rtt must be finite and > 0")?;
    let r = expected_rounds(p)?;
    finite((1.0 - p) / p / (rtt * (r + 1.0)), "throughput")
}

/// Probability that a loss in a window of `w` packets ends in a time-out,
/// Eq. (13): 1 if `W < 3`, else `sum_{i=0..2} C(W,i) p^(W-i) (1-p)^i`.
///
/// The binomial needs a whole number of packets: `W = floor(w)`. Kim's
/// Table 1 is reproduced only with the floor (see the tests).
pub fn timeout_probability(w: f64, p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    if !(w.is_finite() && w >= 0.0) {
        return Err(ModelError::InvalidParameter(
            "window must be finite and >= 0",
        ));
    }
    let w = w.floor();
    if w < 3.0 {
        return Ok(1.0);
    }
    // ln C(W, i) for i = 0, 1, 2.
    let ln_c = [0.0, w.ln(), w.ln() + (w - 1.0).ln() - 2f64.ln()];
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut sum = 0.0;
    for (i, c) in ln_c.iter().enumerate() {
        let i = i as f64;
        // p^(W-i): W - i >= 1, so p = 0 gives exp(-inf) = 0.
        let mut e = c + (w - i) * ln_p;
        if i > 0.0 {
            e += i * ln_q;
        }
        sum += e.exp();
    }
    Ok(sum.min(1.0))
}

/// Expected length of a time-out period in rounds, Eq. (15), the closed
/// form of the series (14) (back-off doubling from `T_o` up to `64 T_o`):
///
/// `(1-p) [T_o p + 3T_o p^2 + 7T_o p^3 + 15T_o p^4 + 31T_o p^5
///         + 63T_o p^6/(1-p) + 64T_o p^7/(1-p)^2]`, for `0 <= p < 1`.
pub fn timeout_duration_rounds(p: f64, t_o: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    let t_o = positive(t_o, "t_o must be finite and > 0")?;
    let q = positive(1.0 - p, "p must be below 1")?;
    let head: f64 = [1.0, 3.0, 7.0, 15.0, 31.0]
        .iter()
        .zip(1..)
        .map(|(c, k)| c * p.powi(k))
        .sum();
    let tail = 63.0 * p.powi(6) / q + 64.0 * p.powi(7) / (q * q);
    finite(q * t_o * (head + tail), "time-out duration")
}

/// TCP throughput with triple-duplicate and time-out losses and a window
/// limit, Eq. (16) (Eq. (12) plus the time-out terms (13)-(15)):
///
/// `T = min(W_max/RTT, ((1-p)/p) / (RTT (5/3 + sqrt(-1/18 + (2/3)(1-p)/p)
///      + P(TO|E[W]) E[TO duration])))`
///
/// with `E[W]` from Eq. (10). `p = 0` gives `W_max/RTT` (the limit of the
/// min); `p > 12/13` is outside the model.
pub fn tcp_throughput(p: f64, rtt: f64, w_max: f64, t_o: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    let rtt = positive(rtt, "rtt must be finite and > 0")?;
    let w_max = positive(w_max, "w_max must be finite and > 0")?;
    let t_o = positive(t_o, "t_o must be finite and > 0")?;
    let cap = w_max / rtt;
    if p == 0.0 {
        return Ok(cap);
    }
    let rounds = expected_rounds(p)? + 1.0;
    let timeouts = timeout_probability(expected_window(p)?, p)? * timeout_duration_rounds(p, t_o)?;
    let t = (1.0 - p) / p / (rtt * (rounds + timeouts));
    finite(cap.min(t), "throughput")
}

/// Expected E2E (TCP/NC) window in round `i`, Eq. (17):
/// `E[W_i] = min(W_max, E[W_1] + i min{1, R(1-p)})`.
pub fn e2e_window(i: u64, w1: f64, w_max: f64, r: f64, p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    let w1 = positive(w1, "w1 must be finite and > 0")?;
    let w_max = positive(w_max, "w_max must be finite and > 0")?;
    if w_max < w1 {
        return Err(ModelError::InvalidParameter("w_max must be >= w1"));
    }
    if !(r.is_finite() && r >= 1.0) {
        return Err(ModelError::InvalidParameter("r must be finite and >= 1"));
    }
    let slope = (r * (1.0 - p)).min(1.0);
    Ok(w_max.min(w1 + i as f64 * slope))
}

/// Expected packets sent before the E2E window reaches `w` from 1,
/// Eq. (18): `T_p(W) = W(W-1) / (2(1-p))`.
pub fn e2e_transmissions(w: f64, p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    if !(w.is_finite() && w >= 1.0) {
        return Err(ModelError::InvalidParameter("w must be finite and >= 1"));
    }
    let q = positive(1.0 - p, "p must be below 1")?;
    finite(w * (w - 1.0) / (2.0 * q), "transmissions")
}

/// Average E2E throughput over `n` rounds, Eq. (20), valid when
/// `R >= 1/(1-p)` (window slope 1):
///
/// `T = f(n) / (n SRTT)`, `r* = W_max - E[W_1]`,
/// `f(n) = n E[W_1] + n(n+1)/2` for `n <= r*`,
/// `f(n) = n W_max - r*(W_max - E[W_1]) + r*(r*-1)/2` for `n > r*`.
///
/// `f` is kept as printed. Its second branch is `r*` packets below the sum
/// of Eq. (17) over rounds `1..=n` (that sum ends in `+ r*(r*+1)/2`).
/// Table 1 fits the printed form with `E[W_1] = 25`, or the exact sum with
/// `E[W_1] = 24` (same shortfall). `n` may be fractional (Table 1 uses
/// `n SRTT = 1000 s`).
pub fn e2e_throughput(n: f64, srtt: f64, w1: f64, w_max: f64) -> Result<f64> {
    let n = positive(n, "n must be finite and > 0")?;
    let srtt = positive(srtt, "srtt must be finite and > 0")?;
    let w1 = positive(w1, "w1 must be finite and > 0")?;
    let w_max = positive(w_max, "w_max must be finite and > 0")?;
    if w_max < w1 {
        return Err(ModelError::InvalidParameter("w_max must be >= w1"));
    }
    let r_star = w_max - w1;
    let f = if n <= r_star {
        n * w1 + n * (n + 1.0) / 2.0
    } else {
        n * w_max - r_star * (w_max - w1) + r_star * (r_star - 1.0) / 2.0
    };
    finite(f / (n * srtt), "throughput")
}

/// Upper bound on the probability that a round's losses are all masked,
/// Section 7.2: no more than `W(R-1)` of the `RW` coded packets are lost,
/// `sum_{x=0..floor(W(R-1))} C(RW, x) p^x (1-p)^(RW-x)`, with `RW`
/// rounded to whole packets. Kim picks `R` so that this is at least 0.8.
pub fn masking_probability(w: f64, r: f64, p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    let w = positive(w, "w must be finite and > 0")?;
    if !(r.is_finite() && r >= 1.0) {
        return Err(ModelError::InvalidParameter("r must be finite and >= 1"));
    }
    // The epsilon keeps e.g. 50 * (1.28 - 1) = 13.999... at 14.
    let sent = (r * w).round();
    let spare = (w * (r - 1.0) + 1e-9).floor().min(sent);
    if sent > MAX_CODED_PER_ROUND {
        return Err(ModelError::TooLarge("more than 10^6 coded packets a round"));
    }
    if p == 0.0 {
        return Ok(1.0);
    }
    if p == 1.0 {
        return Ok(if spare >= sent { 1.0 } else { 0.0 });
    }
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut ln_c = 0.0; // ln C(sent, x)
    let mut sum = 0.0;
    let mut x = 0.0;
    while x <= spare {
        sum += (ln_c + x * ln_p + (sent - x) * ln_q).exp();
        ln_c += (sent - x).ln() - (x + 1.0).ln();
        x += 1.0;
    }
    Ok(sum.min(1.0))
}

/// Rate E2E can reach on a link of capacity `c` with erasure rate `p` and
/// redundancy `r`, Section 7.3: `min{C(1-p), C/R}` (same unit as `c`).
pub fn achievable_rate(c: f64, p: f64, r: f64) -> Result<f64> {
    let c = positive(c, "c must be finite and > 0")?;
    let p = probability(p, "p must be in [0, 1]")?;
    if !(r.is_finite() && r >= 1.0) {
        return Err(ModelError::InvalidParameter("r must be finite and >= 1"));
    }
    Ok((c * (1.0 - p)).min(c / r))
}

#[cfg(test)]
mod tests {
    use super::super::loss::path_loss;
    use super::*;

    /// 1000-byte packets: packets per second to Mbit/s.
    const MBIT_PER_PACKET: f64 = 8000.0 / 1e6;
    /// Half a unit in the last digit of Table 1's throughputs.
    const HALF_ULP: f64 = 0.5e-4;

    /// Table 1, "TCP analysis" column: Eq. (16) with W_max = 50,
    /// RTT = 0.8 s, T_o = 3.75 rounds (3 s), 1000-byte packets, and
    /// p = 1 - (1-q)^4 for q = 0, 0.005, 0.015, 0.025, 0.05 (Section 7.1).
    /// All five printed values are matched to the last printed digit.
    #[test]
    fn kim_table_1_tcp_analysis() {
        let rows = [
            (0.0, 0.5000),
            (0.005, 0.0667),
            (0.015, 0.0325),
            (0.025, 0.0220),
            (0.05, 0.0098),
        ];
        for (q, printed) in rows {
            let p = path_loss(q, 4).unwrap();
            let t = tcp_throughput(p, 0.8, 50.0, 3.75).unwrap() * MBIT_PER_PACKET;
            assert!((t - printed).abs() <= HALF_ULP, "p {p}: {t} vs {printed}");
        }
    }

    /// The same column from the p printed in the table (4 decimals). The
    /// rounding of p moves row 2 to 0.06663, which prints as 0.0666: the
    /// table was computed from the unrounded p.
    #[test]
    fn kim_table_1_with_printed_p() {
        let rows = [
            (0.0199, 0.0667),
            (0.0587, 0.0325),
            (0.0963, 0.0220),
            (0.1855, 0.0098),
        ];
        for (p, printed) in rows {
            let t = tcp_throughput(p, 0.8, 50.0, 3.75).unwrap() * MBIT_PER_PACKET;
            assert!((t - printed).abs() <= 1e-4, "p {p}: {t} vs {printed}");
        }
        let t = tcp_throughput(0.0199, 0.8, 50.0, 3.75).unwrap() * MBIT_PER_PACKET;
        assert!((t - 0.06663).abs() < 1e-5, "{t}");
    }

    /// Why the window is floored in Eq. (13): at p = 0.0963, E[W] = 3.735.
    /// floor gives W = 3 and the printed 0.0220; W = 4 (rounding) would
    /// give P(TO) = 0.049 and 0.0225.
    #[test]
    fn timeout_uses_whole_packets() {
        let p = path_loss(0.025, 4).unwrap();
        let w = expected_window(p).unwrap();
        assert!((3.7..3.8).contains(&w), "{w}");
        let p3 = p.powi(3) + 3.0 * p.powi(2) * (1.0 - p) + 3.0 * p * (1.0 - p).powi(2);
        assert!((timeout_probability(w, p).unwrap() - p3).abs() < 1e-14);
        assert!((timeout_probability(4.0, p).unwrap() - 0.0488).abs() < 1e-3);
        assert_eq!(timeout_probability(2.9, 0.01), Ok(1.0));
    }

    /// Eq. (15) is the closed form of the series (14): sum the series
    /// term by term and compare.
    #[test]
    fn timeout_duration_matches_series_14() {
        for p in [0.01_f64, 0.0963, 0.3, 0.7] {
            let t_o = 3.75;
            let mut series = 0.0;
            for (k, c) in [1.0, 3.0, 7.0, 15.0, 31.0].iter().enumerate() {
                series += c * t_o * p.powi(k as i32 + 1);
            }
            for i in 0..2000 {
                series += (63.0 + 64.0 * f64::from(i)) * t_o * p.powi(6 + i);
            }
            series *= 1.0 - p;
            let closed = timeout_duration_rounds(p, t_o).unwrap();
            assert!((closed - series).abs() <= 1e-12 * series, "{p}");
        }
    }

    /// Section 5.1: T' ~ (1/RTT) sqrt(3/(2p)) for small p, and
    /// ~ (1/RTT)(1-p)/p for large p (E[r] + 1 -> 5/3 at p = 12/13).
    #[test]
    fn td_throughput_limits() {
        let p = 1e-8;
        let t = td_throughput(p, 1.0).unwrap();
        assert!((t / (1.5 / p).sqrt() - 1.0).abs() < 1e-3, "{t}");
        let p = P_MAX_TCP;
        let t = td_throughput(p, 1.0).unwrap();
        assert!((t - (1.0 - p) / p / (5.0 / 3.0)).abs() < 1e-9, "{t}");
    }

    /// Table 1, "E2E analysis" column: Eq. (20) with n SRTT = 1000 s,
    /// W_max = 50 and each row's E2E SRTT. The printed values are matched
    /// to the last digit with E[W_1] = 25. The paper does not state this
    /// value (Section 6.1 says E[W_1] = 1 is usual); see the next test.
    #[test]
    fn kim_table_1_e2e_analysis() {
        let rows = [
            (0.8256, 0.4819),
            (0.8260, 0.4817),
            (0.8264, 0.4814),
            (0.8281, 0.4804),
            (0.8347, 0.4766),
        ];
        for (srtt, printed) in rows {
            let t = e2e_throughput(1000.0 / srtt, srtt, 25.0, 50.0).unwrap() * MBIT_PER_PACKET;
            assert!(
                (t - printed).abs() <= HALF_ULP,
                "srtt {srtt}: {t} vs {printed}"
            );
        }
    }

    /// With E[W_1] = 1, Eq. (20) gives 0.4747 for the first row, not the
    /// printed 0.4819: the printed column is not reproduced with the
    /// stated initial window.
    #[test]
    fn e2e_with_initial_window_1_misses_table_1() {
        let t = e2e_throughput(1000.0 / 0.8256, 0.8256, 1.0, 50.0).unwrap() * MBIT_PER_PACKET;
        assert!((t - 0.4747).abs() <= HALF_ULP, "{t}");
        assert!((t - 0.4819).abs() > 5e-3);
    }

    /// Eq. (20) is the round average of Eq. (17) (slope 1): equal to the
    /// direct sum up to r*, then `r*` packets below it (printed form).
    #[test]
    fn e2e_throughput_is_the_mean_of_eq_17() {
        let (w1, w_max) = (5.0, 20.0);
        let r_star = w_max - w1;
        for n in 1..60u64 {
            let sum: f64 = (1..=n)
                .map(|i| e2e_window(i, w1, w_max, 1.25, 0.2).unwrap())
                .sum();
            let f = e2e_throughput(n as f64, 1.0, w1, w_max).unwrap() * n as f64;
            let gap = if (n as f64) <= r_star { 0.0 } else { r_star };
            assert!((sum - f - gap).abs() < 1e-9, "n {n}: {sum} vs {f}");
        }
        // As n grows the mean tends to W_max/SRTT.
        let t = e2e_throughput(1e9, 0.8, 1.0, 50.0).unwrap();
        assert!((t - 50.0 / 0.8).abs() < 1e-5);
    }

    /// Eq. (17): slope min{1, R(1-p)}, capped at W_max.
    #[test]
    fn e2e_window_growth() {
        assert_eq!(e2e_window(10, 1.0, 90.0, 1.25, 0.1), Ok(11.0));
        assert_eq!(e2e_window(10, 1.0, 90.0, 1.0, 0.5), Ok(6.0));
        assert_eq!(e2e_window(1000, 30.0, 90.0, 2.0, 0.1), Ok(90.0));
        assert!(e2e_window(1, 10.0, 5.0, 1.0, 0.1).is_err());
        assert!(e2e_window(1, 1.0, 5.0, 0.9, 0.1).is_err());
    }

    /// Eq. (18): T_0(W) = W(W-1)/2 is the number of ACKs that grow the
    /// window from 1 to W by 1/W each (w ACKs at window w), and
    /// T_p/T_0 = 1/(1-p).
    #[test]
    fn e2e_transmissions_eq_18() {
        let acks: u64 = (1..50u64).sum();
        assert_eq!(e2e_transmissions(50.0, 0.0), Ok(acks as f64));
        let ratio = e2e_transmissions(50.0, 0.2).unwrap() / e2e_transmissions(50.0, 0.0).unwrap();
        assert!((ratio - 1.25).abs() < 1e-12);
    }

    /// Section 7.2: at p = 0.1855 E2E reaches 0.5 Mbit/s once R >= 1.28
    /// (Fig. 13), and the 0.8 rule picks the same R: on a 0.01 grid,
    /// R = 1.28 is the first with masking probability >= 0.8 (W = 50).
    #[test]
    fn masking_rule_picks_r_1_28_at_p_0_1855() {
        let p = 0.1855;
        let first = (100..=150)
            .map(|c| f64::from(c) / 100.0)
            .find(|&r| masking_probability(50.0, r, p).unwrap() >= 0.8)
            .unwrap();
        assert!((first - 1.28).abs() < 1e-9, "{first}");
        // Full redundancy-free sending masks nothing once p > 0.
        assert!(masking_probability(50.0, 1.0, p).unwrap() < 1e-4);
        assert_eq!(masking_probability(50.0, 1.1, 0.0), Ok(1.0));
    }

    /// Section 7.3: two flows, C = 0.7 Mbit/s, p = 0.0963, R = 1.2:
    /// (1/2) min{0.7(1-p), 0.7/1.2} = 0.2917; C(1-p)/2 = 0.3162 (printed
    /// truncated: 0.31630); C = 0.9 gives 0.75 (0.375 per flow).
    #[test]
    fn achievable_rate_section_7_3() {
        let half = achievable_rate(0.7, 0.0963, 1.2).unwrap() / 2.0;
        assert!((half - 0.2917).abs() <= HALF_ULP, "{half}");
        assert!((0.7 * (1.0 - 0.0963) / 2.0 - 0.3162_f64).abs() <= 1e-4);
        let full = achievable_rate(0.9, 0.0963, 1.2).unwrap();
        assert!((full - 0.75).abs() < 1e-12 && (full / 2.0 - 0.375).abs() < 1e-12);
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        for p in [f64::NAN, -0.1, 1.1, f64::INFINITY] {
            assert!(tcp_throughput(p, 0.8, 50.0, 3.75).is_err());
        }
        assert!(tcp_throughput(0.95, 0.8, 50.0, 3.75).is_err());
        assert!(tcp_throughput(0.1, 0.0, 50.0, 3.75).is_err());
        assert!(tcp_throughput(0.1, 0.8, f64::NAN, 3.75).is_err());
        assert!(tcp_throughput(0.1, 0.8, 50.0, -1.0).is_err());
        assert!(expected_rounds(0.0).is_err());
        assert!(timeout_duration_rounds(1.0, 3.75).is_err());
        assert!(timeout_probability(f64::NAN, 0.1).is_err());
        assert!(e2e_throughput(0.0, 0.8, 1.0, 50.0).is_err());
        assert!(e2e_throughput(10.0, 0.8, 60.0, 50.0).is_err());
        assert!(masking_probability(1e7, 1.5, 0.1).is_err());
        assert!(achievable_rate(1.0, 0.1, 0.5).is_err());
        // Extremes inside the domain stay finite.
        assert!(tcp_throughput(1e-300, 0.8, 50.0, 3.75).unwrap().is_finite());
        assert!(tcp_throughput(P_MAX_TCP, 0.8, 50.0, 3.75).unwrap() > 0.0);
        assert!(timeout_probability(1e300, 0.5).unwrap().is_finite());
    }
}
