//! A small deterministic packet-level simulator in virtual time.
//!
//! Topology: every flow's sender feeds one drop-tail bottleneck (rate,
//! buffer in bytes). I.i.d. random loss hits data packets *before* the
//! bottleneck (as `dummynet` does in the CTCP testbed, so random loss does
//! not reduce the bottleneck capacity) and ACKs on the way back. One-way
//! delays are half the flow's base RTT each way. The receiver ACKs every
//! packet by default ([`AckPolicy`]: or every n-th packet with a delayed-ACK
//! timer, immediately after a gap); an ACK carries everything received so
//! far (QUIC ACK ranges), so a lost ACK only delays information. Senders always have data (a coded
//! stream: losses need no retransmission in the simulator), are ACK-clocked
//! and optionally paced at the controller's `pacing_rate`. Loss detection
//! follows RFC 9002: packet threshold 3, time threshold 9/8·max(sRTT,
//! latest RTT), RTT estimation as in §5, and a PTO that sends two probes
//! (three consecutive PTOs call `on_retransmission_timeout`).
//!
//! A flow can open like a quiche server ([`FlowSpec::quiche_start`]): a
//! loss-free handshake round trip gives the first RTT sample at an empty
//! queue, then the initial window leaves as one unpaced burst (quiche's
//! pacer sends up to 10 packets back to back when nothing is in flight), so
//! it queues itself at the bottleneck. [`Simulation::record_delivery`] keeps a
//! per-flow delivery trace for start-up metrics ([`FlowReport::time_to_rate`],
//! [`FlowReport::time_to_receive`]).
//!
//! Time is an `Instant` base plus `Duration` offsets; nothing depends on the
//! wall clock, and runs are reproducible from the seed.

mod bbr;
mod join;
mod rng;
mod schedule;

pub use bbr::BbrLike;
pub use join::{join_ratios, join_runs, JoinRun};
pub use rng::Rng;
pub use schedule::RateSchedule;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use crate::{
    AckedPacket, CodingFeedback, CommonConfig, CongestionEvent, Controller, LostPacket,
    RttEstimates,
};

/// Bottleneck and loss configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Bottleneck rate in bits per second.
    pub rate_bps: u64,
    /// Drop-tail buffer in bytes (packets waiting, excluding the one in service).
    pub buffer_bytes: usize,
    /// I.i.d. loss probability of data packets (before the bottleneck).
    pub fwd_loss: f64,
    /// I.i.d. loss probability of ACKs.
    pub rev_loss: f64,
    /// PRNG seed.
    pub seed: u64,
    /// Extra delay added to each ACK, uniform in `[0, ack_jitter]` (ACKs may
    /// be reordered; a stale ACK carries no new information).
    pub ack_jitter: Duration,
}

impl LinkConfig {
    /// A link of `mbps` Mbit/s with a buffer of one bandwidth-delay product
    /// for `rtt`, no random loss, seed 1.
    pub fn bdp_buffer(mbps: f64, rtt: Duration) -> Self {
        let rate_bps = (mbps * 1e6) as u64;
        LinkConfig {
            rate_bps,
            buffer_bytes: (rate_bps as f64 / 8.0 * rtt.as_secs_f64()) as usize,
            fwd_loss: 0.0,
            rev_loss: 0.0,
            seed: 1,
            ack_jitter: Duration::ZERO,
        }
    }

    /// The same link with i.i.d. loss `p` on data and `p_ack` on ACKs.
    pub fn with_loss(mut self, p: f64, p_ack: f64) -> Self {
        self.fwd_loss = p;
        self.rev_loss = p_ack;
        self
    }

    /// The same link with ACK-path jitter uniform in `[0, jitter]`.
    pub fn with_ack_jitter(mut self, jitter: Duration) -> Self {
        self.ack_jitter = jitter;
        self
    }

    /// The same link with another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// What the simulated coding layer reports to the controller. The model is
/// an ideal sliding-window random linear code: the sender injects a new
/// source symbol in a fraction `1 - r` of its packets (the others are repair),
/// with redundancy `r` = 1.1 × the measured loss rate + 0.5 %, and every
/// packet the receiver gets is innovative while it has unseen source symbols
/// (so its rank, the DOFs seen, is `min(received, sources sent)`). Every lost
/// packet is reported recovered (congestion drops included: exactly the
/// situation RFC 9265 warns about).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodingModel {
    /// Send `ErasureRate` (the flow's measured loss fraction) after losses.
    pub erasure_rate: bool,
    /// Send `Recovered` for every lost packet when it is declared lost.
    pub recovered: bool,
    /// Send a `DofRtt` sample with every ACK.
    pub dof_rtt: bool,
}

impl CodingModel {
    /// All feedback enabled.
    pub fn full() -> Self {
        CodingModel {
            erasure_rate: true,
            recovered: true,
            dof_rtt: true,
        }
    }
}

/// One flow of a simulation.
#[derive(Debug)]
pub struct FlowSpec {
    /// Label for reports.
    pub name: String,
    /// The controller under test.
    pub controller: Box<dyn Controller>,
    /// Base (propagation) round-trip time.
    pub rtt: Duration,
    /// Start time offset.
    pub start: Duration,
    /// Honour the controller's `pacing_rate`.
    pub pacing: bool,
    /// Packet size in bytes (should match the controller's MSS).
    pub mss: usize,
    /// Coding-layer feedback to generate, if any.
    pub coding: Option<CodingModel>,
    /// ACK policy of this flow's receiver.
    pub acks: AckPolicy,
    /// Packets a paced flow sends back to back when it leaves quiescence
    /// (nothing in flight, not in recovery), at most the window in packets;
    /// the remaining ones are dropped at the first loss. quiche's pacer does
    /// this with 10 (`INITIAL_UNPACED_BURST`), so its initial window leaves
    /// as one burst. 0 (default): every packet is paced.
    pub initial_burst: usize,
    /// Open with a handshake: one loss-free round trip of a single packet
    /// (acknowledged at once) before any data, which gives the controller a
    /// first RTT sample at an empty queue, as a QUIC handshake does.
    pub handshake: bool,
}

/// When the receiver sends ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPolicy {
    /// Send an ACK after this many packets (1 = every packet).
    pub every: usize,
    /// Otherwise send one at most this long after the first unacknowledged
    /// packet. Packets arriving after a gap are acknowledged at once
    /// (RFC 9000 §13.2.1).
    pub max_delay: Duration,
}

impl AckPolicy {
    /// ACK every packet immediately (the default).
    pub fn every_packet() -> Self {
        AckPolicy {
            every: 1,
            max_delay: Duration::ZERO,
        }
    }

    /// quiche's default: every second packet, or after 25 ms.
    pub fn quiche() -> Self {
        AckPolicy {
            every: 2,
            max_delay: Duration::from_millis(25),
        }
    }
}

impl Default for AckPolicy {
    fn default() -> Self {
        AckPolicy::every_packet()
    }
}

impl FlowSpec {
    /// A flow starting at time 0, unpaced, 1200-byte packets, no coding feedback.
    pub fn new(name: &str, controller: Box<dyn Controller>, rtt: Duration) -> Self {
        FlowSpec {
            name: name.to_string(),
            controller,
            rtt,
            start: Duration::ZERO,
            pacing: false,
            mss: 1200,
            coding: None,
            acks: AckPolicy::every_packet(),
            initial_burst: 0,
            handshake: false,
        }
    }

    /// Start like a quiche server after the handshake: a loss-free handshake
    /// round trip ([`FlowSpec::handshake`]), then the initial window as one
    /// unpaced burst of up to 10 packets ([`FlowSpec::initial_burst`]).
    pub fn quiche_start(mut self) -> Self {
        self.handshake = true;
        self.initial_burst = 10;
        self
    }

    /// Use another ACK policy.
    pub fn with_acks(mut self, acks: AckPolicy) -> Self {
        self.acks = acks;
        self
    }

    /// Enable pacing.
    pub fn paced(mut self) -> Self {
        self.pacing = true;
        self
    }

    /// Start later.
    pub fn starting_at(mut self, start: Duration) -> Self {
        self.start = start;
        self
    }

    /// Generate coding feedback.
    pub fn with_coding(mut self, model: CodingModel) -> Self {
        self.coding = Some(model);
        self
    }
}

/// Per-flow results over the measurement interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowReport {
    /// Label.
    pub name: String,
    /// Bytes received by the receiver in the measurement interval.
    pub delivered_bytes: u64,
    /// Receive throughput in bits per second.
    pub throughput_bps: f64,
    /// Packets sent (whole run).
    pub sent: u64,
    /// Packets lost to random loss (whole run).
    pub random_losses: u64,
    /// Packets of this flow dropped by the full queue (whole run).
    pub queue_drops: u64,
    /// Packets declared lost by the sender (whole run).
    pub declared_lost: u64,
    /// Time-averaged congestion window in bytes (measurement interval).
    pub mean_cwnd: f64,
    /// Retransmission timeouts signalled to the controller.
    pub rtos: u64,
    /// Mean smoothed RTT over the measurement interval.
    pub mean_srtt: Duration,
    /// Time averages of the controller's metrics
    /// ([`Controller::metrics`]) over the measurement interval, counting
    /// zero while one is not reported, in the order first reported (a flag
    /// such as hybrid's `competitive` averages to the fraction of time set).
    pub mean_metrics: Vec<(&'static str, f64)>,
    /// With [`Simulation::record_delivery`]: (time, bytes received since the
    /// flow started) every 5 ms from time 0 (whole run). Empty otherwise.
    pub delivery_trace: Vec<(Duration, u64)>,
    /// With [`Simulation::record_metrics`]: the controller's state at each
    /// interval while the flow runs (whole run). Empty otherwise.
    pub metrics_trace: Vec<MetricsSample>,
}

/// One row of [`FlowReport::metrics_trace`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsSample {
    /// Time from the start of the run.
    pub at: Duration,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// The sender's smoothed RTT.
    pub srtt: Duration,
    /// Bytes in the bottleneck queue (all flows).
    pub queue_bytes: usize,
    /// The controller's metrics ([`Controller::metrics`]) at that moment.
    pub metrics: Vec<(&'static str, f64)>,
}

impl FlowReport {
    /// The time average of the controller metric `name`, if it reported one.
    pub fn mean_metric(&self, name: &str) -> Option<f64> {
        self.mean_metrics
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
    }

    /// The first time (from the start of the run) at which the receive rate
    /// averaged over the preceding `window` reached `rate_bps`; needs
    /// [`Simulation::record_delivery`].
    pub fn time_to_rate(&self, rate_bps: f64, window: Duration) -> Option<Duration> {
        let tr = &self.delivery_trace;
        let mut j = 0;
        for &(t, b) in tr {
            if t < window {
                continue;
            }
            while tr[j].0 + window < t {
                j += 1;
            }
            let (t0, b0) = tr[j];
            let span = (t - t0).as_secs_f64();
            if span > 0.0 && (b - b0) as f64 * 8.0 / span >= rate_bps {
                return Some(t);
            }
        }
        None
    }

    /// The time at which `bytes` had been received; needs
    /// [`Simulation::record_delivery`].
    pub fn time_to_receive(&self, bytes: u64) -> Option<Duration> {
        self.delivery_trace
            .iter()
            .find(|&&(_, b)| b >= bytes)
            .map(|&(t, _)| t)
    }
}

/// Results of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimReport {
    /// Per-flow results, in the order flows were added.
    pub flows: Vec<FlowReport>,
    /// Fraction of the bottleneck capacity used in the measurement interval.
    pub utilisation: f64,
    /// Queue drops in the measurement interval (all flows).
    pub queue_drops: u64,
    /// Time-averaged queue occupancy in bytes (measurement interval).
    pub mean_queue_bytes: f64,
    /// Per-packet queueing delay at the bottleneck (from joining the queue
    /// to the start of its transmission) of every packet that began
    /// service in the measurement interval, in microseconds, sorted.
    pub queue_delays_us: Vec<u32>,
    /// Length of the measurement interval.
    pub measured: Duration,
}

impl SimReport {
    /// Queue drops per 10 MB (10^7 bytes) delivered, all flows.
    pub fn queue_drops_per_10mb(&self) -> f64 {
        let bytes: u64 = self.flows.iter().map(|f| f.delivered_bytes).sum();
        self.queue_drops as f64 * 1e7 / (bytes.max(1) as f64)
    }

    /// The `q` quantile (0..=1) of the per-packet queueing delay; zero if
    /// no packet was served.
    pub fn queue_delay_quantile(&self, q: f64) -> Duration {
        let d = &self.queue_delays_us;
        if d.is_empty() {
            return Duration::ZERO;
        }
        let i = ((d.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        Duration::from_micros(d[i] as u64)
    }

    /// Mean per-packet queueing delay; zero if no packet was served.
    pub fn mean_queue_delay(&self) -> Duration {
        let d = &self.queue_delays_us;
        let sum: u64 = d.iter().map(|&v| v as u64).sum();
        Duration::from_micros(sum / (d.len().max(1) as u64))
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    FlowStart(usize),
    SendCheck(usize),
    LinkTxDone,
    Deliver {
        flow: usize,
        pkt: u64,
        bytes: usize,
    },
    AckArrive {
        flow: usize,
        count: usize,
        dofs: usize,
    },
    LossTimer {
        flow: usize,
        gen: u64,
    },
    Pto {
        flow: usize,
        gen: u64,
    },
    AckTimer {
        flow: usize,
        gen: u64,
    },
    Sample,
}

#[derive(Debug)]
struct Scheduled {
    at: Duration,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we pop the earliest event.
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

#[derive(Clone, Copy, Debug)]
struct SentInfo {
    time_sent: Instant,
    bytes: usize,
}

#[derive(Debug)]
struct Flow {
    spec: FlowSpec,
    started: bool,
    next_pkt: u64,
    /// Outstanding packets; index = pkt - base_pkt.
    sent: VecDeque<Option<SentInfo>>,
    base_pkt: u64,
    /// Send time of each source symbol (coding model).
    src_times: Vec<Instant>,
    /// Cumulative source symbols sent up to and including each packet.
    src_upto: Vec<usize>,
    /// Fractional source-injection credit.
    src_credit: f64,
    /// EWMA of the loss fraction (coding model).
    loss_ewma: f64,
    loss_samples: u64,
    /// Degrees of freedom seen by the receiver.
    dofs_seen: usize,
    bif: usize,
    largest_acked: Option<u64>,
    processed: usize,
    recv_log: Vec<u64>,
    /// Packets received since the last ACK was sent.
    recv_unacked: usize,
    ack_timer_gen: u64,
    ack_timer_armed: bool,
    // RTT state (RFC 9002 §5).
    latest_rtt: Duration,
    srtt: Duration,
    rttvar: Duration,
    min_rtt: Duration,
    has_rtt: bool,
    loss_gen: u64,
    pto_gen: u64,
    pto_count: u32,
    probes: u32,
    next_send: Duration,
    send_check_at: Option<Duration>,
    lost_total: u64,
    acked_total: u64,
    report: FlowReport,
    cwnd_area: f64,
    srtt_area: f64,
    /// Bytes received over the whole run.
    received_total: u64,
    /// Unpaced packets left (see [`FlowSpec::initial_burst`]).
    burst_tokens: usize,
    /// The handshake packet is in flight (see [`FlowSpec::handshake`]).
    in_handshake: bool,
}

/// The simulator. Add flows, then [`Simulation::run`].
#[derive(Debug)]
pub struct Simulation {
    link: LinkConfig,
    rng: Rng,
    base: Instant,
    now: Duration,
    seq: u64,
    heap: BinaryHeap<Scheduled>,
    flows: Vec<Flow>,
    /// Queued packets: flow, packet number, bytes, time enqueued.
    queue: VecDeque<(usize, u64, usize, Duration)>,
    /// Queueing delay of each packet that began service while measuring,
    /// in microseconds.
    queue_delays_us: Vec<u32>,
    queue_bytes: usize,
    busy: bool,
    measure_from: Duration,
    departed_bytes: u64,
    queue_drops_measured: u64,
    queue_area: f64,
    sample_every: Duration,
    record_delivery: bool,
    record_metrics: Option<(Duration, Duration)>,
    rate_schedule: Option<RateSchedule>,
}

impl Simulation {
    /// A simulation of `link` with no flows.
    pub fn new(link: LinkConfig) -> Self {
        Simulation {
            rng: Rng::new(link.seed),
            link,
            base: Instant::now(),
            now: Duration::ZERO,
            seq: 0,
            heap: BinaryHeap::new(),
            flows: Vec::new(),
            queue: VecDeque::new(),
            queue_delays_us: Vec::new(),
            queue_bytes: 0,
            busy: false,
            measure_from: Duration::ZERO,
            departed_bytes: 0,
            queue_drops_measured: 0,
            queue_area: 0.0,
            sample_every: Duration::from_millis(5),
            record_delivery: false,
            record_metrics: None,
            rate_schedule: None,
        }
    }

    /// Let the bottleneck's rate follow `schedule` instead of
    /// [`LinkConfig::rate_bps`] (the buffer stays `buffer_bytes`, whatever
    /// rate it was sized for). Utilisation is then of the capacity the
    /// schedule offered in the measurement interval.
    pub fn with_rate_schedule(&mut self, schedule: RateSchedule) {
        self.rate_schedule = Some(schedule);
    }

    /// Record each flow's [`FlowReport::delivery_trace`].
    pub fn record_delivery(&mut self) {
        self.record_delivery = true;
    }

    /// Record each flow's [`FlowReport::metrics_trace`] every `every`
    /// (rounded up to the 5 ms sampling step).
    pub fn record_metrics(&mut self, every: Duration) {
        self.record_metrics = Some((every.max(self.sample_every), Duration::ZERO));
    }

    /// Add a flow; returns its index in the report.
    pub fn add_flow(&mut self, spec: FlowSpec) -> usize {
        let name = spec.name.clone();
        let rtt = spec.rtt;
        let burst_tokens = spec.initial_burst;
        self.flows.push(Flow {
            spec,
            started: false,
            next_pkt: 0,
            sent: VecDeque::new(),
            base_pkt: 0,
            src_times: Vec::new(),
            src_upto: Vec::new(),
            src_credit: 0.0,
            loss_ewma: 0.0,
            loss_samples: 0,
            dofs_seen: 0,
            bif: 0,
            largest_acked: None,
            processed: 0,
            recv_log: Vec::new(),
            recv_unacked: 0,
            ack_timer_gen: 0,
            ack_timer_armed: false,
            latest_rtt: rtt,
            srtt: Duration::from_millis(333),
            rttvar: Duration::from_millis(166),
            min_rtt: rtt,
            has_rtt: false,
            loss_gen: 0,
            pto_gen: 0,
            pto_count: 0,
            probes: 0,
            next_send: Duration::ZERO,
            send_check_at: None,
            lost_total: 0,
            acked_total: 0,
            report: FlowReport {
                name,
                ..Default::default()
            },
            cwnd_area: 0.0,
            srtt_area: 0.0,
            received_total: 0,
            burst_tokens,
            in_handshake: false,
        });
        self.flows.len() - 1
    }

    fn schedule(&mut self, at: Duration, ev: Ev) {
        self.seq += 1;
        self.heap.push(Scheduled {
            at,
            seq: self.seq,
            ev,
        });
    }

    fn instant(&self, t: Duration) -> Instant {
        self.base + t
    }

    fn measuring(&self) -> bool {
        self.now >= self.measure_from
    }

    /// Run for `duration` of virtual time, measuring from `measure_from`.
    pub fn run(mut self, duration: Duration, measure_from: Duration) -> SimReport {
        self.measure_from = measure_from;
        for i in 0..self.flows.len() {
            let s = self.flows[i].spec.start;
            self.schedule(s, Ev::FlowStart(i));
        }
        self.schedule(Duration::ZERO, Ev::Sample);
        while let Some(s) = self.heap.pop() {
            if s.at > duration {
                break;
            }
            self.now = s.at;
            match s.ev {
                Ev::FlowStart(f) => {
                    self.flows[f].started = true;
                    if self.flows[f].spec.handshake {
                        self.send_handshake(f);
                    } else {
                        self.try_send(f);
                    }
                }
                Ev::SendCheck(f) => {
                    if self.flows[f].send_check_at == Some(self.now) {
                        self.flows[f].send_check_at = None;
                        self.try_send(f);
                    }
                }
                Ev::LinkTxDone => self.link_tx_done(),
                Ev::Deliver { flow, pkt, bytes } => self.deliver(flow, pkt, bytes),
                Ev::AckArrive { flow, count, dofs } => self.on_ack(flow, count, dofs),
                Ev::LossTimer { flow, gen } => {
                    if self.flows[flow].loss_gen == gen {
                        self.detect_and_report(flow, Vec::new(), false, 0);
                        self.try_send(flow);
                    }
                }
                Ev::Pto { flow, gen } => self.on_pto(flow, gen),
                Ev::AckTimer { flow, gen } => {
                    let f = &self.flows[flow];
                    if f.ack_timer_armed && f.ack_timer_gen == gen && f.recv_unacked > 0 {
                        self.send_ack(flow);
                    }
                }
                Ev::Sample => self.sample(),
            }
        }
        self.finish(duration)
    }

    fn sample(&mut self) {
        if self.record_delivery {
            for f in &mut self.flows {
                f.report.delivery_trace.push((self.now, f.received_total));
            }
        }
        if let Some((every, next)) = self.record_metrics {
            if self.now >= next {
                self.record_metrics = Some((every, next + every));
                for f in self.flows.iter_mut().filter(|f| f.started) {
                    let mut metrics = Vec::new();
                    f.spec.controller.metrics(&mut |n, v| metrics.push((n, v)));
                    f.report.metrics_trace.push(MetricsSample {
                        at: self.now,
                        cwnd: f.spec.controller.congestion_window(),
                        srtt: f.srtt,
                        queue_bytes: self.queue_bytes,
                        metrics,
                    });
                }
            }
        }
        if self.measuring() {
            let dt = self.sample_every.as_secs_f64();
            self.queue_area += self.queue_bytes as f64 * dt;
            for f in &mut self.flows {
                if f.started {
                    f.cwnd_area += f.spec.controller.congestion_window() as f64 * dt;
                    f.srtt_area += f.srtt.as_secs_f64() * dt;
                    let areas = &mut f.report.mean_metrics;
                    f.spec.controller.metrics(&mut |name, v| match areas
                        .iter_mut()
                        .find(|(n, _)| *n == name)
                    {
                        Some((_, a)) => *a += v * dt,
                        None => areas.push((name, v * dt)),
                    });
                }
            }
        }
        let next = self.now + self.sample_every;
        self.schedule(next, Ev::Sample);
    }

    fn finish(mut self, duration: Duration) -> SimReport {
        let measured = duration.saturating_sub(self.measure_from);
        let secs = measured.as_secs_f64().max(1e-9);
        let capacity = match &self.rate_schedule {
            Some(s) => s.capacity_bytes(self.measure_from, duration).max(1.0),
            None => self.link.rate_bps as f64 / 8.0 * secs,
        };
        let flows = self
            .flows
            .drain(..)
            .map(|mut f| {
                f.report.throughput_bps = f.report.delivered_bytes as f64 * 8.0 / secs;
                f.report.mean_cwnd = f.cwnd_area / secs;
                f.report.mean_srtt = Duration::from_secs_f64(f.srtt_area / secs);
                for (_, a) in &mut f.report.mean_metrics {
                    *a /= secs;
                }
                f.report
            })
            .collect();
        SimReport {
            flows,
            utilisation: self.departed_bytes as f64 / capacity,
            queue_drops: self.queue_drops_measured,
            mean_queue_bytes: self.queue_area / secs,
            queue_delays_us: {
                let mut d = std::mem::take(&mut self.queue_delays_us);
                d.sort_unstable();
                d
            },
            measured,
        }
    }

    fn pto_duration(f: &Flow) -> Duration {
        let base = f.srtt + (f.rttvar * 4).max(Duration::from_millis(1)) + f.spec.acks.max_delay;
        base * 2u32.pow(f.pto_count.min(6))
    }

    fn arm_pto(&mut self, fi: usize) {
        let f = &mut self.flows[fi];
        f.pto_gen += 1;
        if f.bif == 0 {
            return;
        }
        let at = self.now + Self::pto_duration(f);
        let gen = f.pto_gen;
        self.schedule(at, Ev::Pto { flow: fi, gen });
    }

    fn try_send(&mut self, fi: usize) {
        if !self.flows[fi].started {
            return;
        }
        loop {
            let f = &mut self.flows[fi];
            if f.in_handshake {
                break;
            }
            let probe = f.probes > 0;
            if !probe && !f.spec.controller.can_send(f.bif) {
                break;
            }
            if f.bif == 0 && f.spec.initial_burst > 0 && !f.spec.controller.is_in_recovery() {
                let cwnd_pkts = f.spec.controller.congestion_window() / f.spec.mss.max(1);
                f.burst_tokens = f.spec.initial_burst.min(cwnd_pkts);
            }
            let burst = f.spec.pacing && !probe && f.burst_tokens > 0;
            if f.spec.pacing && !probe && !burst && f.next_send > self.now {
                let at = f.next_send;
                if f.send_check_at.is_none_or(|t| t > at) {
                    f.send_check_at = Some(at);
                    self.schedule(at, Ev::SendCheck(fi));
                }
                break;
            }
            if probe {
                f.probes -= 1;
            }
            self.send_packet(fi, burst, false);
        }
    }

    /// The handshake round trip (see [`FlowSpec::handshake`]).
    fn send_handshake(&mut self, fi: usize) {
        self.flows[fi].in_handshake = true;
        self.send_packet(fi, false, true);
    }

    /// Send one packet; `burst`: take it from the unpaced burst;
    /// `lossless`: exempt from random loss (the handshake).
    fn send_packet(&mut self, fi: usize, burst: bool, lossless: bool) {
        let now_i = self.instant(self.now);
        let f = &mut self.flows[fi];
        let pkt = f.next_pkt;
        f.next_pkt += 1;
        let bytes = f.spec.mss;
        f.spec
            .controller
            .on_packet_sent(now_i, f.bif, pkt, bytes, true);
        f.bif += bytes;
        if f.sent.is_empty() {
            f.base_pkt = pkt;
        }
        f.sent.push_back(Some(SentInfo {
            time_sent: now_i,
            bytes,
        }));
        if f.spec.coding.is_some() {
            let r = (1.1 * f.loss_ewma + 0.005).min(0.5);
            f.src_credit += 1.0 - r;
            if f.src_credit >= 1.0 {
                f.src_credit -= 1.0;
                f.src_times.push(now_i);
            }
            f.src_upto.push(f.src_times.len());
        }
        f.report.sent += 1;
        if burst {
            // As quiche's pacer: a burst packet leaves no pacing debt.
            f.burst_tokens -= 1;
            f.next_send = self.now;
        } else if f.spec.pacing {
            if let Some(rate) = f.spec.controller.pacing_rate(f.bif) {
                let gap = Duration::from_secs_f64(bytes as f64 / rate.max(1) as f64);
                f.next_send = f.next_send.max(self.now) + gap;
            }
        }
        let was_idle = f.bif == bytes;
        // Random loss before the bottleneck.
        if !lossless && self.rng.chance(self.link.fwd_loss) {
            self.flows[fi].report.random_losses += 1;
        } else {
            self.enqueue(fi, pkt, bytes);
        }
        if was_idle {
            self.arm_pto(fi);
        }
    }

    fn enqueue(&mut self, fi: usize, pkt: u64, bytes: usize) {
        if !self.busy {
            self.busy = true;
            self.queue.push_back((fi, pkt, bytes, self.now));
            self.record_queue_delay(Duration::ZERO);
            let at = self.now + self.tx_time(bytes);
            self.schedule(at, Ev::LinkTxDone);
        } else if self.queue_bytes + bytes > self.link.buffer_bytes {
            self.flows[fi].report.queue_drops += 1;
            if self.measuring() {
                self.queue_drops_measured += 1;
            }
        } else {
            self.queue_bytes += bytes;
            self.queue.push_back((fi, pkt, bytes, self.now));
        }
    }

    /// Notes the queueing delay of a packet that begins service now.
    fn record_queue_delay(&mut self, d: Duration) {
        if self.measuring() {
            self.queue_delays_us
                .push(d.as_micros().min(u32::MAX as u128) as u32);
        }
    }

    fn tx_time(&self, bytes: usize) -> Duration {
        if let Some(s) = &self.rate_schedule {
            return s.tx_time(self.now, bytes);
        }
        Duration::from_secs_f64(bytes as f64 * 8.0 / self.link.rate_bps as f64)
    }

    fn link_tx_done(&mut self) {
        let (fi, pkt, bytes, _) = self.queue.pop_front().expect("link busy with a packet");
        if self.measuring() {
            self.departed_bytes += bytes as u64;
        }
        let at = self.now + self.flows[fi].spec.rtt / 2;
        self.schedule(
            at,
            Ev::Deliver {
                flow: fi,
                pkt,
                bytes,
            },
        );
        if let Some(&(_, _, b, enqueued)) = self.queue.front() {
            self.queue_bytes -= b;
            self.record_queue_delay(self.now - enqueued);
            let at = self.now + self.tx_time(b);
            self.schedule(at, Ev::LinkTxDone);
        } else {
            self.busy = false;
        }
    }

    fn deliver(&mut self, fi: usize, pkt: u64, bytes: usize) {
        let measuring = self.measuring();
        let f = &mut self.flows[fi];
        let gap = f.recv_log.last().is_some_and(|&l| pkt > l + 1);
        f.recv_log.push(pkt);
        if let Some(&sources) = f.src_upto.get(pkt as usize) {
            if f.dofs_seen < sources {
                f.dofs_seen += 1;
            }
        }
        if measuring {
            f.report.delivered_bytes += bytes as u64;
        }
        f.received_total += bytes as u64;
        f.recv_unacked += 1;
        if f.in_handshake {
            // Handshake packets are acknowledged at once (and, here, safely).
            self.send_ack_maybe_lost(fi, false);
        } else if gap || f.recv_unacked >= f.spec.acks.every.max(1) {
            self.send_ack(fi);
        } else if !f.ack_timer_armed {
            f.ack_timer_armed = true;
            f.ack_timer_gen += 1;
            let (gen, at) = (f.ack_timer_gen, self.now + f.spec.acks.max_delay);
            self.schedule(at, Ev::AckTimer { flow: fi, gen });
        }
    }

    fn send_ack(&mut self, fi: usize) {
        self.send_ack_maybe_lost(fi, true);
    }

    fn send_ack_maybe_lost(&mut self, fi: usize, lossy: bool) {
        let f = &mut self.flows[fi];
        f.recv_unacked = 0;
        f.ack_timer_armed = false;
        let dofs = f.dofs_seen;
        let count = f.recv_log.len();
        let mut at = self.now + f.spec.rtt / 2;
        if !self.link.ack_jitter.is_zero() {
            at += self.link.ack_jitter.mul_f64(self.rng.next_f64());
        }
        if !(lossy && self.rng.chance(self.link.rev_loss)) {
            self.schedule(
                at,
                Ev::AckArrive {
                    flow: fi,
                    count,
                    dofs,
                },
            );
        }
    }

    fn take_sent(f: &mut Flow, pkt: u64) -> Option<SentInfo> {
        if pkt < f.base_pkt {
            return None;
        }
        let idx = (pkt - f.base_pkt) as usize;
        let info = f.sent.get_mut(idx)?.take();
        while let Some(None) = f.sent.front() {
            f.sent.pop_front();
            f.base_pkt += 1;
        }
        info
    }

    fn on_ack(&mut self, fi: usize, count: usize, dofs: usize) {
        let now_i = self.instant(self.now);
        let f = &mut self.flows[fi];
        if count <= f.processed {
            return;
        }
        let prior = f.bif;
        // Only the handshake packet was in flight: it is acknowledged.
        f.in_handshake = false;
        let mut acked = Vec::new();
        let start = f.processed;
        f.processed = count;
        let mut largest_new: Option<(u64, Option<SentInfo>)> = None;
        for i in start..count {
            let pkt = f.recv_log[i];
            let info = Self::take_sent(f, pkt);
            if let Some(info) = info {
                f.bif -= info.bytes;
                acked.push(AckedPacket {
                    pkt_num: pkt,
                    time_sent: info.time_sent,
                    bytes: info.bytes,
                });
            }
            if largest_new.is_none_or(|(l, _)| pkt > l) {
                largest_new = Some((pkt, info));
            }
        }
        let mut rtt_updated = false;
        if let Some((pkt, info)) = largest_new {
            if f.largest_acked.is_none_or(|l| pkt > l) {
                f.largest_acked = Some(pkt);
                if let Some(info) = info {
                    let sample = now_i.saturating_duration_since(info.time_sent);
                    Self::update_rtt(f, sample);
                    rtt_updated = true;
                }
            }
        }
        f.acked_total += acked.len() as u64;
        f.pto_count = 0;
        let dof = f.spec.coding.is_some_and(|c| c.dof_rtt);
        if dof && dofs > 0 {
            let sample = now_i.saturating_duration_since(f.src_times[dofs - 1]);
            f.spec
                .controller
                .on_coding_feedback(now_i, &CodingFeedback::DofRtt { sample });
        }
        self.detect_and_report(fi, acked, rtt_updated, prior);
        self.arm_pto(fi);
        self.try_send(fi);
    }

    fn update_rtt(f: &mut Flow, sample: Duration) {
        f.latest_rtt = sample;
        if !f.has_rtt {
            f.has_rtt = true;
            f.min_rtt = sample;
            f.srtt = sample;
            f.rttvar = sample / 2;
        } else {
            f.min_rtt = f.min_rtt.min(sample);
            let dev = f.srtt.abs_diff(sample);
            f.rttvar = (f.rttvar * 3 + dev) / 4;
            f.srtt = (f.srtt * 7 + sample) / 8;
        }
    }

    /// RFC 9002 loss detection, then one congestion event.
    fn detect_and_report(
        &mut self,
        fi: usize,
        acked: Vec<AckedPacket>,
        rtt_updated: bool,
        prior: usize,
    ) {
        let now_i = self.instant(self.now);
        let now = self.now;
        let f = &mut self.flows[fi];
        let prior = if acked.is_empty() { f.bif } else { prior };
        let mut lost = Vec::new();
        let mut next_timer: Option<Instant> = None;
        if let Some(largest) = f.largest_acked {
            let loss_delay = (f.srtt.max(f.latest_rtt) * 9 / 8).max(Duration::from_millis(1));
            let mut pkt = f.base_pkt;
            let end = largest.min(f.base_pkt + f.sent.len() as u64);
            while pkt < end {
                let idx = (pkt - f.base_pkt) as usize;
                if let Some(info) = f.sent[idx] {
                    if pkt + 3 <= largest || info.time_sent + loss_delay <= now_i {
                        f.sent[idx] = None;
                        f.bif -= info.bytes;
                        lost.push(LostPacket {
                            pkt_num: pkt,
                            bytes: info.bytes,
                        });
                    } else {
                        let t = info.time_sent + loss_delay;
                        next_timer = Some(next_timer.map_or(t, |n| n.min(t)));
                    }
                }
                pkt += 1;
            }
            while let Some(None) = f.sent.front() {
                f.sent.pop_front();
                f.base_pkt += 1;
            }
        }
        f.lost_total += lost.len() as u64;
        // Loss-rate EWMA over ~512 packets; a plain running mean until then.
        for i in 0..acked.len() + lost.len() {
            let x = if i < lost.len() { 1.0 } else { 0.0 };
            f.loss_samples += 1;
            let gain = 1.0 / (f.loss_samples.min(512) as f64);
            f.loss_ewma += gain * (x - f.loss_ewma);
        }
        f.report.declared_lost += lost.len() as u64;
        if !lost.is_empty() {
            f.burst_tokens = 0;
        }
        if !acked.is_empty() || !lost.is_empty() {
            let least_unacked = f.base_pkt;
            let ev = CongestionEvent {
                now: now_i,
                rtt_updated,
                prior_in_flight: prior,
                bytes_in_flight: f.bif,
                acked: &acked,
                lost: &lost,
                least_unacked,
                rtt: RttEstimates {
                    latest: f.latest_rtt,
                    smoothed: f.srtt,
                    min: f.min_rtt,
                    rttvar: f.rttvar,
                    max_ack_delay: f.spec.acks.max_delay,
                },
            };
            f.spec.controller.on_congestion_event(&ev);
        }
        if !lost.is_empty() {
            if let Some(model) = f.spec.coding {
                if model.recovered {
                    let pkts: Vec<u64> = lost.iter().map(|l| l.pkt_num).collect();
                    let bytes = lost.iter().map(|l| l.bytes).sum();
                    f.spec.controller.on_coding_feedback(
                        now_i,
                        &CodingFeedback::Recovered {
                            pkt_nums: &pkts,
                            bytes,
                        },
                    );
                }
                if model.erasure_rate {
                    let rate = f.loss_ewma;
                    f.spec
                        .controller
                        .on_coding_feedback(now_i, &CodingFeedback::ErasureRate { rate });
                }
            }
        }
        f.loss_gen += 1;
        if let Some(t) = next_timer {
            let at = now + t.saturating_duration_since(now_i);
            let gen = f.loss_gen;
            self.schedule(at, Ev::LossTimer { flow: fi, gen });
        }
    }

    fn on_pto(&mut self, fi: usize, gen: u64) {
        let f = &mut self.flows[fi];
        if f.pto_gen != gen || f.bif == 0 {
            return;
        }
        f.pto_count += 1;
        f.probes = 2;
        if f.pto_count == 3 {
            f.report.rtos += 1;
            f.spec.controller.on_retransmission_timeout(true);
        }
        self.try_send(fi);
        self.arm_pto(fi);
    }
}

/// The controllers the simulator knows how to build, for tests and tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// [`crate::Aimd`] with defaults (Reno-like AIMD(1, 0.5)), unpaced.
    Aimd,
    /// [`crate::Cubic`] with defaults, unpaced.
    Cubic,
    /// [`crate::Cubic`] with quiche's rollback of "spurious" congestion
    /// events ([`crate::CubicConfig::rollback_frac`] 0.2), unpaced.
    CubicRollback,
    /// [`crate::Cubic`] with HyStart++ ([`crate::CubicConfig::hystart`]),
    /// paced at 1.25 cwnd/sRTT: ngtcp2's and quic-go's CUBIC.
    CubicHystart,
    /// [`Algo::CubicRollback`] with HyStart++: quiche's CUBIC.
    CubicRollbackHystart,
    /// [`crate::Ctcp`] with defaults, paced.
    Ctcp,
    /// [`crate::Ctcp`] with the CUBIC-shaped increase, paced.
    CtcpCubic,
    /// [`crate::Ctcp`] with the round-minimum RTT in Equation (1)
    /// ([`crate::CtcpConfig::round_min_rtt`]), paced.
    CtcpRoundMin,
    /// [`crate::Hybrid`] with defaults (competitive mode on), paced, with
    /// full coding feedback.
    Hybrid,
    /// [`crate::Hybrid`] with its competitive mode off, paced, with full
    /// coding feedback.
    HybridYield,
    /// [`crate::Vegas`] with the TCP/NC preset and DOF RTT, paced.
    VegasNc,
    /// [`BbrLike`], paced.
    Bbr,
    /// [`BbrLike::aggressive`], paced.
    BbrAggressive,
}

impl Algo {
    /// Every algorithm, in declaration order.
    pub const ALL: [Algo; 13] = [
        Algo::Aimd,
        Algo::Cubic,
        Algo::CubicRollback,
        Algo::CubicHystart,
        Algo::CubicRollbackHystart,
        Algo::Ctcp,
        Algo::CtcpCubic,
        Algo::CtcpRoundMin,
        Algo::Hybrid,
        Algo::HybridYield,
        Algo::VegasNc,
        Algo::Bbr,
        Algo::BbrAggressive,
    ];

    /// The algorithm called `name` (see [`Algo::name`]).
    pub fn from_name(name: &str) -> Option<Algo> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// [`Algo::from_name`] for a command line: the error names the
    /// algorithms there are.
    pub fn parse(name: &str) -> Result<Algo, String> {
        Self::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
            format!("unknown algorithm {name}; one of {}", names.join(", "))
        })
    }

    /// Short name, as in the simulator's tables.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Aimd => "aimd",
            Algo::Cubic => "cubic",
            Algo::CubicRollback => "cubic-rollback",
            Algo::CubicHystart => "cubic-hystart",
            Algo::CubicRollbackHystart => "cubic-rollback-hystart",
            Algo::Ctcp => "ctcp",
            Algo::CtcpCubic => "ctcp-cubic",
            Algo::CtcpRoundMin => "ctcp-rmin",
            Algo::Hybrid => "hybrid",
            Algo::HybridYield => "hybrid-yield",
            Algo::VegasNc => "vegas-nc",
            Algo::Bbr => "bbr-like",
            Algo::BbrAggressive => "bbr-2x",
        }
    }

    /// Build the controller.
    pub fn build(self, common: CommonConfig) -> Box<dyn Controller> {
        use crate::*;
        match self {
            Algo::Aimd => Box::new(Aimd::new(AimdConfig {
                common,
                ..Default::default()
            })),
            Algo::Cubic => Box::new(Cubic::new(CubicConfig {
                common,
                ..Default::default()
            })),
            Algo::CubicRollback => Box::new(Cubic::new(CubicConfig {
                common,
                rollback_frac: Some(0.2),
                ..Default::default()
            })),
            Algo::CubicHystart => Box::new(Cubic::new(CubicConfig {
                common,
                hystart: true,
                pacing_gain: Some(1.25),
                ..Default::default()
            })),
            Algo::CubicRollbackHystart => Box::new(Cubic::new(CubicConfig {
                common,
                rollback_frac: Some(0.2),
                hystart: true,
                ..Default::default()
            })),
            Algo::Ctcp => Box::new(Ctcp::new(CtcpConfig {
                common,
                ..Default::default()
            })),
            Algo::CtcpCubic => Box::new(Ctcp::new(CtcpConfig {
                common,
                cubic_increase: true,
                ..Default::default()
            })),
            Algo::CtcpRoundMin => Box::new(Ctcp::new(CtcpConfig {
                common,
                round_min_rtt: true,
                ..Default::default()
            })),
            Algo::Hybrid => Box::new(Hybrid::new(HybridConfig {
                common,
                ..Default::default()
            })),
            Algo::HybridYield => Box::new(Hybrid::new(HybridConfig {
                common,
                competitive: false,
                ..Default::default()
            })),
            Algo::VegasNc => Box::new(Vegas::new(VegasConfig {
                common,
                ..VegasConfig::tcp_nc()
            })),
            Algo::Bbr => Box::new(BbrLike::new(common)),
            Algo::BbrAggressive => Box::new(BbrLike::aggressive(common)),
        }
    }

    /// A flow of this algorithm with its usual pacing and coding feedback.
    pub fn flow(self, rtt: Duration) -> FlowSpec {
        let common = CommonConfig::default();
        let mut spec = FlowSpec::new(self.name(), self.build(common), rtt);
        spec.mss = common.mss;
        match self {
            Algo::Aimd | Algo::Cubic | Algo::CubicRollback | Algo::CubicRollbackHystart => spec,
            Algo::CubicHystart => spec.paced(),
            Algo::Hybrid | Algo::HybridYield | Algo::VegasNc => {
                spec.paced().with_coding(CodingModel::full())
            }
            _ => spec.paced(),
        }
    }
}
