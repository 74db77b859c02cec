//! Hybrid's competitive mode (docs/congestion.md §3.4): the drain watch
//! after a backoff by Equation (1) that finds another flow holding the
//! queue, the recheck before and during the mode, the drain probes, the
//! entry and exit, and the response to congestion events in the mode
//! (CUBIC's, in turn with the competitor). The share balance is in
//! `share.rs`.

use std::time::{Duration, Instant};

use super::share::SHARE_REMEASURE_AFTER;
use super::Hybrid;
use crate::CongestionEvent;

/// After a backoff in the competitive mode: the queue before it and what
/// this flow's own reduction takes off it; read once the queue has had
/// time to show the other flows' response and a rollback of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct CutWatch {
    /// When to read the queue.
    pub(super) at: Instant,
    /// Filtered queueing delay before the backoff.
    pub(super) before: Duration,
    /// The window right after the backoff (to discount regrowth) and the
    /// queueing delay the reduction removes.
    pub(super) after: f64,
    pub(super) own: Duration,
}

/// A queue that falls below this fraction of its peak, without a backoff
/// of this flow, may be another flow's reduction ...
const RECIPROCITY_DROP: f64 = 0.7;
/// ... confirmed if two smoothed RTTs later it is still below this
/// fraction (a rolled-back reduction refills it within one).
const RECIPROCITY_STAYS: f64 = 0.85;
/// A round losing at least this fraction of the window is always answered
/// (quiche's CUBIC does not roll such an event back).
const RECIPROCITY_MAX_LOSS: f64 = 0.2;

/// [`HybridConfig::competitive_start_entry`] looks this long after a
/// slow-start exit on delay.
const START_ENTRY_WITHIN: Duration = Duration::from_secs(2);
/// The fraction of its window another flow is taken to give up at a
/// reduction: between CUBIC's 0.3 and Reno's 0.5, so that the share read
/// from the fall is at most 1.25 times a Reno flow's (hybrid then takes
/// no more than an equal share from it) and 0.75 times a CUBIC flow's.
const SHARE_OTHER_CUT: f64 = 0.4;

/// A recheck due starts once the queue is between these fractions of its
/// recent peak ([`HybridConfig::competitive_recheck_timing`]), ...
const RECHECK_BAND: (f64, f64) = (0.4, 0.85);
/// ... or has stayed above this fraction since this flow's last backoff
/// (no dip after the overflow there), ...
const RECHECK_LEVEL: f64 = 0.7;
/// ... or after this many round trips (sRTT, at most 2 RTTmin each).
const RECHECK_WAIT_RTTS: u32 = 16;
/// [`HybridConfig::competitive_refill_entry`]: a queue that comes back
/// within this many sRTT, ...
const REFILL_WITHIN_RTTS: u32 = 10;
/// ... but at least this long, after a recheck read it drained ...
const REFILL_WITHIN_MIN: Duration = Duration::from_secs(1);
/// ... while the window grew by less than this factor, enters the mode.
const REFILL_MAX_GROWTH: f64 = 1.1;

/// A recheck of the competitive mode: the window is cut to the measured
/// bandwidth-delay product; do this flow's packets sent after the cut
/// still meet a queue?
#[derive(Clone, Copy, Debug)]
pub(super) struct Recheck {
    /// When the window was cut (packets sent from then on are the probe).
    pub(super) start: Instant,
    /// When to decide.
    pub(super) until: Instant,
    /// The window before the cut, restored if another flow holds the queue.
    pub(super) saved: f64,
    /// The queueing delay before the cut.
    pub(super) before: Duration,
    /// Whether the mode is yet to be entered (else: whether to stay in it).
    pub(super) entering: bool,
    /// Smallest queueing delay met by a probe packet.
    pub(super) min_queue: Option<Duration>,
}

/// After a backoff by Equation (1): does the queue drain?
#[derive(Clone, Copy, Debug)]
pub(super) struct DrainCheck {
    /// Watch the queue from here (two RTTs after the backoff) ...
    pub(super) from: Instant,
    /// ... to here.
    pub(super) until: Instant,
    /// Queueing delay before the backoff.
    pub(super) before: Duration,
    /// The window right after the backoff.
    pub(super) after: f64,
    /// The window before the first backoff of the watch: further backoffs
    /// during the watch neither restart it nor change this.
    pub(super) window_before: f64,
    /// Smallest and largest queueing delay seen in the watch, less this
    /// flow's own regrowth.
    pub(super) min_excess: Option<Duration>,
    pub(super) max_excess: Duration,
}

impl Hybrid {
    /// The drain check after a backoff at `now` with queueing delay `before`:
    /// the queue is watched from two RTTs after the backoff for as long as
    /// a drain probe waits ([`HybridConfig::drain_probe_after`]), so that
    /// another delay-based flow, which drains its own queue at its next
    /// backoff or probe, is not taken for a queue holder.
    pub(super) fn drain_check_after(
        &self,
        now: Instant,
        before: Duration,
        window_before: f64,
    ) -> DrainCheck {
        let from = now + (self.srtt * 2).max(Duration::from_millis(10));
        let watch = (self.srtt * self.cfg.drain_probe_after).max(self.cfg.drain_probe_min);
        DrainCheck {
            from,
            until: from + watch,
            before,
            after: self.cwnd,
            window_before,
            min_excess: None,
            max_excess: Duration::ZERO,
        }
    }
    /// Reciprocity bookkeeping on an RTT sample in the competitive mode:
    /// other flows' reductions, from the queue (see
    /// [`HybridConfig::competitive_reciprocity`]).
    fn track_reductions(&mut self, now: Instant) {
        let Some(q) = self.queueing_delay() else {
            return;
        };
        if let Some(w) = self.cut_watch {
            if now < w.at {
                return;
            }
            self.cut_watch = None;
            // What this flow's window regrew since the backoff puts back.
            let regrowth = self.delivery_rate().map_or(Duration::ZERO, |r| {
                Duration::from_secs_f64((self.cwnd - w.after).max(0.0) / r.max(1.0))
            });
            let margin = self.queue_tolerance().max(w.before.mul_f64(0.15));
            if q + w.own + margin < w.before + regrowth {
                self.their_cuts += 1;
                self.stats.other_reductions += 1;
            }
            self.queue_peak = Some((now, q));
            return;
        }
        if let Some((at, peak)) = self.drop_watch {
            if now < at {
                return;
            }
            self.drop_watch = None;
            if q < peak.mul_f64(RECIPROCITY_STAYS) {
                self.their_cuts += 1;
                self.stats.other_reductions += 1;
                // A reduction by a fraction c of a share s lowers the RTT by
                // c s (this flow's own growth since adds a little back).
                if let Some(min) = self.rtt_min.get() {
                    let fall = peak.saturating_sub(q).as_secs_f64();
                    let rtt = (min + peak).as_secs_f64();
                    let s = fall / (SHARE_OTHER_CUT * rtt);
                    self.other_share = Some((now, s.min(1.0)));
                }
            }
            self.queue_peak = Some((now, q));
            return;
        }
        let stale = self
            .queue_peak
            .is_none_or(|(t, p)| q >= p || now.saturating_duration_since(t) > self.srtt * 4);
        if stale {
            self.queue_peak = Some((now, q));
            return;
        }
        if let Some((_, p)) = self.queue_peak {
            if q < p.mul_f64(RECIPROCITY_DROP) && p > self.queue_tolerance() * 2 {
                self.drop_watch = Some((now + self.srtt * 2, p));
            }
        }
    }

    /// [`HybridConfig::competitive_start_entry`]: a loss of a packet sent
    /// after a slow-start exit on delay, within `START_ENTRY_WITHIN` of it.
    /// Sent at a window cut to the measured bandwidth-delay product, such a
    /// packet meets a full buffer only if another flow filled it (a
    /// loss-based slow start overshooting): the recheck is requested at
    /// once, without the drain watch, and the mode is entered with the
    /// window this flow had when the queue appeared.
    pub(super) fn start_entry(&mut self, ev: &CongestionEvent<'_>) {
        let Some((at, pkt, window)) = self.hs_exit else {
            return;
        };
        if ev.now.saturating_duration_since(at) > START_ENTRY_WITHIN {
            self.hs_exit = None;
            return;
        }
        if self.competitive
            || self.slow_start
            || self.recheck.is_some()
            || self.recheck_due.is_some()
            || !self.random_loss_free()
            || !ev.lost.iter().any(|l| l.pkt_num > pkt)
        {
            return;
        }
        self.hs_exit = None;
        self.stats.start_entries += 1;
        self.entry_window = Some(window);
        self.request_recheck(ev.now, true);
    }

    /// Enters the competitive mode. The Equation (1) backoffs at the
    /// competitor's overflows during the watch that found the queue held
    /// were answers to another flow's queue: the window goes back to what a
    /// loss-based flow would have kept, the window before the first of them
    /// times `competitive_beta`, when that is larger. Otherwise (or if the
    /// window is already larger) it slow-starts again
    /// ([`HybridConfig::competitive_restart`]).
    pub(super) fn enter_competitive(&mut self, now: Instant) {
        self.stats.competitive_entries += 1;
        self.competitive = true;
        self.share_check = None;
        // The flows counted in a mode that ended recently are still there.
        if self
            .share_flows_at
            .is_none_or(|t| now.saturating_duration_since(t) > super::share::SHARE_FLOWS_MEMORY)
        {
            self.share_flows = 2.0;
        }
        self.rechecked_at = Some(now);
        self.own_cuts = 0;
        self.their_cuts = 0;
        self.cut_watch = None;
        self.queue_peak = None;
        self.drop_watch = None;
        self.cubic.reset();
        if let Some(w) = self.entry_window.take().filter(|&w| w > self.cwnd) {
            self.cwnd = w;
            self.ssthresh = w;
            self.slow_start = false;
        } else if self.cfg.competitive_restart {
            self.slow_start = true;
            self.ssthresh = f64::INFINITY;
        }
    }

    /// A recheck is due: started now, or with
    /// [`HybridConfig::competitive_recheck_timing`] once the queue is in
    /// [`RECHECK_BAND`] of its recent peak.
    fn request_recheck(&mut self, now: Instant, entering: bool) {
        if self.cfg.competitive_recheck_timing {
            // A recheck already waiting keeps its start: a new watch that
            // ends while it waits must not restart the wait.
            let since = self.recheck_due.map_or(now, |(t, _)| t);
            self.recheck_due = Some((since, entering));
        } else {
            self.start_recheck(now, entering);
        }
    }

    /// Whether a recheck due may start now: the queueing delay is within
    /// [`RECHECK_BAND`] of the largest seen in the last
    /// `queue_range_window` (with no queue seen in that window at all,
    /// there is nothing to wait for), or it stayed above [`RECHECK_LEVEL`]
    /// of it since this flow's last backoff, two or more round trips ago.
    fn recheck_moment(&self, now: Instant) -> bool {
        let (Some(q), Some(min), Some(max)) = (
            self.queueing_delay(),
            self.rtt_min.get(),
            self.rtt_recent_max.get(),
        ) else {
            return true;
        };
        let peak = Duration::from_secs_f64(max).saturating_sub(min);
        let level = self.last_backoff_at.is_some_and(|t| {
            let ago = now.saturating_duration_since(t);
            ago >= self.srtt * 2 && ago <= self.cfg.queue_range_window
        }) && self
            .queue_low_since_backoff
            .is_some_and(|low| low >= peak.mul_f64(RECHECK_LEVEL));
        level || (q >= peak.mul_f64(RECHECK_BAND.0) && q <= peak.mul_f64(RECHECK_BAND.1))
    }

    /// Starts a recheck ([`HybridConfig::competitive_recheck`]): cuts the
    /// window to the measured bandwidth-delay product and freezes it until
    /// the packets sent from now on tell whether the queue drains. The
    /// decision waits up to two smoothed RTTs plus RTTmin: with another
    /// flow holding the queue, this flow's packets in flight take about
    /// sRTT - RTTmin to fall to the cut window and the first probe packet
    /// a full sRTT to come back.
    fn start_recheck(&mut self, now: Instant, entering: bool) {
        let min = self.rtt_min.get().unwrap_or(self.srtt);
        let bdp = self
            .bdp_estimate()
            .unwrap_or_else(|| self.cwnd * min.as_secs_f64() / self.srtt.as_secs_f64().max(1e-6));
        self.stats.competitive_rechecks += 1;
        self.rechecked_at = Some(now);
        // The cut is this flow's own reduction: the sympathetic backoff must
        // not read the queue it drains as another flow's, and a drain probe
        // must not count the queue seen before it.
        self.last_backoff_at = Some(now);
        // A drain watch begun by a backoff while the recheck waited for its
        // moment: the recheck is the stronger test.
        self.drain_check = None;
        self.queue_full_at = None;
        self.queue_since = None;
        self.cut_watch = None;
        self.queue_peak = None;
        self.drop_watch = None;
        // Losses of what was in flight before the cut belong to the
        // overshoot the cut answers (as after a backoff).
        self.send.start_recovery();
        self.recheck = Some(Recheck {
            start: now,
            until: now + self.srtt * 2 + min.max(Duration::from_millis(10)),
            saved: self.cwnd,
            before: self.queueing_delay().unwrap_or_default(),
            entering,
            min_queue: None,
        });
        self.cwnd = bdp.max(self.cfg.common.min_window()).min(self.cwnd);
    }

    /// [`HybridConfig::competitive_refill_entry`]: after a recheck read
    /// the queue drained, a queue back at half its level before the cut
    /// (at least twice the tolerance) within `REFILL_WITHIN_RTTS` sRTT (at
    /// least `REFILL_WITHIN_MIN`), while this flow's window grew by less
    /// than `REFILL_MAX_GROWTH`, is another flow's: its sawtooth dipped
    /// while the recheck's probe came back (the probe's RTT read against
    /// an RTTmin that includes part of that flow's queue). The mode begins.
    /// Not on a narrow queue range (`wide_queue_range`): on a 4 ms buffer
    /// every fill of another flow passes this test, whether or not this
    /// flow's RTTmin includes a standing queue.
    fn refill_entry(&mut self, now: Instant) {
        let Some((at, window, before)) = self.cleared else {
            return;
        };
        let within = (self.srtt * REFILL_WITHIN_RTTS).max(REFILL_WITHIN_MIN);
        if self.competitive
            || self.recheck.is_some()
            || now.saturating_duration_since(at) > within
            || !self.random_loss_free()
            || !self.wide_queue_range()
            || self.cwnd > window * REFILL_MAX_GROWTH
        {
            self.cleared = None;
            return;
        }
        let q = self.queueing_delay().unwrap_or_default();
        if q >= (before / 2).max(self.queue_tolerance() * 2) {
            self.cleared = None;
            self.stats.refill_entries += 1;
            self.enter_competitive(now);
        }
    }

    /// Ends a recheck: with the queue drained this flow is alone (the mode
    /// is refused or left, the window stays at the measured product);
    /// otherwise the window is restored and the mode entered or kept.
    fn finish_recheck(&mut self, now: Instant, r: Recheck, drained: bool) {
        if drained {
            if self.cfg.competitive_refill_entry && self.random_loss_free() && !r.before.is_zero() {
                self.cleared = Some((now, self.cwnd, r.before));
            }
            self.entry_window = None;
            self.stats.competitive_cleared += 1;
            self.competitive = false;
            self.queue_since = None;
            self.ssthresh = self.cwnd;
            self.cubic.reset();
            self.ai.reset();
        } else {
            // The cut took a fraction f of this flow's window; the RTT fell
            // by f times its share of the bytes in flight.
            let f = 1.0 - self.cwnd / r.saved.max(1.0);
            if let (Some(min), Some(q), true) = (self.rtt_min.get(), r.min_queue, f >= 0.1) {
                let fall = r.before.saturating_sub(q).as_secs_f64();
                let s = fall / (f * (min + r.before).as_secs_f64());
                self.own_share = Some((now, s.min(1.0), r.saved));
            }
            self.cwnd = self.cwnd.max(r.saved);
            if r.entering {
                self.enter_competitive(now);
            }
            self.share_base = self.cwnd;
        }
    }

    /// Backs off by Equation (1) without a loss and schedules the drain
    /// check (see [`HybridConfig::drain_probe_after`]).
    pub(super) fn drain_probe(&mut self, now: Instant) {
        let Some(q) = self.queueing_delay() else {
            return;
        };
        let beta = self.delay_beta();
        self.stats.drain_probes += 1;
        self.last_beta = Some(beta);
        let window_before = self.backoff(now, beta, beta);
        self.drain_check = Some(self.drain_check_after(now, q, window_before));
    }
    /// The competitive mode's part of an ACK event: the drain watch, the
    /// recheck, drain probes, the exit on an empty queue and the
    /// bookkeeping of the competitor's reductions.
    pub(super) fn competitive_on_ack(&mut self, ev: &CongestionEvent<'_>) {
        if let Some(mut c) = self.drain_check {
            if ev.now >= c.from {
                // Alone, the backoff left no queue; what this flow's own
                // window has grown since adds (growth / window) RTTmin.
                let own = self
                    .rtt_min
                    .get()
                    .unwrap_or_default()
                    .mul_f64(((self.cwnd - c.after) / c.after.max(1.0)).max(0.0));
                let excess = self
                    .queueing_delay()
                    .unwrap_or_default()
                    .saturating_sub(own);
                c.min_excess = Some(c.min_excess.map_or(excess, |m| m.min(excess)));
                c.max_excess = c.max_excess.max(excess);
                self.drain_check = Some(c);
            }
            if ev.now >= c.until {
                self.drain_check = None;
                let threshold = self
                    .queue_tolerance()
                    .max(c.before.mul_f64(self.cfg.competitive_drain_frac));
                // Enter when the queue never drained; once in the mode
                // (after a probe), leave only when it never refilled.
                let stayed = c.min_excess.unwrap_or_default() > threshold;
                let held = if self.competitive {
                    c.max_excess > threshold
                } else {
                    stayed && self.random_loss_free()
                };
                if !self.competitive {
                    self.last_watch = Some((c.min_excess.unwrap_or_default(), threshold));
                    if held {
                        self.stats.watches_held += 1;
                    } else if stayed {
                        self.stats.watches_lossy += 1;
                    } else {
                        self.stats.watches_drained += 1;
                    }
                }
                if held && !self.competitive {
                    // While a recheck waits, the first watch's window stays
                    // (the window before the first overflow).
                    let w = c.window_before * self.cfg.competitive_beta;
                    self.entry_window = Some(match (self.recheck_due, self.entry_window) {
                        (Some(_), Some(old)) => old.max(w),
                        _ => w,
                    });
                    if self.cfg.competitive_recheck.is_zero() || self.slow_start {
                        self.enter_competitive(ev.now);
                    } else {
                        self.request_recheck(ev.now, true);
                    }
                } else {
                    self.competitive = held;
                }
            }
        }
        if ev.rtt_updated {
            if let Some(q) = self.queueing_delay() {
                self.queue_low_since_backoff =
                    Some(self.queue_low_since_backoff.map_or(q, |l| l.min(q)));
            }
        }
        if let Some((since, entering)) = self.recheck_due {
            let min = self.rtt_min.get().unwrap_or(self.srtt);
            let wait = self.srtt.min(min * 2) * RECHECK_WAIT_RTTS;
            let waited = ev.now.saturating_duration_since(since) >= wait;
            if !entering && !self.competitive {
                // The mode was left meanwhile (a probe's watch).
                self.recheck_due = None;
            } else if waited || (!self.send.in_recovery() && self.recheck_moment(ev.now)) {
                self.recheck_due = None;
                self.start_recheck(ev.now, entering);
            }
        }
        self.refill_entry(ev.now);
        if let Some(mut r) = self.recheck {
            // The RTT sample is the newest acknowledged packet's.
            let probe = ev.acked.last().is_some_and(|a| a.time_sent >= r.start);
            if ev.rtt_updated && probe {
                let min = self.rtt_min.get().unwrap_or_default();
                let q = ev.rtt.latest.saturating_sub(min);
                r.min_queue = Some(r.min_queue.map_or(q, |m| m.min(q)));
            }
            let threshold = self
                .queue_tolerance()
                .max(r.before.mul_f64(self.cfg.competitive_drain_frac));
            // A small capacity share: the queue read drained against an
            // RTTmin that includes another flow's standing queue.
            let drained = r.min_queue.is_some_and(|q| q <= threshold) && !self.small_share();
            if drained || ev.now >= r.until {
                self.recheck = None;
                self.finish_recheck(ev.now, r, drained);
            } else {
                self.recheck = Some(r);
            }
        } else if self.competitive
            && !self.cfg.competitive_recheck.is_zero()
            && !self.slow_start
            && self.drain_check.is_none()
            && self.recheck_due.is_none()
            && !self.send.in_recovery()
            && self.rechecked_at.is_none_or(|t| {
                let since = ev.now.saturating_duration_since(t);
                since >= self.cfg.competitive_recheck
                    || (since >= SHARE_REMEASURE_AFTER && self.share_capped(ev.now))
            })
        {
            self.request_recheck(ev.now, false);
        }
        // Leave the mode once the queue has stayed empty for a while
        // (four smoothed RTTs): a momentary drain, when both flows back
        // off on the same overflow, does not mean the other flow left.
        if self.queue_detected() {
            self.queue_empty_since = None;
            let since = *self.queue_since.get_or_insert(ev.now);
            let persist = (self.srtt * self.cfg.drain_probe_after).max(self.cfg.drain_probe_min);
            if self.cfg.drain_probe_after > 0
                && !self.competitive
                && !self.slow_start
                && self.drain_check.is_none()
                && self.recheck.is_none()
                && self.recheck_due.is_none()
                && !self.send.in_recovery()
                && self.random_loss_free()
                && ev.now.saturating_duration_since(since) >= persist
            {
                self.drain_probe(ev.now);
            } else if !self.competitive
                && !self.slow_start
                && self.recheck.is_none()
                && self.recheck_due.is_none()
                && !self.send.in_recovery()
                && self.random_loss_free()
                && self.shallow_guard_due(ev.now)
            {
                self.shallow_guard(ev.now);
            }
        } else {
            self.queue_since = None;
            let since = *self.queue_empty_since.get_or_insert(ev.now);
            let hold = (self.srtt * 4).max(Duration::from_millis(100));
            if self.competitive
                && self.recheck.is_none()
                && !self.small_share()
                && ev.now.saturating_duration_since(since) >= hold
            {
                self.competitive = false;
                self.recheck_due = self.recheck_due.filter(|&(_, entering)| entering);
            }
        }
        self.share_progress(ev.now);
        self.pairs_outside = self.pairs_outside_at(ev.now);
        self.share_entry(ev.now);
        if self.competitive
            && self.cfg.competitive_reciprocity > 0
            && ev.rtt_updated
            && self.recheck.is_none()
        {
            self.track_reductions(ev.now);
        }
    }

    /// The response to a congestion event in the mode, given the factor
    /// outside it: the factor to apply (1 to skip the event) and whether
    /// this backoff is a probe by Equation (1).
    pub(super) fn competitive_response(&mut self, now: Instant, mut beta: f64) -> (f64, bool) {
        let mut probe = false;
        let floor = if self.cfg.competitive_loss_frac > 0.0 {
            (self.cfg.competitive_loss_frac * self.cwnd / self.cfg.common.mss as f64).max(2.0)
        } else {
            0.0
        };
        // On a buffer too shallow for the competitor's reductions to show
        // in the queue, none would be counted: every event is answered.
        let owed = self.cfg.competitive_reciprocity > 0
            && !self.slow_start
            && !self.shallow_buffer(now)
            && self.round_lost < RECIPROCITY_MAX_LOSS * self.cwnd / self.cfg.common.mss as f64
            && self.own_cuts >= self.their_cuts + self.cfg.competitive_reciprocity
            && !self.ahead(now);
        let behind = self.cfg.competitive_share_balance
            && !self.slow_start
            && self.round_lost < RECIPROCITY_MAX_LOSS * self.cwnd / self.cfg.common.mss as f64
            && self.behind(now);
        if self.round_lost < floor {
            beta = 1.0;
        } else if behind {
            beta = 1.0;
            self.stats.share_skips += 1;
        } else if owed {
            beta = 1.0;
            self.stats.reciprocal_skips += 1;
        } else {
            // Every fourth backoff is by Equation (1): alone, it
            // drains the queue, which then stays empty (the exit).
            self.competitive_backoffs += 1;
            probe = self
                .competitive_backoffs
                .is_multiple_of(self.cfg.competitive_probe_every.max(1));
            if !probe {
                beta = beta.max(self.cfg.competitive_beta);
            }
        }
        (beta, probe)
    }

    /// A reduction of this flow's window from `before`: whatever the queue
    /// does next is read against it, not as another flow's.
    pub(super) fn reciprocity_on_backoff(&mut self, now: Instant, before: f64) {
        self.drop_watch = None;
        self.queue_peak = None;
        self.cut_watch = None;
        if self.competitive && !self.slow_start {
            self.own_cuts += 1;
            if let (Some(q), Some(rate)) = (self.queueing_delay(), self.delivery_rate()) {
                self.cut_watch = Some(CutWatch {
                    at: now + self.srtt.mul_f64(3.5),
                    before: q,
                    after: self.cwnd,
                    own: Duration::from_secs_f64((before - self.cwnd).max(0.0) / rate.max(1.0)),
                });
            }
        }
    }
}
