//! The per-connection channel between the coding extension and the
//! connection's congestion controller, which quiche keeps behind different
//! borrows: coding feedback flows to the controller, the controller's
//! state flows to qlog (written by the extension, which owns the qlog
//! hook).
//!
//! Feedback is coalesced, not queued: the controller takes it at its next
//! congestion event (every ACK), so between two takes the channel holds one
//! list of recovered and one of unrecovered packet numbers (each capped,
//! with the excess counted in [`Channel::feedback_overflow`], never
//! silently lost) and the newest erasure-rate and DOF-RTT samples.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use congestion::{Controller, OwnedCodingFeedback, RttEstimates};

/// Packet numbers kept per list between two takes.
const MAX_PKT_NUMS: usize = 1 << 16;

/// Controller states kept for qlog between two drains.
const MAX_STATES: usize = 4096;

#[derive(Debug, Default)]
struct Inner {
    states: Vec<(Instant, serde_json::Value)>,
    states_dropped: u64,
    recovered: Vec<u64>,
    recovered_bytes: usize,
    unrecovered: Vec<u64>,
    erasure_rate: Option<f64>,
    dof_rtt: Option<Duration>,
    overflow: u64,
    record_states: bool,
}

/// See the module documentation. Clones share the channel.
#[derive(Debug, Clone, Default)]
pub struct Channel {
    inner: Arc<Mutex<Inner>>,
}

impl Channel {
    /// An empty channel; controller states are recorded only if
    /// `record_states` (that is, if the connection has a qlog).
    pub fn new(record_states: bool) -> Self {
        let c = Channel::default();
        c.lock().record_states = record_states;
        c
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere must not take the transport down with it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The decoder recovered these lost packets (`bytes` in all).
    pub fn push_recovered(&self, pkt_nums: &[u64], bytes: usize) {
        let mut i = self.lock();
        let room = MAX_PKT_NUMS.saturating_sub(i.recovered.len());
        i.recovered.extend(pkt_nums.iter().take(room));
        i.overflow += pkt_nums.len().saturating_sub(room) as u64;
        i.recovered_bytes += bytes;
    }

    /// These lost packets were not recovered (their data is retransmitted).
    pub fn push_unrecovered(&self, pkt_nums: &[u64]) {
        let mut i = self.lock();
        let room = MAX_PKT_NUMS.saturating_sub(i.unrecovered.len());
        i.unrecovered.extend(pkt_nums.iter().take(room));
        i.overflow += pkt_nums.len().saturating_sub(room) as u64;
    }

    /// The coding layer's erasure-rate estimate.
    pub fn set_erasure_rate(&self, rate: f64) {
        self.lock().erasure_rate = Some(rate);
    }

    /// A degree-of-freedom delivery RTT sample.
    pub fn set_dof_rtt(&self, sample: Duration) {
        self.lock().dof_rtt = Some(sample);
    }

    /// Packet numbers that did not fit the lists (counted, not delivered).
    pub fn feedback_overflow(&self) -> u64 {
        self.lock().overflow
    }

    /// Takes the feedback gathered since the last take: erasure rate, DOF
    /// RTT, recovered, unrecovered (each only if there is something).
    pub fn take_feedback(&self) -> Vec<OwnedCodingFeedback> {
        let mut i = self.lock();
        let mut out = Vec::new();
        if let Some(rate) = i.erasure_rate.take() {
            out.push(OwnedCodingFeedback::ErasureRate { rate });
        }
        if let Some(sample) = i.dof_rtt.take() {
            out.push(OwnedCodingFeedback::DofRtt { sample });
        }
        if !i.recovered.is_empty() {
            out.push(OwnedCodingFeedback::Recovered {
                pkt_nums: std::mem::take(&mut i.recovered),
                bytes: std::mem::take(&mut i.recovered_bytes),
            });
        }
        if !i.unrecovered.is_empty() {
            out.push(OwnedCodingFeedback::Unrecovered {
                pkt_nums: std::mem::take(&mut i.unrecovered),
            });
        }
        out
    }

    /// Whether controller states are wanted (the connection has a qlog).
    pub fn records_states(&self) -> bool {
        self.lock().record_states
    }

    /// Records the controller's current state for qlog.
    pub fn record_state(&self, now: Instant, cc: &dyn Controller, rtt: &RttEstimates) {
        if !self.records_states() {
            return;
        }
        let mut data = serde_json::json!({
            "state": cc.state_str(),
            "cwnd": cc.congestion_window(),
            "rtt_min_ms": rtt.min.as_secs_f64() * 1e3,
            "smoothed_rtt_ms": rtt.smoothed.as_secs_f64() * 1e3,
            "latest_rtt_ms": rtt.latest.as_secs_f64() * 1e3,
        });
        if let Some(s) = cc.ssthresh() {
            data["ssthresh"] = s.into();
        }
        if let Some(p) = cc.mean_pacing_rate(0) {
            data["pacing_rate"] = p.into();
        }
        cc.metrics(&mut |name, value| {
            if value.is_finite() {
                data[name] = value.into();
            }
        });
        let mut i = self.lock();
        if i.states.len() < MAX_STATES {
            i.states.push((now, data));
        } else {
            i.states_dropped += 1;
        }
    }

    /// Takes the recorded controller states, and how many did not fit.
    pub fn take_states(&self) -> (Vec<(Instant, serde_json::Value)>, u64) {
        let mut i = self.lock();
        (
            std::mem::take(&mut i.states),
            std::mem::take(&mut i.states_dropped),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_is_coalesced_and_never_silently_dropped() {
        let c = Channel::new(false);
        assert!(c.take_feedback().is_empty());
        c.push_recovered(&[1, 2], 2400);
        c.push_recovered(&[5], 1200);
        c.push_unrecovered(&[3]);
        c.set_erasure_rate(0.1);
        c.set_erasure_rate(0.2);
        let f = c.take_feedback();
        assert_eq!(
            f,
            vec![
                OwnedCodingFeedback::ErasureRate { rate: 0.2 },
                OwnedCodingFeedback::Recovered {
                    pkt_nums: vec![1, 2, 5],
                    bytes: 3600
                },
                OwnedCodingFeedback::Unrecovered { pkt_nums: vec![3] },
            ]
        );
        assert!(c.take_feedback().is_empty());
        // Beyond the cap the excess is counted.
        let many: Vec<u64> = (0..(MAX_PKT_NUMS as u64 + 10)).collect();
        c.push_recovered(&many, 0);
        assert_eq!(c.feedback_overflow(), 10);
        let f = c.take_feedback();
        assert!(
            matches!(&f[0], OwnedCodingFeedback::Recovered { pkt_nums, .. } if pkt_nums.len() == MAX_PKT_NUMS)
        );
    }
}
