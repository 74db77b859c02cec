//! Sans-IO model of one direction of an emulated link.
//!
//! A packet offered to a [`Link`] at time `now` goes through, in order:
//!
//! 1. the loss model, if [`LossPosition::BeforeQueue`];
//! 2. a drop-tail FIFO buffer feeding a bottleneck that serialises at
//!    `rate` bit/s (a packet of `L` bytes occupies it for `8L/rate` s), or
//!    that follows a capacity trace's delivery opportunities
//!    ([`crate::trace`]);
//! 3. the loss model, if [`LossPosition::AfterQueue`] (the default): the
//!    packet has then consumed bottleneck capacity even if it is lost;
//! 4. a constant propagation delay.
//!
//! Because the bottleneck is FIFO with a constant rate (or a schedule fixed
//! in advance) and the delay is constant, the delivery time of each packet is known when it arrives, so
//! [`Link::on_packet`] returns the complete [`Verdict`] at once. Everything
//! is computed from the `now` arguments (virtual time); nothing reads a clock.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::loss::{LossSchedule, LossState};
use crate::rng::Rng;
use crate::trace::{TraceConfig, TraceService, HEADER_BYTES};

/// Hard cap on packets held in the bottleneck buffer of one [`Link`],
/// whatever its [`Buffer`] setting, to keep memory bounded.
pub const MAX_BACKLOG_PACKETS: usize = 1 << 18;

/// Size of the bottleneck buffer (drop-tail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Buffer {
    /// At most this many packets in the buffer (including the one being
    /// serialised).
    Packets(u64),
    /// At most this many bytes in the buffer (including the one being
    /// serialised).
    Bytes(u64),
    /// No limit other than [`MAX_BACKLOG_PACKETS`].
    Unlimited,
}

impl Buffer {
    /// One bandwidth-delay product in bytes for `rate_bps` and `rtt`, but at
    /// least `min_bytes`. `None` rate (unlimited) gives [`Buffer::Unlimited`].
    pub fn bdp(rate_bps: Option<u64>, rtt: Duration, min_bytes: u64) -> Buffer {
        match rate_bps {
            None => Buffer::Unlimited,
            Some(r) => {
                let bytes = (r as u128 * rtt.as_nanos() / 8 / 1_000_000_000) as u64;
                Buffer::Bytes(bytes.max(min_bytes))
            }
        }
    }
}

/// Where the loss model sits relative to the bottleneck queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum LossPosition {
    /// Lost packets never reach the queue: they consume no capacity, so the
    /// flow can obtain the full rate `C` of delivered traffic.
    BeforeQueue,
    /// Lost packets are serialised first and lost afterwards (like a lossy
    /// radio hop at the bottleneck): delivered capacity is `C·(1−p)`.
    #[default]
    AfterQueue,
}

/// Configuration of one direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkConfig {
    /// Bottleneck rate in bit/s; `None` means no serialisation delay and no queue.
    pub rate_bps: Option<u64>,
    /// Constant one-way propagation delay.
    pub delay: Duration,
    /// Bottleneck buffer size (ignored when `rate_bps` is `None`).
    pub buffer: Buffer,
    /// Loss model schedule.
    pub loss: LossSchedule,
    /// Loss before or after the bottleneck queue.
    pub loss_position: LossPosition,
    /// Capacity from a trace instead of `rate_bps` (which must then be `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// Which delivered packets are corrupted (a loss-model schedule read as
    /// "corrupt this one"): one byte among the first 50 of the datagram is
    /// replaced by a different random value, as the interop runner's
    /// `corrupt-rate` scenario does. Version Negotiation packets are spared.
    #[serde(default = "LossSchedule::none")]
    pub corrupt: LossSchedule,
    /// Packets dropped by their position (1-based, counting every packet
    /// offered to the link), as the runner's `droplist` scenario does.
    /// Counted as lost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_list: Vec<u64>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            rate_bps: None,
            delay: Duration::ZERO,
            buffer: Buffer::Unlimited,
            loss: LossSchedule::none(),
            loss_position: LossPosition::default(),
            trace: None,
            corrupt: LossSchedule::none(),
            drop_list: Vec::new(),
        }
    }
}

impl LinkConfig {
    /// Checks the configuration; returns a one-line description of the first problem.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == Some(0) {
            return Err("rate must be > 0 (omit it for an unlimited rate)".into());
        }
        if self.rate_bps.is_some() && self.trace.is_some() {
            return Err("a rate and a trace exclude each other".into());
        }
        match self.buffer {
            Buffer::Packets(0) => return Err("buffer must hold at least one packet".into()),
            Buffer::Bytes(b) if b < crate::MTU as u64 => {
                return Err(format!(
                    "buffer of {b} bytes is smaller than one MTU ({} bytes)",
                    crate::MTU
                ))
            }
            _ => {}
        }
        if self.drop_list.contains(&0) {
            return Err("drop list positions start at 1".into());
        }
        self.corrupt
            .validate()
            .map_err(|e| format!("corruption: {e}"))?;
        self.loss.validate()
    }
}

/// What happens to a packet offered to the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Delivered to the far end at this instant.
    Deliver(Instant),
    /// Dropped by the loss model.
    Lost,
    /// Dropped because the bottleneck buffer was full (drop-tail).
    QueueDrop,
}

/// Counters of one direction, as reported in the stats JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkStats {
    /// Packets offered to the link.
    pub arrived_packets: u64,
    /// Bytes offered to the link.
    pub arrived_bytes: u64,
    /// Packets that will be (or were) delivered.
    pub forwarded_packets: u64,
    /// Bytes that will be (or were) delivered.
    pub forwarded_bytes: u64,
    /// Packets dropped by the loss model.
    pub lost_packets: u64,
    /// Bytes dropped by the loss model.
    pub lost_bytes: u64,
    /// Packets dropped because the buffer was full.
    pub queue_drop_packets: u64,
    /// Bytes dropped because the buffer was full.
    pub queue_drop_bytes: u64,
    /// Largest buffer occupancy seen, in bytes (including the packet in service).
    pub peak_backlog_bytes: u64,
    /// Largest buffer occupancy seen, in packets (including the packet in service).
    pub peak_backlog_packets: u64,
    /// Time delivered packets spent at the bottleneck (queue + own service),
    /// mean in microseconds (0 before the first packet).
    #[serde(default)]
    pub sojourn_mean_us: u64,
    /// The same, 95th percentile (about 3 % resolution).
    #[serde(default)]
    pub sojourn_p95_us: u64,
    /// The same, 99th percentile.
    #[serde(default)]
    pub sojourn_p99_us: u64,
    /// The same, maximum.
    #[serde(default)]
    pub sojourn_max_us: u64,
    /// Delivered packets whose bytes were corrupted (see [`LinkConfig::corrupt`]).
    #[serde(default)]
    pub corrupted_packets: u64,
    /// With a trace: the capacity it offered since the start, in bytes
    /// (opportunities × 1500), so utilisation = forwarded / offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_bytes: Option<u64>,
}

/// One direction of an emulated link (sans-IO).
#[derive(Debug)]
pub struct Link {
    cfg: LinkConfig,
    rng: Rng,
    loss_state: LossState,
    /// Corruption decisions and byte values have their own generator, so
    /// that turning corruption on does not change the loss pattern.
    corrupt_rng: Rng,
    corrupt_state: LossState,
    start: Instant,
    last_now: Instant,
    busy_until: Instant,
    /// (serialisation finish time, length) of packets in the buffer.
    backlog: VecDeque<(Instant, u64)>,
    backlog_bytes: u64,
    stats: LinkStats,
    trace: Option<TraceService>,
    sojourn: Histogram,
}

impl Link {
    /// Creates a link. `start` is time zero of the loss schedule.
    /// The same `cfg`, `seed` and packet sequence always give the same verdicts.
    pub fn new(cfg: LinkConfig, seed: u64, start: Instant) -> Self {
        let loss_state = LossState::new(&cfg.loss);
        let corrupt_state = LossState::new(&cfg.corrupt);
        let trace = cfg.trace.as_ref().map(TraceService::new);
        Link {
            cfg,
            rng: Rng::new(seed),
            loss_state,
            corrupt_rng: Rng::new(crate::rng::derive_seed(seed, 0xC0)),
            corrupt_state,
            start,
            last_now: start,
            busy_until: start,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            stats: LinkStats::default(),
            trace,
            sojourn: Histogram::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Counters so far (without the sojourn summary and offered capacity,
    /// which [`Link::stats_at`] adds).
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Counters as of `now`, with the sojourn-time summary and, on a
    /// trace-driven link, the capacity offered until `now`.
    pub fn stats_at(&self, now: Instant) -> LinkStats {
        let mut s = self.stats.clone();
        s.sojourn_mean_us = self.sojourn.mean();
        s.sojourn_p95_us = self.sojourn.quantile(0.95);
        s.sojourn_p99_us = self.sojourn.quantile(0.99);
        s.sojourn_max_us = self.sojourn.max;
        s.offered_bytes = self
            .trace
            .as_ref()
            .map(|t| t.offered_bytes(now.saturating_duration_since(self.start).as_nanos() as u64));
        s
    }

    /// Current buffer occupancy `(bytes, packets)` as of the last call's `now`.
    pub fn backlog(&self) -> (u64, usize) {
        (self.backlog_bytes, self.backlog.len())
    }

    /// Serialisation time of `len` bytes at the configured rate (rounded up to 1 ns).
    pub fn tx_time(&self, len: usize) -> Duration {
        match self.cfg.rate_bps {
            None => Duration::ZERO,
            Some(r) => {
                let bits = len as u128 * 8 * 1_000_000_000;
                let ns = bits.div_ceil(r.max(1) as u128);
                Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
            }
        }
    }

    fn drain(&mut self, now: Instant) {
        while let Some(&(finish, len)) = self.backlog.front() {
            if finish > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= len;
        }
    }

    fn lose(&mut self, at: Instant) -> bool {
        let t = at.saturating_duration_since(self.start);
        self.loss_state.lose(&self.cfg.loss, t, &mut self.rng)
    }

    /// Decides whether a packet delivered at `now` is corrupted and, if so,
    /// replaces one of its first 50 bytes by a different random value.
    /// Call it for delivered packets only. Version Negotiation packets (long
    /// header, version 0) are never corrupted and end a run of corruptions.
    pub fn corrupt(&mut self, now: Instant, data: &mut [u8]) -> bool {
        if data.is_empty() || self.cfg.corrupt.is_lossless() {
            return false;
        }
        let is_vn = data[0] & 0x80 != 0 && data.get(1..5) == Some(&[0u8; 4][..]);
        if is_vn {
            self.corrupt_state = LossState::new(&self.cfg.corrupt);
            return false;
        }
        let t = now.saturating_duration_since(self.start);
        if !self
            .corrupt_state
            .lose(&self.cfg.corrupt, t, &mut self.corrupt_rng)
        {
            return false;
        }
        let span = data.len().min(51) as u64;
        let pos = (self.corrupt_rng.next_u64() % span) as usize;
        // A uniformly chosen different value: old + 1..=255 (mod 256).
        let delta = 1 + (self.corrupt_rng.next_u64() % 255) as u8;
        data[pos] = data[pos].wrapping_add(delta);
        self.stats.corrupted_packets += 1;
        true
    }

    /// Offers a packet of `len` bytes arriving at `now`. Times earlier than a
    /// previous call's `now` are treated as equal to it.
    pub fn on_packet(&mut self, now: Instant, len: usize) -> Verdict {
        let now = now.max(self.last_now);
        self.last_now = now;
        let lenb = len as u64;
        self.stats.arrived_packets += 1;
        self.stats.arrived_bytes += lenb;
        self.drain(now);

        if self.cfg.drop_list.contains(&self.stats.arrived_packets) {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += lenb;
            return Verdict::Lost;
        }

        if self.cfg.loss_position == LossPosition::BeforeQueue && self.lose(now) {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += lenb;
            return Verdict::Lost;
        }

        let finish = if self.cfg.rate_bps.is_some() || self.trace.is_some() {
            let full = match self.cfg.buffer {
                Buffer::Packets(p) => self.backlog.len() as u64 + 1 > p,
                Buffer::Bytes(b) => self.backlog_bytes + lenb > b,
                Buffer::Unlimited => false,
            } || self.backlog.len() >= MAX_BACKLOG_PACKETS;
            if full {
                self.stats.queue_drop_packets += 1;
                self.stats.queue_drop_bytes += lenb;
                return Verdict::QueueDrop;
            }
            let finish = match &mut self.trace {
                Some(t) => {
                    let at = now.saturating_duration_since(self.start).as_nanos() as u64;
                    self.start + Duration::from_nanos(t.serve(at, lenb + HEADER_BYTES))
                }
                None => {
                    let begin = self.busy_until.max(now);
                    begin + self.tx_time(len)
                }
            };
            self.busy_until = finish;
            self.backlog.push_back((finish, lenb));
            self.backlog_bytes += lenb;
            self.stats.peak_backlog_bytes = self.stats.peak_backlog_bytes.max(self.backlog_bytes);
            self.stats.peak_backlog_packets = self
                .stats
                .peak_backlog_packets
                .max(self.backlog.len() as u64);
            finish
        } else {
            now
        };

        if self.cfg.loss_position == LossPosition::AfterQueue && self.lose(finish) {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += lenb;
            return Verdict::Lost;
        }
        self.stats.forwarded_packets += 1;
        self.stats.forwarded_bytes += lenb;
        self.sojourn.add(finish.saturating_duration_since(now));
        Verdict::Deliver(finish + self.cfg.delay)
    }
}

/// Log-linear histogram of durations in microseconds: exact below 64 µs,
/// then 32 buckets per power of two (about 3 % wide). Fixed size.
#[derive(Clone, Debug)]
struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    max: u64,
}

const HIST_BUCKETS: usize = 64 + 40 * 32;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; HIST_BUCKETS],
            n: 0,
            sum: 0,
            max: 0,
        }
    }
}

impl Histogram {
    fn index(us: u64) -> usize {
        if us < 64 {
            return us as usize;
        }
        let e = 63 - us.leading_zeros() as usize; // >= 6
        let sub = ((us >> (e - 5)) & 31) as usize;
        (64 + (e - 6) * 32 + sub).min(HIST_BUCKETS - 1)
    }

    /// Smallest value of bucket `i`.
    fn low(i: usize) -> u64 {
        if i < 64 {
            return i as u64;
        }
        let (e, sub) = ((i - 64) / 32 + 6, (i - 64) % 32);
        (32 + sub as u64) << (e - 5)
    }

    fn add(&mut self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        self.counts[Self::index(us)] += 1;
        self.n += 1;
        self.sum += us as u128;
        self.max = self.max.max(us);
    }

    fn mean(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            (self.sum / self.n as u128) as u64
        }
    }

    /// The lower edge of the bucket holding the `q` quantile (capped at max).
    fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::low(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::{LossModel, LossSegment, ScheduleEnd};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn cfg(rate: Option<u64>, delay: Duration, buffer: Buffer) -> LinkConfig {
        LinkConfig {
            rate_bps: rate,
            delay,
            buffer,
            ..Default::default()
        }
    }

    #[test]
    fn pure_delay() {
        let t0 = Instant::now();
        let mut l = Link::new(cfg(None, ms(20), Buffer::Unlimited), 1, t0);
        for i in 0..10 {
            let now = t0 + ms(i);
            assert_eq!(l.on_packet(now, 1200), Verdict::Deliver(now + ms(20)));
        }
        assert_eq!(l.stats().forwarded_packets, 10);
        assert_eq!(l.stats().peak_backlog_packets, 0);
    }

    #[test]
    fn serialisation_at_rate() {
        // 1000 bytes at 8 Mbit/s = 1 ms per packet.
        let t0 = Instant::now();
        let mut l = Link::new(cfg(Some(8_000_000), ms(10), Buffer::Unlimited), 1, t0);
        assert_eq!(l.tx_time(1000), ms(1));
        // A burst of 100 packets at t0: packet i finishes at (i+1) ms.
        for i in 0..100u64 {
            assert_eq!(
                l.on_packet(t0, 1000),
                Verdict::Deliver(t0 + ms(i + 1) + ms(10))
            );
        }
        assert_eq!(l.backlog(), (100_000, 100));
        // Delivered rate over the burst: 100 kB in 100 ms = 8 Mbit/s exactly.
        // After the queue drained, a new packet sees only its own tx time.
        let later = t0 + ms(500);
        assert_eq!(
            l.on_packet(later, 500),
            Verdict::Deliver(later + Duration::from_micros(500) + ms(10))
        );
        assert_eq!(l.backlog(), (500, 1));
        assert_eq!(l.stats().peak_backlog_bytes, 100_000);
    }

    #[test]
    fn paced_below_rate_never_queues() {
        let t0 = Instant::now();
        let mut l = Link::new(cfg(Some(8_000_000), ms(5), Buffer::Packets(1)), 1, t0);
        for i in 0..1000u64 {
            // one 1000-byte packet every 1 ms = exactly the rate
            let now = t0 + ms(i);
            assert_eq!(
                l.on_packet(now, 1000),
                Verdict::Deliver(now + ms(1) + ms(5))
            );
        }
        assert_eq!(l.stats().queue_drop_packets, 0);
        assert_eq!(l.stats().peak_backlog_packets, 1);
    }

    #[test]
    fn drop_tail_packets() {
        let t0 = Instant::now();
        let mut l = Link::new(cfg(Some(8_000_000), ms(0), Buffer::Packets(10)), 1, t0);
        let v: Vec<Verdict> = (0..15).map(|_| l.on_packet(t0, 1000)).collect();
        assert!(v[..10].iter().all(|x| matches!(x, Verdict::Deliver(_))));
        assert!(v[10..].iter().all(|x| *x == Verdict::QueueDrop));
        assert_eq!(l.stats().queue_drop_packets, 5);
        assert_eq!(l.stats().peak_backlog_packets, 10);
        // After 1 ms exactly one packet left the buffer: one more fits.
        assert!(matches!(l.on_packet(t0 + ms(1), 1000), Verdict::Deliver(_)));
        assert_eq!(l.on_packet(t0 + ms(1), 1000), Verdict::QueueDrop);
    }

    #[test]
    fn drop_tail_bytes() {
        let t0 = Instant::now();
        let mut l = Link::new(cfg(Some(8_000_000), ms(0), Buffer::Bytes(2500)), 1, t0);
        assert!(matches!(l.on_packet(t0, 1000), Verdict::Deliver(_)));
        assert!(matches!(l.on_packet(t0, 1000), Verdict::Deliver(_)));
        assert_eq!(l.on_packet(t0, 1000), Verdict::QueueDrop); // 3000 > 2500
        assert!(matches!(l.on_packet(t0, 500), Verdict::Deliver(_))); // 2500 fits
        assert_eq!(l.on_packet(t0, 1), Verdict::QueueDrop);
        assert_eq!(l.stats().peak_backlog_bytes, 2500);
        assert_eq!(l.stats().queue_drop_bytes, 1001);
    }

    #[test]
    fn bdp_buffer() {
        assert_eq!(
            Buffer::bdp(Some(20_000_000), ms(40), 1500),
            Buffer::Bytes(100_000)
        );
        assert_eq!(Buffer::bdp(Some(1_000), ms(1), 1500), Buffer::Bytes(1500));
        assert_eq!(Buffer::bdp(None, ms(40), 1500), Buffer::Unlimited);
    }

    fn bernoulli(p: f64) -> LossSchedule {
        LossSchedule::constant(LossModel::Bernoulli { p })
    }

    #[test]
    fn bernoulli_rate_within_bounds() {
        let t0 = Instant::now();
        let n = 100_000u64;
        for (p, seed) in [(0.01, 1u64), (0.05, 2), (0.3, 3)] {
            let c = LinkConfig {
                loss: bernoulli(p),
                ..Default::default()
            };
            let mut l = Link::new(c, seed, t0);
            for _ in 0..n {
                l.on_packet(t0, 100);
            }
            let lost = l.stats().lost_packets as f64;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((lost - n as f64 * p).abs() < 5.0 * sd, "p={p} lost={lost}");
            assert_eq!(l.stats().forwarded_packets + l.stats().lost_packets, n);
        }
    }

    #[test]
    fn determinism() {
        let t0 = Instant::now();
        let c = LinkConfig {
            rate_bps: Some(10_000_000),
            buffer: Buffer::Packets(20),
            loss: LossSchedule::constant(LossModel::GilbertElliott {
                p: 0.05,
                r: 0.3,
                loss_good: 0.01,
                loss_bad: 0.8,
            }),
            ..Default::default()
        };
        let run = |seed| {
            let mut l = Link::new(c.clone(), seed, t0);
            (0..5000u64)
                .map(|i| l.on_packet(t0 + Duration::from_micros(i * 900), 1200))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn gilbert_elliott_burst_length() {
        // loss only in the bad state: loss bursts = bad-state sojourns,
        // geometric with mean 1/r.
        let t0 = Instant::now();
        let (p, r) = (0.01, 0.25);
        let c = LinkConfig {
            loss: LossSchedule::constant(LossModel::GilbertElliott {
                p,
                r,
                loss_good: 0.0,
                loss_bad: 1.0,
            }),
            ..Default::default()
        };
        let mut l = Link::new(c, 11, t0);
        let n = 400_000;
        let (mut bursts, mut lost, mut in_burst) = (0u64, 0u64, false);
        for _ in 0..n {
            let is_lost = l.on_packet(t0, 100) == Verdict::Lost;
            if is_lost {
                lost += 1;
                if !in_burst {
                    bursts += 1;
                }
            }
            in_burst = is_lost;
        }
        let mean_burst = lost as f64 / bursts as f64;
        assert!(
            (mean_burst - 1.0 / r).abs() < 0.25,
            "mean burst {mean_burst}"
        );
        let loss_rate = lost as f64 / n as f64;
        let expect = p / (p + r);
        assert!(
            (loss_rate - expect).abs() < 0.2 * expect,
            "loss rate {loss_rate} vs {expect}"
        );
    }

    #[test]
    fn schedule_segments() {
        let t0 = Instant::now();
        let sched = LossSchedule {
            segments: vec![
                LossSegment {
                    from: ms(0),
                    to: Some(ms(100)),
                    model: LossModel::None,
                },
                LossSegment {
                    from: ms(100),
                    to: Some(ms(200)),
                    model: LossModel::Bernoulli { p: 1.0 },
                },
                LossSegment {
                    from: ms(200),
                    to: Some(ms(300)),
                    model: LossModel::Bernoulli { p: 0.5 },
                },
            ],
            end: ScheduleEnd::Hold,
        };
        let c = LinkConfig {
            loss: sched.clone(),
            ..Default::default()
        };
        let mut l = Link::new(c, 5, t0);
        let count = |l: &mut Link, from: u64, to: u64| {
            (from..to)
                .filter(|&i| l.on_packet(t0 + Duration::from_micros(i * 100), 10) == Verdict::Lost)
                .count()
        };
        assert_eq!(count(&mut l, 0, 1000), 0); // 0..100 ms
        assert_eq!(count(&mut l, 1000, 2000), 1000); // 100..200 ms: all lost
        let half = count(&mut l, 2000, 3000); // 200..300 ms: ~50 %
        assert!((400..600).contains(&half), "{half}");
        let held = count(&mut l, 3000, 13000); // holds 50 %
        assert!((4700..5300).contains(&held), "{held}");

        // Repeat: period 300 ms; 400..500 ms maps to 100..200 ms (all lost).
        let c = LinkConfig {
            loss: LossSchedule {
                end: ScheduleEnd::Repeat,
                ..sched
            },
            ..Default::default()
        };
        let mut l = Link::new(c, 5, t0);
        assert_eq!(count(&mut l, 3000, 4000), 0);
        assert_eq!(count(&mut l, 4000, 5000), 1000);
    }

    #[test]
    fn loss_position_capacity() {
        // Offered: 2000 packets of 1000 B at 8 Mbit/s in a burst, 50 % loss.
        let t0 = Instant::now();
        let mk = |pos| LinkConfig {
            rate_bps: Some(8_000_000),
            buffer: Buffer::Unlimited,
            loss: bernoulli(0.5),
            loss_position: pos,
            ..Default::default()
        };
        let last_delivery = |pos| {
            let mut l = Link::new(mk(pos), 3, t0);
            let mut last = t0;
            for _ in 0..2000 {
                if let Verdict::Deliver(at) = l.on_packet(t0, 1000) {
                    last = at;
                }
            }
            (last - t0, l.stats().forwarded_packets)
        };
        let (after_t, after_n) = last_delivery(LossPosition::AfterQueue);
        let (before_t, before_n) = last_delivery(LossPosition::BeforeQueue);
        // After: all 2000 are serialised (2 s), ~half delivered.
        assert!(after_t > ms(1990) && after_t <= ms(2000), "{after_t:?}");
        // Before: only the survivors are serialised, back to back.
        assert_eq!(before_t, ms(before_n));
        assert!((900..1100).contains(&after_n) && (900..1100).contains(&before_n));
    }

    #[test]
    fn validate_rejects() {
        let mut c = LinkConfig {
            buffer: Buffer::Bytes(100),
            rate_bps: Some(1000),
            ..Default::default()
        };
        assert!(c.validate().is_err());
        c.buffer = Buffer::Packets(0);
        assert!(c.validate().is_err());
        c.buffer = Buffer::Packets(1);
        assert!(c.validate().is_ok());
        c.rate_bps = Some(0);
        assert!(c.validate().is_err());
    }
    fn trace_link(ms: Vec<u64>, buffer: Buffer) -> LinkConfig {
        LinkConfig {
            buffer,
            trace: Some(crate::trace::TraceConfig::new(
                crate::trace::Trace::from_ms(ms).unwrap(),
                "synthetic",
                Duration::ZERO,
            )),
            ..Default::default()
        }
    }

    /// Offers `len`-byte packets every `gap` for `dur`; returns
    /// (delivered bytes by `dur`, per-packet sojourn times).
    fn saturate(
        l: &mut Link,
        t0: Instant,
        len: usize,
        gap: Duration,
        dur: Duration,
    ) -> (u64, Vec<Duration>) {
        let (mut bytes, mut sojourn, mut t) = (0u64, Vec::new(), t0);
        while t < t0 + dur {
            if let Verdict::Deliver(at) = l.on_packet(t, len) {
                let leave = at - l.config().delay;
                if leave <= t0 + dur {
                    bytes += len as u64;
                }
                sojourn.push(leave - t);
            }
            t += gap;
        }
        (bytes, sojourn)
    }

    #[test]
    fn constant_trace_delivers_its_capacity() {
        // One opportunity per ms (12 Mbit/s), 10 s, offered 2× the capacity
        // with 1472-byte datagrams (1500 B with headers: one per opportunity).
        let t0 = Instant::now();
        let ms_list: Vec<u64> = (1..=1000).collect();
        let mut l = Link::new(trace_link(ms_list, Buffer::Packets(50)), 1, t0);
        let (bytes, soj) = saturate(&mut l, t0, 1472, Duration::from_micros(500), ms(10_000));
        // Bound: every opportunity but the first carries one packet.
        let opps = 10_000u64;
        assert!(
            bytes <= opps * 1472 && bytes >= (opps - 1) * 1472,
            "{bytes}"
        );
        let st = l.stats_at(t0 + ms(10_000));
        assert_eq!(st.offered_bytes, Some(opps * 1500));
        // Full 50-packet queue: sojourn settles at 50 ms (one packet per ms).
        let late = &soj[soj.len() - 100..];
        assert!(
            late.iter().all(|d| *d > ms(48) && *d <= ms(51)),
            "{:?}",
            &late[..3]
        );
        assert!(st.queue_drop_packets > 9_000);
        assert!(
            st.sojourn_p95_us >= 48_000 && st.sojourn_p95_us <= 51_000,
            "{st:?}"
        );
    }

    #[test]
    fn square_wave_trace_follows_the_schedule() {
        // 50 ms with 2 opportunities per ms, then 50 ms with none; period 100 ms.
        let t0 = Instant::now();
        let mut v = Vec::new();
        for m in 0..50u64 {
            v.extend([m, m]);
        }
        v.push(100);
        let mut l = Link::new(trace_link(v, Buffer::Unlimited), 1, t0);
        // Paced at one 1000-byte packet per ms (below the on-phase rate).
        for i in 0..2000u64 {
            let t = t0 + ms(i) + Duration::from_micros(100);
            let Verdict::Deliver(at) = l.on_packet(t, 1000) else {
                panic!()
            };
            let d = at - t;
            // The on phase's last opportunities are at 49.0 ms: a packet
            // arriving at 49.1 ms already waits for the next period.
            if i < 49 {
                // First on phase: served by the next ms's opportunities.
                assert!(d <= ms(1), "i={i} d={d:?}");
            } else if i % 100 < 49 {
                // Later on phases: behind what queued during the off phase,
                // which drains at 2 - 1 = 1 packet per ms.
                assert!(d <= ms(26), "i={i} d={d:?}");
            } else {
                // Off phase: waits for the next period's opportunities, behind
                // the packets queued before it (served two per ms).
                let wait_to_on = ms(100 - i % 100) - Duration::from_micros(100);
                assert!(d >= wait_to_on && d <= wait_to_on + ms(26), "i={i} d={d:?}");
            }
        }
        // The link delivered everything that was offered (capacity 2× load
        // over the on phase = the load over the whole period).
        let st = l.stats_at(t0 + ms(2100));
        assert_eq!(st.forwarded_packets, 2000);
        // 101 opportunities per 100 ms period (the trace's last line, at
        // 100 ms, is one too): 21 periods, less the two at 0 ms (not after
        // the start), plus the two at 2100 ms.
        assert_eq!(st.offered_bytes, Some((21 * 101 + 2 - 2) * 1500));
    }

    #[test]
    fn trace_and_rate_exclude_each_other() {
        let mut c = trace_link(vec![1, 2], Buffer::Packets(10));
        assert!(c.validate().is_ok());
        c.rate_bps = Some(1_000_000);
        assert!(c.validate().is_err());
    }

    #[test]
    fn histogram_quantiles() {
        let mut h = Histogram::default();
        for us in 1..=10_000u64 {
            h.add(Duration::from_micros(us));
        }
        assert_eq!(h.mean(), 5000);
        let p95 = h.quantile(0.95) as f64;
        assert!((p95 - 9500.0).abs() / 9500.0 < 0.035, "{p95}");
        assert_eq!(h.quantile(1.0), Histogram::low(Histogram::index(10_000)));
        for us in [0u64, 5, 63, 64, 65, 100, 1_000, 123_456, 10_000_000_000] {
            let i = Histogram::index(us);
            assert!(Histogram::low(i) <= us, "{us}");
            if i + 1 < HIST_BUCKETS {
                assert!(Histogram::low(i + 1) > us, "{us}");
            }
        }
    }

    #[test]
    fn corruption_changes_one_early_byte_and_spares_version_negotiation() {
        let t0 = Instant::now();
        let c = LinkConfig {
            corrupt: LossSchedule::parse("droprate:0.3,3").unwrap(),
            ..Default::default()
        };
        let mut l = Link::new(c, 5, t0);
        let orig: Vec<u8> = (0..1200u32).map(|i| (i % 251) as u8 | 0x40).collect();
        let n = 20_000;
        let mut hit = 0;
        for _ in 0..n {
            let mut d = orig.clone();
            if l.corrupt(t0, &mut d) {
                hit += 1;
                let diff: Vec<usize> = (0..d.len()).filter(|&i| d[i] != orig[i]).collect();
                assert_eq!(diff.len(), 1);
                assert!(diff[0] <= 50);
            } else {
                assert_eq!(d, orig);
            }
        }
        let rate = hit as f64 / n as f64;
        assert!((rate - 0.294).abs() < 0.015, "{rate}");
        assert_eq!(l.stats().corrupted_packets, hit);
        // Version Negotiation: long header, version 0.
        let mut vn = vec![0x80u8, 0, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        let before = vn.clone();
        for _ in 0..100 {
            assert!(!l.corrupt(t0, &mut vn));
        }
        assert_eq!(vn, before);
        // Off by default.
        let mut plain = Link::new(LinkConfig::default(), 5, t0);
        let mut d = orig.clone();
        assert!(!plain.corrupt(t0, &mut d));
    }

    #[test]
    fn drop_list_drops_by_position() {
        let t0 = Instant::now();
        let mut l = Link::new(
            LinkConfig {
                drop_list: vec![2, 3, 7],
                ..Default::default()
            },
            1,
            t0,
        );
        let which: Vec<usize> = (1..=10usize)
            .filter(|_| l.on_packet(t0, 100) == Verdict::Lost)
            .collect();
        assert_eq!(which, [2, 3, 7]);
        let bad = LinkConfig {
            drop_list: vec![0],
            ..Default::default()
        };
        assert!(bad.validate().is_err());
    }
}
