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
//! * [`chart`]: the SVG line chart.
//! * [`models`]: model curves by name.

pub mod chart;
pub mod models;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use chart::{esc, Chart, Pt};

use crate::timeline::Timeline;

/// Largest number of per-connection qlog plots on a page.
pub const MAX_QLOG_PLOTS: usize = 6;

/// A results file, read.
#[derive(Clone, Debug)]
pub struct Results {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its JSON.
    pub json: Value,
}

impl Results {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Results, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if json.get("series").is_none() || json.get("jobs").is_none() {
            return Err(format!(
                "{}: not a scenario results file (no series/jobs)",
                path.display()
            ));
        }
        Ok(Results {
            path: std::fs::canonicalize(path).unwrap_or_else(|_| path.into()),
            json,
        })
    }

    fn str_at(&self, ptr: &str) -> String {
        self.json
            .pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// The scenario's title.
    pub fn title(&self) -> String {
        self.str_at("/scenario/title")
    }

    /// A file-name-safe name: the results directory's name, or the file stem.
    pub fn name(&self) -> String {
        let p = if self.path.file_name().is_some_and(|n| n == "results.json") {
            self.path.parent().and_then(Path::file_name)
        } else {
            self.path.file_stem()
        };
        p.map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".into())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    fn first_options(&self) -> Option<&Value> {
        self.json.pointer("/jobs/0/options")
    }
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

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
        "ratio" => "share ratio A/B".into(),
        "jain" => "Jain's fairness index".into(),
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

fn settings_table(out: &mut String, o: &Value) {
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

fn job_tables(out: &mut String, r: &Results) {
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

/// The qlog directory of the first run of each cell (at most
/// [`MAX_QLOG_PLOTS`]), with the cell's description.
fn qlog_dirs(r: &Results) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for job in r.json["jobs"].as_array().into_iter().flatten() {
        let runs = job["results"]
            .as_array()
            .or(job["compete"].as_array())
            .cloned()
            .unwrap_or_default();
        for run in runs {
            let what = format!(
                "{} at loss {}",
                run["title"]
                    .as_str()
                    .or(run["pair"].as_str())
                    .unwrap_or("?"),
                run["loss"].as_str().unwrap_or("?")
            );
            let Some(dir) = run["qlog_dir"].as_str() else {
                continue;
            };
            if out.len() < MAX_QLOG_PLOTS && !out.iter().any(|(w, _)| *w == what) {
                out.push((what, dir.into()));
            }
        }
    }
    out
}

/// The first file in `dir` whose name starts with `prefix`.
fn first_file(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    v.sort();
    v.into_iter().next()
}

fn timeline(path: &Path) -> Result<Timeline, String> {
    let r = crate::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Timeline::read(r, 0.01, 400).map_err(|e| format!("{}: {e}", path.display()))
}

fn time_chart(title: &str, y: &str, t: &Timeline, lines: Vec<(&str, Vec<Option<f64>>)>) -> String {
    let xs = t.times();
    let series = lines
        .into_iter()
        .map(|(name, ys)| {
            let pts = xs
                .iter()
                .zip(ys)
                .filter_map(|(&x, y)| y.map(|y| Pt { x, y, lo: y, hi: y }))
                .collect();
            (name.to_string(), pts)
        })
        .filter(|(_, p): &(String, Vec<Pt>)| !p.is_empty())
        .collect::<Vec<_>>();
    if series.is_empty() {
        return String::new();
    }
    chart::svg(&Chart {
        title: title.into(),
        x_label: "time (s)".into(),
        y_label: y.into(),
        series,
        lines_only: true,
        ..Default::default()
    })
}

/// Time series of one run: the client's goodput and decoder, the server's
/// window and RTT; with a line of totals.
fn connection_section(b: &mut String, what: &str, dir: &Path) {
    let client = first_file(dir, "client-").map(|p| timeline(&p));
    let server = first_file(dir, "server-").map(|p| timeline(&p));
    let _ = writeln!(b, "<h3>{}</h3>", esc(what));
    for t in [&client, &server].into_iter().flatten() {
        if let Err(e) = t {
            let _ = writeln!(b, "<p class=\"warn\">{}</p>", esc(e));
        }
    }
    let mut totals = Vec::new();
    if let Some(Ok(c)) = &client {
        let g = c.goodput_mbps().into_iter().map(Some).collect();
        b.push_str(&time_chart(
            "Goodput (client, in order)",
            "Mbit/s",
            c,
            vec![("goodput", g)],
        ));
        if c.bins.iter().any(|x| x.seen.is_some()) {
            let gap = c
                .bins
                .iter()
                .map(|x| Some(x.seen? as f64 - x.decoded? as f64))
                .collect();
            b.push_str(&time_chart(
                "Seen but not yet decoded (client: I_q - I_p)",
                "symbols",
                c,
                vec![("seen - decoded", gap)],
            ));
        }
        let t = c.totals();
        totals.push(format!(
            "client: {} B delivered, {} packets recovered by decoding, {} repairs received",
            t.delivered_bytes,
            t.recovered,
            c.bins.iter().map(|x| x.repairs_received).sum::<u64>()
        ));
    }
    if let Some(Ok(s)) = &server {
        let kb = |f: fn(&crate::timeline::Bin) -> Option<f64>| {
            s.bins.iter().map(|x| f(x).map(|v| v / 1e3)).collect()
        };
        b.push_str(&time_chart(
            "Window (server)",
            "kB",
            s,
            vec![
                ("cwnd", kb(|x| x.cwnd)),
                ("in flight", kb(|x| x.bytes_in_flight)),
            ],
        ));
        b.push_str(&time_chart(
            "RTT (server)",
            "ms",
            s,
            vec![
                ("smoothed", s.bins.iter().map(|x| x.srtt_ms).collect()),
                ("min", s.bins.iter().map(|x| x.min_rtt_ms).collect()),
            ],
        ));
        let t = s.totals();
        totals.push(format!(
            "server: {} B sent, {} packets lost, {} sources / {} repairs (overhead {}), \
             {} losses held for decoding, {} of them sent again",
            t.sent_bytes,
            t.lost_packets,
            t.sources_sent,
            t.repairs_sent,
            t.repair_overhead.map_or("–".into(), |o| format!("{o:.3}")),
            t.deferred,
            t.sent_again
        ));
    }
    if !totals.is_empty() {
        let _ = writeln!(b, "<p>{}</p>", esc(&totals.join("; ")));
    }
}

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
