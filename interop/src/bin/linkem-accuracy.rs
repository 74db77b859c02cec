//! `linkem-accuracy`: measures how closely the relay reproduces its configured
//! rate and delay on loopback. Prints a table (markdown with `--markdown`).
//!
//! For each configured rate it runs an in-process [`Relay`] (the same code as
//! `linkem`) between a paced UDP sender and a sink:
//!
//! * rate phase: the sender offers 1.1 × rate for `--secs`; the delivered rate
//!   is measured at the sink over the arrival interval;
//! * delay phase: the sender offers 10 % of the rate with send timestamps in
//!   the payload; the sink computes each one-way delay and subtracts the
//!   configured delay plus the packet's serialisation time (8L/C), giving
//!   the error added by the relay and the loopback path. Arrival times at
//!   the sink are kernel receive timestamps (`SO_TIMESTAMPNS`); packets whose
//!   `send` call took over 100 µs (sender preempted after taking its
//!   timestamp) are excluded and counted.
//!
//! Usage: `linkem-accuracy [--rates 10,20,50,100] [--delay 20ms] [--secs 3] [--size 1200] [--spin D] [--no-realtime] [--markdown]`

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use interop::link::Buffer;
use interop::relay::{Relay, RelayConfig};
use interop::units::{parse_duration, parse_rate};

struct Opts {
    rates: Vec<u64>,
    delay: Duration,
    secs: f64,
    size: usize,
    markdown: bool,
    spin: Option<Duration>,
    realtime: bool,
}

fn parse_opts() -> Result<Opts, String> {
    let mut o = Opts {
        rates: vec![10_000_000, 20_000_000, 50_000_000, 100_000_000],
        delay: Duration::from_millis(20),
        secs: 3.0,
        size: 1200,
        markdown: false,
        spin: None,
        realtime: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--rates" => {
                o.rates = val()?
                    .split(',')
                    .map(|r| {
                        let r = if r.chars().all(|c| c.is_ascii_digit() || c == '.') {
                            format!("{r}mbit")
                        } else {
                            r.into()
                        };
                        parse_rate(&r)?.ok_or("rate must be finite".to_string())
                    })
                    .collect::<Result<_, _>>()?
            }
            "--delay" => o.delay = parse_duration(&val()?)?,
            "--secs" => o.secs = val()?.parse().map_err(|_| "bad --secs")?,
            "--size" => o.size = val()?.parse().map_err(|_| "bad --size")?,
            "--markdown" => o.markdown = true,
            "--spin" => o.spin = Some(parse_duration(&val()?)?),
            "--no-realtime" => o.realtime = false,
            "-h" | "--help" => {
                println!("linkem-accuracy [--rates 10,20,50,100 (Mbit/s)] [--delay 20ms] [--secs 3] [--size 1200] [--spin D] [--no-realtime] [--markdown]");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument '{a}'")),
        }
    }
    if !(o.secs > 0.0 && o.secs < 3600.0) || o.size < 16 || o.size > 1472 {
        return Err("need 0 < --secs < 3600 and 16 <= --size <= 1472".into());
    }
    Ok(o)
}

/// Sends `size`-byte datagrams to `to` at `bps` for `dur`, each carrying its
/// send time (ns since `base`) in bytes 0..8. Precise pacing: sleep, then spin.
fn send_paced(
    sock: &UdpSocket,
    to: std::net::SocketAddr,
    bps: f64,
    size: usize,
    dur: Duration,
    base: Instant,
) -> Vec<bool> {
    let interval = Duration::from_secs_f64(size as f64 * 8.0 / bps);
    let mut buf = vec![0u8; size];
    let start = Instant::now();
    let mut next = start;
    // slow[seq]: the send call itself took longer than SLOW_SEND (the
    // sender was preempted between taking the timestamp and sending).
    let mut slow = Vec::new();
    while next - start < dur {
        loop {
            let now = Instant::now();
            if now >= next {
                break;
            }
            if next - now > Duration::from_micros(300) {
                thread::sleep(next - now - Duration::from_micros(200));
            } else {
                std::hint::spin_loop();
            }
        }
        let before = Instant::now();
        let ts = before.saturating_duration_since(base).as_nanos() as u64;
        buf[..8].copy_from_slice(&ts.to_be_bytes());
        buf[8..16].copy_from_slice(&(slow.len() as u64).to_be_bytes());
        let _ = sock.send_to(&buf, to);
        if slow.len() < 50_000_000 {
            slow.push(before.elapsed() > SLOW_SEND);
        }
        next += interval;
    }
    slow
}

/// Send calls slower than this are excluded from the delay statistics: the
/// timestamp in the packet would be too early by up to that much.
const SLOW_SEND: Duration = Duration::from_micros(100);

/// One datagram seen at the sink.
#[derive(Clone, Copy, Default)]
struct Rec {
    /// Arrival (kernel stamp), ns since the phase's base instant.
    at: u64,
    /// Send timestamp from the payload, ns since base.
    sent: u64,
    /// Datagram length.
    len: usize,
    /// Sequence number from the payload.
    seq: u64,
}

/// Arrival records at the sink.
fn sink(sock: UdpSocket, base: Instant, stop: Arc<AtomicBool>) -> thread::JoinHandle<Vec<Rec>> {
    thread::spawn(move || {
        sock.set_read_timeout(Some(Duration::from_millis(20))).ok();
        // Arrival = kernel receive stamp, so the sink's own scheduling
        // latency is not counted against the relay.
        interop::rxstamp::enable(&sock);
        let mut clock = interop::rxstamp::StampClock::new();
        let mut v = Vec::with_capacity(1 << 16);
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, _, at)) = interop::rxstamp::recv_stamped(&sock, &mut buf, &mut clock) {
                let at = at.saturating_duration_since(base).as_nanos() as u64;
                if n >= 16 && v.len() < 10_000_000 {
                    let word =
                        |i: usize| u64::from_be_bytes(buf[i..i + 8].try_into().unwrap_or_default());
                    v.push(Rec {
                        at,
                        sent: word(0),
                        len: n,
                        seq: word(8),
                    });
                }
            }
        }
        v
    })
}

struct Row {
    rate_mbps: f64,
    delivered_mbps: f64,
    rate_err_pct: f64,
    delay_ms: f64,
    err_mean_us: f64,
    err_p50_us: f64,
    err_p99_us: f64,
    err_max_us: f64,
    samples: usize,
    excluded: usize,
    p99_all_us: f64,
    cpu_rate: f64,
    cpu_delay: f64,
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// CPU time (s) used so far by this process's relay threads (`linkem-rx-*`,
/// `linkem-tx`), from /proc; 0 if unavailable.
fn relay_cpu_s() -> f64 {
    let tick = 100.0; // USER_HZ on Linux
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut total = 0.0;
    for e in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ..."; comm may contain spaces, so split at the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        // Only the relay's threads (this process's main thread is "linkem-accuracy").
        if !(comm.starts_with("linkem-rx") || comm.starts_with("linkem-tx")) {
            continue;
        }
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // Fields after ')' start with field 3 (state); utime is 14, stime 15.
        let get = |i: usize| {
            f.get(i - 3)
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        total += (get(14) + get(15)) / tick;
    }
    total
}

/// Whether the last relay got real-time priority.
static RT_ACHIEVED: AtomicBool = AtomicBool::new(false);

/// All arrival records, the sender's slow-send flags by sequence number,
/// and the relay threads' CPU use (fraction of one core).
type Phase = (Vec<Rec>, Vec<bool>, f64);

/// One-way delay errors in µs (delay minus `nominal_us`) of the records
/// whose send call was fast, sorted; and the number excluded.
fn delay_errors(arr: &[Rec], slow: &[bool], nominal_us: f64) -> (Vec<f64>, usize) {
    let mut errs: Vec<f64> = arr
        .iter()
        .filter(|r| !slow.get(r.seq as usize).copied().unwrap_or(true))
        .map(|r| (r.at as f64 - r.sent as f64) / 1e3 - nominal_us)
        .collect();
    errs.sort_by(f64::total_cmp);
    let excluded = arr.len() - errs.len();
    (errs, excluded)
}

/// One phase: relay at `rate` (None = direct, no relay) with traffic at `load` bit/s.
fn phase(rate: Option<u64>, delay: Duration, load: f64, o: &Opts) -> Result<Phase, String> {
    let base = Instant::now();
    let sink_sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let sink_addr = sink_sock.local_addr().map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let h = sink(sink_sock, base, stop.clone());
    let relay = match rate {
        Some(r) => {
            let mut cfg = RelayConfig::new("127.0.0.1:0".parse().expect("literal"), sink_addr);
            cfg.up.rate_bps = Some(r);
            cfg.up.delay = delay;
            cfg.up.buffer = Buffer::bdp(Some(r), delay * 2, interop::MTU as u64);
            cfg.spin_window = o.spin;
            cfg.realtime = o.realtime;
            Some(Relay::spawn(cfg).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let to = relay.as_ref().map(|r| r.local_addr()).unwrap_or(sink_addr);
    let tx = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let secs = if rate.is_some() {
        o.secs
    } else {
        o.secs.min(2.0)
    };
    // Let the kernel switch receive timestamps on (deferred work).
    thread::sleep(Duration::from_millis(100));
    let slow = send_paced(&tx, to, load, o.size, Duration::from_secs_f64(secs), base);
    thread::sleep(delay * 2 + Duration::from_millis(300));
    let cpu = relay_cpu_s() / base.elapsed().as_secs_f64();
    if let Some(r) = &relay {
        RT_ACHIEVED.store(r.stats().realtime, Ordering::Relaxed);
    }
    stop.store(true, Ordering::Relaxed);
    drop(relay);
    let arr = h.join().map_err(|_| "sink thread panicked".to_string())?;
    Ok((arr, slow, cpu))
}

fn main() {
    let o = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("linkem-accuracy: error: {e}");
            std::process::exit(2);
        }
    };
    let mut rows = Vec::new();
    // Baseline: loopback one-way latency without the relay.
    let (direct, slow, _) = phase(None, Duration::ZERO, 10e6, &o).unwrap_or_default();
    let (d, _) = delay_errors(&direct, &slow, 0.0);
    for &rate in &o.rates {
        // Rate phase: offered 1.1 × rate, so the bottleneck is always busy.
        let (arr, _, cpu_rate) = match phase(Some(rate), o.delay, rate as f64 * 1.1, &o) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("rate {rate}: {e}");
                continue;
            }
        };
        let delivered = if arr.len() > 2 {
            let bytes: usize = arr[1..].iter().map(|x| x.len).sum();
            bytes as f64 * 8.0 / ((arr[arr.len() - 1].at - arr[0].at) as f64 / 1e9)
        } else {
            f64::NAN
        };
        // Delay phase: offered 10 % of rate; subtract delay + own serialisation.
        let (arr, slow, cpu_delay) =
            phase(Some(rate), o.delay, rate as f64 * 0.1, &o).unwrap_or_default();
        let nominal_us = o.delay.as_secs_f64() * 1e6 + o.size as f64 * 8.0 / rate as f64 * 1e6;
        let (errs, excluded) = delay_errors(&arr, &slow, nominal_us);
        let (all, _) = delay_errors(&arr, &vec![false; slow.len()], nominal_us);
        let mean = errs.iter().sum::<f64>() / errs.len().max(1) as f64;
        rows.push(Row {
            rate_mbps: rate as f64 / 1e6,
            delivered_mbps: delivered / 1e6,
            rate_err_pct: (delivered / rate as f64 - 1.0) * 100.0,
            delay_ms: o.delay.as_secs_f64() * 1e3,
            err_mean_us: mean,
            err_p50_us: percentile(&errs, 0.5),
            err_p99_us: percentile(&errs, 0.99),
            err_max_us: errs.last().copied().unwrap_or(f64::NAN),
            samples: errs.len(),
            excluded,
            p99_all_us: percentile(&all, 0.99),
            cpu_rate,
            cpu_delay,
        });
    }
    let direct_mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
    println!(
        "loopback one-way latency without relay: mean {:.1} us, p99 {:.1} us ({} samples); spin window {}, realtime priority {}",
        direct_mean,
        percentile(&d, 0.99),
        d.len(),
        o.spin.map(|d| format!("{d:?}")).unwrap_or_else(|| "auto".into()),
        if RT_ACHIEVED.load(Ordering::Relaxed) { "yes" } else { "no" }
    );
    let (sep, pre, post) = if o.markdown {
        (" | ", "| ", " |")
    } else {
        ("  ", "", "")
    };
    let head = [
        "rate Mbit/s",
        "delivered Mbit/s",
        "rate err %",
        "delay ms",
        "delay err mean us",
        "p50 us",
        "p99 us",
        "max us",
        "samples",
        "excluded",
        "p99 incl. excluded us",
        "relay CPU % (rate/delay phase)",
    ];
    println!("{pre}{}{post}", head.join(sep));
    if o.markdown {
        println!("{pre}{}{post}", vec!["---:"; head.len()].join(sep));
    }
    for r in rows {
        let cells = [
            format!("{:.0}", r.rate_mbps),
            format!("{:.3}", r.delivered_mbps),
            format!("{:+.2}", r.rate_err_pct),
            format!("{:.0}", r.delay_ms),
            format!("{:.1}", r.err_mean_us),
            format!("{:.1}", r.err_p50_us),
            format!("{:.1}", r.err_p99_us),
            format!("{:.1}", r.err_max_us),
            format!("{}", r.samples),
            format!("{}", r.excluded),
            format!("{:.1}", r.p99_all_us),
            format!("{:.0}/{:.0}", r.cpu_rate * 100.0, r.cpu_delay * 100.0),
        ];
        println!("{pre}{}{post}", cells.join(sep));
    }
}
