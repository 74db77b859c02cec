//! Window-increase helpers shared by the controllers.

use std::time::{Duration, Instant};

/// Additive increase with appropriate byte counting: the window grows by
/// `alpha_bytes` each time a full window's worth of bytes has been acked.
#[derive(Clone, Debug, Default)]
pub(crate) struct AdditiveIncrease {
    acked_acc: f64,
}

impl AdditiveIncrease {
    pub fn on_ack(&mut self, cwnd: &mut f64, acked: usize, alpha_bytes: f64) {
        self.acked_acc += acked as f64;
        while self.acked_acc >= *cwnd && *cwnd > 0.0 {
            self.acked_acc -= *cwnd;
            *cwnd += alpha_bytes;
        }
    }

    pub fn reset(&mut self) {
        self.acked_acc = 0.0;
    }
}

/// CUBIC window growth (RFC 9438 shape) in packets, with the Reno-friendly
/// estimate. Used by [`crate::cubic::Cubic`] and optionally by CTCP/Hybrid.
#[derive(Clone, Debug)]
pub(crate) struct CubicGrowth {
    /// Cubic scaling constant C (packets / s^3).
    pub c: f64,
    epoch_start: Option<Instant>,
    w_max: f64,
    last_w_max: f64,
    k: f64,
    w_est: f64,
    alpha_friendly: f64,
}

impl CubicGrowth {
    pub fn new(c: f64) -> Self {
        CubicGrowth {
            c,
            epoch_start: None,
            w_max: 0.0,
            last_w_max: 0.0,
            k: 0.0,
            w_est: 0.0,
            alpha_friendly: 1.0,
        }
    }

    /// A window reduction from `before` to `after` packets with factor `beta`.
    pub fn on_backoff(&mut self, now: Instant, before: f64, after: f64, beta: f64) {
        // Fast convergence: release bandwidth if the window keeps shrinking.
        let w_max = if before < self.last_w_max {
            before * (1.0 + beta) / 2.0
        } else {
            before
        };
        self.last_w_max = before;
        self.w_max = w_max.max(after);
        self.k = ((self.w_max - after).max(0.0) / self.c).cbrt();
        self.epoch_start = Some(now);
        self.w_est = after;
        let b = beta.clamp(0.0, 0.99);
        self.alpha_friendly = 3.0 * (1.0 - b) / (1.0 + b);
    }

    /// Forget the epoch (e.g. after a timeout).
    pub fn reset(&mut self) {
        self.epoch_start = None;
        self.last_w_max = 0.0;
    }

    /// Grow `cwnd` (packets) for `acked` packets acknowledged at `now`.
    pub fn on_ack(&mut self, now: Instant, rtt: Duration, cwnd: &mut f64, acked: f64) {
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                // First congestion-avoidance epoch without a prior loss.
                self.epoch_start = Some(now);
                self.w_max = *cwnd;
                self.k = 0.0;
                self.w_est = *cwnd;
                now
            }
        };
        let t = (now.saturating_duration_since(epoch) + rtt).as_secs_f64();
        let w_cubic = self.c * (t - self.k).powi(3) + self.w_max;
        self.w_est += self.alpha_friendly * acked / cwnd.max(1.0);
        let target = w_cubic.max(self.w_est).min(1.5 * *cwnd);
        if target > *cwnd {
            *cwnd += (target - *cwnd) / *cwnd * acked;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additive_increase_counts_bytes() {
        let mut ai = AdditiveIncrease::default();
        let mut cwnd = 10_000.0;
        // 9 999 bytes acked: no increase yet.
        ai.on_ack(&mut cwnd, 9_999, 1_000.0);
        assert_eq!(cwnd, 10_000.0);
        ai.on_ack(&mut cwnd, 1, 1_000.0);
        assert_eq!(cwnd, 11_000.0);
        // Another full window (11 000 bytes) gives another 1 000.
        ai.on_ack(&mut cwnd, 11_000, 1_000.0);
        assert_eq!(cwnd, 12_000.0);
    }

    #[test]
    fn cubic_returns_to_wmax_after_k() {
        let t0 = Instant::now();
        let mut g = CubicGrowth::new(0.4);
        g.on_backoff(t0, 100.0, 70.0, 0.7);
        // K = cbrt(30 / 0.4) = cbrt(75) = 4.217 s
        assert!((g.k - 75f64.cbrt()).abs() < 1e-9);
        let mut cwnd = 70.0;
        let rtt = Duration::from_millis(100);
        let mut now = t0;
        // ACK one window per RTT for K seconds.
        while now < t0 + Duration::from_secs_f64(75f64.cbrt()) {
            now += rtt;
            let w = cwnd;
            g.on_ack(now, rtt, &mut cwnd, w);
        }
        assert!(cwnd > 97.0 && cwnd < 103.0, "cwnd {cwnd}");
    }
}
