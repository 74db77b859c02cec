//! Scenario files: `nc-experiment scenario FILE.toml`.
//!
//! A scenario (TOML) names the link, the traffic (rows compared one per
//! run, or two competing flows), the sweep axes, repetitions and seeds,
//! and what the report plots; `[variant.NAME]` tables override any of it
//! (`quick` for the tests, `full` for the report). See
//! `docs/experiments.md` for the format and `scenarios/` for the set that
//! mirrors the papers' figures.
//!
//! * [`file`]: the format, positions, errors (file, line, field).
//! * [`expand`]: a scenario → jobs of matrix options, checked by the
//!   command line's own parser.
//! * [`series`]: the plotted series (median, min–max) from the results.
//! * [`cli`]: `nc-experiment scenario`'s command line.
//!
//! This module runs the jobs with the same engine as the command line's
//! matrix and `--compete` ([`run_matrix`], [`run_compete_table`]), with a
//! bound on the total time, and writes one results JSON with every run
//! and the qlog files of every connection beside it.

pub mod cli;
pub mod expand;
pub mod file;
pub mod series;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

pub use expand::{plan, Job, Plan, PlotSpec};
pub use file::{ScenarioError, Source};
pub use series::{Point, Series};

use crate::compete::{run_compete_table, CompeteResult};
use crate::experiment::matrix::{prepare_rows, run_matrix};
use crate::experiment::options::Options;
use crate::experiment::process::{check_interrupted, sanitize};
use crate::experiment::run::RunResult;
use crate::experiment::stats::{cells, Cell};
use crate::peer::FlowSpec;

/// The results of one job.
#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    /// Its sweep values, `(axis, value)`.
    pub point: Vec<(String, String)>,
    /// The options it ran with.
    pub options: Options,
    /// Matrix runs, in the order they ran.
    pub results: Option<Vec<RunResult>>,
    /// Matrix cells (median, min–max per row and loss).
    pub cells: Option<Vec<Cell>>,
    /// Competing-flows runs.
    pub compete: Option<Vec<CompeteResult>>,
    /// Runs planned.
    pub planned: usize,
}

/// Scenario metadata in the results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Meta {
    /// The file.
    pub path: PathBuf,
    /// Title.
    pub title: String,
    /// Paper figure.
    pub source: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Variant.
    pub variant: Option<String>,
}

/// The results JSON of a scenario.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    /// What ran.
    pub scenario: Meta,
    /// The plot.
    pub plot: PlotSpec,
    /// Wall time, s.
    pub elapsed_s: f64,
    /// Runs planned and run.
    pub planned_runs: usize,
    /// Runs done.
    pub done_runs: usize,
    /// Why it stopped early (`time bound`, `interrupted`), if it did.
    pub stopped: Option<String>,
    /// The plotted series.
    pub series: Vec<Series>,
    /// Every job.
    pub jobs: Vec<JobReport>,
}

/// Reads a scenario, applies `variant`, and expands it (see [`plan`]).
pub fn load(
    path: &Path,
    variant: Option<&str>,
    exe: &Path,
    extra: &[String],
) -> Result<Plan, ScenarioError> {
    let src = Source::read(path)?;
    let file = match variant {
        None => src.file.clone(),
        Some(v) => src.file.with_variant(v).ok_or_else(|| {
            src.error(
                None,
                "variant",
                format!(
                    "no variant '{v}' (the file has: {})",
                    src.file.variants().join(", ")
                ),
            )
        })?,
    };
    plan(&src, &file, variant, exe, extra)
}

/// Runs `plan`: every job in order, qlog files under `out/qlog/`, within
/// the plan's time bound. `path` is the scenario file (for the results).
pub fn run_plan(plan: &Plan, path: &Path, work: &Path, certs: &Path, out: &Path) -> ScenarioReport {
    let t0 = Instant::now();
    let deadline = plan.max_duration.map(|d| t0 + d);
    let total = plan.total_runs();
    let mut jobs = Vec::new();
    let mut done = 0;
    let mut stopped = None;
    for (k, job) in plan.jobs.iter().enumerate() {
        let mut opts = job.opts.clone();
        opts.deadline = deadline;
        let name = if job.point.is_empty() {
            format!("job{k}")
        } else {
            format!("job{k}-{}", sanitize(&job.label().replace(' ', "_")))
        };
        opts.qlog_dir = Some(out.join("qlog").join(&name));
        let tag = format!(
            "{} [job {}/{}{}{}] [{done}/{total} runs, {:.0} s] ",
            plan.title,
            k + 1,
            plan.jobs.len(),
            if job.point.is_empty() { "" } else { " " },
            job.label(),
            t0.elapsed().as_secs_f64()
        );
        let planned = plan_runs(&opts);
        let work_k = work.join(&name);
        let mut report = JobReport {
            point: job.point.clone(),
            options: opts.clone(),
            results: None,
            cells: None,
            compete: None,
            planned,
        };
        let prepared = match &opts.compete {
            Some(pair) => pair
                .iter()
                .try_for_each(|s| FlowSpec::parse(s).and_then(|f| f.prepare(&opts.tools))),
            None => prepare_rows(&opts),
        };
        if let Err(e) = prepared {
            eprintln!("{tag}cannot prepare the flows: {e}");
        } else if let Some(pair) = &opts.compete {
            let rows = run_compete_table(&opts, pair, &work_k, certs, &tag);
            done += rows.len();
            report.compete = Some(rows);
        } else {
            let results = run_matrix(&opts, &work_k, certs, &tag);
            done += results.len();
            report.cells = Some(cells(
                &results,
                &opts.rows,
                &opts.loss,
                opts.reference_row(),
            ));
            report.results = Some(results);
        }
        jobs.push(report);
        if check_interrupted().is_err() {
            stopped = Some("interrupted".to_string());
            break;
        }
        if opts.past_deadline() {
            stopped = Some(format!(
                "time bound of {} s reached",
                plan.max_duration.unwrap_or_default().as_secs()
            ));
            break;
        }
    }
    if stopped.is_none() && done < total {
        stopped = Some(format!("{} of {total} runs did not run", total - done));
    }
    let series = series::series(&plan.plot, &jobs);
    ScenarioReport {
        scenario: Meta {
            path: path.into(),
            title: plan.title.clone(),
            source: plan.source.clone(),
            description: plan.description.clone(),
            variant: plan.variant.clone(),
        },
        plot: plan.plot.clone(),
        elapsed_s: t0.elapsed().as_secs_f64(),
        planned_runs: total,
        done_runs: done,
        stopped,
        series,
        jobs,
    }
}

/// Runs a job's options plan.
fn plan_runs(o: &Options) -> usize {
    let rows = if o.compete.is_some() { 1 } else { o.rows.len() };
    o.runs * o.loss.len() * rows
}

/// Where `nc-experiment scenario` writes a scenario's results by default:
/// `results/scenario-<stem>[-<variant>]`.
pub fn default_out(path: &Path, variant: Option<&str>) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    let name = match variant {
        Some(v) => format!("{stem}-{v}"),
        None => stem,
    };
    PathBuf::from("results").join(format!("scenario-{name}"))
}

/// A bound on the time a plan can take, for the progress display: every
/// run at its cap plus a few seconds of set-up.
pub fn worst_case(plan: &Plan) -> Duration {
    plan.jobs
        .iter()
        .map(|j| (j.opts.timeout + Duration::from_secs(3)) * plan_runs(&j.opts) as u32)
        .sum()
}
