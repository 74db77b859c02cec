//! Sans-IO model of one direction of an emulated link.
//!
//! A packet offered to a [`Link`] at time `now` goes through, in order:
//!
//! 1. the loss model, if [`LossPosition::BeforeQueue`];
//! 2. a drop-tail FIFO buffer feeding a bottleneck that serialises at
//!    `rate` bit/s (a packet of `L` bytes occupies it for `8L/rate` s);
//! 3. the loss model, if [`LossPosition::AfterQueue`] (the default): the
//!    packet has then consumed bottleneck capacity even if it is lost;
//! 4. a constant propagation delay.
//!
//! Because the bottleneck is FIFO with a constant rate and the delay is
//! constant, the delivery time of each packet is known when it arrives, so
//! [`Link::on_packet`] returns the complete [`Verdict`] at once. Everything
//! is computed from the `now` arguments (virtual time); nothing reads a clock.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::loss::{LossSchedule, LossState};
use crate::rng::Rng;

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
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            rate_bps: None,
            delay: Duration::ZERO,
            buffer: Buffer::Unlimited,
            loss: LossSchedule::none(),
            loss_position: LossPosition::default(),
        }
    }
}

impl LinkConfig {
    /// Checks the configuration; returns a one-line description of the first problem.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == Some(0) {
            return Err("rate must be > 0 (omit it for an unlimited rate)".into());
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
}

/// One direction of an emulated link (sans-IO).
#[derive(Debug)]
pub struct Link {
    cfg: LinkConfig,
    rng: Rng,
    loss_state: LossState,
    start: Instant,
    last_now: Instant,
    busy_until: Instant,
    /// (serialisation finish time, length) of packets in the buffer.
    backlog: VecDeque<(Instant, u64)>,
    backlog_bytes: u64,
    stats: LinkStats,
}

impl Link {
    /// Creates a link. `start` is time zero of the loss schedule.
    /// The same `cfg`, `seed` and packet sequence always give the same verdicts.
    pub fn new(cfg: LinkConfig, seed: u64, start: Instant) -> Self {
        let loss_state = LossState::new(&cfg.loss);
        Link {
            cfg,
            rng: Rng::new(seed),
            loss_state,
            start,
            last_now: start,
            busy_until: start,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            stats: LinkStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Counters so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
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

    /// Offers a packet of `len` bytes arriving at `now`. Times earlier than a
    /// previous call's `now` are treated as equal to it.
    pub fn on_packet(&mut self, now: Instant, len: usize) -> Verdict {
        let now = now.max(self.last_now);
        self.last_now = now;
        let lenb = len as u64;
        self.stats.arrived_packets += 1;
        self.stats.arrived_bytes += lenb;
        self.drain(now);

        if self.cfg.loss_position == LossPosition::BeforeQueue && self.lose(now) {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += lenb;
            return Verdict::Lost;
        }

        let finish = if self.cfg.rate_bps.is_some() {
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
            let begin = self.busy_until.max(now);
            let finish = begin + self.tx_time(len);
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
        Verdict::Deliver(finish + self.cfg.delay)
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
}
