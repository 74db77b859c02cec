//! Hybrid's share balance in the competitive mode (docs/congestion.md
//! §3.4): this flow's share of the bottleneck (from the capacity estimate
//! or the recheck), the reference it is balanced against, the catch-up
//! while behind, the give-back while ahead, and the share entry.

use std::time::{Duration, Instant};

use super::Hybrid;
#[cfg(doc)]
use super::HybridConfig;

/// Share balance: behind while this flow's share is below this fraction
/// of the last reducing flow's (`SHARE_BEHIND_CAPACITY` with the capacity
/// share, read afresh at every ACK; the recheck's reading is seconds old
/// and coarser), ...
const SHARE_BEHIND: f64 = 0.8;
const SHARE_BEHIND_CAPACITY: f64 = 0.95;
/// ... both measured within this long; ...
const SHARE_MAX_AGE: Duration = Duration::from_secs(10);
/// ... meanwhile the window grows by this fraction of the gap per RTT, ...
pub(super) const SHARE_CATCHUP_RTTS: f64 = 8.0;
/// ... and by a `SHARE_NEAR_SLOWER`-th of that once the share is above
/// `SHARE_BEHIND` of the reference: the capacity share is an average over
/// eight round trips and lags the window, so the full pace overshoots.
const SHARE_NEAR_SLOWER: f64 = 4.0;
/// ... up to this multiple of the window the share was measured at; there
/// the share is measured again, at the earliest this long after the last
/// recheck.
const SHARE_MAX_GROWTH: f64 = 2.0;
pub(super) const SHARE_REMEASURE_AFTER: Duration = Duration::from_secs(1);
/// ... and ahead while its capacity share is above this multiple of the
/// rest: its window then gives back at the same pace.
const SHARE_AHEAD: f64 = 1.1;
/// The capacity share is read only while ACK events acknowledge at most
/// this many packets on average (our client and ngtcp2's acknowledge
/// every packet on the emulated link, about 1.03).
pub(super) const MAX_PACKETS_PER_ACK: f64 = 1.5;
/// [`HybridConfig::competitive_share_entry`]: a capacity share below this
/// (below an equal share among up to nine flows) ...
const SMALL_SHARE: f64 = 0.1;
/// ... for this long enters the mode.
const SMALL_SHARE_FOR: Duration = Duration::from_secs(1);
/// [`HybridConfig::competitive_share_flows`]: every this long while
/// behind, ...
const SHARE_PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// ... a capacity share that rose by less than this fraction ...
const SHARE_PROGRESS_MIN: f64 = 0.1;
/// ... while this fraction of the packets was lost ...
const SHARE_PROGRESS_LOSS: f64 = 0.1;
/// ... counts one more flow, up to this many; ...
const SHARE_FLOWS_MAX: f64 = 16.0;
/// ... and the count is kept across mode entries for this long after its
/// last rise.
pub(super) const SHARE_FLOWS_MEMORY: Duration = Duration::from_secs(30);

impl Hybrid {
    /// This flow's share of the bytes in flight: the last measurement,
    /// scaled by how its window changed since (the total is roughly
    /// constant while the queue is held).
    pub(super) fn current_share(&self) -> Option<f64> {
        self.own_share
            .map(|(_, s, w)| (s * self.cwnd / w.max(1.0)).min(1.0))
    }

    /// This flow's share from its delivery rate and the bottleneck's
    /// capacity ([`HybridConfig::competitive_capacity_share`]).
    pub(super) fn capacity_share(&self) -> Option<f64> {
        if !self.cfg.competitive_capacity_share {
            return None;
        }
        let c = self.capacity.estimate()?;
        // With ACKs of two or more packets a pair is rarely acknowledged by
        // two ACKs, and the gaps read the pacing, not the bottleneck: in
        // the simulator, with ACKs every second packet, 3-10 Mbit/s on a
        // 20 Mbit/s link, and the share balance then gave back until the
        // flow starved. An estimate below what this flow alone delivered
        // recently is wrong too (ACK jitter stretching the gaps).
        if self.packets_per_ack > MAX_PACKETS_PER_ACK
            || self.own_rate_max.get().is_some_and(|m| m > c)
        {
            return None;
        }
        Some((self.own_rate? / c).min(1.0))
    }

    /// Whether the capacity share reads this flow below `SMALL_SHARE`
    /// ([`HybridConfig::competitive_share_entry`]): another flow takes most
    /// of the bottleneck, whatever the queue reads against an RTTmin that
    /// may include that flow's standing queue.
    pub(super) fn small_share(&self) -> bool {
        self.cfg.competitive_share_entry && self.capacity_share().is_some_and(|s| s < SMALL_SHARE)
    }

    /// [`HybridConfig::competitive_share_entry`]: outside the mode, a
    /// capacity share below `SMALL_SHARE` for `SMALL_SHARE_FOR` while the
    /// window limits sending, on a path free of random loss (or whose
    /// losses correlate with queue peaks, [`Hybrid::losses_at_peaks`]),
    /// with a loss at a queue peak since the share first read small, enters the mode
    /// at once. The capacity share already says what the recheck would
    /// test (that the queue is not this flow's own), and behind a
    /// competitor that overflows the buffer every few round trips the
    /// recheck was abandoned at each backoff (simulator: entry 4 s after
    /// the share first read small). The overflow is what a loss-based
    /// competitor does and delay-based ones do not: without it, staggered
    /// hybrids that read a small share while they ramp up entered too.
    pub(super) fn share_entry(&mut self, now: Instant) {
        let window_used = self.round_limited || self.prev_round_limited;
        if self.competitive || self.slow_start || !window_used || !self.small_share() {
            self.small_share_since = None;
            return;
        }
        let since = *self.small_share_since.get_or_insert(now);
        if now.saturating_duration_since(since) >= SMALL_SHARE_FOR
            && self.losses_at_peaks()
            && self.overflow_at.is_some_and(|t| t >= since)
            && self.recheck.is_none()
            && self.recheck_due.is_none()
        {
            self.small_share_since = None;
            self.stats.share_entries += 1;
            self.enter_competitive(now);
        }
    }

    /// This flow's share as the share balance reads it now.
    pub(super) fn own_share_now(&self) -> Option<f64> {
        self.capacity_share().or_else(|| self.current_share())
    }

    /// The reference with the capacity share: the rest of the capacity
    /// shared among the other flows the balance counts
    /// ([`HybridConfig::competitive_share_flows`]); with one other flow,
    /// the rest.
    fn mean_other_share(&self, own: f64) -> f64 {
        (1.0 - own) / (self.share_flows - 1.0).max(1.0)
    }

    /// [`HybridConfig::competitive_share_flows`]: in the mode, while the
    /// capacity share reads this flow behind the reference, check every
    /// `SHARE_PROGRESS_EVERY` whether the catch-up raised the share. If it
    /// rose by less than `SHARE_PROGRESS_MIN` of itself while more than
    /// `SHARE_PROGRESS_LOSS` of the packets were lost, the other flows grew
    /// as fast as this one, skipping congestion events as it does: they are
    /// catching up too, so there are more of them than one. The balance
    /// then counts one more flow. Against a single loss-based flow the
    /// catch-up takes share from it (behind quiche-like CUBIC in the
    /// simulator, 0.17 to 0.6 of the capacity within a second at 14-19 %
    /// loss); among four hybrids each read a quarter for seconds at 25 %
    /// loss, growing towards half the link. Not within
    /// `SHARE_REMEASURE_AFTER` of an entry or a recheck: the capacity share
    /// is a delivery rate, which follows the window about a round trip
    /// late, so the catch-up right after an entry from a small window
    /// read as no progress (simulator, joining behind a quiche-like CUBIC:
    /// a third flow counted 0.4 s after the entry, then up to nine, and
    /// 0.31 of CUBIC's rate instead of 0.87).
    pub(super) fn share_progress(&mut self, now: Instant) {
        if !self.cfg.competitive_share_flows
            || !self.cfg.competitive_share_balance
            || !self.competitive
            || self.slow_start
            || self
                .rechecked_at
                .is_some_and(|t| now.saturating_duration_since(t) < SHARE_REMEASURE_AFTER)
        {
            self.share_check = None;
            return;
        }
        let Some(s) = self.capacity_share() else {
            self.share_check = None;
            return;
        };
        match self.share_check {
            None => self.share_check = Some((now, s)),
            Some((at, before)) if now.saturating_duration_since(at) >= SHARE_PROGRESS_EVERY => {
                if self.share_gap(now).is_some()
                    && s < before * (1.0 + SHARE_PROGRESS_MIN)
                    && self.loss_fraction() > SHARE_PROGRESS_LOSS
                {
                    self.share_flows = (self.share_flows + 1.0).min(SHARE_FLOWS_MAX);
                    self.share_flows_at = Some(now);
                    self.stats.share_flows_raised += 1;
                }
                self.share_check = Some((now, s));
            }
            _ => {}
        }
    }

    /// This flow's share and the reference share, and the largest window
    /// the balance may grow to. From the capacity (read afresh at every
    /// ACK): the rest over the other flows counted
    /// ([`Hybrid::mean_other_share`]), unbounded. From the recheck: the last reducing
    /// flow's, at most the rest (or the rest until a reduction was seen:
    /// one other flow), and twice the window of the recheck. `None`
    /// without a share: no capacity estimate and no recheck measurement in
    /// the last `SHARE_MAX_AGE`.
    fn shares(&self, now: Instant) -> Option<(f64, f64, f64)> {
        let fresh = |t: Instant| now.saturating_duration_since(t) <= SHARE_MAX_AGE;
        let (own, cap) = match self.capacity_share() {
            // Against the capacity, the rest is what the others have. The
            // last reduction's share is not used here: on the link it read
            // 0.1-0.4 where the other flow had 0.55-0.9 (a rolled-back
            // reduction shows as a small fall), and a joining flow with a
            // tenth of the capacity then never caught up.
            Some(own) => return Some((own, self.mean_other_share(own), f64::INFINITY)),
            None => {
                let (_, _, w) = self.own_share.filter(|&(t, _, _)| fresh(t))?;
                (
                    self.current_share()?,
                    SHARE_MAX_GROWTH * w.max(self.share_base),
                )
            }
        };
        // The reference cannot exceed what this flow leaves: a reduction
        // read too deep (two flows backing off together) must not make it
        // grab more than an equal split with one other flow.
        let rest = 1.0 - own;
        let other = match self.other_share {
            Some((t, s)) if fresh(t) => s.min(rest),
            _ => rest,
        };
        Some((own, other, cap))
    }

    /// The window at which this flow's share would reach the reference,
    /// at most `SHARE_MAX_GROWTH` times the window of the measurement or
    /// the one the mode was entered or kept with after it (a
    /// share read too small must not let the window run away before the
    /// next recheck measures it again); `None` unless behind, that is
    /// below `SHARE_BEHIND` of the reference.
    fn share_target(&self, now: Instant) -> Option<f64> {
        // Not excluded on a shallow buffer (unlike reciprocity): a flow that
        // joins behind another flow's standing queue takes part of it for
        // RTTmin, sees only the other flow's sawtooth above it and takes a
        // deep buffer for a shallow one; answering every overflow loss
        // there left it at 2-5 % of the capacity (simulator, CUBIC 2 s
        // ahead).
        self.share_gap(now).map(|(target, _)| target)
    }

    /// [`Hybrid::share_target`] and this flow's share over the reference.
    fn share_gap(&self, now: Instant) -> Option<(f64, f64)> {
        let (own, other, cap) = self.shares(now)?;
        if own >= self.behind_fraction() * other {
            return None;
        }
        let target = (self.cwnd * other / own.max(0.01)).min(cap);
        (target > self.cwnd).then_some((target, own / other.max(1e-9)))
    }

    /// The fraction of the reference below which this flow is behind.
    fn behind_fraction(&self) -> f64 {
        if self.capacity_share().is_some() {
            SHARE_BEHIND_CAPACITY
        } else {
            SHARE_BEHIND
        }
    }

    /// Whether the window reached the share balance's cap while still
    /// behind: the share is measured again (a recheck) before the next
    /// periodic one.
    pub(super) fn share_capped(&self, now: Instant) -> bool {
        self.cfg.competitive_share_balance
            && self.shares(now).is_some_and(|(own, other, cap)| {
                own < self.behind_fraction() * other && self.cwnd >= 0.95 * cap
            })
    }

    /// Whether the capacity share reads this flow ahead of the reference
    /// share: reciprocity then skips nothing. A competitor whose reductions
    /// are not seen (quiche's CUBIC rolls most back) would otherwise leave
    /// every small event skipped however large this flow's share: on the
    /// link hybrid took 1.55 times that CUBIC's share. Only the capacity
    /// share, read afresh at every ACK, is trusted for this; the recheck's
    /// reading is seconds old.
    pub(super) fn ahead(&self, now: Instant) -> bool {
        self.capacity_share().is_some()
            && self.shares(now).is_some_and(|(own, other, _)| own > other)
    }

    /// The window to give back to while the capacity share reads this flow
    /// more than `SHARE_AHEAD` times the rest of the bottleneck's capacity:
    /// the window at which it would read `SHARE_AHEAD` times the rest. A
    /// loss-based competitor that backs off harder or regrows more slowly
    /// than CUBIC (quinn's took 0.4-0.7 of quic-go's CUBIC's share) would
    /// otherwise be left behind, as it is by CUBIC itself.
    pub(super) fn share_ahead(&self) -> Option<f64> {
        if !self.cfg.competitive_share_balance || self.recheck.is_some() {
            return None;
        }
        let own = self.capacity_share()?;
        let limit = SHARE_AHEAD * self.mean_other_share(own);
        (own > limit).then(|| self.cwnd * limit / own)
    }

    /// Whether this flow is behind ([`HybridConfig::competitive_share_balance`]).
    pub(super) fn behind(&self, now: Instant) -> bool {
        self.share_target(now).is_some()
    }

    /// Extra growth in the mode while behind: towards
    /// [`Hybrid::share_target`], a `SHARE_CATCHUP_RTTS`-th of the gap per
    /// round trip, at most slow start's rate.
    pub(super) fn share_catchup(&self, now: Instant, acked: f64) -> f64 {
        if !self.cfg.competitive_share_balance || !self.competitive || self.slow_start {
            return 0.0;
        }
        self.share_gap(now).map_or(0.0, |(target, ratio)| {
            let rtts = SHARE_CATCHUP_RTTS
                * if ratio >= SHARE_BEHIND {
                    SHARE_NEAR_SLOWER
                } else {
                    1.0
                };
            ((target - self.cwnd) / (rtts * self.cwnd) * acked).min(acked)
        })
    }
}
