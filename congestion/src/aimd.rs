//! Reference Reno-like AIMD controller: slow start, additive increase of
//! `alpha` MSS per RTT with byte counting, multiplicative decrease by a
//! fixed `beta` (0.5) at most once per RTT. Used as the "standard TCP" flow
//! in the simulator (the flow the Padhye model describes).

use std::time::{Duration, Instant};

use crate::growth::AdditiveIncrease;
use crate::state_name;
use crate::{
    collapse_window, cwnd_limited, rate_of, CommonConfig, CongestionEvent, Controller, SendState,
};

/// Configuration of [`Aimd`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdConfig {
    /// Shared parameters.
    pub common: CommonConfig,
    /// Additive increase per RTT, in MSS.
    pub alpha: f64,
    /// Multiplicative decrease factor.
    pub beta: f64,
    /// Pacing gain over cwnd/sRTT reported by `pacing_rate` (`None`: no rate).
    pub pacing_gain: Option<f64>,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            common: CommonConfig::default(),
            alpha: 1.0,
            beta: 0.5,
            pacing_gain: None,
        }
    }
}

/// Reno-like AIMD(alpha, beta). See the module documentation.
#[derive(Clone, Debug)]
pub struct Aimd {
    cfg: AimdConfig,
    cwnd: f64,
    ssthresh: f64,
    send: SendState,
    ai: AdditiveIncrease,
    srtt: Duration,
    backoffs: u64,
}

impl Aimd {
    /// A new controller.
    pub fn new(cfg: AimdConfig) -> Self {
        Aimd {
            cwnd: cfg.common.initial_window(),
            ssthresh: f64::INFINITY,
            send: SendState::default(),
            ai: AdditiveIncrease::default(),
            srtt: cfg.common.initial_rtt,
            backoffs: 0,
            cfg,
        }
    }

    /// Number of window reductions so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

impl Controller for Aimd {
    record_sent!();

    fn on_congestion_event(&mut self, ev: &CongestionEvent<'_>) {
        self.srtt = ev.rtt.smoothed;
        self.send.on_acked(ev.acked);
        if ev.lost.iter().any(|l| self.send.loss_counts(l.pkt_num)) {
            self.cwnd = (self.cwnd * self.cfg.beta).max(self.cfg.common.min_window());
            self.ssthresh = self.cwnd;
            self.send.start_recovery();
            self.ai.reset();
            self.backoffs += 1;
        }
        let mss = self.cfg.common.mss;
        if !cwnd_limited(ev.prior_in_flight, self.cwnd, mss, self.in_slow_start()) {
            return;
        }
        for a in ev.acked {
            // RFC 9002 §7.3.2: no increase for packets sent before recovery.
            if self.send.sent_before_backoff(a.pkt_num) {
                continue;
            }
            if self.in_slow_start() {
                self.cwnd += a.bytes as f64;
            } else {
                self.ai
                    .on_ack(&mut self.cwnd, a.bytes, self.cfg.alpha * mss as f64);
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
            self.ai.reset();
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
