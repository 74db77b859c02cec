//! `nc-experiment bench-cellular`: bulk and streaming tables on replayed
//! cellular traces (one matrix of [`crate::experiment::matrix`] per trace
//! and buffer), a throughput-versus-queueing-delay scatter plot per trace,
//! then the target check of [`crate::experiment::cellular_targets`].
//! Writes the markdown, the SVG plots and a JSON document (every run,
//! every cell, the targets) under `--out`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::experiment::bench::{
    fmt_duration, fmt_size, format_table, plural, stream_rows, utc_stamp, TablePlan, TableResult,
};
use crate::experiment::bench_options::TableKind;
use crate::experiment::cellular_options::{CellularOptions, CELLULAR_ROWS, CELLULAR_STREAM_ROWS};
use crate::experiment::cellular_saved::SavedRuns;
use crate::experiment::cellular_targets::{check, BulkRuns};
use crate::experiment::matrix::{prepare_rows, run_matrix};
use crate::experiment::options::{fmt_secs, parse_rows, resolve_trace};
use crate::experiment::process::{check_interrupted, sanitize};
use crate::experiment::run::{Outcome, RunResult};
use crate::experiment::scatter::{svg, Point, Scatter};
use crate::experiment::stats::cells;
use crate::experiment::targets::{format_targets, Target};
use crate::trace::{Trace, OPPORTUNITY_BYTES};

/// A trace pair of the benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceInfo {
    /// Name (the file name without `.down`/`.up`).
    pub name: String,
    /// Downlink trace file.
    pub down: PathBuf,
    /// Uplink trace file.
    pub up: PathBuf,
    /// Mean capacity of the downlink, Mbit/s.
    pub down_mbps: f64,
    /// Mean capacity of the uplink, Mbit/s.
    pub up_mbps: f64,
    /// Period of the downlink trace, s.
    pub period_s: f64,
    /// Bulk download size: more than the downlink offers in any window of
    /// `--duration`.
    pub bulk_size: u64,
}

/// More bytes than a trace with `opportunities` per `period` can carry in
/// any window of length `d`: a window of k whole periods plus a rest holds
/// at most k + 1 periods' worth; plus 1 MB.
pub fn bytes_above_capacity(opportunities: u64, period: Duration, d: Duration) -> u64 {
    let p = period.as_millis().max(1);
    let periods = (d.as_millis() / p) as u64 + 1;
    periods * opportunities * OPPORTUNITY_BYTES + 1_000_000
}

/// Finds and reads the traces of `c` (names in `--trace-dir`, or path
/// prefixes).
pub fn load_traces(c: &CellularOptions) -> Result<Vec<TraceInfo>, String> {
    c.traces
        .iter()
        .map(|t| {
            let (down, up) =
                resolve_trace(t, &c.trace_dir).map_err(|e| format!("{e} (see --trace-dir)"))?;
            let (d, u) = (Trace::load(&down)?, Trace::load(&up)?);
            let name = Path::new(t)
                .file_name()
                .map_or_else(|| t.clone(), |n| n.to_string_lossy().into_owned());
            Ok(TraceInfo {
                name,
                down_mbps: d.mean_rate_bps() as f64 / 1e6,
                up_mbps: u.mean_rate_bps() as f64 / 1e6,
                period_s: d.period().as_secs_f64(),
                bulk_size: bytes_above_capacity(d.opportunities() as u64, d.period(), c.duration),
                down,
                up,
            })
        })
        .collect()
}

/// One table to run, on one trace.
#[derive(Clone, Debug, Serialize)]
pub struct CellularPlan {
    /// Trace name.
    pub trace: String,
    /// The table (its options carry the traces and the buffer).
    #[serde(flatten)]
    pub plan: TablePlan,
}

/// The tables of `c` on `traces`: per trace, the bulk table of each
/// buffer, then the streaming table on the first buffer.
pub fn plan(c: &CellularOptions, traces: &[TraceInfo]) -> Result<Vec<CellularPlan>, String> {
    let mut out = Vec::new();
    for tr in traces {
        for &kind in &c.tables {
            let buffers = match kind {
                TableKind::Stream => &c.buffers[..1],
                _ => &c.buffers[..],
            };
            for buffer in buffers {
                let mut o = c.base.clone();
                o.trace_down = Some(tr.down.clone());
                o.trace_up = Some(tr.up.clone());
                o.trace_offsets = c.offsets.clone();
                o.buffer = buffer.clone();
                o.loss = c.loss.clone();
                o.runs = c.runs;
                let mut skipped = Vec::new();
                let title = match kind {
                    TableKind::Stream => {
                        let rows = match &c.rows {
                            Some(r) => r.clone(),
                            None => parse_rows(CELLULAR_STREAM_ROWS)?,
                        };
                        o.rows = stream_rows(&rows, &mut skipped)?;
                        o.stream = Some(format!("{}/{}s", c.stream_rate, fmt_secs(c.duration)));
                        o.timeout = c.duration + Duration::from_secs(30);
                        format!("{}: streaming {}, buffer {buffer}", tr.name, o.path())
                    }
                    _ => {
                        o.rows = match &c.rows {
                            Some(r) => r.clone(),
                            None => parse_rows(CELLULAR_ROWS)?,
                        };
                        o.size = tr.bulk_size;
                        // Stamped chunks: the table adds the in-order
                        // delivery delay (quinn's server has them too).
                        o.stamped = true;
                        o.timeout = c.duration;
                        format!(
                            "{}: bulk for {} s, buffer {buffer}",
                            tr.name,
                            fmt_secs(c.duration)
                        )
                    }
                };
                if o.reference.as_ref().is_some_and(|r| !o.rows.contains(r)) {
                    o.reference = None;
                }
                out.push(CellularPlan {
                    trace: tr.name.clone(),
                    plan: TablePlan {
                        kind,
                        title,
                        opts: o,
                        skipped,
                    },
                });
            }
        }
    }
    Ok(out)
}

/// A finished table.
#[derive(Serialize)]
pub struct CellularTable {
    /// Trace name.
    pub trace: String,
    /// Plan, runs and cells.
    #[serde(flatten)]
    pub table: TableResult,
}

/// The document written to `OUT/bench-cellular-TIME.json`.
#[derive(Serialize)]
pub struct CellularReport<'a> {
    /// UTC time the benchmark started, `YYYYMMDD-HHMMSS`.
    pub started: String,
    /// The options.
    pub options: &'a CellularOptions,
    /// The traces.
    pub traces: &'a [TraceInfo],
    /// The tables.
    pub tables: &'a [CellularTable],
    /// The target check.
    pub targets: &'a [Target],
}

impl<'a> CellularReport<'a> {
    fn new(
        started: &str,
        options: &'a CellularOptions,
        traces: &'a [TraceInfo],
        tables: &'a [CellularTable],
        targets: &'a [Target],
    ) -> Self {
        CellularReport {
            started: started.to_string(),
            options,
            traces,
            tables,
            targets,
        }
    }
}

/// The start of the markdown: traces, tables, what the columns mean.
pub fn header(
    c: &CellularOptions,
    started: &str,
    traces: &[TraceInfo],
    plans: &[CellularPlan],
) -> String {
    let mut s = format!("## bench-cellular {started} UTC\n\n");
    for t in traces {
        s += &format!(
            "- trace {}: down {} (mean {:.2} Mbit/s), up {} (mean {:.2} Mbit/s), period {} s; \
             bulk request {}\n",
            t.name,
            t.down.display(),
            t.down_mbps,
            t.up.display(),
            t.up_mbps,
            fmt_secs(Duration::from_secs_f64(t.period_s)),
            fmt_size(t.bulk_size)
        );
    }
    for p in plans {
        let o = &p.plan.opts;
        s += &format!(
            "- {}: {} × {} × {}\n",
            p.plan.title,
            plural(o.rows.len(), "row"),
            plural(o.loss.len(), "loss"),
            plural(o.runs, "run")
        );
    }
    let d = fmt_secs(c.duration);
    s += &format!(
        "\nBulk runs request more than the trace can carry in {d} s, so every run is capped at \
         {d} s (\"capped\" in the runs column) and its goodput is the client's bytes / elapsed \
         time. util = goodput / the capacity the down trace offered from linkem's start until \
         the client exited; link util = UDP payload linkem handed to the client / that capacity \
         (a saturated link reads about 0.98: the trace's 1500-byte opportunities also carry IP \
         and UDP headers); qdelay = time packets spent at the down bottleneck (waiting + own \
         service), each run's mean and 95th percentile.\n\n"
    );
    s
}

/// The scatter plot of a trace's bulk runs: x = p95 queueing delay, y =
/// goodput; colour = row, shape = buffer, filled = loss-free. `None`
/// without a plottable run.
pub fn scatter(trace: &str, buffers: &[String], tables: &[&CellularTable]) -> Option<Scatter> {
    let mut s = Scatter {
        title: format!("{trace}: throughput vs queueing delay, one point per run"),
        x_label: "95th-percentile queueing delay at the down bottleneck, ms (log scale)".into(),
        y_label: "goodput, Mbit/s".into(),
        groups: buffers.iter().map(|b| format!("buffer {b}")).collect(),
        filled_open: ["loss 0".into(), "with loss".into()],
        ..Default::default()
    };
    for t in tables
        .iter()
        .filter(|t| t.trace == trace && t.table.plan.kind == TableKind::Bulk)
    {
        let group = buffers
            .iter()
            .position(|b| *b == t.table.plan.opts.buffer)
            .unwrap_or(0);
        for r in &t.table.results {
            let (Some(x), Some(y)) = (r.qdelay_p95_ms, r.goodput_mbps) else {
                continue;
            };
            if r.outcome == Outcome::Failed {
                continue;
            }
            let series = match s.series.iter().position(|n| *n == r.title) {
                Some(i) => i,
                None => {
                    s.series.push(r.title.clone());
                    s.series.len() - 1
                }
            };
            s.points.push(Point {
                series,
                group,
                filled: r.loss_p == Some(0.0),
                x,
                y,
            });
        }
    }
    (!s.points.is_empty()).then_some(s)
}

/// The markdown under a trace's scatter plot.
pub fn scatter_markdown(trace: &str, file: &str) -> String {
    format!(
        "![{trace}: throughput vs p95 queueing delay]({file})\n\n{trace}: one point per bulk \
         run; x = the run's 95th-percentile queueing delay at the down bottleneck (log scale), \
         y = goodput; colour = row, shape = buffer, filled = loss-free, open = with loss. \
         Better is up and to the left.\n"
    )
}

/// `bench-cellular-TIME-TRACE.svg`, the trace name reduced to a file
/// name (letters, digits, `-`, `_`, `.`).
fn svg_name(started: &str, trace: &str) -> String {
    let t: String = trace
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("bench-cellular-{started}-{t}.svg")
}

/// Runs the benchmark; returns the exit status (0, 1 if every run failed
/// or the output could not be written, 130 if interrupted).
pub fn run_cellular(c: &CellularOptions, work: &Path, certs: &Path) -> Result<u8, String> {
    let traces = load_traces(c)?;
    let plans = plan(c, &traces)?;
    let saved = if c.from.is_empty() {
        for p in &plans {
            prepare_rows(&p.plan.opts)?;
        }
        None
    } else {
        Some(SavedRuns::load(&c.from)?)
    };
    let started = utc_stamp(SystemTime::now());
    let mut doc = header(c, &started, &traces, &plans);
    if let Some(s) = &saved {
        doc += &format!(
            "Rebuilt from the runs saved in {}{}.\n\n",
            c.from
                .iter()
                .map(|f| format!("`{}`", f.display()))
                .collect::<Vec<_>>()
                .join(", "),
            if s.replaced > 0 {
                format!(
                    " ({} replaced by a later report)",
                    plural(s.replaced, "run")
                )
            } else {
                String::new()
            }
        );
    }
    print!("{doc}");
    let mut done: Vec<CellularTable> = Vec::new();
    let mut svgs: Vec<(String, String)> = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        let t0 = Instant::now();
        let tag = sanitize(&format!(
            "{}-{}-{}",
            p.trace,
            p.plan.kind.name(),
            p.plan.opts.buffer
        ));
        let o = &p.plan.opts;
        let mut took_s = None;
        let results = match &saved {
            None => run_matrix(o, &work.join(&tag), certs, &format!("{tag} ")),
            Some(s) => {
                let t = s.table(&p.trace, p.plan.kind, o)?;
                if !t.missing.is_empty() {
                    let note = format!(
                        "{}: no saved run for {}\n\n",
                        p.plan.title,
                        t.missing.join(", ")
                    );
                    eprint!("nc-experiment: {note}");
                    doc += &note;
                }
                took_s = Some(t.took_s);
                t.runs
            }
        };
        let cs = cells(&results, &o.rows, &o.loss, o.reference_row());
        let t = CellularTable {
            trace: p.trace.clone(),
            table: TableResult {
                plan: p.plan.clone(),
                took_s: took_s.unwrap_or_else(|| t0.elapsed().as_secs_f64()),
                results,
                cells: cs,
            },
        };
        let md = format_table(&t.table, c.base.per_run);
        println!("{md}");
        doc += &md;
        doc += "\n";
        done.push(t);
        if saved.is_none() && plans.get(i + 1).is_some() {
            // A run cut short (killed, machine restarted) keeps its finished
            // tables for --from; the last table writes everything below.
            let targets = check_tables(&done);
            let report = CellularReport::new(&started, c, &traces, &done, &targets);
            if let Err(e) = write_json(&c.out, &report) {
                eprintln!("nc-experiment: warning: {e}");
            }
        }
        let interrupted = check_interrupted().is_err();
        let trace_done = plans.get(i + 1).is_none_or(|n| n.trace != p.trace);
        if trace_done || interrupted {
            let mine: Vec<&CellularTable> = done.iter().filter(|t| t.trace == p.trace).collect();
            if let Some(s) = scatter(&p.trace, &c.buffers, &mine) {
                let file = svg_name(&started, &p.trace);
                let md = scatter_markdown(&p.trace, &file);
                println!("{md}");
                doc += &md;
                doc += "\n";
                svgs.push((file, svg(&s)));
            }
        }
        if interrupted {
            break;
        }
    }
    let targets = check_tables(&done);
    let tmd = format!("### Target check\n\n{}", format_targets(&targets));
    println!("{tmd}");
    doc += &tmd;
    let took: f64 = done.iter().map(|t| t.table.took_s).sum();
    eprintln!(
        "nc-experiment: bench-cellular took {}",
        fmt_duration(Duration::from_secs_f64(took))
    );
    let mut code = 0;
    let report = CellularReport::new(&started, c, &traces, &done, &targets);
    match write_outputs(&c.out, &report, &doc, &svgs) {
        Ok(files) => eprintln!("nc-experiment: wrote {}", files.join(", ")),
        Err(e) => {
            eprintln!("nc-experiment: error: {e}");
            code = 1;
        }
    }
    if check_interrupted().is_err() {
        return Ok(130);
    }
    let all: Vec<&RunResult> = done.iter().flat_map(|t| &t.table.results).collect();
    if !all.is_empty() && all.iter().all(|r| r.outcome == Outcome::Failed) {
        code = 1;
    }
    Ok(code)
}

/// The target check over the finished bulk tables.
fn check_tables(done: &[CellularTable]) -> Vec<Target> {
    let bulk: Vec<BulkRuns> = done
        .iter()
        .filter(|t| t.table.plan.kind == TableKind::Bulk)
        .map(|t| BulkRuns {
            trace: &t.trace,
            buffer: &t.table.plan.opts.buffer,
            results: &t.table.results,
        })
        .collect();
    check(&bulk)
}

/// Writes `OUT/bench-cellular-TIME.json`; returns its path.
fn write_json(out: &Path, report: &CellularReport) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let p = out.join(format!("bench-cellular-{}.json", report.started));
    let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    std::fs::write(&p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(p.display().to_string())
}

fn write_outputs(
    out: &Path,
    report: &CellularReport,
    md: &str,
    svgs: &[(String, String)],
) -> Result<Vec<String>, String> {
    let stem = format!("bench-cellular-{}", report.started);
    let mut written = vec![write_json(out, report)?];
    let mut files = vec![(out.join(format!("{stem}.md")), md.to_string())];
    files.extend(svgs.iter().map(|(n, s)| (out.join(n), s.clone())));
    for (p, text) in files {
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        written.push(p.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::cellular_options::parse_cellular;
    use crate::experiment::lines::Delivery;

    fn opts(args: &str) -> CellularOptions {
        parse_cellular(args.split_whitespace().map(String::from), Path::new("/x"))
            .unwrap()
            .unwrap()
    }

    fn trace(name: &str) -> TraceInfo {
        TraceInfo {
            name: name.into(),
            down: PathBuf::from(format!("/t/{name}.down")),
            up: PathBuf::from(format!("/t/{name}.up")),
            down_mbps: 5.03,
            up_mbps: 5.95,
            period_s: 140.0,
            bulk_size: 88_982_500,
        }
    }

    #[test]
    fn sizes_above_capacity() {
        // Verizon down: 58,655 opportunities in 140 s; 60 s fit in one period.
        let p = Duration::from_secs(140);
        assert_eq!(
            bytes_above_capacity(58_655, p, Duration::from_secs(60)),
            58_655 * 1500 + 1_000_000
        );
        assert_eq!(
            bytes_above_capacity(10, p, Duration::from_secs(300)),
            3 * 10 * 1500 + 1_000_000
        );
    }

    #[test]
    fn default_plan() {
        let c = opts("");
        let p = plan(&c, &[trace("V"), trace("T")]).unwrap();
        // Per trace: bulk at 100p and 1000p, then streaming at 100p.
        let what: Vec<(&str, TableKind, &str)> = p
            .iter()
            .map(|x| (x.trace.as_str(), x.plan.kind, x.plan.opts.buffer.as_str()))
            .collect();
        assert_eq!(
            what,
            [
                ("V", TableKind::Bulk, "100p"),
                ("V", TableKind::Bulk, "1000p"),
                ("V", TableKind::Stream, "100p"),
                ("T", TableKind::Bulk, "100p"),
                ("T", TableKind::Bulk, "1000p"),
                ("T", TableKind::Stream, "100p"),
            ]
        );
        let bulk = &p[0].plan.opts;
        assert_eq!(
            bulk.rows,
            [
                "hybrid",
                "hybrid+nc=off",
                "cubic+nc=off",
                "bbr2+nc=off",
                "quinn:bbr"
            ]
        );
        assert_eq!(bulk.path(), "/stamped/88982500");
        assert_eq!(bulk.timeout, Duration::from_secs(60));
        assert_eq!(bulk.runs, 3);
        assert_eq!(bulk.trace_down, Some(PathBuf::from("/t/V.down")));
        assert_eq!(bulk.trace_up, Some(PathBuf::from("/t/V.up")));
        assert_eq!(bulk.trace_offset(2), Duration::from_secs(80));
        assert_eq!(bulk.trace_offset(3), Duration::ZERO);
        assert_eq!(bulk.loss.len(), 2);
        assert_eq!(p[0].plan.title, "V: bulk for 60 s, buffer 100p");
        let stream = &p[2].plan.opts;
        assert_eq!(stream.path(), "/stream/2mbit/60s");
        assert_eq!(stream.rows, ["hybrid", "hybrid+nc=off"]);
        assert_eq!(stream.timeout, Duration::from_secs(90));
        assert_eq!(
            p[2].plan.title,
            "V: streaming /stream/2mbit/60s, buffer 100p"
        );
        let h = header(&c, "20261123-000000", &[trace("V")], &p[..3]);
        assert!(
            h.contains("- trace V: down /t/V.down (mean 5.03 Mbit/s)"),
            "{h}"
        );
        assert!(h.contains("bulk request 88.98 MB"), "{h}");
        assert!(
            h.contains("- V: bulk for 60 s, buffer 1000p: 5 rows × 2 losses × 3 runs"),
            "{h}"
        );
    }

    #[test]
    fn shrunk_plan() {
        let c = opts(
            "--tables stream --buffers 50p,100p --rows hybrid,quinn:bbr --reference quinn:bbr \
             --duration 10s --stream-rate 1mbit --runs 1",
        );
        let p = plan(&c, &[trace("V")]).unwrap();
        assert_eq!(p.len(), 1);
        let o = &p[0].plan.opts;
        assert_eq!(
            (o.buffer.as_str(), o.path()),
            ("50p", "/stream/1mbit/10s".into())
        );
        // quinn has no /stream/: left out, said so, and not the reference.
        assert_eq!(o.rows, ["hybrid"]);
        assert_eq!(p[0].plan.skipped.len(), 1);
        assert_eq!(o.reference, None);
        assert!(plan(&opts("--tables stream --rows quinn:bbr"), &[trace("V")]).is_err());
    }

    #[test]
    fn missing_traces_name_the_directory() {
        let c = opts("--trace-dir /nonexistent/traces");
        let e = load_traces(&c).unwrap_err();
        assert!(e.contains("/nonexistent/traces"), "{e}");
        // A real pair given as a path prefix.
        let dir = std::env::temp_dir().join(format!("cellular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("x.down"), "0\n0\n5\n10\n").unwrap();
        std::fs::write(dir.join("x.up"), "10\n").unwrap();
        let c = opts(&format!(
            "--traces {} --duration 15s",
            dir.join("x").display()
        ));
        let t = load_traces(&c).unwrap();
        assert_eq!(t[0].name, "x");
        assert!((t[0].down_mbps - 4.0 * 1500.0 * 8.0 / 0.010 / 1e6).abs() < 1e-9);
        assert_eq!(t[0].period_s, 0.01);
        assert_eq!(t[0].bulk_size, 1501 * 4 * 1500 + 1_000_000);
        // By name in the directory.
        let c = opts(&format!("--trace-dir {} --traces y", dir.display()));
        let e = load_traces(&c).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(e.contains("y.down"), "{e}");
    }

    /// A bulk run on a trace as the runner would record it.
    fn run(row: &str, title: &str, loss: &str, k: usize, g: f64, q: (f64, f64)) -> RunResult {
        RunResult {
            row: row.into(),
            title: title.into(),
            loss: loss.into(),
            loss_p: Some(if loss == "0%" { 0.0 } else { 0.02 }),
            run: k,
            seed: 1 + k as u64,
            outcome: Outcome::Capped,
            completion_s: Some(60.0),
            goodput_mbps: Some(g),
            efficiency: Some(g / 5.0),
            trace_offset_s: Some(40.0 * k as f64),
            offered_mbps: Some(5.0),
            utilisation: Some(g / 5.0 * 1.05),
            qdelay_mean_ms: Some(q.0),
            qdelay_p95_ms: Some(q.1),
            queue_drops: Some(10 * k as u64),
            server_retrans_bytes: Some(120_000),
            ..Default::default()
        }
    }

    fn table(c: &CellularOptions, p: &CellularPlan, results: Vec<RunResult>) -> CellularTable {
        let o = &p.plan.opts;
        CellularTable {
            trace: p.trace.clone(),
            table: TableResult {
                plan: p.plan.clone(),
                took_s: 400.0,
                cells: cells(&results, &o.rows, &c.loss, o.reference_row()),
                results,
            },
        }
    }

    #[test]
    fn tables_and_scatter_from_fabricated_runs() {
        let c = opts("--traces V --buffers 100p,1000p --rows hybrid,bbr2+nc=off");
        let p = plan(&c, &[trace("V")]).unwrap();
        let mut results = Vec::new();
        for k in 0..3 {
            let f = 1.0 + k as f64 * 0.1;
            results.push(run(
                "hybrid",
                "coded+hybrid",
                "0%",
                k,
                4.6 * f,
                (18.0, 35.0 * f),
            ));
            results.push(run(
                "bbr2+nc=off",
                "bbr2 (no coding)",
                "0%",
                k,
                4.8 * f,
                (90.0, 160.0),
            ));
            results.push(run(
                "hybrid",
                "coded+hybrid",
                "2%",
                k,
                4.5 * f,
                (17.0, 33.0),
            ));
            results.push(run(
                "bbr2+nc=off",
                "bbr2 (no coding)",
                "2%",
                k,
                4.1 * f,
                (80.0, 150.0),
            ));
        }
        let bulk = table(&c, &p[0], results.clone());
        let md = format_table(&bulk.table, true);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "### V: bulk for 60 s, buffer 100p");
        assert!(lines[2].contains("trace V.down down, trace V.up up, RTT 40 ms, buffer 100p"));
        assert!(
            lines[2].contains("trace offset 0/40/80 s by run index"),
            "{}",
            lines[2]
        );
        assert_eq!(
            lines[4],
            "| row | loss | runs | time s | goodput Mbit/s | util | goodput ×ref | time ×ref | \
             repair ovh | srv retx kB | qdrops d+u | peak backlog kB | link util | \
             qdelay mean ms | qdelay p95 ms |"
        );
        assert_eq!(
            lines[6],
            "| coded+hybrid | 0% | 3 (3 capped) | >60.00 | 5.06 (4.60–5.52) | 1.012 \
             (0.920–1.104) | 1.00 | ~1.00 | - | 120.0 | 10 (0–20) | - | 1.063 (0.966–1.159) | \
             18.0 | 38.5 (35.0–42.0) |"
        );
        // The per-run table has the offsets.
        assert!(md.contains("| offset s |"), "{md}");
        assert!(
            md.contains("| bbr2 (no coding) | 2% | 2 | 3 | 80 | capped |"),
            "{md}"
        );
        println!("{md}");

        let mut stream = results[..2].to_vec();
        for r in &mut stream {
            r.delivery = Some(Delivery {
                chunks: 100,
                mean_ms: 70.0,
                p50_ms: 60.0,
                p95_ms: 150.0,
                p99_ms: 300.0,
                max_ms: 900.0,
            });
        }
        let st = table(&c, &p[2], stream);
        let smd = format_table(&st.table, false);
        assert!(
            smd.contains(
                "| row | loss | runs | delay mean ms | p50 ms | p95 ms | p99 ms | max ms | \
                 p99 ×ref | repair ovh | qdrops d+u | link util | qdelay mean ms | qdelay p95 ms |"
            ),
            "{smd}"
        );
        assert!(smd.contains("| coded+hybrid | 0% | 1 (1 capped) | 70.0 | 60.0 | 150.0 | 300.0 |"));
        println!("{smd}");

        let deep = table(&c, &p[1], results[..2].to_vec());
        let tables = [&bulk, &deep, &st];
        let s = scatter("V", &c.buffers, &tables).unwrap();
        assert_eq!(s.series, ["coded+hybrid", "bbr2 (no coding)"]);
        // 12 runs at 100p, 2 at 1000p; the streaming runs are not plotted.
        assert_eq!(s.points.len(), 14);
        assert_eq!(s.points.iter().filter(|p| p.group == 1).count(), 2);
        assert_eq!(s.points.iter().filter(|p| !p.filled).count(), 6);
        assert!(svg(&s).contains("buffer 1000p"));
        assert!(scatter("T", &c.buffers, &tables).is_none());
        assert_eq!(
            svg_name("20261123-000000", "Verizon-LTE-short"),
            "bench-cellular-20261123-000000-Verizon-LTE-short.svg"
        );
        assert!(
            scatter_markdown("V", &svg_name("20261123-000000", "V")).starts_with(
                "![V: throughput vs p95 queueing delay](bench-cellular-20261123-000000-V.svg)"
            )
        );

        let t = check(&[BulkRuns {
            trace: "V",
            buffer: "100p",
            results: &bulk.table.results,
        }]);
        println!("{}", format_targets(&t));
        assert_eq!(t.len(), 5);

        // What a run cut short after its first table leaves behind reads
        // back with --from.
        let dir = std::env::temp_dir().join(format!("qnc-cellular-json-{}", std::process::id()));
        let done = [bulk];
        let targets = check_tables(&done);
        assert_eq!(targets.len(), 5);
        let traces = [trace("V")];
        let report = CellularReport::new("20261123-000000", &c, &traces, &done, &targets);
        let path = write_json(&dir, &report).unwrap();
        assert!(
            path.ends_with("bench-cellular-20261123-000000.json"),
            "{path}"
        );
        let saved = SavedRuns::load(&[PathBuf::from(&path)]).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let back = saved.table("V", TableKind::Bulk, &p[0].plan.opts).unwrap();
        assert_eq!(back.runs.len(), 12);
        assert!(back.missing.is_empty(), "{:?}", back.missing);
        assert!(saved
            .table("V", TableKind::Bulk, &p[1].plan.opts)
            .unwrap()
            .runs
            .is_empty());
    }
}
