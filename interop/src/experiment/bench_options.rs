//! The `bench-e2e` subcommand's command line: [`BenchOptions`], its tables
//! ([`TableKind`]) and [`BENCH_USAGE`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::experiment::options::{
    check_reference, defaults, parse_flags, parse_loss_list, parse_reference, parse_rows,
    parse_runs, parse_secs, parse_size, parse_stream, LossCase, Options,
};

/// Usage text of `nc-experiment bench-e2e`.
pub const BENCH_USAGE: &str = "\
nc-experiment bench-e2e: the end-to-end benchmark (make bench-e2e)

usage: nc-experiment bench-e2e [options]

Four tables on a 20 Mbit/s, 40 ms RTT, one-BDP link with loss both ways
(medians and min-max over runs, ratios to the reference row at the same loss),
then a target check. Markdown goes to stdout and to OUT/bench-e2e-TIME.md,
everything (every run, every cell, the targets) to OUT/bench-e2e-TIME.json.

  bulk    10 MB downloads (GET /stamped/N: with the in-order delivery delay
          p50/p95/p99, see nc-experiment --help); loss 0,1,5,10,20%
          Bernoulli and Gilbert-Elliott ge:0.013158,0.25 (mean loss 5%,
          mean burst 4 packets); rows hybrid,
          hybrid+nc=fixed:1.25, hybrid+nc=ctcp, hybrid+nc=von, hybrid+nc=fnc,
          cubic, hybrid+nc=off, cubic+nc=off, bbr2+nc=off, quinn:bbr; 3 runs,
          each capped at --cap (partial goodput, time >cap)
  short   1 MB downloads (GET /stamped/N, as bulk); loss 0,5,20%; the
          same rows; 5 runs
  stream  GET /stream/8mbit/20s; loss 0,5,20%; rows hybrid, hybrid+nc=off,
          cubic+nc=off; delivery delay mean/p50/p99/max; 3 runs
  cost    CPU seconds (server + client, user + system) per MB of 300 MB
          loopback downloads without linkem, hybrid vs hybrid+nc=off; 3 runs

  --tables LIST      which tables, in order (default bulk,short,stream,cost)
  --runs N           runs per cell for every table (default: per table, above)
  --loss LIST        losses for bulk, short and stream (default: per table)
  --rows LIST        rows for bulk, short and stream (default: per table; the
                     cost table always compares hybrid with hybrid+nc=off)
  --reference ROW    reference row for ratios (default: the first row)
  --cap SECS         per-run cap of bulk runs (default 90); short runs are
                     capped at 60 s, stream runs at the stream's length + 30 s,
                     cost runs at 120 s
  --bulk-size B      bulk download size (default 10MB)
  --short-size B     short download size (default 1MB)
  --stream RATE/DUR  the streaming resource (default 8mbit/20s)
  --cost-size B      cost download size (default 300MB)
  --out DIR          where the JSON and markdown go (default results)
  --per-run          also print every table's individual runs
  --rate, --rtt, --buffer, --loss-position, --seed, --spin, --no-realtime,
  --idle-timeout, --bin-dir, --linkem, --quinn-peer, --quic-go-peer, --keep:
                     as for the matrix

examples:
  nc-experiment bench-e2e                                   # everything (roughly 1 h)
  nc-experiment bench-e2e --tables bulk,short --runs 3 --loss 0,0.05
  nc-experiment bench-e2e --tables bulk --loss 0,5% --rows hybrid,hybrid+nc=off,cubic+nc=off,quinn:bbr";

/// The tables of `bench-e2e`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// 10 MB downloads over the lossy link.
    Bulk,
    /// 1 MB downloads over the lossy link.
    Short,
    /// A constant-rate stream: delivery delays.
    Stream,
    /// CPU per MB on loopback, coded vs plain.
    Cost,
}

impl TableKind {
    /// All tables, in the default order.
    pub const ALL: [TableKind; 4] = [
        TableKind::Bulk,
        TableKind::Short,
        TableKind::Stream,
        TableKind::Cost,
    ];

    /// The name used by `--tables`.
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Bulk => "bulk",
            TableKind::Short => "short",
            TableKind::Stream => "stream",
            TableKind::Cost => "cost",
        }
    }

    fn parse(s: &str) -> Result<TableKind, String> {
        TableKind::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("--tables: unknown table '{s}' (bulk, short, stream, cost)"))
    }
}

/// Options of `nc-experiment bench-e2e`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchOptions {
    /// Link, tools, seed, ... shared by all tables (its rows, loss, size and
    /// runs are replaced per table).
    pub base: Options,
    /// The tables to run, in order.
    pub tables: Vec<TableKind>,
    /// `--runs`: overrides every table's number of runs.
    pub runs: Option<usize>,
    /// `--loss`: overrides the losses of bulk, short and stream.
    pub loss: Option<Vec<LossCase>>,
    /// `--rows`: overrides the rows of bulk, short and stream.
    pub rows: Option<Vec<String>>,
    /// Per-run cap of bulk runs.
    pub cap: Duration,
    /// Bulk download size.
    pub bulk_size: u64,
    /// Short-flow download size.
    pub short_size: u64,
    /// The stream, `RATE/DURATION`.
    pub stream: String,
    /// Cost download size.
    pub cost_size: u64,
    /// Output directory for JSON and markdown.
    pub out: PathBuf,
}

/// Parses `bench-e2e`'s arguments (after the subcommand); `None` if
/// `--help` was asked for.
pub fn parse_bench(
    args: impl Iterator<Item = String>,
    exe_dir: &Path,
) -> Result<Option<BenchOptions>, String> {
    let mut base = defaults(exe_dir);
    base.markdown = true;
    base.timeout = Duration::from_secs(90);
    let mut b = BenchOptions {
        base,
        tables: TableKind::ALL.to_vec(),
        runs: None,
        loss: None,
        rows: None,
        cap: Duration::from_secs(90),
        bulk_size: 10_000_000,
        short_size: 1_000_000,
        stream: "8mbit/20s".into(),
        cost_size: 300_000_000,
        out: PathBuf::from("results"),
    };
    let own = |b: &mut BenchOptions, name: &str, v: String| -> Result<bool, String> {
        match name {
            "--tables" => {
                b.tables = v
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(TableKind::parse)
                    .collect::<Result<_, _>>()?;
                if b.tables.is_empty() {
                    return Err("--tables: empty list".into());
                }
            }
            "--runs" => b.runs = Some(parse_runs(&v)?),
            "--loss" => b
                .loss
                .get_or_insert_with(Vec::new)
                .extend(parse_loss_list(&v)?),
            "--rows" | "--cc" => b.rows = Some(parse_rows(&v).map_err(|e| format!("{name}: {e}"))?),
            "--reference" => b.base.reference = Some(parse_reference(&v)?),
            "--cap" => b.cap = parse_secs("--cap", &v)?,
            "--bulk-size" => b.bulk_size = parse_size("--bulk-size", &v)?,
            "--short-size" => b.short_size = parse_size("--short-size", &v)?,
            "--cost-size" => b.cost_size = parse_size("--cost-size", &v)?,
            "--stream" => b.stream = parse_stream(&v)?,
            "--out" => b.out = PathBuf::from(v),
            _ => return Ok(false),
        }
        Ok(true)
    };
    if !parse_flags(args, exe_dir, "bench-e2e", &mut b, |b| &mut b.base, own)? {
        return Ok(None);
    }
    if let (Some(r), Some(rows)) = (&b.base.reference, &b.rows) {
        check_reference(&Some(r.clone()), rows)?;
    }
    Ok(Some(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(s: &str) -> BenchOptions {
        parse_bench(s.split_whitespace().map(String::from), Path::new("/x"))
            .unwrap()
            .expect("not --help")
    }

    #[test]
    fn bench_options() {
        let b = bench("");
        assert_eq!(b.tables, TableKind::ALL);
        assert_eq!(
            (b.runs, b.loss.is_none(), b.rows.is_none()),
            (None, true, true)
        );
        assert_eq!(b.cap, Duration::from_secs(90));
        assert_eq!(
            (b.bulk_size, b.short_size, b.cost_size),
            (10_000_000, 1_000_000, 300_000_000)
        );
        assert_eq!(b.stream, "8mbit/20s");
        assert_eq!(b.out, PathBuf::from("results"));
        assert!(b.base.markdown);
        let b = bench(
            "--tables bulk,short --runs 3 --loss 0.05 --rows hybrid,quinn:bbr --cap 30 \
             --out /tmp/r --bulk-size 2MB --stream 1mbit/2s --rate 10mbit --seed 7",
        );
        assert_eq!(b.tables, [TableKind::Bulk, TableKind::Short]);
        assert_eq!(b.runs, Some(3));
        assert_eq!(b.loss.as_ref().unwrap()[0].label, "5%");
        assert_eq!(b.rows.as_deref().unwrap(), ["hybrid", "quinn:bbr"]);
        assert_eq!(b.cap, Duration::from_secs(30));
        assert_eq!(b.bulk_size, 2_000_000);
        assert_eq!(b.stream, "1mbit/2s");
        assert_eq!((b.base.rate_bps, b.base.seed), (10_000_000, 7));
        assert!(
            parse_bench(["--help".to_string()].into_iter(), Path::new("/x"))
                .unwrap()
                .is_none()
        );
        for bad in [
            "--tables bulk,foo",
            "--tables ,",
            "--runs 0",
            "--size 1MB",
            "--rows hybrid --reference cubic",
            "--cap 0",
        ] {
            let args = bad.split_whitespace().map(String::from);
            assert!(parse_bench(args, Path::new("/x")).is_err(), "{bad}");
        }
    }
}
