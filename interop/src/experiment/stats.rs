//! Statistics over runs: medians and ranges with capped (censored)
//! observations, ratios of medians, and the per-cell summaries the tables
//! print.
//!
//! A capped run's completion time is only a lower bound (`>T`). Summaries
//! sort observations by value (a capped time equals the cap, which is not
//! below any completed run's time) and carry whether the median, the
//! minimum and the maximum are such lower bounds. A median of an even
//! number of runs is the mean of the two middle values, a lower bound if
//! either is. Failed runs are not observations; the cell counts them.

use serde::{Deserialize, Serialize};

use crate::experiment::options::LossCase;
use crate::experiment::run::{Outcome, RunResult};

/// Whether a value is exact or a bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Exact.
    #[default]
    Exact,
    /// The true value is at least this (a capped run's time).
    AtLeast,
    /// The true value is at most this (a ratio over a lower bound).
    AtMost,
    /// Neither (a ratio of two lower bounds).
    Unsure,
}

impl Bound {
    /// `""`, `">"`, `"<"` or `"~"`.
    pub fn prefix(self) -> &'static str {
        match self {
            Bound::Exact => "",
            Bound::AtLeast => ">",
            Bound::AtMost => "<",
            Bound::Unsure => "~",
        }
    }

    fn join(a: Bound, b: Bound) -> Bound {
        match (a, b) {
            (Bound::Exact, x) | (x, Bound::Exact) => x,
            (x, y) if x == y => x,
            _ => Bound::Unsure,
        }
    }

    /// The bound of `a / b`.
    fn ratio(a: Bound, b: Bound) -> Bound {
        let inv = match b {
            Bound::AtLeast => Bound::AtMost,
            Bound::AtMost => Bound::AtLeast,
            x => x,
        };
        Bound::join(a, inv)
    }
}

/// One observation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obs {
    /// Value.
    pub v: f64,
    /// Exact or a lower bound.
    pub bound: Bound,
}

impl Obs {
    /// An exact observation.
    pub fn exact(v: f64) -> Obs {
        Obs {
            v,
            bound: Bound::Exact,
        }
    }
}

/// A bounded value: a median, a ratio.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Value {
    /// The value.
    pub v: f64,
    /// Exact or a bound.
    pub bound: Bound,
}

/// Median and range of a cell's observations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Observations.
    pub n: usize,
    /// Median.
    pub median: Value,
    /// Smallest.
    pub min: Value,
    /// Largest.
    pub max: Value,
}

/// Median and min–max of `obs` (non-finite values are ignored); `None`
/// without observations.
pub fn summarize(obs: &[Obs]) -> Option<Summary> {
    let mut o: Vec<Obs> = obs.iter().copied().filter(|x| x.v.is_finite()).collect();
    if o.is_empty() {
        return None;
    }
    // By value; at equal values exact ones first (a bound is "more").
    o.sort_by(|a, b| {
        a.v.total_cmp(&b.v)
            .then((a.bound != Bound::Exact).cmp(&(b.bound != Bound::Exact)))
    });
    let n = o.len();
    let median = if n % 2 == 1 {
        Value {
            v: o[n / 2].v,
            bound: o[n / 2].bound,
        }
    } else {
        let (a, b) = (o[n / 2 - 1], o[n / 2]);
        Value {
            v: (a.v + b.v) / 2.0,
            bound: Bound::join(a.bound, b.bound),
        }
    };
    let val = |x: Obs| Value {
        v: x.v,
        bound: x.bound,
    };
    Some(Summary {
        n,
        median,
        min: val(o[0]),
        max: val(o[n - 1]),
    })
}

/// [`summarize`] of exact values.
pub fn summarize_exact(v: &[f64]) -> Option<Summary> {
    summarize(&v.iter().map(|&x| Obs::exact(x)).collect::<Vec<_>>())
}

/// The ratio of two medians `a / b`, with its bound; `None` if `b` is not
/// positive.
pub fn ratio(a: &Summary, b: &Summary) -> Option<Value> {
    (b.median.v > 0.0).then(|| Value {
        v: a.median.v / b.median.v,
        bound: Bound::ratio(a.median.bound, b.median.bound),
    })
}

/// Everything the tables show about one (row, loss) cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Canonical flow spec.
    pub row: String,
    /// Readable row name.
    pub title: String,
    /// Loss label.
    pub loss: String,
    /// Mean loss rate, if constant.
    pub loss_p: Option<f64>,
    /// Runs attempted.
    pub runs: usize,
    /// Completed runs.
    pub ok: usize,
    /// Runs stopped at the cap (partial goodput; in the statistics).
    pub capped: usize,
    /// Failed runs (not in the statistics).
    pub failed: usize,
    /// `run K (seed S): error` of each failed run.
    pub errors: Vec<String>,
    /// Completion time, s (capped runs: lower bounds).
    pub time_s: Option<Summary>,
    /// Goodput, Mbit/s.
    pub goodput_mbps: Option<Summary>,
    /// goodput / (C·(1−p)); with a down trace, goodput / offered capacity.
    pub efficiency: Option<Summary>,
    /// Down trace: delivered UDP payload / offered capacity.
    pub utilisation: Option<Summary>,
    /// Mean time at the down bottleneck of each run, ms.
    pub qdelay_mean_ms: Option<Summary>,
    /// 95th percentile time at the down bottleneck of each run, ms.
    pub qdelay_p95_ms: Option<Summary>,
    /// Repair symbols / source symbols (server).
    pub repair_overhead: Option<Summary>,
    /// Server's retransmitted stream bytes.
    pub retrans_bytes: Option<Summary>,
    /// Emulator queue drops, both directions.
    pub queue_drops: Option<Summary>,
    /// Emulator peak backlog, bytes.
    pub peak_backlog_bytes: Option<Summary>,
    /// Per-run mean delivery delay, ms.
    pub delay_mean_ms: Option<Summary>,
    /// Per-run median delivery delay, ms.
    pub delay_p50_ms: Option<Summary>,
    /// Per-run 95th percentile delivery delay, ms.
    pub delay_p95_ms: Option<Summary>,
    /// Per-run 99th percentile delivery delay, ms.
    pub delay_p99_ms: Option<Summary>,
    /// Per-run largest delivery delay, ms.
    pub delay_max_ms: Option<Summary>,
    /// Server CPU seconds.
    pub cpu_server_s: Option<Summary>,
    /// Client CPU seconds.
    pub cpu_client_s: Option<Summary>,
    /// Server + client CPU seconds per MB.
    pub cpu_per_mb: Option<Summary>,
    /// Body bytes per run.
    pub bytes: Option<Summary>,
    /// Median goodput / the reference row's at the same loss.
    pub goodput_ratio: Option<Value>,
    /// Median time / the reference row's at the same loss.
    pub time_ratio: Option<Value>,
    /// Median CPU per MB / the reference row's.
    pub cpu_ratio: Option<Value>,
    /// Median p99 delivery delay / the reference row's at the same loss.
    pub delay_p99_ratio: Option<Value>,
    /// Median time / this row's own median at 0 % loss.
    pub time_vs_lossless: Option<Value>,
    /// Median efficiency / this row's own median at 0 % loss.
    pub efficiency_vs_lossless: Option<Value>,
}

/// A summary column of a [`Cell`], by name.
pub type Metric = (&'static str, fn(&Cell) -> Option<&Summary>);

impl Cell {
    /// The summary columns by name: what a scenario's plot can put on y.
    pub const METRICS: &'static [Metric] = &[
        ("time_s", |c| c.time_s.as_ref()),
        ("goodput_mbps", |c| c.goodput_mbps.as_ref()),
        ("efficiency", |c| c.efficiency.as_ref()),
        ("utilisation", |c| c.utilisation.as_ref()),
        ("qdelay_mean_ms", |c| c.qdelay_mean_ms.as_ref()),
        ("qdelay_p95_ms", |c| c.qdelay_p95_ms.as_ref()),
        ("repair_overhead", |c| c.repair_overhead.as_ref()),
        ("retrans_bytes", |c| c.retrans_bytes.as_ref()),
        ("queue_drops", |c| c.queue_drops.as_ref()),
        ("peak_backlog_bytes", |c| c.peak_backlog_bytes.as_ref()),
        ("delay_mean_ms", |c| c.delay_mean_ms.as_ref()),
        ("delay_p50_ms", |c| c.delay_p50_ms.as_ref()),
        ("delay_p95_ms", |c| c.delay_p95_ms.as_ref()),
        ("delay_p99_ms", |c| c.delay_p99_ms.as_ref()),
        ("delay_max_ms", |c| c.delay_max_ms.as_ref()),
        ("cpu_per_mb", |c| c.cpu_per_mb.as_ref()),
    ];

    /// The summary column `name`, if it is one and has values.
    pub fn metric(&self, name: &str) -> Option<&Summary> {
        Cell::METRICS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, f)| f(self))
    }
}

fn col(runs: &[&RunResult], f: impl Fn(&RunResult) -> Option<f64>) -> Option<Summary> {
    summarize_exact(&runs.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
}

/// Summarizes the runs of one cell (they should share row and loss).
pub fn cell(row: &str, loss: &LossCase, results: &[RunResult]) -> Cell {
    let mine: Vec<&RunResult> = results
        .iter()
        .filter(|r| r.row == row && r.loss == loss.label)
        .collect();
    let used: Vec<&RunResult> = mine
        .iter()
        .copied()
        .filter(|r| r.outcome != Outcome::Failed)
        .collect();
    let count = |o: Outcome| mine.iter().filter(|r| r.outcome == o).count();
    let times: Vec<Obs> = used
        .iter()
        .filter_map(|r| {
            r.completion_s.map(|v| Obs {
                v,
                bound: if r.outcome == Outcome::Capped {
                    Bound::AtLeast
                } else {
                    Bound::Exact
                },
            })
        })
        .collect();
    let d = |f: fn(&crate::experiment::lines::Delivery) -> f64| {
        col(&used, move |r| r.delivery.as_ref().map(f))
    };
    Cell {
        row: row.into(),
        title: mine
            .first()
            .map_or_else(|| row.to_string(), |r| r.title.clone()),
        loss: loss.label.clone(),
        loss_p: loss.mean,
        runs: mine.len(),
        ok: count(Outcome::Ok),
        capped: count(Outcome::Capped),
        failed: count(Outcome::Failed),
        errors: mine
            .iter()
            .filter(|r| r.outcome == Outcome::Failed)
            .map(|r| {
                format!(
                    "run {} (seed {}): {}",
                    r.run,
                    r.seed,
                    r.error.as_deref().unwrap_or("?")
                )
            })
            .collect(),
        time_s: summarize(&times),
        goodput_mbps: col(&used, |r| r.goodput_mbps),
        efficiency: col(&used, |r| r.efficiency),
        utilisation: col(&used, |r| r.utilisation),
        qdelay_mean_ms: col(&used, |r| r.qdelay_mean_ms),
        qdelay_p95_ms: col(&used, |r| r.qdelay_p95_ms),
        repair_overhead: col(&used, |r| r.repair_overhead),
        retrans_bytes: col(&used, |r| r.server_retrans_bytes.map(|b| b as f64)),
        queue_drops: col(&used, |r| r.queue_drops.map(|b| b as f64)),
        peak_backlog_bytes: col(&used, |r| r.peak_backlog_bytes.map(|b| b as f64)),
        delay_mean_ms: d(|x| x.mean_ms),
        delay_p50_ms: d(|x| x.p50_ms),
        delay_p95_ms: d(|x| x.p95_ms),
        delay_p99_ms: d(|x| x.p99_ms),
        delay_max_ms: d(|x| x.max_ms),
        cpu_server_s: col(&used, |r| r.cpu_server_s),
        cpu_client_s: col(&used, |r| r.cpu_client_s),
        cpu_per_mb: col(&used, RunResult::cpu_per_mb),
        bytes: col(&used, |r| r.bytes.map(|b| b as f64)),
        ..Default::default()
    }
}

/// The cells of a table, by loss then row (`rows` and `losses` in the
/// table's order), with ratios to `reference` (default: the first row) at
/// the same loss and to each row's own loss-free cell (loss 0).
pub fn cells(
    results: &[RunResult],
    rows: &[String],
    losses: &[LossCase],
    reference: Option<&str>,
) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for loss in losses {
        for row in rows {
            out.push(cell(row, loss, results));
        }
    }
    let reference = reference.or(rows.first().map(String::as_str));
    let snapshot = out.clone();
    let find = |row: &str, f: &dyn Fn(&Cell) -> bool| {
        snapshot.iter().find(|c| c.row == row && f(c)).cloned()
    };
    let r2 = |a: &Option<Summary>, b: &Option<Summary>| match (a, b) {
        (Some(a), Some(b)) => ratio(a, b),
        _ => None,
    };
    for c in &mut out {
        if let Some(refc) = reference.and_then(|r| find(r, &|x: &Cell| x.loss == c.loss)) {
            c.goodput_ratio = r2(&c.goodput_mbps, &refc.goodput_mbps);
            c.time_ratio = r2(&c.time_s, &refc.time_s);
            c.cpu_ratio = r2(&c.cpu_per_mb, &refc.cpu_per_mb);
            c.delay_p99_ratio = r2(&c.delay_p99_ms, &refc.delay_p99_ms);
        }
        if let Some(zero) = find(&c.row.clone(), &|x: &Cell| x.loss_p == Some(0.0)) {
            c.time_vs_lossless = r2(&c.time_s, &zero.time_s);
            c.efficiency_vs_lossless = r2(&c.efficiency, &zero.efficiency);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capped(v: f64) -> Obs {
        Obs {
            v,
            bound: Bound::AtLeast,
        }
    }

    #[test]
    fn medians_and_ranges() {
        assert_eq!(summarize(&[]), None);
        let s = summarize_exact(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.n, s.median.v, s.min.v, s.max.v), (3, 2.0, 1.0, 3.0));
        assert_eq!(s.median.bound, Bound::Exact);
        let s = summarize_exact(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(s.median.v, 3.0);
        let s = summarize_exact(&[5.0]).unwrap();
        assert_eq!((s.median.v, s.min.v, s.max.v), (5.0, 5.0, 5.0));
        // NaN is not an observation.
        assert_eq!(summarize_exact(&[f64::NAN, 1.0]).unwrap().n, 1);
    }

    #[test]
    fn capped_runs_are_lower_bounds() {
        // Two completed runs and one capped at 90 s: the median is exact.
        let s = summarize(&[Obs::exact(40.0), capped(90.0), Obs::exact(50.0)]).unwrap();
        assert_eq!(
            s.median,
            Value {
                v: 50.0,
                bound: Bound::Exact
            }
        );
        assert_eq!(
            s.max,
            Value {
                v: 90.0,
                bound: Bound::AtLeast
            }
        );
        assert_eq!(s.min.bound, Bound::Exact);
        // Two of three capped: the median is ">90".
        let s = summarize(&[capped(90.0), Obs::exact(50.0), capped(90.0)]).unwrap();
        assert_eq!(
            s.median,
            Value {
                v: 90.0,
                bound: Bound::AtLeast
            }
        );
        // Even count with a capped middle value: a lower bound.
        let s = summarize(&[Obs::exact(10.0), capped(90.0)]).unwrap();
        assert_eq!(
            s.median,
            Value {
                v: 50.0,
                bound: Bound::AtLeast
            }
        );
        // A capped value equal to a completed one sorts after it.
        let s = summarize(&[capped(5.0), Obs::exact(5.0), Obs::exact(1.0)]).unwrap();
        assert_eq!(s.median.bound, Bound::Exact);
        assert_eq!(s.max.bound, Bound::AtLeast);
    }

    #[test]
    fn ratios_of_medians() {
        let a = summarize_exact(&[2.0, 4.0, 6.0]).unwrap();
        let b = summarize_exact(&[8.0]).unwrap();
        assert_eq!(
            ratio(&a, &b),
            Some(Value {
                v: 0.5,
                bound: Bound::Exact
            })
        );
        let zero = summarize_exact(&[0.0]).unwrap();
        assert_eq!(ratio(&a, &zero), None);
        let lb = summarize(&[capped(90.0)]).unwrap();
        assert_eq!(ratio(&lb, &b).unwrap().bound, Bound::AtLeast);
        assert_eq!(ratio(&b, &lb).unwrap().bound, Bound::AtMost);
        assert_eq!(ratio(&lb, &lb).unwrap().bound, Bound::Unsure);
        assert_eq!(Bound::AtMost.prefix(), "<");
    }

    fn run(row: &str, loss: &str, k: usize, outcome: Outcome, t: f64, g: f64) -> RunResult {
        RunResult {
            row: row.into(),
            title: format!("T {row}"),
            loss: loss.into(),
            run: k,
            seed: k as u64 + 1,
            outcome,
            error: (outcome == Outcome::Failed).then(|| "boom".to_string()),
            completion_s: Some(t),
            goodput_mbps: Some(g),
            efficiency: Some(g / 20.0),
            queue_drops: Some(k as u64),
            cpu_server_s: Some(1.0),
            cpu_client_s: Some(0.5),
            bytes: Some(10_000_000),
            ..Default::default()
        }
    }

    #[test]
    fn cells_with_failures_and_ratios() {
        let l0 = LossCase::parse("0").unwrap();
        let l5 = LossCase::parse("5%").unwrap();
        let results = vec![
            run("a", "0%", 0, Outcome::Ok, 4.0, 20.0),
            run("b", "0%", 0, Outcome::Ok, 8.0, 10.0),
            run("a", "5%", 0, Outcome::Ok, 5.0, 16.0),
            run("b", "5%", 0, Outcome::Capped, 90.0, 1.0),
            run("a", "0%", 1, Outcome::Ok, 6.0, 12.0),
            run("b", "0%", 1, Outcome::Failed, 0.0, 0.0),
            run("a", "5%", 1, Outcome::Ok, 5.0, 16.0),
            run("b", "5%", 1, Outcome::Ok, 30.0, 2.0),
            run("b", "5%", 2, Outcome::Capped, 90.0, 0.5),
        ];
        let rows = vec!["a".to_string(), "b".to_string()];
        let cs = cells(&results, &rows, &[l0, l5], None);
        assert_eq!(cs.len(), 4);
        assert_eq!(
            cs.iter()
                .map(|c| (c.row.as_str(), c.loss.as_str()))
                .collect::<Vec<_>>(),
            [("a", "0%"), ("b", "0%"), ("a", "5%"), ("b", "5%")]
        );
        let a0 = &cs[0];
        assert_eq!((a0.runs, a0.ok, a0.capped, a0.failed), (2, 2, 0, 0));
        assert_eq!(a0.time_s.unwrap().median.v, 5.0);
        assert_eq!(a0.goodput_ratio.unwrap().v, 1.0);
        assert_eq!(a0.title, "T a");
        // b at 0%: one failed run, left out of the statistics but counted.
        let b0 = &cs[1];
        assert_eq!((b0.runs, b0.ok, b0.failed), (2, 1, 1));
        assert_eq!(b0.errors, ["run 1 (seed 2): boom"]);
        assert_eq!(b0.time_s.unwrap().n, 1);
        assert_eq!(b0.time_ratio.unwrap().v, 8.0 / 5.0);
        assert!((b0.goodput_ratio.unwrap().v - 10.0 / 16.0).abs() < 1e-12);
        // b at 5%: two capped runs count, with partial goodput.
        let b5 = &cs[3];
        assert_eq!((b5.ok, b5.capped), (1, 2));
        let t = b5.time_s.unwrap();
        assert_eq!(
            t.median,
            Value {
                v: 90.0,
                bound: Bound::AtLeast
            }
        );
        assert_eq!(
            t.min,
            Value {
                v: 30.0,
                bound: Bound::Exact
            }
        );
        assert_eq!(b5.goodput_mbps.unwrap().median.v, 1.0);
        assert_eq!(
            b5.time_ratio.unwrap(),
            Value {
                v: 18.0,
                bound: Bound::AtLeast
            }
        );
        assert_eq!(b5.time_vs_lossless.unwrap().bound, Bound::AtLeast);
        assert_eq!(cs[2].time_vs_lossless.unwrap().v, 1.0);
        assert_eq!(b5.queue_drops.unwrap().max.v, 2.0);
        assert_eq!(cs[0].cpu_per_mb.unwrap().median.v, 0.15);
        // Reference b instead of a.
        let rows2 = vec!["a".to_string(), "b".to_string()];
        let cs = cells(
            &results,
            &rows2,
            &[LossCase::parse("0").unwrap()],
            Some("b"),
        );
        assert_eq!(cs[0].time_ratio.unwrap().v, 5.0 / 8.0);
    }
}
