//! The `bench-cellular` target check, per trace, buffer and loss. Runs are
//! compared in pairs that share the run index (the same trace offset and
//! seed), because the capacity differs a lot between offsets:
//!
//! * coded+hybrid (row `hybrid`) gets ≥ 0.9 × the throughput of the best
//!   other row in the same run, at ≤ 0.5 × that row's 95th-percentile
//!   queueing delay at the down bottleneck;
//! * at a loss > 0 its throughput is ≥ 0.95 × its throughput in the
//!   loss-free run with the same index (falls by no more than 5 %).
//!
//! Each target judges the per-run ratios: their median against the
//! threshold, and the worst run within 10 % of it (see
//! [`crate::experiment::targets`]). Failed runs pair with nothing.

use crate::experiment::run::{Outcome, RunResult};
use crate::experiment::stats::summarize_exact;
use crate::experiment::targets::{target, Dir, Target, CODED};

/// Throughput of coded+hybrid / the best other row's, at least.
pub const VS_BEST_THROUGHPUT: f64 = 0.9;
/// p95 queueing delay of coded+hybrid / that row's, at most.
pub const VS_BEST_QDELAY: f64 = 0.5;
/// Throughput with loss / loss-free, at least.
pub const LOSSY_VS_LOSS_FREE: f64 = 0.95;

/// The bulk runs of one trace and buffer.
#[derive(Clone, Copy, Debug)]
pub struct BulkRuns<'a> {
    /// Trace name.
    pub trace: &'a str,
    /// Buffer spec.
    pub buffer: &'a str,
    /// Every run of the table.
    pub results: &'a [RunResult],
}

/// The losses of `results`, in order of first appearance, with their means.
fn losses(results: &[RunResult]) -> Vec<(String, Option<f64>)> {
    let mut out: Vec<(String, Option<f64>)> = Vec::new();
    for r in results {
        if !out.iter().any(|(l, _)| *l == r.loss) {
            out.push((r.loss.clone(), r.loss_p));
        }
    }
    out
}

/// The usable run of `row` at `loss` with index `run`.
fn find<'a>(results: &'a [RunResult], row: &str, loss: &str, run: usize) -> Option<&'a RunResult> {
    results
        .iter()
        .find(|r| r.row == row && r.loss == loss && r.run == run && r.outcome != Outcome::Failed)
}

/// The coded runs at `loss` (usable, with a goodput), by run index.
fn coded_runs<'a>(results: &'a [RunResult], loss: &str) -> Vec<&'a RunResult> {
    let mut v: Vec<&RunResult> = results
        .iter()
        .filter(|r| {
            r.row == CODED
                && r.loss == loss
                && r.outcome != Outcome::Failed
                && r.goodput_mbps.is_some()
        })
        .collect();
    v.sort_by_key(|r| r.run);
    v
}

/// Median and the worst value (`lowest` or highest) of ratios, and the
/// threshold; `None` without ratios.
fn judged(ratios: &[f64], lowest: bool, threshold: f64) -> Option<(f64, f64, f64)> {
    let s = summarize_exact(ratios)?;
    let worst = if lowest { s.min.v } else { s.max.v };
    Some((s.median.v, worst, threshold))
}

/// Checks the targets of every (trace, buffer) table.
pub fn check(tables: &[BulkRuns]) -> Vec<Target> {
    let mut out = Vec::new();
    for t in tables {
        let ls = losses(t.results);
        for (loss, _) in &ls {
            vs_best(t, loss, &mut out);
        }
        let Some((zero, _)) = ls.iter().find(|(_, p)| *p == Some(0.0)) else {
            continue;
        };
        for (loss, p) in &ls {
            if p.is_some_and(|p| p > 0.0) {
                vs_loss_free(t, loss, zero, &mut out);
            }
        }
    }
    out
}

/// Throughput and p95 queueing delay of coded+hybrid against the best
/// other row of each run.
fn vs_best(t: &BulkRuns, loss: &str, out: &mut Vec<Target>) {
    let (mut tput, mut qdelay, mut best_titles) = (Vec::new(), Vec::new(), Vec::<String>::new());
    for c in coded_runs(t.results, loss) {
        let best = t
            .results
            .iter()
            .filter(|r| {
                r.row != CODED
                    && r.loss == loss
                    && r.run == c.run
                    && r.outcome != Outcome::Failed
                    && r.goodput_mbps.is_some()
            })
            .max_by(|a, b| {
                a.goodput_mbps
                    .unwrap_or(0.0)
                    .total_cmp(&b.goodput_mbps.unwrap_or(0.0))
            });
        let Some(best) = best else { continue };
        if !best_titles.contains(&best.title) {
            best_titles.push(best.title.clone());
        }
        if let (Some(g), Some(gb)) = (c.goodput_mbps, best.goodput_mbps) {
            if gb > 0.0 {
                tput.push(g / gb);
            }
        }
        if let (Some(d), Some(db)) = (c.qdelay_p95_ms, best.qdelay_p95_ms) {
            if db > 0.0 {
                qdelay.push(d / db);
            }
        }
    }
    let head = format!("{}, buffer {}, loss {loss}", t.trace, t.buffer);
    let best = if best_titles.is_empty() {
        String::new()
    } else {
        format!(" (best: {})", best_titles.join(", "))
    };
    out.push(target(
        format!(
            "{head}: coded+hybrid throughput ≥ {VS_BEST_THROUGHPUT} × the best other row's in \
             the same run{best}"
        ),
        Dir::AtLeast,
        judged(&tput, true, VS_BEST_THROUGHPUT),
        "coded+hybrid and another row in the same run",
    ));
    out.push(target(
        format!(
            "{head}: coded+hybrid p95 queueing delay ≤ {VS_BEST_QDELAY} × that row's in the same \
             run"
        ),
        Dir::AtMost,
        judged(&qdelay, false, VS_BEST_QDELAY),
        "queueing delays of coded+hybrid and the best other row",
    ));
}

/// Throughput of coded+hybrid at `loss` against its loss-free run with
/// the same index.
fn vs_loss_free(t: &BulkRuns, loss: &str, zero: &str, out: &mut Vec<Target>) {
    let ratios: Vec<f64> = coded_runs(t.results, loss)
        .into_iter()
        .filter_map(|c| {
            let z = find(t.results, CODED, zero, c.run)?.goodput_mbps?;
            (z > 0.0).then(|| c.goodput_mbps.unwrap_or(0.0) / z)
        })
        .collect();
    out.push(target(
        format!(
            "{}, buffer {}, loss {loss}: coded+hybrid throughput ≥ {LOSSY_VS_LOSS_FREE} × its \
             loss-free run at the same offset",
            t.trace, t.buffer
        ),
        Dir::AtLeast,
        judged(&ratios, true, LOSSY_VS_LOSS_FREE),
        "coded+hybrid runs with and without loss at the same offsets",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::targets::{format_targets, Status};

    fn run(row: &str, loss: &str, k: usize, g: f64, q95: f64) -> RunResult {
        RunResult {
            row: row.into(),
            title: format!("T {row}"),
            loss: loss.into(),
            loss_p: Some(if loss == "0%" { 0.0 } else { 0.02 }),
            run: k,
            outcome: Outcome::Capped,
            goodput_mbps: Some(g),
            qdelay_p95_ms: Some(q95),
            ..Default::default()
        }
    }

    #[test]
    fn paired_by_run() {
        let results = vec![
            // Run 0: bbr2 is best (5.0); coded 4.8 = 0.96 × at 30/200 ms.
            run("hybrid", "0%", 0, 4.8, 30.0),
            run("cubic+nc=off", "0%", 0, 4.0, 400.0),
            run("bbr2+nc=off", "0%", 0, 5.0, 200.0),
            // Run 1: cubic best (10.0); coded 8.0 = 0.8 × at 90/100 ms.
            run("hybrid", "0%", 1, 8.0, 90.0),
            run("cubic+nc=off", "0%", 1, 10.0, 100.0),
            run("bbr2+nc=off", "0%", 1, 9.0, 60.0),
            // Run 2: coded 9.5 vs bbr2 10.0 = 0.95 at 20/100 ms.
            run("hybrid", "0%", 2, 9.5, 20.0),
            run("bbr2+nc=off", "0%", 2, 10.0, 100.0),
            // 2% loss: 4.7/4.8 = 0.979, 7.0/8.0 = 0.875; run 2 failed.
            run("hybrid", "2%", 0, 4.7, 30.0),
            run("bbr2+nc=off", "2%", 0, 4.0, 100.0),
            run("hybrid", "2%", 1, 7.0, 30.0),
            run("bbr2+nc=off", "2%", 1, 3.0, 100.0),
            RunResult {
                outcome: Outcome::Failed,
                ..run("hybrid", "2%", 2, 1.0, 1.0)
            },
        ];
        let t = check(&[BulkRuns {
            trace: "V",
            buffer: "100p",
            results: &results,
        }]);
        assert_eq!(t.len(), 5, "{t:#?}");
        let tp = &t[0];
        assert_eq!(
            tp.name,
            "V, buffer 100p, loss 0%: coded+hybrid throughput ≥ 0.9 × the best other row's in \
             the same run (best: T bbr2+nc=off, T cubic+nc=off)"
        );
        // Ratios 0.96, 0.8, 0.95: median 0.95 ≥ 0.9, worst 0.8 < 0.81.
        assert_eq!((tp.median, tp.worst), (Some(0.95), Some(0.8)));
        assert_eq!(tp.status, Status::Miss);
        // Delay ratios 0.15, 0.9, 0.2: median 0.2 ≤ 0.5, worst 0.9 > 0.55.
        let qd = &t[1];
        assert_eq!((qd.median, qd.worst), (Some(0.2), Some(0.9)));
        assert_eq!(qd.status, Status::Miss);
        // 2%: coded beats bbr2 in both runs, at lower delay.
        assert_eq!(t[2].status, Status::Pass);
        assert_eq!(t[3].status, Status::Pass);
        let lf = &t[4];
        assert!(lf
            .name
            .contains("loss 2%: coded+hybrid throughput ≥ 0.95 × its loss-free"));
        assert_eq!(lf.median, Some((4.7 / 4.8 + 7.0 / 8.0) / 2.0));
        assert_eq!(lf.worst, Some(7.0 / 8.0));
        assert_eq!(lf.status, Status::Miss);
        let md = format_targets(&t);
        assert!(md.contains("| MISS |") && md.contains("| PASS |"), "{md}");
    }

    #[test]
    fn missing_rows_are_na() {
        // Only the coded row, no loss-free runs: nothing to compare with.
        let results = vec![run("hybrid", "2%", 0, 4.0, 30.0)];
        let t = check(&[BulkRuns {
            trace: "V",
            buffer: "1000p",
            results: &results,
        }]);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|x| x.status == Status::NA), "{t:#?}");
        assert!(t[0].note.contains("another row in the same run"));
        assert!(check(&[]).is_empty());
    }
}
