//! Hybrid on shallow buffers (docs/congestion.md §3.2 items 10, 16 and
//! 18): whether the buffer is known to be shallow, the queue level the
//! sympathetic backoff reads, the sympathetic backoff itself, and the
//! guard that keeps a flow alone there from overflowing.

use std::time::{Duration, Instant};

use super::share::MAX_PACKETS_PER_ACK;
use super::Hybrid;
#[cfg(doc)]
use super::HybridConfig;

/// The queue level (fraction of the range) below which a queue counts as
/// drained for the sympathetic backoff.
const SYMPATHETIC_DRAINED: f64 = 0.4;

/// Time constant of the sympathetic backoff's queue level, in sRTT.
const SYMPATHETIC_MEAN_TAU: f64 = 0.5;

/// The capacity share at or above which [`HybridConfig::shallow_guard`]
/// takes this flow for nearly alone.
const GUARD_SHARE: f64 = 0.9;

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
        self.shallow_range()
            && self
                .overflow_at
                .is_some_and(|t| now.saturating_duration_since(t) <= self.cfg.queue_range_window)
    }

    /// Whether the queue range seen in the last `queue_range_window` is
    /// below `sympathetic_range` of RTTmin.
    fn shallow_range(&self) -> bool {
        let (Some(min), Some(max)) = (self.rtt_min.get(), self.rtt_raw_max.get()) else {
            return false;
        };
        let range = Duration::from_secs_f64(max).saturating_sub(min);
        !range.is_zero() && range < min.mul_f64(self.cfg.sympathetic_range)
    }

    /// Whether the drain probe is due before its usual wait
    /// ([`HybridConfig::shallow_guard`]): on a buffer known to be shallow,
    /// nearly alone (capacity share at least `GUARD_SHARE`), the queue
    /// level at `shallow_guard` of the range or more, and no backoff in the
    /// last two smoothed RTTs.
    pub(super) fn shallow_guard_due(&self, now: Instant) -> bool {
        // The guard's own backoffs, made before an overflow, keep the
        // buffer known as shallow (else it forgot it 2 s after the last
        // overflow, and the next came).
        let guarded = self
            .guard_at
            .is_some_and(|t| now.saturating_duration_since(t) <= self.cfg.queue_range_window);
        if self.cfg.shallow_guard <= 0.0
            || !(self.shallow_buffer(now) || (guarded && self.shallow_range()))
            || !self.alone_share().is_some_and(|s| s >= GUARD_SHARE)
        {
            return false;
        }
        // The range's top from RTT levels that held (a late batch of ACKs
        // reads up to three times the buffer on the link).
        let (Some(min), Some(max), Some((_, q))) =
            (self.rtt_min.get(), self.rtt_peak_max.get(), self.queue_mean)
        else {
            return false;
        };
        let range = Duration::from_secs_f64(max).saturating_sub(min);
        q >= range.mul_f64(self.cfg.shallow_guard)
            && self
                .last_backoff_at
                .is_none_or(|b| now.saturating_duration_since(b) >= self.srtt * 2)
    }

    /// This flow's delivery rate over the bottleneck's capacity, taken as
    /// at least the highest rate this flow delivered in the last 10 s:
    /// alone the two are the same rate, and a ratio of two noisy readings
    /// of it fell below one as often as above (where
    /// [`Hybrid::capacity_share`] gives none). With ACK jitter the pair
    /// gaps read the capacity low (15 % at 0.5 ms in the simulator).
    fn alone_share(&self) -> Option<f64> {
        if !self.cfg.competitive_capacity_share || self.packets_per_ack > MAX_PACKETS_PER_ACK {
            return None;
        }
        let c = self.capacity.estimate()?;
        let c = self.own_rate_max.get().map_or(c, |m| m.max(c));
        Some((self.own_rate? / c).min(1.0))
    }

    /// The guard's backoff: a drain probe, or while a drain watch is on,
    /// Equation (1) alone (the watch goes on).
    pub(super) fn shallow_guard(&mut self, now: Instant) {
        self.stats.guard_backoffs += 1;
        self.guard_at = Some(now);
        if self.drain_check.is_none() {
            self.drain_probe(now);
        } else {
            let beta = self.delay_beta();
            self.last_beta = Some(beta);
            self.backoff(now, beta, beta);
        }
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
