//! Hybrid's loss statistics (docs/congestion.md §3.2 items 3, 4 and 7):
//! decayed loss rates of the packets that met a queue peak and of the
//! others, the erasure rate the coding layer or those give, the
//! excess-loss threshold of a round, the loss dispersion of bursty loss,
//! and the correlation test between losses and queue peaks.

use std::time::Duration;

use super::Hybrid;
#[cfg(doc)]
use super::HybridConfig;

/// Decayed loss accounting (packets), decayed once per round.
#[derive(Clone, Copy, Debug)]
pub(super) struct LossRate {
    lost: f64,
    total: f64,
    decay: f64,
}

impl LossRate {
    /// Packets needed before the estimate is trusted.
    const MIN_SAMPLES: f64 = 100.0;

    pub(super) fn new(decay: f64) -> Self {
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

    pub(super) fn rate(&self) -> Option<f64> {
        (self.total >= Self::MIN_SAMPLES).then(|| self.lost / self.total)
    }
}

/// Per-round decay of the loss-dispersion sums.
const DISPERSION_DECAY: f64 = 0.95;

/// Upper bound of [`Hybrid::loss_dispersion`].
const MAX_DISPERSION: f64 = 25.0;

impl Hybrid {
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
    /// correlation test: halfway between RTTmin and the highest RTT level
    /// of the last `queue_range_window` that held for sRTT/32 (a batch of
    /// ACKs after a stall is no level; see `Hybrid::rtt_peak_max`).
    /// Independent of the queueing
    /// tolerance, so it works on buffers shallower than the tolerance.
    pub fn queue_peak_threshold(&self) -> Option<Duration> {
        let min = self.rtt_min.get()?;
        let max = Duration::from_secs_f64(self.rtt_peak_max.get()?);
        (max > min).then(|| min + (max - min) / 2)
    }

    /// Whether the loss rate of packets that met no queue peak is below
    /// [`HybridConfig::competitive_max_random_loss`] (or not yet measured).
    pub fn random_loss_free(&self) -> bool {
        self.off_peak
            .rate()
            .is_none_or(|r| r < self.cfg.competitive_max_random_loss)
    }

    /// Whether losses read as overflows for the share entry and its pairs:
    /// no random loss measured, or
    /// ([`HybridConfig::competitive_correlated_losses`]) losses correlate
    /// with queue peaks, so that the off-peak ones are overflows
    /// misclassified behind another flow's standing queue.
    pub(super) fn losses_at_peaks(&self) -> bool {
        self.random_loss_free()
            || (self.cfg.competitive_correlated_losses && self.loss_delay_correlated())
    }

    /// Whether losses correlate with queueing: the loss rate of packets that
    /// met a queue peak (their RTT, or for a lost packet its successor's
    /// without random loss and its newest acknowledged neighbour's under
    /// it; above [`Hybrid::queue_peak_threshold`])
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

    /// Adds the round that ends (`total` packets decided) to the loss
    /// statistics.
    pub(super) fn end_round_losses(&mut self, total: f64) {
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
    }
}
