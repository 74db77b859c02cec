//! The scenario's plot: its series with min–max bars and the model
//! curves it asks for.

use serde_json::Value;

use super::chart::{Chart, Pt};
use super::models;
use super::results::{f, Results};

/// Readable axis labels.
pub fn axis_label(x: &str) -> String {
    match x {
        "loss" => "loss rate per direction".into(),
        "size" => "download size (bytes)".into(),
        "rtt" => "round-trip time (ms)".into(),
        "rate" => "bottleneck rate (Mbit/s)".into(),
        "buffer" => "buffer".into(),
        "row" => String::new(),
        "time_s" => "completion time (s)".into(),
        "goodput_mbps" => "goodput (Mbit/s)".into(),
        "efficiency" => "efficiency: goodput / C(1-p)".into(),
        "ratio" => "share ratio (A/B; largest/smallest for more flows)".into(),
        "jain" => "Jain's fairness index".into(),
        "join_fair_s" => "last flow: time to 80 % of an equal share (s)".into(),
        y if y.ends_with("_ms") => format!("{} (ms)", y.trim_end_matches("_ms").replace('_', " ")),
        y => y.replace('_', " "),
    }
}

fn points(v: &Value) -> Vec<Pt> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    Some(Pt {
                        x: f(p, "x")?,
                        y: f(p, "median")?,
                        lo: f(p, "min")?,
                        hi: f(p, "max")?,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The chart of `results` (several: one plot, legends prefixed by each
/// file's name).
pub fn chart_of(all: &[&Results]) -> Chart {
    let r0 = all[0];
    let plot = r0.json.get("plot").cloned().unwrap_or(Value::Null);
    let x = plot
        .get("x")
        .and_then(Value::as_str)
        .unwrap_or("loss")
        .to_string();
    let y = plot
        .get("y")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut c = Chart {
        title: r0.title(),
        x_label: axis_label(&x),
        y_label: axis_label(&y),
        log_x: plot.get("log_x").and_then(Value::as_bool).unwrap_or(false),
        log_y: plot.get("log_y").and_then(Value::as_bool).unwrap_or(false),
        ..Default::default()
    };
    let mut ticks: Vec<(f64, String)> = Vec::new();
    for r in all {
        for s in r.json["series"].as_array().into_iter().flatten() {
            let name = s.get("name").and_then(Value::as_str).unwrap_or("?");
            let name = if all.len() > 1 {
                format!("{}: {name}", r.name())
            } else {
                name.to_string()
            };
            for p in s["points"].as_array().into_iter().flatten() {
                if let (Some(xv), Some(l)) = (f(p, "x"), p.get("x_label").and_then(Value::as_str)) {
                    if !ticks.iter().any(|(t, _)| *t == xv) {
                        ticks.push((xv, l.to_string()));
                    }
                }
            }
            c.series.push((name, points(&s["points"])));
        }
    }
    if x == "row" || x == "buffer" {
        ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
        c.x_ticks = Some(ticks.into_iter().map(|(_, l)| l).collect());
    }
    // Model curves over the measured x range.
    if let Some(o) = r0.first_options() {
        let ctx = models::Context {
            rate_bps: f(o, "rate_bps").unwrap_or(0.0),
            rtt_s: o
                .get("rtt")
                .map(|d| f(d, "secs").unwrap_or(0.0) + f(d, "nanos").unwrap_or(0.0) / 1e9)
                .unwrap_or(0.0),
            x: x.clone(),
            y: y.clone(),
        };
        let xs: Vec<f64> = c
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.x))
            .collect();
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let mut hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi <= lo {
            hi = lo + 1.0; // the chart's own range for a single x
        }
        let ymax = c
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.hi))
            .fold(0.0, f64::max);
        if lo.is_finite() {
            for m in plot["models"].as_array().into_iter().flatten() {
                let Some(name) = m.as_str() else { continue };
                let mut pts = models::curve(name, &ctx, lo, hi, 60);
                // A model far above the measurements would flatten them:
                // draw it up to three times the largest measured value.
                let n = pts.len();
                if ymax > 0.0 {
                    pts.retain(|&(_, y)| y <= 3.0 * ymax);
                }
                let mut legend = models::legend(name).to_string();
                if pts.len() < n {
                    legend.push_str(" (drawn up to 3x the largest measurement)");
                }
                if !pts.is_empty() {
                    c.models.push((legend, pts));
                }
            }
        }
    }
    c
}
