//! The plotted series of a scenario: the plot's y metric (median and
//! min–max over runs) against its x axis, one series per row (or per
//! loss when x is the row).

use serde::{Deserialize, Serialize};

use super::expand::PlotSpec;
use super::JobReport;
use crate::compete::CompeteResult;
use crate::experiment::stats::{summarize_exact, Cell, Summary};
use crate::units::parse_rate;

/// One point: a cell's summary at an x value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Numeric x (loss probability, bytes, ms, Mbit/s, or an index).
    pub x: f64,
    /// x as written in the scenario (or the row's title).
    pub x_label: String,
    /// Runs summarized.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Smallest run.
    pub min: f64,
    /// Largest run.
    pub max: f64,
}

/// One line of the plot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order.
    pub points: Vec<Point>,
}

fn point(x: f64, x_label: String, s: &Summary) -> Point {
    Point {
        x,
        x_label,
        n: s.n,
        median: s.median.v,
        min: s.min.v,
        max: s.max.v,
    }
}

/// The numeric x of `axis` in job `j` (`None` for categorical axes).
fn axis_x(job: &JobReport, axis: &str, k: usize) -> (f64, String) {
    let label = job
        .point
        .iter()
        .find(|(a, _)| a == axis)
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let o = &job.options;
    let x = match axis {
        "size" => o.size as f64,
        "rtt" => o.rtt.as_secs_f64() * 1e3,
        "rate" => {
            parse_rate(&label)
                .ok()
                .flatten()
                .map_or(o.rate_bps as f64, |b| b as f64)
                / 1e6
        }
        _ => k as f64,
    };
    (x, label)
}

fn push(out: &mut Vec<Series>, name: String, p: Point) {
    match out.iter_mut().find(|s| s.name == name) {
        Some(s) => s.points.push(p),
        None => out.push(Series {
            name,
            points: vec![p],
        }),
    }
}

/// A competing-flows metric of the runs of one loss setting.
fn compete_summary(rows: &[&CompeteResult], y: &str) -> Option<Summary> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| match y {
            "ratio" => r.ratio,
            "jain" => r.jain,
            "join_fair_s" => r.join_fair_s,
            _ => r.overlap_s,
        })
        .collect();
    summarize_exact(&v)
}

/// The series of the plot over all jobs.
pub fn series(plot: &PlotSpec, jobs: &[JobReport]) -> Vec<Series> {
    let mut out = Vec::new();
    let several_jobs = jobs.len() > 1;
    for (k, job) in jobs.iter().enumerate() {
        // What else distinguishes this job's lines: the swept axes that
        // are not on x.
        let others: Vec<String> = job
            .point
            .iter()
            .filter(|(a, _)| *a != plot.x)
            .map(|(a, v)| format!("{a}={v}"))
            .collect();
        let suffix = if several_jobs && !others.is_empty() {
            format!(" ({})", others.join(", "))
        } else {
            String::new()
        };
        let losses = &job.options.loss;
        let loss_part = |label: &str| {
            if losses.len() > 1 && plot.x != "loss" {
                format!(" loss={label}")
            } else {
                String::new()
            }
        };
        if let Some(runs) = &job.compete {
            let name = crate::compete::pair_label(job.options.compete.as_deref().unwrap_or(&[]));
            for (li, loss) in losses.iter().enumerate() {
                let mine: Vec<&CompeteResult> =
                    runs.iter().filter(|r| r.loss == loss.label).collect();
                let Some(s) = compete_summary(&mine, &plot.y) else {
                    continue;
                };
                let (x, xl) = match plot.x.as_str() {
                    "loss" => match loss.mean {
                        Some(p) => (p, loss.label.clone()),
                        None => (li as f64, loss.label.clone()),
                    },
                    axis => axis_x(job, axis, k),
                };
                push(
                    &mut out,
                    format!("{name}{}{suffix}", loss_part(&loss.label)),
                    point(x, xl, &s),
                );
            }
            continue;
        }
        let Some(cells) = &job.cells else { continue };
        for c in cells {
            let Some(s) = c.metric(&plot.y) else { continue };
            let li = losses.iter().position(|l| l.label == c.loss).unwrap_or(0);
            match plot.x.as_str() {
                "row" => {
                    let ri = job
                        .options
                        .rows
                        .iter()
                        .position(|r| *r == c.row)
                        .unwrap_or(0);
                    push(
                        &mut out,
                        format!("loss={}{suffix}", c.loss),
                        point(ri as f64, c.title.clone(), s),
                    );
                }
                "loss" => {
                    let x = c.loss_p.unwrap_or(li as f64);
                    push(
                        &mut out,
                        format!("{}{suffix}", c.title),
                        point(x, c.loss.clone(), s),
                    );
                }
                axis => {
                    let (x, xl) = axis_x(job, axis, k);
                    push(
                        &mut out,
                        format!("{}{}{suffix}", c.title, loss_part(&c.loss)),
                        point(x, xl, s),
                    );
                }
            }
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    out
}

/// A cell's summary of `metric`, if the job has that cell (for tests and
/// the report's tables).
pub fn cell_metric<'a>(
    cells: &'a [Cell],
    row: &str,
    loss: &str,
    metric: &str,
) -> Option<&'a Summary> {
    cells
        .iter()
        .find(|c| c.row == row && c.loss == loss)
        .and_then(|c| c.metric(metric))
}
