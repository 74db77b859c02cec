//! Error values. Network input never panics: it yields one of these.

use core::fmt;

/// The QUIC transport error category an [`Error`] maps to when the
/// integration closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed frame (QUIC FRAME_ENCODING_ERROR, 0x07).
    FrameEncoding,
    /// Well-formed frame that breaks the negotiated rules (QUIC
    /// PROTOCOL_VIOLATION, 0x0a).
    ProtocolViolation,
    /// Local misuse of the API (never caused by the peer).
    Local,
}

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Input ended in the middle of a field.
    Truncated,
    /// A field has a value the encoding forbids (e.g. zero window length,
    /// DT > 15, unknown coefficient mode, length mismatch).
    Malformed(&'static str),
    /// Unknown frame type passed to a frame parser.
    UnknownFrameType(u64),
    /// A symbol index or window end beyond the negotiated maximum window.
    WindowExceeded {
        /// Offending index (one past the last referenced symbol).
        index: u64,
        /// Largest permitted end at that moment.
        limit: u64,
    },
    /// Repair window longer than the negotiated maximum.
    WindowTooLong(u64),
    /// Symbol payload larger than the negotiated maximum symbol size.
    SymbolTooLarge(usize),
    /// A decoded symbol carries an impossible length prefix (inconsistent
    /// repair data from the peer).
    CorruptSymbol(u64),
    /// A source symbol id was reused with a different payload or out of
    /// sequence by the local application.
    BadSourceId(u64),
    /// The local sender's window is full (flow control by the peer's window).
    WindowFull,
    /// Unsupported version/field/mode in the transport parameter.
    Unsupported(&'static str),
    /// An NC_ACK acknowledges source or repair symbols that were never
    /// sent (`docs/protocol.md` Section 4.3).
    UnsentAcknowledged,
}

impl Error {
    /// QUIC error category for this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Truncated | Error::Malformed(_) | Error::UnknownFrameType(_) => {
                ErrorKind::FrameEncoding
            }
            Error::WindowExceeded { .. }
            | Error::WindowTooLong(_)
            | Error::SymbolTooLarge(_)
            | Error::CorruptSymbol(_)
            | Error::Unsupported(_)
            | Error::UnsentAcknowledged => ErrorKind::ProtocolViolation,
            Error::BadSourceId(_) | Error::WindowFull => ErrorKind::Local,
        }
    }

    /// The QUIC transport error code (RFC 9000 Section 20.1) for this error,
    /// or `None` for local API misuse.
    pub fn quic_code(&self) -> Option<u64> {
        match self.kind() {
            ErrorKind::FrameEncoding => Some(0x07),
            ErrorKind::ProtocolViolation => Some(0x0a),
            ErrorKind::Local => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Error {}

/// Result alias.
pub type Result<T> = core::result::Result<T, Error>;
