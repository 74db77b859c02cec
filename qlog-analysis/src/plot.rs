//! Minimal SVG line plots of a [`Series`], with no dependencies.
//!
//! Two panels over the same time axis: congestion window and bytes in
//! flight (KB); smoothed, latest and minimum RTT (ms).

use std::fmt::Write;

use crate::Series;

const W: f64 = 900.0;
const PANEL_H: f64 = 260.0;
const MARGIN_L: f64 = 70.0;
const MARGIN_R: f64 = 20.0;
const MARGIN_T: f64 = 30.0;
const GAP: f64 = 50.0;

struct Line<'a> {
    label: &'a str,
    color: &'a str,
    ys: Vec<f64>,
}

fn max_finite(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| x.is_finite()).fold(0.0, f64::max)
}

fn panel(out: &mut String, top: f64, title: &str, xs: &[f64], lines: &[Line], x_max: f64) {
    let y_max = max_finite(lines.iter().flat_map(|l| l.ys.iter().copied())).max(1e-9) * 1.05;
    let plot_w = W - MARGIN_L - MARGIN_R;
    let x = |t: f64| MARGIN_L + t / x_max * plot_w;
    let y = |v: f64| top + PANEL_H - v / y_max * PANEL_H;
    let _ = writeln!(
        out,
        r##"<rect x="{MARGIN_L}" y="{top}" width="{plot_w}" height="{PANEL_H}" fill="none" stroke="#999"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{MARGIN_L}" y="{}" font-size="13">{title}</text>"#,
        top - 8.0
    );
    for i in 0..=4 {
        let v = y_max * i as f64 / 4.0;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>"#,
            MARGIN_L - 6.0,
            y(v) + 4.0,
            fmt_tick(v)
        );
    }
    for (k, l) in lines.iter().enumerate() {
        let mut d = String::new();
        let mut pen_down = false;
        for (t, v) in xs.iter().zip(&l.ys) {
            if !v.is_finite() {
                pen_down = false;
                continue;
            }
            let _ = write!(
                d,
                "{}{:.1},{:.1} ",
                if pen_down { "L" } else { "M" },
                x(*t),
                y(*v)
            );
            pen_down = true;
        }
        let _ = writeln!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.2"/>"#,
            l.color
        );
        let lx = MARGIN_L + 10.0 + 150.0 * k as f64;
        let _ = writeln!(
            out,
            r#"<text x="{lx}" y="{}" font-size="12" fill="{}">{}</text>"#,
            top + 16.0,
            l.color,
            l.label
        );
    }
}

fn fmt_tick(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Renders `series` as an SVG document titled `title`.
pub fn svg(series: &Series, title: &str) -> String {
    let xs: Vec<f64> = series.time_ms.iter().map(|t| t / 1e3).collect();
    let x_max = max_finite(xs.iter().copied()).max(1e-6);
    let h = MARGIN_T + 2.0 * PANEL_H + GAP + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{MARGIN_L}" y="16" font-size="14">{}</text>"#,
        escape(title)
    );
    let kb = |v: &Vec<f64>| v.iter().map(|b| b / 1e3).collect();
    panel(
        &mut out,
        MARGIN_T + 10.0,
        "window (KB)",
        &xs,
        &[
            Line {
                label: "cwnd",
                color: "#1f77b4",
                ys: kb(&series.cwnd),
            },
            Line {
                label: "bytes in flight",
                color: "#ff7f0e",
                ys: kb(&series.bytes_in_flight),
            },
        ],
        x_max,
    );
    let top2 = MARGIN_T + 10.0 + PANEL_H + GAP;
    panel(
        &mut out,
        top2,
        "RTT (ms)",
        &xs,
        &[
            Line {
                label: "smoothed",
                color: "#2ca02c",
                ys: series.smoothed_rtt_ms.clone(),
            },
            Line {
                label: "latest",
                color: "#d62728",
                ys: series.latest_rtt_ms.clone(),
            },
            Line {
                label: "min",
                color: "#7f7f7f",
                ys: series.min_rtt_ms.clone(),
            },
        ],
        x_max,
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">time (s), 0 to {:.2}</text>"#,
        MARGIN_L + (W - MARGIN_L - MARGIN_R) / 2.0,
        top2 + PANEL_H + 30.0,
        x_max
    );
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_has_one_path_per_line_and_skips_gaps() {
        let s = Series {
            time_ms: vec![0.0, 10.0, 20.0],
            cwnd: vec![12000.0, 24000.0, 48000.0],
            bytes_in_flight: vec![f64::NAN, 1200.0, 2400.0],
            smoothed_rtt_ms: vec![40.0, 41.0, 45.0],
            min_rtt_ms: vec![40.0; 3],
            latest_rtt_ms: vec![40.0, 42.0, 50.0],
            pacing_rate: vec![f64::NAN; 3],
            lost_packets: vec![0.0; 3],
        };
        let svg = svg(&s, "a <test>");
        assert_eq!(svg.matches("<path").count(), 5);
        assert!(svg.contains("a &lt;test&gt;"));
        // The missing first point starts the in-flight line at t = 10 ms.
        let inflight = svg
            .lines()
            .filter(|l| l.starts_with("<path"))
            .nth(1)
            .unwrap();
        assert_eq!(inflight.matches('M').count(), 1);
        assert_eq!(inflight.matches('L').count(), 1);
    }
}
