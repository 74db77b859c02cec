//! How a client run ended: the per-connection report, the one-line error
//! and the exit status.

use std::time::Instant;

use super::{Client, EXIT_INTERRUPTED};
use crate::args::ClientArgs;
use crate::report::{ClientReport, Counters};

/// What a client run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The per-connection report, when a connection was established.
    pub report: Option<ClientReport>,
    /// The one-line error, if the run failed.
    pub error: Option<String>,
    /// Process exit status.
    pub exit: u8,
}

impl Outcome {
    pub(super) fn failed(error: String) -> Outcome {
        Outcome {
            report: None,
            error: Some(error),
            exit: 1,
        }
    }
}

impl Client {
    pub(super) fn report(&self, args: &ClientArgs) -> ClientReport {
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
            cc: args.transport.cc.clone(),
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

    pub(super) fn outcome(&self, args: &ClientArgs) -> Outcome {
        let report = self.established.then(|| self.report(args));
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

    /// The one error line describing a failed run, if it failed.
    fn error(&self) -> Option<String> {
        let peer = self.peer;
        if self.stop.interrupted {
            return Some("interrupted".into());
        }
        if self.stop.refused {
            return Some(format!("no response from {peer} (connection refused)"));
        }
        if let Some(e) = tls_error(&self.conn) {
            return Some(format!("TLS handshake with {peer} failed: {e}"));
        }
        if self.stop.timed_out {
            return Some(format!(
                "timed out after {:.1} s",
                self.started.elapsed().as_secs_f64()
            ));
        }
        if !self.established {
            if self.stop.handshake_timeout && self.conn.stats().recv > 0 {
                return Some(format!(
                    "handshake with {peer} did not complete within the idle timeout"
                ));
            }
            return Some(format!("no response from {peer}"));
        }
        if let Some(e) = &self.stop.fatal {
            return Some(e.clone());
        }
        for r in &self.requests {
            if let Some(f) = &r.failure {
                return Some(format!("GET {}: {f}", r.url.text));
            }
            if !r.done {
                let why = match self.conn.peer_error() {
                    Some(e) => format!(" (server closed with code {:#x})", e.error_code),
                    None if self.conn.is_timed_out() => " (idle timeout)".to_string(),
                    None => String::new(),
                };
                return Some(format!(
                    "GET {}: connection closed before the response completed{why}",
                    r.url.text
                ));
            }
        }
        self.requests
            .iter()
            .find(|r| r.status.is_some_and(|s| s >= 400))
            .map(|r| format!("GET {}: status {}", r.url.text, r.status.unwrap_or(0)))
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
