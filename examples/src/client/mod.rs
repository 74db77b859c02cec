//! The HTTP/3 client: a library with a runtime of its own ([`Client`]),
//! and the command-line run behind `qnc-client` ([`run`]), both on one
//! connection engine.
//!
//! Library callers build a [`Client`] from a [`ClientConfig`] and issue
//! requests; each `host:port` gets one connection, driven on a background
//! thread, reused by later requests and closed after the idle timeout or
//! when the client is dropped. The command-line tool sends its URLs as
//! parallel requests on one connection and closes it when all are done.

mod api;
mod config;
mod conn;
mod error;
mod liveness;
mod outcome;
mod progress;
mod request;
mod response;
mod rtt_cache;
mod stats;

pub use api::{Call, CallFuture, Client, RequestSpec};
pub use config::{ClientConfig, Trust, DEFAULT_CONNECT_TIMEOUT};
pub use error::{Error, ErrorKind};
pub use outcome::Outcome;
pub use progress::Progress;
pub use request::{
    save_paths, ChunkFn, DoneFn, ProgressFn, Request, Sink, Transferred, MEMORY_LIMIT,
};
pub use response::Response;
pub use stats::Stats;

use std::time::Duration;

use crate::args::ClientArgs;
use crate::shutdown::Shutdown;
use crate::url::Url;
use conn::Conn;

/// Exit status after SIGINT/SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Fetches all URLs of `args` (the `qnc-client` command).
pub fn run(args: &ClientArgs, shutdown: &Shutdown) -> Outcome {
    let config = ClientConfig::from_args(args);
    let requests = match cli_requests(args) {
        Ok(r) => r,
        Err(e) => return Outcome::failed(Error::new(ErrorKind::Config, e)),
    };
    let first = requests[0].url.clone();
    let mut conn = match Conn::connect(&config, &first, requests, false) {
        Ok(c) => c,
        Err(e) => return Outcome::failed(e),
    };
    let overall = args
        .timeout
        .map(|s| conn.started + Duration::from_secs_f64(s));
    let mut poll = match mio::Poll::new() {
        Ok(p) => p,
        Err(e) => return Outcome::failed(Error::new(ErrorKind::Protocol, format!("poll: {e}"))),
    };
    if let Err(e) = conn.run_loop(&mut poll, None, Some(shutdown), overall) {
        return Outcome::failed(e);
    }
    conn.progress.finish();
    let io = |m: String| Outcome::failed(Error::new(ErrorKind::Io, m));
    if let Err(e) = conn.remember(&config) {
        return io(e);
    }
    if let Some(path) = &args.delay_log {
        if let Some(m) = conn.requests.iter().find_map(|r| r.delivery.as_ref()) {
            if let Err(e) = std::fs::write(path, m.csv()) {
                return io(format!("cannot write {}: {e}", path.display()));
            }
            if m.log_truncated() {
                eprintln!(
                    "warning: {} has the first {} chunks only",
                    path.display(),
                    crate::stream::LOGGED_CHUNKS
                );
            }
        }
    }
    conn.outcome()
}

/// The command line's requests: one per URL, all to one `host:port`,
/// saved under `--out`, with the upload if one was asked for.
fn cli_requests(args: &ClientArgs) -> Result<Vec<Request>, String> {
    let urls = args
        .urls
        .iter()
        .map(|u| Url::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let first = &urls[0];
    if let Some(other) = urls
        .iter()
        .find(|u| (&u.host, u.port) != (&first.host, first.port))
    {
        return Err(format!(
            "all URLs must use the same host:port ({} vs {})",
            first.authority, other.authority
        ));
    }
    let saves = match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            save_paths(dir, &urls).into_iter().map(Some).collect()
        }
        None => vec![None; urls.len()],
    };
    let upload = args.upload_spec();
    urls.into_iter()
        .zip(saves)
        .map(|(u, s)| {
            let r = Request::new(u, s);
            match &upload {
                Some(spec) => spec.open().map(|b| r.with_upload(b)),
                None => Ok(r),
            }
        })
        .collect()
}
