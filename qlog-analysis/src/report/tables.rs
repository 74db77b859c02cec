//! The report's tables: settings, cells, competing runs, and the plotted
//! values as markdown.

use std::fmt::Write;

use serde_json::Value;

use super::chart::{self, esc};
use super::results::{f, Results};

fn fmt_summary(v: &Value) -> String {
    match (f(v, "n"), v.pointer("/median/v").and_then(Value::as_f64)) {
        (Some(_), Some(m)) => {
            let lo = v.pointer("/min/v").and_then(Value::as_f64).unwrap_or(m);
            let hi = v.pointer("/max/v").and_then(Value::as_f64).unwrap_or(m);
            let bound = match v.pointer("/median/bound").and_then(Value::as_str) {
                Some("at_least") | Some("AtLeast") => "≥",
                _ => "",
            };
            if (hi - lo).abs() < 1e-12 {
                format!("{bound}{}", chart::tick(m))
            } else {
                format!(
                    "{bound}{} ({}–{})",
                    chart::tick(m),
                    chart::tick(lo),
                    chart::tick(hi)
                )
            }
        }
        _ => "–".into(),
    }
}

/// The columns of the cell tables.
const CELL_COLUMNS: [(&str, &str); 8] = [
    ("time_s", "time s"),
    ("goodput_mbps", "goodput Mbit/s"),
    ("efficiency", "efficiency"),
    ("repair_overhead", "repair ovh"),
    ("retrans_bytes", "retx B"),
    ("queue_drops", "queue drops"),
    ("delay_p99_ms", "delay p99 ms"),
    ("qdelay_p95_ms", "qdelay p95 ms"),
];

pub(crate) fn settings_table(out: &mut String, o: &Value) {
    let rtt = o
        .get("rtt")
        .map(|d| f(d, "secs").unwrap_or(0.0) * 1e3 + f(d, "nanos").unwrap_or(0.0) / 1e6)
        .unwrap_or(0.0);
    let timeout = o.get("timeout").and_then(|d| f(d, "secs")).unwrap_or(0.0);
    let traffic = match o.get("stream").and_then(Value::as_str) {
        Some(s) => format!("GET /stream/{s}"),
        None => format!("GET /bytes/{}", f(o, "size").unwrap_or(0.0)),
    };
    let flows = match o.get("compete").and_then(Value::as_array) {
        Some(p) => format!(
            "competing: {}",
            p.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
        None => o["rows"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
    };
    let losses: Vec<String> = o["loss"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("label").and_then(Value::as_str).map(String::from))
        .collect();
    let rows = [
        (
            "link",
            format!(
                "{} Mbit/s, RTT {rtt:.0} ms, buffer {}, loss {} per direction ({} the queue)",
                f(o, "rate_bps").unwrap_or(0.0) / 1e6,
                o["buffer"].as_str().unwrap_or("?"),
                losses.join(", "),
                o["loss_position"].as_str().unwrap_or("after")
            ),
        ),
        ("traffic", traffic),
        ("flows", flows),
        (
            "runs",
            format!(
                "{} per cell, seeds from {}, each capped at {timeout} s",
                f(o, "runs").unwrap_or(0.0),
                f(o, "seed").unwrap_or(0.0)
            ),
        ),
    ];
    out.push_str("<table class=\"kv\">\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    out.push_str("</table>\n");
}

pub(crate) fn job_tables(out: &mut String, r: &Results) {
    for job in r.json["jobs"].as_array().into_iter().flatten() {
        let point: Vec<String> = job["point"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some(format!("{}={}", p.get(0)?.as_str()?, p.get(1)?.as_str()?)))
            .collect();
        if !point.is_empty() {
            let _ = writeln!(out, "<h3>{}</h3>", esc(&point.join(", ")));
        }
        if let Some(cells) = job["cells"].as_array() {
            out.push_str("<table><tr><th>row</th><th>loss</th><th>runs ok/capped/failed</th>");
            for (_, h) in CELL_COLUMNS {
                let _ = write!(out, "<th>{h}</th>");
            }
            out.push_str("</tr>\n");
            for c in cells {
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}/{}/{}</td>",
                    esc(c["title"].as_str().unwrap_or("?")),
                    esc(c["loss"].as_str().unwrap_or("?")),
                    f(c, "ok").unwrap_or(0.0),
                    f(c, "capped").unwrap_or(0.0),
                    f(c, "failed").unwrap_or(0.0)
                );
                for (k, _) in CELL_COLUMNS {
                    let _ = write!(out, "<td>{}</td>", esc(&fmt_summary(&c[k])));
                }
                out.push_str("</tr>\n");
                for e in c["errors"].as_array().into_iter().flatten() {
                    let _ = writeln!(
                        out,
                        "<tr class=\"err\"><td colspan=\"11\">{}</td></tr>",
                        esc(e.as_str().unwrap_or(""))
                    );
                }
            }
            out.push_str("</table>\n");
        }
        if let Some(runs) = job["compete"].as_array() {
            out.push_str(
                "<table><tr><th>loss</th><th>run</th><th>seed</th><th>share A Mbit/s</th>\
                 <th>share B Mbit/s</th><th>A/B</th><th>Jain</th><th>error</th></tr>\n",
            );
            for c in runs {
                let share = |k: usize| {
                    c.pointer(&format!("/flows/{k}/share_mbps"))
                        .and_then(Value::as_f64)
                        .map_or("–".into(), |v| format!("{v:.2}"))
                };
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(c["loss"].as_str().unwrap_or("?")),
                    f(c, "run").unwrap_or(0.0),
                    f(c, "seed").unwrap_or(0.0),
                    share(0),
                    share(1),
                    f(c, "ratio").map_or("–".into(), |v| format!("{v:.2}")),
                    f(c, "jain").map_or("–".into(), |v| format!("{v:.3}")),
                    esc(c["error"].as_str().unwrap_or(""))
                );
            }
            out.push_str("</table>\n");
        }
    }
}

/// About three significant digits.
pub fn sig(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The plotted values as a markdown table: one row per series, one
/// column per x value, `median (min–max)`.
pub fn markdown(r: &Results) -> String {
    let j = &r.json;
    let plot = &j["plot"];
    let mut xs: Vec<(f64, String)> = Vec::new();
    for s in j["series"].as_array().into_iter().flatten() {
        for p in s["points"].as_array().into_iter().flatten() {
            if let (Some(x), Some(l)) = (f(p, "x"), p["x_label"].as_str()) {
                if !xs.iter().any(|(v, _)| *v == x) {
                    xs.push((x, l.to_string()));
                }
            }
        }
    }
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = format!(
        "{}: {} by {} ({} of {} runs; median (min–max))\n\n| series |",
        r.title(),
        plot["y"].as_str().unwrap_or("?"),
        plot["x"].as_str().unwrap_or("?"),
        f(j, "done_runs").unwrap_or(0.0),
        f(j, "planned_runs").unwrap_or(0.0)
    );
    for (_, l) in &xs {
        let _ = write!(out, " {l} |");
    }
    out.push_str("\n| --- |");
    out.push_str(&" ---: |".repeat(xs.len()));
    out.push('\n');
    for s in j["series"].as_array().into_iter().flatten() {
        let _ = write!(out, "| {} |", s["name"].as_str().unwrap_or("?"));
        for (x, _) in &xs {
            let p = s["points"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| f(p, "x") == Some(*x));
            let cell = match p {
                Some(p) => {
                    let (m, lo, hi) = (
                        f(p, "median").unwrap_or(f64::NAN),
                        f(p, "min").unwrap_or(f64::NAN),
                        f(p, "max").unwrap_or(f64::NAN),
                    );
                    if (hi - lo).abs() < 1e-12 {
                        sig(m)
                    } else {
                        format!("{} ({}–{})", sig(m), sig(lo), sig(hi))
                    }
                }
                None => "–".into(),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}
