//! `nc-fake-qnc`: a test fixture standing in for `qnc-certs`, `qnc-server`
//! and `qnc-client` (chosen by the name it is invoked under, e.g. through a
//! symlink) so that `nc-experiment`'s process orchestration can be tested
//! without QUIC. It speaks a trivial unreliable UDP protocol, honours the
//! same command-line contract and prints the same JSON shapes.
//!
//! Special `--cc` values for tests: `fail` (client exits 1 with an error
//! line), `hang` (client never exits; writes its pid to `$FAKE_QNC_PIDFILE`
//! if set), `nostart` (server exits before printing its address), `slow`
//! (server sends at about 0.8 Mbit/s, so runs hit a short cap).
//!
//! Paths: `/bytes/N`, `/stamped/N` (the same, measured), and
//! `/stream/RATE/DURATION` (RATE·DURATION/8 bytes sent at RATE). Every
//! datagram carries its offset and the server's send time; for streams and
//! stamped bodies the client reports the per-datagram delay (receive −
//! send time) as qnc-client's `delivery` object. The client honours
//! `--timeout` like qnc-client (JSON line with the bytes so far, then
//! `error: timed out ...`, exit 1). Unless `--nc off`, the server's line
//! has `coded: true` and an `nc` object with one repair per 20 sources.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let me = PathBuf::from(&args[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rest = &args[1..];
    match me.as_str() {
        "qnc-certs" => certs(rest),
        "qnc-server" => server(rest),
        "qnc-client" => client(rest),
        _ => fail("invoke as qnc-certs, qnc-server or qnc-client (symlink)"),
    }
}

fn certs(args: &[String]) {
    let out = PathBuf::from(arg(args, "--out").unwrap_or_else(|| fail("--out DIR required")));
    std::fs::create_dir_all(&out).unwrap_or_else(|e| fail(&e.to_string()));
    for f in ["ca.pem", "cert.pem", "key.pem"] {
        std::fs::write(out.join(f), "fake\n").unwrap_or_else(|e| fail(&e.to_string()));
    }
}

const CHUNK: usize = 1000;

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `bytes/N`, `stamped/N` → (N, pause between datagrams); `stream/RATE/DUR`
/// → its size and the pause that sends it at RATE.
fn resource(path: &str) -> Option<(u64, Option<Duration>)> {
    if let Some(n) = path
        .strip_prefix("bytes/")
        .or_else(|| path.strip_prefix("stamped/"))
    {
        return n.parse().ok().map(|n| (n, None));
    }
    let (rate, dur) = path.strip_prefix("stream/")?.split_once('/')?;
    let bps = interop::units::parse_rate(rate).ok()??;
    let d = interop::units::parse_duration(dur).ok()?;
    let size = (bps as f64 * d.as_secs_f64() / 8.0) as u64;
    Some((
        size,
        Some(Duration::from_secs_f64(CHUNK as f64 * 8.0 / bps as f64)),
    ))
}

fn server(args: &[String]) {
    let listen = arg(args, "--listen").unwrap_or_else(|| fail("--listen required"));
    let cc = arg(args, "--cc").unwrap_or_default();
    if cc == "nostart" {
        fail("simulated start failure");
    }
    let coded = arg(args, "--nc").as_deref() != Some("off");
    let sock = UdpSocket::bind(&listen).unwrap_or_else(|e| fail(&e.to_string()));
    println!(
        "listening {}",
        sock.local_addr().unwrap_or_else(|e| fail(&e.to_string()))
    );
    let mut buf = [0u8; 2048];
    loop {
        let Ok((n, peer)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let req = String::from_utf8_lossy(&buf[..n]).to_string();
        let Some((size, pace)) = req.strip_prefix("GET /").and_then(|p| resource(p.trim())) else {
            continue;
        };
        // ~8 Mbit/s by default: gentle enough for the emulator's buffer.
        let pace = pace.unwrap_or(if cc == "slow" {
            Duration::from_millis(10)
        } else {
            Duration::from_micros(1000)
        });
        let start = Instant::now();
        let (mut sent, mut pkts) = (0u64, 0u64);
        while sent < size {
            let len = (size - sent).min(CHUNK as u64) as usize;
            let mut p = vec![0u8; len.max(16)];
            p[..8].copy_from_slice(&sent.to_be_bytes());
            p[8..16].copy_from_slice(&now_ns().to_be_bytes());
            let _ = sock.send_to(&p, peer);
            sent += len as u64;
            pkts += 1;
            // Paced against the start, so sleeping late does not slow it.
            let next = start + pace * pkts as u32;
            if let Some(d) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
        }
        let nc = if coded {
            format!(
                ",\"coded\":true,\"nc\":{{\"negotiated\":true,\"sent\":{{\"sources\":{pkts},\"repairs\":{}}}}}",
                pkts / 20
            )
        } else {
            ",\"coded\":false".to_string()
        };
        println!(
            "{{\"role\":\"server\",\"scid\":\"fake\",\"peer\":\"{peer}\",\"bytes_sent\":{sent},\"packets_sent\":{pkts},\
             \"packets_lost\":0,\"retrans_bytes\":0,\"duration_s\":{}{nc}}}",
            start.elapsed().as_secs_f64()
        );
    }
}

fn client(args: &[String]) {
    let cc = arg(args, "--cc").unwrap_or_default();
    if arg(args, "--ca").is_none() || !args.iter().any(|a| a == "--json") {
        fail("--ca and --json required");
    }
    let timeout = arg(args, "--timeout").and_then(|t| t.parse::<f64>().ok());
    match cc.as_str() {
        "fail" => fail("simulated failure"),
        "hang" => {
            if let Ok(p) = std::env::var("FAKE_QNC_PIDFILE") {
                let _ = std::fs::write(p, std::process::id().to_string());
            }
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        _ => {}
    }
    let url = args.last().cloned().unwrap_or_default();
    let rest = url
        .strip_prefix("https://")
        .unwrap_or_else(|| fail("bad url"));
    let (host, path) = rest.split_once('/').unwrap_or_else(|| fail("bad url"));
    let addr: SocketAddr = host.parse().unwrap_or_else(|_| fail("bad host"));
    let (size, _) = resource(path).unwrap_or_else(|| fail("bad path"));
    let stream = path.starts_with("stream/") || path.starts_with("stamped/");
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| fail(&e.to_string()));
    sock.set_read_timeout(Some(Duration::from_millis(100))).ok();
    let start = Instant::now();
    sock.send_to(format!("GET /{path}").as_bytes(), addr)
        .unwrap_or_else(|e| fail(&e.to_string()));
    let mut got = 0u64;
    let mut delays: Vec<f64> = Vec::new();
    let mut last = Instant::now();
    let mut timed_out = false;
    let mut buf = [0u8; 2048];
    while got < size {
        if timeout.is_some_and(|t| start.elapsed().as_secs_f64() >= t) {
            timed_out = true;
            break;
        }
        match sock.recv(&mut buf) {
            Ok(n) => {
                got += n as u64;
                last = Instant::now();
                if n >= 16 {
                    let stamp = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
                    delays.push(now_ns().saturating_sub(stamp) as f64 / 1e6);
                }
            }
            Err(_) if last.elapsed() < Duration::from_millis(500) => {}
            Err(_) => break,
        }
    }
    let d = start.elapsed().as_secs_f64();
    let delivery = if stream && !delays.is_empty() {
        let mut v = delays.clone();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        format!(
            ",\"delivery\":{{\"chunks\":{},\"mean_ms\":{},\"p50_ms\":{},\"p95_ms\":{},\"p99_ms\":{},\"max_ms\":{}}}",
            v.len(),
            v.iter().sum::<f64>() / v.len() as f64,
            q(0.5),
            q(0.95),
            q(0.99),
            v[v.len() - 1]
        )
    } else {
        String::new()
    };
    println!(
        "{{\"role\":\"client\",\"url\":\"{url}\",\"status\":200,\"bytes\":{got},\"duration_s\":{d},\
         \"goodput_mbps\":{},\"packets_sent\":1,\"packets_lost\":0,\"retrans_bytes\":0,\"peer_packets_lost\":0{delivery}}}",
        got as f64 * 8.0 / d / 1e6
    );
    if timed_out {
        fail(&format!("timed out after {d:.1} s"));
    }
}
