//! An aggressive BBRv1-like baseline for the simulator: it ignores loss,
//! paces at a gain cycle around the windowed-max delivery rate and caps
//! inflight at twice the estimated BDP. Only meant to reproduce the queue
//! pressure of BBRv1-style stacks on a lossy, shallow-buffered path.

use std::time::{Duration, Instant};

use crate::filter::{WindowedMax, WindowedMin};
use crate::{CommonConfig, CongestionEvent, Controller};

const STARTUP_GAIN: f64 = 2.885;
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
}

/// BBRv1-like controller (baseline only). See the module documentation.
#[derive(Clone, Debug)]
pub struct BbrLike {
    common: CommonConfig,
    mode: Mode,
    max_bw: WindowedMax,
    min_rtt: WindowedMin<Duration>,
    delivered: u64,
    round_end: Option<u64>,
    largest_sent: u64,
    round_start: Option<(Instant, u64)>,
    full_bw: f64,
    full_bw_rounds: u32,
    cycle_idx: usize,
    cycle_start: Option<Instant>,
    bif: usize,
    cwnd_gain: f64,
    flat_gain: Option<f64>,
}

impl BbrLike {
    /// A new controller.
    pub fn new(common: CommonConfig) -> Self {
        BbrLike {
            common,
            mode: Mode::Startup,
            max_bw: WindowedMax::new(Duration::from_secs(1)),
            min_rtt: WindowedMin::new(Duration::from_secs(10)),
            delivered: 0,
            round_end: None,
            largest_sent: 0,
            round_start: None,
            full_bw: 0.0,
            full_bw_rounds: 0,
            cycle_idx: 0,
            cycle_start: None,
            bif: 0,
            cwnd_gain: 2.0,
            flat_gain: None,
        }
    }

    /// The aggressive variant: after startup, pace at a flat 2 × the max
    /// delivery rate with an inflight cap of 2.5 × BDP (no probing cycle).
    pub fn aggressive(common: CommonConfig) -> Self {
        BbrLike {
            flat_gain: Some(2.0),
            cwnd_gain: 2.5,
            ..BbrLike::new(common)
        }
    }

    fn bdp(&self) -> Option<f64> {
        Some(self.max_bw.get()? * self.min_rtt.get()?.as_secs_f64())
    }

    fn gain(&self) -> f64 {
        match self.mode {
            Mode::Startup => STARTUP_GAIN,
            Mode::Drain => 1.0 / STARTUP_GAIN,
            Mode::ProbeBw => self.flat_gain.unwrap_or(CYCLE[self.cycle_idx]),
        }
    }
}

impl Controller for BbrLike {
    fn on_packet_sent(&mut self, now: Instant, bif: usize, pkt_num: u64, bytes: usize, _rtx: bool) {
        self.largest_sent = self.largest_sent.max(pkt_num);
        self.bif = bif + bytes;
        if self.round_end.is_none() {
            self.round_end = Some(pkt_num);
            self.round_start = Some((now, 0));
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent<'_>) {
        self.bif = ev.bytes_in_flight;
        if ev.rtt_updated {
            self.min_rtt.update(ev.now, ev.rtt.latest);
        }
        let rtt = self.min_rtt.get().unwrap_or(ev.rtt.smoothed);
        self.max_bw.set_window(rtt * 10);
        self.delivered += ev.acked.iter().map(|a| a.bytes as u64).sum::<u64>();
        let largest = ev.acked.last().map(|a| a.pkt_num);
        if let (Some(end), Some(l)) = (self.round_end, largest) {
            if l >= end {
                if let Some((t0, d0)) = self.round_start {
                    let dt = ev.now.saturating_duration_since(t0).as_secs_f64();
                    if dt > 0.0 {
                        let bw = (self.delivered - d0) as f64 / dt;
                        self.max_bw.update(ev.now, bw);
                    }
                }
                self.round_start = Some((ev.now, self.delivered));
                self.round_end = Some(self.largest_sent + 1);
                if self.mode == Mode::Startup {
                    let bw = self.max_bw.get().unwrap_or(0.0);
                    if bw >= self.full_bw * 1.25 {
                        self.full_bw = bw;
                        self.full_bw_rounds = 0;
                    } else {
                        self.full_bw_rounds += 1;
                        if self.full_bw_rounds >= 3 {
                            self.mode = Mode::Drain;
                        }
                    }
                }
            }
        }
        if self.mode == Mode::Drain && self.bdp().is_some_and(|b| (ev.bytes_in_flight as f64) <= b)
        {
            self.mode = Mode::ProbeBw;
            self.cycle_idx = 2;
            self.cycle_start = Some(ev.now);
        }
        if self.mode == Mode::ProbeBw {
            let start = *self.cycle_start.get_or_insert(ev.now);
            if ev.now.saturating_duration_since(start) >= rtt {
                self.cycle_idx = (self.cycle_idx + 1) % CYCLE.len();
                self.cycle_start = Some(ev.now);
            }
        }
    }

    fn congestion_window(&self) -> usize {
        let min = self.common.initial_window();
        match self.bdp() {
            Some(bdp) => {
                let gain = if self.mode == Mode::Startup {
                    STARTUP_GAIN
                } else {
                    self.cwnd_gain
                };
                (gain * bdp).max(min) as usize + 3 * self.common.mss
            }
            None => min as usize,
        }
    }

    fn pacing_rate(&self, _bif: usize) -> Option<u64> {
        match self.max_bw.get() {
            Some(bw) if bw > 0.0 => Some((self.gain() * bw) as u64),
            _ => {
                let cwnd = self.common.initial_window();
                Some((STARTUP_GAIN * cwnd / self.common.initial_rtt.as_secs_f64()) as u64)
            }
        }
    }

    fn bandwidth_estimate(&self) -> Option<u64> {
        self.max_bw.get().map(|b| b as u64)
    }

    fn state_str(&self) -> &'static str {
        match self.mode {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
        }
    }
}
