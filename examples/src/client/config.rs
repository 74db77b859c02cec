//! The client library's configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::args::{ClientArgs, TransportArgs};
pub use crate::transport::Trust;

/// Default time allowed for the handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a [`super::Client`] connects and what it records.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// How the server's certificate is checked (CA file, pin, system store).
    pub trust: Trust,
    /// Controller, coding (`nc`: `auto`/`off`, policy, mode, window), idle
    /// timeout, pacing and 0-RTT: the tools' transport flags.
    pub transport: TransportArgs,
    /// Time allowed for the handshake.
    pub connect_timeout: Duration,
    /// Time allowed for each request, from when it is issued (none: only
    /// the idle timeout bounds it).
    pub request_timeout: Option<Duration>,
    /// Directory for one qlog file per connection.
    pub qlog_dir: Option<PathBuf>,
    /// Resume the TLS session stored here and store each new ticket.
    pub session_file: Option<PathBuf>,
    /// Start each connection's loss timers from the RTT this file holds for
    /// its server, and store the connection's smoothed RTT there.
    pub rtt_cache: Option<PathBuf>,
    /// Draw a progress line on a terminal's stderr (the command-line tool).
    pub progress_bar: bool,
}

impl Default for ClientConfig {
    /// The system's CAs, the tools' transport defaults (hybrid, coding
    /// offered), a 10 s handshake limit, no request limit, no qlog.
    fn default() -> ClientConfig {
        ClientConfig {
            trust: Trust::System,
            transport: TransportArgs::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: None,
            qlog_dir: None,
            session_file: None,
            rtt_cache: None,
            progress_bar: false,
        }
    }
}

impl ClientConfig {
    /// The configuration `qnc-client` runs with: its flags, `$QLOGDIR`, and
    /// the idle timeout as the handshake limit.
    pub fn from_args(args: &ClientArgs) -> ClientConfig {
        let trust = match (&args.ca, &args.pin_sha256, args.no_verify) {
            (Some(ca), _, _) => Trust::CaFile(ca.clone()),
            (None, Some(pin), _) => Trust::Pinned(pin.clone()),
            (None, None, true) => Trust::NoVerify,
            (None, None, false) => Trust::System,
        };
        ClientConfig {
            trust,
            transport: args.transport.clone(),
            connect_timeout: Duration::from_millis(args.transport.idle_timeout),
            request_timeout: None,
            qlog_dir: crate::qlog::dir_from_env(),
            session_file: args.session_file.clone(),
            rtt_cache: args.rtt_cache.clone(),
            progress_bar: !args.json,
        }
    }
}
