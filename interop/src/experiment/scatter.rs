//! A scatter plot as a standalone SVG document, built as text: a log-scale
//! x axis (delays span decades), a linear y axis from 0, one colour per
//! series, one marker shape per group, filled or open markers, a legend.

use std::fmt::Write;

/// One point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Index into [`Scatter::series`] (the colour).
    pub series: usize,
    /// Index into [`Scatter::groups`] (the marker shape).
    pub group: usize,
    /// Filled (else open) marker.
    pub filled: bool,
    /// x value (> 0; smaller values are drawn at the axis minimum).
    pub x: f64,
    /// y value.
    pub y: f64,
}

/// What to draw.
#[derive(Clone, Debug, Default)]
pub struct Scatter {
    /// Title above the plot.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label.
    pub y_label: String,
    /// Series names (colours), in legend order.
    pub series: Vec<String>,
    /// Group names (marker shapes), in legend order.
    pub groups: Vec<String>,
    /// Legend entries for filled and open markers.
    pub filled_open: [String; 2],
    /// The points.
    pub points: Vec<Point>,
}

const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];
const W: f64 = 780.0;
const H: f64 = 460.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 560.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 400.0;
/// The smallest x drawn.
const X_FLOOR: f64 = 0.1;

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `1`, `2.5`, `1000`, `0.2`.
fn tick_label(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The x range, whole decades around the data: `(log10 lo, log10 hi)`.
pub fn x_decades(xs: &[f64]) -> (i32, i32) {
    let lo = xs
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(X_FLOOR);
    let hi = xs.iter().copied().fold(0.0, f64::max).max(lo);
    if !lo.is_finite() {
        return (0, 3);
    }
    let a = lo.log10().floor() as i32;
    let b = (hi.log10().ceil() as i32).max(a + 1);
    (a, b)
}

/// A "nice" upper bound and step for a linear axis from 0 to `max`.
pub fn y_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.25);
    }
    let raw = max * 1.05 / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|k| k * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    ((max * 1.05 / step).ceil() * step, step)
}

/// A marker of shape `group` at (x, y).
fn marker(out: &mut String, group: usize, x: f64, y: f64, colour: &str, filled: bool) {
    let fill = if filled { colour } else { "white" };
    let style = format!("fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.5\"");
    let r = 4.5;
    let _ = match group % 4 {
        0 => writeln!(
            out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" {style}/>"
        ),
        1 => writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {style}/>",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        2 => writeln!(
            out,
            "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" {style}/>",
            x,
            y - r - 1.0,
            x - r - 1.0,
            y + r,
            x + r + 1.0,
            y + r
        ),
        _ => writeln!(
            out,
            "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" {style}/>",
            x,
            y - r - 1.0,
            x + r + 1.0,
            y,
            x,
            y + r + 1.0,
            x - r - 1.0,
            y
        ),
    };
}

/// The SVG document.
pub fn svg(s: &Scatter) -> String {
    let xs: Vec<f64> = s.points.iter().map(|p| p.x).collect();
    let (a, b) = x_decades(&xs);
    let (ymax, ystep) = y_axis(s.points.iter().map(|p| p.y).fold(0.0, f64::max));
    let px = |x: f64| {
        let l = x.max(10f64.powi(a)).log10();
        LEFT + (l - a as f64) / (b - a) as f64 * (RIGHT - LEFT)
    };
    let py = |y: f64| BOTTOM - y.max(0.0) / ymax * (BOTTOM - TOP);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
         viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(out, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        (LEFT + RIGHT) / 2.0,
        esc(&s.title)
    );
    // Grid and ticks: 1, 2, 5 per decade on x; every step on y.
    for d in a..=b {
        for k in [1.0, 2.0, 5.0] {
            let v = k * 10f64.powi(d);
            if v > 10f64.powi(b) * 1.0001 {
                continue;
            }
            let x = px(v);
            let major = k == 1.0;
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{BOTTOM}\" stroke=\"{}\"/>",
                if major { "#ccc" } else { "#eee" }
            );
            let _ = writeln!(
                out,
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                BOTTOM + 16.0,
                tick_label(v)
            );
        }
    }
    let mut y = 0.0;
    while y <= ymax + ystep * 1e-6 {
        let yy = py(y);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{RIGHT}\" y2=\"{yy:.1}\" stroke=\"#eee\"/>"
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            yy + 4.0,
            tick_label(y)
        );
        y += ystep;
    }
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>",
        RIGHT - LEFT,
        BOTTOM - TOP
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 38.0,
        esc(&s.x_label)
    );
    let _ = writeln!(
        out,
        "<text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        (TOP + BOTTOM) / 2.0,
        esc(&s.y_label)
    );
    for p in &s.points {
        let colour = COLOURS[p.series % COLOURS.len()];
        marker(&mut out, p.group, px(p.x), py(p.y), colour, p.filled);
    }
    // Legend: colours (series), shapes (groups), filled / open; a gap
    // between the three parts.
    let mut entries: Vec<(usize, &str, bool, &str, bool)> = Vec::new();
    for (i, name) in s.series.iter().enumerate() {
        entries.push((0, COLOURS[i % COLOURS.len()], true, name, false));
    }
    for (i, name) in s.groups.iter().enumerate() {
        entries.push((i, "#333", true, name, i == 0));
    }
    entries.push((0, "#333", true, &s.filled_open[0], true));
    entries.push((0, "#333", false, &s.filled_open[1], false));
    let lx = RIGHT + 24.0;
    let mut ly = TOP + 6.0;
    for (group, colour, filled, text, gap) in entries {
        if gap {
            ly += 8.0;
        }
        marker(&mut out, group, lx, ly, colour, filled);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lx + 12.0,
            ly + 4.0,
            esc(text)
        );
        ly += 18.0;
    }
    out += "</svg>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes() {
        assert_eq!(x_decades(&[25.0, 900.0]), (1, 3));
        assert_eq!(x_decades(&[30.0, 40.0]), (1, 2));
        assert_eq!(x_decades(&[0.0, 5.0]), (-1, 1));
        assert_eq!(x_decades(&[]), (0, 3));
        assert_eq!(y_axis(9.3), (10.0, 2.0));
        assert_eq!(y_axis(17.0), (20.0, 5.0));
        assert_eq!(y_axis(0.0), (1.0, 0.25));
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(0.1), "0.1");
    }

    #[test]
    fn document() {
        let s = Scatter {
            title: "T & <x>".into(),
            x_label: "p95 ms".into(),
            y_label: "Mbit/s".into(),
            series: vec!["a".into(), "b".into()],
            groups: vec!["100p".into(), "1000p".into()],
            filled_open: ["0%".into(), "2%".into()],
            points: vec![
                Point {
                    series: 0,
                    group: 0,
                    filled: true,
                    x: 30.0,
                    y: 4.0,
                },
                Point {
                    series: 1,
                    group: 1,
                    filled: false,
                    x: 800.0,
                    y: 4.5,
                },
            ],
        };
        let t = svg(&s);
        assert!(
            t.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{t}"
        );
        assert!(t.ends_with("</svg>\n"));
        assert!(t.contains("T &amp; &lt;x&gt;"));
        // Circles: a point, and legend markers of 2 series, 1 group and
        // filled / open.
        assert_eq!(t.matches("<circle").count(), 1 + 2 + 1 + 2, "{t}");
        assert_eq!(t.matches("<rect x=").count(), 1 + 1 + 1, "{t}"); // point, legend, frame
        assert!(t.contains("fill=\"white\" stroke=\"#d62728\""));
        // x from 10 to 1000 ms: 30 ms at a quarter of the way in log scale.
        let x30 = LEFT + (30f64.log10() - 1.0) / 2.0 * (RIGHT - LEFT);
        assert!(t.contains(&format!("cx=\"{x30:.1}\"")), "{t}");
        // Every tag closes.
        assert_eq!(t.matches('<').count(), t.matches('>').count());
    }
}
