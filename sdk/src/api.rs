//! The SDK's UniFFI interface: what Kotlin, Swift and Python see.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use quic_nc_examples::client::{self, RequestSpec};
use quic_nc_examples::upload::UploadSpec;

use crate::convert::Settings;

/// How a [`Client`] connects. Every field has a default.
#[derive(uniffi::Record, Clone, Debug)]
pub struct Config {
    /// PEM file of the CA to trust (default: the system's CAs).
    #[uniffi(default = None)]
    pub ca_file: Option<String>,
    /// Accept only the server certificate with this SHA-256 (64 hex digits
    /// of its DER; `qnc-certs` prints it).
    #[uniffi(default = None)]
    pub pin_sha256: Option<String>,
    /// Accept any certificate (tests only).
    #[uniffi(default = false)]
    pub insecure: bool,
    /// Offer network coding (plain QUIC if the server does not take it up).
    #[uniffi(default = true)]
    pub coding: bool,
    /// Redundancy policy of what we send: adaptive, fixed:R, ctcp, von, fnc.
    #[uniffi(default = None)]
    pub policy: Option<String>,
    /// Congestion controller (default hybrid).
    #[uniffi(default = None)]
    pub controller: Option<String>,
    /// Time allowed for the handshake, ms (0: 10 s).
    #[uniffi(default = 0)]
    pub connect_timeout_ms: u64,
    /// Time allowed for each request, ms (none: only the idle timeout).
    #[uniffi(default = None)]
    pub request_timeout_ms: Option<u64>,
    /// QUIC idle timeout, ms (default 30 s).
    #[uniffi(default = None)]
    pub idle_timeout_ms: Option<u64>,
    /// Write one qlog file per connection here.
    #[uniffi(default = None)]
    pub qlog_dir: Option<String>,
}

/// Every failure, one variant per kind.
#[derive(uniffi::Error, Debug, Clone, PartialEq, Eq)]
pub enum QncError {
    /// Invalid configuration or URL.
    Config { message: String },
    /// The name does not resolve, the host is unreachable or silent.
    Unreachable { message: String },
    /// The TLS handshake failed (certificate, pin, alert).
    Tls { message: String },
    /// An HTTP error status (from `Response` checks).
    HttpStatus { status: u16, message: String },
    /// The handshake or the request did not finish in time.
    Timeout { message: String },
    /// Cancelled by the caller.
    Cancelled { message: String },
    /// The server or the connection broke the protocol or closed early.
    Protocol { message: String },
    /// A local file could not be read or written.
    Io { message: String },
}

impl std::fmt::Display for QncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use QncError::*;
        match self {
            Config { message }
            | Unreachable { message }
            | Tls { message }
            | HttpStatus { message, .. }
            | Timeout { message }
            | Cancelled { message }
            | Protocol { message }
            | Io { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for QncError {}

impl From<client::Error> for QncError {
    fn from(e: client::Error) -> QncError {
        use client::ErrorKind as K;
        let message = e.message;
        match e.kind {
            K::Config => QncError::Config { message },
            K::Unreachable => QncError::Unreachable { message },
            K::Tls => QncError::Tls { message },
            K::Status => QncError::HttpStatus {
                status: e.status.unwrap_or(0),
                message,
            },
            K::Timeout => QncError::Timeout { message },
            K::Cancelled => QncError::Cancelled { message },
            K::Protocol => QncError::Protocol { message },
            K::Io => QncError::Io { message },
        }
    }
}

/// One response header.
#[derive(uniffi::Record, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Lower-case name (pseudo-headers start with `:`).
    pub name: String,
    /// Value.
    pub value: String,
}

/// A completed response.
#[derive(uniffi::Record, Clone, Debug, PartialEq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<Header>,
    /// The body, unless it went to a file or a listener.
    pub body: Vec<u8>,
    /// The file the body was saved to.
    pub saved_to: Option<String>,
    /// Body bytes received.
    pub bytes: u64,
    /// From issuing the request to its last byte, ms.
    pub elapsed_ms: f64,
}

impl From<client::Response> for Response {
    fn from(r: client::Response) -> Response {
        Response {
            status: r.status,
            headers: r
                .headers
                .into_iter()
                .map(|(name, value)| Header { name, value })
                .collect(),
            body: r.body,
            saved_to: r.saved_to.map(|p| p.display().to_string()),
            bytes: r.bytes,
            elapsed_ms: r.elapsed.as_secs_f64() * 1e3,
        }
    }
}

/// Statistics of one connection.
#[derive(uniffi::Record, Clone, Debug, PartialEq)]
pub struct Stats {
    /// `host:port` of the connection.
    pub authority: String,
    /// Smoothed RTT, ms, once measured.
    pub rtt_ms: Option<f64>,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// QUIC packets received.
    pub packets_received: u64,
    /// Packets of ours declared lost.
    pub packets_lost: u64,
    /// `packets_lost / packets_sent`.
    pub loss_rate: f64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Stream bytes we sent again.
    pub retransmitted_bytes: u64,
    /// Packets from the server recovered by decoding.
    pub recovered: u64,
    /// Repair symbols received per source symbol received.
    pub repair_overhead: f64,
    /// Congestion controller of our direction.
    pub controller: String,
    /// Whether both ends agreed to code.
    pub coding: bool,
    /// Whether the connection is still open.
    pub open: bool,
}

fn stats(authority: String, s: client::Stats) -> Stats {
    Stats {
        authority,
        rtt_ms: s.rtt.map(|d| d.as_secs_f64() * 1e3),
        loss_rate: s.loss_rate(),
        packets_sent: s.packets_sent,
        packets_received: s.packets_received,
        packets_lost: s.packets_lost,
        bytes_sent: s.bytes_sent,
        bytes_received: s.bytes_received,
        retransmitted_bytes: s.retransmitted_bytes,
        recovered: s.recovered,
        repair_overhead: s.repair_overhead,
        controller: s.controller,
        coding: s.coding,
        open: s.open,
    }
}

/// Told of a request's progress (at most every 100 ms and once at the
/// end), on the connection's thread: return quickly.
#[uniffi::export(callback_interface)]
pub trait ProgressListener: Send + Sync {
    /// `total` is the announced length, if any; goodput in bit/s.
    fn on_progress(&self, bytes: u64, total: Option<u64>, goodput_bps: f64);
}

/// Receives a streamed response body piece by piece, on the connection's
/// thread: return quickly.
#[uniffi::export(callback_interface)]
pub trait ChunkListener: Send + Sync {
    /// The next piece of the body.
    fn on_chunk(&self, data: Vec<u8>);
}

/// One request: a GET unless it has a body.
#[derive(uniffi::Record, Clone, Debug, Default)]
pub struct Request {
    /// An `https://` URL.
    pub url: String,
    /// POST these bytes.
    #[uniffi(default = None)]
    pub body: Option<Vec<u8>>,
    /// POST the contents of this file.
    #[uniffi(default = None)]
    pub body_file: Option<String>,
    /// Save the response body to this file instead of memory.
    #[uniffi(default = None)]
    pub save_to: Option<String>,
    /// Overrides the configuration's request timeout, ms.
    #[uniffi(default = None)]
    pub timeout_ms: Option<u64>,
}

/// An HTTP/3 client with coded transport. One connection per host, reused;
/// several requests may be in flight at once. Thread-safe.
#[derive(uniffi::Object)]
pub struct Client {
    inner: client::Client,
}

/// A request in flight.
#[derive(uniffi::Object)]
pub struct Call {
    inner: client::Call,
}

impl Client {
    fn spec(
        &self,
        request: Request,
        progress: Option<Box<dyn ProgressListener>>,
        chunks: Option<Box<dyn ChunkListener>>,
    ) -> Result<RequestSpec, QncError> {
        let body = match (request.body, request.body_file) {
            (Some(_), Some(_)) => {
                return Err(QncError::Config {
                    message: "give body or body_file, not both".into(),
                })
            }
            (Some(b), None) => Some(UploadSpec::Bytes(b.into())),
            (None, Some(f)) => Some(UploadSpec::File(PathBuf::from(f))),
            (None, None) => None,
        };
        let mut spec = RequestSpec::get(request.url);
        spec.body = body;
        if let Some(p) = request.save_to {
            spec = spec.to_file(p);
        }
        if let Some(t) = request.timeout_ms {
            spec = spec.timeout(Duration::from_millis(t));
        }
        if let Some(l) = progress {
            spec = spec.progress(move |t| {
                // A foreign exception must not stop the connection thread.
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    l.on_progress(t.bytes, t.total, t.goodput_bps)
                }));
            });
        }
        if let Some(l) = chunks {
            spec = spec.chunks(move |d| {
                let _ = catch_unwind(AssertUnwindSafe(|| l.on_chunk(d.to_vec())));
            });
        }
        Ok(spec)
    }
}

#[uniffi::export]
impl Client {
    /// A client with `config` (checked now: CA file, pin, controller).
    #[uniffi::constructor]
    pub fn new(config: Config) -> Result<Arc<Client>, QncError> {
        let c = Settings {
            ca_file: config.ca_file.as_deref(),
            pin_sha256: config.pin_sha256.as_deref(),
            insecure: config.insecure,
            coding: config.coding,
            policy: config.policy.as_deref(),
            controller: config.controller.as_deref(),
            connect_timeout_ms: config.connect_timeout_ms,
            request_timeout_ms: config.request_timeout_ms,
            idle_timeout_ms: config.idle_timeout_ms,
            qlog_dir: config.qlog_dir.as_deref(),
        }
        .config()?;
        Ok(Arc::new(Client {
            inner: client::Client::new(c)?,
        }))
    }

    /// GET `url` into memory.
    pub fn get(
        &self,
        url: String,
        progress: Option<Box<dyn ProgressListener>>,
    ) -> Result<Response, QncError> {
        self.execute(
            Request {
                url,
                ..Request::default()
            },
            progress,
        )
    }

    /// GET `url` into the file `path`.
    pub fn download(
        &self,
        url: String,
        path: String,
        progress: Option<Box<dyn ProgressListener>>,
    ) -> Result<Response, QncError> {
        self.execute(
            Request {
                url,
                save_to: Some(path),
                ..Request::default()
            },
            progress,
        )
    }

    /// POST `body` to `url`.
    pub fn post(
        &self,
        url: String,
        body: Vec<u8>,
        progress: Option<Box<dyn ProgressListener>>,
    ) -> Result<Response, QncError> {
        self.execute(
            Request {
                url,
                body: Some(body),
                ..Request::default()
            },
            progress,
        )
    }

    /// Runs `request` and waits for it.
    pub fn execute(
        &self,
        request: Request,
        progress: Option<Box<dyn ProgressListener>>,
    ) -> Result<Response, QncError> {
        let spec = self.spec(request, progress, None)?;
        Ok(self.inner.start(spec)?.wait()?.into())
    }

    /// GET `url`, handing the body to `listener` as it arrives (the
    /// response's `body` stays empty).
    pub fn stream(
        &self,
        url: String,
        listener: Box<dyn ChunkListener>,
        progress: Option<Box<dyn ProgressListener>>,
    ) -> Result<Response, QncError> {
        let spec = self.spec(
            Request {
                url,
                ..Request::default()
            },
            progress,
            Some(listener),
        )?;
        Ok(self.inner.start(spec)?.wait()?.into())
    }

    /// Starts `request` without waiting: the [`Call`] waits, polls or
    /// cancels it.
    pub fn start(
        &self,
        request: Request,
        progress: Option<Box<dyn ProgressListener>>,
        chunks: Option<Box<dyn ChunkListener>>,
    ) -> Result<Arc<Call>, QncError> {
        let spec = self.spec(request, progress, chunks)?;
        Ok(Arc::new(Call {
            inner: self.inner.start(spec)?,
        }))
    }

    /// GET `url` into memory, awaited (a coroutine in Kotlin and Python, an
    /// async function in Swift).
    pub async fn fetch(&self, url: String) -> Result<Response, QncError> {
        let call = self.inner.start(RequestSpec::get(url))?;
        Ok(call.into_future().await?.into())
    }

    /// Cancels every request in flight.
    pub fn cancel_all(&self) {
        self.inner.cancel_all();
    }

    /// Statistics of every connection opened, latest first by host.
    pub fn stats(&self) -> Vec<Stats> {
        self.inner
            .all_stats()
            .into_iter()
            .map(|(a, s)| stats(a, s))
            .collect()
    }

    /// Closes all connections (requests in flight end as cancelled).
    pub fn close(&self) {
        self.inner.close();
    }
}

#[uniffi::export]
impl Call {
    /// The request's id within its client.
    pub fn id(&self) -> u64 {
        self.inner.id()
    }

    /// Waits for the response (once).
    pub fn wait(&self) -> Result<Response, QncError> {
        Ok(self.inner.wait()?.into())
    }

    /// Waits at most `ms`; `None` if still running.
    pub fn wait_timeout(&self, ms: u64) -> Result<Option<Response>, QncError> {
        match self.inner.wait_timeout(Duration::from_millis(ms)) {
            None => Ok(None),
            Some(r) => Ok(Some(r?.into())),
        }
    }

    /// Whether the result is ready.
    pub fn is_done(&self) -> bool {
        self.inner.is_done()
    }

    /// Gives the request up; its result becomes `Cancelled`.
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

/// The SDK's version.
#[uniffi::export]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
