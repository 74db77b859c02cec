//! A simple CUBIC-like controller (RFC 9438 shape: beta 0.7, C 0.4,
//! Reno-friendly region, fast convergence), used as a competing flow in the
//! simulator. Not a full RFC 9438 implementation. With
//! [`CubicConfig::hystart`] its slow start follows HyStart++ (RFC 9406), as
//! the slow starts of quiche, ngtcp2 and quic-go do.
//!
//! With [`CubicConfig::rollback_frac`] it also models quiche's handling of
//! "spurious" congestion events: when the recovery period that followed a
//! backoff ends having lost fewer than `max(2, rollback_frac * window)`
//! further packets, the backoff is undone. quiche 0.30 uses 0.2, which makes
//! it ignore isolated drops (docs/results.md §5).

use std::time::{Duration, Instant};

use crate::growth::CubicGrowth;
use crate::state_name;
use crate::{
    collapse_window, cwnd_limited, rate_of, CommonConfig, CongestionEvent, Controller, SendState,
};

/// Configuration of [`Cubic`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicConfig {
    /// Shared parameters.
    pub common: CommonConfig,
    /// Multiplicative decrease factor (0.7 in RFC 9438).
    pub beta: f64,
    /// Cubic constant C in packets/s^3 (0.4 in RFC 9438).
    pub c: f64,
    /// Pacing gain over cwnd/sRTT reported by `pacing_rate` (`None`: no rate).
    pub pacing_gain: Option<f64>,
    /// Undo a backoff whose recovery lost fewer than `max(2, this fraction
    /// of the window in packets)` further packets (`None`: never undo).
    pub rollback_frac: Option<f64>,
    /// HyStart++ (RFC 9406): slow start ends on a delay increase of
    /// max(4 ms, min(16 ms, RTT/8)) between rounds (8 samples each) into
    /// conservative slow start (a quarter of the growth for 5 rounds, back
    /// to slow start if the round minimum falls below the baseline again).
    pub hystart: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            common: CommonConfig::default(),
            beta: 0.7,
            c: 0.4,
            pacing_gain: None,
            rollback_frac: None,
            hystart: false,
        }
    }
}

/// CUBIC-like controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    cwnd: f64,
    ssthresh: f64,
    send: SendState,
    growth: CubicGrowth,
    srtt: Duration,
    backoffs: u64,
    /// Packets declared lost so far.
    lost_total: u64,
    /// State before the last backoff, and `lost_total` at that backoff,
    /// while its recovery period lasts (rollback model only).
    prior: Option<(f64, f64, CubicGrowth, u64)>,
    rollbacks: u64,
    hystart: HyStartPp,
}

/// HyStart++ state (RFC 9406 §4).
#[derive(Clone, Debug, Default)]
struct HyStartPp {
    /// The current round ends when a packet at or above this is acked.
    round_end: Option<u64>,
    last_min: Option<Duration>,
    cur_min: Option<Duration>,
    samples: u32,
    /// In conservative slow start: the baseline RTT and the rounds so far.
    css: Option<(Duration, u32)>,
    /// Slow starts that ended on delay (entered CSS).
    exits: u64,
}

/// RFC 9406's N_RTT_SAMPLE, CSS_GROWTH_DIVISOR and CSS_ROUNDS.
const HS_SAMPLES: u32 = 8;
const CSS_DIVISOR: f64 = 4.0;
const CSS_ROUNDS: u32 = 5;

impl Cubic {
    /// A new controller.
    pub fn new(cfg: CubicConfig) -> Self {
        Cubic {
            cwnd: cfg.common.initial_window(),
            ssthresh: f64::INFINITY,
            send: SendState::default(),
            growth: CubicGrowth::new(cfg.c),
            srtt: cfg.common.initial_rtt,
            backoffs: 0,
            lost_total: 0,
            prior: None,
            rollbacks: 0,
            hystart: HyStartPp::default(),
            cfg,
        }
    }

    /// Number of window reductions so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }

    /// Number of window reductions undone (rollback model).
    pub fn rollbacks(&self) -> u64 {
        self.rollbacks
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Slow starts ended by HyStart++'s delay test.
    pub fn hystart_exits(&self) -> u64 {
        self.hystart.exits
    }

    /// HyStart++'s per-ACK part: RTT samples, the delay test, and the
    /// round boundaries (CSS rounds, return to slow start).
    fn hystart_on_ack(&mut self, ev: &CongestionEvent<'_>) {
        let hs = &mut self.hystart;
        if ev.rtt_updated {
            hs.cur_min = Some(hs.cur_min.map_or(ev.rtt.latest, |m| m.min(ev.rtt.latest)));
            hs.samples += 1;
            if let (None, Some(cur), Some(last)) = (hs.css, hs.cur_min, hs.last_min) {
                let thresh = (last / 8).clamp(Duration::from_millis(4), Duration::from_millis(16));
                if hs.samples >= HS_SAMPLES && cur >= last + thresh {
                    hs.css = Some((cur, 0));
                    hs.exits += 1;
                }
            }
        }
        let largest = ev.acked.last().map(|a| a.pkt_num);
        if largest.is_some_and(|l| hs.round_end.is_none_or(|e| l >= e)) {
            if let Some((baseline, rounds)) = hs.css {
                if hs.cur_min.is_some_and(|c| c < baseline) {
                    hs.css = None;
                } else if rounds + 1 >= CSS_ROUNDS {
                    hs.css = None;
                    self.ssthresh = self.cwnd;
                } else {
                    hs.css = Some((baseline, rounds + 1));
                }
            }
            if hs.samples >= HS_SAMPLES {
                hs.last_min = hs.cur_min;
            }
            hs.cur_min = None;
            hs.samples = 0;
            hs.round_end = self.send.largest_sent.map(|l| l + 1);
        }
    }
}

impl Controller for Cubic {
    record_sent!();

    fn on_congestion_event(&mut self, ev: &CongestionEvent<'_>) {
        self.srtt = ev.rtt.smoothed;
        self.send.on_acked(ev.acked);
        let mss = self.cfg.common.mss as f64;
        self.lost_total += ev.lost.len() as u64;
        // Recovery ends with the first acknowledgement of a packet sent
        // after the backoff: undo it if few further packets were lost.
        if let (Some(frac), Some(&(cwnd, ssthresh, _, lost_at))) =
            (self.cfg.rollback_frac, self.prior.as_ref())
        {
            if ev
                .acked
                .iter()
                .any(|a| !self.send.sent_before_backoff(a.pkt_num))
            {
                let threshold = (frac * self.cwnd / mss).max(2.0);
                let new_lost = (self.lost_total - lost_at) as f64;
                if new_lost < threshold && cwnd >= ssthresh && self.cwnd < cwnd {
                    let (cwnd, ssthresh, growth, _) = self.prior.take().unwrap();
                    self.cwnd = cwnd;
                    self.ssthresh = ssthresh;
                    self.growth = growth;
                    self.rollbacks += 1;
                }
                self.prior = None;
            }
        }
        if ev.lost.iter().any(|l| self.send.loss_counts(l.pkt_num)) {
            if self.cfg.rollback_frac.is_some() {
                self.prior = Some((
                    self.cwnd,
                    self.ssthresh,
                    self.growth.clone(),
                    self.lost_total,
                ));
            }
            let before = self.cwnd;
            self.cwnd = (self.cwnd * self.cfg.beta).max(self.cfg.common.min_window());
            self.ssthresh = self.cwnd;
            self.hystart.css = None;
            self.growth
                .on_backoff(ev.now, before / mss, self.cwnd / mss, self.cfg.beta);
            self.send.start_recovery();
            self.backoffs += 1;
        }
        if self.cfg.hystart && self.in_slow_start() {
            self.hystart_on_ack(ev);
        }
        if !cwnd_limited(
            ev.prior_in_flight,
            self.cwnd,
            self.cfg.common.mss,
            self.in_slow_start(),
        ) {
            return;
        }
        for a in ev.acked {
            if self.send.sent_before_backoff(a.pkt_num) {
                continue;
            }
            if self.in_slow_start() {
                let divisor = if self.hystart.css.is_some() {
                    CSS_DIVISOR
                } else {
                    1.0
                };
                self.cwnd += a.bytes as f64 / divisor;
            } else {
                let mut w = self.cwnd / mss;
                self.growth
                    .on_ack(ev.now, ev.rtt.min, &mut w, a.bytes as f64 / mss);
                self.cwnd = w * mss;
            }
        }
    }

    fn on_retransmission_timeout(&mut self, packets_retransmitted: bool) {
        if packets_retransmitted {
            collapse_window(
                &mut self.cwnd,
                &mut self.ssthresh,
                self.cfg.beta,
                &self.cfg.common,
            );
            self.growth.reset();
            // Losses of packets sent before the collapse are part of it.
            self.send.start_recovery();
        }
    }

    window_accessors!();

    fn pacing_rate(&self, _bif: usize) -> Option<u64> {
        self.cfg
            .pacing_gain
            .map(|g| rate_of(self.cwnd, self.srtt, g))
    }

    fn state_str(&self) -> &'static str {
        state_name(self.in_slow_start(), self.send.in_recovery())
    }
}
