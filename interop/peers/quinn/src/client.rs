//! `quinn-peer client`: downloads URLs over HTTP/3 -- all on one
//! connection (in parallel), one connection each (`--multiconnect`), or the
//! first on one connection and the rest on a second one resuming its TLS
//! session (`--resume`), in 0-RTT (`--0rtt`) -- and prints one JSON line per
//! URL like qnc-client's (`bytes`, `duration_s`, `status`, `goodput_mbps`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::{header, Request};
use tokio::task::JoinSet;

use crate::args::ClientArgs;
use crate::common::{client_config, endpoint, json_str, Tickets, Trust};

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

/// Where a response body goes.
enum Dest {
    /// Dropped.
    Sink,
    /// The `--out` file (created before connecting).
    File(BufWriter<File>),
    /// A file created once a 2xx response head arrived.
    Path(PathBuf),
}

/// One URL to fetch.
struct Job {
    url: String,
    dest: Dest,
}

/// What one download produced.
struct Download {
    url: String,
    status: u16,
    bytes: u64,
    /// From before the connection's handshake to the last body byte.
    duration: Duration,
    /// Set when the download failed.
    error: Option<String>,
}

/// How a connection went, for the JSON lines.
struct ConnInfo {
    /// Whether the connection offered a session ticket (resumption).
    resumption: bool,
    /// 0-RTT: `None` if not attempted, else whether the server accepted it.
    zero_rtt: Option<bool>,
}

/// Bodies written at once (bytes).
const WRITE_BUFFER: usize = 1 << 20;

/// Most requests in flight on a connection (the server's stream limit
/// caps it further).
const PARALLEL: usize = 100;

/// How long the client waits after its first connection for a session
/// ticket (`--resume`).
const TICKET_WAIT: Duration = Duration::from_secs(2);

/// The file name a URL's body is saved as in `--outdir`: its last path
/// segment.
pub fn file_name(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let name = path
        .split_once('/')
        .map(|(_, p)| p.rsplit('/').next().unwrap_or(""))
        .unwrap_or("");
    if name.is_empty() || name == "." || name == ".." {
        return Err(format!("'{url}': no file name in the path"));
    }
    Ok(name.to_string())
}

/// The URLs' indices per connection, in order.
fn plan(n: usize, a: &ClientArgs) -> Vec<Vec<usize>> {
    if a.multiconnect {
        (0..n).map(|i| vec![i]).collect()
    } else if a.resume && n > 1 {
        vec![vec![0], (1..n).collect()]
    } else {
        vec![(0..n).collect()]
    }
}

async fn resolve(url: &str) -> Result<(SocketAddr, String), String> {
    let target = parse_url(url)?;
    let addr = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("{}: {e}", target.host))?
        .next()
        .ok_or_else(|| format!("{}: no address", target.host))?;
    Ok((addr, target.host))
}

pub async fn run(a: ClientArgs) -> Result<(), String> {
    for u in &a.urls {
        parse_url(u)?;
    }
    let trust = if a.insecure {
        Trust::SignaturesOnly
    } else {
        Trust::Roots(a.ca.clone())
    };
    let (config, tickets) = client_config(&trust, &a.transport, a.zero_rtt)?;
    let mut jobs: Vec<Option<Job>> = Vec::with_capacity(a.urls.len());
    for u in &a.urls {
        let dest = match (&a.out, &a.outdir) {
            (Some(p), _) => Dest::File(BufWriter::with_capacity(
                WRITE_BUFFER,
                File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
            )),
            (None, Some(d)) => Dest::Path(d.join(file_name(u)?)),
            (None, None) => Dest::Sink,
        };
        jobs.push(Some(Job {
            url: u.clone(),
            dest,
        }));
    }
    if let Some(d) = &a.outdir {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let (addr, _) = resolve(&a.urls[0]).await?;
    let bind: SocketAddr = if addr.is_ipv6() {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let mut endpoint = endpoint(bind, None)?;
    endpoint.set_default_client_config(config);

    let started = Instant::now();
    let plan = plan(a.urls.len(), &a);
    let mut failures = Vec::new();
    let all = async {
        for (ci, group) in plan.iter().enumerate() {
            let group_jobs: Vec<Job> = group.iter().filter_map(|&i| jobs[i].take()).collect();
            let early = a.zero_rtt && ci > 0;
            let (downloads, info) =
                connection(&endpoint, group_jobs, early, a.key_update, &tickets).await?;
            for d in &downloads {
                print_line(d, ci, &info, a.transport.cc.name());
                if let Some(e) = &d.error {
                    failures.push(format!("GET {}: {e}", d.url));
                } else if d.status >= 400 {
                    failures.push(format!("GET {}: status {}", d.url, d.status));
                }
            }
            if early && info.zero_rtt != Some(true) {
                failures.push(format!(
                    "connection {}: no 0-RTT ({})",
                    ci + 1,
                    match info.zero_rtt {
                        None => "no session ticket allowing early data",
                        _ => "the server rejected it",
                    }
                ));
            }
            if a.resume && ci > 0 && !info.resumption {
                failures.push(format!(
                    "connection {}: no session ticket to resume",
                    ci + 1
                ));
            }
            if a.resume && ci == 0 && plan.len() > 1 {
                // The ticket comes after the handshake; it is usually there
                // long before the first response ends.
                let wait = Instant::now();
                while tickets.received() == 0 && wait.elapsed() < TICKET_WAIT {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                if tickets.received() == 0 {
                    return Err("the server sent no session ticket".to_string());
                }
            }
        }
        Ok::<(), String>(())
    };
    let result = tokio::time::timeout(a.timeout, all).await;
    let result = match result {
        Err(_) => {
            endpoint.close(0u32.into(), b"timeout");
            Err(format!(
                "timed out after {:.1} s",
                started.elapsed().as_secs_f64()
            ))
        }
        Ok(r) => r,
    };
    // The endpoint's draining periods, briefly.
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    result?;
    if !failures.is_empty() {
        return Err(failures.join("; "));
    }
    Ok(())
}

/// One JSON line per URL.
fn print_line(d: &Download, conn: usize, info: &ConnInfo, cc: &str) {
    let secs = d.duration.as_secs_f64();
    let goodput = if secs > 0.0 {
        d.bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    };
    let zero_rtt = match info.zero_rtt {
        None => String::new(),
        Some(z) => format!(",\"zero_rtt\":{z}"),
    };
    println!(
        "{{\"role\":\"client\",\"url\":{},\"status\":{},\"bytes\":{},\"duration_s\":{:.6},\"goodput_mbps\":{:.3},\"cc\":{},\"conn\":{},\"resumption\":{}{}}}",
        json_str(&d.url),
        d.status,
        d.bytes,
        secs,
        goodput,
        json_str(cc),
        conn,
        info.resumption,
        zero_rtt,
    );
}

/// Fetches `jobs` on one new connection (its requests in 0-RTT if `early`
/// and a ticket allows it), then closes it. `Err` if the connection or its
/// HTTP/3 setup failed; failed downloads are reported in their `Download`.
async fn connection(
    endpoint: &quinn::Endpoint,
    jobs: Vec<Job>,
    early: bool,
    key_update: bool,
    tickets: &Tickets,
) -> Result<(Vec<Download>, ConnInfo), String> {
    let (addr, host) = resolve(&jobs[0].url).await?;
    let used_before = tickets.used();
    // The clock starts before the handshake, as qnc-client's does.
    let start = Instant::now();
    let connecting = endpoint
        .connect(addr, &host)
        .map_err(|e| format!("{addr}: {e}"))?;
    let (conn, accepted) = if early {
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => (conn, Some(accepted)),
            Err(connecting) => {
                eprintln!("quinn-peer: no 0-RTT keys (no ticket allowing early data): waiting for the handshake");
                (
                    connecting
                        .await
                        .map_err(|e| format!("connection to {addr}: {e}"))?,
                    None,
                )
            }
        }
    } else {
        let conn = connecting
            .await
            .map_err(|e| format!("connection to {addr}: {e}"))?;
        (conn, None)
    };
    let resumption = tickets.used() > used_before;
    let got_head = Arc::new(AtomicBool::new(false));
    let updater = key_update.then(|| tokio::spawn(update_keys(conn.clone(), got_head.clone())));
    let downloads = fetch_all(conn.clone(), jobs, start, got_head).await;
    let zero_rtt = match accepted {
        Some(acc) => Some(acc.await),
        None => None,
    };
    if let Some(u) = updater {
        if !u.is_finished() {
            u.abort();
            eprintln!("quinn-peer: no key update: the transfer ended first");
        }
    }
    // H3_NO_ERROR. The CONNECTION_CLOSE leaves at once (so the server's line
    // reports the real connection lifetime).
    conn.close(0x100u32.into(), b"");
    Ok((
        downloads?,
        ConnInfo {
            resumption,
            zero_rtt,
        },
    ))
}

/// Initiates one TLS key update once the handshake is confirmed and a
/// response head arrived, i.e. during the transfer.
async fn update_keys(conn: quinn::Connection, got_head: Arc<AtomicBool>) {
    loop {
        if conn.close_reason().is_some() {
            return;
        }
        if got_head.load(Ordering::Relaxed) && conn.stats().frame_rx.handshake_done > 0 {
            conn.force_key_update();
            eprintln!(
                "quinn-peer: key update initiated after {} bytes received",
                conn.stats().udp_rx.bytes
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Runs the jobs' requests on `conn`, up to [`PARALLEL`] at a time, and
/// returns their downloads in order.
async fn fetch_all(
    conn: quinn::Connection,
    jobs: Vec<Job>,
    start: Instant,
    got_head: Arc<AtomicBool>,
) -> Result<Vec<Download>, String> {
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .map_err(|e| format!("HTTP/3 setup: {e}"))?;
    // The connection-level HTTP/3 work (control streams) runs beside the
    // requests.
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let n = jobs.len();
    let queue = Arc::new(Mutex::new(
        jobs.into_iter().enumerate().collect::<VecDeque<_>>(),
    ));
    let mut workers = JoinSet::new();
    for _ in 0..n.min(PARALLEL) {
        let mut send = send.clone();
        let queue = queue.clone();
        let got_head = got_head.clone();
        workers.spawn(async move {
            let mut done = Vec::new();
            loop {
                let next = queue.lock().unwrap().pop_front();
                let Some((i, job)) = next else { break };
                done.push((i, download(job, &mut send, start, &got_head).await));
            }
            done
        });
    }
    drop(send);
    let mut all = Vec::with_capacity(n);
    while let Some(r) = workers.join_next().await {
        all.extend(r.map_err(|e| format!("download task: {e}"))?);
    }
    drive.abort();
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, d)| d).collect())
}

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// Sends one request and reads the response into the job's destination.
async fn download(job: Job, send: &mut Sender, start: Instant, got_head: &AtomicBool) -> Download {
    let url = job.url;
    let mut d = Download {
        url: url.clone(),
        status: 0,
        bytes: 0,
        duration: Duration::ZERO,
        error: None,
    };
    if let Err(e) = receive(&url, job.dest, send, got_head, &mut d).await {
        d.error = Some(e);
    }
    d.duration = start.elapsed();
    d
}

async fn receive(
    url: &str,
    dest: Dest,
    send: &mut Sender,
    got_head: &AtomicBool,
    d: &mut Download,
) -> Result<(), String> {
    let req = Request::get(url).body(()).map_err(|e| e.to_string())?;
    let mut stream = send.send_request(req).await.map_err(|e| e.to_string())?;
    stream.finish().await.map_err(|e| e.to_string())?;
    let resp = stream.recv_response().await.map_err(|e| e.to_string())?;
    got_head.store(true, Ordering::Relaxed);
    d.status = resp.status().as_u16();
    let want: Option<u64> = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let mut sink: Box<dyn Write + Send> = match dest {
        Dest::Sink => Box::new(std::io::sink()),
        Dest::File(w) => Box::new(w),
        Dest::Path(p) if resp.status().is_success() => Box::new(BufWriter::with_capacity(
            WRITE_BUFFER,
            File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        Dest::Path(_) => Box::new(std::io::sink()),
    };
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                d.bytes += chunk.remaining() as u64;
                while chunk.has_remaining() {
                    let part = chunk.chunk();
                    sink.write_all(part)
                        .map_err(|e| format!("writing the body: {e}"))?;
                    let n = part.len();
                    chunk.advance(n);
                }
            }
            Ok(None) => break,
            Err(e) => return Err(format!("after {} bytes: {e}", d.bytes)),
        }
    }
    sink.flush().map_err(|e| format!("writing the body: {e}"))?;
    if let Some(w) = want.filter(|&w| w != d.bytes) {
        return Err(format!("got {} bytes, content-length {w}", d.bytes));
    }
    Ok(())
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

    #[test]
    fn file_names() {
        assert_eq!(file_name("https://h:1/abc").unwrap(), "abc");
        assert_eq!(file_name("https://[::1]:1/d/e.txt?x").unwrap(), "e.txt");
        assert_eq!(file_name("https://h/bytes/5").unwrap(), "5");
        for bad in ["https://h", "https://h/", "https://h/a/..", "https://h/d/"] {
            assert!(file_name(bad).is_err(), "{bad}");
        }
    }
}
