//! Congestion controllers for QUIC-NC (network-coded QUIC on top of quiche).
//!
//! This crate is *sans-IO*: every controller is a plain state machine that is
//! driven by explicit calls carrying `now: Instant`. It contains no quiche
//! types; the [`Controller`] trait mirrors, method for method, the
//! `CongestionController` hook that our quiche patch series adds (see
//! `docs/congestion.md`), so the adapter in the transport crate is a thin
//! type conversion.
//!
//! Controllers:
//!
//! * [`ctcp::Ctcp`]: AIMD on a token window with the adaptive backoff
//!   `beta = RTTmin / RTT` of Kim et al., "Congestion Control for Coded
//!   Transport Layers" (Equation 1), optionally with a CUBIC-shaped increase.
//! * [`vegas::Vegas`]: TCP Vegas, optionally driven by the coding layer's
//!   degree-of-freedom (DOF) delivery RTT as TCP/NC prescribes.
//! * [`hybrid::Hybrid`]: our default for coded connections; CTCP's adaptive
//!   backoff plus robust queueing-delay estimation, an excess-loss detector
//!   calibrated by the coding layer's erasure information, and pacing.
//! * [`aimd::Aimd`] and [`cubic::Cubic`]: reference loss-based baselines
//!   (Reno-like AIMD(1, 0.5) and a CUBIC-like model) used as competing flows
//!   in the simulator.
//!
//! [`Algorithm`] names them (`"hybrid".parse::<Algorithm>()`) and builds any
//! of them as a `Box<dyn Controller>` for the transport's factory.
//!
//! [`sim`] is a deterministic packet-level simulator in virtual time used by
//! the tests and by `examples/simtable.rs`.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// The [`Controller`] methods that are the same for every window-based
/// controller of this crate: expands inside `impl Controller for X`, where
/// `X` has the fields `cwnd: f64`, `ssthresh: f64`, `send: SendState` and
/// `cfg` (with `cfg.common: CommonConfig`), and `X::new(cfg)`.
macro_rules! window_accessors {
    () => {
        fn on_connection_migration(&mut self) {
            *self = Self::new(self.cfg);
        }

        fn update_mss(&mut self, mss: usize) {
            self.cfg.common.mss = mss;
        }

        fn limit_cwnd(&mut self, max_cwnd: usize) {
            self.cwnd = self.cwnd.min(max_cwnd as f64);
        }

        fn congestion_window(&self) -> usize {
            self.cwnd as usize
        }

        fn is_in_recovery(&self) -> bool {
            self.send.in_recovery()
        }

        fn ssthresh(&self) -> Option<usize> {
            self.ssthresh.is_finite().then_some(self.ssthresh as usize)
        }
    };
}

/// `on_packet_sent` for controllers that only record the packet number
/// (in `send: SendState`) to gate one backoff per round trip.
macro_rules! record_sent {
    () => {
        fn on_packet_sent(
            &mut self,
            _now: Instant,
            _bif: usize,
            pkt_num: u64,
            _bytes: usize,
            _rtx: bool,
        ) {
            self.send.on_sent(pkt_num);
        }
    };
}

pub mod aimd;
pub mod ctcp;
pub mod cubic;
pub mod filter;
pub mod hybrid;
pub mod sim;
pub mod vegas;

mod growth;

pub use aimd::{Aimd, AimdConfig};
pub use ctcp::{Ctcp, CtcpConfig};
pub use cubic::{Cubic, CubicConfig};
pub use hybrid::{Hybrid, HybridConfig};
pub use vegas::{Vegas, VegasConfig};

/// A packet newly acknowledged by the peer, as reported in a [`CongestionEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckedPacket {
    /// Packet number.
    pub pkt_num: u64,
    /// When the packet was sent.
    pub time_sent: Instant,
    /// Size of the packet in bytes (as counted in bytes in flight).
    pub bytes: usize,
}

/// A packet declared lost by loss detection, as reported in a [`CongestionEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostPacket {
    /// Packet number.
    pub pkt_num: u64,
    /// Size of the packet in bytes.
    pub bytes: usize,
}

/// The RTT estimates of the connection's loss-recovery machinery (RFC 9002
/// terms), copied into every [`CongestionEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimates {
    /// The most recent RTT sample (`latest_rtt`).
    pub latest: Duration,
    /// The smoothed RTT (`smoothed_rtt`).
    pub smoothed: Duration,
    /// The minimum RTT seen by the transport (quiche: a 300 s windowed min).
    pub min: Duration,
    /// The RTT variation (`rttvar`).
    pub rttvar: Duration,
    /// The peer's `max_ack_delay`.
    pub max_ack_delay: Duration,
}

impl RttEstimates {
    /// Estimates before any sample: every field set to `initial_rtt`
    /// (`rttvar` to half of it, `max_ack_delay` to zero), as RFC 9002 §5.3.
    pub fn initial(initial_rtt: Duration) -> Self {
        RttEstimates {
            latest: initial_rtt,
            smoothed: initial_rtt,
            min: initial_rtt,
            rttvar: initial_rtt / 2,
            max_ack_delay: Duration::ZERO,
        }
    }
}

/// One combined acknowledgement + loss event, produced after an ACK frame is
/// processed (quiche's gcongestion `on_congestion_event`).
#[derive(Clone, Copy, Debug)]
pub struct CongestionEvent<'a> {
    /// Time the ACK was processed.
    pub now: Instant,
    /// Whether this ACK produced a new RTT sample (`rtt.latest` is fresh).
    pub rtt_updated: bool,
    /// Bytes in flight before the acked and lost packets were removed.
    pub prior_in_flight: usize,
    /// Bytes in flight after this event.
    pub bytes_in_flight: usize,
    /// Packets newly acknowledged, in increasing packet-number order.
    pub acked: &'a [AckedPacket],
    /// Packets newly declared lost, in increasing packet-number order.
    pub lost: &'a [LostPacket],
    /// Smallest packet number not yet acknowledged or declared lost.
    pub least_unacked: u64,
    /// Current RTT estimates (already updated with this ACK's sample).
    pub rtt: RttEstimates,
}

/// Extra information the network-coding layer can feed a controller through
/// [`Controller::on_coding_feedback`]. Controllers may ignore any of it.
///
/// Recovery by the decoder never turns a loss into a non-loss: a controller
/// still sees every lost packet through [`CongestionEvent::lost`] (RFC 9265:
/// coding must not hide congestion). Feedback only adds context.
#[derive(Clone, Copy, Debug)]
pub enum CodingFeedback<'a> {
    /// These packets, earlier reported lost, were recovered by the receiver's
    /// decoder (their degrees of freedom arrived through repair symbols).
    Recovered {
        /// Packet numbers of the recovered packets.
        pkt_nums: &'a [u64],
        /// Total bytes of those packets.
        bytes: usize,
    },
    /// These lost packets could *not* be recovered by the decoder within its
    /// deadline (the coding layer had to retransmit).
    Unrecovered {
        /// Packet numbers of the unrecovered packets.
        pkt_nums: &'a [u64],
    },
    /// A degree-of-freedom delivery RTT sample: time from the first
    /// transmission of a source symbol to the NC_ACK that reports its degree
    /// of freedom as seen (the "effective RTT" of TCP/NC).
    DofRtt {
        /// The sample.
        sample: Duration,
    },
    /// The coding layer's current estimate of the path erasure rate (the
    /// fraction of packets it has to compensate with redundancy), in [0, 1].
    ErasureRate {
        /// The estimate.
        rate: f64,
    },
}

/// An owned [`CodingFeedback`], for queueing feedback between the coding
/// extension and the controller (e.g. when the two live behind different
/// borrows and the adapter delivers the queue at the next congestion event).
#[derive(Clone, Debug, PartialEq)]
pub enum OwnedCodingFeedback {
    /// See [`CodingFeedback::Recovered`].
    Recovered {
        /// Packet numbers of the recovered packets.
        pkt_nums: Vec<u64>,
        /// Total bytes of those packets.
        bytes: usize,
    },
    /// See [`CodingFeedback::Unrecovered`].
    Unrecovered {
        /// Packet numbers of the unrecovered packets.
        pkt_nums: Vec<u64>,
    },
    /// See [`CodingFeedback::DofRtt`].
    DofRtt {
        /// The sample.
        sample: Duration,
    },
    /// See [`CodingFeedback::ErasureRate`].
    ErasureRate {
        /// The estimate.
        rate: f64,
    },
}

impl OwnedCodingFeedback {
    /// Borrow as the [`CodingFeedback`] that [`Controller::on_coding_feedback`] takes.
    pub fn as_feedback(&self) -> CodingFeedback<'_> {
        match self {
            OwnedCodingFeedback::Recovered { pkt_nums, bytes } => CodingFeedback::Recovered {
                pkt_nums,
                bytes: *bytes,
            },
            OwnedCodingFeedback::Unrecovered { pkt_nums } => {
                CodingFeedback::Unrecovered { pkt_nums }
            }
            OwnedCodingFeedback::DofRtt { sample } => CodingFeedback::DofRtt { sample: *sample },
            OwnedCodingFeedback::ErasureRate { rate } => {
                CodingFeedback::ErasureRate { rate: *rate }
            }
        }
    }
}

impl From<CodingFeedback<'_>> for OwnedCodingFeedback {
    fn from(f: CodingFeedback<'_>) -> Self {
        match f {
            CodingFeedback::Recovered { pkt_nums, bytes } => OwnedCodingFeedback::Recovered {
                pkt_nums: pkt_nums.to_vec(),
                bytes,
            },
            CodingFeedback::Unrecovered { pkt_nums } => OwnedCodingFeedback::Unrecovered {
                pkt_nums: pkt_nums.to_vec(),
            },
            CodingFeedback::DofRtt { sample } => OwnedCodingFeedback::DofRtt { sample },
            CodingFeedback::ErasureRate { rate } => OwnedCodingFeedback::ErasureRate { rate },
        }
    }
}

/// A sans-IO congestion controller. The methods map 1:1 onto the
/// `CongestionController` hook of our quiche patch series; optional methods
/// have default bodies.
///
/// Windows and byte counts are in bytes; rates in bytes per second.
pub trait Controller: Send + Sync + Debug {
    /// A packet was sent. `bytes_in_flight` is the value *before* this packet
    /// is added.
    fn on_packet_sent(
        &mut self,
        now: Instant,
        bytes_in_flight: usize,
        pkt_num: u64,
        bytes: usize,
        is_retransmissible: bool,
    );

    /// Acknowledgements and losses from one ACK.
    fn on_congestion_event(&mut self, event: &CongestionEvent<'_>);

    /// A retransmission timeout (persistent congestion) happened.
    /// `packets_retransmitted` is false for a timeout that sent no probes.
    fn on_retransmission_timeout(&mut self, packets_retransmitted: bool) {
        let _ = packets_retransmitted;
    }

    /// A packet was removed from flight without being acked or lost (e.g.
    /// its packet-number space was discarded).
    fn on_packet_neutered(&mut self, pkt_num: u64) {
        let _ = pkt_num;
    }

    /// The sender had nothing to send although the window allowed it.
    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        let _ = bytes_in_flight;
    }

    /// The connection migrated to a new path: forget path state.
    fn on_connection_migration(&mut self) {}

    /// The maximum datagram size changed.
    fn update_mss(&mut self, mss: usize) {
        let _ = mss;
    }

    /// Clamp the window to at most `max_cwnd` bytes (e.g. anti-amplification).
    fn limit_cwnd(&mut self, max_cwnd: usize) {
        let _ = max_cwnd;
    }

    /// Current congestion window in bytes.
    fn congestion_window(&self) -> usize;

    /// Whether the controller is in a recovery period.
    fn is_in_recovery(&self) -> bool {
        false
    }

    /// Whether a new packet may be sent with `bytes_in_flight` outstanding.
    fn can_send(&self, bytes_in_flight: usize) -> bool {
        bytes_in_flight < self.congestion_window()
    }

    /// Whether the sender is using (nearly) all of its window.
    fn is_cwnd_limited(&self, bytes_in_flight: usize) -> bool {
        bytes_in_flight >= self.congestion_window()
    }

    /// Pacing rate in bytes per second, or `None` to leave pacing to the
    /// transport's default.
    fn pacing_rate(&self, bytes_in_flight: usize) -> Option<u64> {
        let _ = bytes_in_flight;
        None
    }

    /// The pacing rate averaged over the next few packets, for logs: a
    /// controller that paces in bursts (hybrid's pairs) answers
    /// [`Controller::pacing_rate`] with the gap to the next packet alone.
    fn mean_pacing_rate(&self, bytes_in_flight: usize) -> Option<u64> {
        self.pacing_rate(bytes_in_flight)
    }

    /// The controller's bandwidth estimate in bytes per second, if it has one.
    fn bandwidth_estimate(&self) -> Option<u64> {
        None
    }

    /// Short name of the current state, for qlog (`"slow_start"`, ...).
    fn state_str(&self) -> &'static str;

    /// Slow-start threshold in bytes, if defined (for qlog).
    fn ssthresh(&self) -> Option<usize> {
        None
    }

    /// Controller-specific state for logs (qlog `quic-nc:cc_state`): calls
    /// `out(name, value)` for each figure, e.g. `("beta", 0.8)`. Default:
    /// nothing beyond the common fields.
    fn metrics(&self, out: &mut dyn FnMut(&'static str, f64)) {
        let _ = out;
    }

    /// Extra information from the network-coding layer. Default: ignored.
    fn on_coding_feedback(&mut self, now: Instant, feedback: &CodingFeedback<'_>) {
        let _ = (now, feedback);
    }
}

/// The controllers of this crate, by name, for the transport's configuration
/// and the quiche adapter's factory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// [`Aimd`] (Reno-like AIMD(1, 0.5)).
    Aimd,
    /// [`Cubic`] (CUBIC-like baseline).
    Cubic,
    /// [`Ctcp`] as published.
    Ctcp,
    /// [`Vegas`] with classic parameters (alpha 2, beta 4, gamma 1).
    Vegas,
    /// [`Vegas`] with the TCP/NC preset ([`VegasConfig::tcp_nc`]).
    VegasTcpNc,
    /// [`Hybrid`], the default for coded connections (competitive mode on).
    Hybrid,
    /// [`Hybrid`] with its competitive mode off
    /// ([`HybridConfig::competitive`]): yields to loss-based flows.
    HybridYield,
}

impl Algorithm {
    /// All algorithms.
    pub const ALL: [Algorithm; 7] = [
        Algorithm::Aimd,
        Algorithm::Cubic,
        Algorithm::Ctcp,
        Algorithm::Vegas,
        Algorithm::VegasTcpNc,
        Algorithm::Hybrid,
        Algorithm::HybridYield,
    ];

    /// The name accepted by [`str::parse`].
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Aimd => "aimd",
            Algorithm::Cubic => "cubic",
            Algorithm::Ctcp => "ctcp",
            Algorithm::Vegas => "vegas",
            Algorithm::VegasTcpNc => "vegas-nc",
            Algorithm::Hybrid => "hybrid",
            Algorithm::HybridYield => "hybrid-yield",
        }
    }

    /// A controller with default parameters and the given common ones.
    pub fn build(self, common: CommonConfig) -> Box<dyn Controller> {
        match self {
            Algorithm::Aimd => Box::new(Aimd::new(AimdConfig {
                common,
                ..Default::default()
            })),
            Algorithm::Cubic => Box::new(Cubic::new(CubicConfig {
                common,
                ..Default::default()
            })),
            Algorithm::Ctcp => Box::new(Ctcp::new(CtcpConfig {
                common,
                ..Default::default()
            })),
            Algorithm::Vegas => Box::new(Vegas::new(VegasConfig {
                common,
                ..Default::default()
            })),
            Algorithm::VegasTcpNc => Box::new(Vegas::new(VegasConfig {
                common,
                ..VegasConfig::tcp_nc()
            })),
            Algorithm::Hybrid => Box::new(Hybrid::new(HybridConfig {
                common,
                ..Default::default()
            })),
            Algorithm::HybridYield => Box::new(Hybrid::new(HybridConfig {
                common,
                competitive: false,
                ..Default::default()
            })),
        }
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown congestion controller {s:?}"))
    }
}

/// Parameters shared by all controllers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommonConfig {
    /// Maximum segment (datagram) size in bytes.
    pub mss: usize,
    /// Initial window in packets.
    pub initial_window_packets: usize,
    /// Minimum window in packets.
    pub min_window_packets: usize,
    /// RTT assumed before the first sample (pacing only).
    pub initial_rtt: Duration,
}

impl Default for CommonConfig {
    fn default() -> Self {
        CommonConfig {
            mss: 1200,
            initial_window_packets: 10,
            min_window_packets: 2,
            initial_rtt: Duration::from_millis(333),
        }
    }
}

impl CommonConfig {
    /// Initial window in bytes.
    pub fn initial_window(&self) -> f64 {
        (self.initial_window_packets * self.mss) as f64
    }

    /// Minimum window in bytes.
    pub fn min_window(&self) -> f64 {
        (self.min_window_packets * self.mss) as f64
    }
}

/// Bookkeeping shared by the window-based controllers: the largest packet
/// number sent, the recovery gate that allows one backoff per RTT, and the
/// last RTT sample.
#[derive(Clone, Debug, Default)]
pub(crate) struct SendState {
    /// Largest packet number passed to `on_packet_sent`.
    pub largest_sent: Option<u64>,
    /// Largest packet number sent when the window was last reduced; a loss of
    /// a packet at or below it does not trigger another reduction.
    pub recovery_pkt: Option<u64>,
    /// Largest packet number acknowledged so far.
    pub largest_acked: Option<u64>,
}

impl SendState {
    pub fn on_sent(&mut self, pkt_num: u64) {
        self.largest_sent = Some(self.largest_sent.map_or(pkt_num, |l| l.max(pkt_num)));
    }

    pub fn on_acked(&mut self, acked: &[AckedPacket]) {
        if let Some(a) = acked.iter().map(|a| a.pkt_num).max() {
            self.largest_acked = Some(self.largest_acked.map_or(a, |l| l.max(a)));
        }
    }

    /// Whether a loss of `pkt_num` may trigger a (new) window reduction.
    pub fn loss_counts(&self, pkt_num: u64) -> bool {
        self.recovery_pkt.is_none_or(|r| pkt_num > r)
    }

    /// Whether an ack of `pkt_num` acknowledges a packet sent before the last
    /// reduction.
    pub fn sent_before_backoff(&self, pkt_num: u64) -> bool {
        self.recovery_pkt.is_some_and(|r| pkt_num <= r)
    }

    /// Record a reduction now: packets sent so far belong to this epoch.
    pub fn start_recovery(&mut self) {
        self.recovery_pkt = self.largest_sent;
    }

    /// In recovery until a packet sent after the last reduction is acked.
    pub fn in_recovery(&self) -> bool {
        match (self.recovery_pkt, self.largest_acked) {
            (Some(r), Some(a)) => a <= r,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

/// Bytes per second for a window over an RTT, times `gain`.
pub(crate) fn rate_of(cwnd: f64, rtt: Duration, gain: f64) -> u64 {
    let secs = rtt.as_secs_f64().max(1e-6);
    (gain * cwnd / secs) as u64
}

/// Pacing rate `gain · cwnd / sRTT`, with the gain raised to at least 2 in
/// slow start so that pacing never holds back the window's doubling.
pub(crate) fn slow_start_aware_rate(cwnd: f64, srtt: Duration, gain: f64, slow_start: bool) -> u64 {
    let gain = if slow_start { gain.max(2.0) } else { gain };
    rate_of(cwnd, srtt, gain)
}

/// The qlog state name of a window-based controller.
pub(crate) fn state_name(slow_start: bool, in_recovery: bool) -> &'static str {
    if slow_start {
        "slow_start"
    } else if in_recovery {
        "recovery"
    } else {
        "congestion_avoidance"
    }
}

/// Retransmission timeout with retransmitted packets (RFC 5681 §3.1 style):
/// `ssthresh = max(factor · cwnd, minimum window)`, `cwnd = minimum window`.
pub(crate) fn collapse_window(
    cwnd: &mut f64,
    ssthresh: &mut f64,
    factor: f64,
    common: &CommonConfig,
) {
    *ssthresh = (*cwnd * factor).max(common.min_window());
    *cwnd = common.min_window();
}

/// Whether the sender was using its window when the acked data was sent,
/// judged from the bytes in flight before the ACK (RFC 9002 §7.8 spirit):
/// in slow start at least half the window, otherwise within 3 MSS of it.
pub(crate) fn cwnd_limited(
    prior_in_flight: usize,
    cwnd: f64,
    mss: usize,
    slow_start: bool,
) -> bool {
    let inflight = prior_in_flight as f64;
    if slow_start {
        inflight * 2.0 >= cwnd
    } else {
        inflight + 3.0 * mss as f64 >= cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_feedback_round_trips() {
        let pkts = [3u64, 5];
        let all = [
            CodingFeedback::Recovered {
                pkt_nums: &pkts,
                bytes: 2400,
            },
            CodingFeedback::Unrecovered { pkt_nums: &pkts },
            CodingFeedback::DofRtt {
                sample: Duration::from_millis(45),
            },
            CodingFeedback::ErasureRate { rate: 0.1 },
        ];
        for f in all {
            let owned = OwnedCodingFeedback::from(f);
            assert_eq!(OwnedCodingFeedback::from(owned.as_feedback()), owned);
        }
    }

    #[test]
    fn algorithm_names_parse() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
            assert_eq!(a.build(CommonConfig::default()).congestion_window(), 12_000);
        }
        assert_eq!("HYBRID".parse::<Algorithm>(), Ok(Algorithm::Hybrid));
        assert!("bbr".parse::<Algorithm>().is_err());
    }

    #[test]
    fn controllers_are_object_safe_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Box<dyn Controller>>();
        let c = CommonConfig::default();
        let all: Vec<Box<dyn Controller>> = vec![
            Box::new(Aimd::new(AimdConfig {
                common: c,
                ..Default::default()
            })),
            Box::new(Cubic::new(CubicConfig {
                common: c,
                ..Default::default()
            })),
            Box::new(Ctcp::new(CtcpConfig {
                common: c,
                ..Default::default()
            })),
            Box::new(Vegas::new(VegasConfig {
                common: c,
                ..Default::default()
            })),
            Box::new(Hybrid::new(HybridConfig {
                common: c,
                ..Default::default()
            })),
        ];
        for cc in &all {
            assert_eq!(cc.congestion_window(), 10 * 1200);
            assert_eq!(cc.state_str(), "slow_start");
            assert!(cc.can_send(0));
            assert!(!cc.can_send(10 * 1200));
        }
    }
}
