//! QUIC-NC's events in the connection's qlog: a bounded queue that quiche
//! drains after every packet ([`quiche::extension::TransportExtension::drain_qlog`]).
//! Names come from [`qlog_analysis::events`], the list the readers use.

use std::collections::VecDeque;
use std::time::Instant;

use serde_json::Value;

use crate::channel::Channel;

pub use qlog_analysis::events as names;

/// Events kept between two drains (quiche drains after every packet).
const MAX_PENDING: usize = 4096;

/// The queue of one connection's events.
#[derive(Debug, Default)]
pub struct EventLog {
    enabled: bool,
    events: VecDeque<(Instant, &'static str, Value)>,
    dropped: u64,
}

impl EventLog {
    /// A log that records only if `enabled` (the connection has a qlog):
    /// events are not even built otherwise.
    pub fn new(enabled: bool) -> Self {
        EventLog {
            enabled,
            ..EventLog::default()
        }
    }

    /// Whether events are recorded.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records event `name` at `now`; `data` is called only if recording.
    pub fn push(&mut self, now: Instant, name: &'static str, data: impl FnOnce() -> Value) {
        if !self.enabled {
            return;
        }
        if self.events.len() >= MAX_PENDING {
            self.dropped += 1;
            return;
        }
        self.events.push_back((now, name, data()));
    }

    /// Events that did not fit between two drains.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Writes the queued events, and the controller states waiting in
    /// `channel`, to `qlog`.
    pub fn drain_into(
        &mut self,
        qlog: &mut qlog::streamer::QlogStreamer,
        channel: Option<&Channel>,
    ) {
        if let Some(c) = channel {
            let (states, dropped) = c.take_states();
            self.dropped += dropped;
            for (at, data) in states {
                write(qlog, at, names::CC_STATE, data);
            }
        }
        while let Some((at, name, data)) = self.events.pop_front() {
            write(qlog, at, name, data);
        }
    }
}

fn write(qlog: &mut qlog::streamer::QlogStreamer, at: Instant, name: &str, data: Value) {
    let ev = qlog::events::JsonEvent {
        time: 0.0,
        importance: qlog::events::EventImportance::Core,
        name: name.to_string(),
        data,
    };
    qlog.add_event_with_instant(ev, at).ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_log_builds_nothing_and_enabled_log_is_bounded() {
        let t = Instant::now();
        let mut off = EventLog::new(false);
        off.push(t, names::SOURCE_SENT, || panic!("built while disabled"));
        let mut on = EventLog::new(true);
        for i in 0..(MAX_PENDING + 5) {
            on.push(t, names::SOURCE_SENT, || serde_json::json!({ "index": i }));
        }
        assert_eq!(on.events.len(), MAX_PENDING);
        assert_eq!(on.dropped(), 5);
    }
}
