//! `nc-experiment bench-fairness`: the cells of each [`Group`], their runs
//! (competing downloads, or the flow alone), the tables and the target
//! check (docs/emulator.md, "bench-fairness").

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::compete::{format_compete_table, run_compete, CompeteResult};
use crate::experiment::bench::{fmt_size, utc_stamp};
use crate::experiment::fairness_options::{bdp_percent, FairnessOptions, Group};
use crate::experiment::fairness_targets::{fmt_value, judge, Figure, Target, Verdict};
use crate::experiment::options::{parse_loss_list, Options};
use crate::experiment::process::check_interrupted;
use crate::experiment::run::{run_one, RunResult};
use crate::experiment::table::render;
use crate::peer::FlowSpec;

/// Quiche's CUBIC without coding: the rtt-mix reference and the loss
/// group's competitor.
pub const CUBIC: &str = "cubic+nc=off";
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
    /// The flows as the figure column names them.
    pub names: Vec<String>,
    /// What each run measures.
    pub figure: Figure,
    /// The target.
    pub target: Target,
    /// linkem buffer.
    pub buffer: String,
    /// The buffer as tables show it.
    pub buffer_label: String,
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
    fn new(group: Group, label: String, flows: &[&str], figure: Figure, target: Target) -> Cell {
        Cell {
            group,
            label,
            flows: flows.iter().map(|s| s.to_string()).collect(),
            names: flows.iter().map(|s| s.to_string()).collect(),
            figure,
            target,
            buffer: "bdp".into(),
            buffer_label: "one BDP".into(),
            loss: 0.0,
            size: 0,
            stagger: Duration::ZERO,
            flow_rtt: Vec::new(),
            timeout: Duration::ZERO,
        }
    }

    fn ratio(
        group: Group,
        label: String,
        flows: [&str; 2],
        subject: usize,
        target: Target,
    ) -> Cell {
        let figure = Figure::Ratio {
            subject,
            other: 1 - subject,
        };
        Cell::new(group, label, &flows, figure, target)
    }

    /// A per-run cap that lets every flow finish: each flow's rate is
    /// taken as its equal share of `rate_bps`, or under loss `p` the
    /// Padhye rate of a Reno-like flow (`1.22 MSS / (RTT √p)`, MSS 1350
    /// bytes) if lower, and the cap is three times the time that takes,
    /// plus the staggered starts and 30 s of set-up and slack.
    pub fn timeout_for(&self, rate_bps: u64, rtt: Duration) -> Duration {
        let n = self.flows.len() as f64;
        let rtt = self
            .flow_rtt
            .iter()
            .copied()
            .max()
            .unwrap_or(rtt)
            .as_secs_f64()
            .max(1e-3);
        let mut per_flow = rate_bps as f64 / n;
        if self.loss > 0.0 {
            per_flow = per_flow.min(1.22 * 1350.0 * 8.0 / (rtt * self.loss.sqrt()));
        }
        let transfer = self.size as f64 * 8.0 / per_flow.max(1.0);
        Duration::from_secs_f64(3.0 * transfer + 30.0)
            + self.stagger * (self.flows.len() as u32 - 1)
    }

    /// The matrix options of one run of this cell (cell `i` of the plan).
    pub fn options(&self, base: &Options, i: usize) -> Result<Options, String> {
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
        // Runs of two cells with the same flows would share a qlog directory.
        o.qlog_dir = base.qlog_dir.as_ref().map(|d| d.join(format!("cell-{i}")));
        Ok(o)
    }

    /// The link setting in words.
    pub fn setting(&self) -> String {
        let mut s = format!(
            "{}, loss {}%, {}{}",
            self.buffer_label,
            self.loss * 100.0,
            fmt_size(self.size),
            if self.flows.len() > 1 { " each" } else { "" }
        );
        if !self.stagger.is_zero() {
            s += &format!(", {} s apart", self.stagger.as_secs_f64());
        }
        s
    }

    /// The figure column: for a ratio, which flow is over which.
    pub fn figure_label(&self) -> String {
        match self.figure {
            Figure::Ratio { subject, other } => {
                format!("{} / {}", self.names[subject], self.names[other])
            }
            fig => fig.name().into(),
        }
    }
}

/// The linkem spec and label of a `--buffers` entry: `N%` of the BDP at
/// `rate_bps` and `rtt` in bytes, or the entry itself.
pub fn shallow_buffer(b: &str, rate_bps: u64, rtt: Duration) -> (String, String) {
    match bdp_percent(b) {
        Ok(Some(p)) => {
            let bytes = (rate_bps as f64 / 8.0 * rtt.as_secs_f64() * p / 100.0).round() as u64;
            let kb = (bytes as f64 / 100.0).round() / 10.0;
            (format!("{bytes}B"), format!("{b} BDP ({kb} kB)"))
        }
        _ => (b.to_string(), b.to_string()),
    }
}

/// A competitor's name in labels: "another X" when it is the flow under
/// test's own spec.
fn other_name(flow: &str, other: &str) -> String {
    if flow == other {
        format!("another {other}")
    } else {
        other.to_string()
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
                let band = Target::Within { lo: 0.8, hi: 1.25 };
                for o in &f.others {
                    let o = o.as_str();
                    // The flow under test against its own kind: "another".
                    let on = other_name(x, o);
                    for (label, flows, subject, stagger) in [
                        (format!("{x} first, {on}"), [x, o], 0, Duration::ZERO),
                        (format!("{on} first, {x}"), [o, x], 1, Duration::ZERO),
                        (format!("{x} 2 s ahead of {on}"), [x, o], 0, HEAD_START),
                        (format!("{on} 2 s ahead of {x}"), [o, x], 1, HEAD_START),
                    ] {
                        let mut c = Cell::ratio(group, label, flows, subject, band);
                        c.names[1 - subject] = on.clone();
                        c.size = f.size;
                        c.stagger = stagger;
                        cells.push(c);
                    }
                }
            }
            Group::Shallow => {
                for b in &f.buffers {
                    let (spec, label) = shallow_buffer(b, f.base.rate_bps, f.base.rtt);
                    for o in &f.others {
                        let on = other_name(x, o);
                        let mut c = Cell::ratio(
                            group,
                            format!("{b}: {x}, {on}"),
                            [x, o],
                            0,
                            Target::AtMost(1.5),
                        );
                        c.names[1] = on;
                        c.size = f.size;
                        (c.buffer, c.buffer_label) = (spec.clone(), label.clone());
                        cells.push(c);
                    }
                    let mut c = Cell::new(
                        group,
                        format!("{b}: {x} alone"),
                        &[x],
                        Figure::Efficiency,
                        Target::AtLeast(0.85),
                    );
                    c.size = f.size;
                    (c.buffer, c.buffer_label) = (spec, label);
                    cells.push(c);
                }
            }
            Group::RttMix => {
                let (near, far) = (f.base.rtt, f.base.rtt * 2);
                let ms = |d: Duration| format!("{} ms", d.as_millis());
                let flow = |spec: &str, d: Duration| format!("{spec} {}", ms(d));
                for (label, flows, rtts, target) in [
                    (
                        format!("{}, {}", flow(x, near), flow(x, far)),
                        [x, x],
                        [near, far],
                        Target::NoWorseThan(first + 2),
                    ),
                    (
                        format!("{}, {}", flow(x, far), flow(CUBIC, near)),
                        [x, CUBIC],
                        [far, near],
                        Target::NoWorseThan(first + 3),
                    ),
                    (
                        format!("reference: {}, {}", flow(CUBIC, near), flow(CUBIC, far)),
                        [CUBIC, CUBIC],
                        [near, far],
                        Target::None,
                    ),
                    (
                        format!("reference: {}, {}", flow(CUBIC, far), flow(CUBIC, near)),
                        [CUBIC, CUBIC],
                        [far, near],
                        Target::None,
                    ),
                ] {
                    let mut c = Cell::ratio(group, label, flows, 0, target);
                    c.names = vec![flow(flows[0], rtts[0]), flow(flows[1], rtts[1])];
                    c.size = f.size;
                    c.flow_rtt = rtts.to_vec();
                    cells.push(c);
                }
            }
            Group::Sharing => {
                for n in [2, 4] {
                    let mut c = Cell::new(
                        group,
                        format!("{n} × {x} together"),
                        &vec![x; n],
                        Figure::Jain,
                        Target::AtLeast(0.98),
                    );
                    c.loss = 0.05;
                    c.size = f.size;
                    cells.push(c);
                }
                let mut c = Cell::new(
                    group,
                    format!("{x} joining {x} {} s late", JOIN_LATE.as_secs()),
                    &[x, x],
                    Figure::JoinFair,
                    Target::AtMost(5.0),
                );
                c.loss = 0.05;
                c.size = f.size * 3;
                c.stagger = JOIN_LATE;
                cells.push(c);
            }
            Group::Loss => {
                for p in [0.01, 0.05] {
                    let label = format!("{}%: {x}, {CUBIC}", p * 100.0);
                    let mut c = Cell::ratio(group, label, [x, CUBIC], 0, Target::None);
                    c.loss = p;
                    c.size = f.size / 4;
                    cells.push(c);
                }
            }
        }
    }
    for c in &mut cells {
        c.timeout = f
            .timeout
            .unwrap_or_else(|| c.timeout_for(f.base.rate_bps, f.base.rtt));
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

impl CellRun {
    /// Why the run has no figure.
    pub fn failure(&self) -> String {
        let e = match (&self.compete, &self.alone) {
            (Some(c), _) => c.error.clone().or_else(|| {
                c.overlap_s
                    .is_none()
                    .then(|| "the flows did not overlap".to_string())
            }),
            (None, Some(a)) => a.error.clone().or_else(|| Some(format!("{:?}", a.outcome))),
            (None, None) => None,
        };
        e.unwrap_or_else(|| "no figure".into())
    }
}

/// Runs one cell once; its work directory goes unless `--keep`.
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
    let o = match c.options(&f.base, i) {
        Ok(o) => o,
        Err(e) => {
            out.compete = Some(CompeteResult {
                error: Some(e),
                ..Default::default()
            });
            return out;
        }
    };
    let dir = work.join(format!("cell-{i}-run-{run}"));
    if c.flows.len() == 1 {
        let r = run_one(&o, &c.flows[0], &o.loss[0], run, &dir, certs);
        out.value = c.figure.of_alone(&r);
        out.alone = Some(r);
    } else {
        let r = run_compete(&o, &c.flows, &o.loss[0], run, &dir, certs);
        out.value = c.figure.of_compete(&r);
        out.compete = Some(r);
    }
    if !f.base.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    out
}

/// The figures of a cell's runs, and how many runs were made.
pub fn values(runs: &[CellRun], cell: usize) -> (Vec<f64>, usize) {
    let mine = runs.iter().filter(|r| r.cell == cell);
    (mine.clone().filter_map(|r| r.value).collect(), mine.count())
}

/// The verdict of every cell over the runs made so far.
pub fn verdicts(cells: &[Cell], runs: &[CellRun]) -> Vec<Verdict> {
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let reference = match c.target {
                Target::NoWorseThan(j) => Some(values(runs, j)),
                _ => None,
            };
            let (v, n) = values(runs, i);
            judge(
                &v,
                n,
                c.target,
                reference.as_ref().map(|(v, n)| (v.as_slice(), *n)),
            )
        })
        .collect()
}

/// The markdown table of one group: every run's figure in run order (`–`
/// for a failed run, in bold if it misses a per-run target), median
/// (min–max), the target and the runs meeting it.
pub fn group_table(
    cells: &[Cell],
    runs: &[CellRun],
    verdicts: &[Verdict],
    group: Group,
    planned: usize,
) -> String {
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
            .map(|r| match r.value {
                Some(v) if c.target.run_meets(v) == Some(false) => format!("**{}**", fmt_value(v)),
                Some(v) => fmt_value(v),
                None => "–".into(),
            })
            .collect();
        let v = &verdicts[i];
        let summary = v.summary.map_or("–".into(), |s| {
            format!(
                "{} ({}–{})",
                fmt_value(s.median.v),
                fmt_value(s.min.v),
                fmt_value(s.max.v)
            )
        });
        let mut target = c.target.describe();
        if let Some((u, r)) = v.unfairness {
            target += &format!(" ({} vs {})", fmt_value(u), fmt_value(r));
        }
        let mut met = match (v.met, v.meeting) {
            (Some(m), Some(n)) => format!("{} ({n}/{})", if m { "yes" } else { "no" }, v.attempted),
            (Some(m), None) => (if m { "yes" } else { "no" }).into(),
            (None, _) if v.measured == 0 && v.attempted > 0 => "not measured".into(),
            (None, _) => "–".into(),
        };
        if v.attempted < planned {
            met += &format!(", {} of {planned} runs made", v.attempted);
        }
        t.push(vec![
            c.label.clone(),
            c.setting(),
            c.figure_label(),
            per_run.join(" "),
            summary,
            target,
            met,
        ]);
    }
    render(&t, true, 4, false)
}

/// The target check: one line per group with a target.
pub fn target_check(cells: &[Cell], verdicts: &[Verdict], groups: &[Group]) -> String {
    let mut s = String::from("#### Target check\n\n");
    for &g in groups {
        let mine: Vec<(&Cell, &Verdict)> = cells
            .iter()
            .zip(verdicts)
            .filter(|(c, _)| c.group == g && c.target != Target::None)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let met = mine.iter().filter(|(_, v)| v.met == Some(true)).count();
        let unjudged = mine.iter().filter(|(_, v)| v.met.is_none()).count();
        let (runs_ok, runs_all) = mine
            .iter()
            .filter_map(|(_, v)| v.meeting.map(|n| (n, v.attempted)))
            .fold((0, 0), |(a, b), (n, p)| (a + n, b + p));
        let missed: Vec<&str> = mine
            .iter()
            .filter(|(_, v)| v.met == Some(false))
            .map(|(c, _)| c.label.as_str())
            .collect();
        s += &format!("- {}: {met} of {} cells met", g.name(), mine.len());
        if runs_all > 0 {
            s += &format!(" ({runs_ok} of {runs_all} runs meet their per-run target)");
        }
        if unjudged > 0 {
            s += &format!("; {unjudged} not measured");
        }
        if !missed.is_empty() {
            s += &format!("; missed: {}", missed.join("; "));
        }
        s += "\n";
    }
    s
}

/// Everything written to `OUT/bench-fairness-TIME.json`.
#[derive(Serialize)]
pub struct FairnessReport<'a> {
    /// With `--merge`: the reports the runs come from (their JSON keeps
    /// each run's details).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub merged_from: &'a [String],
    /// The seeds planned (a run's seed is `options.base.seed` + its run
    /// index; merged reports may have gaps).
    pub seeds: &'a [u64],
    /// UTC start time (also in the file names).
    pub started: &'a str,
    /// The options.
    pub options: &'a FairnessOptions,
    /// The cells.
    pub cells: &'a [Cell],
    /// Every run so far.
    pub runs: &'a [CellRun],
    /// Every cell's verdict over those runs.
    pub verdicts: &'a [Verdict],
}

/// Writes `OUT/bench-fairness-STARTED.EXT`; returns its path.
pub fn write_report(out: &Path, started: &str, ext: &str, text: &str) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let p = out.join(format!("bench-fairness-{started}.{ext}"));
    std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(p.display().to_string())
}

/// The document: header, one table per group, the target check (and with
/// `--per-run` each cell's `--compete` table).
pub fn document(f: &FairnessOptions, started: &str, cells: &[Cell], runs: &[CellRun]) -> String {
    let seeds: Vec<u64> = (0..f.runs as u64).map(|r| f.base.seed + r).collect();
    document_for(f, started, &seeds, cells, runs)
}

/// Seeds as ranges: `1–5, 11–15`.
pub fn seed_ranges(seeds: &[u64]) -> String {
    let mut v = seeds.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for s in v {
        match ranges.last_mut() {
            Some((_, hi)) if *hi + 1 == s => *hi = s,
            _ => ranges.push((s, s)),
        }
    }
    let parts: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}–{b}")
            }
        })
        .collect();
    parts.join(", ")
}

/// [`document`] for the runs of the given seeds (each cell planned once
/// per seed).
pub fn document_for(
    f: &FairnessOptions,
    started: &str,
    seeds: &[u64],
    cells: &[Cell],
    runs: &[CellRun],
) -> String {
    let verdicts = verdicts(cells, runs);
    let seeds_text = match seeds.len() {
        1 => format!("1 run, seed {}", seed_ranges(seeds)),
        n => format!("{n} runs, seeds {}", seed_ranges(seeds)),
    };
    let mut s = format!(
        "## bench-fairness {started} UTC\n\n{} on {:.0} Mbit/s, RTT {} ms, {seeds_text} per cell; \
         bdp and shallow against {}, rtt-mix and loss against {CUBIC} (quiche's CUBIC without \
         coding). Share ratio = the bottleneck share of the first flow named over the other's \
         while both were active (linkem's counters, as nc-experiment --compete); per run in \
         run order, misses of a per-run target in bold, ∞ = the other flow got nothing or the \
         joiner never its share.\n\n",
        f.flow,
        f.base.rate_bps as f64 / 1e6,
        f.base.rtt.as_millis(),
        f.others.join(", "),
    );
    for &g in &f.groups {
        s += &format!("#### {}\n\n", g.name());
        s += &group_table(cells, runs, &verdicts, g, seeds.len());
        s += "\n";
    }
    s += &target_check(cells, &verdicts, &f.groups);
    if f.base.per_run {
        for (i, c) in cells.iter().enumerate() {
            let rows: Vec<CompeteResult> = runs
                .iter()
                .filter(|r| r.cell == i)
                .filter_map(|r| r.compete.clone())
                .collect();
            if !rows.is_empty() {
                s += &format!(
                    "\n##### {}\n\n{}",
                    c.label,
                    format_compete_table(&rows, true)
                );
            }
        }
    }
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
    let seeds: Vec<u64> = (0..f.runs as u64).map(|r| f.base.seed + r).collect();
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
                match r.value {
                    Some(v) => eprintln!("{} {}", cells[i].figure.name(), fmt_value(v)),
                    None => eprintln!("FAILED: {}", r.failure()),
                }
                runs.push(r);
                let verdicts = verdicts(&cells, &runs);
                let report = FairnessReport {
                    merged_from: &[],
                    seeds: &seeds,
                    started: &started,
                    options: f,
                    cells: &cells,
                    runs: &runs,
                    verdicts: &verdicts,
                };
                let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                if let Err(e) = write_report(&f.out, &started, "json", &(json + "\n")) {
                    eprintln!("nc-experiment: warning: {e}");
                }
            }
        }
    }
    let doc = document(f, &started, &cells, &runs)
        + &format!("\n(took {:.1} min)\n", t0.elapsed().as_secs_f64() / 60.0);
    print!("{doc}");
    match write_report(&f.out, &started, "md", &doc) {
        Ok(p) => eprintln!("wrote {p}"),
        Err(e) => eprintln!("nc-experiment: warning: {e}"),
    }
    if interrupted {
        return Ok(130);
    }
    Ok(exit_code(&runs))
}

/// The exit code of a report: 0, or 1 if no run measured anything.
pub fn exit_code(runs: &[CellRun]) -> u8 {
    u8::from(runs.iter().all(|r| r.value.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compete::FlowResult;
    use crate::experiment::fairness_options::tests::opts;

    #[test]
    fn the_default_plan() {
        let f = opts("");
        let cells = plan(&f);
        let count = |g| cells.iter().filter(|c| c.group == g).count();
        // Four orders × four CUBICs; two buffers × (four pairs + alone);
        // two RTT cells and their references; 2, 4 and a joiner; two losses.
        assert_eq!(Group::ALL.map(count), [16, 10, 4, 3, 2]);
        // The flow under test is always the ratio's numerator.
        for c in &cells {
            if let Figure::Ratio { subject, other } = c.figure {
                assert_eq!(subject + other, 1);
                if !c.label.starts_with("reference") {
                    assert_eq!(c.flows[subject], "hybrid", "{}", c.label);
                }
            }
            assert!(c.timeout >= Duration::from_secs(30), "{}", c.label);
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
        assert_eq!(joined.figure_label(), "hybrid / ngtcp2:cubic");
        // 20 MB at half of 20 Mbit/s, three times, plus 30 s and the stagger.
        assert_eq!(joined.timeout, Duration::from_secs(80));
        let plain = cells
            .iter()
            .find(|c| c.label == "cubic+nc=off first, hybrid")
            .unwrap();
        assert_eq!(plain.flows, ["cubic+nc=off", "hybrid"]);

        // RTT mix: each cell against the CUBIC pair in the same order.
        let rtt: Vec<(usize, &Cell)> = cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.group == Group::RttMix)
            .collect();
        let ms = Duration::from_millis;
        for &(_, c) in &rtt[..2] {
            let Target::NoWorseThan(j) = c.target else {
                panic!("{}", c.label)
            };
            assert_eq!(cells[j].flows, [CUBIC, CUBIC]);
            assert_eq!(cells[j].flow_rtt, c.flow_rtt, "{}", c.label);
        }
        assert_eq!(rtt[1].1.flow_rtt, [ms(80), ms(40)]);
        assert_eq!(rtt[1].1.flows, ["hybrid", CUBIC]);
        assert_eq!(rtt[1].1.figure_label(), "hybrid 80 ms / cubic+nc=off 40 ms");

        let alone = cells
            .iter()
            .find(|c| c.label == "10%: hybrid alone")
            .unwrap();
        assert_eq!((alone.flows.len(), alone.figure), (1, Figure::Efficiency));
        assert_eq!(alone.setting(), "10% BDP (10 kB), loss 0%, 20 MB");
        let o = alone.options(&f.base, 9).unwrap();
        assert_eq!((o.buffer.as_str(), o.compete.is_none()), ("10000B", true));
        let four = cells
            .iter()
            .find(|c| c.label == "4 × hybrid together")
            .unwrap();
        let o = four.options(&f.base, 3).unwrap();
        assert_eq!(o.compete.as_ref().unwrap().len(), 4);
        assert_eq!(o.loss[0].spec, "bernoulli:0.05");
        let late = cells.iter().find(|c| c.figure == Figure::JoinFair).unwrap();
        assert_eq!(
            (late.size, late.stagger),
            (60_000_000, Duration::from_secs(10))
        );
        // At 5 % loss a Padhye-limited flow (about 1.5 Mbit/s at 40 ms) sets
        // the cap, not the link.
        let lossy = cells
            .iter()
            .find(|c| c.label == "5%: hybrid, cubic+nc=off")
            .unwrap();
        assert!(
            lossy.timeout > Duration::from_secs(80),
            "{:?}",
            lossy.timeout
        );
        assert!(
            lossy.timeout < Duration::from_secs(150),
            "{:?}",
            lossy.timeout
        );

        // CUBIC's own figures: the labels tell the two flows apart.
        let f =
            opts("--flow cubic+nc=off --groups bdp,shallow --others cubic+nc=off --buffers 10%");
        let labels: Vec<String> = plan(&f).iter().map(|c| c.label.clone()).collect();
        assert_eq!(labels[1], "another cubic+nc=off first, cubic+nc=off");
        assert_eq!(labels[4], "10%: cubic+nc=off, another cubic+nc=off");
        assert_eq!(
            plan(&f)[3].figure_label(),
            "cubic+nc=off / another cubic+nc=off"
        );

        let f = opts("--groups bdp --others quic-go:cubic --timeout 25 --qlog-dir /q");
        let cells = plan(&f);
        assert!(cells.iter().all(|c| c.timeout == Duration::from_secs(25)));
        let o = cells[2].options(&f.base, 2).unwrap();
        assert_eq!(o.qlog_dir, Some(std::path::PathBuf::from("/q/cell-2")));
    }

    fn pair_run(cell: usize, run: usize, a: f64, b: f64) -> CellRun {
        CellRun {
            cell,
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
            value: (b > 0.0)
                .then(|| a / b)
                .or(Some(crate::experiment::fairness_targets::NEVER)),
        }
    }

    #[test]
    fn tables_and_check() {
        let f = opts("--groups shallow --others cubic+nc=off --buffers 10kB --runs 2");
        let cells = plan(&f);
        assert_eq!(cells.len(), 2);
        let runs = vec![
            pair_run(0, 1, 12.0, 8.0),
            pair_run(0, 0, 10.0, 10.0),
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
            doc.contains(
                "| **0.84** | 0.84 (0.84–0.84) | every run ≥ 0.85 | no (0/1), 1 of 2 runs made |"
            ),
            "{doc}"
        );
        assert!(doc.contains("| hybrid / cubic+nc=off |"), "{doc}");
        assert!(
            doc.contains(
                "- shallow: 1 of 2 cells met (2 of 3 runs meet their per-run target); missed: \
                 10kB: hybrid alone"
            ),
            "{doc}"
        );
        assert!(doc.contains("2 runs, seeds 1–2 per cell"), "{doc}");

        // A flow that starves the other is a miss shown as ∞, and a cell
        // whose runs all failed is "not measured".
        let runs = vec![
            pair_run(0, 0, 20.0, 0.0),
            CellRun {
                cell: 1,
                run: 0,
                compete: None,
                alone: Some(RunResult {
                    error: Some("timeout".into()),
                    ..Default::default()
                }),
                value: None,
            },
        ];
        assert_eq!(runs[1].failure(), "timeout");
        let doc = document(&f, "T", &cells, &runs);
        assert!(
            doc.contains("| **∞** | ∞ (∞–∞) | every run ≤ 1.5 | no (0/1)"),
            "{doc}"
        );
        assert!(
            doc.contains("| – | – | every run ≥ 0.85 | not measured"),
            "{doc}"
        );
        assert!(
            doc.contains("- shallow: 0 of 2 cells met (0 of 2 runs meet their per-run target); 1 not measured; missed: 10kB: hybrid, cubic+nc=off"),
            "{doc}"
        );
    }

    #[test]
    fn rtt_mix_against_its_reference() {
        let f = opts("--groups rtt-mix --runs 1");
        let cells = plan(&f);
        // hybrid 40/80 ms: 1.2 (unfairness 1.2) against CUBIC's 0.4 (2.5);
        // hybrid 80 ms / CUBIC 40 ms: 0.25 (4) against CUBIC's 0.5 (2).
        let runs = vec![
            pair_run(0, 0, 12.0, 10.0),
            pair_run(1, 0, 4.0, 16.0),
            pair_run(2, 0, 4.0, 10.0),
            pair_run(3, 0, 5.0, 10.0),
        ];
        let doc = document(&f, "T", &cells, &runs);
        assert!(
            doc.contains("≤ the reference's (1.20 vs 2.50) | yes |"),
            "{doc}"
        );
        assert!(
            doc.contains("≤ the reference's (4.00 vs 2.00) | no |"),
            "{doc}"
        );
        assert!(doc.contains("| hybrid 40 ms / hybrid 80 ms |"), "{doc}");
        assert!(
            doc.contains("- rtt-mix: 1 of 2 cells met; missed: hybrid 80 ms, cubic+nc=off 40 ms"),
            "{doc}"
        );
    }
}
