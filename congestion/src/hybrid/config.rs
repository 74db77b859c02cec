//! [`HybridConfig`], the knobs of [`Hybrid`] and the reasons
//! for their defaults (docs/congestion.md §3.3).

use std::time::Duration;

use crate::CommonConfig;

#[cfg(doc)]
use super::Hybrid;

/// Configuration of [`Hybrid`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HybridConfig {
    /// Shared parameters.
    pub common: CommonConfig,
    /// Additive increase per RTT, in MSS.
    pub alpha: f64,
    /// Lower clamp of the backoff factor.
    pub beta_min: f64,
    /// Window of the RTTmin filter.
    pub rtt_min_window: Duration,
    /// Queueing delay below `max(queue_tolerance_min, queue_tolerance_frac *
    /// RTTmin)` is treated as no queueing.
    pub queue_tolerance_frac: f64,
    /// See `queue_tolerance_frac`.
    pub queue_tolerance_min: Duration,
    /// The tolerance never exceeds this fraction of the largest filtered
    /// queueing delay seen within `queue_range_window`.
    pub queue_range_frac: f64,
    /// Window of the queue-range maximum.
    pub queue_range_window: Duration,
    /// Enable the excess-loss detector.
    pub excess_loss: bool,
    /// Pace in pairs in the competitive mode: every second packet follows
    /// the one before almost at once, and the gap after it is twice as
    /// long (the rate is unchanged). The pair meets the bottleneck back to
    /// back, so its ACKs are one transmission time apart and the capacity
    /// estimate ([`HybridConfig::competitive_capacity_share`]) reads the
    /// bottleneck even when this flow's share is small. Evenly paced, each
    /// packet had other flows' packets ahead of it, and the estimate read
    /// this flow's own rate (6.2-6.8 Mbit/s on the 20 Mbit/s link, joining
    /// behind ngtcp2's CUBIC). quiche's pacer sends such pairs itself only
    /// while the window is not full (lumpy pacing). With
    /// `competitive_share_entry` also outside the mode, where that entry
    /// needs the estimate.
    pub paced_pairs: bool,
    /// Enable the loss/queueing correlation test
    /// ([`Hybrid::loss_delay_correlated`]).
    pub loss_correlation: bool,
    /// Standard deviations above the expected per-round erasures.
    pub excess_sigma: f64,
    /// Additional slack in packets.
    pub excess_slack: f64,
    /// Backoff cap applied on excess loss.
    pub excess_beta: f64,
    /// Upper bound for the erasure-rate estimate.
    pub erasure_cap: f64,
    /// HyStart-like slow-start exit on delay increase.
    pub hystart: bool,
    /// Pacing gain in congestion avoidance (slow start uses max(gain, 2)).
    /// Fairness against unpaced CUBIC at a drop-tail queue depends on the
    /// competitor's burstiness (ACK policy, ACK jitter); 1.25 had the
    /// smallest worst-case deviation in the simulator (docs/congestion.md).
    pub pacing_gain: f64,
    /// Use a CUBIC-shaped increase instead of linear increase.
    pub cubic_increase: bool,
    /// Competitive mode: when a backoff by Equation (1) fails to drain the
    /// queue (another flow holds it), behave like a loss-based competitor
    /// until the queue stays empty (see [`Hybrid::competitive`]). On by
    /// default: without it a loss-based CUBIC flow holding the queue gets
    /// about 3x hybrid's share on the emulated link; alone, or against other
    /// hybrids, it never engages (docs/congestion.md §3.4, docs/results.md
    /// §5). Off is `--cc hybrid-yield`, which also has no drain probes.
    pub competitive: bool,
    /// In competitive mode, a round's losses below this fraction of the
    /// window in packets (at least 2 if non-zero) do not reduce the window,
    /// as quiche's CUBIC rolls back events losing fewer than max(2, 20 %).
    /// Default 0: every congestion event counts, as in RFC 9438 (with 0.1
    /// hybrid took up to 2x the share of ngtcp2's and quic-go's CUBIC,
    /// docs/results.md §5).
    pub competitive_loss_frac: f64,
    /// Backoff factor in competitive mode.
    pub competitive_beta: f64,
    /// In competitive mode every this many backoffs is by Equation (1)
    /// instead, to find out whether the flow is alone: alone, that drains
    /// the queue and the watch that follows ends the mode.
    pub competitive_probe_every: u64,
    /// Another flow is taken to hold the queue when, throughout the watch
    /// after a backoff by Equation (1) (from two RTTs after it, for as long
    /// as a drain probe waits), the queueing delay less this flow's own
    /// regrowth stays above this fraction of what it was before (and above
    /// the tolerance): alone, that backoff empties the queue. Two flows
    /// backing off on the same overflow, hybrid by Equation (1) and CUBIC
    /// by 0.7, leave 0.1-0.3 of a full BDP buffer queued unless hybrid
    /// already has most of the link; a half-empty queue (0.5, the former
    /// value) was seen only when CUBIC did not back off, which made entry a
    /// coin toss.
    pub competitive_drain_frac: f64,
    /// The mode is only entered while the loss rate of packets that met no
    /// queue peak (random loss, measured by this flow) is below this: on a
    /// lossy path hybrid follows CTCP's notion of friendliness (take what a
    /// loss-limited flow cannot use) and another hybrid's momentary queue
    /// must not trigger the mode (docs/congestion.md §3.4).
    pub competitive_max_random_loss: f64,
    /// On entering competitive mode, unless the entry window (0.7 of the
    /// window the watch's first backoff applied to) is larger than the
    /// window, which then takes it, slow-start again until the next loss
    /// (no delay-based exit): a loss-based flow that holds the queue got its
    /// window in its own slow start, while hybrid's slow start ended on the
    /// delay that flow's queue caused, often at a fraction of its share.
    /// Without this, two CUBIC-like flows starting that far apart take
    /// longer to converge than a 20 MB transfer lasts.
    pub competitive_restart: bool,
    /// Recheck of the competitive mode: before entering it, and then every
    /// this long in it (outside slow start), cut the window to the
    /// bandwidth-delay product this flow measures (delivery rate times
    /// RTTmin) until its packets sent after the cut are acknowledged
    /// (about two round trips). Alone that empties the queue whatever the
    /// capacity did meanwhile, and the mode is refused or left with the
    /// window at that product; when the packets sent after the cut still
    /// meet a queue (above the tolerance and `competitive_drain_frac` of
    /// the queue before), another flow holds it and the window is
    /// restored. On a cellular trace a capacity drop leaves a queue that
    /// an Equation (1) backoff does not drain; without this the flow took
    /// that for a competitor and, in the mode, filled a 1000-packet buffer
    /// (docs/congestion.md §3.2, item 11). Zero disables it.
    pub competitive_recheck: Duration,
    /// A recheck due waits, up to 16 round trips (sRTT, at most 2 RTTmin
    /// each), until no loss is being recovered and the queue is between
    /// 0.4 and 0.85 of its peak in the last `queue_range_window`. Near the
    /// peak a loss-based competitor is about to overflow and back off, or a
    /// varying link's capacity has just dropped, and the probe would meet
    /// what follows: the bottom of the competitor's sawtooth (which a flow
    /// that joined behind its standing queue takes for RTTmin, so it reads
    /// "alone"), or a queue left by the drop that outlasts the decision
    /// (read "held": alone on a deep buffer the flow then stays in the mode
    /// and fills it). Low in the range, the competitor has just backed off.
    /// It does not wait when this flow backed off two or more round trips
    /// ago, within that window, and the queue has stayed above 0.7 of its
    /// peak since: the overflow there brought no dip (a competitor that
    /// keeps the buffer full, as quiche's CUBIC rolling back small
    /// congestion events does).
    pub competitive_recheck_timing: bool,
    /// Reciprocity in the competitive mode: a congestion event is answered
    /// only while this flow has not backed off this many times more than
    /// the other flows have since the mode began; otherwise it is skipped
    /// (unless the round lost at least a fifth of the window, in slow
    /// start, on a buffer known to be shallow, whose queue is too small
    /// to show the other flows' reductions, or while the capacity share
    /// reads this flow ahead of the share balance's reference). Another
    /// flow's reduction is inferred from the queue: it falls
    /// by more than this flow's own backoff explains, and stays down for
    /// two round trips (a competitor that rolls a reduction back, as
    /// quiche's CUBIC does for events losing fewer than max(2, 20 %) of its
    /// window, refills the queue within one). Answering every event, as RFC
    /// 9438 asks, a paced flow loses to an unpaced one whose bursts escape
    /// some overflows and to a CUBIC that rolls events back: on the emulated
    /// link hybrid got 0.09-0.15 of quiche's CUBIC's share (0.15-0.39 with
    /// reciprocity and the early entry, docs/results.md §5). Backing off as often as the competitor does cannot make it
    /// more aggressive than that competitor (docs/congestion.md §3.4). 0
    /// disables it.
    pub competitive_reciprocity: u64,
    /// Share balance in the competitive mode (docs/congestion.md §3.4): this
    /// flow's share is its delivery rate over the bottleneck's capacity
    /// (`competitive_capacity_share`), or, without a capacity estimate,
    /// read from the relative fall of the RTT when a recheck cuts its
    /// window (a cut by a fraction `f` of a share `s` lowers the RTT by
    /// `f s`). The reference is the rest of the capacity with a capacity
    /// estimate; without one, the last reducing flow's share, read from the
    /// fall at its reduction (taken as 0.4 of its share), at most the rest.
    /// While this flow's share is below 0.95 of the reference (0.8 without
    /// a capacity estimate), it skips
    /// congestion events (rounds losing less than a fifth of the window)
    /// and grows towards the reference, instead of keeping the deficit of
    /// the start: a CUBIC flow that left slow start at a quarter of
    /// another's window converges over tens of seconds. While a capacity
    /// share is above 1.1 times the rest, the window gives back at the same
    /// pace instead of growing: a competitor that backs off harder than
    /// CUBIC (quinn's CUBIC) is not left behind.
    pub competitive_share_balance: bool,
    /// With the competitive mode: a loss of a packet sent after a
    /// slow-start exit on delay (within 2 s of it) starts the recheck that
    /// enters the mode at once, with the window of the exit, instead of an
    /// Equation (1) backoff and the drain watch (about a second). After the
    /// exit the window is at most the measured bandwidth-delay product, so
    /// such a loss means another flow's slow start overshot the buffer; a
    /// loss-based competitor otherwise keeps the window of its overshoot
    /// while hybrid waits at the one it cut to (docs/congestion.md §3.4).
    pub competitive_start_entry: bool,
    /// With the competitive mode: after a recheck read the queue drained,
    /// a queue back at half its level before the recheck's cut (and at
    /// least twice the tolerance) within max(1 s, 10 sRTT), while this
    /// flow's window grew by less than a tenth, without random loss and on
    /// a queue range of at least 0.15 RTTmin, enters the mode. A flow that joined behind another flow's standing
    /// queue counts part of it in its RTTmin, and the recheck's probe can
    /// land in a dip of the other flow's sawtooth; the queue then comes
    /// back without this flow (docs/congestion.md §3.4, "Refill entry").
    pub competitive_refill_entry: bool,
    /// Outside the mode, a capacity share (`competitive_capacity_share`) below
    /// a tenth for a second, while the window limits sending, the path is free
    /// of random loss and a loss met a queue peak since the share first read
    /// small, enters the mode; while the share stays that small no recheck
    /// reads the queue as drained and the mode is not left on an empty queue.
    /// A flow that joins behind another flow's standing queue takes part of
    /// that queue for its RTTmin: the other flow's dips then look like a
    /// drained queue, the drain watch and the recheck refuse the mode, and the
    /// flow stayed at 2-15 % of the link (on the emulated link behind quiche's
    /// CUBIC, 3 of 32 joiners below half of CUBIC's rate, at a window of 10-21
    /// kB for the whole run). To read the capacity there, paced pairs
    /// (`paced_pairs`) are sent outside the mode too, in congestion avoidance
    /// after a loss met a queue peak, on a queue range of at least 0.15
    /// RTTmin, on a path free of random loss, and capacity samples are taken
    /// whether or not a queue is detected (docs/congestion.md §3.4). The tenth
    /// and the overflow keep hybrids among themselves out: an equal share
    /// among up to nine flows is above it, and delay-based flows do not
    /// overflow the buffer. With a quarter and no overflow test (the first
    /// design, which was off by default) four hybrids entered the mode and
    /// filled the buffer (about 5 000 queue drops per flow and 20 MB on the
    /// emulated link, against 1-21 without).
    pub competitive_share_entry: bool,
    /// Outside the mode, the share entry and its pairs (above) also run
    /// while the off-peak loss rate reads random loss
    /// (`competitive_max_random_loss`), if losses correlate with queue
    /// peaks (`loss_correlation`, docs/congestion.md §3.2 item 4): those
    /// off-peak losses are overflows misclassified, not random loss. Behind
    /// quiche-like CUBIC, which keeps a one-BDP buffer near its limit, a
    /// joiner's RTTmin includes that flow's floor, the queue-peak threshold
    /// lies inside the sawtooth, and the off-peak rate read 0.4-3 %: in the
    /// simulator every one of 12 starving joiners of 40 had it above the
    /// gate, at a capacity share of 0.02-0.04 (docs/congestion.md §3.4).
    pub competitive_correlated_losses: bool,
    /// The share balance's reference with the capacity share is the rest
    /// of the capacity divided among the other flows it counts (at first
    /// one: the rest). In the mode, while behind, every 250 ms: if the
    /// capacity share rose by less than a tenth while more than a tenth of
    /// the packets (averaged over 1 s) were lost, the other flows are
    /// catching up as fast as this one, and it counts one more (up to 15
    /// others; kept across mode entries for 30 s). The reference with one
    /// other flow assumes that flow gives up share when this one skips
    /// congestion events; equal hybrids in the mode all read themselves
    /// behind (four read a quarter each against a rest of three quarters),
    /// all skipped events and grew towards half the link, and flooded the
    /// buffer: about 3 000 queue drops per flow in 20 s in `simstagger`
    /// (docs/congestion.md §7 item 3). A single loss-based flow yields to
    /// the catch-up (the share rises), so nothing is counted there.
    pub competitive_share_flows: bool,
    /// The share balance reads this flow's share as its delivery rate over
    /// the bottleneck's capacity, estimated from ACK dispersion (the fastest
    /// rate shared by a tenth of the pairs of packets acknowledged one after
    /// the other while a queue stands), instead of from the RTT's fall at a recheck,
    /// once 64 such pairs were seen. The fall is read while the other flow
    /// is not in a steady state (after the start it refills the queue
    /// during the cut: a share read 2.5 times too small on the link;
    /// quiche's CUBIC dips and refills it every other round trip: twice
    /// too large). The delivery rate is averaged over time (8 sRTT, at
    /// least 250 ms), not per ACK event, which leaned to busy moments and
    /// read 20-25 % high. Not read while ACK events acknowledge more than
    /// 1.5 packets on average (pairs then rarely get two ACKs) or while the
    /// estimate is below this flow's own rate in the last 10 s.
    pub competitive_capacity_share: bool,
    /// While a queue is detected and random loss is not (see
    /// `competitive_max_random_loss`), scale the additive increase by
    /// `3 (1 - beta) / (1 + beta)` for the factor `beta` of the last backoff
    /// (the rule that makes AIMD(alpha, beta) as aggressive as Reno, which
    /// CUBIC's Reno-friendly region also uses): a backoff shallower than 0.5,
    /// on a buffer shallow relative to the RTT, is then paid for with a
    /// slower increase. Without a queue the increase is `alpha`.
    pub friendly_increase: bool,
    /// The friendly increase also on a buffer known to be shallow (see
    /// `sympathetic_range`) after a backoff as deep as a loss-based flow's
    /// (0.75 or less: the correlation test's or the sympathetic backoff's
    /// 0.7). There the queue rarely exceeds the tolerance, so the rule
    /// above did not apply, and hybrid paired CUBIC's 0.7 with Reno's
    /// increase of 1 (CUBIC's Reno-friendly region uses 0.53): about twice
    /// CUBIC's rate. Equation (1)'s shallow backoffs are left alone: with
    /// them the rule gives a crawl (0.1-0.2 per round trip), and a flow
    /// that joined behind a standing queue and took a deep buffer for a
    /// shallow one fell to a quarter of CUBIC's rate (simulator).
    pub friendly_increase_shallow: bool,
    /// With the competitive mode enabled (and outside it, without random
    /// loss): when a queue has persisted this many smoothed RTTs (at least
    /// `drain_probe_min`) without a backoff, back off by Equation (1) anyway
    /// and watch whether the queue drains, as after a loss. Alone this only
    /// trims the flow's own standing queue (the window stays at the BDP);
    /// behind a loss-based flow that holds the queue, whose packets are the
    /// ones its bursts get dropped, the check would otherwise wait for a
    /// loss of this flow's packets, which a paced flow with a small window
    /// may not see for seconds. `0` disables it.
    pub drain_probe_after: u32,
    /// See `drain_probe_after`.
    pub drain_probe_min: Duration,
    /// The shallow-buffer guard (docs/congestion.md §3.2 item 18): on a
    /// buffer known to be shallow (see `sympathetic_range`; the guard's own
    /// backoffs keep it known), with this flow's delivery rate at least 0.9
    /// of the bottleneck's capacity (nearly alone), back off by Equation (1)
    /// as soon as the queue level reaches this fraction of the queue range
    /// (its top from RTT levels that held), at most once per two smoothed
    /// RTTs; the first such backoff is a drain probe. Alone on a 4 ms
    /// buffer the queue rises from the tolerance to an overflow in about as
    /// long as the probe waits (`drain_probe_after`): a flow whose probe
    /// came first stayed at the BDP, one that overflowed first backed off
    /// by 0.7 and, growing at CUBIC's 0.53 per round trip, overflowed again
    /// before the next probe (the simulator with 0.25-1 ms of ACK jitter:
    /// 0.91-0.92 of the link instead of 0.98-1.0). With a competitor the
    /// share is smaller and nothing changes: a flow that trims its queue
    /// just before a loss-based flow's overflow leaves the drops to that
    /// flow (1.5-2.0 times an unpaced CUBIC's rate in the simulator without
    /// the share test). `0` disables it.
    pub shallow_guard: f64,
    /// Ramp: after each full round trip in which no queue was detected, the
    /// additive increase doubles, up to this fraction of the window per
    /// round trip (0 disables the ramp);
    /// a queue or a backoff resets it to `alpha`. An empty queue means the
    /// window is below the path's BDP, so linear growth there only wastes
    /// capacity; on a cellular trace, whose capacity swings by an order of
    /// magnitude, a flow that backs off on every capacity dip (and under
    /// random loss, it does) otherwise climbs back at one packet per round
    /// trip. Not while losses correlate with queue peaks, nor, without
    /// random loss, on a shallow buffer (see [`Hybrid::shallow_buffer`]),
    /// where the empty queue after an unpaced competitor's backoff is
    /// capacity that competitor gave up. Against a loss-based flow holding
    /// a deeper queue the competitive mode grows like CUBIC instead
    /// (docs/congestion.md §3.2, items 8 and 11).
    pub ramp: f64,
    /// Sympathetic backoff on shallow buffers: once a loss has met a queue
    /// peak while the whole queue range seen is below this fraction of
    /// RTTmin (0.43: below it Equation (1) backs off less than CUBIC's 0.7
    /// at an overflow; 0.25 left a quarter-BDP buffer on the emulated link,
    /// whose range reads 0.26-0.28 RTTmin, out), a standing queue that
    /// drains without this flow backing off is another flow's response to
    /// an overflow, and this flow backs
    /// off by `competitive_beta` as well, as if the overflow had dropped
    /// its packets too. At a drop-tail queue an unpaced flow's bursts take
    /// the drops and a paced one escapes them: without this hybrid took
    /// 1.26-3.75x an unpaced CUBIC's rate on a 10 %-BDP buffer in the
    /// simulator (1.24-1.96x with it). Only without random loss, outside
    /// the competitive mode (which already answers every loss event) and
    /// outside slow start. 0 disables it.
    pub sympathetic_range: f64,
    /// Under random loss the queueing tolerance is at least this many
    /// RTT variations (`rttvar`): there every loss event applies Equation
    /// (1), and on a path whose RTT jitters by itself (the uplink of a
    /// cellular trace carrying the ACKs, a downlink that serves in bursts)
    /// each of them backed off on jitter. With 10 ms of ACK-path jitter in
    /// the simulator, hybrid kept 0.77 of the Verizon trace with 2 % loss
    /// (0.97 loss-free); 0.85 with this at 2. The tolerance never exceeds
    /// RTTmin, since rttvar also follows the flow's own queue.
    pub jitter_tolerance: f64,
    /// Under random loss the queueing tolerance is also at least the time
    /// the bottleneck takes to send this many packets at the measured
    /// delivery rate (at most RTTmin): a paced flow that keeps the link
    /// busy holds a few packets in the queue, and on a short RTT those are
    /// more than the 1 ms or 5 % of RTTmin of the base tolerance. On the
    /// emulated 25 Mbit/s, 20 ms link (CTCP Fig. 2) with 10 % loss, every
    /// loss event backed off by about 0.95 on a queue of 1.0-1.2 ms (three
    /// packets), which with a loss event every round trip held the window
    /// at a third of the BDP. 0 disables it.
    pub queue_tolerance_pkts: f64,
    /// Under random loss, a loss backs off by Equation (1) only if it met
    /// a queue peak (the split of the correlation test: its newest
    /// acknowledged neighbour's RTT above [`Hybrid::queue_peak_threshold`]);
    /// excess and correlated losses back off as before. Loss-free, losses
    /// are overflows at the peak, so the flow cycles between an empty
    /// queue and the buffer's (or a drain probe's) limit. Under
    /// random loss, Equation (1) at every loss above the tolerance held
    /// the queue at a few packets: on a link whose capacity swings that
    /// leaves no cushion for the next rise: with 2 % loss hybrid kept
    /// 0.80-0.85 of its loss-free throughput on the T-Mobile trace with a
    /// 1000-packet buffer in the simulator (0.93-0.95 with this rule), and
    /// 0.80-0.84 on the emulated link (0.90-1.0 with it; docs/congestion.md
    /// §3.2 item 14).
    pub random_loss_peak_backoff: bool,
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig {
            common: CommonConfig::default(),
            alpha: 1.0,
            beta_min: 0.5,
            rtt_min_window: Duration::from_secs(10),
            queue_tolerance_frac: 0.05,
            queue_tolerance_min: Duration::from_millis(1),
            queue_range_frac: 0.5,
            queue_range_window: Duration::from_secs(2),
            excess_loss: true,
            paced_pairs: true,
            loss_correlation: true,
            excess_sigma: 3.0,
            excess_slack: 2.0,
            excess_beta: 0.7,
            erasure_cap: 0.25,
            hystart: true,
            pacing_gain: 1.25,
            cubic_increase: false,
            competitive: true,
            competitive_loss_frac: 0.0,
            competitive_beta: 0.7,
            competitive_probe_every: 8,
            competitive_drain_frac: 0.1,
            competitive_max_random_loss: 0.002,
            competitive_restart: true,
            competitive_recheck: Duration::from_secs(5),
            competitive_recheck_timing: true,
            competitive_reciprocity: 1,
            competitive_share_balance: true,
            competitive_start_entry: true,
            competitive_refill_entry: true,
            competitive_share_entry: true,
            competitive_correlated_losses: true,
            competitive_share_flows: true,
            competitive_capacity_share: true,
            friendly_increase: true,
            friendly_increase_shallow: true,
            drain_probe_after: 8,
            drain_probe_min: Duration::from_millis(500),
            shallow_guard: 0.75,
            ramp: 0.25,
            sympathetic_range: 0.43,
            jitter_tolerance: 2.0,
            queue_tolerance_pkts: 4.0,
            random_loss_peak_backoff: true,
        }
    }
}
