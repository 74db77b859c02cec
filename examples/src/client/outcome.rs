//! How a client run ended: the per-connection report, the one-line error
//! and the exit status.

use std::time::Instant;

use super::conn::Conn;
use super::error::{Error, ErrorKind};
use super::EXIT_INTERRUPTED;
use crate::report::{ClientReport, Counters};

/// What a client run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The per-connection report, when a connection was established.
    pub report: Option<ClientReport>,
    /// The error, if the run failed.
    pub error: Option<Error>,
    /// Process exit status.
    pub exit: u8,
}

impl Outcome {
    pub(super) fn failed(error: Error) -> Outcome {
        Outcome {
            report: None,
            error: Some(error),
            exit: 1,
        }
    }
}

impl Conn {
    pub(super) fn report(&self) -> ClientReport {
        let status = self
            .requests
            .iter()
            .filter_map(|r| r.status)
            .find(|s| *s >= 400)
            .or_else(|| self.requests.iter().find_map(|r| r.status))
            .unwrap_or(0);
        let end = self.finished_at.unwrap_or_else(Instant::now);
        ClientReport {
            url: self.requests[0].url.text.clone(),
            status,
            bytes: self.received(),
            duration: end.saturating_duration_since(self.started),
            requests: self.requests.len(),
            counters: Counters::of(&self.conn),
            cc: self.cc.clone(),
            nc: self.nc.stats(),
            uploaded: self
                .requests
                .iter()
                .filter_map(|r| r.upload.as_ref())
                .map(|b| b.sent())
                .sum(),
            upload_sha256: self
                .requests
                .iter()
                .find(|r| r.upload.is_some())
                .and_then(|r| r.receipt.clone()),
            delivery: self
                .requests
                .iter()
                .find_map(|r| r.delivery.as_ref())
                .map(|m| m.summary()),
            handshake: crate::report::Handshake::of(&self.conn),
        }
    }

    pub(super) fn outcome(&self) -> Outcome {
        let report = self.established.then(|| self.report());
        let error = self.error();
        let exit = match (&error, self.stop.interrupted) {
            (_, true) => EXIT_INTERRUPTED,
            (Some(_), false) => 1,
            (None, false) => 0,
        };
        Outcome {
            report,
            error,
            exit,
        }
    }

    /// Why the connection as a whole failed, if it did.
    pub(super) fn connection_error(&self) -> Option<Error> {
        let peer = self.peer;
        if self.stop.interrupted {
            return Some(Error::new(ErrorKind::Cancelled, "interrupted"));
        }
        if self.stop.refused {
            return Some(Error::new(
                ErrorKind::Unreachable,
                format!("no response from {peer} (connection refused)"),
            ));
        }
        if let Some(e) = tls_error(&self.conn) {
            return Some(Error::new(
                ErrorKind::Tls,
                format!("TLS handshake with {peer} failed: {e}"),
            ));
        }
        if self.stop.timed_out {
            return Some(Error::new(
                ErrorKind::Timeout,
                format!(
                    "timed out after {:.1} s",
                    self.started.elapsed().as_secs_f64()
                ),
            ));
        }
        if !self.established {
            if let Some(e) = self.conn.peer_error() {
                return Some(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "{peer} closed the connection during the handshake: {}",
                        describe_close(e)
                    ),
                ));
            }
            if self.stop.handshake_timeout && self.conn.stats().recv > 0 {
                return Some(Error::new(
                    ErrorKind::Timeout,
                    format!("handshake with {peer} did not complete in time"),
                ));
            }
            return Some(Error::new(
                ErrorKind::Unreachable,
                format!("no response from {peer}"),
            ));
        }
        if self.stop.closed_by_caller {
            return Some(Error::new(ErrorKind::Cancelled, "client closed"));
        }
        self.stop.fatal.clone()
    }

    /// The error of a failed command-line run, if it failed.
    fn error(&self) -> Option<Error> {
        if let Some(e) = self.connection_error() {
            return Some(e);
        }
        for r in &self.requests {
            if let Some(f) = &r.failure {
                return Some(Error::new(f.kind, format!("GET {}: {f}", r.url.text)));
            }
            if !r.done {
                let why = match self.conn.peer_error() {
                    Some(e) => format!(" (server closed: {})", describe_close(e)),
                    None if self.conn.is_timed_out() => " (idle timeout)".to_string(),
                    None => String::new(),
                };
                return Some(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "GET {}: connection closed before the response completed{why}",
                        r.url.text
                    ),
                ));
            }
        }
        self.requests
            .iter()
            .find(|r| r.status.is_some_and(|s| s >= 400))
            .map(|r| {
                let s = r.status.unwrap_or(0);
                Error::status(s, format!("GET {}: status {s}", r.url.text))
            })
    }
}

/// A CONNECTION_CLOSE for people: the transport error's name (RFC 9000
/// §20.1) or TLS alert, or the application's code, and the reason phrase.
pub(super) fn describe_close(e: &quiche::ConnectionError) -> String {
    const TRANSPORT: [&str; 17] = [
        "NO_ERROR",
        "INTERNAL_ERROR",
        "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR",
        "STREAM_LIMIT_ERROR",
        "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",
        "FRAME_ENCODING_ERROR",
        "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR",
        "PROTOCOL_VIOLATION",
        "INVALID_TOKEN",
        "APPLICATION_ERROR",
        "CRYPTO_BUFFER_EXCEEDED",
        "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED",
        "NO_VIABLE_PATH",
    ];
    let code = e.error_code;
    let what = match (e.is_app, code) {
        (true, _) => format!("application error {code:#x}"),
        (false, 0x100..=0x1ff) => format!("TLS alert {} ({code:#x})", code - 0x100),
        (false, _) => match usize::try_from(code).ok().and_then(|i| TRANSPORT.get(i)) {
            Some(name) => format!("{name} ({code:#x})"),
            None => format!("transport error {code:#x}"),
        },
    };
    match String::from_utf8_lossy(&e.reason) {
        r if r.trim().is_empty() => what,
        r => format!("{what}, \"{}\"", r.trim()),
    }
}

/// Describes a TLS failure recorded on `conn` (crypto errors are transport
/// errors 0x100–0x1ff carrying the TLS alert).
fn tls_error(conn: &quiche::Connection) -> Option<String> {
    let alert = |e: &quiche::ConnectionError| {
        (!e.is_app && (0x100..0x200).contains(&e.error_code)).then(|| e.error_code - 0x100)
    };
    if let Some(a) = conn.local_error().and_then(alert) {
        return Some(match a {
            42..=46 | 48 => format!("certificate verification failed (TLS alert {a})"),
            _ => format!("TLS alert {a}"),
        });
    }
    conn.peer_error()
        .and_then(alert)
        .map(|a| format!("server sent TLS alert {a}"))
}

#[cfg(test)]
mod tests {
    use super::describe_close;

    fn close(is_app: bool, error_code: u64, reason: &str) -> quiche::ConnectionError {
        quiche::ConnectionError {
            is_app,
            error_code,
            reason: reason.as_bytes().to_vec(),
        }
    }

    #[test]
    fn closes_are_named() {
        let cases = [
            (false, 0xb, "", "INVALID_TOKEN (0xb)"),
            (
                false,
                0xa,
                " bad frame ",
                "PROTOCOL_VIOLATION (0xa), \"bad frame\"",
            ),
            (false, 0x128, "", "TLS alert 40 (0x128)"),
            (false, 0x11, "", "transport error 0x11"),
            (true, 0x100, "", "application error 0x100"),
        ];
        for (is_app, code, reason, want) in cases {
            assert_eq!(describe_close(&close(is_app, code, reason)), want);
        }
    }
}
