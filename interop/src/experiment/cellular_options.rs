//! The `bench-cellular` subcommand's command line: [`CellularOptions`]
//! and [`CELLULAR_USAGE`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::experiment::bench_options::TableKind;
use crate::experiment::options::{
    check_reference, defaults, parse_flags, parse_list, parse_loss_list, parse_offsets,
    parse_reference, parse_rows, parse_runs, parse_secs, LossCase, Options, DEFAULT_TRACE_DIR,
};
use crate::units::{parse_buffer, parse_rate};

/// Usage text of `nc-experiment bench-cellular`.
pub const CELLULAR_USAGE: &str = "\
nc-experiment bench-cellular: coded QUIC on cellular traces (make bench-cellular)

usage: nc-experiment bench-cellular [options]

For each trace (mahimahi mm-link files NAME.down and NAME.up in --trace-dir),
linkem replays its downlink and uplink with 20 ms one-way delay each way and a
drop-tail buffer, with loss both ways; medians and min-max over runs at
different trace offsets (rows interleaved per run), then a target check and a
throughput-vs-queueing-delay scatter plot (SVG) per trace. Markdown goes to
stdout and to OUT/bench-cellular-TIME.md, the plots to
OUT/bench-cellular-TIME-TRACE.svg, everything (every run, every cell, the
targets) to OUT/bench-cellular-TIME.json, which is rewritten after every table:
a run cut short keeps its finished tables for --from.

  bulk    GET /stamped/N with N above what the trace can carry in --duration,
          so every run is capped at --duration (goodput = bytes / elapsed),
          with the in-order delivery delay p50/p95/p99 (see nc-experiment
          --help, --stamped); every buffer of --buffers; rows hybrid,
          hybrid+nc=off, cubic+nc=off, bbr2+nc=off, quinn:bbr
  stream  GET /stream/RATE/DURATION (--stream-rate, --duration) on the first
          buffer; rows hybrid, hybrid+nc=off; delivery delay mean/p50/p95/p99

Targets, per trace, buffer and loss, on runs paired by index (same offset):
coded+hybrid (row hybrid) gets >= 0.9 x the goodput of the best other row at
<= 0.5 x its p95 queueing delay; with loss, >= 0.95 x its loss-free goodput.

  --trace-dir DIR      where the traces are (default ../shared/traces)
  --traces LIST        trace names in DIR, or path prefixes of NAME.down/.up
                       (default Verizon-LTE-short,TMobile-LTE-short)
  --buffers LIST       drop-tail buffers, e.g. 100p,200kB (default 100p,1000p)
  --loss LIST          loss both ways, as for the matrix (default 0,2%)
  --runs N             runs per cell (default 3)
  --trace-offsets LIST start offset into the traces of run i: entry i, cycling
                       (default 0,40s,80s)
  --duration D         bulk cap and stream length (default 60s)
  --stream-rate R      rate of the stream (default 2mbit)
  --rows LIST          rows of both tables (default: per table, above; the
                       stream table keeps only rows of our stack)
  --reference ROW      reference row for ratios (default: the first row)
  --tables LIST        bulk, stream or both (default bulk,stream)
  --out DIR            where the JSON, markdown and SVG go (default results)
  --per-run            also print every table's individual runs
  --from LIST          run nothing: rebuild the tables, target check and plots
                       from the runs saved in these reports (OUT/bench-cellular-
                       TIME.json), for the traces, buffers, losses, rows and runs
                       of the other options; a later report's run replaces an
                       earlier one's (same row, loss and index). Puts rows
                       measured in separate invocations side by side; their
                       trace offsets must match --trace-offsets
  --rtt, --loss-position, --seed, --spin, --no-realtime, --idle-timeout,
  --bin-dir, --linkem, --quinn-peer, --quic-go-peer, --keep: as for the matrix
                       (the traces replace --rate, --buffers --buffer)

examples:
  nc-experiment bench-cellular                               # everything (2.5-3 h)
  nc-experiment bench-cellular --traces Verizon-LTE-short --buffers 100p \\
      --loss 0 --runs 1 --duration 10s --rows hybrid,hybrid+nc=off  # smoke test
  nc-experiment bench-cellular --buffers 1000p --tables bulk \\
      --from results/bench-cellular-A.json,results/bench-cellular-B.json";

/// Traces of the benchmark (names in the trace directory).
pub const CELLULAR_TRACES: &str = "Verizon-LTE-short,TMobile-LTE-short";
/// Buffers: a common setting and a deep one.
pub const CELLULAR_BUFFERS: &str = "100p,1000p";
/// Losses: none, and a Wi-Fi-like erasure rate.
pub const CELLULAR_LOSS: &str = "0,0.02";
/// Trace offsets by run index.
pub const CELLULAR_OFFSETS: &str = "0,40s,80s";
/// Rows of the bulk table.
pub const CELLULAR_ROWS: &str = "hybrid,hybrid+nc=off,cubic+nc=off,bbr2+nc=off,quinn:bbr";
/// Rows of the streaming table.
pub const CELLULAR_STREAM_ROWS: &str = "hybrid,hybrid+nc=off";

/// Options of `nc-experiment bench-cellular`.
#[derive(Clone, Debug, Serialize)]
pub struct CellularOptions {
    /// RTT, tools, seed, ... shared by all tables (rows, loss, size,
    /// buffer, runs and traces are set per table).
    pub base: Options,
    /// The tables, in order (bulk and/or stream).
    pub tables: Vec<TableKind>,
    /// Where trace names are looked up.
    pub trace_dir: PathBuf,
    /// Trace names or path prefixes, as given.
    pub traces: Vec<String>,
    /// linkem buffer specs.
    pub buffers: Vec<String>,
    /// Loss settings.
    pub loss: Vec<LossCase>,
    /// Runs per cell.
    pub runs: usize,
    /// Trace offset of run i: entry i mod len.
    pub offsets: Vec<Duration>,
    /// Bulk cap and stream length.
    pub duration: Duration,
    /// Stream rate as given (`2mbit`).
    pub stream_rate: String,
    /// `--rows`: overrides the rows of both tables.
    pub rows: Option<Vec<String>>,
    /// Output directory.
    pub out: PathBuf,
    /// `--from`: rebuild the tables from these reports instead of running.
    pub from: Vec<PathBuf>,
}

/// Parses `bench-cellular`'s arguments (after the subcommand); `None` if
/// `--help` was asked for.
pub fn parse_cellular(
    args: impl Iterator<Item = String>,
    exe_dir: &Path,
) -> Result<Option<CellularOptions>, String> {
    let mut base = defaults(exe_dir);
    base.markdown = true;
    let mut c = CellularOptions {
        base,
        tables: vec![TableKind::Bulk, TableKind::Stream],
        trace_dir: PathBuf::from(DEFAULT_TRACE_DIR),
        traces: parse_list("", CELLULAR_TRACES)?,
        buffers: parse_list("", CELLULAR_BUFFERS)?,
        loss: parse_loss_list(CELLULAR_LOSS)?,
        runs: 3,
        offsets: parse_offsets("", CELLULAR_OFFSETS)?,
        duration: Duration::from_secs(60),
        stream_rate: "2mbit".into(),
        rows: None,
        out: PathBuf::from("results"),
        from: Vec::new(),
    };
    let mut loss_given = false;
    let own = |c: &mut CellularOptions, name: &str, v: String| -> Result<bool, String> {
        match name {
            "--rate" => return Err("--rate: the traces set the capacity".into()),
            "--buffer" => return Err("--buffer: use --buffers LIST".into()),
            "--trace-dir" => c.trace_dir = PathBuf::from(v),
            "--traces" => c.traces = parse_list(name, &v)?,
            "--buffers" => {
                c.buffers = parse_list(name, &v)?;
                for b in &c.buffers {
                    parse_buffer(b).map_err(|e| format!("--buffers: {e}"))?;
                }
            }
            "--loss" => {
                if !loss_given {
                    c.loss.clear();
                    loss_given = true;
                }
                c.loss.extend(parse_loss_list(&v)?);
            }
            "--runs" => c.runs = parse_runs(&v)?,
            "--trace-offsets" => c.offsets = parse_offsets(name, &v)?,
            "--duration" => c.duration = parse_secs("--duration", &v)?,
            "--stream-rate" => {
                parse_rate(&v)
                    .map_err(|e| format!("--stream-rate: {e}"))?
                    .ok_or("--stream-rate must be finite")?;
                c.stream_rate = v;
            }
            "--rows" | "--cc" => c.rows = Some(parse_rows(&v).map_err(|e| format!("{name}: {e}"))?),
            "--reference" => c.base.reference = Some(parse_reference(&v)?),
            "--tables" => {
                c.tables = parse_list(name, &v)?
                    .iter()
                    .map(|t| match t.as_str() {
                        "bulk" => Ok(TableKind::Bulk),
                        "stream" => Ok(TableKind::Stream),
                        _ => Err(format!("--tables: unknown table '{t}' (bulk, stream)")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--out" => c.out = PathBuf::from(v),
            "--from" => {
                c.from = parse_list(name, &v)?
                    .into_iter()
                    .map(PathBuf::from)
                    .collect()
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    if !parse_flags(
        args,
        exe_dir,
        "bench-cellular",
        &mut c,
        |c| &mut c.base,
        own,
    )? {
        return Ok(None);
    }
    if let (Some(r), Some(rows)) = (&c.base.reference, &c.rows) {
        check_reference(&Some(r.clone()), rows)?;
    }
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<CellularOptions, String> {
        parse_cellular(s.split_whitespace().map(String::from), Path::new("/x"))
            .map(|o| o.expect("not --help"))
    }

    #[test]
    fn defaults_and_overrides() {
        let c = parse("").unwrap();
        assert_eq!(c.tables, [TableKind::Bulk, TableKind::Stream]);
        assert_eq!(c.trace_dir, PathBuf::from("../shared/traces"));
        assert_eq!(c.traces, ["Verizon-LTE-short", "TMobile-LTE-short"]);
        assert_eq!(c.buffers, ["100p", "1000p"]);
        assert_eq!(
            c.loss.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
            ["0%", "2%"]
        );
        assert_eq!(c.loss[1].spec, "bernoulli:0.02");
        assert_eq!(c.runs, 3);
        assert_eq!(c.offsets, [0, 40, 80].map(Duration::from_secs).to_vec());
        assert_eq!(c.duration, Duration::from_secs(60));
        assert_eq!(c.stream_rate, "2mbit");
        assert_eq!(c.rows, None);
        assert_eq!(c.out, PathBuf::from("results"));
        assert!(c.from.is_empty());
        assert!(c.base.markdown);
        assert_eq!(c.base.rtt, Duration::from_millis(40));
        assert_eq!(c.base.linkem, PathBuf::from("/x/linkem"));

        let c = parse(
            "--trace-dir /t --traces a,/p/b --buffers 50p,200kB --loss 0 --loss 5% --runs 4 \
             --trace-offsets 0,1m --duration 10s --stream-rate 1mbit --rows hybrid,quinn:bbr \
             --reference quinn:bbr --tables stream --out /o --seed 9 --rtt 100ms --per-run \
             --from a.json,/r/b.json",
        )
        .unwrap();
        assert_eq!(c.trace_dir, PathBuf::from("/t"));
        assert_eq!(c.traces, ["a", "/p/b"]);
        assert_eq!(c.buffers, ["50p", "200kB"]);
        assert_eq!(c.loss.len(), 2);
        assert_eq!(c.runs, 4);
        assert_eq!(c.offsets, [Duration::ZERO, Duration::from_secs(60)]);
        assert_eq!(c.duration, Duration::from_secs(10));
        assert_eq!(c.stream_rate, "1mbit");
        assert_eq!(c.rows.as_deref().unwrap(), ["hybrid", "quinn:bbr"]);
        assert_eq!(c.base.reference.as_deref(), Some("quinn:bbr"));
        assert_eq!(c.tables, [TableKind::Stream]);
        assert_eq!((c.base.seed, c.base.per_run), (9, true));
        assert_eq!(
            c.from,
            [PathBuf::from("a.json"), PathBuf::from("/r/b.json")]
        );
        assert!(
            parse_cellular(["--help".to_string()].into_iter(), Path::new("/x"))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn errors() {
        for bad in [
            "--rate 10mbit",
            "--buffer 100p",
            "--buffers 100p,x",
            "--buffers 100p,100p",
            "--traces ,",
            "--tables bulk,cost",
            "--runs 0",
            "--duration 0",
            "--trace-offsets x",
            "--stream-rate fast",
            "--rows hybrid --reference cubic",
            "--trace-down f",
            "--bogus 1",
            "--from a.json,a.json",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("--rate 1mbit")
            .unwrap_err()
            .contains("traces set the capacity"));
    }
}
