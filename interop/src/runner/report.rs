//! The matrix as the interop runner's result JSON, a markdown table and a
//! static HTML page.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::cases::{Case, NOT_RUN};
use super::cell::{CellResult, Outcome};

/// Every cell of a matrix run.
pub struct Matrix {
    /// Client implementation names, in order.
    pub clients: Vec<String>,
    /// Server implementation names, in order.
    pub servers: Vec<String>,
    /// The cases run, in order.
    pub cases: Vec<Case>,
    /// (client, server, case name) → the results of its repetitions.
    pub cells: BTreeMap<(String, String, String), Vec<CellResult>>,
    /// Unix start and end times.
    pub start_time: f64,
    /// Unix end time.
    pub end_time: f64,
    /// Where the logs are.
    pub log_dir: String,
}

impl Matrix {
    /// The (client, server) pairs that ran, in order.
    pub fn pairs(&self) -> Vec<(&str, &str)> {
        let mut v = Vec::new();
        for c in &self.clients {
            for s in &self.servers {
                if self.cells.keys().any(|(kc, ks, _)| kc == c && ks == s) {
                    v.push((c.as_str(), s.as_str()));
                }
            }
        }
        v
    }

    /// The results of one cell (empty if not run).
    pub fn cell(&self, client: &str, server: &str, case: &str) -> &[CellResult] {
        self.cells
            .get(&(client.into(), server.into(), case.into()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The outcome of a cell: its first non-success, else success.
    pub fn outcome(&self, client: &str, server: &str, case: &str) -> Option<Outcome> {
        let rs = self.cell(client, server, case);
        rs.iter()
            .map(|r| r.outcome)
            .find(|o| *o != Outcome::Succeeded)
            .or(rs.first().map(|r| r.outcome))
    }

    /// Mean and standard deviation of a measurement cell's values, if all
    /// repetitions succeeded.
    pub fn measurement(&self, client: &str, server: &str, case: &str) -> Option<(f64, f64)> {
        let rs = self.cell(client, server, case);
        let v: Option<Vec<f64>> = rs.iter().map(|r| r.kbps).collect();
        let v = v.filter(|v| !v.is_empty())?;
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        Some((mean, var.sqrt()))
    }

    /// The runner's result JSON (`run.py -j`): results and measurements
    /// ordered by client, then server. `missing` cells are reported as
    /// null (not run), like the runner's non-compliant pairs.
    pub fn runner_json(&self) -> Value {
        let tests: serde_json::Map<String, Value> = self
            .cases
            .iter()
            .map(|c| (c.abbr.to_string(), json!({"name": c.name, "desc": c.desc})))
            .collect();
        let mut results = Vec::new();
        let mut measurements = Vec::new();
        for c in &self.clients {
            for s in &self.servers {
                let mut res = Vec::new();
                let mut meas = Vec::new();
                for case in &self.cases {
                    let o = self.outcome(c, s, case.name);
                    let result = match o {
                        None | Some(Outcome::Missing) => Value::Null,
                        Some(o) => Value::from(o.as_str()),
                    };
                    if case.measurement {
                        let details = match self.measurement(c, s, case.name) {
                            Some((m, sd)) => format!("{m:.0} (± {sd:.0}) kbps"),
                            None => String::new(),
                        };
                        meas.push(json!({"name": case.name, "abbr": case.abbr,
                                         "result": result, "details": details}));
                    } else {
                        res.push(json!({"abbr": case.abbr, "name": case.name, "result": result}));
                    }
                }
                results.push(Value::from(res));
                measurements.push(Value::from(meas));
            }
        }
        json!({
            "start_time": self.start_time,
            "end_time": self.end_time,
            "log_dir": self.log_dir,
            "servers": self.servers,
            "clients": self.clients,
            "urls": {},
            "tests": tests,
            "quic_version": "0x1",
            "results": results,
            "measurements": measurements,
        })
    }

    fn symbol(&self, c: &str, s: &str, case: &Case) -> String {
        match self.outcome(c, s, case.name) {
            Some(Outcome::Succeeded) if case.measurement => self
                .measurement(c, s, case.name)
                .map(|(m, _)| format!("{:.0}", m))
                .unwrap_or_else(|| "✓".into()),
            Some(Outcome::Succeeded) => "✓".into(),
            Some(Outcome::Failed) => "✗".into(),
            Some(Outcome::Unsupported) => "–".into(),
            Some(Outcome::Missing) => "?".into(),
            None => " ".into(),
        }
    }

    /// Failures and missing peers with their reasons.
    fn reasons(&self) -> Vec<String> {
        let mut v = Vec::new();
        for ((c, s, case), rs) in &self.cells {
            for (i, r) in rs.iter().enumerate() {
                if matches!(r.outcome, Outcome::Failed | Outcome::Missing) {
                    v.push(format!(
                        "{c} → {s}, {case}{}: {} ({})",
                        if rs.len() > 1 {
                            format!(" run {}", i + 1)
                        } else {
                            String::new()
                        },
                        r.outcome.as_str(),
                        r.reason
                    ));
                }
            }
        }
        v
    }

    /// The timed cases (goodput, transferloss, blackhole) and, per
    /// (client → server) pair, their goodput in kbit/s: median (min–max)
    /// over the runs, or the outcome of a run that did not succeed.
    fn goodput_rows(&self) -> (Vec<&Case>, Vec<(String, Vec<String>)>) {
        let timed: Vec<&Case> = self.cases.iter().filter(|c| c.timed).collect();
        let mut rows = Vec::new();
        for (c, s) in self.pairs() {
            {
                let cells = timed
                    .iter()
                    .map(|case| {
                        let mut v: Vec<f64> = self
                            .cell(c, s, case.name)
                            .iter()
                            .filter_map(|r| r.kbps)
                            .collect();
                        match self.outcome(c, s, case.name) {
                            Some(Outcome::Succeeded) if !v.is_empty() => {
                                v.sort_by(f64::total_cmp);
                                let n = v.len();
                                let med = if n % 2 == 1 {
                                    v[n / 2]
                                } else {
                                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                                };
                                if n > 1 {
                                    format!("{med:.0} ({:.0}–{:.0})", v[0], v[n - 1])
                                } else {
                                    format!("{med:.0}")
                                }
                            }
                            Some(o) => o.as_str().to_string(),
                            None => String::new(),
                        }
                    })
                    .collect();
                rows.push((format!("{c} → {s}"), cells));
            }
        }
        (timed, rows)
    }

    /// [`Self::goodput_rows`] as markdown.
    pub fn goodput_markdown(&self) -> String {
        let (timed, rows) = self.goodput_rows();
        if timed.is_empty() {
            return String::new();
        }
        let mut out =
            String::from("Goodput in kbit/s, median (min–max) of the runs:\n\n| client → server |");
        for c in &timed {
            out += &format!(" {} |", c.name);
        }
        out += "\n| --- |";
        out += &" ---: |".repeat(timed.len());
        out += "\n";
        for (pair, cells) in rows {
            out += &format!("| {pair} | {} |\n", cells.join(" | "));
        }
        out
    }

    /// The matrix as markdown: a row per (client, server) pair, a column
    /// per case; ✓ succeeded, ✗ failed, – unsupported, ? peer missing;
    /// measurements in kbit/s.
    pub fn markdown(&self) -> String {
        let mut out = String::from("| client → server |");
        for c in &self.cases {
            out += &format!(" {} |", c.abbr);
        }
        out += "\n| --- |";
        out += &" :-: |".repeat(self.cases.len());
        out += "\n";
        for (c, s) in self.pairs() {
            {
                out += &format!("| {c} → {s} |");
                for case in &self.cases {
                    out += &format!(" {} |", self.symbol(c, s, case));
                }
                out += "\n";
            }
        }
        out += "\n✓ succeeded, ✗ failed, – unsupported (exit 127), ? implementation not installed; goodput (G) in kbit/s.\n\n";
        for c in &self.cases {
            out += &format!("* **{}** {}: {}\n", c.abbr, c.name, c.desc);
        }
        let reasons = self.reasons();
        if !reasons.is_empty() {
            out += "\nFailures:\n\n";
            for r in reasons {
                out += &format!("* {r}\n");
            }
        }
        out += "\nNot run: ";
        out += &NOT_RUN
            .iter()
            .map(|(n, why)| format!("{n} ({why})"))
            .collect::<Vec<_>>()
            .join("; ");
        out += ".\n";
        out
    }

    fn goodput_html(&self, esc: &dyn Fn(&str) -> String) -> String {
        let (timed, rows) = self.goodput_rows();
        if timed.is_empty() {
            return String::new();
        }
        let head: String = timed
            .iter()
            .map(|c| format!("<th>{}</th>", esc(c.name)))
            .collect();
        let body: String = rows
            .iter()
            .map(|(pair, cells)| {
                let tds: String = cells
                    .iter()
                    .map(|c| format!("<td>{}</td>", esc(c)))
                    .collect();
                format!("<tr><th>{}</th>{tds}</tr>", esc(pair))
            })
            .collect();
        format!(
            "<h2>Goodput (kbit/s, median and range of the runs)</h2>\
             <table><tr><th>client → server</th>{head}</tr>{body}</table>"
        )
    }

    /// A static, self-contained HTML page of the matrix.
    pub fn html(&self) -> String {
        let esc = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let mut rows = String::new();
        for (c, s) in self.pairs() {
            {
                rows += &format!("<tr><th>{} → {}</th>", esc(c), esc(s));
                for case in &self.cases {
                    let class = self
                        .outcome(c, s, case.name)
                        .map(|o| o.as_str())
                        .unwrap_or("none");
                    let title = self
                        .cell(c, s, case.name)
                        .iter()
                        .map(|r| r.reason.as_str())
                        .find(|r| !r.is_empty())
                        .unwrap_or("");
                    rows += &format!(
                        "<td class=\"{class}\" title=\"{}\">{}</td>",
                        esc(title).replace('"', "&quot;"),
                        esc(&self.symbol(c, s, case))
                    );
                }
                rows += "</tr>\n";
            }
        }
        let head: String = self
            .cases
            .iter()
            .map(|c| format!("<th title=\"{}\">{}</th>", esc(c.name), esc(c.abbr)))
            .collect();
        let legend: String = self
            .cases
            .iter()
            .map(|c| {
                format!(
                    "<li><b>{}</b> {}: {}</li>",
                    esc(c.abbr),
                    esc(c.name),
                    esc(c.desc)
                )
            })
            .collect();
        let reasons: String = self
            .reasons()
            .iter()
            .map(|r| format!("<li>{}</li>", esc(r)))
            .collect();
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>QUIC-NC interop matrix</title><style>\
             body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
             td,th{{border:1px solid #999;padding:4px 8px;text-align:center}}\
             th{{background:#eee}}.succeeded{{background:#bfb}}.failed{{background:#f99}}\
             .unsupported{{background:#ddd}}.missing{{background:#ffd}}\
             </style></head><body><h1>QUIC-NC interop matrix</h1>\
             <p>Client → server, the quic-interop-runner's test cases over linkem. \
             ✓ succeeded, ✗ failed (hover for the reason), – unsupported, ? not installed; \
             goodput in kbit/s.</p>\
             <table><tr><th>client → server</th>{head}</tr>\n{rows}</table>\
             <ul>{legend}</ul>{}{}</body></html>\n",
            self.goodput_html(&esc),
            if reasons.is_empty() {
                String::new()
            } else {
                format!("<h2>Failures</h2><ul>{reasons}</ul>")
            }
        )
    }
}
