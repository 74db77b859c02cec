//! Loss models and time schedules of loss models.
//!
//! Text syntax (used by `linkem --loss`), see [`LossSchedule::parse`]:
//!
//! * `none`, `all` (100 % loss), `bernoulli:P` (P as `0.05` or `5%`)
//! * `droprate:P,N` — independent loss with probability P, but never more
//!   than N packets in a row (the quic-network-simulator's `drop-rate` and
//!   `corrupt-rate` scenarios)
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
    /// Independent loss with probability `p`, except that after `burst`
    /// losses in a row the next packet always passes (the interop runner's
    /// `drop-rate` scenario). Mean rate slightly below `p`.
    DropRate {
        /// Loss probability.
        p: f64,
        /// Longest run of losses (at least 1).
        burst: u32,
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
            LossModel::DropRate { p, burst } => {
                // Markov chain on the current run length k = 0..=burst:
                // pi_k = pi_0 p^k, and a packet is lost from k < burst with
                // probability p, so rate = L / (1 + L), L = p + ... + p^burst.
                let b = burst as i32;
                let l = if p >= 1.0 {
                    b as f64
                } else {
                    p * (1.0 - p.powi(b)) / (1.0 - p)
                };
                l / (1.0 + l)
            }
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
            LossModel::DropRate { p, burst } => {
                if burst == 0 {
                    return Err("droprate burst must be at least 1".into());
                }
                vec![("p", p)]
            }
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
            "droprate" | "drop-rate" => {
                let (p, n) = args
                    .split_once(',')
                    .ok_or_else(|| format!("'{s}': droprate needs droprate:P,BURST"))?;
                LossModel::DropRate {
                    p: parse_prob(p)?,
                    burst: n
                        .trim()
                        .parse()
                        .map_err(|_| format!("'{s}': burst '{n}' is not a whole number"))?,
                }
            }
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
                    "unknown loss model '{s}' (none, all, bernoulli:P, droprate:P,N, ge:p,r,lg,lb, schedule:...)"
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

/// Mutable state of a schedule's models (Gilbert–Elliott states, runs of
/// losses).
#[derive(Clone, Debug)]
pub struct LossState {
    bad: Vec<bool>,
    run: Vec<u32>,
}

impl LossState {
    /// Fresh state (all Gilbert–Elliott chains in the good state).
    pub fn new(sched: &LossSchedule) -> Self {
        LossState {
            bad: vec![false; sched.segments.len()],
            run: vec![0; sched.segments.len()],
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
            LossModel::DropRate { p, burst } => {
                let Some(run) = self.run.get_mut(i) else {
                    return false;
                };
                // One draw per packet, also for a forced pass, so that the
                // pattern does not depend on where runs are cut.
                let lost = rng.chance(p) && *run < burst;
                *run = if lost { *run + 1 } else { 0 };
                lost
            }
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
            "droprate:0.3",
            "droprate:0.3,0",
            "droprate:0.3,x",
        ] {
            assert!(LossModel::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn droprate_caps_runs_and_keeps_its_mean() {
        assert_eq!(
            LossModel::parse("droprate:30%,3"),
            Ok(LossModel::DropRate { p: 0.3, burst: 3 })
        );
        let sched = LossSchedule::parse("droprate:0.3,3").unwrap();
        let mut st = LossState::new(&sched);
        let mut rng = Rng::new(2);
        let (mut run, mut longest, mut lost) = (0, 0, 0);
        let n = 200_000;
        for _ in 0..n {
            if st.lose(&sched, Duration::ZERO, &mut rng) {
                lost += 1;
                run += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        assert_eq!(longest, 3);
        let rate = lost as f64 / n as f64;
        let m = sched.segments[0].model.mean_loss();
        assert!((rate - m).abs() < 0.005, "measured {rate}, model {m}");
        assert!(m < 0.3 && m > 0.29, "{m}");
        // A burst of 1 never loses two in a row; p = 1 alternates.
        let all = LossModel::DropRate { p: 1.0, burst: 1 };
        assert!((all.mean_loss() - 0.5).abs() < 1e-12);
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
