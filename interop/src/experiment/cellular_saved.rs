//! `bench-cellular --from`: the runs of earlier invocations, read back from
//! their JSON reports, so that the tables, the target check and the plots
//! can be rebuilt without running anything, and rows measured in separate
//! invocations (same traces, offsets and seeds) put side by side.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::experiment::bench_options::TableKind;
use crate::experiment::matrix::schedule;
use crate::experiment::options::Options;
use crate::experiment::run::RunResult;

/// What is read of a report: its tables' identity and runs.
#[derive(Deserialize)]
struct Report {
    tables: Vec<Table>,
}

#[derive(Deserialize)]
struct Table {
    trace: String,
    kind: String,
    opts: TableOpts,
    #[serde(default)]
    took_s: f64,
    results: Vec<RunResult>,
}

#[derive(Deserialize)]
struct TableOpts {
    buffer: String,
    /// Bulk runs requested `/stamped/N` (absent in reports from before it).
    #[serde(default)]
    stamped: bool,
}

/// A table's identity: trace, kind (`bulk`, `stream`), buffer, and whether
/// the bulk downloads were stamped (their goodput and delays are not
/// comparable with `/bytes/N` runs).
type TableKey = (String, String, String, bool);
/// A run's identity within its table: row, loss label and run index.
type RunKey = (String, String, usize);

/// One table's saved runs.
#[derive(Debug, Default)]
pub struct SavedTable {
    /// The runs, in the order a live invocation would have run them.
    pub runs: Vec<RunResult>,
    /// Cells without a saved run (`row loss #run`).
    pub missing: Vec<String>,
    /// Time the reports spent measuring this table, s.
    pub took_s: f64,
}

/// Runs read from reports; a later file replaces the runs of an earlier
/// one with the same table, row, loss and index.
#[derive(Debug, Default)]
pub struct SavedRuns {
    tables: BTreeMap<TableKey, BTreeMap<RunKey, RunResult>>,
    /// Measuring time of each table, summed over the reports.
    took_s: BTreeMap<TableKey, f64>,
    /// Runs replaced by a later file.
    pub replaced: usize,
}

impl SavedRuns {
    /// Reads the reports `files` (`OUT/bench-cellular-TIME.json`).
    pub fn load(files: &[PathBuf]) -> Result<Self, String> {
        let mut s = SavedRuns::default();
        for f in files {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            s.add(&text)
                .map_err(|e| format!("{}: not a bench-cellular report: {e}", f.display()))?;
        }
        Ok(s)
    }

    /// Adds the runs of one report's text.
    pub fn add(&mut self, json: &str) -> Result<(), String> {
        let r: Report = serde_json::from_str(json).map_err(|e| e.to_string())?;
        for t in r.tables {
            let key = (t.trace, t.kind, t.opts.buffer, t.opts.stamped);
            *self.took_s.entry(key.clone()).or_default() += t.took_s;
            let table = self.tables.entry(key).or_default();
            for run in t.results {
                let key = (run.row.clone(), run.loss.clone(), run.run);
                if table.insert(key, run).is_some() {
                    self.replaced += 1;
                }
            }
        }
        Ok(())
    }

    /// The saved runs of one table (`o`: its buffer, rows × losses × runs
    /// and trace offsets). A run whose trace offset is not `o`'s entry for
    /// its index is an error: the target check pairs runs by index, which
    /// is only meaningful at the same offset.
    pub fn table(&self, trace: &str, kind: TableKind, o: &Options) -> Result<SavedTable, String> {
        let (buffer, rows, offsets) = (&o.buffer, &o.rows, &o.trace_offsets);
        let key = (
            trace.to_string(),
            kind.name().to_string(),
            buffer.clone(),
            o.stamped,
        );
        let empty = BTreeMap::new();
        let saved = self.tables.get(&key).unwrap_or(&empty);
        let mut out = Vec::new();
        let mut missing = Vec::new();
        for (run, l, r) in schedule(o.runs, o.loss.len(), rows.len()) {
            let (row, loss) = (&rows[r], &o.loss[l].label);
            let Some(res) = saved.get(&(row.clone(), loss.clone(), run)) else {
                missing.push(format!("{row} {loss} #{run}"));
                continue;
            };
            if let (Some(at), Some(want)) =
                (res.trace_offset_s, offsets.get(run % offsets.len().max(1)))
            {
                if (at - want.as_secs_f64()).abs() > 1e-3 {
                    return Err(format!(
                        "{trace} {buffer}: run {run} of {row} at {loss} was at trace offset {at} s, \
                         but --trace-offsets puts run {run} at {} s",
                        want.as_secs_f64()
                    ));
                }
            }
            out.push(res.clone());
        }
        Ok(SavedTable {
            runs: out,
            missing,
            took_s: self.took_s.get(&key).copied().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::options::{defaults, parse_loss_list};
    use std::path::Path;
    use std::time::Duration;

    fn opts(buffer: &str, rows: &[&str], loss: &str, runs: usize, offsets: &[u64]) -> Options {
        let mut o = defaults(Path::new("/x"));
        o.buffer = buffer.into();
        o.rows = rows.iter().map(|r| r.to_string()).collect();
        o.loss = parse_loss_list(loss).unwrap();
        o.runs = runs;
        o.trace_offsets = offsets.iter().map(|&s| Duration::from_secs(s)).collect();
        o
    }

    fn run(row: &str, loss: &str, k: usize, offset: f64, g: f64) -> serde_json::Value {
        let r = RunResult {
            row: row.into(),
            title: row.into(),
            loss: loss.into(),
            run: k,
            trace_offset_s: Some(offset),
            goodput_mbps: Some(g),
            ..Default::default()
        };
        serde_json::to_value(r).unwrap()
    }

    fn report(trace: &str, buffer: &str, runs: Vec<serde_json::Value>) -> String {
        serde_json::json!({
            "started": "x",
            "tables": [{
                "trace": trace, "kind": "bulk", "title": "t",
                "opts": {"buffer": buffer, "runs": 3}, "took_s": 1.5,
                "results": runs, "cells": [],
            }],
        })
        .to_string()
    }

    #[test]
    fn merges_reports_by_table_row_loss_and_index() {
        let rows = ["hybrid", "cubic+nc=off"];
        let o = |buffer, runs| opts(buffer, &rows, "0,0.02", runs, &[0, 40, 80]);
        let mut s = SavedRuns::default();
        // The first report has hybrid, the second cubic and a rerun of
        // hybrid's run 1 at 2 %, and a table of another buffer.
        s.add(&report(
            "V",
            "100p",
            vec![
                run("hybrid", "0%", 0, 0.0, 1.0),
                run("hybrid", "2%", 0, 0.0, 2.0),
                run("hybrid", "0%", 1, 40.0, 3.0),
                run("hybrid", "2%", 1, 40.0, 4.0),
            ],
        ))
        .unwrap();
        s.add(&report(
            "V",
            "100p",
            vec![
                run("cubic+nc=off", "0%", 0, 0.0, 5.0),
                run("cubic+nc=off", "2%", 0, 0.0, 6.0),
                run("hybrid", "2%", 1, 40.0, 7.0),
            ],
        ))
        .unwrap();
        s.add(&report(
            "V",
            "1000p",
            vec![run("hybrid", "0%", 0, 0.0, 9.0)],
        ))
        .unwrap();
        assert_eq!(s.replaced, 1);
        let t = s.table("V", TableKind::Bulk, &o("100p", 2)).unwrap();
        assert_eq!(t.took_s, 3.0);
        let got: Vec<(&str, &str, usize, f64)> = t
            .runs
            .iter()
            .map(|r| {
                (
                    r.row.as_str(),
                    r.loss.as_str(),
                    r.run,
                    r.goodput_mbps.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("hybrid", "0%", 0, 1.0),
                ("cubic+nc=off", "0%", 0, 5.0),
                ("hybrid", "2%", 0, 2.0),
                ("cubic+nc=off", "2%", 0, 6.0),
                ("hybrid", "0%", 1, 3.0),
                ("hybrid", "2%", 1, 7.0),
            ]
        );
        assert_eq!(t.missing, ["cubic+nc=off 0% #1", "cubic+nc=off 2% #1"]);
        // Stamped downloads do not mix with these (/bytes/N) runs.
        let mut stamped = o("100p", 2);
        stamped.stamped = true;
        let t = s.table("V", TableKind::Bulk, &stamped).unwrap();
        assert!(t.runs.is_empty());
        assert_eq!(t.missing.len(), 8);
        // Another trace, kind or buffer has nothing.
        let t = s.table("T", TableKind::Bulk, &o("100p", 1)).unwrap();
        assert!(t.runs.is_empty());
        assert_eq!((t.missing.len(), t.took_s), (4, 0.0));
        assert!(s
            .table("V", TableKind::Stream, &o("100p", 1))
            .unwrap()
            .runs
            .is_empty());
    }

    #[test]
    fn runs_at_other_offsets_and_bad_files_are_errors() {
        let mut s = SavedRuns::default();
        s.add(&report("V", "100p", vec![run("hybrid", "0%", 0, 0.0, 1.0)]))
            .unwrap();
        let e = s
            .table(
                "V",
                TableKind::Bulk,
                &opts("100p", &["hybrid"], "0", 1, &[30]),
            )
            .unwrap_err();
        assert!(
            e.contains("trace offset 0 s") && e.contains("at 30 s"),
            "{e}"
        );
        assert!(s.add("{}").is_err());
        assert!(s.add("[1, 2]").is_err());
        let e = SavedRuns::load(&[PathBuf::from("/nonexistent/r.json")]).unwrap_err();
        assert!(e.contains("/nonexistent/r.json"), "{e}");
    }
}
