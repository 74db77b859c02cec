//! Tables: rendering (plain or markdown), the per-cell summary tables of
//! the matrix and of `bench-e2e`, the per-run table and the list of failed
//! runs.
//!
//! A summary entry reads `median (min–max)` over the cell's runs (just the
//! value when they agree or there is one run); `>` marks a lower bound (a
//! capped run's time, and medians or ratios over one), `<` an upper bound,
//! `~` a ratio of two lower bounds.
//!
//! With a capacity trace (`traced`), the efficiency column is labelled
//! `util` (goodput / offered capacity) and the tables add the link
//! utilisation and the down bottleneck's queue delay (mean and p95); the
//! streaming table also the p95 delivery delay. A bulk or short-flow table
//! whose runs measured delivery delays (`--stamped`) ends with their p50,
//! p95 and p99.

use crate::experiment::options::Options;
use crate::experiment::run::{Outcome, RunResult};
use crate::experiment::stats::{Cell, Summary, Value};

/// Renders rows (first = header); columns before `text_cols`, and the
/// last one if `last_text`, are left-aligned in markdown.
pub fn render(table: &[Vec<String>], markdown: bool, text_cols: usize, last_text: bool) -> String {
    let mut out = String::new();
    if markdown {
        for (i, row) in table.iter().enumerate() {
            out += &format!("| {} |\n", row.join(" | "));
            if i == 0 {
                let align: Vec<&str> = (0..row.len())
                    .map(|c| {
                        if c < text_cols || (last_text && c + 1 == row.len()) {
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
        let n = table.first().map_or(0, Vec::len);
        let widths: Vec<usize> = (0..n)
            .map(|c| {
                table
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in table {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    let pad = widths[c].saturating_sub(s.chars().count());
                    format!("{s}{}", " ".repeat(pad))
                })
                .collect();
            out += cells.join("  ").trim_end();
            out.push('\n');
        }
    }
    out
}

fn num(v: f64, prec: usize) -> String {
    format!("{v:.prec$}")
}

/// A bounded value: `>90.0`.
pub fn fmt_value(v: &Value, prec: usize) -> String {
    format!("{}{}", v.bound.prefix(), num(v.v, prec))
}

/// `median (min–max)`, or `median` when min = max; `-` for none.
pub fn fmt_summary(s: Option<&Summary>, prec: usize) -> String {
    let Some(s) = s else { return "-".into() };
    let med = fmt_value(&s.median, prec);
    let (lo, hi) = (fmt_value(&s.min, prec), fmt_value(&s.max, prec));
    if s.n == 1 || lo == hi {
        med
    } else {
        format!("{med} ({lo}–{hi})")
    }
}

/// A summary scaled by `k` (e.g. bytes to kB).
fn scaled(s: Option<&Summary>, k: f64) -> Option<Summary> {
    s.map(|s| {
        let f = |v: Value| Value { v: v.v * k, ..v };
        Summary {
            n: s.n,
            median: f(s.median),
            min: f(s.min),
            max: f(s.max),
        }
    })
}

fn ratio_str(v: Option<&Value>) -> String {
    v.map_or_else(|| "-".into(), |v| fmt_value(v, 2))
}

/// `3`, `3 (1 capped)`, `2/3 (1 failed)`, ...
pub fn runs_str(c: &Cell) -> String {
    let used = c.ok + c.capped;
    let base = if c.failed == 0 {
        used.to_string()
    } else {
        format!("{used}/{}", c.runs)
    };
    let mut notes = Vec::new();
    if c.capped > 0 {
        notes.push(format!("{} capped", c.capped));
    }
    if c.failed > 0 {
        notes.push(format!("{} failed", c.failed));
    }
    if notes.is_empty() {
        base
    } else {
        format!("{base} ({})", notes.join(", "))
    }
}

/// The columns a summary table shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Downloads over the link: time, goodput, efficiency, ratios, repair
    /// overhead, retransmissions, queue drops, peak backlog.
    Bulk,
    /// Short downloads: time first, against the reference and the row's
    /// own loss-free time.
    Short,
    /// Streams: delivery delays.
    Stream,
    /// CPU cost per MB.
    Cost,
}

/// The per-cell summary table; `traced`: the link followed a trace.
pub fn format_cells(cells: &[Cell], layout: Layout, markdown: bool, traced: bool) -> String {
    let head: &[&str] = match layout {
        Layout::Bulk => &[
            "row",
            "loss",
            "runs",
            "time s",
            "goodput Mbit/s",
            "eff",
            "goodput ×ref",
            "time ×ref",
            "repair ovh",
            "srv retx kB",
            "qdrops d+u",
            "peak backlog kB",
        ],
        Layout::Short => &[
            "row",
            "loss",
            "runs",
            "time s",
            "time ×ref",
            "time ×own 0%",
            "goodput Mbit/s",
            "repair ovh",
            "srv retx kB",
            "qdrops d+u",
        ],
        Layout::Stream => &[
            "row",
            "loss",
            "runs",
            "delay mean ms",
            "p50 ms",
            "p99 ms",
            "max ms",
            "p99 ×ref",
            "repair ovh",
            "qdrops d+u",
        ],
        Layout::Cost => &[
            "row",
            "runs",
            "MB",
            "server CPU s",
            "client CPU s",
            "CPU s/MB",
            "×ref",
            "goodput Mbit/s",
        ],
    };
    let trace_cols = traced && layout != Layout::Cost;
    let mut head: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    if trace_cols {
        for h in &mut head {
            if h == "eff" {
                *h = "util".into();
            }
        }
        if layout == Layout::Stream {
            head.insert(5, "p95 ms".into());
        }
        head.extend(["link util", "qdelay mean ms", "qdelay p95 ms"].map(String::from));
    }
    let delivery_cols = matches!(layout, Layout::Bulk | Layout::Short)
        && cells.iter().any(|c| c.delay_p50_ms.is_some());
    if delivery_cols {
        head.extend(["delivery p50 ms", "delivery p95 ms", "delivery p99 ms"].map(String::from));
    }
    let mut table: Vec<Vec<String>> = vec![head];
    for c in cells {
        let s = |x: &Option<Summary>, p: usize| fmt_summary(x.as_ref(), p);
        let kb = |x: &Option<Summary>| fmt_summary(scaled(x.as_ref(), 1e-3).as_ref(), 1);
        let mut row = match layout {
            Layout::Bulk => vec![
                c.title.clone(),
                c.loss.clone(),
                runs_str(c),
                s(&c.time_s, 2),
                s(&c.goodput_mbps, 2),
                s(&c.efficiency, 3),
                ratio_str(c.goodput_ratio.as_ref()),
                ratio_str(c.time_ratio.as_ref()),
                s(&c.repair_overhead, 3),
                kb(&c.retrans_bytes),
                s(&c.queue_drops, 0),
                kb(&c.peak_backlog_bytes),
            ],
            Layout::Short => vec![
                c.title.clone(),
                c.loss.clone(),
                runs_str(c),
                s(&c.time_s, 3),
                ratio_str(c.time_ratio.as_ref()),
                ratio_str(c.time_vs_lossless.as_ref()),
                s(&c.goodput_mbps, 2),
                s(&c.repair_overhead, 3),
                kb(&c.retrans_bytes),
                s(&c.queue_drops, 0),
            ],
            Layout::Stream => vec![
                c.title.clone(),
                c.loss.clone(),
                runs_str(c),
                s(&c.delay_mean_ms, 1),
                s(&c.delay_p50_ms, 1),
                s(&c.delay_p99_ms, 1),
                s(&c.delay_max_ms, 1),
                ratio_str(c.delay_p99_ratio.as_ref()),
                s(&c.repair_overhead, 3),
                s(&c.queue_drops, 0),
            ],
            Layout::Cost => vec![
                c.title.clone(),
                runs_str(c),
                fmt_summary(scaled(c.bytes.as_ref(), 1e-6).as_ref(), 0),
                s(&c.cpu_server_s, 2),
                s(&c.cpu_client_s, 2),
                s(&c.cpu_per_mb, 4),
                ratio_str(c.cpu_ratio.as_ref()),
                s(&c.goodput_mbps, 1),
            ],
        };
        if trace_cols {
            if layout == Layout::Stream {
                row.insert(5, s(&c.delay_p95_ms, 1));
            }
            row.extend([
                s(&c.utilisation, 3),
                s(&c.qdelay_mean_ms, 1),
                s(&c.qdelay_p95_ms, 1),
            ]);
        }
        if delivery_cols {
            row.extend([
                s(&c.delay_p50_ms, 1),
                s(&c.delay_p95_ms, 1),
                s(&c.delay_p99_ms, 1),
            ]);
        }
        table.push(row);
    }
    let text_cols = if layout == Layout::Cost { 1 } else { 2 };
    render(&table, markdown, text_cols, false)
}

/// The link of `o` in words: rate or traces (file names, and the offsets
/// by run index), RTT, buffer, loss position.
pub fn link_description(o: &Options) -> String {
    let rate = format!("{} Mbit/s", o.rate_bps as f64 / 1e6);
    let mut s = String::new();
    if o.traced() {
        let side = |t: &Option<std::path::PathBuf>| match t {
            Some(p) => format!(
                "trace {}",
                p.file_name().unwrap_or(p.as_os_str()).to_string_lossy()
            ),
            None => rate.clone(),
        };
        s += &format!("{} down, {} up", side(&o.trace_down), side(&o.trace_up));
    } else {
        s += &rate;
    }
    s += &format!(
        ", RTT {} ms, buffer {}, loss both ways ({} the queue)",
        o.rtt.as_millis(),
        o.buffer,
        o.loss_position
    );
    if o.traced() {
        let offs: Vec<String> = o
            .trace_offsets
            .iter()
            .map(|d| crate::experiment::options::fmt_secs(*d))
            .collect();
        s += &format!(", trace offset {} s by run index", offs.join("/"));
    }
    s
}

/// The caption of a matrix: what was fetched over which link, how many
/// runs, the cap, the reference row.
pub fn matrix_caption(o: &Options) -> String {
    let reference = o
        .reference_row()
        .map(|r| crate::peer::FlowSpec::parse(r).map_or_else(|_| r.to_string(), |f| f.title()))
        .unwrap_or_default();
    let link = if o.direct {
        "loopback without linkem".to_string()
    } else {
        link_description(o)
    };
    let runs = if o.runs == 1 {
        format!("1 run per cell (seed {})", o.seed)
    } else {
        format!(
            "{} runs per cell (seeds {}–{}, rows interleaved)",
            o.runs,
            o.seed,
            o.seed + o.runs as u64 - 1
        )
    };
    format!(
        "# GET {} over {link}; {runs}, each capped at {} s (capped: time \">cap\", partial \
         goodput); median (min–max); ratios to {reference} at the same loss",
        o.path(),
        crate::experiment::options::fmt_secs(o.timeout)
    )
}

/// One line per failed run (`- row, loss: run K (seed S): error`), or
/// nothing.
pub fn format_failures(cells: &[Cell]) -> String {
    let mut out = String::new();
    for c in cells {
        for e in &c.errors {
            out += &format!("- failed: {}, {}: {e}\n", c.title, c.loss);
        }
    }
    out
}

/// The table of individual runs; `traced`: with the trace offset, util
/// for eff, link utilisation and queue delays.
pub fn format_runs(rows: &[RunResult], markdown: bool, traced: bool) -> String {
    let head = [
        "row",
        "loss",
        "run",
        "seed",
        "outcome",
        "time s",
        "goodput Mbit/s",
        "eff",
        "repair ovh",
        "srv retx B",
        "emu lost d/u",
        "qdrop d/u",
        "peak backlog kB",
        "delay mean/p99 ms",
        "CPU srv/cli s",
        "note",
    ];
    let opt = |v: Option<f64>, prec: usize| v.map_or_else(|| "-".into(), |x| num(x, prec));
    let opt_u = |v: Option<u64>| v.map_or_else(|| "-".into(), |x| x.to_string());
    let mut head: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    // Trace columns go before `note`, after `seed` (offset) and `eff`.
    if traced {
        head[7] = "util".into();
        head.insert(4, "offset s".into());
        let n = head.len();
        head.splice(
            n - 1..n - 1,
            ["link util", "qdelay mean/p95 ms"].map(String::from),
        );
    }
    let mut table: Vec<Vec<String>> = vec![head];
    for r in rows {
        let (lost, qd, peak) = match &r.emulator {
            Some(s) => (
                format!("{}/{}", s.down.link.lost_packets, s.up.link.lost_packets),
                format!(
                    "{}/{}",
                    s.down.link.queue_drop_packets, s.up.link.queue_drop_packets
                ),
                opt(r.peak_backlog_bytes.map(|b| b as f64 / 1e3), 1),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let time = match (r.outcome, r.completion_s) {
            (Outcome::Capped, Some(t)) => format!(">{t:.2}"),
            (_, t) => opt(t, 2),
        };
        let outcome = match r.outcome {
            Outcome::Ok => "ok",
            Outcome::Capped => "capped",
            Outcome::Failed => "FAILED",
        };
        let delay = r.delivery.as_ref().map_or_else(
            || "-".into(),
            |d| format!("{:.1}/{:.1}", d.mean_ms, d.p99_ms),
        );
        let mut row = vec![
            r.title.clone(),
            r.loss.clone(),
            r.run.to_string(),
            r.seed.to_string(),
            outcome.into(),
            time,
            opt(r.goodput_mbps, 2),
            opt(r.efficiency, 3),
            opt(r.repair_overhead, 3),
            opt_u(r.server_retrans_bytes),
            lost,
            qd,
            peak,
            delay,
            format!("{}/{}", opt(r.cpu_server_s, 2), opt(r.cpu_client_s, 2)),
            r.error.clone().unwrap_or_default().replace('|', "/"),
        ];
        if traced {
            row.insert(4, opt(r.trace_offset_s, 0));
            let n = row.len();
            let qd = match (r.qdelay_mean_ms, r.qdelay_p95_ms) {
                (Some(m), Some(p)) => format!("{m:.1}/{p:.1}"),
                _ => "-".into(),
            };
            row.splice(n - 1..n - 1, [opt(r.utilisation, 3), qd]);
        }
        table.push(row);
    }
    render(&table, markdown, 2, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::options::LossCase;
    use crate::experiment::stats::{cells, summarize, summarize_exact, Bound, Obs};

    #[test]
    fn summaries() {
        assert_eq!(fmt_summary(None, 2), "-");
        let s = summarize_exact(&[4.4, 4.5, 4.71]).unwrap();
        assert_eq!(fmt_summary(Some(&s), 2), "4.50 (4.40–4.71)");
        assert_eq!(
            fmt_summary(Some(&summarize_exact(&[3.0]).unwrap()), 1),
            "3.0"
        );
        assert_eq!(
            fmt_summary(Some(&summarize_exact(&[3.0, 3.0]).unwrap()), 1),
            "3.0"
        );
        let capped = Obs {
            v: 90.0,
            bound: Bound::AtLeast,
        };
        let s = summarize(&[Obs::exact(40.0), capped, capped]).unwrap();
        assert_eq!(fmt_summary(Some(&s), 1), ">90.0 (40.0–>90.0)");
    }

    #[test]
    fn runs_column() {
        let mut c = Cell {
            runs: 3,
            ok: 3,
            ..Default::default()
        };
        assert_eq!(runs_str(&c), "3");
        c.ok = 2;
        c.capped = 1;
        assert_eq!(runs_str(&c), "3 (1 capped)");
        c.capped = 0;
        c.failed = 1;
        assert_eq!(runs_str(&c), "2/3 (1 failed)");
        c.ok = 1;
        c.capped = 1;
        assert_eq!(runs_str(&c), "2/3 (1 capped, 1 failed)");
    }

    fn sample() -> Vec<Cell> {
        let mk = |row: &str, title: &str, loss: &str, t: f64, failed: bool| RunResult {
            row: row.into(),
            title: title.into(),
            loss: loss.into(),
            outcome: if failed { Outcome::Failed } else { Outcome::Ok },
            error: failed.then(|| "x | y".to_string()),
            completion_s: Some(t),
            goodput_mbps: Some(80.0 / t),
            ..Default::default()
        };
        let results = vec![
            mk("hybrid", "coded+hybrid", "0%", 4.0, false),
            mk("cubic+nc=off", "cubic (no coding)", "0%", 5.0, false),
            mk("hybrid", "coded+hybrid", "5%", 4.2, false),
            mk("cubic+nc=off", "cubic (no coding)", "5%", 1.0, true),
        ];
        let rows = ["hybrid".to_string(), "cubic+nc=off".into()];
        let losses = [
            LossCase::parse("0").unwrap(),
            LossCase::parse("5%").unwrap(),
        ];
        cells(&results, &rows, &losses, None)
    }

    #[test]
    fn markdown_and_plain_tables() {
        let cs = sample();
        let md = format_cells(&cs, Layout::Bulk, true, false);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 6, "{md}");
        assert!(lines
            .iter()
            .all(|l| l.starts_with("| ") && l.ends_with(" |")));
        assert!(lines[1].starts_with("| --- | --- | ---: |"), "{}", lines[1]);
        assert!(
            lines[3].starts_with("| cubic (no coding) | 0% | 1 | 5.00 | 16.00 |"),
            "{}",
            lines[3]
        );
        assert!(lines[3].contains("| 1.25 |"), "{}", lines[3]);
        assert!(
            lines[5].starts_with("| cubic (no coding) | 5% | 0/1 (1 failed) | - |"),
            "{}",
            lines[5]
        );
        let plain = format_cells(&cs, Layout::Short, false, false);
        let pl: Vec<&str> = plain.lines().collect();
        assert!(pl[0].starts_with("row "), "{plain}");
        assert!(pl[3].contains("1.05"), "{plain}"); // 4.2 / 4.0 against its own 0%
                                                    // Columns line up in plain text.
        let at = pl[0].find("loss").unwrap();
        assert!(pl[1..].iter().all(|l| l.chars().nth(at - 1) == Some(' ')));
        for layout in [Layout::Stream, Layout::Cost] {
            let t = format_cells(&cs, layout, true, false);
            assert_eq!(t.lines().count(), 6, "{t}");
        }
        let f = format_failures(&cs);
        assert_eq!(
            f,
            "- failed: cubic (no coding), 5%: run 0 (seed 0): x | y\n"
        );
    }

    #[test]
    fn trace_columns_only_with_a_trace() {
        let mut results = Vec::new();
        for (k, q) in [(0, 30.0), (1, 50.0)] {
            results.push(RunResult {
                row: "hybrid".into(),
                title: "coded+hybrid".into(),
                loss: "0%".into(),
                run: k,
                seed: k as u64 + 1,
                completion_s: Some(60.0),
                goodput_mbps: Some(4.0 + k as f64),
                efficiency: Some(0.8 + 0.1 * k as f64),
                trace_offset_s: Some(40.0 * k as f64),
                utilisation: Some(0.85),
                qdelay_mean_ms: Some(q / 2.0),
                qdelay_p95_ms: Some(q),
                delivery: Some(crate::experiment::lines::Delivery {
                    p50_ms: q * 2.0,
                    p95_ms: q * 3.0,
                    p99_ms: q * 4.0,
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        let cs = cells(
            &results,
            &["hybrid".to_string()],
            &[LossCase::parse("0").unwrap()],
            None,
        );
        let plain = format_cells(&cs, Layout::Bulk, true, false);
        assert!(plain.starts_with("| row | loss | runs | time s | goodput Mbit/s | eff |"));
        assert!(!plain.contains("qdelay"));
        let traced = format_cells(&cs, Layout::Bulk, true, true);
        let l: Vec<&str> = traced.lines().collect();
        assert!(
            l[0].contains("| goodput Mbit/s | util | goodput ×ref |"),
            "{}",
            l[0]
        );
        // Runs with delivery delays (a stamped bulk) add them last.
        assert!(
            l[0].ends_with(
                "| link util | qdelay mean ms | qdelay p95 ms \
                 | delivery p50 ms | delivery p95 ms | delivery p99 ms |"
            ),
            "{}",
            l[0]
        );
        assert_eq!(l[0].matches('|').count(), l[1].matches('|').count());
        assert_eq!(l[0].matches('|').count(), l[2].matches('|').count());
        assert!(
            l[2].ends_with(
                "| 0.850 | 20.0 (15.0–25.0) | 40.0 (30.0–50.0) | 80.0 (60.0–100.0) \
                 | 120.0 (90.0–150.0) | 160.0 (120.0–200.0) |"
            ),
            "{}",
            l[2]
        );
        let unstamped: Vec<RunResult> = results
            .iter()
            .map(|r| RunResult {
                delivery: None,
                ..r.clone()
            })
            .collect();
        let cs2 = cells(
            &unstamped,
            &["hybrid".to_string()],
            &[LossCase::parse("0").unwrap()],
            None,
        );
        let t2 = format_cells(&cs2, Layout::Bulk, true, true);
        assert!(
            t2.lines().next().unwrap().ends_with("| qdelay p95 ms |"),
            "{t2}"
        );
        let stream = format_cells(&cs, Layout::Stream, true, true);
        assert!(stream.contains("| p50 ms | p95 ms | p99 ms |"), "{stream}");
        assert!(stream.contains("| 120.0 (90.0–150.0) |"), "{stream}");
        // The cost table has no link.
        assert!(!format_cells(&cs, Layout::Cost, true, true).contains("qdelay"));
        let runs = format_runs(&results, true, true);
        let r: Vec<&str> = runs.lines().collect();
        assert!(r[0].starts_with("| row | loss | run | seed | offset s | outcome |"));
        assert!(r[0].ends_with("| link util | qdelay mean/p95 ms | note |"));
        assert!(r[3].contains("| 1 | 2 | 40 | ok |"), "{}", r[3]);
        assert!(r[3].ends_with("| 0.850 | 25.0/50.0 |  |"), "{}", r[3]);
        assert!(!format_runs(&results, true, false).contains("offset"));
    }

    #[test]
    fn captions_with_and_without_traces() {
        let mut o = crate::experiment::options::parse_matrix(
            std::iter::empty(),
            std::path::Path::new("/x"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            link_description(&o),
            "20 Mbit/s, RTT 40 ms, buffer bdp, loss both ways (after the queue)"
        );
        o.trace_down = Some("/t/Verizon-LTE-short.down".into());
        o.trace_offsets = vec![
            std::time::Duration::ZERO,
            std::time::Duration::from_millis(40_500),
        ];
        assert_eq!(
            link_description(&o),
            "trace Verizon-LTE-short.down down, 20 Mbit/s up, RTT 40 ms, buffer bdp, loss both \
             ways (after the queue), trace offset 0/40.5 s by run index"
        );
        assert!(matrix_caption(&o).contains("over trace Verizon-LTE-short.down down"));
    }

    #[test]
    fn per_run_table() {
        let rows = vec![
            RunResult {
                title: "coded+hybrid".into(),
                loss: "5%".into(),
                outcome: Outcome::Capped,
                completion_s: Some(90.0),
                error: Some("capped | at 90 s".into()),
                ..Default::default()
            },
            RunResult {
                title: "quinn bbr (BBRv1)".into(),
                loss: "5%".into(),
                ..Default::default()
            },
        ];
        let md = format_runs(&rows, true, false);
        assert_eq!(md.lines().count(), 4);
        assert!(md.contains("| capped | >90.00 |"), "{md}");
        assert!(md.contains("capped / at 90 s"), "{md}");
        assert!(format_runs(&rows, false, false)
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("quinn bbr (BBRv1)"));
    }
}
