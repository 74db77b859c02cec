//! TCP Vegas (Brakmo & Peterson), as used by TCP/NC (Sundararajan et al.,
//! "Network Coding Meets TCP") and TCP VON.
//!
//! Once per round trip, with `RTT` the smallest RTT sample of the round and
//! `BaseRTT` the windowed minimum RTT, the controller computes
//! `diff = (cwnd/BaseRTT - cwnd/RTT) * BaseRTT` (packets queued in the
//! network) and grows the window by one MSS if `diff < alpha`, shrinks it by
//! one MSS if `diff > beta`, and otherwise holds. Slow start ends when
//! `diff > gamma`.
//!
//! When the coding layer supplies degree-of-freedom RTT samples
//! ([`crate::CodingFeedback::DofRtt`]) and `use_dof_rtt` is set, both `RTT`
//! and `BaseRTT` come from those samples: TCP/NC measures the effective RTT
//! from the first send of a packet to the ACK that reports it *seen*, so
//! erasures the code has to compensate appear as extra delay, not as loss.
//!
//! Losses reported by the transport multiply the window by `loss_beta` (at
//! most once per RTT). Classic Vegas falls back to Reno (0.5); the TCP/NC and
//! VON presets use 1.0 because losses are masked by the code.

use std::time::{Duration, Instant};

use crate::filter::WindowedMin;
use crate::state_name;
use crate::{
    collapse_window, slow_start_aware_rate, CodingFeedback, CommonConfig, CongestionEvent,
    Controller, SendState,
};

/// Configuration of [`Vegas`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasConfig {
    /// Shared parameters.
    pub common: CommonConfig,
    /// Grow while fewer than `alpha` packets are queued.
    pub alpha: f64,
    /// Shrink while more than `beta` packets are queued.
    pub beta: f64,
    /// Leave slow start when more than `gamma` packets are queued.
    pub gamma: f64,
    /// Window of the BaseRTT minimum filter. Default 300 s (quiche's
    /// min-RTT window): Vegas keeps a standing queue of `alpha..beta`
    /// packets, so a short window lets BaseRTT ratchet up into its own
    /// queue (seen in the simulator with 10 s).
    pub base_rtt_window: Duration,
    /// Prefer the coding layer's DOF-delivery RTT when available.
    pub use_dof_rtt: bool,
    /// Window factor applied on a loss event (1.0 = ignore losses).
    pub loss_beta: f64,
    /// Pacing gain over cwnd/sRTT reported by `pacing_rate` (`None`: no rate).
    pub pacing_gain: Option<f64>,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            common: CommonConfig::default(),
            alpha: 2.0,
            beta: 4.0,
            gamma: 1.0,
            base_rtt_window: Duration::from_secs(300),
            use_dof_rtt: true,
            loss_beta: 0.5,
            pacing_gain: Some(1.25),
        }
    }
}

impl VegasConfig {
    /// The TCP/NC parameters: alpha 28, beta 30, gamma 2, losses masked.
    pub fn tcp_nc() -> Self {
        VegasConfig {
            alpha: 28.0,
            beta: 30.0,
            gamma: 2.0,
            loss_beta: 1.0,
            ..Default::default()
        }
    }

    /// The TCP VON parameters: a = 1, b = 3 packets, losses masked.
    pub fn von() -> Self {
        VegasConfig {
            alpha: 1.0,
            beta: 3.0,
            gamma: 1.0,
            loss_beta: 1.0,
            ..Default::default()
        }
    }
}

/// TCP Vegas. See the module documentation.
#[derive(Clone, Debug)]
pub struct Vegas {
    cfg: VegasConfig,
    cwnd: f64,
    ssthresh: f64,
    slow_start: bool,
    send: SendState,
    round_end: Option<u64>,
    net_round_min: Option<Duration>,
    dof_round_min: Option<Duration>,
    net_base: WindowedMin<Duration>,
    dof_base: WindowedMin<Duration>,
    srtt: Duration,
    last_diff: Option<f64>,
}

impl Vegas {
    /// A new controller.
    pub fn new(cfg: VegasConfig) -> Self {
        Vegas {
            cwnd: cfg.common.initial_window(),
            ssthresh: f64::INFINITY,
            slow_start: true,
            send: SendState::default(),
            round_end: None,
            net_round_min: None,
            dof_round_min: None,
            net_base: WindowedMin::new(cfg.base_rtt_window),
            dof_base: WindowedMin::new(cfg.base_rtt_window),
            srtt: cfg.common.initial_rtt,
            last_diff: None,
            cfg,
        }
    }

    /// The `diff` (packets queued) computed at the last round end.
    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }

    /// The BaseRTT in use (DOF-based if DOF samples are in use).
    pub fn base_rtt(&self) -> Option<Duration> {
        if self.cfg.use_dof_rtt && self.dof_base.get().is_some() {
            self.dof_base.get()
        } else {
            self.net_base.get()
        }
    }

    /// `diff` for the current round's samples so far.
    fn current_diff(&self) -> Option<f64> {
        let (rtt, base) = if self.cfg.use_dof_rtt && self.dof_round_min.is_some() {
            (self.dof_round_min?, self.dof_base.get()?)
        } else {
            (self.net_round_min?, self.net_base.get()?)
        };
        let rtt_s = rtt.as_secs_f64();
        if rtt_s <= 0.0 {
            return None;
        }
        let cwnd_pkts = self.cwnd / self.cfg.common.mss as f64;
        Some(cwnd_pkts * (rtt_s - base.as_secs_f64().min(rtt_s)) / rtt_s)
    }

    fn end_round(&mut self) {
        let (rtt, base) = if self.cfg.use_dof_rtt && self.dof_round_min.is_some() {
            (self.dof_round_min, self.dof_base.get())
        } else {
            (self.net_round_min, self.net_base.get())
        };
        self.net_round_min = None;
        self.dof_round_min = None;
        let (Some(rtt), Some(base)) = (rtt, base) else {
            return;
        };
        if rtt.is_zero() {
            return;
        }
        let mss = self.cfg.common.mss as f64;
        let cwnd_pkts = self.cwnd / mss;
        let rtt_s = rtt.as_secs_f64();
        let base_s = base.as_secs_f64().min(rtt_s);
        let diff = cwnd_pkts * (rtt_s - base_s) / rtt_s;
        self.last_diff = Some(diff);
        if self.slow_start {
            if diff > self.cfg.gamma {
                self.slow_start = false;
                // Drop to the window that would leave about gamma queued.
                let target = cwnd_pkts * base_s / rtt_s + self.cfg.gamma;
                self.cwnd = (target * mss).min(self.cwnd);
                self.ssthresh = self.cwnd;
            }
        } else if diff < self.cfg.alpha {
            self.cwnd += mss;
        } else if diff > self.cfg.beta {
            self.cwnd -= mss;
        }
        self.cwnd = self.cwnd.max(self.cfg.common.min_window());
    }
}

fn min_opt(a: Option<Duration>, b: Duration) -> Option<Duration> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl Controller for Vegas {
    fn metrics(&self, out: &mut dyn FnMut(&'static str, f64)) {
        if let Some(b) = self.base_rtt() {
            out("base_rtt_ms", b.as_secs_f64() * 1e3);
        }
        if let Some(d) = self.last_diff() {
            out("vegas_diff", d);
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
        if self.round_end.is_none() {
            self.round_end = Some(pkt_num);
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent<'_>) {
        self.srtt = ev.rtt.smoothed;
        if ev.rtt_updated {
            self.net_base.update(ev.now, ev.rtt.latest);
            self.net_round_min = min_opt(self.net_round_min, ev.rtt.latest);
        }
        self.send.on_acked(ev.acked);
        let mss = self.cfg.common.mss as f64;

        if self.cfg.loss_beta < 1.0 && ev.lost.iter().any(|l| self.send.loss_counts(l.pkt_num)) {
            self.cwnd = (self.cwnd * self.cfg.loss_beta).max(self.cfg.common.min_window());
            self.ssthresh = self.cwnd;
            self.slow_start = false;
            self.send.start_recovery();
        }

        // Round boundary: an ack for a packet sent after the round started.
        if let (Some(end), Some(largest)) = (self.round_end, ev.acked.last().map(|a| a.pkt_num)) {
            if largest >= end {
                self.end_round();
                self.round_end = self.send.largest_sent.map(|l| l + 1);
            }
        }
        if self.slow_start {
            // Check the exit condition on every ACK with the round's minimum
            // so far, so that the overshoot is bounded by one RTT of growth.
            if let Some(diff) = self.current_diff() {
                if diff > self.cfg.gamma {
                    self.end_round();
                    self.round_end = self.send.largest_sent.map(|l| l + 1);
                }
            }
        }
        if self.slow_start {
            for a in ev.acked {
                self.cwnd += a.bytes as f64;
            }
            if self.cwnd >= self.ssthresh {
                self.slow_start = false;
            }
        }
        let _ = mss;
    }

    fn on_retransmission_timeout(&mut self, packets_retransmitted: bool) {
        if packets_retransmitted {
            collapse_window(&mut self.cwnd, &mut self.ssthresh, 0.5, &self.cfg.common);
            self.slow_start = true;
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
        state_name(self.slow_start, false)
    }

    fn on_coding_feedback(&mut self, now: Instant, feedback: &CodingFeedback<'_>) {
        if let CodingFeedback::DofRtt { sample } = *feedback {
            self.dof_base.update(now, sample);
            self.dof_round_min = min_opt(self.dof_round_min, sample);
        }
    }
}
