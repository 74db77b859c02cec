//! `quinn-peer client`: downloads one URL over HTTP/3 and prints one JSON
//! line like qnc-client's (`bytes`, `duration_s`, `status`, `goodput_mbps`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Buf;
use http::{header, Request};

use crate::args::ClientArgs;
use crate::common::{client_config, endpoint, json_str};

/// The parts of an `https://HOST[:PORT]/PATH` URL the client needs.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    /// Host name or IP address, without IPv6 brackets (TLS server name).
    pub host: String,
    pub port: u16,
}

pub fn parse_url(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("'{url}': only https:// URLs"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("'{url}': unclosed '['"))?;
        (h, tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(format!("'{url}': no host"));
    }
    let port = match port {
        None | Some("") => 443,
        Some(p) => p.parse().map_err(|_| format!("'{url}': bad port '{p}'"))?,
    };
    Ok(Target {
        host: host.to_string(),
        port,
    })
}

/// What one download produced.
struct Download {
    status: u16,
    bytes: u64,
    /// From before the handshake to the last body byte.
    duration: Duration,
    /// Set when the run failed after the response head arrived.
    error: Option<String>,
}

pub async fn run(a: ClientArgs) -> Result<(), String> {
    let target = parse_url(&a.url)?;
    let config = client_config(a.ca.as_deref(), &a.transport)?;
    let mut sink: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(BufWriter::with_capacity(
            1 << 20,
            File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => Box::new(std::io::sink()),
    };
    let addr = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("{}: {e}", target.host))?
        .next()
        .ok_or_else(|| format!("{}: no address", target.host))?;
    let bind: SocketAddr = if addr.is_ipv6() {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let mut endpoint = endpoint(bind, None)?;
    endpoint.set_default_client_config(config);

    // The clock starts before the handshake, as qnc-client's does.
    let start = Instant::now();
    let conn = endpoint
        .connect(addr, &target.host)
        .map_err(|e| format!("{addr}: {e}"))?;
    let result = tokio::time::timeout(a.timeout, async {
        let conn = conn
            .await
            .map_err(|e| format!("connection to {addr}: {e}"))?;
        let d = download(&a.url, conn.clone(), &mut sink, start).await;
        Ok::<_, String>((conn, d))
    })
    .await;
    let (conn, d) = match result {
        Err(_) => {
            endpoint.close(0u32.into(), b"timeout");
            return Err(format!(
                "timed out after {:.1} s",
                start.elapsed().as_secs_f64()
            ));
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(v)) => v,
    };
    // H3_NO_ERROR. The CONNECTION_CLOSE leaves at once (so the server's line
    // reports the real connection lifetime); the endpoint's draining period
    // is awaited (briefly) only after the report is out.
    conn.close(0x100u32.into(), b"");
    let drained = async {
        let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    };
    let d = match d {
        Ok(d) => d,
        Err(e) => {
            drained.await;
            return Err(e);
        }
    };
    if let Err(e) = sink.flush() {
        return Err(format!("writing the body: {e}"));
    }
    let secs = d.duration.as_secs_f64();
    let goodput = if secs > 0.0 {
        d.bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    };
    println!(
        "{{\"role\":\"client\",\"url\":{},\"status\":{},\"bytes\":{},\"duration_s\":{:.6},\"goodput_mbps\":{:.3},\"cc\":{}}}",
        json_str(&a.url),
        d.status,
        d.bytes,
        secs,
        goodput,
        json_str(a.transport.cc.name()),
    );
    drained.await;
    if let Some(e) = d.error {
        return Err(format!("GET {}: {e}", a.url));
    }
    if d.status >= 400 {
        return Err(format!("GET {}: status {}", a.url, d.status));
    }
    Ok(())
}

/// Sends the request on `conn` and reads the response into `sink`.
/// `Err` when no response head arrived.
async fn download(
    url: &str,
    conn: quinn::Connection,
    sink: &mut dyn Write,
    start: Instant,
) -> Result<Download, String> {
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .map_err(|e| format!("HTTP/3 setup: {e}"))?;
    // The connection-level HTTP/3 work (control streams) runs beside the
    // request.
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let req = Request::get(url)
        .body(())
        .map_err(|e| format!("'{url}': {e}"))?;
    let mut stream = send
        .send_request(req)
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    stream
        .finish()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let resp = stream
        .recv_response()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = resp.status().as_u16();
    let want: Option<u64> = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let mut bytes = 0u64;
    let mut error = None;
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                bytes += chunk.remaining() as u64;
                while chunk.has_remaining() {
                    let part = chunk.chunk();
                    if let Err(e) = sink.write_all(part) {
                        error = Some(format!("writing the body: {e}"));
                        break;
                    }
                    let n = part.len();
                    chunk.advance(n);
                }
                if error.is_some() {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(format!("after {bytes} bytes: {e}"));
                break;
            }
        }
    }
    let duration = start.elapsed();
    if error.is_none() {
        if let Some(w) = want.filter(|&w| w != bytes) {
            error = Some(format!("got {bytes} bytes, content-length {w}"));
        }
    }
    drop(stream);
    drop(send);
    drive.abort();
    Ok(Download {
        status,
        bytes,
        duration,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = |h: &str, p| Target {
            host: h.into(),
            port: p,
        };
        assert_eq!(
            parse_url("https://127.0.0.1:4433/bytes/10"),
            Ok(t("127.0.0.1", 4433))
        );
        assert_eq!(parse_url("https://localhost/x"), Ok(t("localhost", 443)));
        assert_eq!(parse_url("https://[::1]:9/"), Ok(t("::1", 9)));
        assert_eq!(parse_url("https://h:7?q"), Ok(t("h", 7)));
        for bad in ["http://h/", "https:///x", "https://h:x/", "https://[::1/"] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
