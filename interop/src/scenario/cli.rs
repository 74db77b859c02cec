//! `nc-experiment scenario`: its command line and the loop over files.

use std::path::{Path, PathBuf};

use super::{default_out, load, run_plan, worst_case, ScenarioReport};
use crate::experiment::process::INTERRUPTED;

/// Usage of `nc-experiment scenario`.
pub const SCENARIO_USAGE: &str = "\
nc-experiment scenario: run scenario files (TOML; see docs/experiments.md)

usage: nc-experiment scenario [options] FILE.toml...

  --variant NAME   lay the file's [variant.NAME] over it (e.g. quick, full)
  --out DIR        results directory (one file: DIR; several: DIR/<name>;
                   default results/scenario-<name>[-<variant>]); it gets
                   results.json, qlog/<job>/<run>/*.sqlog and, with
                   --report, report/<name>.html and .svg
  --report         also write the HTML report (qlog-report does the same)
  --dry-run        check the files and print the jobs, run nothing
  --bin-dir DIR, --linkem PATH, --quinn-peer P, --quic-go-peer P,
  --spin D, --no-realtime, --keep
                   as for nc-experiment (tools, emulator, work directory)

Every run's progress goes to stderr; a scenario's [run] max_duration
bounds its total time (no run starts after it; the results say so).";

/// Parsed `nc-experiment scenario` arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioArgs {
    /// Scenario files.
    pub files: Vec<PathBuf>,
    /// Variant to apply.
    pub variant: Option<String>,
    /// Output directory.
    pub out: Option<PathBuf>,
    /// Write the HTML report.
    pub report: bool,
    /// Only check and print the plan.
    pub dry_run: bool,
    /// Flags every job gets (tools, emulator).
    pub extra: Vec<String>,
    /// Keep the work directory.
    pub keep: bool,
    /// `--bin-dir`, if given.
    pub bin_dir: Option<PathBuf>,
}

/// Parses the arguments after `scenario`; `None` for `--help`.
pub fn parse_scenario(args: impl Iterator<Item = String>) -> Result<Option<ScenarioArgs>, String> {
    let mut a = ScenarioArgs::default();
    let mut it = args.peekable();
    while let Some(x) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match x.as_str() {
            "-h" | "--help" => return Ok(None),
            "--variant" => a.variant = Some(value("--variant")?),
            "--out" => a.out = Some(value("--out")?.into()),
            "--report" => a.report = true,
            "--dry-run" => a.dry_run = true,
            "--keep" => a.keep = true,
            "--no-realtime" => a.extra.push(x),
            "--bin-dir" | "--linkem" | "--quinn-peer" | "--quic-go-peer" | "--spin" => {
                let v = value(&x)?;
                if x == "--bin-dir" {
                    a.bin_dir = Some(v.clone().into());
                }
                a.extra.extend([x, v]);
            }
            f if f.starts_with('-') => {
                return Err(format!(
                    "unknown scenario option '{f}' (see scenario --help)"
                ))
            }
            f => a.files.push(f.into()),
        }
    }
    if a.files.is_empty() {
        return Err("scenario: no scenario file given (see scenario --help)".into());
    }
    Ok(Some(a))
}

/// Runs every file; returns the exit code (0 all ran, 1 an error or a
/// scenario whose runs all failed, 2 a bad scenario, 130 interrupted).
pub fn run_scenarios(a: &ScenarioArgs, exe: &Path, work: &Path, certs: &Path) -> u8 {
    // Check every file before running any.
    let mut plans = Vec::new();
    for f in &a.files {
        match load(f, a.variant.as_deref(), exe, &a.extra) {
            Ok(p) => plans.push((f.clone(), p)),
            Err(e) => {
                eprintln!("nc-experiment: error: {e}");
                return 2;
            }
        }
    }
    let mut code = 0;
    for (f, plan) in &plans {
        let out = match (&a.out, plans.len()) {
            (Some(d), 1) => d.clone(),
            (Some(d), _) => d.join(
                default_out(f, a.variant.as_deref())
                    .file_name()
                    .unwrap_or_default(),
            ),
            (None, _) => default_out(f, a.variant.as_deref()),
        };
        eprintln!(
            "{}: {} job(s), {} run(s), at most {} s{}; results in {}",
            plan.title,
            plan.jobs.len(),
            plan.total_runs(),
            worst_case(plan).as_secs(),
            plan.max_duration
                .map(|d| format!(" (bounded to {} s)", d.as_secs()))
                .unwrap_or_default(),
            out.display()
        );
        if a.dry_run {
            for (k, j) in plan.jobs.iter().enumerate() {
                println!(
                    "{} job {k}: {} rows={} loss={} size={} rtt={:?} rate={} buffer={} runs={}",
                    plan.title,
                    j.label(),
                    j.opts.compete.as_ref().unwrap_or(&j.opts.rows).join(","),
                    j.opts
                        .loss
                        .iter()
                        .map(|l| l.label.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    j.opts.size,
                    j.opts.rtt,
                    j.opts.rate_bps,
                    j.opts.buffer,
                    j.opts.runs
                );
            }
            continue;
        }
        if let Err(e) = std::fs::create_dir_all(&out) {
            eprintln!("nc-experiment: error: {}: {e}", out.display());
            return 1;
        }
        let report = run_plan(plan, f, &work.join(sanitize_name(f)), certs, &out);
        code = code.max(write_results(&report, &out, a.report));
        if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            return 130;
        }
    }
    code
}

fn sanitize_name(f: &Path) -> String {
    crate::experiment::process::sanitize(&f.file_stem().unwrap_or_default().to_string_lossy())
}

/// Writes `out/results.json` (and the report); prints a summary line.
fn write_results(r: &ScenarioReport, out: &Path, report: bool) -> u8 {
    let path = out.join("results.json");
    let text = serde_json::to_string_pretty(r).unwrap_or_default();
    if let Err(e) = std::fs::write(&path, text + "\n") {
        eprintln!("nc-experiment: error: {}: {e}", path.display());
        return 1;
    }
    println!(
        "{}: {} of {} runs in {:.0} s{} -> {}",
        r.scenario.title,
        r.done_runs,
        r.planned_runs,
        r.elapsed_s,
        r.stopped
            .as_ref()
            .map(|s| format!(" (stopped: {s})"))
            .unwrap_or_default(),
        path.display()
    );
    for s in &r.series {
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{}={:.3}", p.x_label, p.median))
            .collect();
        println!("  {} [{}]: {}", s.name, r.plot.y, pts.join(" "));
    }
    if report {
        match qlog_analysis::report::Results::read(&path) {
            Ok(res) => {
                let dir = out.join("report");
                let (html, svg) = qlog_analysis::report::html(&res);
                let name = res.name();
                let w = std::fs::create_dir_all(&dir)
                    .and_then(|_| std::fs::write(dir.join(format!("{name}.html")), html))
                    .and_then(|_| std::fs::write(dir.join(format!("{name}.svg")), svg));
                match w {
                    Ok(()) => println!("  report: {}", dir.join(format!("{name}.html")).display()),
                    Err(e) => {
                        eprintln!("nc-experiment: error: {}: {e}", dir.display());
                        return 1;
                    }
                }
            }
            Err(e) => {
                eprintln!("nc-experiment: error: {e}");
                return 1;
            }
        }
    }
    let all_failed = r.jobs.iter().all(|j| {
        j.results
            .as_ref()
            .map(|v| {
                !v.is_empty()
                    && v.iter()
                        .all(|x| x.outcome == crate::experiment::Outcome::Failed)
            })
            .or_else(|| {
                j.compete
                    .as_ref()
                    .map(|v| !v.is_empty() && v.iter().all(|x| x.error.is_some()))
            })
            .unwrap_or(true)
    });
    u8::from(all_failed && r.done_runs > 0)
}
