//! Bao, Shah-Mansouri, Wong, Leung, "TCP VON: Joint Congestion Control and
//! Online Network Coding for Wireless Networks", Section IV: average
//! decoding delay.
//!
//! Packets of `tau_0 = L/C` seconds cross a last hop that erases each one
//! independently with probability `p`. `S_k`, the expected decoding time
//! of the k-th received packet in units of `tau_0`, is a Markov chain on
//! `0..=K+1` (`K = ceil(RTT/tau_0)`): an erasure sends it to `K+1` (wait
//! one redundant packet, `RTT + tau_0`), a good packet moves it down by one
//! (0 stays 0). A *group* is the run of packets between two visits to 0;
//! they are decoded together. With `P_i` the probability of a group of `i`
//! packets (Eq. (3)) and `tau_i = T_1 + (i-1) tau_0 / 2` its mean delay
//! (Eq. (4)), the average delay is
//! `tau = sum_i i P_i tau_i / sum_i i P_i`.
//!
//! `sum_i i P_i` and `sum_i i^2 P_i` are the first two moments of the
//! return time to state 0. They are found by solving the chain's linear
//! equations for the hitting times of state 0 (no series truncation).

use super::{finite, positive, probability, ModelError, Result};

/// Largest `K` accepted (the chain has `K + 2` states).
pub const MAX_K: u64 = 1 << 20;

/// The link of Section IV.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// One-way propagation delay `T_0`, seconds.
    pub t0: f64,
    /// Packet size `L`, bits.
    pub packet_bits: f64,
    /// Last-hop capacity `C`, bits per second.
    pub capacity_bps: f64,
    /// Erasure probability `p`, in `[0, 1)`.
    pub p: f64,
}

impl Link {
    /// Packet time `tau_0 = L/C`.
    pub fn tau0(&self) -> Result<f64> {
        let l = positive(self.packet_bits, "packet_bits must be finite and > 0")?;
        let c = positive(self.capacity_bps, "capacity_bps must be finite and > 0")?;
        finite(l / c, "tau0")
    }

    /// Forward delay `T_1 = T_0 + 3L/C` (sender to receiver).
    pub fn t1(&self) -> Result<f64> {
        let t0 = positive(self.t0, "t0 must be finite and > 0")?;
        finite(t0 + 3.0 * self.tau0()?, "t1")
    }

    /// `RTT = T_1 + T_2` with `T_2 = T_0`.
    pub fn rtt(&self) -> Result<f64> {
        finite(self.t1()? + self.t0, "rtt")
    }

    /// `K = ceil(RTT / tau_0)`.
    pub fn k(&self) -> Result<u64> {
        let k = (self.rtt()? / self.tau0()?).ceil();
        if k > MAX_K as f64 {
            return Err(ModelError::TooLarge("K above 2^20"));
        }
        Ok(k as u64)
    }

    /// Average decoding delay in seconds (Section IV).
    pub fn average_decoding_delay(&self) -> Result<f64> {
        average_decoding_delay(self.k()?, self.p, self.t1()?, self.tau0()?)
    }
}

/// First two moments of the group size, `(sum i P_i, sum i^2 P_i)`, for
/// the chain with `K + 2` states and erasure probability `p < 1`.
pub fn group_size_moments(k: u64, p: f64) -> Result<(f64, f64)> {
    let p = probability(p, "p must be in [0, 1]")?;
    let q = positive(1.0 - p, "p must be below 1: groups never end")?;
    if k > MAX_K {
        return Err(ModelError::TooLarge("K above 2^20"));
    }
    // Hitting times of state 0 from states 1..=K+1 solve
    // (I - M11) h = 1 and (I - M11) g = 2h - 1 (g = second moment), where
    // M11 is M without state 0: row j goes to j-1 with q (if j >= 2) and to
    // K+1 with p.
    let states = usize::try_from(k + 1).map_err(|_| ModelError::TooLarge("K"))?;
    let h = solve(states, q, |_| 1.0)?;
    let g = solve(states, q, |j| 2.0 * h[j] - 1.0)?;
    let (h_top, g_top) = (h[states - 1], g[states - 1]);
    // From 0: a good packet (q) is a group of 1; an erasure (p) starts a
    // group of 1 + (time from K+1 back to 0).
    let mean = 1.0 + p * h_top;
    let second = 1.0 + p * (2.0 * h_top + g_top);
    Ok((finite(mean, "group size")?, finite(second, "group size")?))
}

/// Solves `(I - M11) x = b` for states `1..=states` (index `j - 1`).
///
/// Row `j`: `x_j - q x_{j-1} - p x_top = b_j` (no `x_{j-1}` for `j = 1`).
/// Forward elimination writes `x_j = a_j + c_j x_top`; the last row then
/// gives `x_top = a_top / (1 - c_top)`. `1 - c_j` is tracked directly as
/// `d_j = q d_{j-1}`, `d_1 = q` (so `d_j = q^j`) to avoid cancellation.
fn solve(states: usize, q: f64, b: impl Fn(usize) -> f64) -> Result<Vec<f64>> {
    let mut a: Vec<f64> = Vec::with_capacity(states);
    let mut d: Vec<f64> = Vec::with_capacity(states);
    for j in 0..states {
        let (a_prev, d_prev) = if j == 0 {
            (0.0, 1.0)
        } else {
            (a[j - 1], d[j - 1])
        };
        a.push(b(j) + q * a_prev);
        d.push(q * d_prev);
    }
    let d_top = d[states - 1];
    if d_top <= 0.0 {
        return Err(ModelError::TooLarge("(1-p)^(K+1) underflows"));
    }
    let x_top = finite(a[states - 1] / d_top, "hitting time")?;
    // x_j = a_j + (1 - d_j) x_top.
    Ok(a.iter()
        .zip(&d)
        .map(|(a, d)| a + (1.0 - d) * x_top)
        .collect())
}

/// Average decoding delay (Section IV):
/// `tau = sum i P_i tau_i / sum i P_i` with `tau_i = T_1 + (i-1) tau_0/2`,
/// which is `T_1 + (tau_0/2) (E[G^2] - E[G]) / E[G]` for group size `G`.
pub fn average_decoding_delay(k: u64, p: f64, t1: f64, tau0: f64) -> Result<f64> {
    if !(t1.is_finite() && t1 >= 0.0) {
        return Err(ModelError::InvalidParameter("t1 must be finite and >= 0"));
    }
    let tau0 = positive(tau0, "tau0 must be finite and > 0")?;
    let (m1, m2) = group_size_moments(k, p)?;
    finite(t1 + tau0 / 2.0 * (m2 - m1) / m1, "delay")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transition matrix M of Section IV, `(K+2) x (K+2)`.
    fn matrix(k: usize, p: f64) -> Vec<Vec<f64>> {
        let n = k + 2;
        let mut m = vec![vec![0.0; n]; n];
        for (j, row) in m.iter_mut().enumerate() {
            row[k + 1] += p;
            row[j.saturating_sub(1)] += 1.0 - p;
        }
        m
    }

    /// Eq. (3) summed directly: P_1 = m00, P_2 = M01 M10,
    /// P_i = M01 M11^(i-2) M10, truncated when the tail is negligible.
    fn moments_from_eq_3(k: usize, p: f64) -> (f64, f64, f64) {
        let m = matrix(k, p);
        let n = k + 2;
        let (mut total, mut m1, mut m2) = (m[0][0], m[0][0], m[0][0]);
        // v = M11^(i-2) M10 as a column over states 1..n.
        let mut v: Vec<f64> = (1..n).map(|j| m[j][0]).collect();
        for i in 2..200_000u32 {
            let pi: f64 = (1..n).map(|j| m[0][j] * v[j - 1]).sum();
            let i = f64::from(i);
            total += pi;
            m1 += i * pi;
            m2 += i * i * pi;
            v = (1..n)
                .map(|r| (1..n).map(|c| m[r][c] * v[c - 1]).sum())
                .collect();
            if i > 50.0 && pi * i * i < 1e-18 {
                break;
            }
        }
        (total, m1, m2)
    }

    /// The structured solve agrees with Eq. (3) summed term by term.
    #[test]
    fn moments_match_eq_3_series() {
        for (k, p) in [(0usize, 0.3), (3, 0.1), (13, 0.05), (8, 0.2)] {
            let (total, s1, s2) = moments_from_eq_3(k, p);
            assert!((total - 1.0).abs() < 1e-12, "P_i sum to {total}");
            let (m1, m2) = group_size_moments(k as u64, p).unwrap();
            assert!((m1 - s1).abs() <= 1e-9 * s1, "K {k} p {p}: {m1} vs {s1}");
            assert!((m2 - s2).abs() <= 1e-9 * s2, "K {k} p {p}: {m2} vs {s2}");
        }
    }

    /// Kac's lemma: the mean group size is 1/pi_0, with pi_0 the
    /// stationary probability of state 0 found by power iteration on M.
    /// (State 0 means the last K+1 packets arrived, so pi_0 = (1-p)^(K+1).)
    #[test]
    fn mean_group_size_is_one_over_pi_0() {
        let (k, p) = (10usize, 0.07);
        let m = matrix(k, p);
        let mut pi = vec![1.0 / (k + 2) as f64; k + 2];
        for _ in 0..20_000 {
            let mut next = vec![0.0; k + 2];
            for (i, row) in m.iter().enumerate() {
                for (j, x) in row.iter().enumerate() {
                    next[j] += pi[i] * x;
                }
            }
            pi = next;
        }
        let (m1, _) = group_size_moments(k as u64, p).unwrap();
        assert!((m1 * pi[0] - 1.0).abs() < 1e-9, "{m1} {}", pi[0]);
        assert!((pi[0] - (1.0 - p).powi(k as i32 + 1)).abs() < 1e-12);
    }

    /// Section IV: with no corrupted packet every packet is decoded on
    /// arrival, so the delay is the propagation delay T_1.
    #[test]
    fn lossless_delay_is_t1() {
        let link = Link {
            t0: 0.005,
            packet_bits: 10_000.0,
            capacity_bps: 10e6,
            p: 0.0,
        };
        let t1 = link.t1().unwrap();
        assert!((t1 - 0.008).abs() < 1e-15);
        assert_eq!(link.average_decoding_delay(), Ok(t1));
        // RTT = 2 T_0 + 3 tau_0 = 13 ms, tau_0 = 1 ms: K = 13.
        assert_eq!(link.k(), Ok(13));
    }

    /// Section IV end to end: weight each group's mean delay, computed as
    /// the average of `T_1 + j tau_0` over its packets (the first form of
    /// Eq. (4)), by `i P_i` from Eq. (3), and compare.
    #[test]
    fn delay_matches_eq_4_weighted_by_group_sizes() {
        let (k, p, t1, tau0) = (4usize, 0.12, 0.01, 0.001);
        let m = matrix(k, p);
        let n = k + 2;
        let (mut num, mut den) = (m[0][0] * t1, m[0][0]);
        let mut v: Vec<f64> = (1..n).map(|j| m[j][0]).collect();
        for i in 2..100_000u32 {
            let pi: f64 = (1..n).map(|j| m[0][j] * v[j - 1]).sum();
            let i = f64::from(i);
            let tau_i = (0..i as u32).map(|j| t1 + f64::from(j) * tau0).sum::<f64>() / i;
            num += i * pi * tau_i;
            den += i * pi;
            v = (1..n)
                .map(|r| (1..n).map(|c| m[r][c] * v[c - 1]).sum())
                .collect();
            if i > 50.0 && pi * i * i < 1e-18 {
                break;
            }
        }
        let ours = average_decoding_delay(k as u64, p, t1, tau0).unwrap();
        assert!((ours - num / den).abs() < 1e-12, "{ours} vs {}", num / den);
    }

    /// Fig. 4's trend: the delay grows with p (printed only as a plot).
    #[test]
    fn delay_grows_with_loss() {
        let mut last = 0.0;
        for i in 0..=10 {
            let link = Link {
                t0: 0.005,
                packet_bits: 10_000.0,
                capacity_bps: 10e6,
                p: f64::from(i) / 100.0,
            };
            let d = link.average_decoding_delay().unwrap();
            assert!(d > last || i == 0, "p {}: {d}", link.p);
            last = d;
        }
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        assert!(group_size_moments(5, 1.0).is_err());
        assert!(group_size_moments(5, f64::NAN).is_err());
        assert!(group_size_moments(MAX_K + 1, 0.1).is_err());
        assert!(average_decoding_delay(5, 0.1, -1.0, 0.001).is_err());
        assert!(average_decoding_delay(5, 0.1, 0.01, 0.0).is_err());
        // Huge K with heavy loss overflows: reported, not NaN.
        assert!(group_size_moments(1 << 20, 0.5).is_err());
        let bad = Link {
            t0: 0.005,
            packet_bits: 0.0,
            capacity_bps: 1e6,
            p: 0.1,
        };
        assert!(bad.average_decoding_delay().is_err());
        let tiny_packets = Link {
            t0: 1.0,
            packet_bits: 1.0,
            capacity_bps: 1e12,
            p: 0.1,
        };
        assert!(tiny_packets.k().is_err());
    }
}
