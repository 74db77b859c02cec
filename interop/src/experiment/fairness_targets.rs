//! The `bench-fairness` figures and target check: each run's figure
//! ([`Figure`]), each cell's [`Target`] and whether its runs meet it.

use serde::{Deserialize, Serialize};

use crate::compete::CompeteResult;
use crate::experiment::run::RunResult;
use crate::experiment::stats::{summarize_exact, Summary};

/// What a cell measures in each run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    /// Bottleneck share of flow `subject` over that of flow `other`.
    Ratio {
        /// Index of the flow under test.
        subject: usize,
        /// Index of the flow it is compared with.
        other: usize,
    },
    /// The flow alone: goodput / link rate.
    Efficiency,
    /// Jain's index of the shares.
    Jain,
    /// Seconds until the last flow first carried 80 % of an equal share.
    JoinFair,
}

impl Figure {
    /// The figure's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Ratio { .. } => "share ratio",
            Figure::Efficiency => "efficiency",
            Figure::Jain => "Jain",
            Figure::JoinFair => "joiner fair after s",
        }
    }

    /// The figure of a competing run; `None` if the run failed or did not
    /// measure it.
    pub fn of_compete(self, r: &CompeteResult) -> Option<f64> {
        if r.error.is_some() {
            return None;
        }
        match self {
            Figure::Ratio { subject, other } => {
                let s = r.flows.get(subject)?.share_mbps?;
                let o = r.flows.get(other)?.share_mbps?;
                (o > 0.0).then(|| s / o)
            }
            Figure::Jain => r.jain,
            Figure::JoinFair => r.join_fair_s,
            Figure::Efficiency => None,
        }
    }

    /// The figure of a run of the flow alone.
    pub fn of_alone(self, r: &RunResult) -> Option<f64> {
        match self {
            Figure::Efficiency if r.error.is_none() => r.efficiency,
            _ => None,
        }
    }
}

/// A cell's target.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// Every run within `lo..=hi`.
    Within {
        /// Lowest value meeting the target.
        lo: f64,
        /// Highest value meeting the target.
        hi: f64,
    },
    /// Every run at most this.
    AtMost(f64),
    /// Every run at least this.
    AtLeast(f64),
    /// The median unfairness `max(r, 1/r)` no larger than that of the
    /// reference cell (index into the plan).
    NoWorseThan(usize),
    /// Reported only.
    None,
}

impl Target {
    /// The target as text.
    pub fn describe(self, reference: Option<&str>) -> String {
        match self {
            Target::Within { lo, hi } => format!("every run in {lo}–{hi}"),
            Target::AtMost(x) => format!("every run ≤ {x}"),
            Target::AtLeast(x) => format!("every run ≥ {x}"),
            Target::NoWorseThan(_) => format!(
                "median max(r, 1/r) ≤ {}'s",
                reference.unwrap_or("the reference")
            ),
            Target::None => "reported".into(),
        }
    }

    /// Whether one run's figure meets a per-run target (`None` for targets
    /// on the median).
    pub fn run_meets(self, v: f64) -> Option<bool> {
        match self {
            Target::Within { lo, hi } => Some((lo..=hi).contains(&v)),
            Target::AtMost(x) => Some(v <= x),
            Target::AtLeast(x) => Some(v >= x),
            Target::NoWorseThan(_) | Target::None => None,
        }
    }
}

/// `max(r, 1/r)`: how far a share ratio is from an equal split.
pub fn unfairness(r: f64) -> f64 {
    if r > 0.0 {
        r.max(1.0 / r)
    } else {
        f64::INFINITY
    }
}

/// The median unfairness of a cell's ratios.
pub fn median_unfairness(values: &[f64]) -> Option<f64> {
    let u: Vec<f64> = values.iter().map(|&r| unfairness(r)).collect();
    summarize_exact(&u).map(|s| s.median.v)
}

/// A cell's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Runs with a figure.
    pub measured: usize,
    /// Runs planned.
    pub planned: usize,
    /// Runs meeting a per-run target.
    pub meeting: Option<usize>,
    /// Median and min–max of the figures.
    pub summary: Option<Summary>,
    /// `Some(true)` met, `Some(false)` missed, `None` reported only or
    /// nothing measured.
    pub met: Option<bool>,
}

/// Judges one cell: its figures (one per measured run), its target, and
/// for [`Target::NoWorseThan`] the reference cell's figures. A per-run
/// target is met only if every planned run was measured and meets it.
pub fn judge(values: &[f64], planned: usize, target: Target, reference: Option<&[f64]>) -> Verdict {
    let summary = summarize_exact(values);
    let meeting = values
        .iter()
        .map(|&v| target.run_meets(v))
        .try_fold(0, |n, m| m.map(|ok| n + usize::from(ok)));
    let met = if values.is_empty() {
        None
    } else {
        match target {
            Target::None => None,
            Target::NoWorseThan(_) => {
                match (
                    median_unfairness(values),
                    reference.and_then(median_unfairness),
                ) {
                    (Some(u), Some(r)) => Some(u <= r),
                    _ => None,
                }
            }
            _ => meeting.map(|n| n == planned && values.len() == planned),
        }
    };
    Verdict {
        measured: values.len(),
        planned,
        meeting,
        summary,
        met,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compete::FlowResult;

    fn run(shares: &[f64], error: Option<&str>) -> CompeteResult {
        CompeteResult {
            error: error.map(String::from),
            flows: shares
                .iter()
                .map(|&s| FlowResult {
                    share_mbps: Some(s),
                    ..Default::default()
                })
                .collect(),
            jain: crate::compete::jain_index(shares),
            join_fair_s: Some(2.5),
            ..Default::default()
        }
    }

    #[test]
    fn figures_of_runs() {
        // The flow under test second: its share over the first flow's.
        let f = Figure::Ratio {
            subject: 1,
            other: 0,
        };
        assert_eq!(f.of_compete(&run(&[8.0, 12.0], None)), Some(1.5));
        assert_eq!(f.of_compete(&run(&[8.0, 12.0], Some("timeout"))), None);
        assert_eq!(f.of_compete(&run(&[0.0, 12.0], None)), None);
        assert_eq!(f.of_compete(&run(&[8.0], None)), None);
        assert_eq!(Figure::Jain.of_compete(&run(&[5.0, 5.0], None)), Some(1.0));
        assert_eq!(
            Figure::JoinFair.of_compete(&run(&[5.0, 5.0], None)),
            Some(2.5)
        );
        assert_eq!(Figure::Efficiency.of_compete(&run(&[5.0, 5.0], None)), None);
        let alone = RunResult {
            efficiency: Some(0.9),
            ..Default::default()
        };
        assert_eq!(Figure::Efficiency.of_alone(&alone), Some(0.9));
        assert_eq!(Figure::Jain.of_alone(&alone), None);
    }

    #[test]
    fn per_run_targets() {
        let band = Target::Within { lo: 0.8, hi: 1.25 };
        let v = judge(&[0.9, 1.0, 1.2], 3, band, None);
        assert_eq!((v.meeting, v.met), (Some(3), Some(true)));
        assert_eq!(v.summary.unwrap().median.v, 1.0);
        let v = judge(&[0.9, 1.3, 0.5], 3, band, None);
        assert_eq!((v.meeting, v.met), (Some(1), Some(false)));
        // A run that failed cannot count as meeting the target.
        let v = judge(&[0.9, 1.0], 3, band, None);
        assert_eq!((v.meeting, v.met), (Some(2), Some(false)));
        assert_eq!(judge(&[], 3, band, None).met, None);
        assert_eq!(judge(&[1.6], 1, Target::AtMost(1.5), None).met, Some(false));
        assert_eq!(
            judge(&[0.86], 1, Target::AtLeast(0.85), None).met,
            Some(true)
        );
        let v = judge(&[3.0], 1, Target::None, None);
        assert_eq!((v.meeting, v.met), (None, None));
    }

    #[test]
    fn no_worse_than_the_reference() {
        assert_eq!(unfairness(0.5), 2.0);
        assert_eq!(unfairness(2.0), 2.0);
        assert_eq!(unfairness(0.0), f64::INFINITY);
        let t = Target::NoWorseThan(7);
        // 1/0.8 = 1.25 against CUBIC's median 3: met; 0.2 (5) is not.
        assert_eq!(
            judge(&[0.8, 1.1, 1.2], 3, t, Some(&[3.0, 2.5, 4.0])).met,
            Some(true)
        );
        assert_eq!(
            judge(&[0.2, 0.25, 0.3], 3, t, Some(&[3.0, 2.5, 4.0])).met,
            Some(false)
        );
        assert_eq!(judge(&[1.0], 1, t, Some(&[])).met, None);
        assert!(t
            .describe(Some("cubic 40 vs 80 ms"))
            .contains("cubic 40 vs 80 ms"));
    }
}
