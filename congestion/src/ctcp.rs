//! CTCP congestion control (Kim, Cloud, ParandehGheibi, Urbina, Fouli,
//! Leith, Médard: "Congestion Control for Coded Transport Layers", §III).
//!
//! AIMD on a token window (bytes): additive increase of `alpha` MSS per RTT
//! with byte counting, and on a loss event the adaptive backoff of
//! Equation (1), `beta = RTTmin / RTT`:
//!
//! * on an under-used path `RTT == RTTmin`, so `beta == 1` and random losses
//!   do not shrink the window;
//! * when a drop-tail queue overflows, `RTT == RTTmax` and the backoff empties
//!   the queue exactly; with a BDP of buffer `beta == 0.5`, i.e. standard TCP.
//!
//! At most one backoff per RTT: losses of packets sent before the last
//! backoff are ignored. `RTTmin` is a windowed minimum of RTT samples
//! (default 10 s); `RTT` is the latest RTT sample. `beta` is clamped to
//! `[beta_min, beta_max]` (default `[0.5, 1]`; the paper does not clamp, with
//! a BDP buffer the clamp is never active). A backoff with `beta == 1` is not
//! a backoff (no recovery epoch starts). Slow start ends at the first backoff.
//! Optionally the additive increase is replaced by a CUBIC-shaped increase
//! (the paper notes the backoff combines with Cubic's increase).

use std::time::{Duration, Instant};

use crate::filter::WindowedMin;
use crate::growth::{AdditiveIncrease, CubicGrowth};
use crate::state_name;
use crate::{
    collapse_window, cwnd_limited, slow_start_aware_rate, CommonConfig, CongestionEvent,
    Controller, SendState,
};

/// Configuration of [`Ctcp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CtcpConfig {
    /// Shared parameters.
    pub common: CommonConfig,
    /// Additive increase per RTT, in MSS.
    pub alpha: f64,
    /// Lower clamp of the backoff factor.
    pub beta_min: f64,
    /// Upper clamp of the backoff factor.
    pub beta_max: f64,
    /// Window of the RTTmin filter.
    pub rtt_min_window: Duration,
    /// Use a CUBIC-shaped increase instead of linear increase.
    pub cubic_increase: bool,
    /// CUBIC constant C (packets/s^3) when `cubic_increase` is set.
    pub cubic_c: f64,
    /// Suppress increase on acks of packets sent before the last backoff
    /// (RFC 9002 recovery). Off by default: under random loss a loss event
    /// happens every RTT and freezing would stall growth.
    pub freeze_in_recovery: bool,
    /// Pacing gain over cwnd/sRTT reported by `pacing_rate` (`None`: no rate).
    pub pacing_gain: Option<f64>,
    /// The `RTT` of Equation (1): the latest sample (`false`, as published,
    /// the default) or the minimum sample over the last smoothed RTT
    /// (`true`). The round minimum ignores the transient queue of pacing
    /// bursts and ACK jitter (98% instead of 89% utilisation at 10% random
    /// loss in the simulator) but also the small standing queue of a shallow
    /// buffer, where it then backs off too little (docs/congestion.md §2.1).
    pub round_min_rtt: bool,
}

impl Default for CtcpConfig {
    fn default() -> Self {
        CtcpConfig {
            common: CommonConfig::default(),
            alpha: 1.0,
            beta_min: 0.5,
            beta_max: 1.0,
            rtt_min_window: Duration::from_secs(10),
            cubic_increase: false,
            cubic_c: 0.4,
            freeze_in_recovery: false,
            pacing_gain: Some(1.25),
            round_min_rtt: false,
        }
    }
}

/// The CTCP controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Ctcp {
    cfg: CtcpConfig,
    cwnd: f64,
    ssthresh: f64,
    slow_start: bool,
    send: SendState,
    ai: AdditiveIncrease,
    cubic: CubicGrowth,
    rtt_min: WindowedMin<Duration>,
    latest_rtt: Option<Duration>,
    round_rtt: WindowedMin<Duration>,
    srtt: Duration,
    last_beta: Option<f64>,
    backoffs: u64,
}

impl Ctcp {
    /// A new controller.
    pub fn new(cfg: CtcpConfig) -> Self {
        Ctcp {
            cwnd: cfg.common.initial_window(),
            ssthresh: f64::INFINITY,
            slow_start: true,
            send: SendState::default(),
            ai: AdditiveIncrease::default(),
            cubic: CubicGrowth::new(cfg.cubic_c),
            rtt_min: WindowedMin::new(cfg.rtt_min_window),
            latest_rtt: None,
            round_rtt: WindowedMin::new(cfg.common.initial_rtt),
            srtt: cfg.common.initial_rtt,
            last_beta: None,
            backoffs: 0,
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CtcpConfig {
        &self.cfg
    }

    /// Current windowed RTTmin, if any sample was seen.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min.get()
    }

    /// Backoff factor computed at the last counted loss event (possibly 1).
    pub fn last_beta(&self) -> Option<f64> {
        self.last_beta
    }

    /// Number of window reductions (`beta < 1`) so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }

    /// Equation (1), clamped: `RTTmin / RTT`.
    pub fn beta(&self) -> f64 {
        let rtt = if self.cfg.round_min_rtt {
            self.round_rtt.get()
        } else {
            self.latest_rtt
        };
        match (self.rtt_min.get(), rtt) {
            (Some(min), Some(rtt)) if !rtt.is_zero() => {
                (min.as_secs_f64() / rtt.as_secs_f64()).clamp(self.cfg.beta_min, self.cfg.beta_max)
            }
            _ => self.cfg.beta_min,
        }
    }
}

impl Controller for Ctcp {
    fn metrics(&self, out: &mut dyn FnMut(&'static str, f64)) {
        if let Some(m) = self.rtt_min() {
            out("ctcp_rtt_min_ms", m.as_secs_f64() * 1e3);
        }
        if let Some(b) = self.last_beta() {
            out("beta", b);
        }
        out("backoffs", self.backoffs() as f64);
    }

    record_sent!();

    fn on_congestion_event(&mut self, ev: &CongestionEvent<'_>) {
        self.srtt = ev.rtt.smoothed;
        if ev.rtt_updated {
            self.rtt_min.update(ev.now, ev.rtt.latest);
            self.latest_rtt = Some(ev.rtt.latest);
            self.round_rtt.set_window(self.srtt);
            self.round_rtt.update(ev.now, ev.rtt.latest);
        } else {
            self.rtt_min.expire(ev.now);
        }
        self.send.on_acked(ev.acked);
        let mss = self.cfg.common.mss as f64;

        if ev.lost.iter().any(|l| self.send.loss_counts(l.pkt_num)) {
            let beta = self.beta();
            self.last_beta = Some(beta);
            if beta < 1.0 {
                let before = self.cwnd;
                self.cwnd = (self.cwnd * beta).max(self.cfg.common.min_window());
                self.ssthresh = self.cwnd;
                self.slow_start = false;
                self.send.start_recovery();
                self.ai.reset();
                self.cubic
                    .on_backoff(ev.now, before / mss, self.cwnd / mss, beta);
                self.backoffs += 1;
            }
        }

        if !cwnd_limited(
            ev.prior_in_flight,
            self.cwnd,
            self.cfg.common.mss,
            self.slow_start,
        ) {
            return;
        }
        for a in ev.acked {
            if self.cfg.freeze_in_recovery && self.send.sent_before_backoff(a.pkt_num) {
                continue;
            }
            if self.slow_start {
                self.cwnd += a.bytes as f64;
                if self.cwnd >= self.ssthresh {
                    self.slow_start = false;
                }
            } else if self.cfg.cubic_increase {
                let mut w = self.cwnd / mss;
                let rtt = self.rtt_min.get().unwrap_or(self.srtt);
                self.cubic.on_ack(ev.now, rtt, &mut w, a.bytes as f64 / mss);
                self.cwnd = w * mss;
            } else {
                self.ai
                    .on_ack(&mut self.cwnd, a.bytes, self.cfg.alpha * mss);
            }
        }
    }

    fn on_retransmission_timeout(&mut self, packets_retransmitted: bool) {
        if packets_retransmitted {
            collapse_window(&mut self.cwnd, &mut self.ssthresh, 0.5, &self.cfg.common);
            self.slow_start = true;
            self.ai.reset();
            self.cubic.reset();
            // Losses of packets sent before the collapse are part of it.
            self.send.start_recovery();
        }
    }

    window_accessors!();

    fn pacing_rate(&self, _bif: usize) -> Option<u64> {
        let gain = self.cfg.pacing_gain?;
        Some(slow_start_aware_rate(
            self.cwnd,
            self.srtt,
            gain,
            self.slow_start,
        ))
    }

    fn state_str(&self) -> &'static str {
        state_name(self.slow_start, self.send.in_recovery())
    }
}
