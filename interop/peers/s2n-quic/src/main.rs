//! An s2n-quic + h3 HTTP/3 file server for nc-interop (the server role of
//! interop/peers/endpoints/s2n-quic.sh):
//!
//!   s2n-quic-peer server --addr HOST:PORT --root DIR --cert PEM --key PEM [--retry]
//!
//! Serves GET of the files under --root; prints `listening ADDR` once bound.
//! With --retry, every connection attempt without a valid token gets a
//! Retry (s2n-quic's endpoint limiter answering Outcome::retry).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use s2n_quic::provider::endpoint_limits::{ConnectionAttempt, Limiter, Outcome};
use tokio::io::AsyncReadExt;

const CHUNK: usize = 64 * 1024;

struct Args {
    addr: String,
    root: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    retry: bool,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    if it.next().as_deref() != Some("server") {
        return Err("usage: s2n-quic-peer server --addr HOST:PORT --root DIR --cert PEM --key PEM [--retry]".into());
    }
    let (mut addr, mut root, mut cert, mut key, mut retry) = (None, None, None, None, false);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--addr" => addr = Some(val()?),
            "--root" => root = Some(PathBuf::from(val()?)),
            "--cert" => cert = Some(PathBuf::from(val()?)),
            "--key" => key = Some(PathBuf::from(val()?)),
            "--retry" => retry = true,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(Args {
        addr: addr.ok_or("--addr is required")?,
        root: root.ok_or("--root is required")?,
        cert: cert.ok_or("--cert is required")?,
        key: key.ok_or("--key is required")?,
        retry,
    })
}

/// Asks for a Retry on every attempt; s2n-quic does not ask the limiter
/// again once the Initial carries a valid Retry token.
struct AlwaysRetry;

impl Limiter for AlwaysRetry {
    fn on_connection_attempt(&mut self, _info: &ConnectionAttempt) -> Outcome {
        Outcome::retry()
    }
}

#[tokio::main]
async fn main() {
    let a = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("s2n-quic-peer: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = serve(a).await {
        eprintln!("s2n-quic-peer: {e}");
        std::process::exit(1);
    }
}

async fn serve(a: Args) -> Result<(), String> {
    let addr: std::net::SocketAddr = a
        .addr
        .parse()
        .map_err(|e| format!("--addr {}: {e}", a.addr))?;
    let tls = s2n_quic::provider::tls::default::Server::builder()
        .with_certificate(a.cert.as_path(), a.key.as_path())
        .and_then(|b| b.with_application_protocols(["h3"].iter()))
        .and_then(|b| b.build())
        .map_err(|e| format!("TLS setup: {e}"))?;
    let builder = s2n_quic::Server::builder()
        .with_tls(tls)
        .map_err(|e| e.to_string())?
        .with_io(addr)
        .map_err(|e| e.to_string())?;
    let mut server = if a.retry {
        builder
            .with_endpoint_limits(AlwaysRetry)
            .map_err(|e| e.to_string())?
            .start()
    } else {
        builder.start()
    }
    .map_err(|e| e.to_string())?;
    let local = server.local_addr().map_err(|e| e.to_string())?;
    println!("listening {local}");
    let root = Arc::new(a.root);
    while let Some(conn) = server.accept().await {
        let root = root.clone();
        tokio::spawn(async move {
            let peer = conn
                .remote_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            let h3 =
                h3::server::Connection::<_, Bytes>::new(s2n_quic_h3::Connection::new(conn)).await;
            let mut h3 = match h3 {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("s2n-quic-peer: HTTP/3 setup with {peer} failed: {e}");
                    return;
                }
            };
            while let Ok(Some(resolver)) = h3.accept().await {
                let root = root.clone();
                tokio::spawn(async move {
                    if let Ok((req, stream)) = resolver.resolve_request().await {
                        respond(req, stream, &root).await;
                    }
                });
            }
        });
    }
    Ok(())
}

/// The file under `root` that `path` names, if it is one.
fn file_under(root: &Path, path: &str) -> Option<PathBuf> {
    let segs: Vec<&str> = path
        .split(['?', '#'])
        .next()?
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    if segs.is_empty() || segs.iter().any(|s| *s == ".." || *s == ".") {
        return None;
    }
    let p = segs.iter().fold(root.to_path_buf(), |p, s| p.join(s));
    p.is_file().then_some(p)
}

async fn respond<S>(
    req: http::Request<()>,
    mut stream: h3::server::RequestStream<S, Bytes>,
    root: &Path,
) where
    S: h3::quic::BidiStream<Bytes>,
{
    let file = (req.method() == Method::GET)
        .then(|| file_under(root, req.uri().path()))
        .flatten();
    let Some(path) = file else {
        let status = if req.method() == Method::GET {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::METHOD_NOT_ALLOWED
        };
        let _ = stream
            .send_response(Response::builder().status(status).body(()).unwrap())
            .await;
        let _ = stream.finish().await;
        return;
    };
    let Ok(mut f) = tokio::fs::File::open(&path).await else {
        return;
    };
    let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
    let head = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_LENGTH, len)
        .body(())
        .unwrap();
    if stream.send_response(head).await.is_err() {
        return;
    }
    let mut buf = vec![0u8; CHUNK];
    loop {
        match f.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if stream
                    .send_data(Bytes::copy_from_slice(&buf[..n]))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => {
                eprintln!("s2n-quic-peer: reading {}: {e}", path.display());
                return;
            }
        }
    }
    let _ = stream.finish().await;
}
