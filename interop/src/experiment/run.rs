//! One run: a server for the row's flow spec, linkem (unless `--direct`),
//! one client fetching `/bytes/N` or `/stream/...`, and the resulting
//! [`RunResult`].
//!
//! Outcomes:
//!
//! * **ok**: the client exited 0 with status 200 and (for `/bytes/N`)
//!   exactly N bytes.
//! * **capped**: the run hit the per-run cap (`--timeout`, the client's own
//!   `--timeout`). It still counts: `qnc-client` prints its JSON line when
//!   it gives up, so the goodput is the client's bytes over its elapsed
//!   time and the completion time is a lower bound (shown as `>T`). If the
//!   client printed nothing (or ignored its timeout and was killed by the
//!   runner `grace` later), the goodput is the bytes linkem delivered
//!   downstream over the client's wall time (`goodput_source` =
//!   `emulator`: an overestimate, it counts headers, retransmissions and
//!   repairs).
//! * **failed**: anything else (the client's error, a start failure, a
//!   wrong size); shown in the tables' run counts and listed below them,
//!   left out of the medians.
//!
//! Trace runs (a down trace, [`Options::trace_down`]): when the client has
//! exited the runner takes a linkem snapshot (SIGUSR1); the capacity the
//! trace offered until then gives `offered_mbps`, efficiency = goodput /
//! offered_mbps (shown as `util`), and `utilisation` = UDP payload bytes
//! linkem handed to the client / offered bytes. Queue delays are the down
//! bottleneck's sojourn times from linkem's final statistics.
//!
//! CPU: the server's and the client's user + system time, from
//! `getrusage(RUSAGE_CHILDREN)` around reaping each of them (the server is
//! reaped after it printed its connection line, before linkem).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::experiment::emulator::{
    delivered_down_bytes, linkem_command, offered_down, peak_backlog_bytes, queue_drops, snapshot,
    sojourn_down_ms,
};
use crate::experiment::lines::{is_role_line, json_objects, ClientLine, Delivery, ServerLine};
use crate::experiment::options::{fmt_secs, LossCase, Options};
use crate::experiment::process::{children_cpu_s, compress_qlogs, sanitize, start_listening, Proc};
use crate::peer::FlowSpec;
use crate::relay::Stats;

/// How a run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Completed.
    #[default]
    Ok,
    /// Stopped at the per-run cap; partial goodput.
    Capped,
    /// Failed; not in the medians.
    Failed,
}

/// The outcome of one run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// The row: canonical flow spec (`hybrid+nc=off`, `quinn:bbr`, ...).
    pub row: String,
    /// Readable name of the row (`hybrid (no coding)`).
    pub title: String,
    /// Congestion controller of the sending side.
    pub cc: String,
    /// Loss label.
    pub loss: String,
    /// Mean loss rate of the model, if constant.
    pub loss_p: Option<f64>,
    /// Repetition index (0-based).
    pub run: usize,
    /// linkem seed used.
    pub seed: u64,
    /// ok, capped or failed.
    pub outcome: Outcome,
    /// Failed: the error. Capped: how (client timeout, killed).
    pub error: Option<String>,
    /// Body bytes received by the client (partial if capped).
    pub bytes: Option<u64>,
    /// Completion time (client's `duration_s`); a lower bound if capped.
    pub completion_s: Option<f64>,
    /// Goodput in Mbit/s (partial if capped).
    pub goodput_mbps: Option<f64>,
    /// `client` or `emulator` (see the module documentation).
    pub goodput_source: Option<String>,
    /// goodput / (C·(1−p)); with a down trace, goodput / `offered_mbps`.
    pub efficiency: Option<f64>,
    /// Trace runs: the run's start offset into the traces, s.
    pub trace_offset_s: Option<f64>,
    /// Down trace: capacity it offered from linkem's start until the client
    /// exited, Mbit/s.
    pub offered_mbps: Option<f64>,
    /// Down trace: UDP payload bytes handed to the client / bytes offered,
    /// until the client exited.
    pub utilisation: Option<f64>,
    /// Mean time packets spent at the down bottleneck (waiting + own
    /// service), ms.
    pub qdelay_mean_ms: Option<f64>,
    /// Its 95th percentile, ms.
    pub qdelay_p95_ms: Option<f64>,
    /// Whether coding was negotiated.
    pub coded: Option<bool>,
    /// Server repair symbols / source symbols.
    pub repair_overhead: Option<f64>,
    /// Server's stream bytes retransmitted.
    pub server_retrans_bytes: Option<u64>,
    /// Server's packets declared lost.
    pub server_packets_lost: Option<u64>,
    /// Server's packets sent.
    pub server_packets_sent: Option<u64>,
    /// Client's stream bytes retransmitted.
    pub client_retrans_bytes: Option<u64>,
    /// Client's packets declared lost.
    pub client_packets_lost: Option<u64>,
    /// Emulator drop-tail drops, both directions.
    pub queue_drops: Option<u64>,
    /// Emulator peak backlog (larger direction), bytes.
    pub peak_backlog_bytes: Option<u64>,
    /// Stream delivery delays.
    pub delivery: Option<Delivery>,
    /// Server CPU seconds (user + system).
    pub cpu_server_s: Option<f64>,
    /// Client CPU seconds (user + system).
    pub cpu_client_s: Option<f64>,
    /// Wall time of the whole run (start-up to teardown).
    pub wall_s: f64,
    /// Emulator statistics.
    pub emulator: Option<Stats>,
    /// The raw client JSON line.
    pub client_json: Option<Value>,
    /// The raw server JSON line.
    pub server_json: Option<Value>,
    /// Where the run's qlog files are (`--qlog-dir`).
    #[serde(default)]
    pub qlog_dir: Option<PathBuf>,
}

impl RunResult {
    /// Server + client CPU seconds per 10^6 body bytes.
    pub fn cpu_per_mb(&self) -> Option<f64> {
        match (self.cpu_server_s, self.cpu_client_s, self.bytes) {
            (Some(s), Some(c), Some(b)) if b > 0 => Some((s + c) / (b as f64 / 1e6)),
            _ => None,
        }
    }
}

/// Runs one download of `row` at `loss`; never panics on child
/// misbehaviour, returns a row.
pub fn run_one(
    opts: &Options,
    row: &str,
    loss: &LossCase,
    run: usize,
    work: &Path,
    certs: &Path,
) -> RunResult {
    let seed = opts.seed.wrapping_add(run as u64);
    let started = Instant::now();
    let mut r = RunResult {
        row: row.into(),
        title: row.into(),
        loss: loss.label.clone(),
        loss_p: loss.mean,
        run,
        seed,
        ..Default::default()
    };
    let spec = match FlowSpec::parse(row) {
        Ok(s) => s,
        Err(e) => {
            r.outcome = Outcome::Failed;
            r.error = Some(e);
            return r;
        }
    };
    r.title = spec.title();
    r.cc = spec.cc.clone();
    let name = format!("{}-{}-{run}", sanitize(row), sanitize(&loss.label));
    let dir = work.join(&name);
    let res = std::fs::create_dir_all(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
        .and_then(|_| opts.qlog_for(&name))
        .and_then(|qlog| {
            r.qlog_dir = qlog.clone();
            run_inner(
                opts,
                &spec,
                loss,
                seed,
                &dir,
                certs,
                qlog.as_deref(),
                &mut r,
            )
        });
    if let Err(e) = res {
        r.outcome = Outcome::Failed;
        r.error = Some(e);
    }
    compress_qlogs(r.qlog_dir.as_deref());
    r.wall_s = started.elapsed().as_secs_f64();
    r
}

/// goodput / (C·(1−p)) on a constant-rate link (constant loss only);
/// with a down trace, goodput / the capacity the trace offered.
pub fn efficiency(
    opts: &Options,
    loss: &LossCase,
    goodput_mbps: Option<f64>,
    offered_mbps: Option<f64>,
) -> Option<f64> {
    let g = goodput_mbps?;
    if opts.direct {
        return None;
    }
    if opts.trace_down.is_some() {
        return offered_mbps.filter(|&c| c > 0.0).map(|c| g / c);
    }
    let p = loss.mean.filter(|&p| p < 1.0)?;
    Some(g * 1e6 / (opts.rate_bps as f64 * (1.0 - p)))
}

#[allow(clippy::too_many_arguments)]
fn run_inner(
    opts: &Options,
    spec: &FlowSpec,
    loss: &LossCase,
    seed: u64,
    dir: &Path,
    certs: &Path,
    qlog: Option<&Path>,
    r: &mut RunResult,
) -> Result<(), String> {
    let setup_deadline = Instant::now() + Duration::from_secs(30);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let idle_ms = opts.idle_ms;
    let tools = &opts.tools;
    let (mut server, server_addr) = spec.start_server(
        tools,
        &spec.program("server"),
        &root,
        dir,
        certs,
        setup_deadline,
        idle_ms,
        opts.size,
        qlog,
    )?;

    let stats_path = dir.join("linkem.json");
    let mut emu = None;
    let target = if opts.direct {
        server_addr.clone()
    } else {
        let run = r.run;
        let (p, addr) = start_listening("linkem", dir, setup_deadline, |port| {
            linkem_command(
                opts,
                port,
                &[server_addr.as_str()],
                loss,
                run,
                seed,
                &stats_path,
            )
        })?;
        if opts.traced() {
            r.trace_offset_s = Some(opts.trace_offset(run).as_secs_f64());
        }
        emu = Some(p);
        addr
    };

    // The client gives up at the cap (and prints what it got); the runner
    // kills it `grace` later if it did not.
    let cap = opts.timeout;
    let out_dir = dir.join("download");
    if spec.downloaded_file(&out_dir).is_some() {
        std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    }
    let mut cmd: Command = spec.client_command(
        tools,
        &target,
        &opts.path_for(spec),
        &out_dir,
        certs,
        cap.as_secs_f64(),
    );
    if let Some(q) = qlog {
        spec.qlog_to(&mut cmd, q);
    }
    let cpu0 = children_cpu_s();
    let client_start = Instant::now();
    let mut client = Proc::spawn(&spec.program("client"), &mut cmd, dir)?;
    let status = client.wait_exit(client_start + cap + opts.grace());
    let client_wall = client_start.elapsed().as_secs_f64();
    r.cpu_client_s = Some(children_cpu_s() - cpu0);
    // The reader thread may still be delivering the last lines.
    std::thread::sleep(Duration::from_millis(50));
    let lines = client.drain_lines();
    // What the down trace offered while the client ran (a missing snapshot
    // leaves the trace figures empty).
    let offered = match (&mut emu, &opts.trace_down) {
        (Some(e), Some(_)) => snapshot(e, &stats_path, Instant::now() + Duration::from_secs(5))
            .ok()
            .and_then(|s| offered_down(&s)),
        _ => None,
    };
    if let Some((mbps, util)) = offered {
        r.offered_mbps = Some(mbps);
        r.utilisation = Some(util);
    }
    let killed = match &status {
        Err(e) if e == "interrupted" => return Err(e.clone()),
        Err(e) if e.ends_with("timeout") => true,
        Err(e) => return Err(e.clone()),
        Ok(_) => false,
    };
    let cj = json_objects(&lines, "client").into_iter().next();
    let mut c = cj.as_ref().map(ClientLine::parse).unwrap_or_default();
    r.client_json = cj.clone();
    // ngtcp2's client prints nothing: its saved file and wall time count.
    let file = spec.downloaded_file(&out_dir);
    if let Some(f) = &file {
        let bytes = std::fs::metadata(f).map_or(0, |m| m.len());
        c = ClientLine {
            status: status.as_ref().is_ok_and(|s| s.success()).then_some(200),
            bytes: Some(bytes),
            duration_s: Some(client_wall),
            goodput_mbps: Some(bytes as f64 * 8.0 / client_wall.max(1e-9) / 1e6),
            ..Default::default()
        };
    }
    let reported = cj.is_some() || file.is_some();
    let stderr = client.stderr_tail();
    let timed_out = killed || stderr.contains("timed out");
    let mut failure = None;
    match (&status, reported) {
        (Ok(s), true) if s.success() => {}
        _ if timed_out => {
            r.outcome = Outcome::Capped;
            r.error = Some(if killed {
                format!(
                    "{} ignored its {} s timeout: killed",
                    spec.program("client"),
                    fmt_secs(cap)
                )
            } else {
                format!("capped at {} s{stderr}", fmt_secs(cap))
            });
        }
        (Ok(s), true) => failure = Some(format!("{} exited ({s}){stderr}", spec.program("client"))),
        (Ok(s), false) if !s.success() => {
            failure = Some(format!("{} exited ({s}){stderr}", spec.program("client")))
        }
        _ => failure = Some(format!("{} printed no JSON line", spec.program("client"))),
    }
    r.bytes = c.bytes;
    r.completion_s = c.duration_s;
    r.goodput_mbps = c.goodput_mbps;
    r.client_retrans_bytes = c.retrans_bytes;
    r.client_packets_lost = c.packets_lost;
    r.coded = c.coded;
    r.delivery = c.delivery.clone();
    if r.outcome == Outcome::Capped {
        if reported {
            r.goodput_source = Some("client".into());
        } else {
            r.completion_s = Some(client_wall);
        }
    }

    // The server reports when the connection is closed (or idles out).
    if spec.server_prints_json() {
        // A failed client's server line is not needed for the statistics.
        let wait = if failure.is_some() {
            opts.server_line_wait().min(Duration::from_millis(500))
        } else {
            opts.server_line_wait()
        };
        let sdeadline = Instant::now() + wait;
        match server.wait_line(sdeadline, |l| is_role_line(l, "server")) {
            Ok(l) => {
                let sj: Value = serde_json::from_str(l.trim()).map_err(|e| e.to_string())?;
                let s = ServerLine::parse(&sj);
                r.server_retrans_bytes = s.retrans_bytes;
                r.server_packets_lost = s.packets_lost;
                r.server_packets_sent = s.packets_sent;
                r.repair_overhead = s.repair_overhead;
                r.coded = s.coded.or(r.coded);
                r.server_json = Some(sj);
            }
            Err(e) if e == "interrupted" => return Err(e),
            Err(_) => {} // leave the server columns empty
        }
    }
    let cpu0 = children_cpu_s();
    server.terminate(Duration::from_secs(2));
    r.cpu_server_s = Some(children_cpu_s() - cpu0);

    if let Some(mut emu) = emu {
        emu.terminate(Duration::from_secs(5));
        match std::fs::read_to_string(&stats_path).map(|t| serde_json::from_str::<Stats>(&t)) {
            Ok(Ok(s)) => {
                r.queue_drops = Some(queue_drops(&s));
                r.peak_backlog_bytes = Some(peak_backlog_bytes(&s));
                let (mean, p95) = sojourn_down_ms(&s);
                r.qdelay_mean_ms = Some(mean);
                r.qdelay_p95_ms = Some(p95);
                if r.outcome == Outcome::Capped && !reported && client_wall > 0.0 {
                    r.goodput_mbps =
                        Some(delivered_down_bytes(&s) as f64 * 8.0 / client_wall / 1e6);
                    r.goodput_source = Some("emulator".into());
                }
                r.emulator = Some(s);
            }
            _ => {
                if failure.is_none() && r.outcome == Outcome::Ok {
                    failure = Some(format!("linkem wrote no stats{}", emu.stderr_tail()));
                }
            }
        }
    }
    r.efficiency = efficiency(opts, loss, r.goodput_mbps, r.offered_mbps);
    if let Some(f) = failure {
        return Err(f);
    }
    if r.outcome == Outcome::Ok {
        if c.status != Some(200) {
            return Err(format!("HTTP status {:?}", c.status));
        }
        if opts.stream.is_none() && r.bytes != Some(opts.size) {
            return Err(format!("received {:?} of {} bytes", r.bytes, opts.size));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_by_rate_or_trace() {
        let mut o = crate::experiment::options::parse_matrix(
            "--rate 10mbit".split_whitespace().map(String::from),
            Path::new("/x"),
        )
        .unwrap()
        .unwrap();
        let l5 = LossCase::parse("5%").unwrap();
        // 9.5 Mbit/s of 10 Mbit/s × 0.95.
        let e = efficiency(&o, &l5, Some(9.5), None).unwrap();
        assert!((e - 1.0).abs() < 1e-12);
        let ge = LossCase::parse("schedule:0-1s=all").unwrap();
        assert_eq!(efficiency(&o, &ge, Some(9.5), None), None);
        // With a down trace: goodput / offered capacity, loss or not.
        o.trace_down = Some("/t.down".into());
        assert_eq!(efficiency(&o, &l5, Some(4.0), Some(5.0)), Some(0.8));
        assert_eq!(efficiency(&o, &ge, Some(4.0), Some(5.0)), Some(0.8));
        assert_eq!(efficiency(&o, &l5, Some(4.0), None), None);
        assert_eq!(efficiency(&o, &l5, None, Some(5.0)), None);
        o.direct = true;
        assert_eq!(efficiency(&o, &l5, Some(4.0), Some(5.0)), None);
    }
}
