//! A connection's coding statistics, shared between its extension (which
//! updates them) and the application's [`crate::Handle`].

use serde_json::{json, Value};

/// Counters of one connection's coding layer, both directions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CodingStats {
    /// Both ends offered `nc_parameters` and agreed on a mode.
    pub negotiated: bool,
    /// Mode we send in (`systematic` or `full`), once negotiated.
    pub mode: Option<&'static str>,
    /// Redundancy policy of our sending direction (`--nc-policy` spelling).
    pub policy: String,
    /// Window (symbols) of the direction we send, the peer's limit, and
    /// largest symbol (bytes).
    pub window: u64,
    /// Window of the direction we receive: the limit we offered.
    pub recv_window: u64,
    /// See `window`.
    pub symbol_size: u64,

    /// Source symbols we sent.
    pub sources_sent: u64,
    /// Their bytes (the data frames they tag).
    pub source_bytes: u64,
    /// Repair symbols we sent (fully coded mode: beyond one per new symbol).
    pub repairs_sent: u64,
    /// Bytes of those REPAIR frames.
    pub repair_bytes: u64,
    /// Of `repairs_sent`: sent as tail protection.
    pub tail_repairs: u64,
    /// Of `repairs_sent`: stall probes.
    pub probes: u64,
    /// Coded packets carrying new data (fully coded mode).
    pub coded_new: u64,
    /// Lost stream ranges deferred instead of retransmitted.
    pub deferred: u64,
    /// Deferred ranges released as acknowledged (the peer decoded them).
    pub released: u64,
    /// Deferred ranges whose fallback fired: retransmitted.
    pub timed_out: u64,
    /// Symbols the coding layer gave up.
    pub abandoned: u64,
    /// Lost packets of ours the peer recovered by decoding.
    pub peer_recovered: u64,
    /// Our loss-rate estimate for the path to the peer.
    pub loss_estimate: f64,

    /// Source symbols received in clear.
    pub sources_received: u64,
    /// Repair symbols received.
    pub repairs_received: u64,
    /// Packets we recovered by decoding.
    pub recovered: u64,
    /// Received symbols that brought nothing new.
    pub redundant: u64,
    /// Repair symbols not decoded because the work budget was spent.
    pub shed: u64,
    /// NC_ACK frames sent.
    pub acks_sent: u64,
    /// Coding feedback or qlog events that did not fit their queues.
    pub overflow: u64,
}

impl CodingStats {
    /// Repairs sent per source sent.
    pub fn repair_overhead(&self) -> f64 {
        if self.sources_sent == 0 {
            0.0
        } else {
            self.repairs_sent as f64 / self.sources_sent as f64
        }
    }

    /// As a JSON object (the `nc` member of the tools' JSON lines).
    pub fn to_json(&self) -> Value {
        json!({
            "negotiated": self.negotiated,
            "mode": self.mode,
            "policy": self.policy,
            "window": self.window,
            "recv_window": self.recv_window,
            "symbol_size": self.symbol_size,
            "sent": {
                "sources": self.sources_sent,
                "source_bytes": self.source_bytes,
                "repairs": self.repairs_sent,
                "repair_bytes": self.repair_bytes,
                "repair_overhead": self.repair_overhead(),
                "tail_repairs": self.tail_repairs,
                "probes": self.probes,
                "coded_new": self.coded_new,
                "deferred": self.deferred,
                "released": self.released,
                "timed_out": self.timed_out,
                "abandoned": self.abandoned,
                "peer_recovered": self.peer_recovered,
                "loss_estimate": self.loss_estimate,
            },
            "received": {
                "sources": self.sources_received,
                "repairs": self.repairs_received,
                "recovered": self.recovered,
                "redundant": self.redundant,
                "shed": self.shed,
                "acks_sent": self.acks_sent,
            },
            "overflow": self.overflow,
        })
    }
}
