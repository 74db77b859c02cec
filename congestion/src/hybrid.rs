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
//!    increase. On a buffer known to be shallow (item 10) it also follows
//!    a backoff as deep as CUBIC's, where the queue stays below the
//!    tolerance: CUBIC's 0.7 comes with CUBIC's Reno-friendly 0.53.
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

mod capacity;
mod competitive;
mod config;
mod loss;
mod shallow;
mod share;

use std::time::{Duration, Instant};

use capacity::Capacity;
use competitive::{CutWatch, DrainCheck, Recheck};
pub use config::HybridConfig;
use loss::LossRate;
use share::SHARE_CATCHUP_RTTS;

use crate::filter::{StepMin, WindowedMin};
use crate::growth::{AdditiveIncrease, CubicGrowth};
use crate::state_name;
use crate::{
    cwnd_limited, slow_start_aware_rate, CodingFeedback, CongestionEvent, Controller, SendState,
};

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
    /// Backoffs by Equation (1) of [`HybridConfig::shallow_guard`] (those
    /// made as a drain probe count there too).
    pub guard_backoffs: u64,
    /// Drain watches outside the competitive mode that found the queue
    /// held (another flow's: the mode is entered or rechecked) ...
    pub watches_held: u64,
    /// ... that found it drained ...
    pub watches_drained: u64,
    /// ... and that found it held, but on a path with random loss, where
    /// the mode is not entered (see [`Hybrid::random_loss_free`]).
    pub watches_lossy: u64,
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
    /// Congestion events skipped in the competitive mode because this
    /// flow's share was below another's ([`HybridConfig::competitive_share_balance`]).
    pub share_skips: u64,
    /// ACK events in the competitive mode at which the window gave back
    /// instead of growing, this flow's capacity share being ahead of the
    /// rest's
    /// ([`HybridConfig::competitive_share_balance`]).
    pub share_holds: u64,
    /// Rechecks started by a loss of a packet sent after a slow-start exit
    /// on delay ([`HybridConfig::competitive_start_entry`]).
    pub start_entries: u64,
    /// Entries into the competitive mode because the capacity share read
    /// this flow below a quarter ([`HybridConfig::competitive_share_entry`]).
    pub share_entries: u64,
    /// Entries into the competitive mode because the queue came back soon
    /// after a recheck read it drained
    /// ([`HybridConfig::competitive_refill_entry`]).
    pub refill_entries: u64,
    /// Times the share balance counted one more flow sharing the bottleneck
    /// ([`HybridConfig::competitive_share_flows`]).
    pub share_flows_raised: u64,
    /// Persistent congestion: the window fell to the minimum.
    pub persistent_congestion: u64,
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
    /// Windowed maximum of the RTT samples (queue peaks and jitter), each
    /// sample first held against the minimum of the last
    /// `srtt / RAW_SPIKE_DIVISOR` (`rtt_spike`): a queue peak lasts that long,
    /// a batch of ACKs processed late does not. The queue range of the
    /// tolerance, the sympathetic backoff and the shallow-buffer test.
    rtt_raw_max: crate::filter::WindowedMax,
    rtt_spike: WindowedMin<Duration>,
    /// Windowed maximum of the RTT levels that held for
    /// `srtt / RAW_SPIKE_DIVISOR` (`rtt_held`), the value before a gap in
    /// the samples included: the top of the queue range for the peak
    /// threshold (loss classification).
    rtt_peak_max: crate::filter::WindowedMax,
    rtt_held: StepMin<Duration>,
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
    /// Whether the newest acknowledged packet met a queue (a lost packet's
    /// class under random loss, or when its successor is not remembered).
    last_ack_queued: bool,
    /// The last `ACKED_RTTS` acknowledged packets and their RTTs: without
    /// random loss a lost packet is classified by its successor's (the
    /// next packet number acknowledged), which met the queue the loss met.
    acked_rtts: std::collections::VecDeque<(u64, Duration)>,
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
    /// The last drain watch outside the mode: the smallest queueing delay
    /// it saw less this flow's regrowth, and the threshold it was held to.
    last_watch: Option<(Duration, Duration)>,
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
    /// When slow start last ended.
    start_exit_at: Option<Instant>,
    /// Whether the last backoff answered slow start's overshoot (in slow
    /// start or within two sRTT after it ended).
    start_backoff: bool,
    /// Since when no queue has been detected (competitive mode's exit).
    queue_empty_since: Option<Instant>,
    /// Factor on the additive increase from [`HybridConfig::ramp`].
    ramp: f64,
    /// Whether a queue was detected (or the window reduced) in the current
    /// round.
    round_queued: bool,
    /// Whether the window limited sending at some ACK of the current round.
    round_limited: bool,
    /// When the queue level last reached half the range on a shallow
    /// buffer (the sympathetic backoff).
    queue_full_at: Option<Instant>,
    /// The raw queueing delay (latest RTT sample over RTTmin) averaged
    /// over time, time constant `SYMPATHETIC_MEAN_TAU` sRTT, and when it
    /// was last updated (the sympathetic backoff's queue level).
    queue_mean: Option<(Instant, Duration)>,
    /// When the window was last reduced.
    last_backoff_at: Option<Instant>,
    /// The last backoff of [`HybridConfig::shallow_guard`].
    guard_at: Option<Instant>,
    /// When a loss last met a queue peak.
    overflow_at: Option<Instant>,
    /// Since when the capacity share has read this flow below
    /// `SMALL_SHARE` outside the competitive mode
    /// ([`HybridConfig::competitive_share_entry`]).
    small_share_since: Option<Instant>,
    /// Whether paced pairs are sent outside the competitive mode, or why
    /// not (see [`Hybrid::pairs_outside_at`]).
    pairs_outside: PairsOff,
    /// Whether the window limited sending in the previous round.
    prev_round_limited: bool,
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
    /// After a recheck read the queue drained: when, the window then and
    /// the queue before the recheck's cut
    /// ([`HybridConfig::competitive_refill_entry`]).
    cleared: Option<(Instant, f64, Duration)>,
    /// Share balance ([`HybridConfig::competitive_share_balance`]): this
    /// flow's share of the bytes in flight (when measured, the share, the
    /// window then) and the last reducing flow's (when, the share).
    own_share: Option<(Instant, f64, f64)>,
    other_share: Option<(Instant, f64)>,
    /// The window after the recheck that measured `own_share`.
    share_base: f64,
    /// The last slow-start exit on delay: when, the largest packet number
    /// sent then, and the window before the exit's cut
    /// ([`HybridConfig::competitive_start_entry`]).
    hs_exit: Option<(Instant, u64, f64)>,
    /// Packets sent (its parity places a packet in its pair,
    /// [`HybridConfig::paced_pairs`]).
    sent_count: u64,
    /// The bottleneck's capacity from ACK dispersion, and this flow's
    /// delivery rate, an exponential average over time with time constant
    /// `OWN_RATE_RTTS` sRTT (at least `OWN_RATE_MIN_TAU`), and when it was
    /// last updated ([`HybridConfig::competitive_capacity_share`]).
    capacity: Capacity,
    own_rate: Option<f64>,
    own_rate_at: Option<Instant>,
    /// The largest of that rate over the last 10 s: a capacity estimate
    /// below it is wrong (ACK jitter or delayed ACKs stretch the gaps).
    own_rate_max: crate::filter::WindowedMax,
    /// Packets acknowledged per ACK event, averaged over about 64 events:
    /// the capacity share needs ACKs of single packets.
    packets_per_ack: f64,
    /// Highest filtered queueing delay since the last reduction, and when.
    queue_peak: Option<(Instant, Duration)>,
    /// A fall of the queue below `RECIPROCITY_DROP` of the peak without a
    /// backoff of this flow: (when to confirm, the peak).
    drop_watch: Option<(Instant, Duration)>,
    /// Packets lost and packets decided (lost or acknowledged), each an
    /// exponential average over time (`LOSS_FRACTION_TAU`), and when they
    /// were last updated: the recent loss fraction.
    loss_avg: (f64, f64, Option<Instant>),
    /// [`HybridConfig::competitive_share_flows`]: the flows (this one
    /// included) the share balance takes to share the bottleneck, ...
    share_flows: f64,
    /// ... the capacity share at the last progress check and when, ...
    share_check: Option<(Instant, f64)>,
    /// ... and when `share_flows` was last raised.
    share_flows_at: Option<Instant>,
}

/// The queue range's maximum takes the minimum RTT of the last
/// `srtt / RAW_SPIKE_DIVISOR`: on the emulated link, batches of ACKs
/// processed up to 13 ms late (mostly within 1 ms) otherwise set the
/// range. sRTT/16 also worked there, but in the simulator it trimmed the
/// short peaks of an unpaced flow's bursts as well.
const RAW_SPIKE_DIVISOR: u32 = 32;

/// Acknowledged packets remembered to classify a lost packet by its
/// successor.
const ACKED_RTTS: usize = 64;

/// Time constant of this flow's delivery rate for its capacity share, in
/// smoothed RTTs, and its floor.
const OWN_RATE_RTTS: u32 = 8;
const OWN_RATE_MIN_TAU: Duration = Duration::from_millis(250);

/// Time constant of the recent loss fraction ([`Hybrid::loss_fraction`]).
const LOSS_FRACTION_TAU: Duration = Duration::from_secs(1);

/// HyStart++'s delay-increase threshold for a base RTT:
/// `clamp(base / 8, 4 ms, 16 ms)`.
fn hystart_threshold(base: Duration) -> Duration {
    (base / 8).clamp(Duration::from_millis(4), Duration::from_millis(16))
}

/// ACK events kept for the short-term delivery-rate estimate.
const ACK_HISTORY: usize = 16;

/// Whether paced pairs are sent outside the competitive mode
/// ([`Hybrid::pairs_outside_at`]), or the first condition that keeps them
/// off; the `pairs_off` figure of `nc:cc_state` outside the mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PairsOff {
    /// Sent.
    Sent = 0,
    /// The share entry is off.
    ShareEntryOff = 1,
    /// In slow start.
    SlowStart = 2,
    /// ACK events acknowledge more than 1.5 packets on average.
    AckBatches = 3,
    /// Random loss measured (and losses do not correlate with queue peaks).
    RandomLoss = 4,
    /// The queue range is below 0.15 RTTmin.
    NarrowRange = 5,
    /// No loss met a queue peak within `queue_range_window`.
    NoOverflow = 6,
}

/// With [`HybridConfig::paced_pairs`], the second packet of a pair follows
/// the first after this fraction of the mean gap.
const PAIR_GAP_DIVISOR: f64 = 16.0;

/// [`HybridConfig::friendly_increase_shallow`] follows backoffs at least
/// this deep: a loss-based flow's (CUBIC's 0.7, from the correlation test
/// or the sympathetic backoff), not Equation (1)'s few per cent.
const SHALLOW_FRIENDLY_BETA: f64 = 0.75;

/// [`Hybrid::wide_queue_range`]: the narrowest queue range, as a fraction
/// of RTTmin, on which pairs are sent outside the competitive mode and the
/// refill entry may begin the mode.
const WIDE_RANGE: f64 = 0.15;

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
            rtt_peak_max: crate::filter::WindowedMax::new(cfg.queue_range_window),
            rtt_spike: WindowedMin::new(cfg.common.initial_rtt / RAW_SPIKE_DIVISOR),
            rtt_held: StepMin::new(cfg.common.initial_rtt / RAW_SPIKE_DIVISOR),
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
            acked_rtts: std::collections::VecDeque::with_capacity(ACKED_RTTS),
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
            last_watch: None,
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
            start_exit_at: None,
            start_backoff: false,
            queue_empty_since: None,
            ramp: 1.0,
            round_queued: false,
            round_limited: false,
            queue_full_at: None,
            queue_mean: None,
            last_backoff_at: None,
            guard_at: None,
            overflow_at: None,
            small_share_since: None,
            pairs_outside: PairsOff::SlowStart,
            prev_round_limited: false,
            recheck: None,
            recheck_due: None,
            queue_low_since_backoff: None,
            rechecked_at: None,
            own_cuts: 0,
            their_cuts: 0,
            cut_watch: None,
            cleared: None,
            own_share: None,
            other_share: None,
            share_base: 0.0,
            queue_peak: None,
            drop_watch: None,
            hs_exit: None,
            sent_count: 0,
            capacity: Capacity::new(),
            own_rate: None,
            own_rate_at: None,
            own_rate_max: crate::filter::WindowedMax::new(Duration::from_secs(10)),
            packets_per_ack: 1.0,
            loss_avg: (0.0, 0.0, None),
            share_flows: 2.0,
            share_check: None,
            share_flows_at: None,
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
    /// at least 0.1) while a queue is detected without random loss, or on a
    /// buffer known to be shallow after a backoff of at most
    /// `SHALLOW_FRIENDLY_BETA` ([`HybridConfig::friendly_increase_shallow`])
    /// that did not answer slow start's overshoot (after which CUBIC regrows
    /// along its cubic curve, faster than Reno); else 1. Under random loss
    /// the queue-free losses set the pace, and a slower increase there cost
    /// the shorter-RTT flow half its share (simulator, 40 vs 80 ms at 0.5 %
    /// loss).
    pub fn increase_scale(&self, now: Instant) -> f64 {
        let shallow = self.cfg.friendly_increase_shallow
            && self.backoff_beta <= SHALLOW_FRIENDLY_BETA
            && !self.start_backoff
            && self.shallow_buffer(now);
        if !self.cfg.friendly_increase
            || !(self.queue_detected() || shallow)
            || !self.random_loss_free()
        {
            return 1.0;
        }
        let b = self.backoff_beta;
        (3.0 * (1.0 - b) / (1.0 + b)).clamp(0.1, 1.0)
    }

    /// Whether to send paced pairs outside the competitive mode (`Sent`, or
    /// the first condition that fails)
    /// ([`HybridConfig::competitive_share_entry`]): in congestion avoidance,
    /// with ACKs of single packets, after a loss met a queue peak within
    /// `queue_range_window`, on a queue range of at least
    /// `WIDE_RANGE` of RTTmin, on a path free of random loss or whose losses
    /// correlate with queue peaks ([`Hybrid::losses_at_peaks`]; where the
    /// share entry is off; with pairs there the simulator's RTT mix at
    /// 0.5 % loss on a 10 ms buffer, appendix Table 4, went from 1.48 to
    /// 2.19, and 1.81 without them, three seeds each). Behind another flow's standing queue
    /// this flow's own queue says little (its RTTmin includes the other
    /// flow's), and only the capacity estimate, which needs the pairs,
    /// tells that the other flow holds the link. Not on narrower ranges: on
    /// a 4 ms buffer the pairs' bursts cost hybrid its deference to CUBIC
    /// (simulator: 1.74 times CUBIC's share in one start offset of ten).
    pub(super) fn pairs_outside_at(&self, now: Instant) -> PairsOff {
        if !self.cfg.competitive_share_entry {
            PairsOff::ShareEntryOff
        } else if self.slow_start {
            PairsOff::SlowStart
        } else if self.packets_per_ack > share::MAX_PACKETS_PER_ACK {
            PairsOff::AckBatches
        } else if !self.losses_at_peaks() {
            PairsOff::RandomLoss
        } else if !self.wide_queue_range() {
            PairsOff::NarrowRange
        } else if self
            .overflow_at
            .is_none_or(|at| now.saturating_duration_since(at) > self.cfg.queue_range_window)
        {
            PairsOff::NoOverflow
        } else {
            PairsOff::Sent
        }
    }

    /// Whether the queue range seen in the last `queue_range_window` is at
    /// least `WIDE_RANGE` of RTTmin: wider than a 4 ms buffer on a
    /// 40 ms path, as narrow as the dips of a CUBIC flow's standing queue
    /// that a joiner sees (about 0.4 RTTmin).
    pub(super) fn wide_queue_range(&self) -> bool {
        let (Some(min), Some(max)) = (self.rtt_min.get(), self.rtt_raw_max.get()) else {
            return false;
        };
        Duration::from_secs_f64(max).saturating_sub(min) >= min.mul_f64(WIDE_RANGE)
    }

    /// Whether the recent RTT shows queueing beyond the tolerance.
    pub fn queue_detected(&self) -> bool {
        self.queueing_delay()
            .is_some_and(|q| q > self.queue_tolerance())
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
        self.end_round_losses(total);
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
        self.prev_round_limited = self.round_limited;
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

    /// Adds an ACK event's lost and acknowledged packets to the recent
    /// loss fraction.
    fn update_loss_fraction(&mut self, now: Instant, lost: f64, acked: f64) {
        let (l, d, at) = self.loss_avg;
        let decay = at.map_or(0.0, |t| {
            (-now.saturating_duration_since(t).as_secs_f64() / LOSS_FRACTION_TAU.as_secs_f64())
                .exp()
        });
        self.loss_avg = (l * decay + lost, d * decay + lost + acked, Some(now));
    }

    /// The fraction of the packets decided over about the last
    /// `LOSS_FRACTION_TAU` that were lost (whatever the cause).
    pub fn loss_fraction(&self) -> f64 {
        let (l, d, _) = self.loss_avg;
        if d > 0.0 {
            l / d
        } else {
            0.0
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
        self.start_backoff = self.slow_start
            || self
                .start_exit_at
                .is_some_and(|t| now.saturating_duration_since(t) <= self.srtt * 2);
        if self.slow_start {
            self.start_exit_at = Some(now);
        }
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
        if !self.competitive {
            out("pairs_off", self.pairs_outside as u8 as f64);
        }
        // The history so far (counters that moved): why the window was
        // cut, and the competitive mode's steps.
        let st = &self.stats;
        for (name, n) in [
            ("excess_backoffs", st.excess_backoffs),
            ("correlated_backoffs", st.correlated_backoffs),
            ("sympathetic_backoffs", st.sympathetic_backoffs),
            ("start_entries", st.start_entries),
            ("share_entries", st.share_entries),
            ("refill_entries", st.refill_entries),
            ("share_flows_raised", st.share_flows_raised),
            ("competitive_rechecks", st.competitive_rechecks),
            ("competitive_cleared", st.competitive_cleared),
            ("competitive_entries", st.competitive_entries),
            ("drain_probes", st.drain_probes),
            ("guard_backoffs", st.guard_backoffs),
            ("watches_held", st.watches_held),
            ("watches_drained", st.watches_drained),
            ("watches_lossy", st.watches_lossy),
            ("persistent_congestion", st.persistent_congestion),
        ] {
            if n > 0 {
                out(name, n as f64);
            }
        }
        if let Some((excess, threshold)) = self.last_watch {
            out("watch_excess_ms", excess.as_secs_f64() * 1e3);
            out("watch_threshold_ms", threshold.as_secs_f64() * 1e3);
        }
        out("erasure_rate", self.erasure_rate());
        out("loss_fraction", self.loss_fraction());
        if let Some(r) = self.off_peak.rate() {
            out("off_peak_loss", r);
        }
        out("excess_threshold", self.excess_threshold());
        out("loss_dispersion", self.loss_dispersion());
        out("ramp", self.ramp.min(self.ramp_max()));
        if let Some(c) = self.capacity.estimate() {
            out("capacity_mbps", c * 8e-6);
        }
        if let Some(s) = self.capacity_share() {
            out("capacity_share", s);
        }
        if self.competitive {
            out("own_backoffs", self.own_cuts as f64);
            out("other_reductions", self.their_cuts as f64);
            out("share_flows", self.share_flows);
            if let Some(s) = self.own_share_now() {
                out("own_share", s);
            }
            if let Some((_, s)) = self.other_share {
                out("other_share", s);
            }
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
        self.sent_count += 1;
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
            self.rtt_spike
                .set_window(ev.rtt.smoothed / RAW_SPIKE_DIVISOR);
            self.rtt_spike.update(ev.now, ev.rtt.latest);
            let held = self.rtt_spike.get().unwrap_or(ev.rtt.latest);
            self.rtt_raw_max.update(ev.now, held.as_secs_f64());
            self.rtt_held
                .set_window(ev.rtt.smoothed / RAW_SPIKE_DIVISOR);
            if let Some(level) = self.rtt_held.update(ev.now, ev.rtt.latest) {
                self.rtt_peak_max.update(ev.now, level.as_secs_f64());
            }
            self.update_queue_mean(ev.now, ev.rtt.latest);
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
        self.update_loss_fraction(ev.now, ev.lost.len() as f64, ev.acked.len() as f64);
        if !ev.acked.is_empty() {
            self.acked_bytes += ev.acked.iter().map(|a| a.bytes as u64).sum::<u64>();
            if self.ack_history.len() == ACK_HISTORY {
                self.ack_history.pop_front();
            }
            self.ack_history.push_back((ev.now, self.acked_bytes));
            if self.cfg.competitive_capacity_share {
                // In the competitive mode another flow holds the queue,
                // whatever this flow's queue reading: joined behind it, its
                // RTTmin includes part of that queue, and the reading often
                // fell below the tolerance, leaving the share balance
                // without an estimate for seconds. With the share entry,
                // which reads the capacity outside the mode, samples are
                // taken throughout: the spread test (the bottleneck spread
                // the pair) keeps out gaps that are this flow's own pacing.
                let queued =
                    self.queue_detected() || self.competitive || self.cfg.competitive_share_entry;
                self.capacity.on_ack(ev.now, ev.acked, queued);
                self.packets_per_ack += (ev.acked.len() as f64 - self.packets_per_ack) / 64.0;
                // Weighted by time, not by ACK event: a per-event average
                // leans towards the busy moments, which have more events
                // (on the link it read 20-25 % above the rate sent).
                let bytes: usize = ev.acked.iter().map(|a| a.bytes).sum();
                let tau = (self.srtt * OWN_RATE_RTTS).max(OWN_RATE_MIN_TAU);
                match self.own_rate_at {
                    Some(t) => {
                        let dt = ev.now.saturating_duration_since(t).as_secs_f64();
                        let decay = (-dt / tau.as_secs_f64()).exp();
                        let avg = self.own_rate.get_or_insert(0.0);
                        *avg = *avg * decay + bytes as f64 / tau.as_secs_f64();
                    }
                    None => self.own_rate = self.delivery_rate(),
                }
                self.own_rate_at = Some(ev.now);
                if let Some(r) = self.own_rate {
                    self.own_rate_max.update(ev.now, r);
                }
            }
        }
        let mss = self.cfg.common.mss as f64;
        // Classify packets by the queue they met: an acknowledged packet by
        // its own RTT, a lost one by its successor's or the newest
        // acknowledged packet's (below).
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
        for a in ev.acked {
            if self.acked_rtts.len() == ACKED_RTTS {
                self.acked_rtts.pop_front();
            }
            self.acked_rtts
                .push_back((a.pkt_num, ev.now.saturating_duration_since(a.time_sent)));
        }
        // Without random loss a lost packet met the queue its successor
        // met (the next packet number acknowledged); under random loss the
        // newest acknowledged packet's, as item 14 was tuned with
        // (docs/congestion.md §3.2 item 16).
        let by_successor = self.random_loss_free();
        let (mut lost_q, mut lost_c) = (0.0, 0.0);
        for l in ev.lost {
            let succ = by_successor
                .then(|| {
                    self.acked_rtts
                        .iter()
                        .filter(|(n, _)| *n > l.pkt_num)
                        .min_by_key(|(n, _)| *n)
                        .map(|&(_, rtt)| met_queue(rtt))
                })
                .flatten();
            if succ.unwrap_or(self.last_ack_queued) {
                lost_q += 1.0;
            } else {
                lost_c += 1.0;
            }
        }
        let loss_queued = lost_q > 0.0;
        if loss_queued {
            self.overflow_at = Some(ev.now);
        }
        self.round_q = (self.round_q.0 + lost_q, self.round_q.1 + lost_q);
        self.round_c = (self.round_c.0 + lost_c, self.round_c.1 + lost_c);
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
            self.start_entry(ev);
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
            if self.cfg.random_loss_peak_backoff && !self.random_loss_free() && !loss_queued {
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
            let correlated = loss_queued && self.loss_delay_correlated();
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
                self.hs_exit = self
                    .send
                    .largest_sent
                    .map(|l| (ev.now, l, self.cwnd))
                    .filter(|_| self.cfg.competitive && self.cfg.competitive_start_entry);
                if let Some(bdp) = self.bdp_estimate() {
                    let floor = self
                        .delivered_per_round()
                        .unwrap_or(0.0)
                        .max(self.cfg.common.initial_window());
                    self.cwnd = self.cwnd.min(bdp.max(floor));
                }
                self.slow_start = false;
                self.start_exit_at = Some(ev.now);
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
            let alpha =
                self.cfg.alpha * self.increase_scale(ev.now) * self.ramp.min(self.ramp_max());
            let ahead = self
                .share_ahead()
                .filter(|_| self.competitive && !self.slow_start);
            if let Some(target) = ahead {
                // Give back towards the target, as fast as the share balance
                // catches up; a new CUBIC epoch once growth resumes.
                let acked: usize = ev.acked.iter().map(|a| a.bytes).sum();
                let give = (self.cwnd - target) / (SHARE_CATCHUP_RTTS * self.cwnd) * acked as f64;
                self.cwnd = (self.cwnd - give.max(0.0)).max(self.cfg.common.min_window());
                self.cubic.reset();
                self.stats.share_holds += 1;
            }
            for a in ev.acked.iter().filter(|_| ahead.is_none()) {
                if self.slow_start {
                    self.cwnd += a.bytes as f64;
                } else if self.cfg.cubic_increase || self.competitive {
                    let mut w = self.cwnd / mss;
                    let rtt = self.rtt_min.get().unwrap_or(self.srtt);
                    self.cubic.on_ack(ev.now, rtt, &mut w, a.bytes as f64 / mss);
                    self.cwnd = w * mss + self.share_catchup(ev.now, a.bytes as f64);
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
            self.stats.persistent_congestion += 1;
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

    fn mean_pacing_rate(&self, _bif: usize) -> Option<u64> {
        Some(slow_start_aware_rate(
            self.cwnd,
            self.srtt,
            self.cfg.pacing_gain,
            self.slow_start,
        ))
    }

    fn pacing_rate(&self, bif: usize) -> Option<u64> {
        let rate = self.mean_pacing_rate(bif)?;
        if !self.cfg.paced_pairs || !(self.competitive || self.pairs_outside == PairsOff::Sent) {
            return Some(rate);
        }
        // Asked right after a packet is sent, for the gap to the next one:
        // after the first of a pair almost none, after the second the rest
        // of two packets' time, so the average rate is unchanged.
        let r = rate as f64;
        Some(if self.sent_count % 2 == 1 {
            r * PAIR_GAP_DIVISOR
        } else {
            r * PAIR_GAP_DIVISOR / (2.0 * PAIR_GAP_DIVISOR - 1.0)
        } as u64)
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
