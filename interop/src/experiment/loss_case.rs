//! One loss setting of a table ([`LossCase`]): a probability or any
//! linkem loss spec, with its label and mean rate; and the number formats
//! the labels use.

use std::time::Duration;

use serde::Serialize;

use crate::loss::{LossModel, LossSchedule, ScheduleEnd};
use crate::units::parse_prob;

/// One loss setting of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LossCase {
    /// Label shown in the table (e.g. `1%`, `GE 5% b4`).
    pub label: String,
    /// Value passed to `linkem --loss`.
    pub spec: String,
    /// Mean loss rate, if the model is constant (used for efficiency).
    pub mean: Option<f64>,
}

impl LossCase {
    /// Parses `0.01`, `1%`, or any linkem loss spec.
    pub fn parse(s: &str) -> Result<LossCase, String> {
        if let Ok(p) = parse_prob(s) {
            return Ok(LossCase {
                label: fmt_pct(p),
                spec: format!("bernoulli:{p}"),
                mean: Some(p),
            });
        }
        let sched = LossSchedule::parse(s).map_err(|e| format!("--loss: {e}"))?;
        let one = match sched.segments.as_slice() {
            [one] if one.to.is_none() || sched.end == ScheduleEnd::Hold && one.from.is_zero() => {
                Some(one.model)
            }
            _ => None,
        };
        let label = match one {
            // Simple Gilbert: every bad-state packet lost, mean burst 1/r.
            Some(
                m @ LossModel::GilbertElliott {
                    r,
                    loss_good,
                    loss_bad,
                    ..
                },
            ) if loss_good == 0.0 && loss_bad == 1.0 && r > 0.0 => {
                format!("GE {} b{}", fmt_pct(m.mean_loss()), trim_num(1.0 / r, 1))
            }
            _ => s.to_string(),
        };
        Ok(LossCase {
            label,
            spec: s.to_string(),
            mean: one.map(|m| m.mean_loss()),
        })
    }
}

/// `0.05` → `5%` (at most two decimals of a percent).
pub(crate) fn fmt_pct(p: f64) -> String {
    format!("{}%", trim_num(p * 100.0, 2))
}

/// Seconds with at most two decimals: `90`, `0.12`, `2.5`.
pub(crate) fn fmt_secs(d: Duration) -> String {
    trim_num(d.as_secs_f64(), 2)
}

fn trim_num(v: f64, prec: usize) -> String {
    let s = format!("{v:.prec$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
