//! `nc-experiment bench-fairness`: the cells of each [`Group`], their runs
//! (competing downloads, or the flow alone), the tables and the target
//! check (docs/results.md §5 has the figures, docs/experiments.md the
//! command).

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::compete::{run_compete, CompeteResult};
use crate::experiment::bench::{fmt_size, utc_stamp};
use crate::experiment::fairness_options::{FairnessOptions, Group};
use crate::experiment::fairness_targets::{judge, Figure, Target, Verdict};
use crate::experiment::options::{parse_loss_list, Options};
use crate::experiment::process::check_interrupted;
use crate::experiment::run::{run_one, RunResult};
use crate::experiment::table::render;
use crate::peer::FlowSpec;

/// Quiche's CUBIC: the rtt-mix reference and the loss group's competitor.
const CUBIC: &str = "cubic";
/// Head start of the bdp group's staggered cells.
const HEAD_START: Duration = Duration::from_secs(2);
/// The sharing group's late joiner starts this long after the first flow.
const JOIN_LATE: Duration = Duration::from_secs(10);

/// One cell: a set of flows on one link setting, run `runs` times.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Its group.
    pub group: Group,
    /// Row label in the group's table.
    pub label: String,
    /// Flow specs in start order (one flow: the flow alone, a plain run).
    pub flows: Vec<String>,
    /// What each run measures.
    pub figure: Figure,
    /// The target.
    pub target: Target,
    /// linkem buffer.
    pub buffer: String,
    /// Loss both ways (a probability).
    pub loss: f64,
    /// Bytes per flow.
    pub size: u64,
    /// Start of flow k after flow k-1.
    pub stagger: Duration,
    /// Round-trip propagation delay per flow (empty: `--rtt` for all).
    pub flow_rtt: Vec<Duration>,
    /// Per-run cap.
    pub timeout: Duration,
}

impl Cell {
    fn pair(group: Group, label: String, flows: [&str; 2], subject: usize) -> Cell {
        Cell {
            group,
            label,
            flows: flows.iter().map(|s| s.to_string()).collect(),
            figure: Figure::Ratio {
                subject,
                other: 1 - subject,
            },
            target: Target::None,
            buffer: "bdp".into(),
            loss: 0.0,
            size: 0,
            stagger: Duration::ZERO,
            flow_rtt: Vec::new(),
            timeout: Duration::from_secs(150),
        }
    }

    /// The matrix options of one run of this cell.
    pub fn options(&self, base: &Options) -> Result<Options, String> {
        let mut o = base.clone();
        o.buffer = self.buffer.clone();
        o.loss = parse_loss_list(&self.loss.to_string())?;
        o.size = self.size;
        o.stagger = self.stagger;
        o.flow_rtt = self.flow_rtt.clone();
        o.timeout = self.timeout;
        o.runs = 1;
        o.rows = vec![self.flows[0].clone()];
        o.compete = (self.flows.len() > 1).then(|| self.flows.clone());
        o.json = None;
        Ok(o)
    }

    /// The link setting in words.
    pub fn setting(&self) -> String {
        let mut s = format!(
            "buffer {}, loss {}%, {}{}",
            self.buffer,
            self.loss * 100.0,
            fmt_size(self.size),
            if self.flows.len() > 1 { " each" } else { "" }
        );
        if !self.stagger.is_zero() {
            s += &format!(", each {} s after the previous", self.stagger.as_secs_f64());
        }
        s
    }
}

/// The cells of the options' groups, group by group. A
/// [`Target::NoWorseThan`] refers to a cell of the same group.
pub fn plan(f: &FairnessOptions) -> Vec<Cell> {
    let mut cells = Vec::new();
    let x = f.flow.as_str();
    for &group in &f.groups {
        let first = cells.len();
        match group {
            Group::Bdp => {
                for o in &f.others {
                    for (label, flows, subject, stagger) in [
                        (
                            format!("{x} first, {o}"),
                            [x, o.as_str()],
                            0,
                            Duration::ZERO,
                        ),
                        (
                            format!("{o} first, {x}"),
                            [o.as_str(), x],
                            1,
                            Duration::ZERO,
                        ),
                        (
                            format!("{x} 2 s ahead of {o}"),
                            [x, o.as_str()],
                            0,
                            HEAD_START,
                        ),
                        (
                            format!("{o} 2 s ahead of {x}"),
                            [o.as_str(), x],
                            1,
                            HEAD_START,
                        ),
                    ] {
                        let mut c = Cell::pair(group, label, flows, subject);
                        c.target = Target::Within { lo: 0.8, hi: 1.25 };
                        c.size = f.size;
                        c.stagger = stagger;
                        cells.push(c);
                    }
                }
            }
            Group::Shallow => {
                for b in &f.buffers {
                    for o in &f.others {
                        let mut c = Cell::pair(group, format!("{b}: {x}, {o}"), [x, o], 0);
                        c.target = Target::AtMost(1.5);
                        c.buffer = b.clone();
                        c.size = f.size;
                        cells.push(c);
                    }
                    cells.push(Cell {
                        label: format!("{b}: {x} alone"),
                        flows: vec![x.to_string()],
                        figure: Figure::Efficiency,
                        target: Target::AtLeast(0.85),
                        buffer: b.clone(),
                        size: f.size / 2,
                        timeout: Duration::from_secs(60),
                        ..Cell::pair(group, String::new(), [x, x], 0)
                    });
                }
            }
            Group::RttMix => {
                let (near, far) = (f.base.rtt, f.base.rtt * 2);
                let ms = |d: Duration| d.as_millis();
                let reference = first + 2;
                for (label, flows, rtts, target) in [
                    (
                        format!("{x} {} ms, {x} {} ms", ms(near), ms(far)),
                        [x, x],
                        [near, far],
                        Target::NoWorseThan(reference),
                    ),
                    (
                        format!("{x} {} ms, {CUBIC} {} ms", ms(far), ms(near)),
                        [x, CUBIC],
                        [far, near],
                        Target::NoWorseThan(reference),
                    ),
                    (
                        format!("reference: {CUBIC} {} ms, {CUBIC} {} ms", ms(near), ms(far)),
                        [CUBIC, CUBIC],
                        [near, far],
                        Target::None,
                    ),
                ] {
                    let mut c = Cell::pair(group, label, flows, 0);
                    c.target = target;
                    c.size = f.size;
                    c.flow_rtt = rtts.to_vec();
                    cells.push(c);
                }
            }
            Group::Sharing => {
                for n in [2, 4] {
                    cells.push(Cell {
                        label: format!("{n} × {x} together"),
                        flows: vec![x.to_string(); n],
                        figure: Figure::Jain,
                        target: Target::AtLeast(0.98),
                        loss: 0.05,
                        size: f.size / 2,
                        timeout: Duration::from_secs(120),
                        ..Cell::pair(group, String::new(), [x, x], 0)
                    });
                }
                cells.push(Cell {
                    label: format!("{x} joining {x} {} s late", JOIN_LATE.as_secs()),
                    figure: Figure::JoinFair,
                    target: Target::AtMost(5.0),
                    loss: 0.05,
                    size: f.size * 3,
                    stagger: JOIN_LATE,
                    ..Cell::pair(group, String::new(), [x, x], 0)
                });
            }
            Group::Loss => {
                for p in [0.01, 0.05] {
                    let mut c = Cell::pair(
                        group,
                        format!("{}%: {x}, {CUBIC}", p * 100.0),
                        [x, CUBIC],
                        0,
                    );
                    c.loss = p;
                    c.size = f.size / 4;
                    cells.push(c);
                }
            }
        }
    }
    cells
}

/// One run of a cell.
#[derive(Clone, Debug, Serialize)]
pub struct CellRun {
    /// Index of the cell in the plan.
    pub cell: usize,
    /// Run index (seed = `--seed` + run).
    pub run: usize,
    /// The competing run, for cells of two or more flows.
    pub compete: Option<CompeteResult>,
    /// The run of the flow alone.
    pub alone: Option<RunResult>,
    /// The cell's figure in this run.
    pub value: Option<f64>,
}

/// Runs one cell once.
pub fn run_cell(
    f: &FairnessOptions,
    cells: &[Cell],
    i: usize,
    run: usize,
    work: &Path,
    certs: &Path,
) -> CellRun {
    let c = &cells[i];
    let mut out = CellRun {
        cell: i,
        run,
        compete: None,
        alone: None,
        value: None,
    };
    let o = match c.options(&f.base) {
        Ok(o) => o,
        Err(e) => {
            out.compete = Some(CompeteResult {
                error: Some(e),
                ..Default::default()
            });
            return out;
        }
    };
    let dir = work.join(format!("cell-{i}"));
    if c.flows.len() == 1 {
        let r = run_one(&o, &c.flows[0], &o.loss[0], run, &dir, certs);
        out.value = c.figure.of_alone(&r);
        out.alone = Some(r);
    } else {
        let r = run_compete(&o, &c.flows, &o.loss[0], run, &dir, certs);
        out.value = c.figure.of_compete(&r);
        out.compete = Some(r);
    }
    out
}

/// The figures of a cell's runs.
pub fn values(runs: &[CellRun], cell: usize) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.cell == cell)
        .filter_map(|r| r.value)
        .collect()
}

/// The verdict of every cell.
pub fn verdicts(cells: &[Cell], runs: &[CellRun], planned: usize) -> Vec<Verdict> {
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let reference = match c.target {
                Target::NoWorseThan(j) => Some(values(runs, j)),
                _ => None,
            };
            judge(&values(runs, i), planned, c.target, reference.as_deref())
        })
        .collect()
}

/// The markdown table of one group: every run's figure (in run order, `–`
/// for a failed run), median (min–max), runs meeting the target.
pub fn group_table(cells: &[Cell], runs: &[CellRun], verdicts: &[Verdict], group: Group) -> String {
    let mut t = vec![[
        "cell",
        "setting",
        "figure",
        "per run",
        "median (min–max)",
        "target",
        "met",
    ]
    .map(String::from)
    .to_vec()];
    for (i, c) in cells.iter().enumerate().filter(|(_, c)| c.group == group) {
        let mut mine: Vec<&CellRun> = runs.iter().filter(|r| r.cell == i).collect();
        mine.sort_by_key(|r| r.run);
        let per_run: Vec<String> = mine
            .iter()
            .map(|r| r.value.map_or("–".into(), |v| format!("{v:.2}")))
            .collect();
        let v = &verdicts[i];
        let summary = v.summary.map_or("–".into(), |s| {
            format!("{:.2} ({:.2}–{:.2})", s.median.v, s.min.v, s.max.v)
        });
        let reference = match c.target {
            Target::NoWorseThan(j) => cells.get(j).map(|r| r.label.as_str()),
            _ => None,
        };
        let met = match (v.met, v.meeting) {
            (Some(m), Some(n)) => format!("{} ({n}/{})", if m { "yes" } else { "no" }, v.planned),
            (Some(m), None) => (if m { "yes" } else { "no" }).into(),
            (None, _) => "–".into(),
        };
        let figure = match c.figure {
            Figure::Ratio { .. } if c.flows.len() == 2 => {
                format!(
                    "{} / {}",
                    c.flows[subject_of(c)],
                    c.flows[1 - subject_of(c)]
                )
            }
            fig => fig.name().into(),
        };
        t.push(vec![
            c.label.clone(),
            c.setting(),
            figure,
            per_run.join(" "),
            summary,
            c.target.describe(reference),
            met,
        ]);
    }
    render(&t, true, 4, false)
}

fn subject_of(c: &Cell) -> usize {
    match c.figure {
        Figure::Ratio { subject, .. } => subject,
        _ => 0,
    }
}

/// The target check: one line per group with a target.
pub fn target_check(cells: &[Cell], verdicts: &[Verdict], groups: &[Group]) -> String {
    let mut s = String::from("#### Target check\n\n");
    for &g in groups {
        let mine: Vec<(usize, &Cell)> = cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.group == g && c.target != Target::None)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let judged: Vec<&Verdict> = mine
            .iter()
            .map(|&(i, _)| &verdicts[i])
            .filter(|v| v.met.is_some())
            .collect();
        let met = judged.iter().filter(|v| v.met == Some(true)).count();
        let (runs_ok, runs_all) = mine
            .iter()
            .filter_map(|&(i, _)| verdicts[i].meeting.map(|n| (n, verdicts[i].planned)))
            .fold((0, 0), |(a, b), (n, p)| (a + n, b + p));
        let missed: Vec<&str> = mine
            .iter()
            .filter(|&&(i, _)| verdicts[i].met == Some(false))
            .map(|(_, c)| c.label.as_str())
            .collect();
        s += &format!(
            "- {}: {met} of {} cells met{}{}{}\n",
            g.name(),
            mine.len(),
            if runs_all > 0 {
                format!(" ({runs_ok} of {runs_all} runs meet the per-run target)")
            } else {
                String::new()
            },
            if judged.len() < mine.len() {
                format!("; {} not measured", mine.len() - judged.len())
            } else {
                String::new()
            },
            if missed.is_empty() {
                String::new()
            } else {
                format!("; missed: {}", missed.join("; "))
            }
        );
    }
    s
}

/// Everything written to `OUT/bench-fairness-TIME.json`.
#[derive(Serialize)]
pub struct FairnessReport<'a> {
    /// UTC start time (also in the file names).
    pub started: &'a str,
    /// The options.
    pub options: &'a FairnessOptions,
    /// The cells.
    pub cells: &'a [Cell],
    /// Every run so far.
    pub runs: &'a [CellRun],
    /// Every cell's verdict.
    pub verdicts: &'a [Verdict],
}

fn write(out: &Path, started: &str, ext: &str, text: &str) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let p = out.join(format!("bench-fairness-{started}.{ext}"));
    std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(p.display().to_string())
}

/// The document: header, one table per group, the target check.
pub fn document(f: &FairnessOptions, started: &str, cells: &[Cell], runs: &[CellRun]) -> String {
    let verdicts = verdicts(cells, runs, f.runs);
    let mut s = format!(
        "## bench-fairness {started} UTC\n\n{} against {} on {:.0} Mbit/s, RTT {} ms; {} per cell. \
         Share ratio = the bottleneck share of the flow under test over the other flow's while \
         both were active (linkem's counters, as nc-experiment --compete).\n\n",
        f.flow,
        f.others.join(", "),
        f.base.rate_bps as f64 / 1e6,
        f.base.rtt.as_millis(),
        if f.runs == 1 {
            format!("1 run, seed {}", f.base.seed)
        } else {
            format!(
                "{} runs, seeds {}–{}",
                f.runs,
                f.base.seed,
                f.base.seed + f.runs as u64 - 1
            )
        }
    );
    for &g in &f.groups {
        s += &format!("#### {}\n\n", g.name());
        s += &group_table(cells, runs, &verdicts, g);
        s += "\n";
    }
    s += &target_check(cells, &verdicts, &f.groups);
    s
}

/// Runs every group; prints the document and writes it with the JSON
/// report. Exit code: 0, 1 if no run measured anything, 130 when
/// interrupted.
pub fn run_fairness(f: &FairnessOptions, work: &Path, certs: &Path) -> Result<u8, String> {
    let cells = plan(f);
    let mut specs: Vec<&str> = cells
        .iter()
        .flat_map(|c| c.flows.iter().map(String::as_str))
        .collect();
    specs.sort_unstable();
    specs.dedup();
    for s in specs {
        FlowSpec::parse(s)?.prepare(&f.base.tools)?;
    }
    let started = utc_stamp(SystemTime::now());
    let mut runs: Vec<CellRun> = Vec::new();
    let t0 = Instant::now();
    let mut interrupted = false;
    'groups: for &g in &f.groups {
        let mine: Vec<usize> = (0..cells.len()).filter(|&i| cells[i].group == g).collect();
        let total = mine.len() * f.runs;
        for run in 0..f.runs {
            for &i in &mine {
                if check_interrupted().is_err() {
                    interrupted = true;
                    break 'groups;
                }
                let n = runs.iter().filter(|r| cells[r.cell].group == g).count() + 1;
                eprint!(
                    "[{} {n}/{total}] {} run={run} ... ",
                    g.name(),
                    cells[i].label
                );
                let r = run_cell(f, &cells, i, run, work, certs);
                match (r.value, r.compete.as_ref().and_then(|c| c.error.clone())) {
                    (Some(v), _) => eprintln!("{} {v:.3}", cells[i].figure.name()),
                    (None, Some(e)) => eprintln!("FAILED: {e}"),
                    (None, None) => eprintln!(
                        "FAILED: {}",
                        r.alone
                            .as_ref()
                            .and_then(|a| a.error.clone())
                            .unwrap_or_default()
                    ),
                }
                runs.push(r);
                let verdicts = verdicts(&cells, &runs, f.runs);
                let report = FairnessReport {
                    started: &started,
                    options: f,
                    cells: &cells,
                    runs: &runs,
                    verdicts: &verdicts,
                };
                let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                if let Err(e) = write(&f.out, &started, "json", &(json + "\n")) {
                    eprintln!("nc-experiment: warning: {e}");
                }
            }
        }
    }
    let doc = document(f, &started, &cells, &runs)
        + &format!("\n(took {:.1} min)\n", t0.elapsed().as_secs_f64() / 60.0);
    print!("{doc}");
    if f.base.per_run {
        for (i, c) in cells.iter().enumerate() {
            let rows: Vec<CompeteResult> = runs
                .iter()
                .filter(|r| r.cell == i)
                .filter_map(|r| r.compete.clone())
                .collect();
            if !rows.is_empty() {
                println!("\n{}\n", c.label);
                print!("{}", crate::compete::format_compete_table(&rows, true));
            }
        }
    }
    match write(&f.out, &started, "md", &doc) {
        Ok(p) => eprintln!("wrote {p}"),
        Err(e) => eprintln!("nc-experiment: warning: {e}"),
    }
    if interrupted {
        return Ok(130);
    }
    Ok(if runs.iter().all(|r| r.value.is_none()) {
        1
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compete::FlowResult;
    use crate::experiment::fairness_options::parse_fairness;

    fn opts(args: &str) -> FairnessOptions {
        parse_fairness(args.split_whitespace().map(String::from), Path::new("/x"))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn the_default_plan() {
        let f = opts("");
        let cells = plan(&f);
        let count = |g| cells.iter().filter(|c| c.group == g).count();
        // Four orders × four CUBICs; two buffers × (four pairs + alone);
        // three RTT cells; 2, 4 and a joiner; two losses.
        assert_eq!(
            [
                Group::Bdp,
                Group::Shallow,
                Group::RttMix,
                Group::Sharing,
                Group::Loss
            ]
            .map(count),
            [16, 10, 3, 3, 2]
        );
        // The flow under test is always the ratio's numerator.
        for c in &cells {
            if let Figure::Ratio { subject, other } = c.figure {
                assert_eq!(subject + other, 1);
                if c.group != Group::RttMix || !c.label.starts_with("reference") {
                    assert_eq!(c.flows[subject], "hybrid", "{}", c.label);
                }
            }
        }
        let joined = cells
            .iter()
            .find(|c| c.label == "ngtcp2:cubic 2 s ahead of hybrid")
            .unwrap();
        assert_eq!(joined.flows, ["ngtcp2:cubic", "hybrid"]);
        assert_eq!(joined.stagger, Duration::from_secs(2));
        assert_eq!(
            joined.figure,
            Figure::Ratio {
                subject: 1,
                other: 0
            }
        );
        let rtt: Vec<&Cell> = cells.iter().filter(|c| c.group == Group::RttMix).collect();
        let reference = cells
            .iter()
            .position(|c| c.label.starts_with("reference"))
            .unwrap();
        assert_eq!(rtt[0].target, Target::NoWorseThan(reference));
        assert_eq!(
            rtt[1].flow_rtt,
            [Duration::from_millis(80), Duration::from_millis(40)]
        );
        let alone = cells
            .iter()
            .find(|c| c.label == "10kB: hybrid alone")
            .unwrap();
        assert_eq!((alone.flows.len(), alone.figure), (1, Figure::Efficiency));
        let o = alone.options(&f.base).unwrap();
        assert_eq!((o.buffer.as_str(), o.compete.is_none()), ("10kB", true));
        let four = cells
            .iter()
            .find(|c| c.label == "4 × hybrid together")
            .unwrap();
        let o = four.options(&f.base).unwrap();
        assert_eq!(o.compete.as_ref().unwrap().len(), 4);
        assert_eq!(o.loss[0].spec, "bernoulli:0.05");
    }

    #[test]
    fn tables_and_check() {
        let f = opts("--groups shallow --others cubic --buffers 10kB --runs 2");
        let cells = plan(&f);
        assert_eq!(cells.len(), 2);
        let pair = |run, a: f64, b: f64| CellRun {
            cell: 0,
            run,
            compete: Some(CompeteResult {
                flows: vec![
                    FlowResult {
                        share_mbps: Some(a),
                        ..Default::default()
                    },
                    FlowResult {
                        share_mbps: Some(b),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            alone: None,
            value: Some(a / b),
        };
        let runs = vec![
            pair(1, 12.0, 8.0),
            pair(0, 10.0, 10.0),
            CellRun {
                cell: 1,
                run: 0,
                compete: None,
                alone: None,
                value: Some(0.84),
            },
        ];
        let doc = document(&f, "T", &cells, &runs);
        // Runs in run order, the alone cell missing its second run.
        assert!(
            doc.contains("| 1.00 1.50 | 1.25 (1.00–1.50) | every run ≤ 1.5 | yes (2/2) |"),
            "{doc}"
        );
        assert!(
            doc.contains("| 0.84 | 0.84 (0.84–0.84) | every run ≥ 0.85 | no (0/2) |"),
            "{doc}"
        );
        assert!(doc.contains("| hybrid / cubic |"), "{doc}");
        assert!(
            doc.contains("- shallow: 1 of 2 cells met (2 of 4 runs meet the per-run target); missed: 10kB: hybrid alone"),
            "{doc}"
        );
        assert!(doc.contains("2 runs, seeds 1–2 per cell"), "{doc}");
    }
}
