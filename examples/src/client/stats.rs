//! Statistics of one client connection, as the library reports them.

use std::time::Duration;

/// A snapshot of a connection's transport and coding counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Smoothed round-trip time, once measured.
    pub rtt: Option<Duration>,
    /// QUIC packets sent and received.
    pub packets_sent: u64,
    /// See `packets_sent`.
    pub packets_received: u64,
    /// QUIC packets of ours declared lost.
    pub packets_lost: u64,
    /// UDP payload bytes sent and received.
    pub bytes_sent: u64,
    /// See `bytes_sent`.
    pub bytes_received: u64,
    /// Stream bytes we sent again.
    pub retransmitted_bytes: u64,
    /// Congestion controller of our sending direction.
    pub controller: String,
    /// Whether both ends agreed to code.
    pub coding: bool,
    /// Packets from the server that we recovered by decoding.
    pub recovered: u64,
    /// Repair symbols received per source symbol received (the server's
    /// redundancy as we saw it).
    pub repair_overhead: f64,
    /// Whether the connection is still open.
    pub open: bool,
}

impl Stats {
    /// Fraction of our packets declared lost.
    pub fn loss_rate(&self) -> f64 {
        if self.packets_sent == 0 {
            0.0
        } else {
            self.packets_lost as f64 / self.packets_sent as f64
        }
    }

    /// Reads the counters of `conn` and its coding handle.
    pub fn of(conn: &quiche::Connection, nc: &quic_nc::Handle, controller: &str) -> Stats {
        let c = crate::report::Counters::of(conn);
        let n = nc.stats();
        let overhead = if n.sources_received == 0 {
            0.0
        } else {
            n.repairs_received as f64 / n.sources_received as f64
        };
        Stats {
            rtt: c.rtt,
            packets_sent: c.packets_sent,
            packets_received: c.packets_recv,
            packets_lost: c.packets_lost,
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_recv,
            retransmitted_bytes: c.retrans_bytes,
            controller: controller.to_string(),
            coding: n.negotiated,
            recovered: n.recovered,
            repair_overhead: overhead,
            open: !conn.is_closed(),
        }
    }
}
