//! Windowed extremum filters over virtual time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Minimum of the samples taken in the last `window`, kept with a monotonic
/// deque: samples are stored in time order with strictly increasing values,
/// so the front is the minimum and every operation is amortised O(1).
///
/// The newest sample is never expired, so after at least one sample the
/// filter always has a value.
#[derive(Clone, Debug)]
pub struct WindowedMin<T: Copy + PartialOrd> {
    window: Duration,
    samples: VecDeque<(Instant, T)>,
}

impl<T: Copy + PartialOrd> WindowedMin<T> {
    /// An empty filter with the given window length.
    pub fn new(window: Duration) -> Self {
        WindowedMin {
            window,
            samples: VecDeque::new(),
        }
    }

    /// The window length.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Change the window length (takes effect at the next update or query).
    pub fn set_window(&mut self, window: Duration) {
        self.window = window;
    }

    /// Add a sample taken at `now` and expire old samples.
    pub fn update(&mut self, now: Instant, value: T) {
        while let Some(&(_, v)) = self.samples.back() {
            if v >= value {
                self.samples.pop_back();
            } else {
                break;
            }
        }
        self.samples.push_back((now, value));
        self.expire(now);
    }

    /// Drop samples older than `now - window`, keeping the newest one.
    pub fn expire(&mut self, now: Instant) {
        while self.samples.len() > 1 {
            let (t, _) = self.samples[0];
            if now.saturating_duration_since(t) > self.window {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// The minimum over the window as of the last update/expiry, if any.
    pub fn get(&self) -> Option<T> {
        self.samples.front().map(|&(_, v)| v)
    }

    /// The minimum over samples no older than `window` at `now` (without
    /// mutating; the newest sample always counts).
    pub fn get_at(&self, now: Instant) -> Option<T> {
        let n = self.samples.len();
        self.samples
            .iter()
            .enumerate()
            .find(|(i, (t, _))| *i + 1 == n || now.saturating_duration_since(*t) <= self.window)
            .map(|(_, &(_, v))| v)
    }

    /// Forget all samples.
    pub fn reset(&mut self) {
        self.samples.clear();
    }

    /// Number of samples kept (for tests: bounded by the monotonic property).
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the filter holds no sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// Minimum over the last `window` of a piecewise-constant signal, each
/// sample holding until the next one arrives: the level the signal held
/// for at least `window`. Unlike [`WindowedMin`], a sample is judged when
/// the next one ends it, and the value before a gap in the samples held
/// until the gap ended. So a batch of late samples after a stall (the
/// first ones inflated by the stall) never passes as a level, while a
/// single sample that held for the window does.
#[derive(Clone, Debug)]
pub struct StepMin<T: Copy + PartialOrd> {
    window: Duration,
    /// Time order, strictly increasing values.
    steps: VecDeque<Step<T>>,
}

#[derive(Clone, Copy, Debug)]
struct Step<T> {
    value: T,
    start: Instant,
    /// When the next sample replaced it; `None` for the newest.
    end: Option<Instant>,
}

impl<T: Copy + PartialOrd> StepMin<T> {
    /// An empty filter with the given window length.
    pub fn new(window: Duration) -> Self {
        StepMin {
            window,
            steps: VecDeque::new(),
        }
    }

    /// Change the window length (takes effect at the next update).
    pub fn set_window(&mut self, window: Duration) {
        self.window = window;
    }

    /// The signal takes `value` at `now`. Returns the minimum it held over
    /// `[now - window, now)`, before this sample: `None` until some sample
    /// has held for a while (also within a batch of samples at one instant
    /// that pushed out the older levels).
    pub fn update(&mut self, now: Instant, value: T) -> Option<T> {
        if let Some(back) = self.steps.back_mut() {
            back.end = Some(now);
        }
        while let Some(&Step { end: Some(end), .. }) = self.steps.front() {
            if now.saturating_duration_since(end) > self.window {
                self.steps.pop_front();
            } else {
                break;
            }
        }
        // The front is the minimum; if it began now, so did every later
        // step: nothing has held yet.
        let held = self
            .steps
            .front()
            .filter(|s| s.start < now)
            .map(|s| s.value);
        while let Some(back) = self.steps.back() {
            if back.value >= value {
                self.steps.pop_back();
            } else {
                break;
            }
        }
        self.steps.push_back(Step {
            value,
            start: now,
            end: None,
        });
        held
    }

    /// Number of steps kept.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the filter holds no sample.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// Maximum of the samples in the last `window` (a [`WindowedMin`] on the
/// negated order), used by the BBR-like baseline.
#[derive(Clone, Debug)]
pub struct WindowedMax {
    inner: WindowedMin<NegF64>,
}

#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct NegF64(f64);

impl WindowedMax {
    /// An empty filter with the given window.
    pub fn new(window: Duration) -> Self {
        WindowedMax {
            inner: WindowedMin::new(window),
        }
    }

    /// Change the window length.
    pub fn set_window(&mut self, window: Duration) {
        self.inner.set_window(window);
    }

    /// Add a sample.
    pub fn update(&mut self, now: Instant, value: f64) {
        self.inner.update(now, NegF64(-value));
    }

    /// Current maximum.
    pub fn get(&self) -> Option<f64> {
        self.inner.get().map(|v| -v.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_min_tracks_and_expires() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut f = WindowedMin::new(ms(100));
        assert_eq!(f.get(), None);
        f.update(t0, 50u32);
        f.update(t0 + ms(10), 60);
        f.update(t0 + ms(20), 40);
        assert_eq!(f.get(), Some(40));
        // 40 dominates the earlier, larger samples: they were dropped.
        assert_eq!(f.len(), 1);
        f.update(t0 + ms(50), 45);
        f.update(t0 + ms(60), 70);
        assert_eq!(f.len(), 3);
        // At 120 ms the 40 (t=20) is still in the window (100 ms).
        f.update(t0 + ms(120), 80);
        assert_eq!(f.get(), Some(40));
        // At 121 ms it expires; next minimum is 45 (t=50).
        f.update(t0 + ms(121), 90);
        assert_eq!(f.get(), Some(45));
        assert_eq!(f.get_at(t0 + ms(155)), Some(70));
        f.expire(t0 + ms(500));
        // The newest sample survives expiry.
        assert_eq!(f.get(), Some(90));
    }

    #[test]
    fn step_min_reports_levels_that_held() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut f = StepMin::new(ms(2));
        assert_eq!(f.update(t0, 10u32), None);
        assert_eq!(f.update(t0 + ms(1), 11), Some(10));
        // A stall, then a batch at one instant, the first samples inflated:
        // 11 held until the batch came, the batch itself has not held.
        assert_eq!(f.update(t0 + ms(11), 30), Some(11));
        assert_eq!(f.update(t0 + ms(11), 20), Some(11));
        assert_eq!(f.update(t0 + ms(11), 12), Some(11));
        // 12 held from 11 to 14 ms; 11 (until 11 ms) has left the window.
        assert_eq!(f.update(t0 + ms(14), 40), Some(12));
        // One sample that held for 10 ms counts when the next ends it.
        assert_eq!(f.update(t0 + ms(24), 12), Some(40));
        assert!(f.len() <= 2);
        // Within a batch that pushed out every older level: nothing held.
        let mut g = StepMin::new(ms(2));
        g.update(t0, 50u32);
        assert_eq!(g.update(t0 + ms(5), 5), Some(50));
        assert_eq!(g.update(t0 + ms(5), 6), None);
    }

    #[test]
    fn windowed_max_basic() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut f = WindowedMax::new(ms(10));
        f.update(t0, 3.0);
        f.update(t0 + ms(5), 1.0);
        assert_eq!(f.get(), Some(3.0));
        f.update(t0 + ms(11), 2.0);
        assert_eq!(f.get(), Some(2.0));
    }
}
