//! `nc-fake-qnc`: a test fixture standing in for `qnc-certs`, `qnc-server`
//! and `qnc-client` (chosen by the name it is invoked under, e.g. through a
//! symlink) so that `nc-experiment`'s process orchestration can be tested
//! without QUIC. It speaks a trivial unreliable UDP protocol, honours the
//! same command-line contract and prints the same JSON shapes.
//!
//! Special `--cc` values for tests: `fail` (client exits 1 with an error
//! line), `hang` (client never exits; writes its pid to `$FAKE_QNC_PIDFILE`
//! if set), `nostart` (server exits before printing its address).

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

fn server(args: &[String]) {
    let listen = arg(args, "--listen").unwrap_or_else(|| fail("--listen required"));
    if arg(args, "--cc").as_deref() == Some("nostart") {
        fail("simulated start failure");
    }
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
        let Some(size) = req
            .strip_prefix("GET ")
            .and_then(|s| s.trim().parse::<u64>().ok())
        else {
            continue;
        };
        let start = Instant::now();
        let (mut sent, mut pkts) = (0u64, 0u64);
        while sent < size {
            let len = (size - sent).min(CHUNK as u64) as usize;
            let mut p = vec![0u8; len.max(8)];
            p[..8].copy_from_slice(&sent.to_be_bytes());
            let _ = sock.send_to(&p[..len.max(8)], peer);
            sent += len as u64;
            pkts += 1;
            // ~8 Mbit/s: gentle enough for the emulator's buffer.
            std::thread::sleep(Duration::from_micros(1000));
        }
        println!(
            "{{\"role\":\"server\",\"scid\":\"fake\",\"peer\":\"{peer}\",\"bytes_sent\":{sent},\"packets_sent\":{pkts},\
             \"packets_lost\":0,\"retrans_bytes\":0,\"duration_s\":{}}}",
            start.elapsed().as_secs_f64()
        );
    }
}

fn client(args: &[String]) {
    let cc = arg(args, "--cc").unwrap_or_default();
    if arg(args, "--ca").is_none() || !args.iter().any(|a| a == "--json") {
        fail("--ca and --json required");
    }
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
    let size: u64 = path
        .strip_prefix("bytes/")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| fail("bad path"));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| fail(&e.to_string()));
    sock.set_read_timeout(Some(Duration::from_millis(500))).ok();
    let start = Instant::now();
    sock.send_to(format!("GET {size}").as_bytes(), addr)
        .unwrap_or_else(|e| fail(&e.to_string()));
    let mut got = 0u64;
    let mut buf = [0u8; 2048];
    while got < size {
        match sock.recv(&mut buf) {
            Ok(n) => got += n as u64,
            Err(_) => break,
        }
    }
    let d = start.elapsed().as_secs_f64();
    println!(
        "{{\"role\":\"client\",\"url\":\"{url}\",\"status\":200,\"bytes\":{got},\"duration_s\":{d},\
         \"goodput_mbps\":{},\"packets_sent\":1,\"packets_lost\":0,\"retrans_bytes\":0,\"peer_packets_lost\":0}}",
        got as f64 * 8.0 / d / 1e6
    );
}
