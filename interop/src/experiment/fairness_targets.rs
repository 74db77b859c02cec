//! The `bench-fairness` figures and target check: each run's figure
//! ([`Figure`]), each cell's [`Target`] and whether its runs meet it.

use serde::{Deserialize, Serialize};

use crate::compete::CompeteResult;
use crate::experiment::run::RunResult;
use crate::experiment::stats::{summarize_exact, Summary};

/// The figure of a run in which the flow took everything (a share ratio
/// over a zero share) or the joiner never got its share: finite, so that
/// medians keep it, and larger than any target.
pub const NEVER: f64 = f64::MAX;

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

/// Whether a competing run's shares can be used: it had no error, or its
/// only errors are flows that had not finished by the run's cap (the shares
/// were measured before that).
fn usable(r: &CompeteResult) -> bool {
    let late = |e: &str| e.starts_with("timeout after");
    r.flows.iter().all(|f| f.error.as_deref().is_none_or(late))
        && r.error
            .as_deref()
            .is_none_or(|e| e.starts_with("flow ") && e.contains("timeout after"))
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

    /// The figure of a competing run; `None` if the run failed before it
    /// measured the shares. A flow under test that took everything reads
    /// [`NEVER`] (a share ratio over nothing), as does a joiner that never
    /// got its share during the overlap.
    pub fn of_compete(self, r: &CompeteResult) -> Option<f64> {
        if !usable(r) || r.overlap_s.is_none() {
            return None;
        }
        match self {
            Figure::Ratio { subject, other } => {
                let s = r.flows.get(subject)?.share_mbps?;
                let o = r.flows.get(other)?.share_mbps?;
                if o > 0.0 {
                    Some(s / o)
                } else {
                    (s > 0.0).then_some(NEVER)
                }
            }
            Figure::Jain => r.jain,
            Figure::JoinFair => Some(r.join_fair_s.unwrap_or(NEVER)),
            Figure::Efficiency => None,
        }
    }

    /// The figure of a run of the flow alone (`None` if it failed or was
    /// capped).
    pub fn of_alone(self, r: &RunResult) -> Option<f64> {
        match self {
            Figure::Efficiency if r.error.is_none() => r.efficiency,
            _ => None,
        }
    }
}

/// A figure as printed: two decimals, `∞` for [`NEVER`].
pub fn fmt_value(v: f64) -> String {
    if v >= NEVER / 2.0 {
        "∞".into()
    } else {
        format!("{v:.2}")
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
    pub fn describe(self) -> String {
        match self {
            Target::Within { lo, hi } => format!("every run in {lo}–{hi}"),
            Target::AtMost(x) => format!("every run ≤ {x}"),
            Target::AtLeast(x) => format!("every run ≥ {x}"),
            Target::NoWorseThan(_) => "median max(r, 1/r) ≤ the reference's".into(),
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

/// `max(r, 1/r)`: how far a share ratio is from an equal split
/// ([`NEVER`] for a ratio of 0 or [`NEVER`]).
pub fn unfairness(r: f64) -> f64 {
    if r > 0.0 {
        r.max(1.0 / r)
    } else {
        NEVER
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
    /// Runs made so far.
    pub attempted: usize,
    /// Runs meeting a per-run target.
    pub meeting: Option<usize>,
    /// Median and min–max of the figures.
    pub summary: Option<Summary>,
    /// For [`Target::NoWorseThan`]: this cell's and the reference's median
    /// unfairness.
    pub unfairness: Option<(f64, f64)>,
    /// `Some(true)` met, `Some(false)` missed, `None` reported only or
    /// nothing measured.
    pub met: Option<bool>,
}

/// Judges one cell from its figures (one per measured run of the
/// `attempted` so far), its target, and for [`Target::NoWorseThan`] the
/// reference cell's figures and runs attempted. A run that failed counts
/// against the target: a cell is met only if every run made was measured
/// (for the median target, in the reference cell too) and meets it.
pub fn judge(
    values: &[f64],
    attempted: usize,
    target: Target,
    reference: Option<(&[f64], usize)>,
) -> Verdict {
    let summary = summarize_exact(values);
    let meeting = values
        .iter()
        .map(|&v| target.run_meets(v))
        .try_fold(0, |n, m| m.map(|ok| n + usize::from(ok)));
    let complete = values.len() == attempted;
    let mut unfair = None;
    let met = if values.is_empty() {
        None
    } else {
        match target {
            Target::None => None,
            Target::NoWorseThan(_) => {
                let r = reference.and_then(|(v, n)| Some((median_unfairness(v)?, v.len() == n)));
                match (median_unfairness(values), r) {
                    (Some(u), Some((r, ref_complete))) => {
                        unfair = Some((u, r));
                        Some(complete && ref_complete && u <= r)
                    }
                    _ => None,
                }
            }
            _ => meeting.map(|n| complete && n == attempted),
        }
    };
    Verdict {
        measured: values.len(),
        attempted,
        meeting,
        summary,
        unfairness: unfair,
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
            overlap_s: Some(10.0),
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
        assert_eq!(
            f.of_compete(&run(&[8.0, 12.0], Some("linkem wrote no stats"))),
            None
        );
        // A flow still downloading at the cap: the shares were measured.
        let mut late = run(&[8.0, 12.0], Some("flow A: timeout after 80s"));
        late.flows[0].error = Some("timeout after 80s".into());
        assert_eq!(f.of_compete(&late), Some(1.5));
        late.flows[1].error = Some("HTTP status Some(404)".into());
        assert_eq!(f.of_compete(&late), None);
        let mut no_overlap = run(&[8.0, 12.0], None);
        no_overlap.overlap_s = None;
        assert_eq!(f.of_compete(&no_overlap), None);
        // Starving the other flow is the worst ratio, not a missing one.
        assert_eq!(f.of_compete(&run(&[0.0, 12.0], None)), Some(NEVER));
        assert_eq!(f.of_compete(&run(&[0.0, 0.0], None)), None);
        assert_eq!(f.of_compete(&run(&[8.0], None)), None);
        assert_eq!(Figure::Jain.of_compete(&run(&[5.0, 5.0], None)), Some(1.0));
        let mut never = run(&[9.0, 1.0], None);
        assert_eq!(Figure::JoinFair.of_compete(&never), Some(2.5));
        never.join_fair_s = None;
        assert_eq!(Figure::JoinFair.of_compete(&never), Some(NEVER));
        assert_eq!(Figure::Efficiency.of_compete(&run(&[5.0, 5.0], None)), None);
        let alone = RunResult {
            efficiency: Some(0.9),
            ..Default::default()
        };
        assert_eq!(Figure::Efficiency.of_alone(&alone), Some(0.9));
        assert_eq!(Figure::Jain.of_alone(&alone), None);
        assert_eq!(
            (fmt_value(NEVER), fmt_value(0.796)),
            ("∞".into(), "0.80".into())
        );
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
        assert_eq!(judge(&[NEVER], 1, band, None).met, Some(false));
        assert_eq!(judge(&[1.6], 1, Target::AtMost(1.5), None).met, Some(false));
        assert_eq!(
            judge(&[NEVER], 1, Target::AtMost(5.0), None).met,
            Some(false)
        );
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
        assert_eq!(unfairness(0.0), NEVER);
        let t = Target::NoWorseThan(7);
        let cubic: &[f64] = &[3.0, 2.5, 4.0];
        // 1/0.8 = 1.25 against CUBIC's median 3: met; 0.2 (5) is not.
        let v = judge(&[0.8, 1.1, 1.2], 3, t, Some((cubic, 3)));
        assert_eq!((v.met, v.unfairness), (Some(true), Some((1.2, 3.0))));
        assert_eq!(
            judge(&[0.2, 0.25, 0.3], 3, t, Some((cubic, 3))).met,
            Some(false)
        );
        // A starved flow counts as the most unfair run, not as no run.
        assert_eq!(
            judge(&[0.0, 0.0, 1.0], 3, t, Some((cubic, 3))).met,
            Some(false)
        );
        // One good run of three, or a reference missing runs, is no pass.
        assert_eq!(judge(&[1.0], 3, t, Some((cubic, 3))).met, Some(false));
        assert_eq!(judge(&[1.0], 1, t, Some((cubic, 4))).met, Some(false));
        assert_eq!(judge(&[1.0], 1, t, Some((&[], 3))).met, None);
    }
}
