//! `nc-experiment bench-e2e`: the four end-to-end tables (bulk, short
//! flows, streaming, CPU cost), each a matrix of [`crate::experiment::matrix`],
//! then the target check of [`crate::experiment::targets`]. Writes the
//! markdown and a JSON document (every run, every cell, the targets) under
//! `--out`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::experiment::bench_options::{BenchOptions, TableKind};
use crate::experiment::matrix::{prepare_rows, run_matrix};
use crate::experiment::options::{parse_loss_list, parse_rows, Options};
use crate::experiment::run::RunResult;
use crate::experiment::stats::{cells, Cell};
use crate::experiment::table::{
    format_cells, format_failures, format_runs, link_description, Layout,
};
use crate::experiment::targets::{check, format_targets, Tables, Target, CODED, PLAIN};
use crate::peer::{FlowSpec, Stack};
use crate::units::parse_duration_with;

/// Rows of the bulk and short-flow tables.
pub const BULK_ROWS: &str = "hybrid,hybrid+nc=fixed:1.25,hybrid+nc=ctcp,hybrid+nc=von,\
hybrid+nc=fnc,cubic,hybrid+nc=off,cubic+nc=off,bbr2+nc=off,quinn:bbr";
/// Losses of the bulk table: Bernoulli, and Gilbert (mean 5 %, mean burst 4).
pub const BULK_LOSS: [&str; 2] = ["0,0.01,0.05,0.1,0.2", "ge:0.013158,0.25"];
/// Losses of the short-flow and streaming tables.
pub const SHORT_LOSS: &str = "0,0.05,0.2";
/// Rows of the streaming table.
pub const STREAM_ROWS: &str = "hybrid,hybrid+nc=off,cubic+nc=off";
/// Rows of the cost table: coded vs plain.
pub const COST_ROWS: &str = "hybrid,hybrid+nc=off";

/// One table to run: what, how (a matrix), and how to show it.
#[derive(Clone, Debug, Serialize)]
pub struct TablePlan {
    /// Which table.
    pub kind: TableKind,
    /// Heading.
    pub title: String,
    /// The matrix options (rows, losses, size or stream, runs, cap).
    pub opts: Options,
    /// Rows left out (e.g. foreign stacks in the streaming table), with why.
    pub skipped: Vec<String>,
}

/// The options of each requested table.
pub fn plan(b: &BenchOptions) -> Result<Vec<TablePlan>, String> {
    let mut out = Vec::new();
    for &kind in &b.tables {
        let mut o = b.base.clone();
        let mut skipped = Vec::new();
        let (rows, loss, runs, title) = match kind {
            TableKind::Bulk => {
                o.size = b.bulk_size;
                // Stamped chunks: the table adds the in-order delivery
                // delay, where coding wins (the quinn peer has them too).
                o.stamped = true;
                o.timeout = b.cap;
                let mut loss = parse_loss_list(BULK_LOSS[0])?;
                loss.extend(parse_loss_list(BULK_LOSS[1])?);
                (
                    BULK_ROWS,
                    Some(loss),
                    3,
                    format!("Bulk {}", fmt_size(b.bulk_size)),
                )
            }
            TableKind::Short => {
                o.size = b.short_size;
                o.stamped = true;
                o.timeout = Duration::from_secs(60);
                (
                    BULK_ROWS,
                    None,
                    5,
                    format!("Short flows {}", fmt_size(b.short_size)),
                )
            }
            TableKind::Stream => {
                o.stream = Some(b.stream.clone());
                let dur = b.stream.split_once('/').map_or("0", |(_, d)| d);
                o.timeout = parse_duration_with(dur, false)? + Duration::from_secs(30);
                (
                    STREAM_ROWS,
                    None,
                    3,
                    format!("Streaming /stream/{}", b.stream),
                )
            }
            TableKind::Cost => {
                o.size = b.cost_size;
                o.direct = true;
                o.timeout = Duration::from_secs(120);
                (
                    COST_ROWS,
                    None,
                    3,
                    format!("Cost {} on loopback", fmt_size(b.cost_size)),
                )
            }
        };
        o.rows = match (&b.rows, kind) {
            (Some(r), TableKind::Bulk | TableKind::Short | TableKind::Stream) => r.clone(),
            _ => parse_rows(rows)?,
        };
        if kind == TableKind::Stream {
            o.rows = stream_rows(&o.rows, &mut skipped)?;
        }
        o.loss = match (kind, &b.loss, loss) {
            (TableKind::Cost, _, _) => parse_loss_list("0")?,
            (_, Some(l), _) => l.clone(),
            (_, None, Some(l)) => l,
            (_, None, None) => parse_loss_list(SHORT_LOSS)?,
        };
        o.runs = b.runs.unwrap_or(runs);
        if o.reference.as_ref().is_some_and(|r| !o.rows.contains(r)) {
            o.reference = None;
        }
        if kind == TableKind::Cost {
            // The cost ratio is coded / plain.
            o.reference = Some(PLAIN.into());
        }
        out.push(TablePlan {
            kind,
            title,
            opts: o,
            skipped,
        });
    }
    Ok(out)
}

/// The rows of a streaming table: only our server has `/stream/`; the
/// others are added to `skipped`, with why. An error if none is left.
pub(crate) fn stream_rows(
    rows: &[String],
    skipped: &mut Vec<String>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for r in rows {
        if FlowSpec::parse(r).is_ok_and(|f| f.stack == Stack::Quiche) {
            out.push(r.clone());
        } else {
            skipped.push(format!("{r} (its server has no /stream/)"));
        }
    }
    if out.is_empty() {
        return Err("the streaming table has no rows of our stack".into());
    }
    Ok(out)
}

/// `10 MB`, `1.50 MB`.
pub(crate) fn fmt_size(b: u64) -> String {
    if b.is_multiple_of(1_000_000) {
        format!("{} MB", b / 1_000_000)
    } else {
        format!("{:.2} MB", b as f64 / 1e6)
    }
}

/// The caption under a table's heading.
pub fn caption(t: &TablePlan, took: Option<Duration>) -> String {
    let o = &t.opts;
    let title = |r: &str| FlowSpec::parse(r).map_or_else(|_| r.to_string(), |f| f.title());
    let reference = o.reference_row().map(title).unwrap_or_default();
    let seeds = if o.runs == 1 {
        format!("seed {}", o.seed)
    } else {
        format!("seeds {}–{}", o.seed, o.seed + o.runs as u64 - 1)
    };
    let link = link_description(o);
    let cap = crate::experiment::options::fmt_secs(o.timeout);
    let what = match t.kind {
        TableKind::Bulk | TableKind::Short => format!(
            "GET {} over {link}. Each run is capped at {cap} s: a capped run \
             counts with time \">{cap}\" and its partial goodput (client bytes / elapsed).",
            o.path()
        ),
        TableKind::Stream => format!(
            "GET {} over {link}; per-chunk delivery delay (client read time − server \
             write stamp) of each run, ms; runs capped at {cap} s.",
            o.path()
        ),
        TableKind::Cost => format!(
            "GET {} on loopback without linkem (client directly to server); CPU = user + \
             system seconds of server and client (getrusage of the reaped processes), per \
             10^6 body bytes.",
            o.path()
        ),
    };
    let mut s = format!(
        "{what} {} per cell ({seeds}; rows interleaved per run); median (min–max); \
         ratios are of medians, to {reference} at the same loss.",
        plural(o.runs, "run")
    );
    if !t.skipped.is_empty() {
        s += &format!(" Not run: {}.", t.skipped.join(", "));
    }
    if let Some(d) = took {
        s += &format!(" Took {}.", fmt_duration(d));
    }
    s
}

/// `1 row`, `3 rows`, `2 losses`.
pub(crate) fn plural(n: usize, word: &str) -> String {
    match (n, word.ends_with('s')) {
        (1, _) => format!("1 {word}"),
        (_, true) => format!("{n} {word}es"),
        _ => format!("{n} {word}s"),
    }
}

/// `42 s`, `12.3 min`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 120.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

/// The columns of a table kind.
pub(crate) fn layout(kind: TableKind) -> Layout {
    match kind {
        TableKind::Bulk => Layout::Bulk,
        TableKind::Short => Layout::Short,
        TableKind::Stream => Layout::Stream,
        TableKind::Cost => Layout::Cost,
    }
}

/// A finished table.
#[derive(Serialize)]
pub struct TableResult {
    /// The plan (options of the matrix).
    #[serde(flatten)]
    pub plan: TablePlan,
    /// Wall time, s.
    pub took_s: f64,
    /// Every run.
    pub results: Vec<RunResult>,
    /// Every cell.
    pub cells: Vec<Cell>,
}

/// The document written to `OUT/bench-e2e-TIME.json`.
#[derive(Serialize)]
pub struct BenchReport<'a> {
    /// UTC time the benchmark started, `YYYYMMDD-HHMMSS`.
    pub started: String,
    /// The options.
    pub options: &'a BenchOptions,
    /// The tables.
    pub tables: &'a [TableResult],
    /// The target check.
    pub targets: &'a [Target],
}

/// The markdown of one finished table.
pub fn format_table(t: &TableResult, per_run: bool) -> String {
    let mut out = format!(
        "### {}\n\n{}\n\n",
        t.plan.title,
        caption(&t.plan, Some(Duration::from_secs_f64(t.took_s)))
    );
    let traced = t.plan.opts.traced();
    out += &format_cells(&t.cells, layout(t.plan.kind), true, traced);
    if t.plan.kind == TableKind::Cost {
        out += &cost_ratio_line(&t.cells);
    }
    let f = format_failures(&t.cells);
    if !f.is_empty() {
        out += "\n";
        out += &f;
    }
    if per_run {
        out += "\n";
        out += &format_runs(&t.results, true, traced);
    }
    out
}

/// `CPU per MB, coded / plain: ...` under the cost table (empty without
/// both rows).
pub fn cost_ratio_line(cells: &[Cell]) -> String {
    let med = |row: &str| {
        cells
            .iter()
            .find(|c| c.row == row)
            .and_then(|c| c.cpu_per_mb.map(|s| (c.title.clone(), s.median.v)))
    };
    match (med(CODED), med(PLAIN)) {
        (Some((tc, c)), Some((tp, p))) if p > 0.0 => format!(
            "\nCPU per MB, coded / plain: **{:.2}** (medians: {tc} {c:.4} s/MB, {tp} {p:.4} s/MB)\n",
            c / p
        ),
        _ => String::new(),
    }
}

/// Runs the benchmark; returns the exit status (0, 1 if every run failed
/// or the output could not be written, 130 if interrupted).
pub fn run_bench(b: &BenchOptions, work: &Path, certs: &Path) -> Result<u8, String> {
    let plans = plan(b)?;
    for p in &plans {
        prepare_rows(&p.opts)?;
    }
    let started = utc_stamp(SystemTime::now());
    let mut doc = format!(
        "## bench-e2e {started} UTC\n\n{}\n\n",
        plans
            .iter()
            .map(|p| format!(
                "- {}: {} × {} × {}",
                p.title,
                plural(p.opts.rows.len(), "row"),
                plural(p.opts.loss.len(), "loss"),
                plural(p.opts.runs, "run")
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    print!("{doc}");
    let mut done: Vec<TableResult> = Vec::new();
    for p in plans {
        let t0 = Instant::now();
        let tag = format!("{} ", p.kind.name());
        let results = run_matrix(&p.opts, &work.join(p.kind.name()), certs, &tag);
        let cs = cells(&results, &p.opts.rows, &p.opts.loss, p.opts.reference_row());
        let t = TableResult {
            plan: p,
            took_s: t0.elapsed().as_secs_f64(),
            results,
            cells: cs,
        };
        let md = format_table(&t, b.base.per_run);
        println!("{md}");
        doc += &md;
        doc += "\n";
        done.push(t);
        if crate::experiment::process::check_interrupted().is_err() {
            break;
        }
    }
    let get = |k: TableKind| {
        done.iter()
            .find(|t| t.plan.kind == k)
            .map(|t| t.cells.as_slice())
    };
    let targets = check(&Tables {
        bulk: get(TableKind::Bulk),
        short: get(TableKind::Short),
        stream: get(TableKind::Stream),
        cost: get(TableKind::Cost),
        rtt_ms: b.base.rtt.as_secs_f64() * 1e3,
    });
    let tmd = format!("### Target check\n\n{}", format_targets(&targets));
    println!("{tmd}");
    doc += &tmd;
    let mut code = 0;
    match write_outputs(b, &started, &doc, &done, &targets) {
        Ok((j, m)) => eprintln!("nc-experiment: wrote {} and {}", j.display(), m.display()),
        Err(e) => {
            eprintln!("nc-experiment: error: {e}");
            code = 1;
        }
    }
    if crate::experiment::process::check_interrupted().is_err() {
        return Ok(130);
    }
    let all: Vec<&RunResult> = done.iter().flat_map(|t| &t.results).collect();
    if !all.is_empty()
        && all
            .iter()
            .all(|r| r.outcome == crate::experiment::run::Outcome::Failed)
    {
        code = 1;
    }
    Ok(code)
}

fn write_outputs(
    b: &BenchOptions,
    started: &str,
    md: &str,
    tables: &[TableResult],
    targets: &[Target],
) -> Result<(PathBuf, PathBuf), String> {
    std::fs::create_dir_all(&b.out).map_err(|e| format!("{}: {e}", b.out.display()))?;
    let json = b.out.join(format!("bench-e2e-{started}.json"));
    let mdp = b.out.join(format!("bench-e2e-{started}.md"));
    let text = serde_json::to_string_pretty(&BenchReport {
        started: started.into(),
        options: b,
        tables,
        targets,
    })
    .map_err(|e| e.to_string())?;
    std::fs::write(&json, text + "\n").map_err(|e| format!("{}: {e}", json.display()))?;
    std::fs::write(&mdp, md).map_err(|e| format!("{}: {e}", mdp.display()))?;
    Ok((json, mdp))
}

/// `YYYYMMDD-HHMMSS` (UTC) of `t`.
pub fn utc_stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::bench_options::parse_bench;

    fn bench(args: &str) -> BenchOptions {
        parse_bench(
            args.split_whitespace().map(String::from),
            Path::new("/t/release"),
        )
        .unwrap()
        .unwrap()
    }

    #[test]
    fn default_plan() {
        let p = plan(&bench("")).unwrap();
        assert_eq!(p.len(), 4);
        let bulk = &p[0].opts;
        assert_eq!(bulk.rows.len(), 10);
        assert_eq!(bulk.rows[0], "hybrid");
        assert_eq!(bulk.rows[9], "quinn:bbr");
        assert_eq!(
            bulk.loss
                .iter()
                .map(|l| l.label.as_str())
                .collect::<Vec<_>>(),
            ["0%", "1%", "5%", "10%", "20%", "GE 5% b4"]
        );
        assert_eq!(
            (bulk.size, bulk.runs, bulk.timeout),
            (10_000_000, 3, Duration::from_secs(90))
        );
        assert_eq!(bulk.path(), "/stamped/10000000");
        let short = &p[1].opts;
        assert_eq!(
            (short.size, short.runs, short.loss.len()),
            (1_000_000, 5, 3)
        );
        assert_eq!(short.rows, bulk.rows);
        let stream = &p[2].opts;
        assert_eq!(stream.path(), "/stream/8mbit/20s");
        assert_eq!(stream.rows, ["hybrid", "hybrid+nc=off", "cubic+nc=off"]);
        assert_eq!(stream.timeout, Duration::from_secs(50));
        let cost = &p[3].opts;
        assert!(cost.direct);
        assert_eq!((cost.size, cost.loss.len()), (300_000_000, 1));
        assert_eq!(cost.rows, ["hybrid", "hybrid+nc=off"]);
        assert_eq!(cost.reference_row(), Some("hybrid+nc=off"));
        let c = caption(&p[0], Some(Duration::from_secs(600)));
        assert!(c.contains("capped at 90 s"), "{c}");
        assert!(c.contains("seeds 1–3"), "{c}");
        assert!(c.contains("to coded+hybrid at the same loss"), "{c}");
        assert!(c.ends_with("Took 10.0 min."), "{c}");
    }

    #[test]
    fn overrides() {
        let p = plan(&bench(
            "--tables stream,bulk --runs 2 --loss 0,0.05 --rows hybrid,quinn:bbr --reference quinn:bbr --cap 30",
        ))
        .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].kind, TableKind::Stream);
        // quinn has no /stream/: left out of the streaming table, said so.
        assert_eq!(p[0].opts.rows, ["hybrid"]);
        assert_eq!(p[0].skipped.len(), 1);
        assert!(caption(&p[0], None).contains("Not run: quinn:bbr"));
        assert_eq!(p[0].opts.reference, None);
        assert_eq!(p[1].opts.reference.as_deref(), Some("quinn:bbr"));
        assert_eq!(p[1].opts.runs, 2);
        assert_eq!(p[1].opts.loss.len(), 2);
        assert_eq!(p[1].opts.timeout, Duration::from_secs(30));
        assert!(plan(&bench("--tables stream --rows quinn:bbr")).is_err());
    }

    #[test]
    fn stamps_and_sizes() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101-000000");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_393_445);
        assert_eq!(utc_stamp(t), "20261123-002405");
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "20000229-000000"
        );
        assert_eq!(fmt_size(10_000_000), "10 MB");
        assert_eq!(fmt_size(1_500_000), "1.50 MB");
        assert_eq!(fmt_duration(Duration::from_secs(42)), "42 s");
        assert_eq!(plural(1, "loss"), "1 loss");
        assert_eq!(plural(3, "loss"), "3 losses");
        assert_eq!(plural(2, "row"), "2 rows");
    }

    #[test]
    fn cost_ratio() {
        use crate::experiment::stats::summarize_exact;
        let mk = |row: &str, title: &str, v: &[f64]| Cell {
            row: row.into(),
            title: title.into(),
            cpu_per_mb: summarize_exact(v),
            ..Default::default()
        };
        let cs = [
            mk("hybrid", "coded+hybrid", &[0.012, 0.013, 0.011]),
            mk("hybrid+nc=off", "hybrid (no coding)", &[0.010]),
        ];
        assert_eq!(
            cost_ratio_line(&cs),
            "\nCPU per MB, coded / plain: **1.20** (medians: coded+hybrid 0.0120 s/MB, \
             hybrid (no coding) 0.0100 s/MB)\n"
        );
        assert_eq!(cost_ratio_line(&cs[..1]), "");
    }
}
