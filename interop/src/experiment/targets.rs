//! The `bench-e2e` target check: each target compares a median with a
//! threshold, and the worst run too.
//!
//! A target **passes** only if the median meets the threshold *and* the
//! worst run is within 10 % of it (`worst ≥ T − 0.1·|T|` for "at least"
//! targets, `worst ≤ T + 0.1·|T|` for "at most" ones). It is **n/a** when a
//! cell it needs is missing (e.g. the 0 % cell for a `--loss 0.05` run).
//! Thresholds are computed from medians (e.g. 0.97 × the loss-free median
//! efficiency); "worst" is the worst run of the cell being judged.
//!
//! Rows: "coded+hybrid" is the row `hybrid`; "cubic" is plain quiche CUBIC
//! `cubic+nc=off`; "no coding" is `hybrid+nc=off`; "quinn bbr" is
//! `quinn:bbr`.

use serde::Serialize;

use crate::experiment::options::fmt_pct;
use crate::experiment::stats::{Cell, Summary};

/// The coded row the targets are about.
pub const CODED: &str = "hybrid";
/// Our controller without coding.
pub const PLAIN: &str = "hybrid+nc=off";
/// quiche's CUBIC without coding.
pub const CUBIC: &str = "cubic+nc=off";
/// The BBRv1-style reference.
pub const QUINN: &str = "quinn:bbr";

/// Which side of the threshold is good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// value ≥ threshold.
    AtLeast,
    /// value ≤ threshold.
    AtMost,
}

/// Result of one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Median and worst run meet it.
    Pass,
    /// They do not.
    Miss,
    /// Not measured.
    #[serde(rename = "n/a")]
    NA,
}

/// One checked target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Target {
    /// What is checked.
    pub name: String,
    /// The median value.
    pub median: Option<f64>,
    /// The worst run's value.
    pub worst: Option<f64>,
    /// The threshold.
    pub threshold: Option<f64>,
    /// Direction.
    pub dir: Dir,
    /// Verdict.
    pub status: Status,
    /// Why n/a, or a remark.
    pub note: String,
}

/// PASS if `median` meets `threshold` and `worst` is within 10 % of it.
pub fn judge(median: f64, worst: f64, threshold: f64, dir: Dir) -> Status {
    let slack = 0.1 * threshold.abs();
    let ok = match dir {
        Dir::AtLeast => median >= threshold && worst >= threshold - slack,
        Dir::AtMost => median <= threshold && worst <= threshold + slack,
    };
    if ok {
        Status::Pass
    } else {
        Status::Miss
    }
}

/// A target from `(median, worst, threshold)`, n/a ("needs `missing`") without.
pub(crate) fn target(
    name: String,
    dir: Dir,
    vals: Option<(f64, f64, f64)>,
    missing: &str,
) -> Target {
    match vals {
        Some((median, worst, threshold)) => Target {
            name,
            median: Some(median),
            worst: Some(worst),
            threshold: Some(threshold),
            dir,
            status: judge(median, worst, threshold, dir),
            note: String::new(),
        },
        None => Target {
            name,
            median: None,
            worst: None,
            threshold: None,
            dir,
            status: Status::NA,
            note: format!("needs {missing}"),
        },
    }
}

const EPS: f64 = 1e-9;

fn find<'a>(cells: &'a [Cell], row: &str, p: f64) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| c.row == row && c.loss_p.is_some_and(|q| (q - p).abs() < EPS))
}

/// The lossy cells of `row` (constant mean loss > 0), in table order.
fn lossy<'a>(cells: &'a [Cell], row: &str) -> Vec<&'a Cell> {
    cells
        .iter()
        .filter(|c| c.row == row && c.loss_p.is_some_and(|p| p > EPS))
        .collect()
}

fn med(s: &Option<Summary>) -> Option<f64> {
    s.as_ref().map(|s| s.median.v)
}

fn lo(s: &Option<Summary>) -> Option<f64> {
    s.as_ref().map(|s| s.min.v)
}

fn hi(s: &Option<Summary>) -> Option<f64> {
    s.as_ref().map(|s| s.max.v)
}

/// The cells of each table (absent tables: `None`), and the RTT.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tables<'a> {
    /// Bulk downloads.
    pub bulk: Option<&'a [Cell]>,
    /// Short downloads.
    pub short: Option<&'a [Cell]>,
    /// Streams.
    pub stream: Option<&'a [Cell]>,
    /// CPU cost.
    pub cost: Option<&'a [Cell]>,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: f64,
}

/// Checks every target the tables allow.
pub fn check(t: &Tables) -> Vec<Target> {
    let mut out = Vec::new();
    if let Some(bulk) = t.bulk {
        bulk_targets(bulk, &mut out);
    }
    if let Some(short) = t.short {
        short_targets(short, &mut out);
    }
    if let Some(stream) = t.stream {
        stream_targets(stream, t.rtt_ms, &mut out);
    }
    if let Some(cost) = t.cost {
        let c = cost.iter().find(|c| c.row == CODED);
        let p = cost.iter().find(|c| c.row == PLAIN);
        let vals = (|| {
            let (c, p) = (c?, p?);
            Some((
                med(&c.cpu_per_mb)?,
                hi(&c.cpu_per_mb)?,
                1.3 * med(&p.cpu_per_mb)?,
            ))
        })();
        out.push(target(
            "CPU s/MB coded+hybrid ≤ 1.3 × hybrid (no coding)".into(),
            Dir::AtMost,
            vals,
            "both cost rows",
        ));
    }
    out
}

fn bulk_targets(bulk: &[Cell], out: &mut Vec<Target>) {
    let zero = find(bulk, CODED, 0.0);
    let e0 = zero.and_then(|z| med(&z.efficiency));
    for c in lossy(bulk, CODED) {
        let p = c.loss_p.unwrap_or(0.0);
        let k = if p <= 0.10 + EPS { 0.97 } else { 0.93 };
        let vals = (|| Some((med(&c.efficiency)?, lo(&c.efficiency)?, k * e0?)))();
        out.push(target(
            format!(
                "bulk {}: coded+hybrid efficiency ≥ {k} × its 0% efficiency",
                c.loss
            ),
            Dir::AtLeast,
            vals,
            "the coded+hybrid 0% bulk cell",
        ));
    }
    let cubic0 = find(bulk, CUBIC, 0.0);
    let vals = (|| {
        let (z, cu) = (zero?, cubic0?);
        Some((
            med(&z.efficiency)?,
            lo(&z.efficiency)?,
            0.98 * med(&cu.efficiency)?,
        ))
    })();
    out.push(target(
        "bulk 0%: coded+hybrid efficiency ≥ 0.98 × cubic (no coding)".into(),
        Dir::AtLeast,
        vals,
        "the 0% bulk cells of coded+hybrid and cubic+nc=off",
    ));
    for c in bulk
        .iter()
        .filter(|c| c.row == CODED && c.loss_p.is_some_and(|p| p <= 0.10 + EPS))
    {
        let q = c
            .loss_p
            .and_then(|p| find(bulk, QUINN, p))
            .or_else(|| bulk.iter().find(|x| x.row == QUINN && x.loss == c.loss));
        let vals = (|| {
            Some((
                med(&c.queue_drops)?,
                hi(&c.queue_drops)?,
                med(&q?.queue_drops)? / 20.0,
            ))
        })();
        out.push(target(
            format!(
                "bulk {}: coded+hybrid queue drops ≤ 1/20 of quinn bbr's",
                c.loss
            ),
            Dir::AtMost,
            vals,
            "the quinn:bbr cell at this loss",
        ));
    }
    for c in lossy(bulk, CODED) {
        let p = c.loss_p.unwrap_or(0.0);
        if p >= 1.0 {
            continue;
        }
        let bound = 1.2 * p / (1.0 - p);
        let vals = (|| Some((med(&c.repair_overhead)?, hi(&c.repair_overhead)?, bound)))();
        out.push(target(
            format!(
                "bulk {}: coded+hybrid repair overhead ≤ 1.2 × p/(1−p) (p = {})",
                c.loss,
                fmt_pct(p)
            ),
            Dir::AtMost,
            vals,
            "repair statistics (server nc line)",
        ));
    }
}

fn short_targets(short: &[Cell], out: &mut Vec<Target>) {
    let t0 = find(short, CODED, 0.0).and_then(|z| med(&z.time_s));
    for c in lossy(short, CODED) {
        let p = c.loss_p.unwrap_or(0.0);
        let k = if p <= 0.05 + EPS { 1.15 } else { 1.35 };
        let vals = (|| Some((med(&c.time_s)?, hi(&c.time_s)?, k * t0?)))();
        out.push(target(
            format!(
                "short {}: coded+hybrid completion ≤ {k} × its 0% time",
                c.loss
            ),
            Dir::AtMost,
            vals,
            "the coded+hybrid 0% short cell",
        ));
    }
}

fn stream_targets(stream: &[Cell], rtt_ms: f64, out: &mut Vec<Target>) {
    let (c0, c5) = (find(stream, CODED, 0.0), find(stream, CODED, 0.05));
    let (n0, n5) = (find(stream, PLAIN, 0.0), find(stream, PLAIN, 0.05));
    if c5.is_none() && c0.is_none() {
        return;
    }
    let vals = (|| {
        let (a, b) = (c0?, c5?);
        Some((
            med(&b.delay_mean_ms)?,
            hi(&b.delay_mean_ms)?,
            med(&a.delay_mean_ms)? + 0.25 * rtt_ms,
        ))
    })();
    out.push(target(
        "stream 5%: coded+hybrid mean delay ≤ its 0% mean + 0.25 RTT (ms)".into(),
        Dir::AtMost,
        vals,
        "the coded+hybrid stream cells at 0% and 5%",
    ));
    let vals = (|| {
        let (a, b) = (c0?, c5?);
        Some((
            med(&b.delay_p99_ms)?,
            hi(&b.delay_p99_ms)?,
            med(&a.delay_p99_ms)? + rtt_ms,
        ))
    })();
    out.push(target(
        "stream 5%: coded+hybrid p99 delay ≤ its 0% p99 + 1 RTT (ms)".into(),
        Dir::AtMost,
        vals,
        "the coded+hybrid stream cells at 0% and 5%",
    ));
    let vals = (|| {
        let (a, b, x, y) = (c0?, c5?, n0?, n5?);
        let base = med(&a.delay_p99_ms)?;
        let plain_excess = med(&y.delay_p99_ms)? - med(&x.delay_p99_ms)?;
        Some((
            med(&b.delay_p99_ms)? - base,
            hi(&b.delay_p99_ms)? - base,
            plain_excess / 3.0,
        ))
    })();
    out.push(target(
        "stream 5%: coded+hybrid p99 excess over 0% ≤ 1/3 of hybrid (no coding)'s (ms)".into(),
        Dir::AtMost,
        vals,
        "the stream cells of hybrid and hybrid+nc=off at 0% and 5%",
    ));
}

fn fmt_opt(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.3}"),
        Some(x) => format!("{x:.4}"),
    }
}

/// The target check as a markdown table.
pub fn format_targets(targets: &[Target]) -> String {
    let mut table = vec![vec![
        "target".to_string(),
        "median".into(),
        "worst run".into(),
        "threshold".into(),
        "result".into(),
    ]];
    for t in targets {
        let op = match t.dir {
            Dir::AtLeast => "≥ ",
            Dir::AtMost => "≤ ",
        };
        table.push(vec![
            t.name.clone(),
            fmt_opt(t.median),
            fmt_opt(t.worst),
            t.threshold
                .map_or_else(|| "-".into(), |x| format!("{op}{}", fmt_opt(Some(x)))),
            match t.status {
                Status::Pass => "PASS".into(),
                Status::Miss => "MISS".into(),
                Status::NA => format!("n/a ({})", t.note),
            },
        ]);
    }
    let mut out = crate::experiment::table::render(&table, true, 1, true);
    let n = |s: Status| targets.iter().filter(|t| t.status == s).count();
    out += &format!(
        "\n{} PASS, {} MISS, {} n/a (PASS = the median meets the threshold and the worst run is within 10 % of it)\n",
        n(Status::Pass),
        n(Status::Miss),
        n(Status::NA)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::stats::summarize_exact;

    #[test]
    fn judging_with_the_worst_run() {
        use Dir::*;
        use Status::*;
        assert_eq!(judge(0.95, 0.90, 0.93, AtLeast), Pass);
        // The worst run is more than 10 % below the threshold.
        assert_eq!(judge(0.95, 0.83, 0.93, AtLeast), Miss);
        assert_eq!(judge(0.92, 0.92, 0.93, AtLeast), Miss);
        assert_eq!(judge(1.0, 1.2, 1.15, AtMost), Pass); // 1.2 ≤ 1.265
        assert_eq!(judge(1.0, 1.3, 1.15, AtMost), Miss);
        assert_eq!(judge(1.2, 1.2, 1.15, AtMost), Miss);
        // A zero threshold leaves no slack.
        assert_eq!(judge(0.0, 0.0, 0.0, AtMost), Pass);
        assert_eq!(judge(0.0, 1.0, 0.0, AtMost), Miss);
    }

    fn cell(row: &str, p: f64, f: impl FnOnce(&mut Cell)) -> Cell {
        let mut c = Cell {
            row: row.into(),
            loss: fmt_pct(p),
            loss_p: Some(p),
            ..Default::default()
        };
        f(&mut c);
        c
    }

    fn s(v: &[f64]) -> Option<Summary> {
        summarize_exact(v)
    }

    #[test]
    fn bulk_short_stream_and_cost_targets() {
        let bulk = vec![
            cell(CODED, 0.0, |c| {
                c.efficiency = s(&[0.95, 0.96, 0.94]);
                c.queue_drops = s(&[0.0, 1.0, 0.0]);
                c.repair_overhead = s(&[0.001]);
            }),
            cell(CUBIC, 0.0, |c| c.efficiency = s(&[0.96])),
            cell(QUINN, 0.0, |c| c.queue_drops = s(&[100.0])),
            cell(CODED, 0.05, |c| {
                c.efficiency = s(&[0.93, 0.94, 0.80]); // median 0.93 ≥ 0.97·0.95 = 0.9215; worst 0.80 < 0.829
                c.queue_drops = s(&[2.0, 3.0, 4.0]);
                c.repair_overhead = s(&[0.05, 0.06, 0.07]); // ≤ 1.2·0.05/0.95 = 0.0632, worst 0.07 ≤ 0.0695? no
            }),
            cell(QUINN, 0.05, |c| c.queue_drops = s(&[100.0])),
            cell(CODED, 0.2, |c| c.efficiency = s(&[0.90, 0.89])), // ≥ 0.93·0.95 = 0.8835
        ];
        let t = check(&Tables {
            bulk: Some(&bulk),
            ..Default::default()
        });
        let get = |needle: &str| {
            t.iter()
                .find(|x| x.name.contains(needle))
                .unwrap_or_else(|| panic!("{needle}: {t:#?}"))
        };
        let e5 = get("bulk 5%: coded+hybrid efficiency");
        assert_eq!(e5.status, Status::Miss, "{e5:?}");
        assert!((e5.threshold.unwrap() - 0.97 * 0.95).abs() < 1e-12);
        assert_eq!(e5.worst, Some(0.80));
        assert_eq!(
            get("bulk 20%: coded+hybrid efficiency").status,
            Status::Pass
        );
        let c0 = get("bulk 0%: coded+hybrid efficiency ≥ 0.98");
        assert_eq!(c0.status, Status::Pass);
        assert_eq!(
            get("bulk 0%: coded+hybrid queue drops").status,
            Status::Pass
        );
        let q5 = get("bulk 5%: coded+hybrid queue drops");
        assert_eq!(
            (q5.median, q5.threshold, q5.status),
            (Some(3.0), Some(5.0), Status::Pass)
        );
        let r5 = get("bulk 5%: coded+hybrid repair overhead");
        assert_eq!(r5.status, Status::Miss, "{r5:?}");
        // No quinn cell at 20%: that loss is above 10 %, so no queue target.
        assert!(!t.iter().any(|x| x.name.contains("20%: coded+hybrid queue")));
        // Missing repair statistics → n/a.
        assert_eq!(get("bulk 20%: coded+hybrid repair").status, Status::NA);

        let short = vec![
            cell(CODED, 0.0, |c| c.time_s = s(&[0.50, 0.52])),
            cell(CODED, 0.05, |c| c.time_s = s(&[0.55, 0.60])), // ≤ 1.15·0.51 = 0.5865
            cell(CODED, 0.2, |c| c.time_s = s(&[0.80])),        // > 1.35·0.51
        ];
        let stream = vec![
            cell(CODED, 0.0, |c| {
                c.delay_mean_ms = s(&[22.0]);
                c.delay_p99_ms = s(&[30.0]);
            }),
            cell(CODED, 0.05, |c| {
                c.delay_mean_ms = s(&[25.0, 40.0]); // ≤ 22 + 10; worst 40 > 35.2
                c.delay_p99_ms = s(&[50.0]); // ≤ 30 + 40
            }),
            cell(PLAIN, 0.0, |c| c.delay_p99_ms = s(&[30.0])),
            cell(PLAIN, 0.05, |c| c.delay_p99_ms = s(&[120.0])), // excess 90 → 30 ≥ 20
        ];
        let cost = vec![
            cell(CODED, 0.0, |c| c.cpu_per_mb = s(&[0.012, 0.013])),
            cell(PLAIN, 0.0, |c| c.cpu_per_mb = s(&[0.010])),
        ];
        let t = check(&Tables {
            short: Some(&short),
            stream: Some(&stream),
            cost: Some(&cost),
            rtt_ms: 40.0,
            ..Default::default()
        });
        let get = |needle: &str| t.iter().find(|x| x.name.contains(needle)).unwrap();
        let s5 = get("short 5%");
        assert_eq!((s5.status, s5.median), (Status::Pass, Some(0.575)));
        assert_eq!(get("short 20%").status, Status::Miss);
        let m = get("mean delay");
        assert_eq!(
            (m.median, m.threshold, m.status),
            (Some(32.5), Some(32.0), Status::Miss)
        );
        assert_eq!(get("p99 delay ≤").status, Status::Pass);
        let x = get("p99 excess");
        assert_eq!(
            (x.median, x.threshold, x.status),
            (Some(20.0), Some(30.0), Status::Pass)
        );
        let cpu = get("CPU");
        assert_eq!(cpu.status, Status::Pass, "{cpu:?}"); // 0.0125 ≤ 0.013, worst 0.013 ≤ 0.0143
        let md = format_targets(&t);
        assert!(md.contains("| PASS |") && md.contains("| MISS |"), "{md}");
        assert!(md.contains("PASS, "), "{md}");

        // Without the 0% cells everything that needs them is n/a.
        let t = check(&Tables {
            short: Some(&short[1..]),
            ..Default::default()
        });
        assert!(t.iter().all(|x| x.status == Status::NA), "{t:#?}");
        assert!(format_targets(&t).contains("n/a (needs the coded+hybrid 0% short cell)"));
    }
}
