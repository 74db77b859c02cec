//! Competing flows: `nc-experiment --compete A,B[,C...]`.
//!
//! One run = two to eight HTTP/3 downloads of `--size` bytes sharing ONE
//! emulated bottleneck per direction (flow k starts k × `--stagger` after
//! flow A). Each flow has its own `qnc-server` (started with
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
//! clock). With more than two flows, the period is the one in which all
//! were active. This is the throughput while the flows competed; it counts all
//! datagrams of the flow (retransmissions, coded redundancy, ACK-only
//! packets), i.e. what the flow took from the bottleneck. The snapshot at
//! the end is taken a few tens of milliseconds after the first flow's last
//! data (client exit + polling), during which the other flow is alone: a
//! bias of well under 1 % on overlaps of several seconds.
//!
//! A late joiner must get its share soon: from the last flow's start on,
//! the runner also samples the counters every [`SAMPLE_EVERY`], and
//! [`time_to_fair_share`] finds when the last flow first carried at least
//! [`FAIR_FRACTION`] of an equal share over a one-second window.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::experiment::emulator::{linkem_command, snapshot};
use crate::experiment::lines::{as_f64, as_u64, is_role_line, json_objects};
use crate::experiment::options::{LossCase, Options};
use crate::experiment::process::{check_interrupted, sanitize, start_listening, Proc};
use crate::experiment::stats::summarize_exact;
use crate::experiment::table::render;
use crate::peer::FlowSpec;
use crate::relay::Stats;

/// Most flows one run takes.
pub const MAX_FLOWS: usize = 8;

/// Counter sampling period after the last flow joined.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Fraction of an equal share the last joiner must reach (over one second)
/// for [`CompeteResult::join_fair_s`].
pub const FAIR_FRACTION: f64 = 0.8;

/// Flow names in tables: A, B, C, ...
const NAMES: [&str; MAX_FLOWS] = ["A", "B", "C", "D", "E", "F", "G", "H"];

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
    /// The flows, `A,B[,C...]`.
    pub pair: String,
    /// Loss label.
    pub loss: String,
    /// Repetition index (0-based).
    pub run: usize,
    /// linkem seed used.
    pub seed: u64,
    /// Configured start delay of each flow after the previous one, seconds.
    pub stagger_s: f64,
    /// Error of the run (or of a flow), if any.
    pub error: Option<String>,
    /// The flows, A first.
    pub flows: Vec<FlowResult>,
    /// Length of the period all flows were active (between the snapshots), s.
    pub overlap_s: Option<f64>,
    /// share(A) / share(B) for two flows; the largest share over the
    /// smallest for more.
    pub ratio: Option<f64>,
    /// Jain's fairness index of the shares.
    pub jain: Option<f64>,
    /// Seconds from the last flow's start until it first carried
    /// [`FAIR_FRACTION`] of an equal share over one second (`None`: never,
    /// or not measured).
    #[serde(default)]
    pub join_fair_s: Option<f64>,
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

/// The ratio reported for `shares`: A/B for two flows, largest over
/// smallest for more; `None` if a divisor is zero.
pub fn share_ratio(shares: &[f64]) -> Option<f64> {
    match shares {
        [a, b] => (*b > 0.0).then(|| a / b),
        v if v.len() > 2 => {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            (lo > 0.0).then(|| hi / lo)
        }
        _ => None,
    }
}

/// When the last of `n` flows first got its share: `samples` are (linkem
/// time s, delivered bytes per client) taken from the last flow's start
/// (`joined_s`, linkem time) on. Over every window of at least one second
/// ending at a sample, the last flow's bytes are compared with
/// [`FAIR_FRACTION`] of the window's total over `n`; returns the seconds
/// from `joined_s` to the end of the first window that passes.
pub fn time_to_fair_share(samples: &[(f64, Vec<u64>)], n: usize, joined_s: f64) -> Option<f64> {
    let last = n.checked_sub(1)?;
    for (j, (t1, b1)) in samples.iter().enumerate() {
        // The latest sample at least a second before this one.
        let Some((t0, b0)) = samples[..j].iter().rev().find(|(t0, _)| t1 - t0 >= 1.0) else {
            continue;
        };
        if b0.len() < n || b1.len() < n {
            continue;
        }
        let d: Vec<u64> = (0..n).map(|k| b1[k].saturating_sub(b0[k])).collect();
        let total: u64 = d.iter().sum();
        if total > 0 && d[last] as f64 >= FAIR_FRACTION * total as f64 / n as f64 {
            return Some((t1 - joined_s).max(0.0));
        }
        let _ = t0;
    }
    None
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
            .zip(NAMES)
            .find_map(|(f, n)| f.error.as_ref().map(|e| format!("flow {n}: {e}")));
    }
    r
}

/// Every loss × run of `--compete A,B[,...]` (loss-major), with progress lines
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
                (None, Some(q), Some(j)) if r.flows.len() == 2 => {
                    eprintln!("A/B {q:.2}, Jain {j:.3}")
                }
                (None, Some(q), Some(j)) => eprintln!("max/min {q:.2}, Jain {j:.3}"),
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
            spec.qlog_to(&mut cmd, q);
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
    let tags = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let n = pair.len();
    if !(2..=MAX_FLOWS).contains(&n) {
        return Err(format!("{n} flows: a run takes 2 to {MAX_FLOWS}"));
    }
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

    // Flow k starts k × stagger after flow A, and never before linkem has
    // mapped flow k-1's client to its upstream (linkem maps clients to
    // upstreams in order of first appearance).
    let t0 = Instant::now();
    let mut clients: Vec<Client> = Vec::new();
    let mut joined = None;
    for k in 0..n {
        if k > 0 {
            loop {
                if clients[k - 1].exited() {
                    break; // reported by collect_client below
                }
                if snapshot(&mut emu, &stats_path, deadline)?.clients.len() >= k {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(format!("linkem never saw client {}", NAMES[k - 1]));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            while t0.elapsed() < opts.stagger * k as u32 && !clients.iter_mut().any(|c| c.exited())
            {
                check_interrupted()?;
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        r.flows[k].start_s = Some(t0.elapsed().as_secs_f64());
        clients.push(Client::start(
            opts, &pair[k], tags[k], &emu_addr, dir, certs, deadline, qlog,
        )?);
    }
    let start_snap = loop {
        let s = snapshot(&mut emu, &stats_path, deadline)?;
        if s.clients.len() >= n || clients[n - 1].exited() {
            joined.get_or_insert(s.elapsed_s);
            break s;
        }
        if Instant::now() >= deadline {
            return Err(format!("linkem never saw client {}", NAMES[n - 1]));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // Sample until the first client finishes, then snapshot again.
    let mut samples = vec![(start_snap.elapsed_s, down_bytes(&start_snap))];
    let mut next_sample = Instant::now() + SAMPLE_EVERY;
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
        if Instant::now() >= next_sample {
            let s = snapshot(&mut emu, &stats_path, deadline)?;
            samples.push((s.elapsed_s, down_bytes(&s)));
            next_sample += SAMPLE_EVERY;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    samples.push((end_snap.elapsed_s, down_bytes(&end_snap)));
    for (k, c) in clients.iter_mut().enumerate() {
        collect_client(opts, c, &mut r.flows[k], deadline);
    }
    if let Some((dt, v)) = shares(&start_snap, &end_snap, n) {
        r.overlap_s = Some(dt);
        for (f, s) in r.flows.iter_mut().zip(&v) {
            f.share_mbps = Some(*s);
        }
        r.ratio = share_ratio(&v);
        r.jain = jain_index(&v);
    }
    if let Some(j) = joined {
        r.join_fair_s = time_to_fair_share(&samples, n, j);
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

/// Bytes linkem delivered downstream to each client so far.
fn down_bytes(s: &Stats) -> Vec<u64> {
    s.per_client.iter().map(|c| c.down_sent_bytes).collect()
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

fn opt_u(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// The ratio column's name: `A/B` when every run has two flows.
fn ratio_name(rows: &[CompeteResult]) -> &'static str {
    if rows.iter().all(|r| r.flows.len() <= 2) {
        "A/B"
    } else {
        "max/min"
    }
}

/// One value per flow, joined with `/`.
fn per_flow(r: &CompeteResult, g: impl Fn(&FlowResult) -> String) -> String {
    r.flows.iter().map(g).collect::<Vec<_>>().join("/")
}

/// Formats the per-run table of competing runs (plain or markdown). Columns
/// with one value per flow list them A/B/C...
pub fn format_compete_table(rows: &[CompeteResult], markdown: bool) -> String {
    let head = [
        "flows",
        "loss",
        "run",
        "time s",
        "goodput",
        "overlap s",
        "share",
        ratio_name(rows),
        "Jain",
        "last fair s",
        "qdrops",
        "lost",
        "peak backlog kB",
        "error",
    ];
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let peak = r
            .emulator
            .as_ref()
            .map(|s| format!("{:.1}", s.down.link.peak_backlog_bytes as f64 / 1e3))
            .unwrap_or_else(|| "-".into());
        table.push(vec![
            r.pair.clone(),
            r.loss.clone(),
            r.run.to_string(),
            per_flow(r, |f| opt(f.completion_s, 2)),
            per_flow(r, |f| opt(f.goodput_mbps, 2)),
            opt(r.overlap_s, 2),
            per_flow(r, |f| opt(f.share_mbps, 2)),
            opt(r.ratio, 2),
            opt(r.jain, 3),
            opt(r.join_fair_s, 1),
            per_flow(r, |f| opt_u(f.queue_drops)),
            per_flow(r, |f| opt_u(f.lost)),
            peak,
            r.error.clone().unwrap_or_default().replace('|', "/"),
        ]);
    }
    render(&table, markdown, 2, true)
}

/// Formats the per-(flows, loss) summary over successful runs: median
/// shares, the ratio's median and min-max, Jain's index (median and worst
/// run) and the last joiner's time to its share (worst run).
pub fn format_compete_summary(rows: &[CompeteResult], markdown: bool) -> String {
    let rn = ratio_name(rows);
    let head = [
        "flows".to_string(),
        "loss".into(),
        "ok runs".into(),
        "median share".into(),
        format!("{rn} median"),
        format!("{rn} min-max"),
        "Jain median".into(),
        "Jain min".into(),
        "last fair s max".into(),
    ];
    let mut table: Vec<Vec<String>> = vec![head.to_vec()];
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let k = (r.pair.clone(), r.loss.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let median = |v: &[f64]| summarize_exact(v).map(|s| s.median.v);
    for (pair, loss) in keys {
        let ok: Vec<&CompeteResult> = rows
            .iter()
            .filter(|r| r.pair == pair && r.loss == loss && r.error.is_none())
            .filter(|r| r.ratio.is_some())
            .collect();
        let col = |g: &dyn Fn(&CompeteResult) -> Option<f64>| -> Vec<f64> {
            ok.iter().filter_map(|r| g(r)).collect()
        };
        let flows = ok.first().map_or(0, |r| r.flows.len());
        let shares: Vec<String> = (0..flows)
            .map(|k| {
                opt(
                    median(&col(&|r| r.flows.get(k).and_then(|f| f.share_mbps))),
                    2,
                )
            })
            .collect();
        let ratio = col(&|r| r.ratio);
        let jain = col(&|r| r.jain);
        let fair = col(&|r| r.join_fair_s);
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
            if shares.is_empty() {
                "-".into()
            } else {
                shares.join("/")
            },
            opt(median(&ratio), 2),
            range,
            opt(median(&jain), 3),
            opt(jain.iter().copied().reduce(f64::min), 3),
            opt(fair.iter().copied().reduce(f64::max), 1),
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
            mk(3, 10.0, 2.0, None),
        ];
        let t = format_compete_table(&rows, true);
        assert_eq!(t.lines().count(), 6);
        assert!(t.contains("x / y"));
        assert!(t.contains("| 12.00/6.00 |"), "{t}");
        let s = format_compete_summary(&rows, true);
        assert_eq!(s.lines().count(), 3);
        // Medians of the three good runs (means: 10.67/6.00, 2.33).
        assert!(s.contains("| 10.00/6.00 |"), "{s}");
        assert!(s.contains("A/B median"), "{s}");
        assert!(s.contains("A/B min-max"), "{s}");
        assert!(s.lines().nth(1).unwrap().ends_with("| ---: |"), "{s}");
        let last = s.lines().last().unwrap();
        assert!(last.contains("| 3/4 |"), "{last}");
        assert!(last.contains("| 2.00 |"), "{last}");
        assert!(last.contains("| 1.00-5.00 |"), "{last}");
        let plain = format_compete_summary(&rows, false);
        assert!(plain.lines().nth(1).unwrap().starts_with("hybrid,cubic"));
    }

    #[test]
    fn ratio_of_two_and_of_more_flows() {
        assert_eq!(share_ratio(&[6.0, 3.0]), Some(2.0));
        assert_eq!(share_ratio(&[2.0, 6.0, 3.0]), Some(3.0));
        assert_eq!(share_ratio(&[1.0, 0.0]), None);
        assert_eq!(share_ratio(&[1.0]), None);
    }

    #[test]
    fn late_joiner_time_to_fair_share() {
        // Two flows; B joins at t = 10 s with nothing, ramps to an equal
        // share of 10 Mbit/s (1.25 MB/s) from t = 12 s on.
        let mut samples = Vec::new();
        let (mut a, mut b) = (0u64, 0u64);
        for i in 0..=40 {
            let t = 10.0 + i as f64 * 0.25;
            samples.push((t, vec![a, b]));
            let (ra, rb) = if t < 12.0 {
                (2.5e6, 0.0)
            } else {
                (1.25e6, 1.25e6)
            };
            a += (ra * 0.25) as u64;
            b += (rb * 0.25) as u64;
        }
        let s = time_to_fair_share(&samples, 2, 10.0).unwrap();
        // The first one-second window where B carries 80 % of half ends
        // 0.8 s into its fair period.
        assert!((2.75..=3.0).contains(&s), "{s}");
        // A flow that never gets its share.
        let starved: Vec<(f64, Vec<u64>)> = (0..20)
            .map(|i| (i as f64 * 0.25, vec![i * 1000, 0]))
            .collect();
        assert_eq!(time_to_fair_share(&starved, 2, 0.0), None);
        assert_eq!(time_to_fair_share(&[], 2, 0.0), None);
    }
}
