//! Hybrid: the default controller for coded connections.
//!
//! It is CTCP's AIMD with adaptive backoff `beta = RTTmin / RTT` (so a flow
//! backs off exactly enough to drain the queue it built, and not at all on an
//! empty queue), made robust and fed by the coding layer:
//!
//! 1. **Robust delay signal.** `RTT` is the minimum RTT sample of the last
//!    smoothed RTT (not the single latest sample), so ACK-path jitter does not
//!    look like queueing; a queueing delay below the tolerance (default
//!    max(1 ms, 5 % of RTTmin); without random loss at most max(half the
//!    largest queueing delay seen in the last 2 s, 2 rttvar), so that a
//!    buffer shallower than the tolerance still produces congestion
//!    signals; under random loss at least min(2 rttvar, RTTmin), so that a
//!    path's own RTT jitter is not taken for a queue at every loss) counts
//!    as none (`beta = 1`).
//! 2. **Excess-loss detector.** Delay alone fails when RTTmin is
//!    overestimated (a flow that starts behind a standing queue). Every loss
//!    counts towards a per-round loss count, whether or not the decoder later
//!    recovered it. If a round loses more packets than the erasure rate `p_e`
//!    explains (binomial mean + `excess_sigma` standard deviations +
//!    `excess_slack` packets), the loss is treated as congestion and `beta` is
//!    capped at `excess_beta` (0.7) regardless of delay.
//! 3. **Coding information.** `p_e` is the coding layer's erasure-rate
//!    estimate ([`CodingFeedback::ErasureRate`]) when supplied, else the loss
//!    rate of packets that did not meet a queue peak (see 4). Once the coding layer
//!    reports which losses it recovered, only the *recovered* fraction of the
//!    loss rate can count as erasures ([`CodingFeedback::Recovered`] /
//!    [`CodingFeedback::Unrecovered`]). `p_e` is capped at `erasure_cap`.
//!    Recovery never exempts a loss from the delay-based backoff.
//! 4. **Loss/queue-peak correlation.** Packets are classified by the queue
//!    they met (RTT above halfway between RTTmin and the recent raw RTT
//!    maximum); if those are lost significantly more often than the others,
//!    losses at queue peaks are overflow and get a CUBIC-like backoff (0.7)
//!    even when the queue is too shallow for Equation (1) to react.
//! 5. **Slow start** continues through losses while there is no queueing
//!    delay (in the initial window's round trip: none beyond what that
//!    unpaced burst creates itself, [`Hybrid::initial_burst_allowance`]),
//!    and ends on a delay increase (HyStart++-like: the round's minimum
//!    RTT, or all of the last 8 samples, above the reference by
//!    max(4 ms, RTTmin/8)), falling back to the BDP estimated from the
//!    short-term ACK rate, or on a backoff, which then scales what the last
//!    complete round delivered (never less than the initial window) rather
//!    than the doubled window.
//! 6. **Pacing** at `pacing_gain * cwnd / sRTT` (default gain 1.25; 2 in
//!    slow start).
//! 7. **Friendly increase.** Behind a queue, the additive increase after a
//!    backoff by `beta` is `3 (1 - beta) / (1 + beta)` (Reno-equivalent
//!    AIMD), so a shallow backoff on a shallow buffer is not also a fast
//!    increase.
//! 8. **Competitive mode.** After every backoff by Equation (1), and after
//!    a drain probe (the same backoff without a loss, once a queue has
//!    persisted for 8 RTTs), the queue is watched: if it never drains,
//!    another flow holds it, and hybrid plays CUBIC (RFC 9438's response
//!    to every congestion event) until the queue stays empty again.
//! 9. **Ramp.** Under random loss, each window-limited round trip without
//!    a queue doubles the additive increase (up to a quarter of the window
//!    per round trip, and a quarter of the RTT range seen), so that a
//!    window cut at a capacity dip regrows when the capacity returns.
//! 10. **Sympathetic backoff.** On a buffer known to be shallow (overflow
//!     losses while the whole queue is a small fraction of the RTT), a
//!     standing queue that drains without this flow backing off is another
//!     flow's response to an overflow, and this flow backs off too.
//!
//! See `docs/congestion.md` for the reasoning and the simulator results.

mod competitive;

use std::time::{Duration, Instant};

use competitive::{CutWatch, DrainCheck, Recheck};

use crate::filter::WindowedMin;
use crate::growth::{AdditiveIncrease, CubicGrowth};
use crate::state_name;
use crate::{
    cwnd_limited, slow_start_aware_rate, CodingFeedback, CommonConfig, CongestionEvent, Controller,
    SendState,
};

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
    /// start, or on a buffer known to be shallow, whose queue is too small
    /// to show the other flows' reductions). Another flow's reduction is inferred from the queue: it falls
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
    /// While a queue is detected and random loss is not (see
    /// `competitive_max_random_loss`), scale the additive increase by
    /// `3 (1 - beta) / (1 + beta)` for the factor `beta` of the last backoff
    /// (the rule that makes AIMD(alpha, beta) as aggressive as Reno, which
    /// CUBIC's Reno-friendly region also uses): a backoff shallower than 0.5,
    /// on a buffer shallow relative to the RTT, is then paid for with a
    /// slower increase. Without a queue the increase is `alpha`.
    pub friendly_increase: bool,
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
    /// RTTmin (a buffer that shallow makes Equation (1) back off by a few
    /// percent), a standing queue that drains without this flow backing
    /// off is another flow's response to an overflow, and this flow backs
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
    /// excess and correlated losses back off as before. Loss-free, every
    /// loss is an overflow and meets the peak, so the flow cycles between
    /// an empty queue and the buffer's (or a drain probe's) limit. Under
    /// random loss, Equation (1) at every loss above the tolerance held
    /// the queue at a few packets: on a link whose capacity swings that
    /// leaves no cushion for the next rise: with 2 % loss hybrid kept
    /// 0.80-0.85 of its loss-free throughput on the T-Mobile trace with a
    /// 1000-packet buffer in the simulator (0.93-0.95 with this rule), and
    /// 0.80-0.84 on the emulated link (docs/congestion.md §3.2 item 14).
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
            friendly_increase: true,
            drain_probe_after: 8,
            drain_probe_min: Duration::from_millis(500),
            ramp: 0.25,
            sympathetic_range: 0.25,
            jitter_tolerance: 2.0,
            queue_tolerance_pkts: 4.0,
            random_loss_peak_backoff: true,
        }
    }
}

/// Decayed loss accounting (packets), decayed once per round.
#[derive(Clone, Copy, Debug)]
struct LossRate {
    lost: f64,
    total: f64,
    decay: f64,
}

impl LossRate {
    /// Packets needed before the estimate is trusted.
    const MIN_SAMPLES: f64 = 100.0;

    fn new(decay: f64) -> Self {
        LossRate {
            lost: 0.0,
            total: 0.0,
            decay,
        }
    }

    fn add_round(&mut self, lost: f64, total: f64) {
        self.lost = self.lost * self.decay + lost;
        self.total = self.total * self.decay + total;
    }

    fn rate(&self) -> Option<f64> {
        (self.total >= Self::MIN_SAMPLES).then(|| self.lost / self.total)
    }
}

/// Counters exposed for tests and qlog.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HybridStats {
    /// Loss events that reduced the window because of queueing delay.
    pub delay_backoffs: u64,
    /// Loss events that reduced the window because of excess loss.
    pub excess_backoffs: u64,
    /// Loss events whose backoff was deepened because losses correlate with
    /// queueing (see [`Hybrid::loss_delay_correlated`]).
    pub correlated_backoffs: u64,
    /// Counted loss events that did not reduce the window (erasures).
    pub ignored_loss_events: u64,
    /// Slow-start exits on delay increase.
    pub hystart_exits: u64,
    /// Entries into competitive mode.
    pub competitive_entries: u64,
    /// Drain probes: backoffs by Equation (1) without a loss, after a queue
    /// persisted for [`HybridConfig::drain_probe_after`] (see there).
    pub drain_probes: u64,
    /// Sympathetic backoffs ([`HybridConfig::sympathetic_range`]).
    pub sympathetic_backoffs: u64,
    /// Rechecks of the competitive mode ([`HybridConfig::competitive_recheck`]).
    pub competitive_rechecks: u64,
    /// Rechecks that found the queue drained: entries refused and exits.
    pub competitive_cleared: u64,
    /// Other flows' reductions inferred in the competitive mode
    /// ([`HybridConfig::competitive_reciprocity`]).
    pub other_reductions: u64,
    /// Congestion events skipped in the competitive mode because this flow
    /// had already backed off more often than the others.
    pub reciprocal_skips: u64,
}

/// The hybrid controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Hybrid {
    cfg: HybridConfig,
    cwnd: f64,
    ssthresh: f64,
    slow_start: bool,
    send: SendState,
    ai: AdditiveIncrease,
    cubic: CubicGrowth,
    rtt_min: WindowedMin<Duration>,
    rtt_recent: WindowedMin<Duration>,
    /// Windowed maximum of the filtered RTT (`rtt_recent`): the queue swing
    /// the bottleneck actually allows.
    rtt_recent_max: crate::filter::WindowedMax,
    /// Windowed maximum of the raw RTT samples (queue peaks and jitter).
    rtt_raw_max: crate::filter::WindowedMax,
    srtt: Duration,
    rttvar: Duration,
    // Round accounting.
    round_end: Option<u64>,
    round_lost: f64,
    round_acked: f64,
    /// Packets decided (acknowledged or declared lost) in the last round.
    last_round_decided: f64,
    /// Whether the last round began with the window in use, so that
    /// `last_round_decided` measures what the path carries per round trip
    /// (the first rounds of a connection do not: see
    /// [`Hybrid::delivered_per_round`]).
    last_round_full: bool,
    /// Whether the current round began with the window in use.
    round_full: bool,
    round_window: f64,
    /// This round's (lost, total) packets that met a queue / no queue.
    round_q: (f64, f64),
    round_c: (f64, f64),
    /// Whether the newest acknowledged packet met a queue (the state a
    /// packet lost next to it most likely met).
    last_ack_queued: bool,
    // Loss-rate estimates.
    off_peak: LossRate,
    peak: LossRate,
    all: LossRate,
    round_lost_stat: f64,
    /// Loss dispersion of off-peak rounds (see [`Hybrid::loss_dispersion`]):
    /// decayed sums of squared deviations from the expected count and of
    /// the binomial variances, and the decayed number of rounds.
    dispersion: (f64, f64, f64),
    coding_rate: Option<f64>,
    recovered: f64,
    unrecovered: f64,
    dof_rtt: Option<Duration>,
    last_beta: Option<f64>,
    stats: HybridStats,
    // HyStart++-style per-round minimum RTT (RFC 9406 idea).
    hs_cur_min: Option<Duration>,
    hs_samples: u32,
    hs_last_min: Option<Duration>,
    /// The last `HS_SAMPLES` RTT samples.
    hs_recent: std::collections::VecDeque<Duration>,
    /// (time, cumulative bytes acked) of the last `ACK_HISTORY` ACK events.
    ack_history: std::collections::VecDeque<(Instant, u64)>,
    acked_bytes: u64,
    /// Whether another flow holds the queue (see [`Hybrid::competitive`]).
    competitive: bool,
    /// After a delay backoff: when to check that the queue drained, and the
    /// queueing delay before the backoff.
    /// The window after that backoff (to discount this flow's own regrowth).
    drain_check: Option<DrainCheck>,
    /// Since when a queue has been detected without a backoff.
    queue_since: Option<Instant>,
    /// Backoffs taken in competitive mode (every `competitive_probe_every`-th probes with
    /// Equation (1)).
    competitive_backoffs: u64,
    /// Factor of the last window reduction (for the friendly increase).
    backoff_beta: f64,
    /// Since when no queue has been detected (competitive mode's exit).
    queue_empty_since: Option<Instant>,
    /// Factor on the additive increase from [`HybridConfig::ramp`].
    ramp: f64,
    /// Whether a queue was detected (or the window reduced) in the current
    /// round.
    round_queued: bool,
    /// Whether the window limited sending at some ACK of the current round.
    round_limited: bool,
    /// When the filtered RTT last showed a standing queue of at least half
    /// the range on a shallow buffer (the sympathetic backoff).
    queue_full_at: Option<Instant>,
    /// When the window was last reduced.
    last_backoff_at: Option<Instant>,
    /// When a loss last met a queue peak.
    overflow_at: Option<Instant>,
    /// The recheck in progress ([`HybridConfig::competitive_recheck`]).
    recheck: Option<Recheck>,
    /// Smallest queueing delay since this flow's last backoff (was the
    /// overflow there followed by a dip? see
    /// [`HybridConfig::competitive_recheck_timing`]).
    queue_low_since_backoff: Option<Duration>,
    /// A recheck due, waiting for its moment
    /// ([`HybridConfig::competitive_recheck_timing`]): since when, and
    /// whether the mode is yet to be entered.
    recheck_due: Option<(Instant, bool)>,
    /// When the competitive mode was entered or last rechecked.
    rechecked_at: Option<Instant>,
    /// The window to enter the competitive mode with: what CUBIC's
    /// response to the first overflow of the watch that found the queue
    /// held would have left (see [`Hybrid::enter_competitive`]).
    entry_window: Option<f64>,
    /// Reciprocity ([`HybridConfig::competitive_reciprocity`]): this flow's
    /// backoffs and the other flows' inferred reductions since the mode
    /// began.
    own_cuts: u64,
    their_cuts: u64,
    /// After a backoff in the mode: does the queue fall by more than it?
    cut_watch: Option<CutWatch>,
    /// Highest filtered queueing delay since the last reduction, and when.
    queue_peak: Option<(Instant, Duration)>,
    /// A fall of the queue below `RECIPROCITY_DROP` of the peak without a
    /// backoff of this flow: (when to confirm, the peak).
    drop_watch: Option<(Instant, Duration)>,
}

/// The queue (fraction of the range) below which a standing queue counts
/// as drained for the sympathetic backoff.
const SYMPATHETIC_DRAINED: f64 = 0.15;

/// Per-round decay of the loss-dispersion sums.
const DISPERSION_DECAY: f64 = 0.95;

/// Upper bound of [`Hybrid::loss_dispersion`].
const MAX_DISPERSION: f64 = 25.0;

/// HyStart++'s delay-increase threshold for a base RTT:
/// `clamp(base / 8, 4 ms, 16 ms)`.
fn hystart_threshold(base: Duration) -> Duration {
    (base / 8).clamp(Duration::from_millis(4), Duration::from_millis(16))
}

/// ACK events kept for the short-term delivery-rate estimate.
const ACK_HISTORY: usize = 16;

/// RTT samples that must all show the delay increase (HyStart++ uses 8).
const HS_SAMPLES: usize = 8;

impl Hybrid {
    /// A new controller.
    pub fn new(cfg: HybridConfig) -> Self {
        Hybrid {
            cwnd: cfg.common.initial_window(),
            ssthresh: f64::INFINITY,
            slow_start: true,
            send: SendState::default(),
            ai: AdditiveIncrease::default(),
            cubic: CubicGrowth::new(0.4),
            rtt_min: WindowedMin::new(cfg.rtt_min_window),
            rtt_recent: WindowedMin::new(cfg.common.initial_rtt),
            rtt_recent_max: crate::filter::WindowedMax::new(cfg.queue_range_window),
            rtt_raw_max: crate::filter::WindowedMax::new(cfg.queue_range_window),
            srtt: cfg.common.initial_rtt,
            rttvar: cfg.common.initial_rtt / 2,
            round_end: None,
            round_lost: 0.0,
            round_acked: 0.0,
            last_round_decided: 0.0,
            last_round_full: false,
            round_full: false,
            round_window: cfg.common.initial_window_packets as f64,
            round_q: (0.0, 0.0),
            round_c: (0.0, 0.0),
            last_ack_queued: false,
            off_peak: LossRate::new(0.99),
            peak: LossRate::new(0.99),
            all: LossRate::new(0.95),
            round_lost_stat: 0.0,
            dispersion: (0.0, 0.0, 0.0),
            coding_rate: None,
            recovered: 0.0,
            unrecovered: 0.0,
            dof_rtt: None,
            last_beta: None,
            stats: HybridStats::default(),
            hs_cur_min: None,
            hs_samples: 0,
            hs_last_min: None,
            hs_recent: std::collections::VecDeque::with_capacity(HS_SAMPLES),
            ack_history: std::collections::VecDeque::with_capacity(ACK_HISTORY),
            acked_bytes: 0,
            competitive: false,
            drain_check: None,
            entry_window: None,
            queue_since: None,
            competitive_backoffs: 0,
            backoff_beta: 0.5,
            queue_empty_since: None,
            ramp: 1.0,
            round_queued: false,
            round_limited: false,
            queue_full_at: None,
            last_backoff_at: None,
            overflow_at: None,
            recheck: None,
            recheck_due: None,
            queue_low_since_backoff: None,
            rechecked_at: None,
            own_cuts: 0,
            their_cuts: 0,
            cut_watch: None,
            queue_peak: None,
            drop_watch: None,
            cfg,
        }
    }

    /// Whether the controller is in competitive mode: after its last backoff
    /// by Equation (1) (or drain probe), which drains a queue the flow built
    /// itself, the queue never drained during the watch
    /// ([`HybridConfig::competitive_drain_frac`]), so another flow holds it,
    /// typically a loss-based one that fills the buffer. On entry it
    /// slow-starts until the next loss ([`HybridConfig::competitive_restart`]);
    /// it then grows like CUBIC and backs off by `competitive_beta` on every
    /// congestion event (see [`HybridConfig::competitive_loss_frac`]);
    /// every `competitive_probe_every`-th backoff uses Equation (1) to test
    /// whether it is alone. It leaves the mode when the queue never refills
    /// during the watch after such a probe, or stays empty for four smoothed
    /// RTTs.
    pub fn competitive(&self) -> bool {
        self.competitive
    }

    /// Counters.
    pub fn stats(&self) -> HybridStats {
        self.stats
    }

    /// Windowed RTTmin.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min.get()
    }

    /// Backoff factor computed at the last counted loss event.
    pub fn last_beta(&self) -> Option<f64> {
        self.last_beta
    }

    /// Latest DOF-delivery RTT sample from the coding layer (informational).
    pub fn dof_rtt(&self) -> Option<Duration> {
        self.dof_rtt
    }

    /// Current estimate of the queueing delay (recent RTT minus RTTmin).
    pub fn queueing_delay(&self) -> Option<Duration> {
        Some(self.rtt_recent.get()?.saturating_sub(self.rtt_min.get()?))
    }

    /// The queueing delay treated as none: `max(queue_tolerance_min,
    /// queue_tolerance_frac * RTTmin)`, but never more than
    /// `max(queue_range_frac * largest filtered queueing delay seen in the
    /// last queue_range_window, 2 * rttvar)`, so that on a shallow buffer, where
    /// the whole queue is smaller than the tolerance, overflow losses still
    /// count as congestion. The range cap applies only while packets that
    /// met no queue peak are not lost ([`Hybrid::random_loss_free`]); while
    /// they are, the tolerance is at least `jitter_tolerance * rttvar` and
    /// the time to send `queue_tolerance_pkts` packets at the delivery
    /// rate, each at most RTTmin.
    pub fn queue_tolerance(&self) -> Duration {
        let min = self.rtt_min.get().unwrap_or(self.srtt);
        let tol = self
            .cfg
            .queue_tolerance_min
            .max(min.mul_f64(self.cfg.queue_tolerance_frac));
        match self.rtt_recent_max.get() {
            // Random loss off the queue peaks: a small range is our own
            // low queue, not a shallow buffer (overflow there shows as
            // losses correlated with the peaks, which back off anyway).
            // Shrinking the tolerance to half our own range made every
            // loss event under heavy random loss a backoff on jitter.
            // The path's own RTT noise (ACK-path jitter, a link that
            // serves in bursts) is not a queue either: under random loss
            // Equation (1) acts at every loss event.
            Some(_) if !self.random_loss_free() => {
                // At most RTTmin: rttvar also follows this flow's
                // own queue, which the tolerance must not let grow.
                let jitter = self.rttvar.mul_f64(self.cfg.jitter_tolerance);
                let pkts = self.delivery_rate().map_or(Duration::ZERO, |r| {
                    let pkts = self.cfg.queue_tolerance_pkts;
                    let pkts = if pkts.is_finite() { pkts.max(0.0) } else { 0.0 };
                    Duration::from_secs_f64(pkts * self.cfg.common.mss as f64 / r.max(1.0))
                });
                tol.max(jitter.min(min)).max(pkts.min(min))
            }
            Some(max) => {
                let range = Duration::from_secs_f64(max).saturating_sub(min);
                // Jittery paths (large rttvar) keep the configured tolerance:
                // there the filtered RTT wanders by about that much by itself.
                tol.min(
                    range
                        .mul_f64(self.cfg.queue_range_frac)
                        .max(self.rttvar * 2),
                )
            }
            None => tol,
        }
    }

    /// Factor on the additive increase ([`HybridConfig::friendly_increase`]):
    /// `3 (1 - beta) / (1 + beta)` for the last backoff's `beta` (at most 1,
    /// at least 0.1) while a queue is detected without random loss, else 1.
    /// Under random loss the queue-free losses set the pace, and a slower
    /// increase there cost the shorter-RTT flow half its share (simulator,
    /// 40 vs 80 ms at 0.5 % loss).
    pub fn increase_scale(&self) -> f64 {
        if !self.cfg.friendly_increase || !self.queue_detected() || !self.random_loss_free() {
            return 1.0;
        }
        let b = self.backoff_beta;
        (3.0 * (1.0 - b) / (1.0 + b)).clamp(0.1, 1.0)
    }

    /// Whether the recent RTT shows queueing beyond the tolerance.
    pub fn queue_detected(&self) -> bool {
        self.queueing_delay()
            .is_some_and(|q| q > self.queue_tolerance())
    }

    /// The erasure rate the excess-loss detector expects.
    pub fn erasure_rate(&self) -> f64 {
        let mut p = self.coding_rate.or(self.off_peak.rate()).unwrap_or(0.0);
        let reported = self.recovered + self.unrecovered;
        if reported > 0.0 {
            let frac = self.recovered / reported;
            if let Some(all) = self.all.rate() {
                p = p.min(all * frac);
            }
        }
        p.clamp(0.0, self.cfg.erasure_cap)
    }

    /// Losses per round above which a round counts as congested: the
    /// binomial mean `n p` plus `excess_sigma` standard deviations plus
    /// `excess_slack` packets, for `p` = [`Hybrid::erasure_rate`] (the
    /// variance uses `max(p, 0.01)`, includes the estimate's own,
    /// `n^2 p(1-p)/N` for `N` packets decided so far, and is scaled by
    /// [`Hybrid::loss_dispersion`]). `n` is the number of packets this
    /// round has decided (acknowledged or declared lost), but at least the
    /// window at the start of the round: the round in which slow start ends
    /// decides the fate of up to twice the window it started with, and
    /// their random losses must not look like excess.
    pub fn excess_threshold(&self) -> f64 {
        let decided = self.round_acked + self.round_lost_stat;
        let n = self.round_window.max(decided).max(1.0);
        let p = self.erasure_rate();
        let var_p = p.max(0.01);
        // The estimate itself is uncertain while few packets back it (the
        // first rounds): its variance p(1-p)/N, with N the packets decided
        // so far, adds n^2 p(1-p)/N to the round's. Without it, an early
        // estimate that happened to be low made random loss look like
        // excess and ended slow start at a fraction of the path.
        let seen = (self.all.total + decided).max(1.0);
        let var = n * var_p * (1.0 - var_p) * (1.0 + n / seen) * self.loss_dispersion();
        n * p + self.cfg.excess_sigma * var.sqrt() + self.cfg.excess_slack
    }

    /// How much more per-round loss counts vary than independent losses
    /// would (1 for Bernoulli loss): the ratio of the observed squared
    /// deviations from `n p` to the binomial variances, over rounds that
    /// mostly met no queue peak (decayed by 5% per round; 1 until 10
    /// rounds; at most 25). Bursty loss (Wi-Fi, cellular, Gilbert-Elliott)
    /// loses several packets in a row: at 5% loss in bursts of 4 a round
    /// of 75 packets loses 0 or 8 far more often than binomially, and the
    /// excess-loss detector took those rounds for congestion.
    pub fn loss_dispersion(&self) -> f64 {
        let (d, b, r) = self.dispersion;
        if r < 10.0 || b <= 0.0 {
            return 1.0;
        }
        (d / b).clamp(1.0, MAX_DISPERSION)
    }

    /// RTT above which a packet counts as having met a queue peak for the
    /// correlation test: halfway between RTTmin and the largest raw RTT
    /// sample of the last `queue_range_window`. Independent of the queueing
    /// tolerance, so it works on buffers shallower than the tolerance.
    pub fn queue_peak_threshold(&self) -> Option<Duration> {
        let min = self.rtt_min.get()?;
        let max = Duration::from_secs_f64(self.rtt_raw_max.get()?);
        (max > min).then(|| min + (max - min) / 2)
    }

    /// Whether the loss rate of packets that met no queue peak is below
    /// [`HybridConfig::competitive_max_random_loss`] (or not yet measured).
    pub fn random_loss_free(&self) -> bool {
        self.off_peak
            .rate()
            .is_none_or(|r| r < self.cfg.competitive_max_random_loss)
    }

    /// Whether losses correlate with queueing: the loss rate of packets that
    /// met a queue peak (their RTT, or for a lost packet its newest
    /// acknowledged neighbour's, above [`Hybrid::queue_peak_threshold`])
    /// exceeds that of packets that did not, by more than `excess_sigma`
    /// binomial standard deviations plus `excess_slack` packets (counts
    /// decayed by 1% per round; at least 100 peak and 20 other packets). Random erasures do not depend on the
    /// queue; drop-tail overflow happens only with a full one. This catches
    /// overflow on buffers so shallow that Equation (1) alone would back off
    /// by a few percent.
    pub fn loss_delay_correlated(&self) -> bool {
        if !self.cfg.loss_correlation {
            return false;
        }
        let (q, c) = (self.peak, self.off_peak);
        if q.total < LossRate::MIN_SAMPLES || c.total < 20.0 {
            return false;
        }
        let pc = c.lost / c.total;
        let var_p = pc.max(0.001);
        let margin = self.cfg.excess_sigma * (q.total * var_p * (1.0 - var_p)).sqrt()
            + self.cfg.excess_slack;
        q.lost > q.total * pc + margin
    }

    /// Decayed (lost, total) packet counts for packets that met a queue peak
    /// and for the others, as used by [`Hybrid::loss_delay_correlated`].
    pub fn loss_by_queue_state(&self) -> ((f64, f64), (f64, f64)) {
        (
            (self.peak.lost, self.peak.total),
            (self.off_peak.lost, self.off_peak.total),
        )
    }

    /// Delay-based backoff factor (1 when queueing is within tolerance).
    pub fn delay_beta(&self) -> f64 {
        match (self.rtt_min.get(), self.rtt_recent.get()) {
            (Some(min), Some(rtt)) if self.queue_detected() && !rtt.is_zero() => {
                (min.as_secs_f64() / rtt.as_secs_f64()).clamp(self.cfg.beta_min, 1.0)
            }
            (Some(_), Some(_)) => 1.0,
            _ => self.cfg.beta_min,
        }
    }

    fn end_round(&mut self, now: Instant, prior_in_flight: usize) {
        let total = self.round_acked + self.round_lost_stat;
        // Rounds that mostly met no queue peak measure how random loss is
        // spread over rounds; overflow rounds (at the peaks) are left out,
        // so congestion cannot mask itself.
        if self.round_full && total >= 10.0 && self.round_c.1 >= self.round_q.1 {
            let p = self.erasure_rate();
            let v = p.max(0.01);
            let dev = self.round_lost_stat - total * p;
            let (d, b, r) = self.dispersion;
            self.dispersion = (
                d * DISPERSION_DECAY + dev * dev,
                b * DISPERSION_DECAY + total * v * (1.0 - v),
                r * DISPERSION_DECAY + 1.0,
            );
        }
        self.all.add_round(self.round_lost_stat, total);
        self.peak.add_round(self.round_q.0, self.round_q.1);
        self.off_peak.add_round(self.round_c.0, self.round_c.1);
        self.round_q = (0.0, 0.0);
        self.round_c = (0.0, 0.0);
        self.round_lost_stat = 0.0;
        self.round_lost = 0.0;
        self.last_round_decided = total;
        // Ramp: a round that used the window (cwnd-limited) without a
        // queue or a backoff doubles the increase, up to the cap.
        if self.cfg.ramp > 0.0
            && self.round_full
            && self.round_limited
            && !self.round_queued
            && !self.slow_start
            && (!self.random_loss_free() || !self.shallow_buffer(now))
            && !self.loss_delay_correlated()
        {
            self.ramp = (self.ramp * 2.0).min(self.ramp_max());
        } else {
            self.ramp = 1.0;
        }
        self.round_queued = false;
        self.round_limited = false;
        self.last_round_full = self.round_full;
        // The next round measures the path only if it starts while the
        // sender is using its window (at least half of it in flight before
        // this ACK, as in slow start's increase rule): the round that begins
        // when the handshake is acknowledged starts with next to nothing in
        // flight and would count just the first ACK of the next flight.
        self.round_full = prior_in_flight as f64 * 2.0 >= self.cwnd;
        self.round_acked = 0.0;
        self.round_window = self.cwnd / self.cfg.common.mss as f64;
        self.round_end = self.send.largest_sent.map(|l| l + 1);
        if self.hs_samples > 0 {
            self.hs_last_min = self.hs_cur_min;
        }
        self.hs_cur_min = None;
        self.hs_samples = 0;
    }

    /// Bytes decided (acknowledged or declared lost) over the last
    /// complete round trip (or more, if the current round has already
    /// decided more): while the link is saturated this is `C * RTT`, so
    /// `delivered * RTTmin / RTT` is the BDP. Lost packets count: under
    /// random loss after the bottleneck they used the link as much as the
    /// acknowledged ones, and a window sized on acknowledged bytes alone
    /// is `1 - p` of the path (0.8 BDP at 20% loss). `None` until a round
    /// that began with the window in use has completed: before that (the
    /// initial window's first round trip) the count is only the few
    /// packets decided so far, which says nothing about the path.
    fn delivered_per_round(&self) -> Option<f64> {
        let current = self.round_acked + self.round_lost_stat;
        self.last_round_full
            .then(|| self.last_round_decided.max(current) * self.cfg.common.mss as f64)
    }

    /// The queueing delay that a loss in slow start must exceed to count as
    /// a congestion signal while no complete round trip has been measured
    /// yet (the initial window's round trip): the HyStart++ threshold
    /// `clamp(RTTmin / 8, 4 ms, 16 ms)`, i.e. the queue slow start tolerates
    /// anyway before it ends on delay. The initial window leaves as one
    /// unpaced burst (quiche sends 10 packets back to back), which queues
    /// itself at the bottleneck: 10 packets of 1 350 bytes take 5.4 ms at
    /// 20 Mbit/s. Under random loss a loss falls into that round often, and
    /// treating the burst's own queue as congestion ended slow start at
    /// random. Once a complete round has been measured this is just
    /// [`Hybrid::queue_tolerance`], as for any loss: a flow that joins a
    /// queue held by others must not ignore its overflow losses for longer
    /// than that first round.
    pub fn initial_burst_allowance(&self) -> Duration {
        if self.delivered_per_round().is_some() {
            return self.queue_tolerance();
        }
        let min = self.rtt_min.get().unwrap_or(self.srtt);
        hystart_threshold(min).max(self.queue_tolerance())
    }

    /// Short-term delivery rate (bytes/s) over the last few ACK events
    /// times RTTmin: while a queue is building the link is saturated, so this
    /// estimates the path BDP.
    fn bdp_estimate(&self) -> Option<f64> {
        Some(self.delivery_rate()? * self.rtt_min.get()?.as_secs_f64())
    }

    /// Bytes per second acknowledged over the last `ACK_HISTORY` ACK events.
    fn delivery_rate(&self) -> Option<f64> {
        let &(t0, b0) = self.ack_history.front()?;
        let &(t1, b1) = self.ack_history.back()?;
        let span = t1.saturating_duration_since(t0).as_secs_f64();
        if self.ack_history.len() < 4 || span <= 0.0 {
            return None;
        }
        Some((b1 - b0) as f64 / span)
    }

    /// The ramp's largest increase per round trip as a fraction of the
    /// window: [`HybridConfig::ramp`], but at most a quarter of the range of
    /// raw RTT samples in the last `queue_range_window` (the queue swing
    /// plus jitter, in units of RTTmin, so a fraction of the window), so
    /// that a round trip's overshoot fits a shallow buffer. Without this cap the ramp drove a single flow on a
    /// 4 ms buffer with 2 % loss from 0.999 of the link to 0.903 (overflow,
    /// then the correlation test's backoffs).
    fn ramp_cap(&self) -> f64 {
        match (self.rtt_min.get(), self.rtt_raw_max.get()) {
            (Some(min), Some(max)) if !min.is_zero() => {
                let min = min.as_secs_f64();
                self.cfg.ramp.min((max - min).max(0.0) / min / 4.0)
            }
            _ => self.cfg.ramp,
        }
    }

    /// The largest ramp factor: the increase it gives per round trip is at
    /// most [`Hybrid::ramp_cap`] of the window (and the factor at least 1).
    fn ramp_max(&self) -> f64 {
        let mss = self.cfg.common.mss as f64;
        (self.cwnd / mss * self.ramp_cap() / self.cfg.alpha.max(1e-9)).max(1.0)
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
    /// queue that stood at least half the range for a round trip (the
    /// filtered RTT) and then drains within three round trips, without this
    /// flow backing off in between, is another flow's response to an
    /// overflow.
    fn sympathetic(&mut self, now: Instant) {
        if self.slow_start
            || self.competitive
            || self.recheck.is_some()
            || !self.random_loss_free()
            || !self.shallow_buffer(now)
        {
            self.queue_full_at = None;
            return;
        }
        let (Some(min), Some(max), Some(rtt)) = (
            self.rtt_min.get(),
            self.rtt_raw_max.get(),
            self.rtt_recent.get(),
        ) else {
            return;
        };
        let range = Duration::from_secs_f64(max).saturating_sub(min);
        let q = rtt.saturating_sub(min);
        if q >= range / 2 {
            // The filtered RTT still shows the queue this flow's own last
            // backoff is draining for up to two round trips after it.
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

    /// Multiplies the window by `beta`. In slow start the window is first
    /// replaced by what the path delivered over the last round, scaled by
    /// `delivered_beta`. Returns the window the reduction applied to (in
    /// slow start without the overshoot: the new window over `beta`).
    fn backoff(&mut self, now: Instant, beta: f64, delivered_beta: f64) -> f64 {
        // A recheck in progress is abandoned: back off from the window
        // it cut.
        if let Some(r) = self.recheck.take() {
            self.cwnd = self.cwnd.max(r.saved);
        }
        let mss = self.cfg.common.mss as f64;
        let before = self.cwnd;
        let mut target = self.cwnd * beta;
        if self.slow_start {
            // Slow start overshoots by up to a factor two within the RTT the
            // signal takes to arrive; scale what the path actually delivered
            // over the last complete round instead of the inflated window.
            // Before a complete round there is no such measurement (only
            // the cwnd is scaled), and a round that delivered less than the
            // initial window says no more than the initial window did.
            if let Some(delivered) = self.delivered_per_round() {
                target =
                    target.min(delivered.max(self.cfg.common.initial_window()) * delivered_beta);
            }
        }
        self.cwnd = target.max(self.cfg.common.min_window());
        self.reciprocity_on_backoff(now, before);
        self.backoff_beta = beta;
        self.last_backoff_at = Some(now);
        self.queue_low_since_backoff = None;
        self.ramp = 1.0;
        self.round_queued = true;
        self.queue_since = None;
        self.ssthresh = self.cwnd;
        self.slow_start = false;
        self.send.start_recovery();
        self.ai.reset();
        self.cubic
            .on_backoff(now, before / mss, self.cwnd / mss, beta);
        (self.cwnd / beta.max(1e-3)).min(before)
    }
}

impl Controller for Hybrid {
    fn metrics(&self, out: &mut dyn FnMut(&'static str, f64)) {
        if let Some(m) = self.rtt_min() {
            out("hybrid_rtt_min_ms", m.as_secs_f64() * 1e3);
        }
        if let Some(b) = self.last_beta() {
            out("beta", b);
        }
        if let Some(q) = self.queueing_delay() {
            out("queueing_delay_ms", q.as_secs_f64() * 1e3);
        }
        out("queue_detected", self.queue_detected() as u8 as f64);
        out("competitive", self.competitive as u8 as f64);
        out("erasure_rate", self.erasure_rate());
        out("excess_threshold", self.excess_threshold());
        out("loss_dispersion", self.loss_dispersion());
        out("ramp", self.ramp.min(self.ramp_max()));
        if self.competitive {
            out("own_backoffs", self.own_cuts as f64);
            out("other_reductions", self.their_cuts as f64);
        }
    }

    fn on_packet_sent(
        &mut self,
        _now: Instant,
        _bif: usize,
        pkt_num: u64,
        _bytes: usize,
        _rtx: bool,
    ) {
        self.send.on_sent(pkt_num);
        if self.round_end.is_none() {
            self.round_end = Some(pkt_num);
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent<'_>) {
        self.srtt = ev.rtt.smoothed;
        self.rttvar = ev.rtt.rttvar;
        self.rtt_recent.set_window(ev.rtt.smoothed);
        if ev.rtt_updated {
            self.rtt_min.update(ev.now, ev.rtt.latest);
            self.rtt_recent.update(ev.now, ev.rtt.latest);
            if let Some(r) = self.rtt_recent.get() {
                self.rtt_recent_max.update(ev.now, r.as_secs_f64());
            }
            self.rtt_raw_max.update(ev.now, ev.rtt.latest.as_secs_f64());
            self.hs_cur_min = Some(
                self.hs_cur_min
                    .map_or(ev.rtt.latest, |m| m.min(ev.rtt.latest)),
            );
            self.hs_samples += 1;
            if self.hs_recent.len() == HS_SAMPLES {
                self.hs_recent.pop_front();
            }
            self.hs_recent.push_back(ev.rtt.latest);
        } else {
            self.rtt_min.expire(ev.now);
            self.rtt_recent.expire(ev.now);
        }
        self.send.on_acked(ev.acked);
        if !ev.acked.is_empty() {
            self.acked_bytes += ev.acked.iter().map(|a| a.bytes as u64).sum::<u64>();
            if self.ack_history.len() == ACK_HISTORY {
                self.ack_history.pop_front();
            }
            self.ack_history.push_back((ev.now, self.acked_bytes));
        }
        let mss = self.cfg.common.mss as f64;
        // Classify packets by the queue they met: an acknowledged packet by
        // its own RTT, a lost one by the newest acknowledged packet (its
        // neighbour in the queue).
        let peak = self.queue_peak_threshold();
        let met_queue = |rtt: Duration| peak.is_some_and(|p| rtt > p);
        let mut newest: Option<u64> = None;
        for a in ev.acked {
            let q = met_queue(ev.now.saturating_duration_since(a.time_sent));
            if q {
                self.round_q.1 += 1.0;
            } else {
                self.round_c.1 += 1.0;
            }
            if newest.is_none_or(|n| a.pkt_num > n) {
                newest = Some(a.pkt_num);
                self.last_ack_queued = q;
            }
        }
        let n_lost = ev.lost.len() as f64;
        if self.last_ack_queued {
            if n_lost > 0.0 {
                self.overflow_at = Some(ev.now);
            }
            self.round_q = (self.round_q.0 + n_lost, self.round_q.1 + n_lost);
        } else {
            self.round_c = (self.round_c.0 + n_lost, self.round_c.1 + n_lost);
        }
        self.round_acked += ev.acked.len() as f64;
        self.round_lost += ev.lost.len() as f64;
        self.round_lost_stat += ev.lost.len() as f64;

        if self.cfg.competitive {
            self.competitive_on_ack(ev);
        }

        if self.cfg.sympathetic_range > 0.0 && ev.rtt_updated {
            self.sympathetic(ev.now);
        }

        if ev.lost.iter().any(|l| self.send.loss_counts(l.pkt_num)) {
            let mut beta_delay = self.delay_beta();
            if self.slow_start
                && beta_delay < 1.0
                && self
                    .queueing_delay()
                    .is_some_and(|q| q <= self.initial_burst_allowance())
            {
                // The initial window's own burst explains this queue: the
                // loss is not a congestion signal (see
                // initial_burst_allowance).
                beta_delay = 1.0;
            }
            if self.cfg.random_loss_peak_backoff
                && !self.random_loss_free()
                && !self.last_ack_queued
            {
                // Under random loss, a loss off the queue's peak is an
                // erasure whatever queue it met.
                beta_delay = 1.0;
            }
            // The detector needs a calibrated erasure rate: until the coding
            // layer or ~100 off-peak packets provide one, only the delay rule
            // applies.
            let calibrated = self.coding_rate.is_some() || self.off_peak.rate().is_some();
            let excess =
                self.cfg.excess_loss && calibrated && self.round_lost > self.excess_threshold();
            // Losses that come with queueing markedly more often than without
            // it are (partly) overflow: back off like a loss-based flow.
            let correlated = self.last_ack_queued && self.loss_delay_correlated();
            let mut beta = if excess || correlated {
                beta_delay.min(self.cfg.excess_beta)
            } else {
                beta_delay
            };
            let mut probe = false;
            if self.competitive {
                (beta, probe) = self.competitive_response(ev.now, beta);
            }
            self.last_beta = Some(beta);
            if beta < 1.0 {
                if excess && beta_delay >= self.cfg.excess_beta {
                    self.stats.excess_backoffs += 1;
                } else if correlated && beta_delay > self.cfg.excess_beta {
                    self.stats.correlated_backoffs += 1;
                } else {
                    self.stats.delay_backoffs += 1;
                }
                let queue_before = self.queueing_delay().filter(|_| self.queue_detected());
                // Leaving slow start, the delivery measurement has already
                // removed the overshoot: the delivered window is scaled by
                // the queue it met (Equation (1)), not by the excess-loss
                // cap as well. Capping it too left the window at 0.7 BDP
                // after a slow start ended by random loss, and linear
                // increase took seconds to refill the path.
                let delivered_beta = beta.max(beta_delay);
                let window_before = self.backoff(ev.now, beta, delivered_beta);
                // The losses that triggered this backoff are accounted for.
                self.round_lost = 0.0;
                // An Equation (1) backoff should drain the queue this flow
                // built: watch the queue from two RTTs later (in the mode,
                // after a probe). Outside the mode a watch in progress goes
                // on: behind a loss-based flow that keeps the buffer full,
                // overflows come more often than a watch lasts, and
                // restarting it at each one kept hybrid backing off by
                // Equation (1) for seconds before the mode began.
                let watching = self.drain_check.is_some() && !self.competitive;
                if self.cfg.competitive && (!self.competitive || probe) && !watching {
                    if let Some(q) = queue_before {
                        self.drain_check = Some(self.drain_check_after(ev.now, q, window_before));
                    }
                }
            } else {
                self.stats.ignored_loss_events += 1;
            }
        }

        // In competitive mode the queue is another flow's: its delay says
        // nothing about this flow's slow start, which ends on loss.
        if self.slow_start && self.cfg.hystart && !self.competitive {
            // Delay increase: the minimum RTT of the current round (after 8
            // samples) exceeds the previous round's by max(4 ms, RTT/8)
            // (capped at 16 ms), or the last 8 samples exceed RTTmin by as
            // much.
            let thresh = hystart_threshold;
            let round_rise = match (self.hs_cur_min, self.hs_last_min) {
                (Some(cur), Some(last)) if self.hs_samples >= 8 => cur >= last + thresh(last),
                _ => false,
            };
            // The last 8 samples all above RTTmin + threshold: a queue has
            // been building for 8 packet arrivals (catches the rise within
            // a round, where the round minimum lags by a round).
            let last_samples = self
                .hs_recent
                .iter()
                .min()
                .copied()
                .filter(|_| self.hs_recent.len() == HS_SAMPLES);
            let sustained_rise = match (self.rtt_min.get(), last_samples) {
                (Some(min), Some(recent)) => recent > min + thresh(min),
                _ => false,
            };
            if round_rise || sustained_rise {
                // The window doubled during the RTT the delay signal took to
                // arrive: fall back to the estimated BDP (never below what
                // the last round delivered or the initial window).
                if let Some(bdp) = self.bdp_estimate() {
                    let floor = self
                        .delivered_per_round()
                        .unwrap_or(0.0)
                        .max(self.cfg.common.initial_window());
                    self.cwnd = self.cwnd.min(bdp.max(floor));
                }
                self.slow_start = false;
                self.ssthresh = self.cwnd;
                self.last_backoff_at = Some(ev.now);
                self.stats.hystart_exits += 1;
            }
        }

        if self.queue_detected() {
            self.ramp = 1.0;
            self.round_queued = true;
        }
        if cwnd_limited(
            ev.prior_in_flight,
            self.cwnd,
            self.cfg.common.mss,
            self.slow_start,
        ) && self.recheck.is_none()
        {
            self.round_limited = true;
            let alpha = self.cfg.alpha * self.increase_scale() * self.ramp.min(self.ramp_max());
            for a in ev.acked {
                if self.slow_start {
                    self.cwnd += a.bytes as f64;
                } else if self.cfg.cubic_increase || self.competitive {
                    let mut w = self.cwnd / mss;
                    let rtt = self.rtt_min.get().unwrap_or(self.srtt);
                    self.cubic.on_ack(ev.now, rtt, &mut w, a.bytes as f64 / mss);
                    self.cwnd = w * mss;
                } else {
                    self.ai.on_ack(&mut self.cwnd, a.bytes, alpha * mss);
                }
            }
        }

        if let (Some(end), Some(largest)) = (self.round_end, ev.acked.last().map(|a| a.pkt_num)) {
            if largest >= end {
                self.end_round(ev.now, ev.prior_in_flight);
            }
        }
    }

    /// Persistent congestion (RFC 9002 section 7.6.2): the window drops to
    /// the minimum and slow start begins again, as in RFC 9002 and unlike
    /// TCP's RTO without halving the slow-start threshold, which hybrid's
    /// slow start does not use: it ends on delay or excess loss. After an
    /// outage or a lost tail under random loss the path is usually as wide
    /// as before; congestion avoidance from half a window would need
    /// seconds to find that out.
    fn on_retransmission_timeout(&mut self, packets_retransmitted: bool) {
        if packets_retransmitted {
            self.cwnd = self.cfg.common.min_window();
            self.slow_start = true;
            self.recheck = None;
            self.recheck_due = None;
            self.drain_check = None;
            self.entry_window = None;
            self.ramp = 1.0;
            self.queue_full_at = None;
            self.ai.reset();
            self.cubic.reset();
            // What was sent before the collapse belongs to this episode:
            // when the path comes back, the first acknowledgement declares
            // the packets of the outage lost, and they must not end the
            // new slow start (they did, and hybrid then grew linearly from
            // the minimum window for seconds).
            self.send.start_recovery();
        }
    }

    window_accessors!();

    fn pacing_rate(&self, _bif: usize) -> Option<u64> {
        Some(slow_start_aware_rate(
            self.cwnd,
            self.srtt,
            self.cfg.pacing_gain,
            self.slow_start,
        ))
    }

    fn state_str(&self) -> &'static str {
        if self.recheck.is_some() {
            return "competitive_recheck";
        }
        match state_name(self.slow_start, self.send.in_recovery()) {
            "congestion_avoidance" if self.competitive => "competitive",
            s => s,
        }
    }

    fn on_coding_feedback(&mut self, _now: Instant, feedback: &CodingFeedback<'_>) {
        match *feedback {
            CodingFeedback::Recovered { pkt_nums, .. } => self.recovered += pkt_nums.len() as f64,
            CodingFeedback::Unrecovered { pkt_nums } => self.unrecovered += pkt_nums.len() as f64,
            CodingFeedback::ErasureRate { rate } => {
                if rate.is_finite() {
                    self.coding_rate = Some(rate.clamp(0.0, 1.0));
                }
            }
            CodingFeedback::DofRtt { sample } => self.dof_rtt = Some(sample),
        }
    }
}
