//! The `bench-fairness` subcommand's command line: [`FairnessOptions`],
//! its [`Group`]s and [`FAIRNESS_USAGE`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::experiment::options::{defaults, parse_flags, parse_runs, parse_size, Options};
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
Each cell prints every run's figure, the median and min-max and the runs
meeting the target; a target check follows. Markdown goes to stdout and to
OUT/bench-fairness-TIME.md, everything (every run, the targets) to
OUT/bench-fairness-TIME.json, rewritten after every run.

Groups (--groups; targets from the issue 'hybrid as a good citizen'):
  bdp       one-BDP buffer, no loss, --size each: the flow first, the other
            first, the flow 2 s ahead, the other 2 s ahead. Share ratio
            flow / other within 0.8-1.25 in every run
  shallow   buffers --buffers (25 % and 10 % of the BDP), no loss: the flow
            first; ratio <= 1.5 in every run; and the flow alone (size/2):
            efficiency >= 0.85 in every run
  rtt-mix   one-BDP buffer at 40 ms, no loss: the flow at 40 ms against the
            flow at 80 ms, the flow at 80 ms against CUBIC at 40 ms, and
            CUBIC at 40 against 80 ms as the reference. Target: the median
            unfairness max(r, 1/r) no worse than CUBIC's own
  sharing   5 % loss both ways: 2 and 4 flows started together, size/2 each
            (Jain >= 0.98 in every run); a flow joining 10 s after another
            (3 x size each; it first carries 80 % of an equal share over one
            second within 5 s, in every run)
  loss      1 % and 5 % loss, size/4 each: the flow against quiche's CUBIC;
            no target, the shares are reported (a Padhye-limited CUBIC
            leaves most of the link unused)

  --flow SPEC      the flow under test (default hybrid; e.g. hybrid+nc=off,
                   or cubic for CUBIC's own figures)
  --others LIST    competitors of bdp and shallow (default cubic,quic-go:cubic,
                   ngtcp2:cubic,quinn:cubic; cubic is quiche's)
  --groups LIST    groups to run, in this order (default bdp,shallow,rtt-mix,
                   sharing,loss)
  --buffers LIST   the shallow group's buffers (default 25kB,10kB)
  --runs N         runs per cell (default 10)
  --size BYTES     download size per flow of bdp, shallow and rtt-mix
                   (default 20MB); the other cells scale with it as above
  --out DIR        where the markdown and JSON go (default results)
  --per-run        also print every run's table as --compete does
  --rate, --rtt, --seed, --loss-position, --spin, --no-realtime,
  --idle-timeout, --bin-dir, --linkem, --quinn-peer, --quic-go-peer, --keep:
                   as for the matrix

Roughly 2 h with the defaults (bdp 1 h). A smoke test (about 2 min):
  nc-experiment bench-fairness --groups shallow --others cubic --buffers 10kB --runs 1
";

/// Competitors of the bdp and shallow groups.
pub const FAIRNESS_OTHERS: &str = "cubic,quic-go:cubic,ngtcp2:cubic,quinn:cubic";
/// The shallow group's buffers: a quarter and a tenth of the BDP.
pub const FAIRNESS_BUFFERS: &str = "25kB,10kB";
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
    /// The shallow group's buffers.
    pub buffers: Vec<String>,
    /// Runs per cell.
    pub runs: usize,
    /// Download size of the bdp, shallow and rtt-mix groups (the other
    /// cells scale with it).
    pub size: u64,
    /// Output directory.
    pub out: PathBuf,
}

/// Comma-separated, non-empty, without repeats.
fn list(name: &str, v: &str) -> Result<Vec<String>, String> {
    let items: Vec<String> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if items.is_empty() {
        return Err(format!("{name}: empty list"));
    }
    for (i, x) in items.iter().enumerate() {
        if items[..i].contains(x) {
            return Err(format!("{name}: '{x}' given twice"));
        }
    }
    Ok(items)
}

/// A flow spec in its canonical label.
fn spec(name: &str, v: &str) -> Result<String, String> {
    Ok(FlowSpec::parse(v)
        .map_err(|e| format!("{name}: {e}"))?
        .label())
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
        others: list("", FAIRNESS_OTHERS)?,
        groups: list("", FAIRNESS_GROUPS)?
            .iter()
            .map(|g| Group::parse(g))
            .collect::<Result<_, _>>()?,
        buffers: list("", FAIRNESS_BUFFERS)?,
        runs: 10,
        size: 20_000_000,
        out: PathBuf::from("results"),
    };
    let own = |f: &mut FairnessOptions, name: &str, v: String| -> Result<bool, String> {
        match name {
            "--buffer" => return Err("--buffer: use --buffers LIST (shallow group)".into()),
            "--loss" => return Err("--loss: each group sets its own loss".into()),
            "--flow" => f.flow = spec(name, &v)?,
            "--others" => {
                f.others = list(name, &v)?
                    .iter()
                    .map(|o| spec(name, o))
                    .collect::<Result<_, _>>()?
            }
            "--groups" => {
                f.groups = list(name, &v)?
                    .iter()
                    .map(|g| Group::parse(g))
                    .collect::<Result<_, _>>()?
            }
            "--buffers" => {
                f.buffers = list(name, &v)?;
                for b in &f.buffers {
                    parse_buffer(b).map_err(|e| format!("--buffers: {e}"))?;
                }
            }
            "--runs" => f.runs = parse_runs(&v)?,
            "--size" => f.size = parse_size(name, &v)?,
            "--out" => f.out = PathBuf::from(v),
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
    Ok(Some(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<FairnessOptions, String> {
        parse_fairness(s.split_whitespace().map(String::from), Path::new("/x"))
            .map(|o| o.expect("not --help"))
    }

    #[test]
    fn defaults_and_overrides() {
        let f = parse("").unwrap();
        assert_eq!(f.flow, "hybrid");
        assert_eq!(
            f.others,
            ["cubic", "quic-go:cubic", "ngtcp2:cubic", "quinn:cubic"]
        );
        assert_eq!(f.groups, Group::ALL);
        assert_eq!(f.buffers, ["25kB", "10kB"]);
        assert_eq!((f.runs, f.size), (10, 20_000_000));
        assert_eq!(f.out, PathBuf::from("results"));
        assert!(f.base.markdown);

        let f = parse(
            "--flow hybrid+nc=off --others quic-go:cubic --groups sharing,bdp --buffers 5kB \
             --runs 3 --size 5MB --out /o --seed 7 --rtt 80ms",
        )
        .unwrap();
        assert_eq!(f.flow, "hybrid+nc=off");
        assert_eq!(f.others, ["quic-go:cubic"]);
        assert_eq!(f.groups, [Group::Sharing, Group::Bdp]);
        assert_eq!(f.buffers, ["5kB"]);
        assert_eq!((f.runs, f.size), (3, 5_000_000));
        assert_eq!(f.out, PathBuf::from("/o"));
        assert_eq!(f.base.seed, 7);
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
            "--runs 0",
            "--size 0",
            "--buffer 10kB",
            "--loss 0.05",
            "--bogus 1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("--loss 1%").unwrap_err().contains("own loss"));
    }
}
