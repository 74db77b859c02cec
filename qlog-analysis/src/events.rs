//! The names of QUIC-NC's own qlog events: the one list that the writer
//! (`quic-nc`) and the readers (this crate) share. Fields of each event
//! are documented in `docs/qlog.md`.
//!
//! Every name starts with [`PREFIX`]; all of them are written as custom
//! events next to quiche's `quic:` and `recovery:` events.

/// Prefix of every QUIC-NC event name.
pub const PREFIX: &str = "nc:";

/// Controller state after a change or a loss (state, cwnd, RTTs, beta, ...).
pub const CC_STATE: &str = "nc:cc_state";
/// Outcome of the `nc_parameters` negotiation (once per connection).
pub const PARAMETERS: &str = "nc:parameters_set";
/// A source symbol was sent (index, packet number, length).
pub const SOURCE_SENT: &str = "nc:source_sent";
/// A repair symbol was sent (sequence, window, key, length, reason).
pub const REPAIR_SENT: &str = "nc:repair_sent";
/// A source symbol arrived in clear (index, length, innovative).
pub const SOURCE_RECEIVED: &str = "nc:source_received";
/// A repair symbol arrived (sequence, window, innovative, shed).
pub const REPAIR_RECEIVED: &str = "nc:repair_received";
/// The receiver's decoder moved: I_p (decoded), I_q (seen), I_r, MAX_SEQ
/// and DIFF.
pub const DECODER_UPDATED: &str = "nc:decoder_updated";
/// A lost packet was recovered by decoding (index, length).
pub const PACKET_RECOVERED: &str = "nc:packet_recovered";
/// An NC_ACK was sent (its fields).
pub const ACK_SENT: &str = "nc:ack_sent";
/// An NC_ACK was received (its fields, the sender's loss estimate and
/// RTT).
pub const ACK_RECEIVED: &str = "nc:ack_received";
/// Lost stream data of a source symbol was deferred instead of
/// retransmitted (stream, offset, length, index).
pub const DEFERRED: &str = "nc:deferred";
/// Deferred data was released as acknowledged: the peer decoded it.
pub const DEFERRAL_RELEASED: &str = "nc:deferral_released";
/// Deferred data timed out and was retransmitted.
pub const DEFERRAL_TIMED_OUT: &str = "nc:deferral_timed_out";
/// The sender gave up on symbols (NC_WINDOW sent).
pub const WINDOW_SENT: &str = "nc:window_sent";

/// Every event name, in the order of `docs/qlog.md`.
pub const ALL: &[&str] = &[
    CC_STATE,
    PARAMETERS,
    SOURCE_SENT,
    REPAIR_SENT,
    SOURCE_RECEIVED,
    REPAIR_RECEIVED,
    DECODER_UPDATED,
    PACKET_RECOVERED,
    ACK_SENT,
    ACK_RECEIVED,
    DEFERRED,
    DEFERRAL_RELEASED,
    DEFERRAL_TIMED_OUT,
    WINDOW_SENT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prefixed() {
        let mut v = ALL.to_vec();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), ALL.len());
        assert!(ALL.iter().all(|n| n.starts_with(PREFIX)));
    }
}
