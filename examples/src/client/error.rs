//! Typed errors of the client library.

use std::fmt;

/// What kind of failure an [`Error`] is; the SDK maps each to an error type
/// of the caller's language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The configuration or a URL is invalid.
    Config,
    /// The name does not resolve, the address is unreachable or nothing
    /// answered.
    Unreachable,
    /// The TLS handshake failed (certificate, pin, alert).
    Tls,
    /// The server answered with an HTTP error status (see
    /// [`Error::status`]).
    Status,
    /// The request or the handshake did not finish in time.
    Timeout,
    /// The caller cancelled the request (or the process was interrupted).
    Cancelled,
    /// The connection or the response broke the protocol, or the server
    /// reset the stream or closed the connection early.
    Protocol,
    /// A local file could not be read or written.
    Io,
}

impl ErrorKind {
    /// Lower-case name (`timeout`, `tls`, ...), as the C ABI and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Tls => "tls",
            ErrorKind::Status => "status",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Io => "io",
        }
    }
}

/// A failed request or connection: a kind and a one-line message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// One line for a person.
    pub message: String,
    /// The HTTP status, for [`ErrorKind::Status`].
    pub status: Option<u16>,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            status: None,
        }
    }

    /// An HTTP error status.
    pub fn status(status: u16, message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Status,
            message: message.into(),
            status: Some(status),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
