//! `quinn-peer server`: HTTP/3 `GET /bytes/N` over quinn, one JSON line of
//! transport statistics per closed connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h3::server::RequestResolver;
use http::{header, Method, Response, StatusCode};
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinSet;

use crate::args::ServerArgs;
use crate::common::{endpoint, json_str, route, server_config, Pattern, Route};

type H3Conn = h3_quinn::Connection;

/// How long a shutdown waits for the connections' last JSON lines and for
/// CONNECTION_CLOSE frames to leave.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

pub async fn run(a: ServerArgs) -> Result<(), String> {
    let config = server_config(&a.cert, &a.key, &a.transport)?;
    let endpoint = endpoint(a.addr, Some(config))?;
    let local = endpoint.local_addr().map_err(|e| e.to_string())?;
    // The runner waits for this exact line (port 0 works: it is the bound
    // address). Rust's stdout is line-buffered, so it leaves at once.
    println!("listening {local}");

    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let pattern = Arc::new(Pattern::new());
    let cc = a.transport.cc.name();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                conns.spawn(connection(incoming, pattern.clone(), cc));
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
async fn connection(incoming: quinn::Incoming, pattern: Arc<Pattern>, cc: &'static str) {
    let start = Instant::now();
    let peer = incoming.remote_address();
    let conn = match incoming.await {
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
                    streams.spawn(request(resolver, pattern.clone()));
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
    println!("{}", stats_json(&conn, peer, start.elapsed(), cc));
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

/// Answers one request.
async fn request(resolver: RequestResolver<H3Conn, Bytes>, pattern: Arc<Pattern>) {
    let Ok((req, mut stream)) = resolver.resolve_request().await else {
        return;
    };
    let head = req.method() == Method::HEAD;
    let (status, body) = if req.method() != Method::GET && !head {
        (StatusCode::METHOD_NOT_ALLOWED, Err("only GET and HEAD"))
    } else {
        match route(req.uri().path()) {
            Route::Bytes(n) => (StatusCode::OK, Ok(n)),
            Route::BadRequest(why) => (StatusCode::BAD_REQUEST, Err(why)),
            Route::NotFound => (StatusCode::NOT_FOUND, Err("not found")),
        }
    };
    let (len, ctype) = match body {
        Ok(n) => (n, "application/octet-stream"),
        Err(msg) => (msg.len() as u64 + 1, "text/plain"),
    };
    let resp = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, len)
        .header(header::CONTENT_TYPE, ctype)
        .header(header::SERVER, "quinn-peer")
        .body(())
        .expect("valid response head");
    if stream.send_response(resp).await.is_err() {
        return;
    }
    if !head {
        let sent = match body {
            Ok(n) => {
                let mut ok = true;
                for chunk in pattern.chunks(n) {
                    if stream.send_data(chunk).await.is_err() {
                        ok = false;
                        break;
                    }
                }
                ok
            }
            Err(msg) => stream
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
