//! `quinn-peer server`: HTTP/3 `GET /bytes/N`, `GET /stamped/N` (and the
//! files of `--root`) over quinn, one JSON line of transport statistics per
//! closed connection.

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h3::server::RequestResolver;
use http::{header, Method, Response, StatusCode};
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinSet;

use crate::args::ServerArgs;
use crate::common::{
    endpoint, file_under, json_str, monotonic_ns, route, server_config, stamped_chunk, Pattern,
    Route, SEND_WINDOW, STAMP_CHUNK,
};

type H3Conn = h3_quinn::Connection;

/// How long a shutdown waits for the connections' last JSON lines and for
/// CONNECTION_CLOSE frames to leave.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What every connection's task needs.
struct Shared {
    pattern: Pattern,
    root: Option<PathBuf>,
    early_data: bool,
    cc: &'static str,
}

pub async fn run(a: ServerArgs) -> Result<(), String> {
    if let Some(r) = &a.root {
        if !r.is_dir() {
            return Err(format!("--root {}: not a directory", r.display()));
        }
    }
    let config = server_config(&a.cert, &a.key, &a.transport, a.early_data)?;
    let endpoint = endpoint(a.addr, Some(config))?;
    let local = endpoint.local_addr().map_err(|e| e.to_string())?;
    // The runner waits for this exact line (port 0 works: it is the bound
    // address). Rust's stdout is line-buffered, so it leaves at once.
    println!("listening {local}");

    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let shared = Arc::new(Shared {
        pattern: Pattern::new(),
        root: a.root.clone(),
        early_data: a.early_data,
        cc: a.transport.cc.name(),
    });
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                // Address validation for every new connection: an Initial
                // without a Retry token gets a Retry (stateless; the client
                // comes back with the token, and may_retry() is then false).
                if a.retry && incoming.may_retry() {
                    if let Err(e) = incoming.retry() {
                        eprintln!("quinn-peer: retry: {e}");
                    }
                    continue;
                }
                conns.spawn(connection(incoming, shared.clone()));
            }
            // Reap finished connection tasks so the set does not grow.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
        }
    }
    // Close every connection (each task then prints its line), let the
    // CONNECTION_CLOSE frames go out, and exit.
    endpoint.close(0u32.into(), b"server shutting down");
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
        endpoint.wait_idle().await;
    })
    .await;
    Ok(())
}

/// Serves one connection until it closes, then prints its statistics.
async fn connection(incoming: quinn::Incoming, shared: Arc<Shared>) {
    let start = Instant::now();
    let peer = incoming.remote_address();
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("quinn-peer: connection from {peer} refused: {e}");
            return;
        }
    };
    let conn = if shared.early_data {
        // 0.5-RTT: the connection is usable before the handshake completes,
        // so requests that came in 0-RTT are answered at once (into_0rtt
        // is always Ok on a server). But only once the whole ClientHello
        // is in (handshake data ready): before that the client's transport
        // parameters are unknown, and the HTTP/3 control stream opened
        // with no stream credit is never woken up when they arrive (a
        // ClientHello with a post-quantum key share spans two Initials).
        let mut connecting = connecting;
        // (The handshake data, a Box<dyn Any>, is not Send: drop it here.)
        let ready = connecting.handshake_data().await.map(drop);
        match ready {
            Err(e) => Err(e),
            Ok(()) => match connecting.into_0rtt() {
                Ok((conn, _accepted)) => Ok(conn),
                Err(connecting) => connecting.await,
            },
        }
    } else {
        connecting.await
    };
    let conn = match conn {
        Ok(c) => c,
        Err(e) => {
            eprintln!("quinn-peer: handshake with {peer} failed: {e}");
            return;
        }
    };
    let h3conn = h3::server::builder()
        .build::<H3Conn, Bytes>(h3_quinn::Connection::new(conn.clone()))
        .await;
    match h3conn {
        Ok(mut h3conn) => {
            let requests = async {
                let mut streams = JoinSet::new();
                // Ends when the client goes away (an error) or sends GOAWAY.
                while let Ok(Some(resolver)) = h3conn.accept().await {
                    streams.spawn(request(resolver, conn.clone(), shared.clone()));
                }
                while streams.join_next().await.is_some() {}
                // Pending forever: the connection's end decides.
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = requests => {}
                _ = conn.closed() => {}
            }
        }
        Err(e) => {
            eprintln!("quinn-peer: HTTP/3 setup with {peer} failed: {e}");
            conn.close(0x101u32.into(), b"");
        }
    }
    conn.closed().await;
    println!("{}", stats_json(&conn, peer, start.elapsed(), shared.cc));
}

/// The server's JSON line, with qnc-server's field names.
fn stats_json(conn: &quinn::Connection, peer: SocketAddr, dur: Duration, cc: &str) -> String {
    let s = conn.stats();
    // quinn counts no retransmitted stream bytes. It re-sends the frames of
    // every packet it declares lost (stream data not acknowledged since),
    // so the bytes of lost packets (`lost_bytes`, whole QUIC packets, i.e.
    // with ~30-60 bytes of headers per 1350-byte packet, and counting data
    // that a late ACK made spurious) are the nearest figure: an upper
    // estimate of `retrans_bytes`. Both fields therefore carry the same
    // number.
    format!(
        concat!(
            "{{\"role\":\"server\",\"peer\":{},\"bytes_sent\":{},\"packets_sent\":{},",
            "\"packets_lost\":{},\"lost_bytes\":{},\"retrans_bytes\":{},",
            "\"duration_s\":{:.6},\"cc\":{},\"rtt_ms\":{:.3},\"min_rtt_ms\":{:.3},",
            "\"congestion_events\":{},\"cwnd\":{}}}"
        ),
        json_str(&peer.to_string()),
        s.udp_tx.bytes,
        s.path.sent_packets,
        s.path.lost_packets,
        s.path.lost_bytes,
        s.path.lost_bytes,
        dur.as_secs_f64(),
        json_str(cc),
        s.path.rtt.as_secs_f64() * 1e3,
        s.path.min_rtt.as_secs_f64() * 1e3,
        s.path.congestion_events,
        s.path.cwnd,
    )
}

/// A response body.
enum Body {
    /// N bytes of the pattern.
    Pattern(u64),
    /// N bytes of stamped chunks (`/stamped/N`).
    Stamped(u64),
    /// An open file of this length.
    File(std::fs::File, u64),
    /// A short text (a line).
    Msg(&'static str),
}

/// What answers `path`: `/bytes/N`, else a file of the root, else 404.
fn body_for(path: &str, shared: &Shared) -> (StatusCode, Body) {
    match route(path) {
        Route::Bytes(n) => (StatusCode::OK, Body::Pattern(n)),
        Route::Stamped(n) => (StatusCode::OK, Body::Stamped(n)),
        Route::BadRequest(why) => (StatusCode::BAD_REQUEST, Body::Msg(why)),
        Route::NotFound => {
            let file = shared.root.as_deref().and_then(|r| file_under(r, path));
            let opened = file.and_then(|p| {
                let f = std::fs::File::open(p).ok()?;
                let len = f.metadata().ok()?.len();
                Some((f, len))
            });
            match opened {
                Some((f, len)) => (StatusCode::OK, Body::File(f, len)),
                None => (StatusCode::NOT_FOUND, Body::Msg("not found")),
            }
        }
    }
}

/// Largest chunk of a file handed to the stream at once.
const FILE_CHUNK: usize = 64 * 1024;

/// Writes `n` bytes of stamped chunks, each stamped just before it is handed
/// to quinn. qnc-server's quiche takes no more than its congestion window
/// has room for, so its stamps are the time a chunk could go out; quinn
/// buffers up to its send window (32 MB here), so while the body is
/// written the send window follows the congestion window (it bounds the
/// data sent and not yet acknowledged, buffered or in flight). A chunk
/// that waits for room was stamped before the wait: the stamps are early
/// by at most the time between two ACKs that free room. The send window is
/// the connection's: this assumes one stamped body per connection at a
/// time (the benchmarks make one request per connection).
async fn send_stamped(
    stream: &mut h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
    conn: &quinn::Connection,
    n: u64,
) -> bool {
    let mut ok = true;
    let chunk = STAMP_CHUNK as u64;
    for seq in 0..n.div_ceil(chunk) {
        let window = conn.stats().path.cwnd.max(2 * chunk);
        conn.set_send_window(window);
        let len = (n - seq * chunk).min(chunk) as usize;
        if stream
            .send_data(stamped_chunk(seq, monotonic_ns(), len))
            .await
            .is_err()
        {
            ok = false;
            break;
        }
    }
    conn.set_send_window(SEND_WINDOW);
    ok
}

/// Answers one request.
async fn request(
    resolver: RequestResolver<H3Conn, Bytes>,
    conn: quinn::Connection,
    shared: Arc<Shared>,
) {
    let Ok((req, mut stream)) = resolver.resolve_request().await else {
        return;
    };
    let head = req.method() == Method::HEAD;
    let (status, body) = if req.method() != Method::GET && !head {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            Body::Msg("only GET and HEAD"),
        )
    } else {
        body_for(req.uri().path(), &shared)
    };
    let (len, ctype) = match &body {
        Body::Pattern(n) | Body::Stamped(n) | Body::File(_, n) => (*n, "application/octet-stream"),
        Body::Msg(msg) => (msg.len() as u64 + 1, "text/plain"),
    };
    let mut resp = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, len)
        .header(header::CONTENT_TYPE, ctype)
        .header(header::SERVER, "quinn-peer");
    if let Body::Stamped(_) = body {
        // The header qnc-client measures delivery delays on.
        resp = resp.header("x-chunk-size", STAMP_CHUNK);
    }
    let resp = resp.body(()).expect("valid response head");
    if stream.send_response(resp).await.is_err() {
        return;
    }
    if !head {
        let sent = match body {
            Body::Pattern(n) => {
                let mut ok = true;
                for chunk in shared.pattern.chunks(n) {
                    if stream.send_data(chunk).await.is_err() {
                        ok = false;
                        break;
                    }
                }
                ok
            }
            Body::Stamped(n) => send_stamped(&mut stream, &conn, n).await,
            Body::File(mut f, n) => {
                // Small local files (page cache): plain blocking reads.
                let mut left = n;
                let mut ok = true;
                while left > 0 {
                    let mut buf = vec![0u8; FILE_CHUNK.min(left as usize)];
                    if let Err(e) = f.read_exact(&mut buf) {
                        eprintln!("quinn-peer: reading {}: {e}", req.uri().path());
                        ok = false;
                        break;
                    }
                    left -= buf.len() as u64;
                    if stream.send_data(Bytes::from(buf)).await.is_err() {
                        ok = false;
                        break;
                    }
                }
                ok
            }
            Body::Msg(msg) => stream
                .send_data(Bytes::from(format!("{msg}\n")))
                .await
                .is_ok(),
        };
        if !sent {
            return;
        }
    }
    let _ = stream.finish().await;
}
