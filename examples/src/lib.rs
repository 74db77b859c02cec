//! Shared code of the QUIC-NC command-line tools (`qnc-server`,
//! `qnc-client`, `qnc-certs`).
//!
//! The binaries under `src/bin/` only parse their arguments and call into
//! this library. Each module has one job:
//!
//! * [`cc`]: congestion-controller name → quiche configuration.
//! * [`certs`]: a throw-away CA and a leaf certificate for local tests.
//! * [`transport`]: the quiche transport configuration both tools share.
//! * [`hooks`]: the one place where per-connection extensions are installed.
//! * [`qlog`], [`keylog`]: per-connection qlog and TLS key logging.
//! * [`pacing`]: holds datagrams until their pacing release time.
//! * [`event_loop`]: timer and poll helpers built on `mio`.
//! * [`args`], [`url`]: command-line helpers.
//! * [`route`], [`pattern`]: what the server serves for a request path.
//! * [`stream`]: the stamped streaming resource and delivery-delay meter.
//! * [`upload`]: request bodies (`--upload`) and their SHA-256.
//! * [`report`]: statistics as JSON lines and human-readable summaries.
//! * [`shutdown`]: SIGINT/SIGTERM handling.
//! * [`server`], [`client`]: the HTTP/3 server and client loops.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod args;
pub mod cc;
pub mod certs;
pub mod cids;
pub mod client;
pub mod event_loop;
pub mod hooks;
pub mod keylog;
pub mod pacing;
pub mod pattern;
pub mod qlog;
pub mod report;
pub mod route;
pub mod server;
pub mod shutdown;
pub mod stream;
pub mod transport;
pub mod upload;
pub mod url;

/// Largest UDP payload the tools receive or send.
pub const MAX_DATAGRAM_SIZE: usize = 1350;

/// Send capacity (bytes) a connection must have before its HTTP/3 layer is
/// set up. quiche's `h3::Connection::with_transport` opens the control
/// stream and closes the whole connection if it cannot, which happens when
/// a lossy handshake has left the congestion window full; waiting for this
/// much room (the control and QPACK streams need well under 100 bytes)
/// avoids that.
pub const H3_SETUP_ROOM: usize = 256;

/// Which end of a connection a piece of code runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The HTTP/3 server (`qnc-server`).
    Server,
    /// The HTTP/3 client (`qnc-client`).
    Client,
}

impl Role {
    /// Lower-case name used in file names and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// Hexadecimal rendering of a byte string (connection IDs).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_renders_lowercase_pairs() {
        assert_eq!(hex(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(hex(&[]), "");
    }
}
