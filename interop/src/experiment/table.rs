//! Tables: rendering (plain or markdown), the per-cell summary tables of
//! the matrix and of `bench-e2e`, the per-run table and the list of failed
//! runs.
//!
//! A summary entry reads `median (min–max)` over the cell's runs (just the
//! value when they agree or there is one run); `>` marks a lower bound (a
//! capped run's time, and medians or ratios over one), `<` an upper bound,
//! `~` a ratio of two lower bounds.

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

/// The per-cell summary table.
pub fn format_cells(cells: &[Cell], layout: Layout, markdown: bool) -> String {
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
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for c in cells {
        let s = |x: &Option<Summary>, p: usize| fmt_summary(x.as_ref(), p);
        let kb = |x: &Option<Summary>| fmt_summary(scaled(x.as_ref(), 1e-3).as_ref(), 1);
        let row = match layout {
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
        table.push(row);
    }
    let text_cols = if layout == Layout::Cost { 1 } else { 2 };
    render(&table, markdown, text_cols, false)
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
        format!(
            "{} Mbit/s, RTT {} ms, buffer {}, loss both ways ({} the queue)",
            o.rate_bps as f64 / 1e6,
            o.rtt.as_millis(),
            o.buffer,
            o.loss_position
        )
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

/// The table of individual runs.
pub fn format_runs(rows: &[RunResult], markdown: bool) -> String {
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
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
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
        table.push(vec![
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
        ]);
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
        let md = format_cells(&cs, Layout::Bulk, true);
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
        let plain = format_cells(&cs, Layout::Short, false);
        let pl: Vec<&str> = plain.lines().collect();
        assert!(pl[0].starts_with("row "), "{plain}");
        assert!(pl[3].contains("1.05"), "{plain}"); // 4.2 / 4.0 against its own 0%
                                                    // Columns line up in plain text.
        let at = pl[0].find("loss").unwrap();
        assert!(pl[1..].iter().all(|l| l.chars().nth(at - 1) == Some(' ')));
        for layout in [Layout::Stream, Layout::Cost] {
            let t = format_cells(&cs, layout, true);
            assert_eq!(t.lines().count(), 6, "{t}");
        }
        let f = format_failures(&cs);
        assert_eq!(
            f,
            "- failed: cubic (no coding), 5%: run 0 (seed 0): x | y\n"
        );
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
        let md = format_runs(&rows, true);
        assert_eq!(md.lines().count(), 4);
        assert!(md.contains("| capped | >90.00 |"), "{md}");
        assert!(md.contains("capped / at 90 s"), "{md}");
        assert!(format_runs(&rows, false)
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("quinn bbr (BBRv1)"));
    }
}
