//! Loss models and time schedules of loss models.
//!
//! Text syntax (used by `linkem --loss`), see [`LossSchedule::parse`]:
//!
//! * `none`, `all` (100 % loss), `bernoulli:P` (P as `0.05` or `5%`)
//! * `ge:p,r[,loss_good,loss_bad]` — Gilbert–Elliott; defaults
//!   `loss_good = 0`, `loss_bad = 1` (the simple Gilbert model)
//! * `schedule:FROM-TO=MODEL;FROM-TO=MODEL;...[;hold|;repeat]`, e.g.
//!   `schedule:0-5s=bernoulli:0.001;5s-10s=bernoulli:0.5;10s-12s=all`.
//!   Times are relative to the emulator start; TO may be empty (open end)
//!   for the last segment. Gaps between segments have no loss. After the
//!   last segment ends, `hold` (default) keeps its model, `repeat` restarts
//!   the schedule from time 0 with period = end of the last segment.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::units::{parse_duration, parse_prob};

/// A per-packet loss process.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LossModel {
    /// No loss.
    None,
    /// Independent loss with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Gilbert–Elliott chain evaluated per packet: the packet is
    /// lost with the current state's loss probability, then the state moves
    /// good→bad with probability `p` or bad→good with probability `r`.
    /// Mean bad-state sojourn = `1/r` packets; P(bad) = `p/(p+r)`.
    GilbertElliott {
        /// P(good → bad) per packet.
        p: f64,
        /// P(bad → good) per packet.
        r: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// Long-run mean loss rate of the model.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    loss_good
                } else {
                    let bad = p / (p + r);
                    (1.0 - bad) * loss_good + bad * loss_bad
                }
            }
        }
    }

    fn validate(&self) -> Result<(), String> {
        let probs: Vec<(&str, f64)> = match *self {
            LossModel::None => vec![],
            LossModel::Bernoulli { p } => vec![("p", p)],
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                vec![
                    ("p", p),
                    ("r", r),
                    ("loss_good", loss_good),
                    ("loss_bad", loss_bad),
                ]
            }
        };
        for (name, v) in probs {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("loss parameter {name}={v} is outside [0, 1]"));
            }
        }
        Ok(())
    }

    /// Parses one model: `none`, `all`, `bernoulli:P`, `ge:p,r[,lg,lb]`.
    pub fn parse(s: &str) -> Result<LossModel, String> {
        let t = s.trim();
        let (kind, args) = t.split_once(':').unwrap_or((t, ""));
        let m = match kind.trim().to_ascii_lowercase().as_str() {
            "none" | "0" => LossModel::None,
            "all" => LossModel::Bernoulli { p: 1.0 },
            "bernoulli" | "b" => LossModel::Bernoulli {
                p: parse_prob(args)?,
            },
            "ge" | "gilbert" | "gilbert-elliott" => {
                let v = args
                    .split(',')
                    .map(parse_prob)
                    .collect::<Result<Vec<f64>, String>>()?;
                match v.as_slice() {
                    [p, r] => LossModel::GilbertElliott {
                        p: *p,
                        r: *r,
                        loss_good: 0.0,
                        loss_bad: 1.0,
                    },
                    [p, r, lg, lb] => LossModel::GilbertElliott {
                        p: *p,
                        r: *r,
                        loss_good: *lg,
                        loss_bad: *lb,
                    },
                    _ => {
                        return Err(format!(
                            "'{s}': Gilbert–Elliott needs ge:p,r or ge:p,r,loss_good,loss_bad"
                        ))
                    }
                }
            }
            _ => {
                return Err(format!(
                    "unknown loss model '{s}' (none, all, bernoulli:P, ge:p,r,lg,lb, schedule:...)"
                ))
            }
        };
        m.validate()?;
        Ok(m)
    }
}

/// One segment of a [`LossSchedule`]: `model` applies for `from <= t < to`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossSegment {
    /// Start, relative to the link's start.
    pub from: Duration,
    /// End (exclusive); `None` = forever (only allowed for the last segment).
    pub to: Option<Duration>,
    /// Model in force during the segment.
    pub model: LossModel,
}

/// What happens after the last segment of a schedule ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ScheduleEnd {
    /// The last segment's model stays in force.
    #[default]
    Hold,
    /// The schedule starts over (period = end of the last segment).
    Repeat,
}

/// A time schedule of loss models. A constant model is a single open segment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossSchedule {
    /// Sorted, non-overlapping segments.
    pub segments: Vec<LossSegment>,
    /// Behaviour after the last segment.
    pub end: ScheduleEnd,
}

impl LossSchedule {
    /// No loss at all.
    pub fn none() -> Self {
        Self::constant(LossModel::None)
    }

    /// `model` for all time.
    pub fn constant(model: LossModel) -> Self {
        LossSchedule {
            segments: vec![LossSegment {
                from: Duration::ZERO,
                to: None,
                model,
            }],
            end: ScheduleEnd::Hold,
        }
    }

    /// True if no segment can ever lose a packet.
    pub fn is_lossless(&self) -> bool {
        self.segments.iter().all(|s| s.model.mean_loss() == 0.0)
    }

    /// Checks ordering, overlap and parameter ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.segments.is_empty() {
            return Err("loss schedule has no segments".into());
        }
        let mut prev_end = Duration::ZERO;
        for (i, s) in self.segments.iter().enumerate() {
            s.model.validate()?;
            if s.from < prev_end {
                return Err(format!(
                    "loss schedule segment {} starts before the previous one ends",
                    i + 1
                ));
            }
            match s.to {
                Some(to) if to <= s.from => {
                    return Err(format!(
                        "loss schedule segment {} ends before it starts",
                        i + 1
                    ))
                }
                Some(to) => prev_end = to,
                None if i + 1 != self.segments.len() => {
                    return Err("only the last loss schedule segment may be open-ended".into())
                }
                None if self.end == ScheduleEnd::Repeat => {
                    return Err("a repeating loss schedule needs a closed last segment".into())
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Index of the segment in force at time `t` since start, if any.
    pub fn segment_at(&self, t: Duration) -> Option<usize> {
        let last = self.segments.last()?;
        let t = match (self.end, last.to) {
            (ScheduleEnd::Repeat, Some(period)) if !period.is_zero() => {
                Duration::from_nanos((t.as_nanos() % period.as_nanos()) as u64)
            }
            (ScheduleEnd::Hold, Some(end)) if t >= end => return Some(self.segments.len() - 1),
            _ => t,
        };
        self.segments
            .iter()
            .position(|s| s.from <= t && s.to.is_none_or(|to| t < to))
    }

    /// Parses a model or a `schedule:...` (see the module documentation).
    pub fn parse(s: &str) -> Result<LossSchedule, String> {
        let t = s.trim();
        let Some(body) = t.strip_prefix("schedule:") else {
            return Ok(Self::constant(LossModel::parse(t)?));
        };
        let mut segments = Vec::new();
        let mut end = ScheduleEnd::Hold;
        let parts: Vec<&str> = body
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        for (i, part) in parts.iter().enumerate() {
            match *part {
                "hold" | "repeat" if i + 1 == parts.len() => {
                    end = if *part == "hold" {
                        ScheduleEnd::Hold
                    } else {
                        ScheduleEnd::Repeat
                    };
                    continue;
                }
                _ => {}
            }
            let (range, model) = part
                .split_once('=')
                .ok_or_else(|| format!("schedule segment '{part}' must look like FROM-TO=MODEL"))?;
            let (from, to) = range.split_once('-').ok_or_else(|| {
                format!("schedule range '{range}' must look like FROM-TO (e.g. 5s-10s)")
            })?;
            let from = parse_duration(from)?;
            let to = if to.trim().is_empty() {
                None
            } else {
                Some(parse_duration(to)?)
            };
            segments.push(LossSegment {
                from,
                to,
                model: LossModel::parse(model)?,
            });
        }
        let sched = LossSchedule { segments, end };
        sched.validate()?;
        Ok(sched)
    }
}

/// Mutable state of a schedule's models (the Gilbert–Elliott states).
#[derive(Clone, Debug)]
pub struct LossState {
    bad: Vec<bool>,
}

impl LossState {
    /// Fresh state (all Gilbert–Elliott chains in the good state).
    pub fn new(sched: &LossSchedule) -> Self {
        LossState {
            bad: vec![false; sched.segments.len()],
        }
    }

    /// Decides whether a packet passing at time `t` (since start) is lost.
    pub fn lose(&mut self, sched: &LossSchedule, t: Duration, rng: &mut Rng) -> bool {
        let Some(i) = sched.segment_at(t) else {
            return false;
        };
        match sched.segments[i].model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => rng.chance(p),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let Some(bad) = self.bad.get_mut(i) else {
                    return false;
                };
                let lost = rng.chance(if *bad { loss_bad } else { loss_good });
                let flip = rng.chance(if *bad { r } else { p });
                if flip {
                    *bad = !*bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_models() {
        assert_eq!(LossModel::parse("none"), Ok(LossModel::None));
        assert_eq!(LossModel::parse("all"), Ok(LossModel::Bernoulli { p: 1.0 }));
        assert_eq!(
            LossModel::parse("bernoulli:0.05"),
            Ok(LossModel::Bernoulli { p: 0.05 })
        );
        assert_eq!(
            LossModel::parse("bernoulli:5%"),
            Ok(LossModel::Bernoulli { p: 0.05 })
        );
        assert_eq!(
            LossModel::parse("ge:0.01,0.3,0.001,0.5"),
            Ok(LossModel::GilbertElliott {
                p: 0.01,
                r: 0.3,
                loss_good: 0.001,
                loss_bad: 0.5
            })
        );
        assert_eq!(
            LossModel::parse("ge:0.01,0.3"),
            Ok(LossModel::GilbertElliott {
                p: 0.01,
                r: 0.3,
                loss_good: 0.0,
                loss_bad: 1.0
            })
        );
        for bad in [
            "bernoulli:1.5",
            "bernoulli:-0.1",
            "bernoulli:NaN",
            "ge:0.1",
            "ge:0.1,2",
            "weird:1",
            "bernoulli",
        ] {
            assert!(LossModel::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parse_schedule() {
        let s =
            LossSchedule::parse("schedule:0-5s=bernoulli:0.001;5s-10s=bernoulli:0.5;10s-12s=all")
                .unwrap();
        assert_eq!(s.segments.len(), 3);
        assert_eq!(s.end, ScheduleEnd::Hold);
        assert_eq!(s.segments[2].to, Some(Duration::from_secs(12)));
        assert_eq!(s.segment_at(Duration::from_secs(3)), Some(0));
        assert_eq!(s.segment_at(Duration::from_secs(5)), Some(1));
        assert_eq!(s.segment_at(Duration::from_secs(100)), Some(2));
        let r = LossSchedule::parse("schedule:0-1s=none;1s-2s=all;repeat").unwrap();
        assert_eq!(r.end, ScheduleEnd::Repeat);
        assert_eq!(r.segment_at(Duration::from_millis(3500)), Some(1));
        let open = LossSchedule::parse("schedule:0-1s=none;2s-=bernoulli:0.1").unwrap();
        assert_eq!(open.segment_at(Duration::from_millis(1500)), None);
        assert_eq!(open.segment_at(Duration::from_secs(50)), Some(1));
        for bad in [
            "schedule:",
            "schedule:5s-1s=all",
            "schedule:0-5s=all;4s-6s=none",
            "schedule:0-=all;5s-6s=none",
            "schedule:0-=all;repeat",
            "schedule:0-5s",
            "schedule:0-5s=bernoulli:2",
        ] {
            assert!(LossSchedule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mean_loss() {
        let ge = LossModel::GilbertElliott {
            p: 0.1,
            r: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!((ge.mean_loss() - 0.25).abs() < 1e-12);
    }
}
