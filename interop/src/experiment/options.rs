//! The matrix's command line ([`Options`], [`parse_matrix`], [`USAGE`]),
//! capacity traces, and the parsing helpers
//! the subcommands share (`bench-e2e` in
//! [`bench_options`](crate::experiment::bench_options), `bench-cellular` in
//! [`cellular_options`](crate::experiment::cellular_options)).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use crate::experiment::loss_case::LossCase;
pub(crate) use crate::experiment::loss_case::{fmt_pct, fmt_secs};
use crate::peer::{default_quic_go_peer, default_quinn_peer, FlowSpec, Tools};
use crate::units::{parse_buffer, parse_duration_with, parse_rate, BufferSpec};

/// Usage text of `nc-experiment` (the matrix and `--compete`).
pub const USAGE: &str = "\
nc-experiment: HTTP/3 downloads through linkem, one table row per flow spec

usage: nc-experiment [options]            a (row x loss) matrix (make demo)
       nc-experiment bench-e2e [options]  the end-to-end benchmark tables
                                          (see nc-experiment bench-e2e --help)
       nc-experiment bench-cellular [options]  the cellular trace benchmark
                                          (see nc-experiment bench-cellular --help)
       nc-experiment bench-fairness [options]  fairness next to CUBIC (issue 12's
                                          targets; see nc-experiment bench-fairness --help)
       nc-experiment scenario FILE.toml...  scenario files: link, flows, sweeps,
                                          seeds; results JSON, qlogs, HTML report
                                          (see nc-experiment scenario --help)

rows (flow specs, comma-separated): [STACK:]CC[+nc=POLICY|off][+mode=full][+window=N]
  hybrid                coded QUIC: our controller + coding (adaptive policy)
  hybrid+nc=off         plain QUIC with our controller (no coding)
  cubic, cubic+nc=off   quiche's CUBIC with / without coding (also reno, bbr2)
  hybrid+nc=fixed:1.25  another redundancy policy: fixed:R, ctcp[:N], von, fnc,
                        adaptive[:BETA]; +mode=full: full coding
  hybrid+window=4096    largest coding window both ends offer (--nc-window)
  quinn:bbr             the quinn peer's server (BBRv1-style), our client
  ngtcp2:CC, quic-go:cubic  other stacks (mainly for --compete)

  --rows LIST        table rows (default: hybrid,cubic+nc=off,bbr2+nc=off,
                     reno+nc=off,hybrid+nc=off); --cc LIST is a synonym
  --reference ROW    ratios are to this row at the same loss (default: first row)
  --loss LIST        loss per direction, both ways: probabilities (0,0.01,5%)
                     (default 0,0.05,0.1); a value containing ':' is one linkem
                     loss spec (ge:p,r[,lg,lb], schedule:...); repeat --loss to add
  --size BYTES       download size, GET /bytes/N (default 5MB)
  --stream RATE/DUR  instead: GET /stream/RATE/DUR (e.g. 8mbit/20s), reporting
                     per-chunk delivery delays
  --stamped          GET /stamped/N instead of /bytes/N: the same download in
                     stamped chunks, adding the in-order delivery delay
                     (p50/p95/p99) to the table; stacks without /stamped/
                     (all but ours and quinn) still get /bytes/N
  --direct           no linkem: the client talks to the server on loopback
                     (no loss, no rate limit; for CPU cost)
  --rate R           bottleneck rate both ways (default 20mbit)
  --rtt D            round-trip propagation delay, split evenly (default 40ms)
  --buffer B         linkem buffer: bdp, 64p, 100kB (default bdp)
  --trace-down FILE  down link (server to client) capacity from a mahimahi
                     mm-link trace instead of --rate (see linkem --help)
  --trace-up FILE    the same for the up link
  --trace NAME       both: NAME.down and NAME.up, NAME a path prefix or a trace
                     in ../shared/traces (e.g. Verizon-LTE-short)
  --trace-offsets L  start offsets into the traces, one per run index, cycling
                     (default 0; e.g. 0,40s,80s). With a down trace the eff
                     column becomes util = goodput / offered capacity, and
                     link util and bottleneck queue delay columns are added
  --loss-position P  before|after (default after)
  --seed N           linkem seed (default 1; run i uses seed+i for every row)
  --spin D           linkem --spin (default: linkem's)
  --no-realtime      linkem --no-realtime
  --runs N           runs per cell (default 3), interleaved: for each run, for
                     each loss, every row once
  --timeout SECS     per-run cap (default 10; with --compete three times what
                     all flows need at --rate, plus the staggers, at least
                     10): the client gives up after SECS
                     and the run counts with its partial goodput, time \">SECS\"
  --per-run          also print the table of individual runs
  --idle-timeout MS  the servers' QUIC idle timeout (default 5000); the runner
                     waits up to twice that (at most MS + 3 s) for a server's
                     connection line after a capped run
  --bin-dir DIR      where qnc-server/qnc-client/qnc-certs are
                     (default: next to this executable)
  --linkem PATH      linkem binary (default: DIR/linkem, else next to this executable)
  --quinn-peer P     quinn peer (default: DIR/../peers/quinn-peer, built with
                     cargo if missing)
  --quic-go-peer P   quic-go peer (default: DIR/../peers/quic-go-peer, built with
                     `go build` if missing and go is on PATH)
  --json FILE        write machine-readable results (every run, every cell)
  --qlog-dir DIR     every run's server and client write qlog files into
                     DIR/<run> (ours and quic-go's through $QLOGDIR, ngtcp2's
                     through --qlog-dir)
  --markdown         print the tables in markdown
  --keep             keep the work directory (logs, stats files)

competing flows (instead of the matrix):
  --compete A,B[,C...]  per run, 2 to 8 downloads of --size each share one
                     linkem bottleneck: flow A is spec A (server and client),
                     flow B spec B, ..., each with its own server; reports
                     per-flow goodput, each flow's share of the bottleneck
                     while all were active, the ratio A/B (two flows) or
                     largest/smallest share, Jain's fairness index, and when
                     the last flow first carried 80 % of an equal share. ngtcp2:CC (cubic,
                     reno, bbr, bbr2) uses ngtcp2's gtlsserver/gtlsclient (Debian
                     ngtcp2-server/-client, apt-get installed if missing and
                     root); quic-go:cubic uses quic-go-peer (make peers)
  --stagger SECS     start each flow this long after the previous one (default
                     0: as soon as linkem has seen the previous flow's first
                     datagram)
  --flow-rtt R1,R2,...  each flow's round-trip propagation delay (at least
                     --rtt; default --rtt for all): linkem adds (Rk - rtt)/2
                     each way to flow k's path outside the shared bottleneck";

/// Options of the matrix (and of each `bench-e2e` table, and `--compete`).
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// Table rows: canonical flow specs ([`FlowSpec::label`]).
    pub rows: Vec<String>,
    /// The reference row for ratios (canonical); `None` = the first row.
    pub reference: Option<String>,
    /// Loss settings.
    pub loss: Vec<LossCase>,
    /// Download size in bytes (`/bytes/N`).
    pub size: u64,
    /// `RATE/DURATION` of `/stream/RATE/DURATION`, instead of `/bytes/N`.
    pub stream: Option<String>,
    /// `/stamped/N` instead of `/bytes/N` where the row's server has it.
    pub stamped: bool,
    /// No linkem: the client talks to the server directly.
    pub direct: bool,
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
    /// Runs per cell.
    pub runs: usize,
    /// Per-run cap (the client's `--timeout`).
    pub timeout: Duration,
    /// The servers' QUIC idle timeout, ms.
    pub idle_ms: u64,
    /// Where the stacks' programs are.
    #[serde(flatten)]
    pub tools: Tools,
    /// linkem binary.
    pub linkem: PathBuf,
    /// JSON output file.
    pub json: Option<PathBuf>,
    /// Markdown tables.
    pub markdown: bool,
    /// Also print the individual runs.
    pub per_run: bool,
    /// Keep the work directory.
    pub keep: bool,
    /// `--compete A,B`: run two competing flows (A, B) per run instead of
    /// the matrix; see [`crate::compete`].
    pub compete: Option<Vec<String>>,
    /// `--stagger`: delay between the start of flow A and flow B.
    pub stagger: Duration,
    /// `--flow-rtt`: round-trip propagation delay of each competing flow
    /// (empty: `rtt` for all).
    pub flow_rtt: Vec<Duration>,
    /// Capacity trace of the down link (server to client) instead of the
    /// rate.
    pub trace_down: Option<PathBuf>,
    /// Capacity trace of the up link.
    pub trace_up: Option<PathBuf>,
    /// Start offsets into the traces, one per run index (cycling).
    pub trace_offsets: Vec<Duration>,
    /// `--qlog-dir`: every run's servers and clients write qlog files
    /// (`$QLOGDIR`) into a directory of the run's name below this one.
    pub qlog_dir: Option<PathBuf>,
    /// No run starts after this instant (the scenario runner's bound).
    #[serde(skip)]
    pub deadline: Option<std::time::Instant>,
}

impl Options {
    /// The request path: `/bytes/<size>`, `/stamped/<size>` or
    /// `/stream/<RATE/DURATION>`.
    pub fn path(&self) -> String {
        match &self.stream {
            Some(s) => format!("/stream/{s}"),
            None if self.stamped => format!("/stamped/{}", self.size),
            None => format!("/bytes/{}", self.size),
        }
    }

    /// The request path for a flow of `spec`: [`Options::path`], but
    /// `/bytes/<size>` for `--stamped` when its server has no `/stamped/`.
    pub fn path_for(&self, spec: &FlowSpec) -> String {
        if self.stamped && self.stream.is_none() && !spec.serves_stamped() {
            return format!("/bytes/{}", self.size);
        }
        self.path()
    }

    /// How long after the cap the runner waits before killing a client
    /// that ignored its `--timeout`: a quarter of the cap, 1-10 s.
    pub fn grace(&self) -> Duration {
        (self.timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(10))
    }

    /// How long to wait for a server's connection line after the client
    /// ended: the idle timeout (a client that was killed sent no
    /// CONNECTION_CLOSE) plus a margin of min(3 s, idle timeout).
    pub fn server_line_wait(&self) -> Duration {
        let idle = Duration::from_millis(self.idle_ms);
        idle + idle.min(Duration::from_secs(3))
    }

    /// The reference row (canonical label).
    pub fn reference_row(&self) -> Option<&str> {
        self.reference
            .as_deref()
            .or(self.rows.first().map(String::as_str))
    }

    /// The qlog directory of the run whose work directory is called
    /// `run_name` (created), if qlog is on.
    pub fn qlog_for(&self, run_name: &str) -> Result<Option<PathBuf>, String> {
        let Some(root) = &self.qlog_dir else {
            return Ok(None);
        };
        let d = root.join(run_name);
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        Ok(Some(d))
    }

    /// Whether the runner's time bound has passed.
    pub fn past_deadline(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }

    /// Whether a direction follows a trace (the tables then add the trace
    /// columns).
    pub fn traced(&self) -> bool {
        self.trace_down.is_some() || self.trace_up.is_some()
    }

    /// The trace offset of run `run`: `trace_offsets` cycled, 0 without.
    pub fn trace_offset(&self, run: usize) -> Duration {
        match self.trace_offsets.len() {
            0 => Duration::ZERO,
            n => self.trace_offsets[run % n],
        }
    }
}

/// Where `--trace NAME` and `bench-cellular` look for traces: relative to
/// the current directory (the repository root under make).
pub const DEFAULT_TRACE_DIR: &str = "../shared/traces";

/// `NAME.down` and `NAME.up`: `name` as a path prefix if both exist, else
/// as a trace name in `dir`.
pub fn resolve_trace(name: &str, dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let pair = |prefix: &Path| {
        let f = |ext: &str| PathBuf::from(format!("{}.{ext}", prefix.display()));
        let (d, u) = (f("down"), f("up"));
        (d.is_file() && u.is_file()).then_some((d, u))
    };
    if let Some(p) = pair(Path::new(name)) {
        return Ok(p);
    }
    if !dir.is_dir() {
        return Err(format!(
            "trace '{name}': no {name}.down/.up, and the trace directory {} does not exist",
            dir.display()
        ));
    }
    pair(&dir.join(name)).ok_or_else(|| {
        format!(
            "trace '{name}': neither {name}.down/.up nor {}.down/.up exist",
            dir.join(name).display()
        )
    })
}

/// Parses a comma-separated list of durations (a bare number is seconds).
pub fn parse_offsets(name: &str, v: &str) -> Result<Vec<Duration>, String> {
    let d: Vec<Duration> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| parse_duration_with(s, false).map_err(|e| format!("{name}: {e}")))
        .collect::<Result<_, _>>()?;
    if d.is_empty() {
        return Err(format!("{name}: empty list"));
    }
    Ok(d)
}

/// The matrix defaults (what `make demo` runs).
pub const DEFAULT_ROWS: &str = "hybrid,cubic+nc=off,bbr2+nc=off,reno+nc=off,hybrid+nc=off";
/// The matrix's default losses.
pub const DEFAULT_LOSS: &str = "0,0.05,0.1";

/// The matrix's defaults; the subcommands start from them.
pub(crate) fn defaults(exe_dir: &Path) -> Options {
    Options {
        rows: parse_rows(DEFAULT_ROWS).expect("valid default rows"),
        reference: None,
        loss: parse_loss_list(DEFAULT_LOSS).expect("valid default losses"),
        size: 5_000_000,
        stream: None,
        stamped: false,
        direct: false,
        rate_bps: 20_000_000,
        rtt: Duration::from_millis(40),
        buffer: "bdp".into(),
        loss_position: "after".into(),
        seed: 1,
        spin: None,
        no_realtime: false,
        runs: 3,
        timeout: Duration::from_secs(10),
        idle_ms: 5_000,
        tools: Tools {
            bin_dir: exe_dir.to_path_buf(),
            ..Default::default()
        },
        linkem: PathBuf::new(),
        json: None,
        markdown: false,
        per_run: false,
        keep: false,
        compete: None,
        stagger: Duration::ZERO,
        flow_rtt: Vec::new(),
        trace_down: None,
        trace_up: None,
        trace_offsets: vec![Duration::ZERO],
        qlog_dir: None,
        deadline: None,
    }
}

/// Parses a comma-separated list of flow specs into canonical labels.
pub fn parse_rows(v: &str) -> Result<Vec<String>, String> {
    let rows: Vec<String> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| FlowSpec::parse(s).map(|f| f.label()))
        .collect::<Result<_, _>>()?;
    if rows.is_empty() {
        return Err("empty list of rows".into());
    }
    let mut seen = Vec::new();
    for r in &rows {
        if seen.contains(r) {
            return Err(format!("row '{r}' given twice"));
        }
        seen.push(r.clone());
    }
    Ok(rows)
}

/// Parses one `--loss` value: a comma-separated list of probabilities, or
/// one linkem spec if it contains ':'.
pub fn parse_loss_list(v: &str) -> Result<Vec<LossCase>, String> {
    if v.contains(':') {
        Ok(vec![LossCase::parse(v.trim())?])
    } else {
        v.split(',').map(|s| LossCase::parse(s.trim())).collect()
    }
}

pub(crate) fn parse_size(name: &str, v: &str) -> Result<u64, String> {
    match parse_buffer(v).map_err(|e| format!("{name}: {e}"))? {
        BufferSpec::Bytes(b) if b > 0 => Ok(b),
        _ => Err(format!("{name}: '{v}' is not a positive byte count")),
    }
}

pub(crate) fn parse_stream(v: &str) -> Result<String, String> {
    let (rate, dur) = v
        .split_once('/')
        .ok_or_else(|| format!("--stream: '{v}' is not RATE/DURATION (e.g. 8mbit/20s)"))?;
    parse_rate(rate)
        .map_err(|e| format!("--stream: {e}"))?
        .ok_or("--stream: the rate must be finite")?;
    if parse_duration_with(dur, false)
        .map_err(|e| format!("--stream: {e}"))?
        .is_zero()
    {
        return Err("--stream: the duration must be > 0".into());
    }
    Ok(v.to_string())
}

/// Splits `--name=value` / `--name value` pairs; boolean flags get no value.
pub(crate) struct ArgIter<I: Iterator<Item = String>> {
    it: I,
}

const BOOL_FLAGS: [&str; 7] = [
    "--markdown",
    "--stamped",
    "--keep",
    "--no-realtime",
    "--per-run",
    "--direct",
    "--help",
];

impl<I: Iterator<Item = String>> ArgIter<I> {
    pub(crate) fn new(it: I) -> Self {
        ArgIter { it }
    }

    /// The next `(name, value)`; an error if a value is missing.
    pub(crate) fn next(&mut self) -> Option<Result<(String, String), String>> {
        let arg = self.it.next()?;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let name = if name == "-h" { "--help".into() } else { name };
        if BOOL_FLAGS.contains(&name.as_str()) {
            return Some(Ok((name, String::new())));
        }
        Some(match inline.or_else(|| self.it.next()) {
            Some(v) => Ok((name, v)),
            None => Err(format!("option {name} needs a value")),
        })
    }
}

/// Options the matrix and the subcommands accept: the link, the tools,
/// seeds, output. `Ok(false)` if `name` is not one of them.
pub(crate) fn common_flag(
    o: &mut Options,
    linkem: &mut Option<PathBuf>,
    quic_go: &mut Option<PathBuf>,
    quinn: &mut Option<PathBuf>,
    name: &str,
    v: String,
) -> Result<bool, String> {
    let ctx = |e: String| format!("{name}: {e}");
    match name {
        "--keep" => o.keep = true,
        "--markdown" => o.markdown = true,
        "--no-realtime" => o.no_realtime = true,
        "--per-run" => o.per_run = true,
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
        "--spin" => {
            crate::units::parse_duration(&v).map_err(ctx)?;
            o.spin = Some(v);
        }
        "--idle-timeout" => match v.parse::<u64>() {
            Ok(ms) if ms > 0 => o.idle_ms = ms,
            _ => {
                return Err(format!(
                    "--idle-timeout: '{v}' is not a positive number of ms"
                ))
            }
        },
        "--bin-dir" => o.tools.bin_dir = PathBuf::from(v),
        "--linkem" => *linkem = Some(PathBuf::from(v)),
        "--quic-go-peer" => *quic_go = Some(PathBuf::from(v)),
        "--quinn-peer" => *quinn = Some(PathBuf::from(v)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Comma-separated, non-empty, without repeats.
pub(crate) fn parse_list(name: &str, v: &str) -> Result<Vec<String>, String> {
    let items: Vec<String> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if items.is_empty() {
        return Err(format!("{name}: empty list"));
    }
    for (i, x) in items.iter().enumerate() {
        if items[..i].contains(x) {
            return Err(format!("{name}: '{x}' given twice"));
        }
    }
    Ok(items)
}

pub(crate) fn parse_runs(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("--runs: '{v}' is not a positive integer")),
    }
}

pub(crate) fn parse_secs(name: &str, v: &str) -> Result<Duration, String> {
    let t = parse_duration_with(v, false).map_err(|e| format!("{name}: {e}"))?;
    if t.is_zero() {
        return Err(format!("{name} must be > 0"));
    }
    Ok(t)
}

/// Fills the tool paths that were not given.
pub(crate) fn finish_tools(
    o: &mut Options,
    exe_dir: &Path,
    linkem: Option<PathBuf>,
    quic_go: Option<PathBuf>,
    quinn: Option<PathBuf>,
) {
    o.tools.quic_go_peer = quic_go.unwrap_or_else(|| default_quic_go_peer(&o.tools.bin_dir));
    o.tools.quinn_peer = quinn.unwrap_or_else(|| default_quinn_peer(&o.tools.bin_dir));
    o.linkem = linkem.unwrap_or_else(|| {
        let in_bin = o.tools.bin_dir.join("linkem");
        if in_bin.exists() {
            in_bin
        } else {
            exe_dir.join("linkem")
        }
    });
}

pub(crate) fn check_reference(reference: &Option<String>, rows: &[String]) -> Result<(), String> {
    match reference {
        Some(r) if !rows.contains(r) => Err(format!(
            "--reference: '{r}' is not one of the rows ({})",
            rows.join(", ")
        )),
        _ => Ok(()),
    }
}

/// `--reference ROW`: the row's canonical label.
pub(crate) fn parse_reference(v: &str) -> Result<String, String> {
    Ok(FlowSpec::parse(v)
        .map_err(|e| format!("--reference: {e}"))?
        .label())
}

/// The argument loop of the matrix and of the subcommands. Each flag goes
/// first to `own(target, name, value)`, which returns `Ok(false)` for a
/// flag it does not know, then to the common flags of `base(target)`; an
/// unknown flag is an error pointing at `cmd`'s `--help` (`cmd` is empty
/// for the matrix). Returns `Ok(false)` if `--help` was asked for; fills
/// in the tool paths otherwise.
pub(crate) fn parse_flags<T>(
    args: impl Iterator<Item = String>,
    exe_dir: &Path,
    cmd: &str,
    target: &mut T,
    base: fn(&mut T) -> &mut Options,
    mut own: impl FnMut(&mut T, &str, String) -> Result<bool, String>,
) -> Result<bool, String> {
    let (mut linkem, mut quic_go, mut quinn) = (None, None, None);
    let mut it = ArgIter::new(args);
    while let Some(a) = it.next() {
        let (name, v) = a?;
        if name == "--help" {
            return Ok(false);
        }
        if own(target, &name, v.clone())?
            || common_flag(
                base(target),
                &mut linkem,
                &mut quic_go,
                &mut quinn,
                &name,
                v,
            )?
        {
            continue;
        }
        return Err(if cmd.is_empty() {
            format!("unknown option '{name}' (see --help)")
        } else {
            format!("unknown {cmd} option '{name}' (see {cmd} --help)")
        });
    }
    finish_tools(base(target), exe_dir, linkem, quic_go, quinn);
    Ok(true)
}

/// `--compete`'s per-run cap unless `--timeout` is given: three times what
/// all flows' bytes need at the link rate, plus the staggers, and at least
/// the matrix's 10 s (two flows of 20 MB at 20 Mbit/s: 50 s).
pub fn compete_timeout(size: u64, flows: usize, rate_bps: u64, stagger: Duration) -> Duration {
    let need = (flows as f64 * size as f64 * 8.0 / rate_bps.max(1) as f64).min(3600.0);
    let cap = Duration::from_secs_f64(3.0 * need) + stagger * (flows as u32).saturating_sub(1);
    cap.max(Duration::from_secs(10))
}

/// Parses the matrix's arguments (without program name); `None` if
/// `--help` was asked for. `exe_dir` is the directory of the running
/// executable (default for `--bin-dir` and `linkem`).
pub fn parse_matrix(
    args: impl Iterator<Item = String>,
    exe_dir: &Path,
) -> Result<Option<Options>, String> {
    let mut o = defaults(exe_dir);
    let mut rows_given = false;
    let mut loss_given = false;
    let mut offsets_given = false;
    let mut timeout_given = false;
    let own = |o: &mut Options, name: &str, v: String| -> Result<bool, String> {
        match name {
            "--direct" => o.direct = true,
            "--stamped" => o.stamped = true,
            "--trace-down" => o.trace_down = Some(existing_file(name, &v)?),
            "--trace-up" => o.trace_up = Some(existing_file(name, &v)?),
            "--trace" => {
                let (d, u) = resolve_trace(&v, Path::new(DEFAULT_TRACE_DIR))
                    .map_err(|e| format!("--trace: {e}"))?;
                o.trace_down = Some(d);
                o.trace_up = Some(u);
            }
            "--trace-offsets" => {
                offsets_given = true;
                o.trace_offsets = parse_offsets(name, &v)?;
            }
            "--rows" | "--cc" => {
                rows_given = true;
                o.rows = parse_rows(&v).map_err(|e| format!("{name}: {e}"))?;
            }
            "--reference" => o.reference = Some(parse_reference(&v)?),
            "--loss" => {
                if !loss_given {
                    o.loss.clear();
                    loss_given = true;
                }
                o.loss.extend(parse_loss_list(&v)?);
            }
            "--size" => o.size = parse_size("--size", &v)?,
            "--stream" => o.stream = Some(parse_stream(&v)?),
            "--runs" => o.runs = parse_runs(&v)?,
            "--timeout" => {
                timeout_given = true;
                o.timeout = parse_secs("--timeout", &v)?;
            }
            "--compete" => {
                let pair: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
                let n = crate::compete::MAX_FLOWS;
                if !(2..=n).contains(&pair.len()) || pair.iter().any(|s| s.is_empty()) {
                    return Err(format!("--compete: '{v}' is not 2 to {n} flows A,B[,C...]"));
                }
                for s in &pair {
                    FlowSpec::parse(s).map_err(|e| format!("--compete: {e}"))?;
                }
                o.compete = Some(pair);
            }
            "--stagger" => {
                o.stagger = parse_duration_with(&v, false).map_err(|e| format!("--stagger: {e}"))?
            }
            "--flow-rtt" => {
                o.flow_rtt = v
                    .split(',')
                    .map(|r| parse_duration_with(r.trim(), true))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--flow-rtt: {e}"))?
            }
            "--json" => o.json = Some(PathBuf::from(v)),
            "--qlog-dir" => o.qlog_dir = Some(PathBuf::from(v)),
            _ => return Ok(false),
        }
        Ok(true)
    };
    if !parse_flags(args, exe_dir, "", &mut o, |o| o, own)? {
        return Ok(None);
    }
    if let Some(pair) = &o.compete {
        if rows_given {
            return Err("--rows/--cc and --compete are exclusive".into());
        }
        if o.stream.is_some() || o.direct || o.stamped {
            return Err("--stream, --stamped and --direct do not apply to --compete".into());
        }
        o.rows = pair.clone();
        o.reference = None;
        if !timeout_given {
            o.timeout = compete_timeout(o.size, pair.len(), o.rate_bps, o.stagger);
        }
        if o.traced() {
            return Err("--trace* does not apply to --compete".into());
        }
        if !o.flow_rtt.is_empty() {
            if o.flow_rtt.len() != pair.len() {
                return Err(format!(
                    "--flow-rtt: {} RTTs for {} flows",
                    o.flow_rtt.len(),
                    pair.len()
                ));
            }
            if let Some(r) = o.flow_rtt.iter().find(|r| **r < o.rtt) {
                return Err(format!(
                    "--flow-rtt: {} ms is below the link's --rtt ({} ms)",
                    r.as_millis(),
                    o.rtt.as_millis()
                ));
            }
        }
    } else if !o.stagger.is_zero() {
        return Err("--stagger needs --compete".into());
    } else if !o.flow_rtt.is_empty() {
        return Err("--flow-rtt needs --compete".into());
    }
    if o.stamped && o.stream.is_some() {
        return Err("--stamped and --stream are exclusive".into());
    }
    if offsets_given && !o.traced() {
        return Err("--trace-offsets needs --trace, --trace-down or --trace-up".into());
    }
    if o.direct && o.traced() {
        return Err("--direct has no emulator: no --trace*".into());
    }
    if o.direct {
        // No emulator: no loss, one (unnamed) loss setting.
        if loss_given && o.loss.iter().any(|l| l.mean != Some(0.0)) {
            return Err("--direct has no emulator: --loss must be 0".into());
        }
        o.loss = vec![LossCase::parse("0")?];
    }
    check_reference(&o.reference, &o.rows)?;
    Ok(Some(o))
}

fn existing_file(name: &str, v: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(v);
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!("{name}: {v} is not a file"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The matrix's options, `--help` as an error.
    fn parse_args(
        args: impl IntoIterator<Item = String>,
        exe_dir: &Path,
    ) -> Result<Options, String> {
        parse_matrix(args.into_iter(), exe_dir)?.ok_or_else(|| "help".to_string())
    }

    fn parse(s: &str) -> Options {
        parse_args(s.split_whitespace().map(String::from), Path::new("/x")).unwrap()
    }

    fn err(s: &str) -> String {
        parse_args(s.split_whitespace().map(String::from), Path::new("/x")).unwrap_err()
    }

    #[test]
    fn defaults_are_the_demo() {
        let o = parse("");
        assert_eq!(
            o.rows,
            [
                "hybrid",
                "cubic+nc=off",
                "bbr2+nc=off",
                "reno+nc=off",
                "hybrid+nc=off"
            ]
        );
        assert_eq!(o.reference_row(), Some("hybrid"));
        assert_eq!(
            o.loss.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
            ["0%", "5%", "10%"]
        );
        assert_eq!(o.loss[1].spec, "bernoulli:0.05");
        assert_eq!(o.size, 5_000_000);
        assert_eq!(o.path(), "/bytes/5000000");
        assert_eq!(o.runs, 3);
        assert_eq!(o.timeout, Duration::from_secs(10));
        assert_eq!(o.grace(), Duration::from_millis(2500));
        assert_eq!(o.server_line_wait(), Duration::from_secs(8));
        assert_eq!(
            parse("--idle-timeout 500").server_line_wait(),
            Duration::from_secs(1)
        );
        assert_eq!(o.rate_bps, 20_000_000);
        assert_eq!(o.rtt, Duration::from_millis(40));
        assert_eq!(o.tools.bin_dir, PathBuf::from("/x"));
        assert_eq!(o.linkem, PathBuf::from("/x/linkem"));
        assert_eq!(o.tools.quinn_peer, PathBuf::from("/peers/quinn-peer"));
        assert_eq!(err("--help"), "help");
        assert!(!o.traced());
        assert_eq!(o.trace_offset(5), Duration::ZERO);
    }

    #[test]
    fn options_and_errors() {
        let o = parse(
            "--cc reno --loss 2% --loss ge:0.01,0.3 --size 1MB --rate 10mbit --rtt 100 \
             --runs 5 --markdown --timeout 2.5 --per-run",
        );
        assert_eq!(o.rows, ["reno"]);
        assert_eq!(o.size, 1_000_000);
        assert_eq!(o.rtt, Duration::from_millis(100));
        assert_eq!(o.runs, 5);
        assert!(o.markdown && o.per_run);
        assert_eq!(o.timeout, Duration::from_millis(2500));
        assert_eq!(o.grace(), Duration::from_secs(1));
        assert_eq!(o.loss[0].mean, Some(0.02));
        assert_eq!(o.loss[1].spec, "ge:0.01,0.3");
        assert_eq!(o.loss.len(), 2);
        let o = parse(
            "--rows hybrid,quiche:cubic+nc=off,hybrid+nc=auto+mode=full --reference cubic+nc=off",
        );
        assert_eq!(o.rows, ["hybrid", "cubic+nc=off", "hybrid+mode=full"]);
        assert_eq!(o.reference_row(), Some("cubic+nc=off"));
        let o = parse("--stream 8mbit/20s --rows hybrid");
        assert_eq!(o.path(), "/stream/8mbit/20s");
        let o = parse("--stamped --size 3MB");
        assert_eq!(o.path(), "/stamped/3000000");
        for (row, path) in [
            ("hybrid", "/stamped/3000000"),
            ("quinn:bbr", "/stamped/3000000"),
            ("quic-go:cubic", "/bytes/3000000"),
            ("ngtcp2:cubic", "/bytes/3000000"),
        ] {
            assert_eq!(o.path_for(&FlowSpec::parse(row).unwrap()), path, "{row}");
        }
        let o = parse("--direct --rows hybrid,hybrid+nc=off");
        assert!(o.direct);
        assert_eq!(o.loss.len(), 1);
        for bad in [
            "--rate -1mbit",
            "--loss 1.5",
            "--runs 0",
            "--size 0",
            "--bogus 1",
            "--cc",
            "--rows hybrid,hybrid",
            "--rows hybrid+nc=bogus",
            "--rows hybrid --reference cubic",
            "--stream 8mbit",
            "--stream 8mbit/0s",
            "--stamped --stream 1mbit/1s",
            "--direct --loss 5%",
            "--timeout 0",
        ] {
            assert!(
                parse_args(bad.split_whitespace().map(String::from), Path::new("/x")).is_err(),
                "{bad}"
            );
        }
        assert!(err("--rows hybrid --reference cubic").contains("not one of the rows"));
    }

    #[test]
    fn trace_options() {
        let dir = std::env::temp_dir().join(format!("trace-opts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["a.down", "a.up", "b.down"] {
            std::fs::write(dir.join(f), "1\n").unwrap();
        }
        let a = dir.join("a");
        let d = |f: &str| dir.join(f).display().to_string();
        let o = parse(&format!(
            "--trace {} --trace-offsets 0,40s,80 --rows hybrid",
            a.display()
        ));
        assert_eq!(o.trace_down, Some(dir.join("a.down")));
        assert_eq!(o.trace_up, Some(dir.join("a.up")));
        assert!(o.traced());
        assert_eq!(
            (o.trace_offset(1), o.trace_offset(2), o.trace_offset(4)),
            (
                Duration::from_secs(40),
                Duration::from_secs(80),
                Duration::from_secs(40)
            )
        );
        // One direction only; the other keeps --rate.
        let o = parse(&format!("--trace-down {}", d("b.down")));
        assert_eq!((o.trace_down.is_some(), o.trace_up.is_none()), (true, true));
        assert_eq!(o.trace_offsets, [Duration::ZERO]);
        // By name in a directory; a prefix wins over the name.
        assert_eq!(
            resolve_trace("a", &dir).unwrap(),
            (dir.join("a.down"), dir.join("a.up"))
        );
        let e = resolve_trace("b", &dir).unwrap_err();
        assert!(e.contains("b.down/.up"), "{e}");
        let e = resolve_trace("a", Path::new("/nonexistent/traces")).unwrap_err();
        assert!(e.contains("/nonexistent/traces does not exist"), "{e}");
        for bad in [
            format!("--trace {}", dir.join("b").display()),
            format!("--trace-down {}", d("c.down")),
            "--trace-offsets 0,10s".to_string(),
            format!("--trace-down {} --trace-offsets x", d("b.down")),
            format!("--trace-down {} --trace-offsets ,", d("b.down")),
            format!("--trace-down {} --direct", d("b.down")),
            format!("--trace-up {} --compete a,b", d("a.up")),
        ] {
            assert!(
                parse_args(bad.split_whitespace().map(String::from), Path::new("/x")).is_err(),
                "{bad}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn compete_options() {
        let o = parse("--compete hybrid,cubic --stagger 2 --loss 0");
        assert_eq!(
            o.compete.as_deref(),
            Some(&["hybrid".to_string(), "cubic".into()][..])
        );
        assert_eq!(o.rows, ["hybrid", "cubic"]);
        assert_eq!(o.stagger, Duration::from_secs(2));
        let o = parse("--compete hybrid,cubic --flow-rtt 40,80ms");
        assert_eq!(o.flow_rtt, [40, 80].map(Duration::from_millis).to_vec());
        assert_eq!(
            parse("--compete a,b --stagger 500ms").stagger,
            Duration::from_millis(500)
        );
        assert_eq!(parse("").compete, None);
        // The cap follows the transfer unless --timeout is given; the
        // matrix keeps 10 s.
        let secs = |a: &str| parse(a).timeout.as_secs_f64();
        assert_eq!(secs("--compete a,b --size 20MB --stagger 2"), 50.0);
        assert_eq!(secs("--compete a,b,c,d --size 20MB"), 96.0);
        assert_eq!(secs("--compete a,b --size 1MB"), 10.0);
        assert_eq!(secs("--compete a,b --size 20MB --timeout 30"), 30.0);
        assert_eq!(secs("--size 20MB"), 10.0);
        assert_eq!(
            parse("--compete quinn:bbr,hybrid+nc=off").compete.unwrap()[0],
            "quinn:bbr"
        );
        for bad in [
            "--compete cubic",
            "--compete a,b,c,d,e,f,g,h,i",
            "--compete a,",
            "--compete a,b --cc cubic",
            "--stagger 1",
            "--compete a,b --stagger x",
            "--compete hybrid,ngtcp2:vegas",
            "--compete hybrid,foo:cubic",
            "--compete a,b --stream 1mbit/1s",
            "--compete a,b --stamped",
            "--flow-rtt 40,80",
            "--compete a,b --flow-rtt 40",
            "--compete a,b --flow-rtt 40,20",
        ] {
            assert!(
                parse_args(bad.split_whitespace().map(String::from), Path::new("/x")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn loss_case_labels_and_means() {
        let ge = LossCase::parse("ge:0.1,0.3").unwrap();
        assert!((ge.mean.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(ge.label, "GE 25% b3.3");
        let ge5 = LossCase::parse("ge:0.013158,0.25").unwrap();
        assert!((ge5.mean.unwrap() - 0.05).abs() < 1e-5);
        assert_eq!(ge5.label, "GE 5% b4");
        let full = LossCase::parse("ge:0.01,0.3,0.001,0.5").unwrap();
        assert_eq!(full.label, "ge:0.01,0.3,0.001,0.5");
        let s = LossCase::parse("schedule:0-1s=none;1s-2s=all").unwrap();
        assert_eq!(s.mean, None);
        assert_eq!(LossCase::parse("0.001").unwrap().label, "0.1%");
        assert_eq!(LossCase::parse("0.2").unwrap().label, "20%");
        assert_eq!(LossCase::parse("0").unwrap().label, "0%");
    }
}
