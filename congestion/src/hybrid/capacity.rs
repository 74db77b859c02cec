//! The bottleneck's capacity from ACK dispersion (packet pairs): while a
//! queue stands, the bottleneck sends this flow's packets at its full rate,
//! so two packets of this flow that left the queue one after the other are
//! acknowledged a transmission time apart. Another flow's packets between
//! them stretch the gap to two, three, ... transmission times; ACK
//! compression shrinks it. A pair counts only when its ACKs are further
//! apart than it was sent (the bottleneck spread it): an evenly paced
//! flow's gaps are its own rate, which the estimate read when the flow's
//! share was small, hence hybrid's paced pairs in the competitive mode.
//! The capacity is the fastest rate that a tenth of the samples share, in
//! bins an eighth of an octave wide, counts decaying with new samples
//! (docs/congestion.md §3.4, share balance).

use std::time::{Duration, Instant};

use crate::AckedPacket;

/// Bins per octave of rate.
const BINS_PER_OCTAVE: f64 = 8.0;
/// The lowest bin's rate, bytes per second (about 8 kbit/s) ...
const LOWEST: f64 = 1024.0;
/// ... and the number of bins: 24 octaves, up to about 137 Gbit/s.
const BINS: usize = 24 * BINS_PER_OCTAVE as usize;
/// A sample's weight grows by this factor per sample (old samples fade
/// with a time constant of about 2,000 samples).
const GROWTH: f64 = 1.0 + 1.0 / 2048.0;
/// Gaps shorter than this are ACK compression (ACKs handled in one batch).
const MIN_GAP: Duration = Duration::from_micros(20);
/// A sample counts only if its ACK gap is wider than its send gap by this
/// factor (the bottleneck spread the pair).
const MIN_SPREAD: f64 = 1.25;
/// Samples before an estimate is given.
const MIN_SAMPLES: u64 = 64;
/// Samples between recomputations of the estimate.
const RECOMPUTE_EVERY: u64 = 16;
/// The share of the samples' weight the capacity's bins must hold.
const MIN_FRACTION: f64 = 0.1;

/// See the module documentation.
#[derive(Clone, Debug)]
pub(super) struct Capacity {
    /// The previous ACK event: when, the largest packet number it
    /// acknowledged, and when that packet was sent.
    last: Option<(Instant, u64, Instant)>,
    counts: Vec<f64>,
    weight: f64,
    samples: u64,
    /// The estimate, recomputed every `RECOMPUTE_EVERY` samples (it is read
    /// for every acknowledged packet in the competitive mode).
    estimate: Option<f64>,
}

impl Capacity {
    pub(super) fn new() -> Self {
        Capacity {
            last: None,
            counts: vec![0.0; BINS],
            weight: 1.0,
            samples: 0,
            estimate: None,
        }
    }

    /// An ACK event at `now` acknowledging `acked` (in packet-number
    /// order); `queued`: a queue stood at the bottleneck (the packets were
    /// sent back to back from it). A sample is taken when the event
    /// acknowledges only packets that follow the previous event's largest
    /// without a gap.
    pub(super) fn on_ack(&mut self, now: Instant, acked: &[AckedPacket], queued: bool) {
        let (Some(first), Some(last)) = (acked.first(), acked.last()) else {
            return;
        };
        let contiguous = acked.windows(2).all(|w| w[1].pkt_num == w[0].pkt_num + 1);
        if let Some((t, largest, sent)) = self.last {
            let gap = now.saturating_duration_since(t);
            // Only the bottleneck spreads a pair: an ACK gap no wider than
            // the send gap is this flow's own pacing (or ACK compression)
            // and says nothing about the capacity.
            let send_gap = first.time_sent.saturating_duration_since(sent);
            if queued
                && contiguous
                && first.pkt_num == largest + 1
                && gap >= MIN_GAP
                && gap.as_secs_f64() > MIN_SPREAD * send_gap.as_secs_f64()
            {
                let bytes: usize = acked.iter().map(|a| a.bytes).sum();
                self.add(bytes as f64 / gap.as_secs_f64());
            }
        }
        if self.last.is_none_or(|(_, l, _)| last.pkt_num > l) {
            self.last = Some((now, last.pkt_num, last.time_sent));
        }
    }

    fn add(&mut self, rate: f64) {
        if !rate.is_finite() || rate < LOWEST {
            return;
        }
        let bin = ((rate / LOWEST).log2() * BINS_PER_OCTAVE) as usize;
        if bin >= BINS {
            return;
        }
        self.weight *= GROWTH;
        self.counts[bin] += self.weight;
        self.samples += 1;
        if self.weight > 1e12 {
            for c in &mut self.counts {
                *c /= self.weight;
            }
            self.weight = 1.0;
        }
        if self.samples >= MIN_SAMPLES && self.samples.is_multiple_of(RECOMPUTE_EVERY) {
            self.estimate = self.compute();
        }
    }

    /// The capacity in bytes per second (see [`Capacity::compute`]), as of
    /// the last multiple of `RECOMPUTE_EVERY` samples; `None` before
    /// `MIN_SAMPLES` samples.
    pub(super) fn estimate(&self) -> Option<f64> {
        self.estimate
    }

    /// The capacity in bytes per second: the fastest bin whose
    /// neighbourhood (itself and one bin each side) holds at least
    /// `MIN_FRACTION` of the weight, or rather the peak of that
    /// neighbourhood, interpolated between its own neighbours.
    /// Not the most frequent bin: two paced flows interleave their packets
    /// regularly, so that the most frequent gap may be two or three
    /// transmission times; the one-transmission gaps are fewer but always
    /// the fastest group. ACK compression spreads over faster bins, none
    /// of which gathers that fraction.
    fn compute(&self) -> Option<f64> {
        let total: f64 = self.counts.iter().sum();
        let score = |i: usize| {
            self.counts[i.saturating_sub(1)..(i + 2).min(BINS)]
                .iter()
                .sum::<f64>()
        };
        let first = (0..BINS)
            .rev()
            .find(|&i| score(i) >= MIN_FRACTION * total)?;
        // The fastest qualifying neighbourhood's own peak.
        let best = (first.saturating_sub(1)..(first + 2).min(BINS))
            .max_by(|&a, &b| self.counts[a].total_cmp(&self.counts[b]))?;
        // Interpolated within the peak's neighbourhood (the weighted mean
        // of the bins' log rates): a bin is 9 % wide, and its centre read
        // 20.8 Mbit/s where both flows' goodput summed to 18.8.
        let range = best.saturating_sub(1)..(best + 2).min(BINS);
        let w: f64 = self.counts[range.clone()].iter().sum();
        let pos = range
            .map(|j| self.counts[j] * (j as f64 + 0.5))
            .sum::<f64>()
            / w.max(1e-12);
        Some(LOWEST * (pos / BINS_PER_OCTAVE).exp2())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acked(p: u64) -> Vec<AckedPacket> {
        vec![AckedPacket {
            pkt_num: p,
            time_sent: Instant::now(),
            bytes: 1250,
        }]
    }

    /// A share of a fifth of a 10 Mbit/s bottleneck: between two of this
    /// flow's packets k others with probability 0.2 · 0.8^k, plus ACK
    /// compression (every tenth gap a few microseconds); the estimate is
    /// within a bin of the capacity, which the median is not.
    #[test]
    fn the_fastest_common_gap_is_one_transmission_time() {
        let mut c = Capacity::new();
        let t0 = Instant::now();
        let tx = Duration::from_secs_f64(1250.0 / 1.25e6);
        let mut t = t0;
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut gaps = Vec::new();
        for p in 0..2000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let u = (rng >> 11) as f64 / (1u64 << 53) as f64;
            let others = (u.ln() / 0.8f64.ln()).floor() as u32;
            let gap = if p % 10 == 9 {
                Duration::from_micros(5)
            } else {
                tx * (others + 1)
            };
            t += gap;
            gaps.push(gap);
            c.on_ack(t, &acked(p), true);
        }
        let est = c.estimate().unwrap();
        assert!((est / 1.25e6 - 1.0).abs() < 0.1, "{est}");
        gaps.sort();
        let median = 1250.0 / gaps[gaps.len() / 2].as_secs_f64();
        assert!(median < 0.6 * 1.25e6, "{median}");
    }

    /// Two paced flows interleave regularly: here 40 % of this flow's gaps
    /// hold one other packet and 40 % two, only 20 % none. The most
    /// frequent gap is two transmission times; the estimate is still the
    /// capacity.
    #[test]
    fn regular_interleaving_does_not_halve_the_estimate() {
        let mut c = Capacity::new();
        let tx = Duration::from_secs_f64(1250.0 / 1.25e6);
        let mut t = Instant::now();
        for p in 0..500u64 {
            t += tx * [1, 2, 2, 3, 3][(p % 5) as usize];
            c.on_ack(t, &acked(p), true);
        }
        let est = c.estimate().unwrap();
        assert!((est / 1.25e6 - 1.0).abs() < 0.1, "{est}");
    }

    /// A flow with a fifth of a 10 Mbit/s bottleneck paced evenly: its
    /// packets leave the queue at its own send spacing (others between
    /// them), which says nothing about the capacity, and ACK-compressed
    /// gaps narrower than the send spacing neither. Paced in pairs (the
    /// second a sixteenth of the mean gap after the first), each pair
    /// leaves one transmission time apart and the estimate is the capacity.
    #[test]
    fn only_gaps_the_bottleneck_widened_count() {
        let tx = Duration::from_secs_f64(1250.0 / 1.25e6);
        let mean = tx * 5;
        let run = |pairs: bool| {
            let mut c = Capacity::new();
            let t0 = Instant::now();
            let (mut sent, mut acked_at) = (t0, t0 + Duration::from_millis(40));
            for p in 0..2000u64 {
                let (send_gap, ack_gap) = match (pairs, p % 2) {
                    (true, 1) => (mean / 16, tx),
                    (true, _) => (mean * 2 - mean / 16, mean * 2 - tx),
                    // Every fifth gap ACK-compressed.
                    (false, _) if p % 5 == 4 => (mean, Duration::from_micros(30)),
                    (false, _) => (mean, mean),
                };
                sent += send_gap;
                acked_at += ack_gap;
                let a = [AckedPacket {
                    pkt_num: p,
                    time_sent: sent,
                    bytes: 1250,
                }];
                c.on_ack(acked_at, &a, true);
            }
            (c.samples, c.estimate())
        };
        let (samples, est) = run(false);
        assert_eq!((samples, est), (0, None));
        let (_, est) = run(true);
        let est = est.unwrap();
        assert!((est / 1.25e6 - 1.0).abs() < 0.1, "{est}");
    }

    #[test]
    fn no_sample_without_a_queue_or_across_a_hole() {
        let mut c = Capacity::new();
        let t0 = Instant::now();
        for p in 0..200u64 {
            c.on_ack(t0 + Duration::from_millis(p), &acked(p), false);
        }
        assert_eq!(c.samples, 0);
        for p in 0..200u64 {
            // Every other packet missing (lost or acknowledged out of order).
            c.on_ack(
                t0 + Duration::from_millis(300 + p),
                &acked(1000 + 2 * p),
                true,
            );
        }
        assert_eq!(c.samples, 0);
        assert_eq!(c.estimate(), None);
    }
}
