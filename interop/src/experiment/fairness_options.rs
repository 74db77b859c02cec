//! The `bench-fairness` subcommand's command line: [`FairnessOptions`],
//! its [`Group`]s and [`FAIRNESS_USAGE`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::experiment::options::{
    defaults, parse_flags, parse_list, parse_runs, parse_secs, parse_size, Options,
};
use crate::peer::FlowSpec;
use crate::units::parse_buffer;

/// Usage text of `nc-experiment bench-fairness`.
pub const FAIRNESS_USAGE: &str = "\
nc-experiment bench-fairness: is a flow a good citizen next to CUBIC? (make bench-fairness)

usage: nc-experiment bench-fairness [options]

Competing downloads (nc-experiment --compete) on one 20 Mbit/s, 40 ms
bottleneck, every cell --runs times with seeds --seed, --seed+1, ...; runs
interleaved across the cells of a group. The flow under test (--flow,
default hybrid: coded QUIC with our controller) meets each of --others.
Each cell prints every run's figure (misses in bold), the median and
min-max and the runs meeting the target; a target check follows. Markdown
goes to stdout and to OUT/bench-fairness-TIME.md, everything (every run,
the verdicts) to OUT/bench-fairness-TIME.json, rewritten after every run.

Groups (--groups; targets from the issue 'hybrid as a good citizen'):
  bdp       one-BDP buffer, no loss, --size each: the flow first, the other
            first, the flow 2 s ahead, the other 2 s ahead. Share ratio
            flow / other within 0.8-1.25 in every run
  shallow   --buffers (25 % and 10 % of the BDP), no loss, --size each: the
            flow first; ratio <= 1.5 in every run (a flow that takes less
            passes); and the flow alone: efficiency >= 0.85 in every run
  rtt-mix   one-BDP buffer at --rtt, no loss: the flow on a path of --rtt
            against the flow on 2 x --rtt, and the flow on 2 x --rtt against
            quiche's CUBIC on --rtt; each against the same pair of CUBICs
            (the reference): median max(r, 1/r) no worse than CUBIC's own
  sharing   5 % loss both ways: 2 and 4 flows started together, --size each
            (Jain >= 0.98 in every run); a flow joining 10 s after another
            (3 x --size each; it first carries 80 % of an equal share over
            one second within 5 s, in every run)
  loss      1 % and 5 % loss, --size/4 each: the flow against quiche's CUBIC;
            no target, the share ratio is reported (a Padhye-limited CUBIC
            leaves most of the link unused)
A run that fails counts against its cell's target; a flow that takes
everything reads as an infinite ratio, a joiner that never gets its share as
an infinite time.

  --flow SPEC      the flow under test (default hybrid; e.g. hybrid+nc=off,
                   or cubic+nc=off for CUBIC's own figures)
  --others LIST    competitors of bdp and shallow (default cubic+nc=off,
                   quic-go:cubic,ngtcp2:cubic,quinn:cubic; cubic+nc=off is
                   quiche's CUBIC without coding)
  --groups LIST    groups to run, in this order (default bdp,shallow,rtt-mix,
                   sharing,loss)
  --buffers LIST   the shallow group's buffers: N% of the BDP at --rate and
                   --rtt, or a linkem buffer (64p, 10kB) (default 25%,10%)
  --runs N         runs per cell (default 10)
  --size BYTES     download size per flow (default 20MB)
  --timeout SECS   per-run cap (default: from the cell's flows, size, loss
                   and stagger, so that a Padhye-limited CUBIC finishes)
  --qlog-dir DIR   every run's qlogs in DIR/cell-N/<run>
  --out DIR        where the markdown and JSON go (default results)
  --per-run        also each cell's --compete table (stdout and markdown)
  --merge LIST     run nothing: one report (stdout, OUT/...md and .json) from
                   the runs of earlier JSON reports, e.g. seeds 1-5 and 6-10
                   of a campaign made in two parts; give the options they
                   were made with (except --runs and --seed). Reports that
                   planned the same seed for the same cell are refused
                   (parts of different groups may share seeds)
  --rate, --rtt, --seed, --loss-position, --spin, --no-realtime,
  --idle-timeout, --bin-dir, --linkem, --quinn-peer, --quic-go-peer, --keep:
                   as for the matrix

Roughly 2 h with the defaults (bdp half of it). A smoke test (about 30 s):
  nc-experiment bench-fairness --groups shallow --others cubic+nc=off --buffers 10% --runs 1
";

/// Competitors of the bdp and shallow groups.
pub const FAIRNESS_OTHERS: &str = "cubic+nc=off,quic-go:cubic,ngtcp2:cubic,quinn:cubic";
/// The shallow group's buffers: a quarter and a tenth of the BDP.
pub const FAIRNESS_BUFFERS: &str = "25%,10%";
/// Groups run by default, in order.
pub const FAIRNESS_GROUPS: &str = "bdp,shallow,rtt-mix,sharing,loss";

/// A group of cells with one kind of target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// One-BDP buffer, both start orders and a 2 s head start each way.
    Bdp,
    /// Shallow buffers, and the flow alone on them.
    Shallow,
    /// Different round-trip times.
    RttMix,
    /// Coded flows sharing a lossy link, and a late joiner.
    Sharing,
    /// Random loss against CUBIC (reported, no target).
    Loss,
}

impl Group {
    /// Every group, in the default order.
    pub const ALL: [Group; 5] = [
        Group::Bdp,
        Group::Shallow,
        Group::RttMix,
        Group::Sharing,
        Group::Loss,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Group::Bdp => "bdp",
            Group::Shallow => "shallow",
            Group::RttMix => "rtt-mix",
            Group::Sharing => "sharing",
            Group::Loss => "loss",
        }
    }

    fn parse(s: &str) -> Result<Group, String> {
        Group::ALL
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Group::ALL.iter().map(|g| g.name()).collect();
                format!("--groups: unknown group '{s}' ({})", names.join(", "))
            })
    }
}

/// Options of `nc-experiment bench-fairness`.
#[derive(Clone, Debug, Serialize)]
pub struct FairnessOptions {
    /// Link, tools and seed shared by every cell (buffer, loss, size,
    /// stagger and per-flow RTTs are set per cell).
    pub base: Options,
    /// The flow under test (a canonical flow spec).
    pub flow: String,
    /// Competitors of the bdp and shallow groups.
    pub others: Vec<String>,
    /// Groups, in order.
    pub groups: Vec<Group>,
    /// The shallow group's buffers: `N%` of the BDP, or a linkem buffer.
    pub buffers: Vec<String>,
    /// Runs per cell.
    pub runs: usize,
    /// Download size per flow (the joiner's and the loss group's scale
    /// with it).
    pub size: u64,
    /// `--timeout`: the per-run cap of every cell (default: per cell,
    /// [`crate::experiment::fairness::Cell::timeout_for`]).
    pub timeout: Option<Duration>,
    /// Output directory.
    pub out: PathBuf,
    /// `--merge`: earlier reports (JSON) to tabulate as one campaign
    /// instead of running.
    pub merge: Vec<PathBuf>,
}

/// A flow spec in its canonical label.
fn spec(name: &str, v: &str) -> Result<String, String> {
    Ok(FlowSpec::parse(v)
        .map_err(|e| format!("{name}: {e}"))?
        .label())
}

/// A fraction of the BDP given as `N%` (`None` for a linkem buffer).
pub fn bdp_percent(b: &str) -> Result<Option<f64>, String> {
    let Some(n) = b.strip_suffix('%') else {
        return Ok(None);
    };
    match n.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1000.0 => Ok(Some(p)),
        _ => Err(format!(
            "--buffers: '{b}' is not a percentage of the BDP in (0, 1000]"
        )),
    }
}

/// Parses `bench-fairness`'s arguments (after the subcommand); `None` if
/// `--help` was asked for.
pub fn parse_fairness(
    args: impl Iterator<Item = String>,
    exe_dir: &Path,
) -> Result<Option<FairnessOptions>, String> {
    let mut base = defaults(exe_dir);
    base.markdown = true;
    let mut f = FairnessOptions {
        base,
        flow: "hybrid".into(),
        others: parse_list("", FAIRNESS_OTHERS)?,
        groups: parse_list("", FAIRNESS_GROUPS)?
            .iter()
            .map(|g| Group::parse(g))
            .collect::<Result<_, _>>()?,
        buffers: parse_list("", FAIRNESS_BUFFERS)?,
        runs: 10,
        size: 20_000_000,
        timeout: None,
        out: PathBuf::from("results"),
        merge: Vec::new(),
    };
    let own = |f: &mut FairnessOptions, name: &str, v: String| -> Result<bool, String> {
        match name {
            "--buffer" => return Err("--buffer: use --buffers LIST (shallow group)".into()),
            "--loss" => return Err("--loss: each group sets its own loss".into()),
            "--flow" => f.flow = spec(name, &v)?,
            "--others" => {
                let others: Vec<String> = parse_list(name, &v)?
                    .iter()
                    .map(|o| spec(name, o))
                    .collect::<Result<_, _>>()?;
                parse_list(name, &others.join(","))?;
                f.others = others;
            }
            "--groups" => {
                f.groups = parse_list(name, &v)?
                    .iter()
                    .map(|g| Group::parse(g))
                    .collect::<Result<_, _>>()?
            }
            "--buffers" => {
                f.buffers = parse_list(name, &v)?;
                for b in &f.buffers {
                    if bdp_percent(b)?.is_none() {
                        parse_buffer(b).map_err(|e| format!("--buffers: {e}"))?;
                    }
                }
            }
            "--runs" => f.runs = parse_runs(&v)?,
            "--size" => f.size = parse_size(name, &v)?,
            "--timeout" => f.timeout = Some(parse_secs(name, &v)?),
            "--qlog-dir" => f.base.qlog_dir = Some(PathBuf::from(v)),
            "--out" => f.out = PathBuf::from(v),
            "--merge" => {
                f.merge = parse_list(name, &v)?
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
        "bench-fairness",
        &mut f,
        |f| &mut f.base,
        own,
    )? {
        return Ok(None);
    }
    if !f.merge.is_empty() && (f.base.per_run || f.base.qlog_dir.is_some()) {
        return Err("--merge: --per-run and --qlog-dir need the runs themselves".into());
    }
    Ok(Some(f))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn parse(s: &str) -> Result<FairnessOptions, String> {
        parse_fairness(s.split_whitespace().map(String::from), Path::new("/x"))
            .map(|o| o.expect("not --help"))
    }

    /// The options of `args`, which must parse (for the other modules'
    /// tests).
    pub(crate) fn opts(args: &str) -> FairnessOptions {
        parse(args).unwrap()
    }

    #[test]
    fn defaults_and_overrides() {
        let f = parse("").unwrap();
        assert_eq!(f.flow, "hybrid");
        assert_eq!(
            f.others,
            [
                "cubic+nc=off",
                "quic-go:cubic",
                "ngtcp2:cubic",
                "quinn:cubic"
            ]
        );
        assert_eq!(f.groups, Group::ALL);
        assert_eq!(f.buffers, ["25%", "10%"]);
        assert_eq!((f.timeout, f.base.qlog_dir.clone()), (None, None));
        assert_eq!((f.runs, f.size), (10, 20_000_000));
        assert_eq!(f.out, PathBuf::from("results"));
        assert!(f.base.markdown && f.merge.is_empty());

        let f = parse(
            "--flow hybrid+nc=off --others quic-go:cubic --groups sharing,bdp --buffers 5kB \
             --runs 3 --size 5MB --out /o --seed 7 --rtt 80ms --timeout 30 --qlog-dir /q",
        )
        .unwrap();
        assert_eq!(f.flow, "hybrid+nc=off");
        assert_eq!(f.others, ["quic-go:cubic"]);
        assert_eq!(f.groups, [Group::Sharing, Group::Bdp]);
        assert_eq!(f.buffers, ["5kB"]);
        assert_eq!((f.runs, f.size), (3, 5_000_000));
        assert_eq!(f.out, PathBuf::from("/o"));
        assert_eq!(f.base.seed, 7);
        assert_eq!(f.timeout, Some(Duration::from_secs(30)));
        assert_eq!(f.base.qlog_dir, Some(PathBuf::from("/q")));
        let f = parse("--merge a.json,b/c.json").unwrap();
        assert_eq!(
            f.merge,
            [PathBuf::from("a.json"), PathBuf::from("b/c.json")]
        );
        assert_eq!(bdp_percent("12.5%"), Ok(Some(12.5)));
        assert_eq!(bdp_percent("64p"), Ok(None));
        assert!(
            parse_fairness(["--help".to_string()].into_iter(), Path::new("/x"))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn errors() {
        for bad in [
            "--groups bdp,cellular",
            "--groups bdp,bdp",
            "--others cubic,nosuch:cubic",
            "--flow",
            "--buffers 10kB,x",
            "--buffers 0%",
            "--buffers x%",
            "--others cubic+nc=off,quiche:cubic+nc=off",
            "--timeout 0",
            "--runs 0",
            "--size 0",
            "--buffer 10kB",
            "--loss 0.05",
            "--bogus 1",
            "--merge a.json,a.json",
            "--merge a.json --per-run",
            "--merge a.json --qlog-dir q",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("--loss 1%").unwrap_err().contains("own loss"));
    }
}
