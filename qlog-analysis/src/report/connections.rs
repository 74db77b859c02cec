//! Per-connection time series from the qlogs of the first run of each
//! cell, streamed in bounded memory ([`crate::timeline`]).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::chart::{self, esc, Chart, Pt};
use super::results::Results;
use crate::timeline::Timeline;

/// Largest number of per-connection qlog plots on a page.
pub const MAX_QLOG_PLOTS: usize = 6;

/// The qlog directory of the first run of each cell (at most
/// [`MAX_QLOG_PLOTS`]), with the cell's description.
pub(crate) fn qlog_dirs(r: &Results) -> Vec<(String, PathBuf)> {
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
pub(crate) fn connection_section(b: &mut String, what: &str, dir: &Path) {
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
