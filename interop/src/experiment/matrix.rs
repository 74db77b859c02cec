//! A (row × loss) matrix of runs, interleaved so that machine noise spreads
//! over the rows: for each run index (seed = `--seed` + run), for each
//! loss, every row once. Progress goes to stderr.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::experiment::options::Options;
use crate::experiment::process::check_interrupted;
use crate::experiment::run::{run_one, Outcome, RunResult};
use crate::experiment::stats::Cell;
use crate::peer::FlowSpec;

/// The order in which a matrix is run: `(run, loss index, row index)`.
pub fn schedule(runs: usize, losses: usize, rows: usize) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::with_capacity(runs * losses * rows);
    for run in 0..runs {
        for l in 0..losses {
            for r in 0..rows {
                v.push((run, l, r));
            }
        }
    }
    v
}

/// Makes sure every row's stack is available (builds the quinn or quic-go
/// peer if needed, installs ngtcp2).
pub fn prepare_rows(opts: &Options) -> Result<(), String> {
    for row in &opts.rows {
        FlowSpec::parse(row)?.prepare(&opts.tools)?;
    }
    Ok(())
}

/// Runs the matrix of `opts` under `work` (one directory per run); `tag`
/// prefixes the progress lines. Stops early (returning what it has) when
/// interrupted or past the options' deadline.
pub fn run_matrix(opts: &Options, work: &Path, certs: &Path, tag: &str) -> Vec<RunResult> {
    let order = schedule(opts.runs, opts.loss.len(), opts.rows.len());
    let total = order.len();
    let mut out = Vec::with_capacity(total);
    let t0 = Instant::now();
    for (k, (run, l, r)) in order.into_iter().enumerate() {
        if check_interrupted().is_err() || opts.past_deadline() {
            break;
        }
        let (row, loss) = (&opts.rows[r], &opts.loss[l]);
        eprint!(
            "{tag}[{}/{total}] run={run} loss={} row={row} ... ",
            k + 1,
            loss.label
        );
        let res = run_one(opts, row, loss, run, work, certs);
        let what = match (res.outcome, res.completion_s, res.goodput_mbps) {
            (Outcome::Failed, _, _) => format!("FAILED: {}", res.error.as_deref().unwrap_or("?")),
            (o, Some(t), Some(g)) => format!(
                "{}{t:.2} s, {g:.2} Mbit/s{}",
                if o == Outcome::Capped { ">" } else { "" },
                res.delivery
                    .as_ref()
                    .map(|d| format!(", delay mean {:.1} ms p99 {:.1} ms", d.mean_ms, d.p99_ms))
                    .unwrap_or_default()
            ),
            _ => "done".into(),
        };
        eprintln!("{what} [{:.0} s elapsed]", t0.elapsed().as_secs_f64());
        out.push(res);
    }
    out
}

/// The document `--json` writes for a matrix.
#[derive(Serialize)]
pub struct MatrixReport<'a> {
    /// The options used.
    pub options: &'a Options,
    /// One entry per run, in the order they ran.
    pub results: &'a [RunResult],
    /// One entry per (loss, row) cell.
    pub cells: &'a [Cell],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_order() {
        let s = schedule(2, 2, 3);
        assert_eq!(s.len(), 12);
        // Run 0 first: every loss, every row; then run 1.
        assert_eq!(&s[..4], &[(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0)]);
        assert_eq!(s[6], (1, 0, 0));
        assert!(schedule(0, 3, 3).is_empty());
    }
}
