//! An SVG line chart: measured series (median with a min–max bar per
//! point) and model curves (dashed), linear or logarithmic axes. No
//! dependencies; the text is escaped.

use std::fmt::Write;

/// One measured point.
#[derive(Clone, Debug, PartialEq)]
pub struct Pt {
    /// x.
    pub x: f64,
    /// Median.
    pub y: f64,
    /// Smallest run.
    pub lo: f64,
    /// Largest run.
    pub hi: f64,
}

/// A chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label.
    pub y_label: String,
    /// Logarithmic x.
    pub log_x: bool,
    /// Logarithmic y.
    pub log_y: bool,
    /// Category names when x is an index (`row`, `buffer`).
    pub x_ticks: Option<Vec<String>>,
    /// Measured series `(legend, points)`.
    pub series: Vec<(String, Vec<Pt>)>,
    /// Model curves `(legend, points)`.
    pub models: Vec<(String, Vec<(f64, f64)>)>,
    /// Lines only: no point markers or bars (time series).
    pub lines_only: bool,
}

/// Series colours (colour-blind safe, Okabe–Ito), then grey.
pub const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999",
];

/// Escapes text for XML and HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label: short, no trailing zeros.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    };
    s
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// About five round steps covering `[lo, hi]`.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(mag * 10.0);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn new(vals: impl Iterator<Item = f64>, log: bool, zero: bool) -> Axis {
        let v: Vec<f64> = vals
            .filter(|x| x.is_finite() && (!log || *x > 0.0))
            .collect();
        let (mut lo, mut hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if !lo.is_finite() {
            (lo, hi) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil().max(lo.log10() + 1.0));
        } else {
            if zero {
                lo = lo.min(0.0);
            }
            if hi - lo < 1e-12 {
                hi = lo + 1.0;
            }
            let pad = (hi - lo) * 0.05;
            hi += pad;
            if !zero || lo < 0.0 {
                lo -= pad;
            }
        }
        Axis { lo, hi, log }
    }

    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.max(1e-300).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (
                self.lo.log10().round() as i32,
                self.hi.log10().round() as i32,
            );
            (a..=b).map(|e| 10f64.powi(e)).collect()
        } else {
            linear_ticks(self.lo, self.hi)
        }
    }
}

const W: f64 = 760.0;
const H: f64 = 420.0;
const L: f64 = 70.0;
const R: f64 = 20.0;
const T: f64 = 36.0;
const B: f64 = 50.0;

/// The chart as a standalone SVG document.
pub fn svg(c: &Chart) -> String {
    let all_x = c
        .series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.x))
        .chain(c.models.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)));
    let xa = match &c.x_ticks {
        // Categories sit in the middle of equal slots.
        Some(v) => Axis {
            lo: -0.5,
            hi: v.len().max(1) as f64 - 0.5,
            log: false,
        },
        None => Axis::new(all_x, c.log_x, !c.log_x),
    };
    let all_y = c
        .series
        .iter()
        .flat_map(|(_, p)| p.iter().flat_map(|q| [q.lo, q.hi, q.y]))
        .chain(c.models.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let ya = Axis::new(all_y, c.log_y, true);
    let ph = H - T - B;
    let legend_rows = c.series.len() + c.models.len();
    // Category labels that do not fit side by side are turned by 35°; the
    // legend moves down by what they need.
    let longest = c.x_ticks.as_ref().map_or(0, |v| {
        v.iter().map(|n| n.chars().count()).max().unwrap_or(0)
    });
    let slots = c.x_ticks.as_ref().map_or(1, |v| v.len().max(1)) as f64;
    let turn = longest as f64 * 6.5 > (W - L - R) / slots;
    // Turned labels reach left of their tick: widen the left margin so the
    // first one fits.
    let l = if turn {
        L.max(longest as f64 * 6.5 * 0.82 + 10.0 - (W - L - R) / slots / 2.0)
    } else {
        L
    };
    let pw = W - l - R;
    let extra = if turn {
        (longest as f64 * 6.5 * 0.57).min(160.0)
    } else {
        0.0
    };
    let total_h = H + extra + 18.0 * legend_rows as f64 + 10.0;
    let px = |x: f64| l + xa.frac(x) * pw;
    let py = |y: f64| T + ph - ya.frac(y) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{total_h}" viewBox="0 0 {W} {total_h}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#fff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="{l}" y="20" font-size="14" font-weight="bold">{}</text>"##,
        esc(&c.title)
    );
    // Grid and ticks.
    for t in ya.ticks() {
        if t < ya.lo - 1e-12 || t > ya.hi + 1e-12 {
            continue;
        }
        let y = py(t);
        let _ = writeln!(
            s,
            r##"<line x1="{l}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            l + pw,
            l - 6.0,
            y + 4.0,
            tick(t)
        );
    }
    match &c.x_ticks {
        Some(names) => {
            for (k, n) in names.iter().enumerate() {
                let x = px(k as f64);
                if turn {
                    let y = T + ph + 14.0;
                    let _ = writeln!(
                        s,
                        r##"<text x="{x:.1}" y="{y:.1}" text-anchor="end" transform="rotate(-35 {x:.1} {y:.1})">{}</text>"##,
                        esc(n)
                    );
                    continue;
                }
                let _ = writeln!(
                    s,
                    r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                    T + ph + 18.0,
                    esc(n)
                );
            }
        }
        None => {
            for t in xa.ticks() {
                if t < xa.lo - 1e-12 || t > xa.hi + 1e-12 {
                    continue;
                }
                let x = px(t);
                let _ = writeln!(
                    s,
                    r##"<line x1="{x:.1}" y1="{T}" x2="{x:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                    T + ph,
                    T + ph + 18.0,
                    tick(t)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r##"<rect x="{l}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
        l + pw / 2.0,
        T + ph + 38.0 + extra,
        esc(&c.x_label)
    );
    let _ = writeln!(
        s,
        r##"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        T + ph / 2.0,
        esc(&c.y_label)
    );
    // Models, dashed grey shades, under the measurements.
    for (k, (_, pts)) in c.models.iter().enumerate() {
        let d: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = writeln!(
            s,
            r##"<polyline class="model" points="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="6 4"/>"##,
            d.join(" "),
            ["#555", "#999", "#bbb", "#333"][k % 4]
        );
    }
    for (k, (_, pts)) in c.series.iter().enumerate() {
        let col = COLOURS[k % COLOURS.len()];
        let d: Vec<String> = pts
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y)))
            .collect();
        let _ = writeln!(
            s,
            r##"<polyline class="series" points="{}" fill="none" stroke="{col}" stroke-width="2"/>"##,
            d.join(" ")
        );
        for p in pts.iter().filter(|_| !c.lines_only) {
            let (x, y) = (px(p.x), py(p.y));
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{col}"/><circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{col}"/>"##,
                py(p.lo),
                py(p.hi)
            );
        }
    }
    // Legend below the plot.
    let mut ly = H + extra + 4.0;
    for (k, (name, _)) in c.series.iter().enumerate() {
        let col = COLOURS[k % COLOURS.len()];
        let _ = writeln!(
            s,
            r##"<line x1="{l}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{col}" stroke-width="2"/><circle cx="{:.1}" cy="{ly:.1}" r="3.5" fill="{col}"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            l + 28.0,
            l + 14.0,
            l + 36.0,
            ly + 4.0,
            esc(name)
        );
        ly += 18.0;
    }
    for (k, (name, _)) in c.models.iter().enumerate() {
        let _ = writeln!(
            s,
            r##"<line x1="{l}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="2" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            l + 28.0,
            ["#555", "#999", "#bbb", "#333"][k % 4],
            l + 36.0,
            ly + 4.0,
            esc(name)
        );
        ly += 18.0;
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_series_models_and_escapes() {
        let c = Chart {
            title: "a < b".into(),
            x_label: "loss".into(),
            y_label: "eff".into(),
            series: vec![(
                "hybrid".into(),
                vec![
                    Pt {
                        x: 0.0,
                        y: 0.9,
                        lo: 0.8,
                        hi: 0.95,
                    },
                    Pt {
                        x: 0.1,
                        y: 0.85,
                        lo: 0.8,
                        hi: 0.9,
                    },
                ],
            )],
            models: vec![("ideal".into(), vec![(0.0, 1.0), (0.1, 1.0)])],
            ..Default::default()
        };
        let s = svg(&c);
        assert!(s.contains("a &lt; b"));
        assert_eq!(s.matches("<circle").count(), 3); // 2 points + legend
        assert_eq!(s.matches("class=\"model\"").count(), 1);
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }

    #[test]
    fn log_axes_and_empty_charts_stay_finite() {
        let c = Chart {
            log_x: true,
            log_y: true,
            series: vec![(
                "x".into(),
                vec![Pt {
                    x: 100.0,
                    y: 5.0,
                    lo: 4.0,
                    hi: 6.0,
                }],
            )],
            ..Default::default()
        };
        assert!(!svg(&c).contains("NaN"));
        assert!(!svg(&Chart::default()).contains("NaN"));
    }

    #[test]
    fn ticks_are_round() {
        let t: Vec<String> = linear_ticks(0.0, 1.0).into_iter().map(tick).collect();
        assert_eq!(t, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(tick(2_000_000.0), "2M");
        assert_eq!(tick(0.25), "0.25");
    }
}
