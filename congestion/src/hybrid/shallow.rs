//! Hybrid on shallow buffers (docs/congestion.md §3.2 items 10 and 16):
//! whether the buffer is known to be shallow, the queue level the
//! sympathetic backoff reads, and the sympathetic backoff itself.

use std::time::{Duration, Instant};

use super::Hybrid;
#[cfg(doc)]
use super::HybridConfig;

/// The queue level (fraction of the range) below which a queue counts as
/// drained for the sympathetic backoff.
const SYMPATHETIC_DRAINED: f64 = 0.4;

/// Time constant of the sympathetic backoff's queue level, in sRTT.
const SYMPATHETIC_MEAN_TAU: f64 = 0.5;

impl Hybrid {
    /// Updates `queue_mean` with an RTT sample.
    pub(super) fn update_queue_mean(&mut self, now: Instant, latest: Duration) {
        if let Some(min) = self.rtt_min.get() {
            let q = latest.saturating_sub(min);
            self.queue_mean = Some(match self.queue_mean {
                Some((t, m)) => {
                    let dt = now.saturating_duration_since(t).as_secs_f64();
                    let tau = self.srtt.as_secs_f64() * SYMPATHETIC_MEAN_TAU;
                    let w = if tau > 0.0 {
                        1.0 - (-dt / tau).exp()
                    } else {
                        1.0
                    };
                    let m = m.as_secs_f64();
                    (now, Duration::from_secs_f64(m + (q.as_secs_f64() - m) * w))
                }
                None => (now, q),
            });
        }
    }

    /// Whether the buffer is known to be shallow: the queue range seen in
    /// the last `queue_range_window` is below `sympathetic_range` of RTTmin,
    /// and a loss met a queue peak in that window (an overflow; alone, a
    /// delay-based flow's own small queue says nothing about the buffer).
    pub fn shallow_buffer(&self, now: Instant) -> bool {
        let (Some(min), Some(max)) = (self.rtt_min.get(), self.rtt_raw_max.get()) else {
            return false;
        };
        let range = Duration::from_secs_f64(max).saturating_sub(min);
        !range.is_zero()
            && range < min.mul_f64(self.cfg.sympathetic_range)
            && self
                .overflow_at
                .is_some_and(|t| now.saturating_duration_since(t) <= self.cfg.queue_range_window)
    }

    /// The sympathetic backoff ([`HybridConfig::sympathetic_range`]): a
    /// queue whose level (`queue_mean`, the queueing delay averaged over
    /// half a round trip) reached half the range and then falls below
    /// `SYMPATHETIC_DRAINED` of it within three round trips, without this
    /// flow backing off in between, is another flow's response to an
    /// overflow. The minimum over a round trip, used first, sat at the
    /// floor on the link: there the queue swings from empty to full within
    /// a round trip.
    pub(super) fn sympathetic(&mut self, now: Instant) {
        if self.slow_start
            || self.competitive
            || self.recheck.is_some()
            || !self.random_loss_free()
            || !self.shallow_buffer(now)
        {
            self.queue_full_at = None;
            return;
        }
        let (Some(min), Some(max), Some((_, q))) =
            (self.rtt_min.get(), self.rtt_raw_max.get(), self.queue_mean)
        else {
            return;
        };
        let range = Duration::from_secs_f64(max).saturating_sub(min);
        if q >= range / 2 {
            // The level still shows the queue this flow's own last backoff
            // is draining for up to two round trips after it.
            let own = self
                .last_backoff_at
                .is_some_and(|b| now.saturating_duration_since(b) <= self.srtt * 2);
            if !own {
                self.queue_full_at = Some(now);
            }
            return;
        }
        let Some(full) = self.queue_full_at else {
            return;
        };
        if q > range.mul_f64(SYMPATHETIC_DRAINED) {
            return;
        }
        self.queue_full_at = None;
        let ours = self.last_backoff_at.is_some_and(|b| b >= full);
        if !ours && now.saturating_duration_since(full) <= self.srtt * 3 && !self.send.in_recovery()
        {
            self.stats.sympathetic_backoffs += 1;
            self.last_beta = Some(self.cfg.competitive_beta);
            self.backoff(now, self.cfg.competitive_beta, self.cfg.competitive_beta);
        }
    }
}
