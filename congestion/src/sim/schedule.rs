//! A bottleneck whose rate varies: piecewise-constant rates in fixed steps,
//! repeated when the list ends (a square wave, or a cellular trace binned
//! into steps with [`RateSchedule::from_opportunities`]).

use std::time::Duration;

/// Piecewise-constant bottleneck rate.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSchedule {
    step: Duration,
    rates_bps: Vec<u64>,
}

impl RateSchedule {
    /// Rates in bit/s, each held for `step`; `None` if `step` is shorter
    /// than [`RateSchedule::MIN_STEP`] or every rate is zero (a packet could
    /// never leave). The walks over steps use `f64` seconds: simulations
    /// are meant to last minutes, not months.
    pub fn new(step: Duration, rates_bps: Vec<u64>) -> Option<Self> {
        (step >= Self::MIN_STEP && rates_bps.iter().any(|&r| r > 0))
            .then_some(RateSchedule { step, rates_bps })
    }

    /// The shortest step accepted.
    pub const MIN_STEP: Duration = Duration::from_micros(100);

    /// Longest schedule [`RateSchedule::from_opportunities`] builds, in steps.
    pub const MAX_STEPS: usize = 100_000_000;

    /// Bins delivery opportunities (millisecond timestamps, each carrying
    /// `bytes_each` bytes, as in mahimahi's traces) into steps of `step`:
    /// a step's rate is the capacity its opportunities offer. The schedule
    /// lasts until the step holding the last timestamp.
    /// `None` if there are no timestamps or the schedule would be longer
    /// than [`RateSchedule::MAX_STEPS`]. Steps below 1 ms are 1 ms.
    pub fn from_opportunities(ms: &[u64], bytes_each: u64, step: Duration) -> Option<Self> {
        let step_ms = step.as_millis().max(1) as u64;
        let last = *ms.iter().max()?;
        let steps = usize::try_from(last / step_ms).ok()?.checked_add(1)?;
        if steps > Self::MAX_STEPS {
            return None;
        }
        let mut bins = vec![0u64; steps];
        for &t in ms {
            bins[(t / step_ms) as usize] += bytes_each;
        }
        let per_s = 1000.0 / step_ms as f64;
        let rates = bins
            .iter()
            .map(|&b| (b as f64 * 8.0 * per_s) as u64)
            .collect();
        Self::new(Duration::from_millis(step_ms), rates)
    }

    /// A square wave: `high` for `period / 2`, then `low`.
    pub fn square(high_bps: u64, low_bps: u64, period: Duration) -> Option<Self> {
        Self::new(period / 2, vec![high_bps, low_bps])
    }

    /// The same schedule started `offset` into it (rounded down to a step).
    pub fn shifted(&self, offset: Duration) -> Self {
        let mut rates = self.rates_bps.clone();
        let k = ((offset.as_nanos() / self.step.as_nanos()) % rates.len() as u128) as usize;
        rates.rotate_left(k);
        RateSchedule {
            step: self.step,
            rates_bps: rates,
        }
    }

    fn index(&self, t: Duration) -> usize {
        ((t.as_nanos() / self.step.as_nanos()) % self.rates_bps.len() as u128) as usize
    }

    /// The rate at time `t`.
    pub fn rate_at(&self, t: Duration) -> u64 {
        self.rates_bps[self.index(t)]
    }

    /// The time a transmission of `bytes` that starts at `from` takes.
    pub fn tx_time(&self, from: Duration, bytes: usize) -> Duration {
        if bytes == 0 {
            return Duration::ZERO;
        }
        let step = self.step.as_secs_f64();
        let mut bits = bytes as f64 * 8.0;
        let mut t = from.as_secs_f64();
        loop {
            let rate = self.rate_at(Duration::from_secs_f64(t)) as f64;
            // End of the current step (at least a nanosecond ahead, so that
            // rounding cannot stall the walk).
            let end = ((t / step).floor() + 1.0) * step;
            let left = (end - t).max(1e-9);
            if rate > 0.0 && rate * left >= bits {
                t += bits / rate;
                break;
            }
            bits -= rate * left;
            t += left;
        }
        Duration::from_secs_f64(t).saturating_sub(from)
    }

    /// Bytes the link can carry in `[from, to)`.
    pub fn capacity_bytes(&self, from: Duration, to: Duration) -> f64 {
        let step = self.step.as_secs_f64();
        let (mut t, end) = (from.as_secs_f64(), to.as_secs_f64());
        let mut bits = 0.0;
        while t < end {
            let next = (((t / step).floor() + 1.0) * step).min(end).max(t + 1e-9);
            bits += self.rate_at(Duration::from_secs_f64(t)) as f64 * (next - t);
            t = next;
        }
        bits / 8.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_crosses_steps_and_skips_outages() {
        // 8 Mbit/s for 10 ms, then nothing for 10 ms.
        let s = RateSchedule::new(Duration::from_millis(10), vec![8_000_000, 0]).unwrap();
        // 1000 bytes = 1 ms at 8 Mbit/s.
        let d = s.tx_time(Duration::ZERO, 1000);
        assert!((d.as_secs_f64() - 0.001).abs() < 1e-9, "{d:?}");
        // Starting 0.5 ms before the 10 ms outage: half before, half after.
        let d = s.tx_time(Duration::from_micros(9_500), 1000);
        assert!((d.as_secs_f64() - 0.011).abs() < 1e-9, "{d:?}");
        assert!(
            (s.capacity_bytes(Duration::ZERO, Duration::from_millis(40)) - 20_000.0).abs() < 1.0
        );
        assert!(RateSchedule::new(Duration::from_millis(1), vec![0, 0]).is_none());
        assert!(RateSchedule::new(Duration::from_nanos(1), vec![1]).is_none());
        assert_eq!(s.tx_time(Duration::from_millis(15), 0), Duration::ZERO);
    }

    #[test]
    fn opportunities_bin_into_rates() {
        // Two 1500-byte opportunities in the first 100 ms, one in the next.
        let s = RateSchedule::from_opportunities(&[5, 50, 150], 1500, Duration::from_millis(100))
            .unwrap();
        assert_eq!(s.rate_at(Duration::from_millis(10)), 240_000);
        assert_eq!(s.rate_at(Duration::from_millis(110)), 120_000);
        // Unsorted input is binned by value; an absurd length is refused.
        let u = RateSchedule::from_opportunities(&[150, 5, 50], 1500, Duration::from_millis(100))
            .unwrap();
        assert_eq!(u, s);
        assert!(
            RateSchedule::from_opportunities(&[u64::MAX], 1500, Duration::from_millis(1)).is_none()
        );
    }
}
