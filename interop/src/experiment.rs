//! The baseline experiment runner behind `nc-experiment`.
//!
//! It only spawns processes (`qnc-certs`, `qnc-server`, `linkem`,
//! `qnc-client`) and reads their JSON output; it has no QUIC dependency.
//! Each run gets fresh loopback ports, a per-run timeout, and its children
//! are killed when the run ends (also if the runner dies: children get
//! `PR_SET_PDEATHSIG`). A failed run becomes a row with an error.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::loss::{LossSchedule, ScheduleEnd};
use crate::relay::Stats;
use crate::units::{parse_buffer, parse_duration_with, parse_prob, parse_rate, BufferSpec};

/// Set (e.g. from a SIGINT handler) to abort the matrix; children are killed.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Usage text of `nc-experiment`.
pub const USAGE: &str = "\
nc-experiment: run a (cc x loss) matrix of HTTP/3 downloads through linkem

usage: nc-experiment [options]

  --cc LIST          congestion controllers (default cubic,reno,bbr2)
  --loss LIST        loss per direction, both ways: probabilities (0,0.01,5%)
                     (default 0,0.01,0.05); a value containing ':' is one linkem
                     loss spec (ge:p,r,lg,lb, schedule:...); repeat --loss to add
  --size BYTES       download size (default 10MB)
  --rate R           bottleneck rate both ways (default 20mbit)
  --rtt D            round-trip propagation delay, split evenly (default 40ms)
  --buffer B         linkem buffer: bdp, 64p, 100kB (default bdp)
  --loss-position P  before|after (default after)
  --seed N           linkem seed (default 1; run i uses seed+i)
  --spin D           linkem --spin (default: linkem's)
  --no-realtime      linkem --no-realtime
  --runs N           repetitions of each cell (default 1)
  --timeout SECS     per-run timeout (default 300)
  --bin-dir DIR      where qnc-server/qnc-client/qnc-certs are
                     (default: next to this executable)
  --linkem PATH      linkem binary (default: DIR/linkem, else next to this executable)
  --json FILE        write machine-readable results
  --markdown         print the table in markdown
  --keep             keep the work directory (logs, stats files)

competing flows (instead of the matrix):
  --compete A,B      per run, two downloads of --size each share one linkem
                     bottleneck: flow A uses controller A (server and client),
                     flow B controller B, each with its own server; reports
                     per-flow goodput, each flow's share of the bottleneck while
                     both were active, the ratio A/B and Jain's fairness index.
                     A flow is [STACK:]CC: CC alone (or quiche:CC) is ours
                     (qnc-server/qnc-client --cc CC); ngtcp2:CC (cubic, reno,
                     bbr, bbr2) uses ngtcp2's gtlsserver/gtlsclient (Debian
                     ngtcp2-server/-client, apt-get installed if missing and
                     root); quic-go:cubic uses quic-go-peer (make peers)
  --stagger SECS     start flow B this long after flow A (default 0: B starts as
                     soon as linkem has seen A's first datagram)
  --quic-go-peer P   quic-go peer binary (default: DIR/../peers/quic-go-peer,
                     built with `go build` if missing and go is on PATH)";

/// One loss setting of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LossCase {
    /// Label shown in the table (e.g. `1%`).
    pub label: String,
    /// Value passed to `linkem --loss`.
    pub spec: String,
    /// Mean loss rate, if the model is constant (used for efficiency).
    pub mean: Option<f64>,
}

impl LossCase {
    /// Parses `0.01`, `1%`, or any linkem loss spec.
    pub fn parse(s: &str) -> Result<LossCase, String> {
        if let Ok(p) = parse_prob(s) {
            return Ok(LossCase {
                label: fmt_pct(p),
                spec: format!("bernoulli:{p}"),
                mean: Some(p),
            });
        }
        let sched = LossSchedule::parse(s).map_err(|e| format!("--loss: {e}"))?;
        let mean = match sched.segments.as_slice() {
            [one] if one.to.is_none() || sched.end == ScheduleEnd::Hold && one.from.is_zero() => {
                Some(one.model.mean_loss())
            }
            _ => None,
        };
        Ok(LossCase {
            label: s.to_string(),
            spec: s.to_string(),
            mean,
        })
    }
}

fn fmt_pct(p: f64) -> String {
    let s = format!("{:.4}", p * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Options of `nc-experiment`.
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// Congestion controllers.
    pub cc: Vec<String>,
    /// Loss settings.
    pub loss: Vec<LossCase>,
    /// Download size in bytes.
    pub size: u64,
    /// Rate in bit/s.
    pub rate_bps: u64,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Buffer spec passed to linkem.
    pub buffer: String,
    /// Loss position passed to linkem.
    pub loss_position: String,
    /// Base seed.
    pub seed: u64,
    /// linkem `--spin` value, if given.
    pub spin: Option<String>,
    /// Pass `--no-realtime` to linkem.
    pub no_realtime: bool,
    /// Repetitions.
    pub runs: usize,
    /// Per-run timeout.
    pub timeout: Duration,
    /// Directory of the qnc-* binaries.
    pub bin_dir: PathBuf,
    /// linkem binary.
    pub linkem: PathBuf,
    /// JSON output file.
    pub json: Option<PathBuf>,
    /// Markdown table.
    pub markdown: bool,
    /// Keep the work directory.
    pub keep: bool,
    /// `--compete A,B`: run two competing flows (A, B) per run instead of
    /// the (cc × loss) matrix; see [`crate::compete`].
    pub compete: Option<Vec<String>>,
    /// `--stagger`: delay between the start of flow A and flow B.
    pub stagger: Duration,
    /// `--quic-go-peer`: the quic-go peer binary for `quic-go:` flows.
    pub quic_go_peer: PathBuf,
}

/// Parse result.
#[derive(Debug)]
pub enum Command_ {
    /// Run with these options.
    Run(Box<Options>),
    /// Print usage.
    Help,
}

/// Parses the arguments (without program name). `exe_dir` is the directory
/// of the running executable (default for `--bin-dir` and `linkem`).
pub fn parse_args<I: IntoIterator<Item = String>>(
    args: I,
    exe_dir: &Path,
) -> Result<Command_, String> {
    let mut o = Options {
        cc: vec!["cubic".into(), "reno".into(), "bbr2".into()],
        loss: ["0", "0.01", "0.05"]
            .iter()
            .map(|s| LossCase::parse(s))
            .collect::<Result<_, _>>()?,
        size: 10_000_000,
        rate_bps: 20_000_000,
        rtt: Duration::from_millis(40),
        buffer: "bdp".into(),
        loss_position: "after".into(),
        seed: 1,
        spin: None,
        no_realtime: false,
        runs: 1,
        timeout: Duration::from_secs(300),
        bin_dir: exe_dir.to_path_buf(),
        linkem: PathBuf::new(),
        json: None,
        markdown: false,
        keep: false,
        compete: None,
        stagger: Duration::ZERO,
        quic_go_peer: PathBuf::new(),
    };
    let mut quic_go_peer = None;
    let mut cc_given = false;
    let mut linkem = None;
    let mut loss_given = false;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(Command_::Help),
            "--markdown" => {
                o.markdown = true;
                continue;
            }
            "--keep" => {
                o.keep = true;
                continue;
            }
            "--no-realtime" => {
                o.no_realtime = true;
                continue;
            }
            _ => {}
        }
        let v = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| format!("option {name} needs a value"))?,
        };
        let ctx = |e: String| format!("{name}: {e}");
        match name.as_str() {
            "--cc" => {
                cc_given = true;
                o.cc = v
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if o.cc.is_empty() {
                    return Err("--cc: empty list".into());
                }
            }
            "--loss" => {
                if !loss_given {
                    o.loss.clear();
                    loss_given = true;
                }
                if v.contains(':') {
                    o.loss.push(LossCase::parse(v.trim())?);
                } else {
                    for s in v.split(',') {
                        o.loss.push(LossCase::parse(s.trim())?);
                    }
                }
            }
            "--size" => {
                o.size = match parse_buffer(&v).map_err(ctx)? {
                    BufferSpec::Bytes(b) if b > 0 => b,
                    _ => return Err(format!("--size: '{v}' is not a positive byte count")),
                }
            }
            "--rate" => {
                o.rate_bps = parse_rate(&v)
                    .map_err(ctx)?
                    .ok_or("--rate must be finite")?
            }
            "--rtt" => o.rtt = parse_duration_with(&v, true).map_err(ctx)?,
            "--buffer" => {
                parse_buffer(&v).map_err(ctx)?;
                o.buffer = v;
            }
            "--loss-position" => {
                if v != "before" && v != "after" {
                    return Err(format!("--loss-position: '{v}' is not 'before' or 'after'"));
                }
                o.loss_position = v;
            }
            "--seed" => {
                o.seed = v
                    .parse()
                    .map_err(|_| format!("--seed: '{v}' is not an unsigned integer"))?
            }
            "--runs" => {
                o.runs = v
                    .parse()
                    .map_err(|_| format!("--runs: '{v}' is not a positive integer"))?;
                if o.runs == 0 {
                    return Err("--runs must be >= 1".into());
                }
            }
            "--timeout" => {
                let t = parse_duration_with(&v, false).map_err(ctx)?;
                if t.is_zero() {
                    return Err("--timeout must be > 0".into());
                }
                o.timeout = t;
            }
            "--spin" => {
                crate::units::parse_duration(&v).map_err(ctx)?;
                o.spin = Some(v);
            }
            "--compete" => {
                let pair: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
                if pair.len() != 2 || pair.iter().any(|s| s.is_empty()) {
                    return Err(format!("--compete: '{v}' is not two flows A,B"));
                }
                for s in &pair {
                    crate::peer::FlowSpec::parse(s).map_err(|e| format!("--compete: {e}"))?;
                }
                o.compete = Some(pair);
            }
            "--stagger" => o.stagger = parse_duration_with(&v, false).map_err(ctx)?,
            "--bin-dir" => o.bin_dir = PathBuf::from(v),
            "--linkem" => linkem = Some(PathBuf::from(v)),
            "--quic-go-peer" => quic_go_peer = Some(PathBuf::from(v)),
            "--json" => o.json = Some(PathBuf::from(v)),
            _ => return Err(format!("unknown option '{name}' (see --help)")),
        }
    }
    if let Some(pair) = &o.compete {
        if cc_given {
            return Err("--cc and --compete are exclusive".into());
        }
        o.cc = pair.clone();
    } else if !o.stagger.is_zero() {
        return Err("--stagger needs --compete".into());
    }
    o.quic_go_peer = quic_go_peer.unwrap_or_else(|| crate::peer::default_quic_go_peer(&o.bin_dir));
    o.linkem = linkem.unwrap_or_else(|| {
        let in_bin = o.bin_dir.join("linkem");
        if in_bin.exists() {
            in_bin
        } else {
            exe_dir.join("linkem")
        }
    });
    Ok(Command_::Run(Box::new(o)))
}

/// The outcome of one download.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// Congestion controller.
    pub cc: String,
    /// Loss label.
    pub loss: String,
    /// Mean loss rate of the model, if constant.
    pub loss_p: Option<f64>,
    /// Repetition index (0-based).
    pub run: usize,
    /// linkem seed used.
    pub seed: u64,
    /// Error, if the run failed.
    pub error: Option<String>,
    /// Body bytes received by the client.
    pub bytes: Option<u64>,
    /// Download completion time (client's `duration_s`).
    pub completion_s: Option<f64>,
    /// Goodput in Mbit/s.
    pub goodput_mbps: Option<f64>,
    /// goodput / (C·(1−p)).
    pub efficiency: Option<f64>,
    /// Goodput relative to the mean cubic goodput at the same loss.
    pub ratio_to_cubic: Option<f64>,
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
    /// Emulator statistics.
    pub emulator: Option<Stats>,
    /// The raw client JSON line.
    pub client_json: Option<Value>,
    /// The raw server JSON line.
    pub server_json: Option<Value>,
}

/// A child process whose stdout lines arrive on a channel; killed on drop.
pub(crate) struct Proc {
    name: String,
    child: Child,
    lines: Receiver<String>,
    stderr_path: PathBuf,
}

impl Proc {
    pub(crate) fn spawn(name: &str, cmd: &mut Command, dir: &Path) -> Result<Proc, String> {
        let stderr_path = dir.join(format!("{name}.stderr"));
        let err =
            File::create(&stderr_path).map_err(|e| format!("{}: {e}", stderr_path.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err));
        // SAFETY: the closure runs in the forked child before exec and only
        // calls prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name} ({:?}): {e}", cmd.get_program()))?;
        let out = child.stdout.take().ok_or("no stdout pipe")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.into(),
            child,
            lines: rx,
            stderr_path,
        })
    }

    /// Waits for a stdout line satisfying `pred`, up to `deadline`.
    pub(crate) fn wait_line(
        &mut self,
        deadline: Instant,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        loop {
            check_interrupted()?;
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "{}: timed out waiting for output{}",
                    self.name,
                    self.stderr_tail()
                ));
            }
            match self
                .lines
                .recv_timeout((deadline - now).min(Duration::from_millis(100)))
            {
                Ok(l) if pred(&l) => return Ok(l),
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(50));
                    let status = match self.child.try_wait() {
                        Ok(Some(s)) => s.to_string(),
                        _ => "closed its stdout".into(),
                    };
                    return Err(format!(
                        "{} exited ({status}){}",
                        self.name,
                        self.stderr_tail()
                    ));
                }
            }
        }
    }

    /// Waits for exit up to `deadline`; kills on timeout.
    pub(crate) fn wait_exit(
        &mut self,
        deadline: Instant,
    ) -> Result<std::process::ExitStatus, String> {
        loop {
            if let Some(s) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(s);
            }
            check_interrupted()?;
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("{}: timeout", self.name));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub(crate) fn terminate(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        if let Ok(Some(s)) = self.child.try_wait() {
            return Some(s);
        }
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }

    pub(crate) fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        match text.lines().rev().find(|l| !l.trim().is_empty()) {
            Some(l) => format!(": {}", l.trim()),
            None => String::new(),
        }
    }

    /// The child's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the child has exited (reaps it).
    pub(crate) fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    pub(crate) fn drain_lines(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

pub(crate) fn check_interrupted() -> Result<(), String> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        Err("interrupted".into())
    } else {
        Ok(())
    }
}

/// A currently free UDP port on 127.0.0.1 (chosen by the kernel).
pub fn free_port() -> Result<u16, String> {
    let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    s.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

pub(crate) fn json_objects(lines: &[String], role: &str) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(|v| v.get("role").and_then(Value::as_str) == Some(role))
        .collect()
}

pub(crate) fn as_u64(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

pub(crate) fn as_f64(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// Starts a process that listens on a fresh free port and prints
/// `listening ADDR` first; retries with another port (up to 3 attempts) if
/// it exits before that, e.g. because the port was taken meanwhile.
pub(crate) fn start_listening(
    name: &str,
    dir: &Path,
    deadline: Instant,
    mut make: impl FnMut(u16) -> Command,
) -> Result<(Proc, String), String> {
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port()?;
        let mut p = Proc::spawn(name, &mut make(port), dir)?;
        let until = deadline.min(Instant::now() + Duration::from_secs(20));
        match p.wait_line(until, |l| l.starts_with("listening ")) {
            Ok(line) => return Ok((p, line["listening ".len()..].trim().to_string())),
            Err(e) if e.contains(" exited ") => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Creates the certificates with `qnc-certs --out DIR`.
pub fn make_certs(opts: &Options, dir: &Path) -> Result<(), String> {
    let certs = opts.bin_dir.join("qnc-certs");
    let out = Command::new(&certs)
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", certs.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "qnc-certs failed: {}",
            err.lines().last().unwrap_or("").trim()
        ));
    }
    for f in ["ca.pem", "cert.pem", "key.pem"] {
        if !dir.join(f).exists() {
            return Err(format!("qnc-certs did not write {f}"));
        }
    }
    Ok(())
}

/// Runs one download; never panics on child misbehaviour, returns a row.
pub fn run_one(
    opts: &Options,
    cc: &str,
    loss: &LossCase,
    run: usize,
    work: &Path,
    certs: &Path,
) -> RunResult {
    let seed = opts.seed.wrapping_add(run as u64);
    let mut r = RunResult {
        cc: cc.into(),
        loss: loss.label.clone(),
        loss_p: loss.mean,
        run,
        seed,
        ..Default::default()
    };
    let dir = work.join(format!("{cc}-{}-{run}", sanitize(&loss.label)));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        r.error = Some(format!("{}: {e}", dir.display()));
        return r;
    }
    if let Err(e) = run_inner(opts, cc, loss, seed, &dir, certs, &mut r) {
        r.error = Some(e);
    }
    r
}

pub(crate) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}

/// Starts `qnc-server` with controller `cc` serving `root`, logging under
/// `label`; returns the process and its address.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_server(
    opts: &Options,
    cc: &str,
    label: &str,
    root: &Path,
    dir: &Path,
    certs: &Path,
    deadline: Instant,
    idle_ms: u64,
) -> Result<(Proc, String), String> {
    start_listening(label, dir, deadline, |port| {
        qnc_server_command(opts, cc, port, root, certs, idle_ms)
    })
}

/// The `qnc-server` command: controller `cc`, listening on 127.0.0.1:`port`,
/// serving `root` (and `/bytes/<n>`), one JSON stats line per connection.
pub(crate) fn qnc_server_command(
    opts: &Options,
    cc: &str,
    port: u16,
    root: &Path,
    certs: &Path,
    idle_ms: u64,
) -> Command {
    let mut c = Command::new(opts.bin_dir.join("qnc-server"));
    c.arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--root")
        .arg(root)
        .arg("--cert")
        .arg(certs.join("cert.pem"))
        .arg("--key")
        .arg(certs.join("key.pem"))
        .arg("--cc")
        .arg(cc)
        .arg("--idle-timeout")
        .arg(idle_ms.to_string())
        .arg("--stats-json");
    c
}

/// The `linkem` command for one run: the experiment's link (rate, half the
/// RTT each way, buffer, loss, seed) listening on `port`, relaying client k
/// to `upstreams[k]`.
pub(crate) fn linkem_command(
    opts: &Options,
    port: u16,
    upstreams: &[&str],
    loss: &LossCase,
    seed: u64,
    stats_path: &Path,
) -> Command {
    let mut c = Command::new(&opts.linkem);
    if let Some(spin) = &opts.spin {
        c.arg("--spin").arg(spin);
    }
    if opts.no_realtime {
        c.arg("--no-realtime");
    }
    c.arg("--listen").arg(format!("127.0.0.1:{port}"));
    for u in upstreams {
        c.arg("--upstream").arg(u);
    }
    if upstreams.len() > 1 {
        c.arg("--max-clients").arg(upstreams.len().to_string());
    }
    c.arg("--rate")
        .arg(opts.rate_bps.to_string())
        .arg("--delay")
        .arg(format!("{}us", (opts.rtt / 2).as_micros()))
        .arg("--buffer")
        .arg(&opts.buffer)
        .arg("--loss")
        .arg(&loss.spec)
        .arg("--loss-position")
        .arg(&opts.loss_position)
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--stats")
        .arg(stats_path);
    c
}

fn run_inner(
    opts: &Options,
    cc: &str,
    loss: &LossCase,
    seed: u64,
    dir: &Path,
    certs: &Path,
    r: &mut RunResult,
) -> Result<(), String> {
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let root = dir.join("root");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let idle_ms = 5_000u64;

    let (mut server, server_addr) =
        start_server(opts, cc, "qnc-server", &root, dir, certs, deadline, idle_ms)?;

    let stats_path = dir.join("linkem.json");
    let (mut emu, emu_addr) = start_listening("linkem", dir, deadline, |port| {
        linkem_command(opts, port, &[server_addr.as_str()], loss, seed, &stats_path)
    })?;

    let url = format!("https://{emu_addr}/bytes/{}", opts.size);
    let remaining = deadline.saturating_duration_since(Instant::now());
    let mut client = Proc::spawn(
        "qnc-client",
        Command::new(opts.bin_dir.join("qnc-client"))
            .arg("--ca")
            .arg(certs.join("ca.pem"))
            .arg("--cc")
            .arg(cc)
            .arg("--json")
            .arg("--timeout")
            .arg(remaining.as_secs().max(1).to_string())
            .arg(&url),
        dir,
    )?;
    let status = client.wait_exit(deadline);
    // The reader thread may still be delivering the last lines.
    std::thread::sleep(Duration::from_millis(50));
    let client_lines = client.drain_lines();
    let status = status.map_err(|e| {
        if e.ends_with("timeout") {
            format!("timeout after {:?}", opts.timeout)
        } else {
            e
        }
    })?;
    if !status.success() {
        return Err(format!(
            "qnc-client exited ({status}){}",
            client.stderr_tail()
        ));
    }
    let cj = json_objects(&client_lines, "client")
        .into_iter()
        .next()
        .ok_or("qnc-client printed no JSON line")?;
    r.bytes = as_u64(&cj, "bytes");
    r.completion_s = as_f64(&cj, "duration_s");
    r.goodput_mbps = as_f64(&cj, "goodput_mbps").or_else(|| match (r.bytes, r.completion_s) {
        (Some(b), Some(d)) if d > 0.0 => Some(b as f64 * 8.0 / d / 1e6),
        _ => None,
    });
    r.client_retrans_bytes = as_u64(&cj, "retrans_bytes");
    r.client_packets_lost = as_u64(&cj, "packets_lost");
    let http_status = as_u64(&cj, "status");
    r.client_json = Some(cj);
    if let (Some(g), Some(p)) = (r.goodput_mbps, loss.mean) {
        if p < 1.0 {
            r.efficiency = Some(g * 1e6 / (opts.rate_bps as f64 * (1.0 - p)));
        }
    }

    // The server reports when the connection is closed (or idles out).
    let sdeadline = Instant::now() + Duration::from_millis(idle_ms) + Duration::from_secs(3);
    match server.wait_line(sdeadline, |l| {
        serde_json::from_str::<Value>(l.trim())
            .is_ok_and(|v| v.get("role").and_then(Value::as_str) == Some("server"))
    }) {
        Ok(l) => {
            let sj: Value = serde_json::from_str(l.trim()).map_err(|e| e.to_string())?;
            r.server_retrans_bytes = as_u64(&sj, "retrans_bytes");
            r.server_packets_lost = as_u64(&sj, "packets_lost");
            r.server_packets_sent = as_u64(&sj, "packets_sent");
            r.server_json = Some(sj);
        }
        Err(e) if e == "interrupted" => return Err(e),
        Err(_) => {} // leave the server columns empty
    }
    emu.terminate(Duration::from_secs(5));
    match std::fs::read_to_string(&stats_path).map(|t| serde_json::from_str::<Stats>(&t)) {
        Ok(Ok(s)) => r.emulator = Some(s),
        _ => {
            if r.error.is_none() {
                r.error = Some(format!("linkem wrote no stats{}", emu.stderr_tail()));
            }
        }
    }
    server.terminate(Duration::from_secs(2));
    if http_status != Some(200) {
        return Err(format!("HTTP status {:?}", http_status));
    }
    if r.bytes != Some(opts.size) {
        return Err(format!("received {:?} of {} bytes", r.bytes, opts.size));
    }
    Ok(())
}

/// Fills `ratio_to_cubic`: goodput / mean goodput of successful cubic runs at the same loss.
pub fn compute_ratios(rows: &mut [RunResult]) {
    let base = |loss: &str, rows: &[RunResult]| {
        let g: Vec<f64> = rows
            .iter()
            .filter(|r| r.cc == "cubic" && r.loss == loss && r.error.is_none())
            .filter_map(|r| r.goodput_mbps)
            .collect();
        (!g.is_empty()).then(|| g.iter().sum::<f64>() / g.len() as f64)
    };
    let bases: Vec<Option<f64>> = rows.iter().map(|r| base(&r.loss, rows)).collect();
    for (r, b) in rows.iter_mut().zip(bases) {
        r.ratio_to_cubic = match (r.goodput_mbps, b, &r.error) {
            (Some(g), Some(b), None) if b > 0.0 => Some(g / b),
            _ => None,
        };
    }
}

/// Formats the results table (plain or markdown).
pub fn format_table(rows: &[RunResult], markdown: bool) -> String {
    let head = [
        "cc",
        "loss",
        "run",
        "time s",
        "goodput Mbit/s",
        "eff",
        "vs cubic",
        "srv retx B",
        "cli retx B",
        "emu lost d/u",
        "qdrop d/u",
        "peak backlog kB",
        "error",
    ];
    let opt = |v: Option<f64>, prec: usize| {
        v.map(|x| format!("{x:.prec$}"))
            .unwrap_or_else(|| "-".into())
    };
    let opt_u = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let (lost, qd, peak) = match &r.emulator {
            Some(s) => (
                format!("{}/{}", s.down.link.lost_packets, s.up.link.lost_packets),
                format!(
                    "{}/{}",
                    s.down.link.queue_drop_packets, s.up.link.queue_drop_packets
                ),
                format!(
                    "{:.1}",
                    s.down
                        .link
                        .peak_backlog_bytes
                        .max(s.up.link.peak_backlog_bytes) as f64
                        / 1e3
                ),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        table.push(vec![
            r.cc.clone(),
            r.loss.clone(),
            r.run.to_string(),
            opt(r.completion_s, 2),
            opt(r.goodput_mbps, 2),
            opt(r.efficiency, 3),
            opt(r.ratio_to_cubic, 2),
            opt_u(r.server_retrans_bytes),
            opt_u(r.client_retrans_bytes),
            lost,
            qd,
            peak,
            r.error.clone().unwrap_or_default().replace('|', "/"),
        ]);
    }
    let mut out = String::new();
    if markdown {
        for (i, row) in table.iter().enumerate() {
            out += &format!("| {} |\n", row.join(" | "));
            if i == 0 {
                let align: Vec<&str> = (0..row.len())
                    .map(|c| {
                        if c < 2 || c + 1 == row.len() {
                            "---"
                        } else {
                            "---:"
                        }
                    })
                    .collect();
                out += &format!("| {} |\n", align.join(" | "));
            }
        }
    } else {
        let widths: Vec<usize> = (0..head.len())
            .map(|c| {
                table
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in &table {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    if c + 1 == row.len() {
                        s.clone()
                    } else {
                        format!("{s:<w$}", w = widths[c])
                    }
                })
                .collect();
            out += cells.join("  ").trim_end();
            out.push('\n');
        }
    }
    out
}

/// The whole results document written by `--json`.
#[derive(Serialize)]
pub struct Report<'a> {
    /// The options used.
    pub options: &'a Options,
    /// One entry per run.
    pub results: &'a [RunResult],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Options {
        match parse_args(s.split_whitespace().map(String::from), Path::new("/x")).unwrap() {
            Command_::Run(o) => *o,
            Command_::Help => panic!("help"),
        }
    }

    #[test]
    fn defaults() {
        let o = parse("");
        assert_eq!(o.cc, ["cubic", "reno", "bbr2"]);
        assert_eq!(
            o.loss.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
            ["0%", "1%", "5%"]
        );
        assert_eq!(o.loss[1].spec, "bernoulli:0.01");
        assert_eq!(o.size, 10_000_000);
        assert_eq!(o.rate_bps, 20_000_000);
        assert_eq!(o.rtt, Duration::from_millis(40));
        assert_eq!(o.bin_dir, PathBuf::from("/x"));
        assert_eq!(o.linkem, PathBuf::from("/x/linkem"));
    }

    #[test]
    fn options_and_errors() {
        let o = parse("--cc reno --loss 2% --loss ge:0.01,0.3 --size 1MB --rate 10mbit --rtt 100 --runs 3 --markdown");
        assert_eq!(o.cc, ["reno"]);
        assert_eq!(o.size, 1_000_000);
        assert_eq!(o.rtt, Duration::from_millis(100));
        assert_eq!(o.runs, 3);
        assert!(o.markdown);
        assert_eq!(o.loss[0].mean, Some(0.02));
        assert_eq!(o.loss[1].spec, "ge:0.01,0.3");
        assert_eq!(o.loss.len(), 2);
        for bad in [
            "--rate -1mbit",
            "--loss 1.5",
            "--runs 0",
            "--size 0",
            "--bogus 1",
            "--cc",
        ] {
            assert!(
                parse_args(bad.split_whitespace().map(String::from), Path::new("/x")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn compete_options() {
        let o = parse("--compete hybrid,cubic --stagger 2 --loss 0");
        assert_eq!(
            o.compete.as_deref(),
            Some(&["hybrid".to_string(), "cubic".into()][..])
        );
        assert_eq!(o.cc, ["hybrid", "cubic"]);
        assert_eq!(o.stagger, Duration::from_secs(2));
        assert_eq!(
            parse("--compete a,b --stagger 500ms").stagger,
            Duration::from_millis(500)
        );
        assert_eq!(parse("").compete, None);
        for bad in [
            "--compete cubic",
            "--compete a,b,c",
            "--compete a,",
            "--compete a,b --cc cubic",
            "--stagger 1",
            "--compete a,b --stagger x",
            "--compete hybrid,ngtcp2:vegas",
            "--compete hybrid,foo:cubic",
        ] {
            assert!(
                parse_args(bad.split_whitespace().map(String::from), Path::new("/x")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn loss_case_mean() {
        let ge = LossCase::parse("ge:0.1,0.3").unwrap();
        assert!((ge.mean.unwrap() - 0.25).abs() < 1e-12);
        let s = LossCase::parse("schedule:0-1s=none;1s-2s=all").unwrap();
        assert_eq!(s.mean, None);
        assert_eq!(LossCase::parse("0.001").unwrap().label, "0.1%");
    }

    #[test]
    fn ratios_and_table() {
        let mk = |cc: &str, loss: &str, g: f64| RunResult {
            cc: cc.into(),
            loss: loss.into(),
            goodput_mbps: Some(g),
            ..Default::default()
        };
        let mut rows = vec![
            mk("cubic", "1%", 10.0),
            mk("reno", "1%", 5.0),
            mk("reno", "5%", 3.0),
        ];
        rows.push(RunResult {
            error: Some("boom | bad".into()),
            ..mk("bbr2", "1%", 1.0)
        });
        compute_ratios(&mut rows);
        assert_eq!(rows[0].ratio_to_cubic, Some(1.0));
        assert_eq!(rows[1].ratio_to_cubic, Some(0.5));
        assert_eq!(rows[2].ratio_to_cubic, None);
        assert_eq!(rows[3].ratio_to_cubic, None);
        let md = format_table(&rows, true);
        assert_eq!(md.lines().count(), 6);
        assert!(md.lines().all(|l| l.starts_with("| ") && l.ends_with(" |")));
        assert!(md.contains("boom / bad"));
        let plain = format_table(&rows, false);
        assert!(plain.lines().nth(1).unwrap().starts_with("cubic"));
    }
}
