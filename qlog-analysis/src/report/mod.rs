//! Self-contained HTML reports of scenario results
//! (`nc-experiment scenario` writes `results.json`; `qlog-report` turns it
//! into a page).
//!
//! A page holds the scenario's settings, its plot (inline SVG: the
//! measured series with min–max bars and the model curves it asks for),
//! the plotted numbers, every cell, and for a few connections the
//! congestion window and RTT from their qlog files. An index page links
//! the scenarios with their plots; [`compare`] puts the series of several
//! results files of one scenario into one plot.
//!
//! * [`results`]: the results file.
//! * [`chart`]: the SVG line chart.
//! * [`models`]: model curves by name.
//! * [`figure`]: the scenario's plot.
//! * [`tables`]: settings, cells, markdown.
//! * [`connections`]: per-connection time series from the qlogs.

pub mod chart;
pub mod connections;
pub mod figure;
pub mod models;
pub mod results;
pub mod tables;

use std::fmt::Write;

use serde_json::Value;

use chart::esc;
pub use figure::{axis_label, chart_of};
pub use results::Results;
pub use tables::{markdown, sig};

use connections::{connection_section, qlog_dirs};
use results::f;
use tables::{job_tables, settings_table};

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:right}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}table.kv td{text-align:left}\
tr.err td{color:#a00;text-align:left}.warn{background:#fff4d6;border:1px solid #e0b000;padding:0.5em}\
figure{margin:1em 0}figcaption{font-size:13px;color:#555}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
        esc(title)
    )
}

/// The report page of one results file; the chart is also returned as a
/// standalone SVG.
pub fn html(r: &Results) -> (String, String) {
    let mut b = String::new();
    let j = &r.json;
    let _ = writeln!(b, "<h1>{}</h1>", esc(&r.title()));
    if let Some(s) = j.pointer("/scenario/source").and_then(Value::as_str) {
        let _ = writeln!(b, "<p><b>Mirrors:</b> {}</p>", esc(s));
    }
    if let Some(s) = j.pointer("/scenario/description").and_then(Value::as_str) {
        let _ = writeln!(b, "<p>{}</p>", esc(s));
    }
    let _ = writeln!(
        b,
        "<p>Scenario <code>{}</code>{}; {} of {} runs in {:.0} s.</p>",
        esc(&r.str_at("/scenario/path")),
        j.pointer("/scenario/variant")
            .and_then(Value::as_str)
            .map(|v| format!(", variant <code>{}</code>", esc(v)))
            .unwrap_or_default(),
        f(j, "done_runs").unwrap_or(0.0),
        f(j, "planned_runs").unwrap_or(0.0),
        f(j, "elapsed_s").unwrap_or(0.0)
    );
    if let Some(s) = j["stopped"].as_str() {
        let _ = writeln!(b, "<p class=\"warn\">Stopped early: {}.</p>", esc(s));
    }
    if let Some(o) = r.first_options() {
        settings_table(&mut b, o);
    }
    let svg = chart::svg(&chart_of(&[r]));
    let _ = writeln!(
        b,
        "<figure>{svg}<figcaption>Median of the runs; bars: min–max; dashed: models.</figcaption></figure>"
    );
    b.push_str("<h2>Plotted values</h2>\n<table><tr><th>series</th><th>x</th><th>median</th><th>min–max</th><th>runs</th></tr>\n");
    for s in j["series"].as_array().into_iter().flatten() {
        for p in s["points"].as_array().into_iter().flatten() {
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}–{}</td><td>{}</td></tr>",
                esc(s["name"].as_str().unwrap_or("?")),
                esc(p["x_label"].as_str().unwrap_or("")),
                chart::tick(f(p, "median").unwrap_or(f64::NAN)),
                chart::tick(f(p, "min").unwrap_or(f64::NAN)),
                chart::tick(f(p, "max").unwrap_or(f64::NAN)),
                f(p, "n").unwrap_or(0.0)
            );
        }
    }
    b.push_str("</table>\n<h2>Cells</h2>\n");
    job_tables(&mut b, r);
    let dirs = qlog_dirs(r);
    if !dirs.is_empty() {
        b.push_str("<h2>Connections (first run of each cell, from its qlog)</h2>\n");
        for (what, dir) in dirs {
            connection_section(&mut b, &what, &dir);
        }
    }
    (page(&r.title(), &b), svg)
}

/// One plot with the series of several results files of one scenario.
pub fn compare(all: &[&Results]) -> (String, String) {
    let svg = chart::svg(&chart_of(all));
    let mut b = String::new();
    let _ = writeln!(b, "<h1>Comparison: {}</h1>", esc(&all[0].title()));
    b.push_str("<ul>\n");
    for r in all {
        let _ = writeln!(
            b,
            "<li><code>{}</code>: {} runs in {:.0} s</li>",
            esc(&r.path.display().to_string()),
            f(&r.json, "done_runs").unwrap_or(0.0),
            f(&r.json, "elapsed_s").unwrap_or(0.0)
        );
    }
    b.push_str("</ul>\n");
    let _ = writeln!(b, "<figure>{svg}</figure>");
    (page(&format!("Comparison: {}", all[0].title()), &b), svg)
}

/// The index page linking `(title, html file, svg file)` entries.
pub fn index(entries: &[(String, String, String)]) -> String {
    let mut b = String::from("<h1>QUIC-NC experiment reports</h1>\n");
    for (title, html, svg) in entries {
        let _ = writeln!(
            b,
            "<h2><a href=\"{}\">{}</a></h2>\n<a href=\"{}\"><img src=\"{}\" width=\"560\" alt=\"{}\"></a>",
            esc(html),
            esc(title),
            esc(html),
            esc(svg),
            esc(title)
        );
    }
    page("QUIC-NC experiment reports", &b)
}
