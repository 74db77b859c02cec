//! A scenario → the runs it asks for.
//!
//! Each setting becomes the `nc-experiment` flag of the same meaning and
//! the command line's own parser checks it ([`parse_matrix`]), so a
//! scenario and a command line cannot disagree. A setting the parser
//! rejects is reported at its line. The sweep axes other than loss
//! multiply into *jobs* (one matrix or competing-flows table each); loss
//! is the matrix's own axis.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::file::{File, List, Setting, Source};
use crate::experiment::options::{parse_matrix, Options};
use crate::experiment::stats::Cell;
use crate::units::parse_duration_with;

/// Sweep axes other than loss, in the order jobs nest them.
pub const AXES: [&str; 4] = ["size", "rtt", "rate", "buffer"];

/// What the report plots (checked names).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlotSpec {
    /// `loss`, an axis of [`AXES`], or `row`.
    pub x: String,
    /// A cell column, or `ratio` / `jain` for competing flows.
    pub y: String,
    /// Model curves to overlay.
    pub models: Vec<String>,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

/// One table of runs: a point of the sweep.
#[derive(Clone, Debug)]
pub struct Job {
    /// The sweep values of this job, `(axis, value as written)`.
    pub point: Vec<(String, String)>,
    /// The matrix (or `--compete`) options of the job.
    pub opts: Options,
}

impl Job {
    /// `rtt=20ms buffer=0.25bdp`, or empty.
    pub fn label(&self) -> String {
        self.point
            .iter()
            .map(|(a, v)| format!("{a}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A scenario ready to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Title (default: the file name).
    pub title: String,
    /// The paper figure it mirrors.
    pub source: Option<String>,
    /// What it shows.
    pub description: Option<String>,
    /// The variant laid over the base, if any.
    pub variant: Option<String>,
    /// The report's plot.
    pub plot: PlotSpec,
    /// The jobs, in order.
    pub jobs: Vec<Job>,
    /// No run starts after this much time.
    pub max_duration: Option<Duration>,
}

impl Plan {
    /// Runs in the whole plan.
    pub fn total_runs(&self) -> usize {
        self.jobs
            .iter()
            .map(|j| {
                let rows = if j.opts.compete.is_some() {
                    1
                } else {
                    j.opts.rows.len()
                };
                j.opts.runs * j.opts.loss.len() * rows
            })
            .sum()
    }
}

/// Checks one flag on its own with the command line's parser.
fn check_flag(
    src: &Source,
    exe: &Path,
    field: &str,
    span: Range<usize>,
    flag: &str,
    v: &str,
) -> Result<(), super::ScenarioError> {
    let mut args = vec![flag.to_string(), v.to_string()];
    if flag == "--stagger" {
        // Valid only beside --compete; whether the file has one is checked
        // with the whole job.
        args.extend(["--compete".to_string(), "hybrid,hybrid".to_string()]);
    }
    parse_matrix(args.into_iter(), exe)
        .map(|_| ())
        .map_err(|e| src.error(Some(span), field, e))
}

/// `(flag, value, field, span)` of the settings that map one to one.
type Flag = (&'static str, String, String, Range<usize>);

fn scalar(out: &mut Vec<Flag>, flag: &'static str, field: &str, s: &Option<Setting>) {
    if let Some(s) = s {
        out.push((flag, s.get_ref().to_string(), field.into(), s.span()));
    }
}

fn list_values(l: &List) -> Vec<(String, Range<usize>)> {
    l.get_ref()
        .iter()
        .map(|s| (s.get_ref().to_string(), s.span()))
        .collect()
}

/// A buffer as a fraction of the BDP (`0.25bdp`, `25%bdp`), if it is one.
pub fn bdp_fraction(v: &str) -> Option<f64> {
    let t = v.trim().to_ascii_lowercase();
    let num = t.strip_suffix("bdp")?.trim();
    if num.is_empty() {
        return Some(1.0);
    }
    let f = match num.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok()? / 100.0,
        None => num.parse::<f64>().ok()?,
    };
    (f.is_finite() && f > 0.0).then_some(f)
}

/// Turns the scenario (variant already applied) into a plan. `extra` are
/// command-line flags every job gets (tool paths, `--no-realtime`).
pub fn plan(
    src: &Source,
    file: &File,
    variant: Option<&str>,
    exe: &Path,
    extra: &[String],
) -> Result<Plan, super::ScenarioError> {
    let link = file.link.clone().unwrap_or_default();
    let traffic = file.traffic.clone().unwrap_or_default();
    let run = file.run.clone().unwrap_or_default();
    let sweep = file.sweep.clone().unwrap_or_default();

    let mut flags: Vec<Flag> = Vec::new();
    scalar(&mut flags, "--rate", "link.rate", &link.rate);
    scalar(&mut flags, "--rtt", "link.rtt", &link.rtt);
    scalar(
        &mut flags,
        "--loss-position",
        "link.loss_position",
        &link.loss_position,
    );
    scalar(&mut flags, "--trace", "link.trace", &link.trace);
    scalar(
        &mut flags,
        "--trace-down",
        "link.trace_down",
        &link.trace_down,
    );
    scalar(&mut flags, "--trace-up", "link.trace_up", &link.trace_up);
    scalar(
        &mut flags,
        "--reference",
        "traffic.reference",
        &traffic.reference,
    );
    scalar(&mut flags, "--stagger", "traffic.stagger", &traffic.stagger);
    scalar(&mut flags, "--size", "traffic.size", &traffic.size);
    scalar(&mut flags, "--stream", "traffic.stream", &traffic.stream);
    scalar(&mut flags, "--runs", "run.runs", &run.runs);
    scalar(&mut flags, "--seed", "run.seed", &run.seed);
    scalar(&mut flags, "--timeout", "run.timeout", &run.timeout);
    scalar(
        &mut flags,
        "--idle-timeout",
        "run.idle_timeout",
        &run.idle_timeout,
    );
    for (flag, v, field, span) in &flags {
        check_flag(src, exe, field, span.clone(), flag, v)?;
    }
    let mut args: Vec<String> = flags
        .iter()
        .flat_map(|(f, v, ..)| [f.to_string(), v.clone()])
        .collect();

    // Lists: each element checked at its own line.
    let list = |l: &Option<List>, field: &str, flag: &str| -> Result<Vec<String>, _> {
        let Some(l) = l else { return Ok(Vec::new()) };
        let vals = list_values(l);
        if vals.is_empty() {
            return Err(src.error(Some(l.span()), field, "empty list".into()));
        }
        for (k, (v, span)) in vals.iter().enumerate() {
            check_flag(src, exe, &format!("{field}[{k}]"), span.clone(), flag, v)?;
        }
        Ok(vals.into_iter().map(|(v, _)| v).collect())
    };
    let rows = list(&traffic.rows, "traffic.rows", "--rows")?;
    if !rows.is_empty() {
        args.extend(["--rows".to_string(), rows.join(",")]);
    }
    if let Some(c) = &traffic.compete {
        let vals = list(&traffic.compete, "traffic.compete", "--rows")?;
        let max = crate::compete::MAX_FLOWS;
        if !(2..=max).contains(&vals.len()) {
            return Err(src.error(
                Some(c.span()),
                "traffic.compete",
                format!(
                    "{} flows: the competing-flows runner takes 2 to {max}",
                    vals.len()
                ),
            ));
        }
        args.extend(["--compete".to_string(), vals.join(",")]);
    }
    // Lists of durations, each element checked at its own line; a bare
    // number is milliseconds for round trips, seconds for trace offsets.
    let durations = [
        (&traffic.flow_rtt, "traffic.flow_rtt", "--flow-rtt", true),
        (
            &link.trace_offsets,
            "link.trace_offsets",
            "--trace-offsets",
            false,
        ),
    ];
    for (list, field, flag, ms) in durations {
        let Some(l) = list else { continue };
        let vals = list_values(l);
        for (k, (v, span)) in vals.iter().enumerate() {
            parse_duration_with(v, ms)
                .map_err(|e| src.error(Some(span.clone()), &format!("{field}[{k}]"), e))?;
        }
        let joined: Vec<&str> = vals.iter().map(|(v, _)| v.as_str()).collect();
        args.extend([flag.to_string(), joined.join(",")]);
    }
    let losses = match (&sweep.loss, &link.loss) {
        (Some(_), Some(l)) => {
            return Err(src.error(
                Some(l.span()),
                "link.loss",
                "given both here and as sweep.loss".into(),
            ))
        }
        (Some(_), None) => list(&sweep.loss, "sweep.loss", "--loss")?,
        (None, Some(l)) => {
            check_flag(
                src,
                exe,
                "link.loss",
                l.span(),
                "--loss",
                &l.get_ref().to_string(),
            )?;
            vec![l.get_ref().to_string()]
        }
        (None, None) => vec!["0".into()],
    };
    for l in &losses {
        args.extend(["--loss".to_string(), l.clone()]);
    }

    // The other axes: one job per point of their product.
    let mut axes: Vec<(&str, Vec<String>)> = Vec::new();
    for axis in AXES {
        let (l, base, flag) = match axis {
            "size" => (&sweep.size, &traffic.size, "--size"),
            "rtt" => (&sweep.rtt, &link.rtt, "--rtt"),
            "rate" => (&sweep.rate, &link.rate, "--rate"),
            _ => (&sweep.buffer, &link.buffer, "--buffer"),
        };
        if let (Some(_), Some(b)) = (l, base) {
            return Err(src.error(
                Some(b.span()),
                "",
                format!("{axis} given both in its table and as sweep.{axis}"),
            ));
        }
        let field = format!("sweep.{axis}");
        let vals = if axis == "buffer" {
            // A fraction of the BDP is resolved per job (it needs the job's
            // rate and RTT); anything else the parser checks.
            let Some(l) = l else {
                if let Some(b) = base {
                    let v = b.get_ref().to_string();
                    if bdp_fraction(&v).is_none() {
                        check_flag(src, exe, "link.buffer", b.span(), "--buffer", &v)?;
                    }
                    axes.push((axis, vec![v]));
                }
                continue;
            };
            let vals = list_values(l);
            if vals.is_empty() {
                return Err(src.error(Some(l.span()), &field, "empty list".into()));
            }
            for (k, (v, span)) in vals.iter().enumerate() {
                if bdp_fraction(v).is_none() {
                    check_flag(src, exe, &format!("{field}[{k}]"), span.clone(), flag, v)?;
                }
            }
            vals.into_iter().map(|(v, _)| v).collect()
        } else {
            list(l, &field, flag)?
        };
        if !vals.is_empty() {
            axes.push((axis, vals));
        }
    }
    let swept: Vec<&str> = AXES
        .iter()
        .copied()
        .filter(|a| match *a {
            "size" => sweep.size.is_some(),
            "rtt" => sweep.rtt.is_some(),
            "rate" => sweep.rate.is_some(),
            _ => sweep.buffer.is_some(),
        })
        .collect();

    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (axis, vals) in &axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                vals.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((axis.to_string(), v.clone()));
                    q
                })
            })
            .collect();
    }
    let mut jobs = Vec::new();
    for point in points {
        let mut a = args.clone();
        let mut fraction = None;
        for (axis, v) in &point {
            if axis == "buffer" {
                match bdp_fraction(v) {
                    Some(f) => fraction = Some(f),
                    None => a.extend(["--buffer".into(), v.clone()]),
                }
            } else {
                a.extend([format!("--{axis}"), v.clone()]);
            }
        }
        a.extend(extra.iter().cloned());
        let mut opts = parse_matrix(a.into_iter(), exe)
            .map_err(|e| src.error(None, "", e))?
            .ok_or_else(|| src.error(None, "", "--help in the extra flags".into()))?;
        if let Some(f) = fraction {
            let bytes = (opts.rate_bps as f64 / 8.0 * opts.rtt.as_secs_f64() * f).round();
            opts.buffer = format!("{}B", (bytes as u64).max(1500));
        }
        jobs.push(Job {
            point: point
                .into_iter()
                .filter(|(a, _)| swept.contains(&a.as_str()))
                .collect(),
            opts,
        });
    }

    let max_duration = match &run.max_duration {
        Some(s) => Some(
            parse_duration_with(&s.get_ref().to_string(), false)
                .map_err(|e| src.error(Some(s.span()), "run.max_duration", e))?,
        ),
        None => None,
    };
    let plot = plot_spec(src, file, &swept, jobs.first().map(|j| &j.opts))?;
    Ok(Plan {
        title: file.title.clone().unwrap_or_else(|| {
            src.path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        source: file.source.clone(),
        description: file.description.clone(),
        variant: variant.map(String::from),
        plot,
        jobs,
        max_duration,
    })
}

/// Metrics a competing-flows scenario can plot.
pub const COMPETE_METRICS: [&str; 4] = ["ratio", "jain", "join_fair_s", "overlap_s"];

fn plot_spec(
    src: &Source,
    file: &File,
    swept: &[&str],
    first: Option<&Options>,
) -> Result<PlotSpec, super::ScenarioError> {
    let p = file.plot.clone().unwrap_or_default();
    let compete = first.is_some_and(|o| o.compete.is_some());
    let x = match &p.x {
        Some(x) => {
            let v = x.get_ref().clone();
            let ok = v == "loss" || v == "row" || swept.contains(&v.as_str());
            if !ok {
                return Err(src.error(
                    Some(x.span()),
                    "plot.x",
                    format!(
                        "'{v}' is not loss, row or a swept axis ({})",
                        swept.join(", ")
                    ),
                ));
            }
            v
        }
        None => swept.first().map_or("loss", |a| a).to_string(),
    };
    let metrics: Vec<String> = if compete {
        COMPETE_METRICS.iter().map(|s| s.to_string()).collect()
    } else {
        Cell::METRICS.iter().map(|(n, _)| n.to_string()).collect()
    };
    let y = match &p.y {
        Some(y) => {
            let v = y.get_ref().clone();
            if !metrics.contains(&v) {
                return Err(src.error(
                    Some(y.span()),
                    "plot.y",
                    format!("'{v}' is not one of {}", metrics.join(", ")),
                ));
            }
            v
        }
        None if compete => "ratio".into(),
        None => "goodput_mbps".into(),
    };
    let mut models = Vec::new();
    if let Some(m) = &p.models {
        for (k, name) in m.get_ref().iter().enumerate() {
            let n = name.get_ref().clone();
            if !qlog_analysis::report::models::NAMES.contains(&n.as_str()) {
                return Err(src.error(
                    Some(name.span()),
                    &format!("plot.models[{k}]"),
                    format!(
                        "unknown model '{n}' (known: {})",
                        qlog_analysis::report::models::NAMES.join(", ")
                    ),
                ));
            }
            models.push(n);
        }
    }
    Ok(PlotSpec {
        x,
        y,
        models,
        log_x: p.log_x.unwrap_or(false),
        log_y: p.log_y.unwrap_or(false),
    })
}
