//! Competing flows: `nc-experiment --compete A,B`.
//!
//! One run = two HTTP/3 downloads of `--size` bytes sharing ONE emulated
//! bottleneck per direction. Each flow has its own `qnc-server` (started with
//! its controller: the server's controller governs a download) and its own
//! `qnc-client` (same `--cc`), or another stack's server and client
//! (`ngtcp2:cubic`, `quic-go:cubic`; see [`crate::peer`]); a single `linkem`
//! relays both
//! (`--upstream SA --upstream SB --max-clients 2`). linkem maps clients to
//! upstreams in order of first appearance, so the runner starts client A,
//! waits until linkem reports that it has learned A's address (a stats
//! snapshot via SIGUSR1), and only then starts client B (after `--stagger`
//! if given).
//!
//! Fairness is measured on the bottleneck, not on goodput: linkem counts,
//! per client, the bytes it delivered downstream. The runner snapshots these
//! counters when B has been learned (both flows active) and when the first
//! client exits (one flow done); each flow's *share* is its delivered bytes
//! between the two snapshots divided by the time between them (linkem's own
//! clock). This is the throughput while both flows competed; it counts all
//! datagrams of the flow (retransmissions, coded redundancy, ACK-only
//! packets), i.e. what the flow took from the bottleneck. The snapshot at
//! the end is taken a few tens of milliseconds after the first flow's last
//! data (client exit + polling), during which the other flow is alone: a
//! bias of well under 1 % on overlaps of several seconds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::experiment::emulator::{linkem_command, snapshot};
use crate::experiment::lines::{as_f64, as_u64, is_role_line, json_objects};
use crate::experiment::options::{LossCase, Options};
use crate::experiment::process::{check_interrupted, sanitize, start_listening, Proc};
use crate::experiment::table::render;
use crate::peer::FlowSpec;
use crate::relay::Stats;

/// The outcome of one flow of a competing run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowResult {
    /// QUIC implementation of server and client: `quiche` (ours, qnc-server
    /// and qnc-client), `ngtcp2` or `quic-go`.
    #[serde(default)]
    pub stack: String,
    /// Congestion controller (server and client).
    pub cc: String,
    /// The flow's server address (linkem's upstream for this flow).
    pub server: Option<String>,
    /// Error of this flow, if any.
    pub error: Option<String>,
    /// Start of the flow's client, seconds after flow A's client started.
    pub start_s: Option<f64>,
    /// Body bytes received by the client.
    pub bytes: Option<u64>,
    /// Download completion time (client's `duration_s`; for ngtcp2, the
    /// wall time from starting the client to its exit).
    pub completion_s: Option<f64>,
    /// Goodput over the flow's own lifetime, Mbit/s.
    pub goodput_mbps: Option<f64>,
    /// Bottleneck share while both flows were active, Mbit/s (bytes linkem
    /// delivered to this client between the two snapshots).
    pub share_mbps: Option<f64>,
    /// Downstream datagrams of this flow dropped by the buffer (whole run).
    pub queue_drops: Option<u64>,
    /// Downstream datagrams of this flow dropped by the loss model (whole run).
    pub lost: Option<u64>,
    /// Server's stream bytes retransmitted.
    pub server_retrans_bytes: Option<u64>,
    /// The raw client JSON line (none for ngtcp2).
    pub client_json: Option<Value>,
    /// The raw server JSON line.
    pub server_json: Option<Value>,
}

/// The outcome of one competing run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CompeteResult {
    /// `A,B`.
    pub pair: String,
    /// Loss label.
    pub loss: String,
    /// Repetition index (0-based).
    pub run: usize,
    /// linkem seed used.
    pub seed: u64,
    /// Configured start delay of flow B, seconds.
    pub stagger_s: f64,
    /// Error of the run (or of a flow), if any.
    pub error: Option<String>,
    /// Flows A and B.
    pub flows: Vec<FlowResult>,
    /// Length of the period both flows were active (between the snapshots), s.
    pub overlap_s: Option<f64>,
    /// share(A) / share(B).
    pub ratio: Option<f64>,
    /// Jain's fairness index of the two shares.
    pub jain: Option<f64>,
    /// Emulator statistics at the end of the run.
    pub emulator: Option<Stats>,
    /// Where the run's qlog files are (`--qlog-dir`).
    #[serde(default)]
    pub qlog_dir: Option<PathBuf>,
}

/// Jain's fairness index `(Σx)² / (n·Σx²)`: 1 when all equal, `1/n` when
/// one flow takes everything. `None` for no flows or all zero.
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && s2 > 0.0).then(|| s * s / (x.len() as f64 * s2))
}

/// Per-flow shares in Mbit/s from two stats snapshots: bytes delivered
/// downstream to client `k` between `a` and `b`, over `b.elapsed_s -
/// a.elapsed_s`. Returns the overlap length and the shares, or `None` if
/// the snapshots do not both know `n` clients or the interval is empty.
pub fn shares(a: &Stats, b: &Stats, n: usize) -> Option<(f64, Vec<f64>)> {
    let dt = b.elapsed_s - a.elapsed_s;
    if dt <= 0.0 || a.per_client.len() < n || b.per_client.len() < n {
        return None;
    }
    let v = (0..n)
        .map(|k| {
            let d = b.per_client[k]
                .down_sent_bytes
                .saturating_sub(a.per_client[k].down_sent_bytes);
            d as f64 * 8.0 / dt / 1e6
        })
        .collect();
    Some((dt, v))
}

/// Runs one competing pair; never panics on child misbehaviour.
pub fn run_compete(
    opts: &Options,
    pair: &[String],
    loss: &LossCase,
    run: usize,
    work: &Path,
    certs: &Path,
) -> CompeteResult {
    let seed = opts.seed.wrapping_add(run as u64);
    let specs: Result<Vec<FlowSpec>, String> = pair.iter().map(|s| FlowSpec::parse(s)).collect();
    let mut r = CompeteResult {
        pair: pair_label(pair),
        loss: loss.label.clone(),
        run,
        seed,
        stagger_s: opts.stagger.as_secs_f64(),
        ..Default::default()
    };
    let specs = match specs {
        Ok(v) => v,
        Err(e) => {
            r.error = Some(e);
            return r;
        }
    };
    r.flows = specs
        .iter()
        .map(|f| FlowResult {
            stack: f.stack.name().into(),
            cc: f.cc.clone(),
            ..Default::default()
        })
        .collect();
    let name = format!(
        "compete-{}-{}-{run}",
        sanitize(&pair.join("_")),
        sanitize(&loss.label)
    );
    let dir = work.join(&name);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        r.error = Some(format!("{}: {e}", dir.display()));
        return r;
    }
    let qlog = match opts.qlog_for(&name) {
        Ok(q) => q,
        Err(e) => {
            r.error = Some(e);
            return r;
        }
    };
    r.qlog_dir = qlog.clone();
    if let Err(e) = compete_inner(
        opts,
        &specs,
        loss,
        seed,
        &dir,
        certs,
        qlog.as_deref(),
        &mut r,
    ) {
        r.error = Some(e);
    }
    crate::experiment::process::compress_qlogs(qlog.as_deref());
    if r.error.is_none() {
        r.error = r
            .flows
            .iter()
            .zip(["A", "B"])
            .find_map(|(f, n)| f.error.as_ref().map(|e| format!("flow {n}: {e}")));
    }
    r
}

/// Every loss × run of `--compete A,B` (loss-major), with progress lines
/// prefixed by `tag` on stderr. Stops early when interrupted or past the
/// options' deadline.
pub fn run_compete_table(
    opts: &Options,
    pair: &[String],
    work: &Path,
    certs: &Path,
    tag: &str,
) -> Vec<CompeteResult> {
    let label = pair_label(pair);
    let total = opts.loss.len() * opts.runs;
    let mut rows = Vec::new();
    for loss in &opts.loss {
        for run in 0..opts.runs {
            if check_interrupted().is_err() || opts.past_deadline() {
                return rows;
            }
            eprint!(
                "{tag}[{}/{total}] compete {label} loss={} run={run} ... ",
                rows.len() + 1,
                loss.label
            );
            let r = run_compete(opts, pair, loss, run, work, certs);
            match (&r.error, r.ratio, r.jain) {
                (Some(e), _, _) => eprintln!("FAILED: {e}"),
                (None, Some(q), Some(j)) => eprintln!("A/B {q:.2}, Jain {j:.3}"),
                _ => eprintln!("done"),
            }
            rows.push(r);
        }
    }
    rows
}

/// The pair as shown in reports: `CC` for our flows, `STACK:CC` otherwise
/// (the spec as given if it does not parse).
pub fn pair_label(pair: &[String]) -> String {
    pair.iter()
        .map(|s| FlowSpec::parse(s).map_or_else(|_| s.clone(), |f| f.label()))
        .collect::<Vec<_>>()
        .join(",")
}

/// A running client of one flow.
struct Client {
    spec: FlowSpec,
    proc: Proc,
    /// Where a client that saves the body (ngtcp2) puts it.
    out_dir: PathBuf,
    started: Instant,
    /// When the runner first saw the process gone.
    ended: Option<Instant>,
}

impl Client {
    #[allow(clippy::too_many_arguments)]
    fn start(
        opts: &Options,
        spec: &FlowSpec,
        tag: &str,
        emu_addr: &str,
        dir: &Path,
        certs: &Path,
        deadline: Instant,
        qlog: Option<&Path>,
    ) -> Result<Client, String> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let out_dir = dir.join(format!("download-{tag}"));
        if spec.downloaded_file(&out_dir).is_some() {
            std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        }
        let mut cmd = spec.client_command(
            &opts.tools,
            emu_addr,
            &format!("/bytes/{}", opts.size),
            &out_dir,
            certs,
            remaining.as_secs_f64().max(1.0),
        );
        if let Some(q) = qlog {
            cmd.env("QLOGDIR", q);
        }
        let started = Instant::now();
        let proc = Proc::spawn(&format!("{}-{tag}", spec.program("client")), &mut cmd, dir)?;
        Ok(Client {
            spec: spec.clone(),
            proc,
            out_dir,
            started,
            ended: None,
        })
    }

    /// Whether the client has exited; notes when this was first seen.
    fn exited(&mut self) -> bool {
        if self.ended.is_none() && self.proc.exited() {
            self.ended = Some(Instant::now());
        }
        self.ended.is_some()
    }
}

/// Fills a flow's client columns from its exited client. Clients that print
/// qnc-client's JSON line (ours, quic-go) are read from it; for ngtcp2 the
/// exit status, the size of the saved file and the runner's wall time count.
fn collect_client(opts: &Options, c: &mut Client, f: &mut FlowResult, deadline: Instant) {
    let status = c.proc.wait_exit(deadline);
    c.exited();
    std::thread::sleep(Duration::from_millis(50));
    let lines = c.proc.drain_lines();
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            f.error = Some(if e.ends_with("timeout") {
                format!("timeout after {:?}", opts.timeout)
            } else {
                e
            });
            return;
        }
    };
    let name = c.spec.program("client");
    if !status.success() {
        f.error = Some(format!("{name} exited ({status}){}", c.proc.stderr_tail()));
        return;
    }
    let mut http = Some(200);
    if let Some(file) = c.spec.downloaded_file(&c.out_dir) {
        f.bytes = Some(std::fs::metadata(&file).map_or(0, |m| m.len()));
        f.completion_s = c.ended.map(|e| e.duration_since(c.started).as_secs_f64());
    } else {
        let Some(cj) = json_objects(&lines, "client").into_iter().next() else {
            f.error = Some(format!("{name} printed no JSON line"));
            return;
        };
        f.bytes = as_u64(&cj, "bytes");
        f.completion_s = as_f64(&cj, "duration_s");
        http = as_u64(&cj, "status");
        f.client_json = Some(cj);
    }
    f.goodput_mbps = match (f.bytes, f.completion_s) {
        (Some(b), Some(d)) if d > 0.0 => Some(b as f64 * 8.0 / d / 1e6),
        _ => None,
    };
    if http != Some(200) {
        f.error = Some(format!("HTTP status {http:?}"));
    } else if f.bytes != Some(opts.size) {
        f.error = Some(format!("received {:?} of {} bytes", f.bytes, opts.size));
    }
}

#[allow(clippy::too_many_arguments)]
fn compete_inner(
    opts: &Options,
    pair: &[FlowSpec],
    loss: &LossCase,
    seed: u64,
    dir: &Path,
    certs: &Path,
    qlog: Option<&Path>,
    r: &mut CompeteResult,
) -> Result<(), String> {
    let deadline = Instant::now() + opts.timeout;
    let idle_ms = opts.idle_ms;
    let tags = ["a", "b"];
    let mut servers = Vec::new();
    for (k, spec) in pair.iter().enumerate() {
        let root = dir.join(format!("root-{}", tags[k]));
        std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
        let label = format!("{}-{}", spec.program("server"), tags[k]);
        let (p, addr) = spec.start_server(
            &opts.tools,
            &label,
            &root,
            dir,
            certs,
            deadline,
            idle_ms,
            opts.size,
            qlog,
        )?;
        r.flows[k].server = Some(addr.clone());
        servers.push((p, addr));
    }

    let stats_path = dir.join("linkem.json");
    let upstreams: Vec<&str> = servers.iter().map(|(_, a)| a.as_str()).collect();
    let run = r.run;
    let (mut emu, emu_addr) = start_listening("linkem", dir, deadline, |port| {
        linkem_command(opts, port, &upstreams, loss, run, seed, &stats_path)
    })?;

    let t0 = Instant::now();
    let mut clients = vec![Client::start(
        opts, &pair[0], tags[0], &emu_addr, dir, certs, deadline, qlog,
    )?];
    r.flows[0].start_s = Some(0.0);
    // Client B may only start once linkem has mapped client A to upstream A.
    loop {
        if clients[0].exited() {
            break; // reported by collect_client below
        }
        if !snapshot(&mut emu, &stats_path, deadline)?
            .clients
            .is_empty()
        {
            break;
        }
        if Instant::now() >= deadline {
            return Err("linkem never saw client A".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    while t0.elapsed() < opts.stagger && !clients[0].exited() {
        check_interrupted()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    r.flows[1].start_s = Some(t0.elapsed().as_secs_f64());
    clients.push(Client::start(
        opts, &pair[1], tags[1], &emu_addr, dir, certs, deadline, qlog,
    )?);
    let start_snap = loop {
        let s = snapshot(&mut emu, &stats_path, deadline)?;
        if s.clients.len() >= 2 || clients[1].exited() {
            break s;
        }
        if Instant::now() >= deadline {
            return Err("linkem never saw client B".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // Wait for the first client to finish, then snapshot again.
    let end_snap = loop {
        check_interrupted()?;
        if clients.iter_mut().any(|c| c.exited()) {
            break snapshot(&mut emu, &stats_path, deadline)?;
        }
        if Instant::now() >= deadline {
            break snapshot(
                &mut emu,
                &stats_path,
                Instant::now() + Duration::from_secs(5),
            )?;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    for (k, c) in clients.iter_mut().enumerate() {
        collect_client(opts, c, &mut r.flows[k], deadline);
    }
    if let Some((dt, v)) = shares(&start_snap, &end_snap, 2) {
        r.overlap_s = Some(dt);
        for (f, s) in r.flows.iter_mut().zip(&v) {
            f.share_mbps = Some(*s);
        }
        if v[1] > 0.0 {
            r.ratio = Some(v[0] / v[1]);
        }
        r.jain = jain_index(&v);
    }

    // Our servers report when their connection closes (or idles out).
    let sdeadline = Instant::now() + opts.server_line_wait();
    for (k, (server, _)) in servers.iter_mut().enumerate() {
        if !pair[k].server_prints_json() {
            continue;
        }
        if let Ok(l) = server.wait_line(sdeadline, |l| is_role_line(l, "server")) {
            if let Ok(sj) = serde_json::from_str::<Value>(l.trim()) {
                r.flows[k].server_retrans_bytes = as_u64(&sj, "retrans_bytes");
                r.flows[k].server_json = Some(sj);
            }
        }
    }
    check_interrupted()?;
    let _ = std::fs::remove_file(&stats_path);
    emu.terminate(Duration::from_secs(5));
    let s: Stats = std::fs::read_to_string(&stats_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| format!("linkem wrote no stats{}", emu.stderr_tail()))?;
    for (k, f) in r.flows.iter_mut().enumerate() {
        if let Some(c) = s.per_client.get(k) {
            f.queue_drops = Some(c.down_queue_drop_packets);
            f.lost = Some(c.down_lost_packets);
            if f.server.as_deref() != Some(c.upstream.as_str()) {
                f.error = Some(format!(
                    "linkem relayed this client to {}, not to its server",
                    c.upstream
                ));
            }
        }
    }
    r.emulator = Some(s);
    for (mut server, _) in servers {
        server.terminate(Duration::from_secs(2));
    }
    Ok(())
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

fn opt_u(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// Formats the per-run table of competing runs (plain or markdown).
pub fn format_compete_table(rows: &[CompeteResult], markdown: bool) -> String {
    let head = [
        "A,B",
        "loss",
        "run",
        "A time s",
        "B time s",
        "A goodput",
        "B goodput",
        "overlap s",
        "A share",
        "B share",
        "A/B",
        "Jain",
        "qdrop A/B",
        "lost A/B",
        "peak backlog kB",
        "error",
    ];
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    let f = |r: &CompeteResult, k: usize| r.flows.get(k).cloned().unwrap_or_default();
    for r in rows {
        let (a, b) = (f(r, 0), f(r, 1));
        let peak = r
            .emulator
            .as_ref()
            .map(|s| format!("{:.1}", s.down.link.peak_backlog_bytes as f64 / 1e3))
            .unwrap_or_else(|| "-".into());
        table.push(vec![
            r.pair.clone(),
            r.loss.clone(),
            r.run.to_string(),
            opt(a.completion_s, 2),
            opt(b.completion_s, 2),
            opt(a.goodput_mbps, 2),
            opt(b.goodput_mbps, 2),
            opt(r.overlap_s, 2),
            opt(a.share_mbps, 2),
            opt(b.share_mbps, 2),
            opt(r.ratio, 2),
            opt(r.jain, 3),
            format!("{}/{}", opt_u(a.queue_drops), opt_u(b.queue_drops)),
            format!("{}/{}", opt_u(a.lost), opt_u(b.lost)),
            peak,
            r.error.clone().unwrap_or_default().replace('|', "/"),
        ]);
    }
    render(&table, markdown, 2, true)
}

/// Formats the per-(pair, loss) summary over successful runs: mean shares,
/// mean/min/max ratio A/B and mean Jain index.
pub fn format_compete_summary(rows: &[CompeteResult], markdown: bool) -> String {
    let head = [
        "A,B",
        "loss",
        "ok runs",
        "A share",
        "B share",
        "A/B mean",
        "A/B min-max",
        "Jain mean",
    ];
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let k = (r.pair.clone(), r.loss.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    for (pair, loss) in keys {
        let ok: Vec<&CompeteResult> = rows
            .iter()
            .filter(|r| r.pair == pair && r.loss == loss && r.error.is_none())
            .filter(|r| r.ratio.is_some())
            .collect();
        let col = |g: &dyn Fn(&CompeteResult) -> Option<f64>| -> Vec<f64> {
            ok.iter().filter_map(|r| g(r)).collect()
        };
        let sa = col(&|r| r.flows.first().and_then(|f| f.share_mbps));
        let sb = col(&|r| r.flows.get(1).and_then(|f| f.share_mbps));
        let ratio = col(&|r| r.ratio);
        let jain = col(&|r| r.jain);
        let range = match (
            ratio.iter().copied().reduce(f64::min),
            ratio.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) => format!("{lo:.2}-{hi:.2}"),
            _ => "-".into(),
        };
        let n = rows
            .iter()
            .filter(|r| r.pair == pair && r.loss == loss)
            .count();
        table.push(vec![
            pair,
            loss,
            format!("{}/{n}", ok.len()),
            opt(mean(&sa), 2),
            opt(mean(&sb), 2),
            opt(mean(&ratio), 2),
            range,
            opt(mean(&jain), 3),
        ]);
    }
    render(&table, markdown, 2, false)
}

/// The whole results document written by `--json` in `--compete` mode.
#[derive(Serialize)]
pub struct CompeteReport<'a> {
    /// The options used.
    pub options: &'a Options,
    /// One entry per run.
    pub results: &'a [CompeteResult],
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::ClientStats;

    #[test]
    fn jain() {
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert!((jain_index(&[5.0, 5.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((jain_index(&[10.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        // 3:1 → 16 / (2·10) = 0.8
        assert!((jain_index(&[3.0, 1.0]).unwrap() - 0.8).abs() < 1e-12);
    }

    fn snap(t: f64, bytes: &[u64]) -> Stats {
        Stats {
            elapsed_s: t,
            per_client: bytes
                .iter()
                .map(|&b| ClientStats {
                    down_sent_bytes: b,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn shares_between_snapshots() {
        let a = snap(1.0, &[1_000_000, 0]);
        let b = snap(3.0, &[3_500_000, 2_500_000]);
        let (dt, v) = shares(&a, &b, 2).unwrap();
        assert_eq!(dt, 2.0);
        assert!((v[0] - 10.0).abs() < 1e-9);
        assert!((v[1] - 10.0).abs() < 1e-9);
        assert!(shares(&b, &a, 2).is_none());
        assert!(shares(&snap(0.0, &[1]), &b, 2).is_none());
    }

    #[test]
    fn tables() {
        let mk = |run: usize, sa: f64, sb: f64, err: Option<&str>| CompeteResult {
            pair: "hybrid,cubic".into(),
            loss: "0%".into(),
            run,
            error: err.map(String::from),
            flows: vec![
                FlowResult {
                    cc: "hybrid".into(),
                    share_mbps: Some(sa),
                    ..Default::default()
                },
                FlowResult {
                    cc: "cubic".into(),
                    share_mbps: Some(sb),
                    ..Default::default()
                },
            ],
            ratio: Some(sa / sb),
            jain: jain_index(&[sa, sb]),
            ..Default::default()
        };
        let rows = vec![
            mk(0, 12.0, 6.0, None),
            mk(1, 10.0, 10.0, None),
            mk(2, 1.0, 1.0, Some("x | y")),
        ];
        let t = format_compete_table(&rows, true);
        assert_eq!(t.lines().count(), 5);
        assert!(t.contains("x / y"));
        let s = format_compete_summary(&rows, true);
        assert_eq!(s.lines().count(), 3);
        assert!(s.lines().nth(1).unwrap().ends_with("| ---: |"), "{s}");
        let last = s.lines().last().unwrap();
        assert!(last.contains("| 2/3 |"), "{last}");
        assert!(last.contains("| 1.50 |"), "{last}");
        assert!(last.contains("| 1.00-2.00 |"), "{last}");
        let plain = format_compete_summary(&rows, false);
        assert!(plain.lines().nth(1).unwrap().starts_with("hybrid,cubic"));
    }
}
