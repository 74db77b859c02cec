//! The controller's state in the connection's qlog.
//!
//! quiche already logs `recovery:metrics_updated` (cwnd, RTTs, ssthresh)
//! and `recovery:congestion_state_updated` (from the controller's
//! `state_str`). [`Telemetry`] adds a `quic-nc:cc_state` event with what is
//! specific to our controllers, written whenever the controller changes
//! state or reacts to a loss. Install [`TelemetryExtension`] on the
//! connection so quiche drains the events into its qlog; it owns no frame
//! types and sends nothing on the wire.
//!
//! A [`Telemetry`] also carries coding-layer feedback
//! ([`congestion::OwnedCodingFeedback`]) from the coding extension to the
//! controller, which live behind different borrows inside quiche.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use congestion::Controller;
use congestion::OwnedCodingFeedback;
use congestion::RttEstimates;

/// Bound on queued events: qlog is best-effort, memory is not.
const MAX_PENDING: usize = 4096;

#[derive(Debug, Default)]
struct Inner {
    events: VecDeque<(Instant, serde_json::Value)>,
    feedback: VecDeque<OwnedCodingFeedback>,
}

/// A per-connection channel for controller events and coding feedback.
#[derive(Debug, Clone, Default)]
pub struct Telemetry {
    inner: Arc<Mutex<Inner>>,
}

impl Telemetry {
    /// An empty channel.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the controller's current state.
    pub fn record(&self, now: Instant, cc: &dyn Controller, rtt: &RttEstimates) {
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
        if let Some(p) = cc.pacing_rate(0) {
            data["pacing_rate"] = p.into();
        }
        cc.metrics(&mut |name, value| {
            if value.is_finite() {
                data[name] = value.into();
            }
        });
        let mut inner = self.inner.lock().unwrap();
        if inner.events.len() < MAX_PENDING {
            inner.events.push_back((now, data));
        }
    }

    /// Queues coding-layer feedback for the controller (delivered at its
    /// next congestion event).
    pub fn push_feedback(&self, feedback: OwnedCodingFeedback) {
        let mut inner = self.inner.lock().unwrap();
        if inner.feedback.len() < MAX_PENDING {
            inner.feedback.push_back(feedback);
        }
    }

    /// Takes the queued coding feedback.
    pub fn take_feedback(&self) -> Vec<OwnedCodingFeedback> {
        self.inner.lock().unwrap().feedback.drain(..).collect()
    }

    /// Writes the queued events to `qlog`.
    pub fn drain_into(&self, qlog: &mut qlog::streamer::QlogStreamer) {
        let events: Vec<_> = self.inner.lock().unwrap().events.drain(..).collect();
        for (at, data) in events {
            let ev = qlog::events::JsonEvent {
                time: 0.0,
                importance: qlog::events::EventImportance::Core,
                name: "quic-nc:cc_state".to_string(),
                data,
            };
            qlog.add_event_with_instant(ev, at).ok();
        }
    }

    /// Number of events waiting to be written.
    pub fn pending_events(&self) -> usize {
        self.inner.lock().unwrap().events.len()
    }
}

/// A transport extension that only writes [`Telemetry`] events to qlog.
pub struct TelemetryExtension {
    telemetry: Telemetry,
}

impl TelemetryExtension {
    /// Drains `telemetry`.
    pub fn new(telemetry: Telemetry) -> Self {
        TelemetryExtension { telemetry }
    }
}

impl quiche::extension::TransportExtension for TelemetryExtension {
    fn frame_types(&self) -> Vec<quiche::extension::FrameType> {
        Vec::new()
    }

    fn frame_body_len(&self, _frame_type: u64, _body: &[u8]) -> Option<usize> {
        None
    }

    fn drain_qlog(&mut self, qlog: &mut qlog::streamer::QlogStreamer) {
        self.telemetry.drain_into(qlog);
    }
}

/// Installs controller `name` on a just-created connection, with its state
/// logged to the connection's qlog. Returns whether it was one of ours
/// (quiche's own controllers are configured on the `Config` instead).
pub fn install(conn: &mut quiche::Connection, name: &str) -> Result<bool, String> {
    match crate::cc::resolve(name)? {
        crate::cc::Choice::Quiche(_) => Ok(false),
        crate::cc::Choice::Ours(algo) => {
            let telemetry = Telemetry::new();
            let factory = crate::cc::Factory::new(algo).with_telemetry(telemetry.clone());
            conn.set_external_congestion_control(Arc::new(factory))
                .map_err(|e| format!("cannot install congestion controller {name}: {e}"))?;
            conn.set_extension(Box::new(TelemetryExtension::new(telemetry)))
                .map_err(|e| format!("cannot install qlog telemetry: {e}"))?;
            Ok(true)
        }
    }
}
