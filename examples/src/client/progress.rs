//! A one-line progress display on stderr, shown only on a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Minimum time between two redraws.
const REDRAW: Duration = Duration::from_millis(100);

/// Draws `[#####.....] 42% 12.3 MB 80.1 Mbit/s` style progress.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    started: Instant,
    last: Option<Instant>,
}

impl Progress {
    /// Enabled when `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> Progress {
        Progress {
            enabled: wanted && std::io::stderr().is_terminal(),
            started: Instant::now(),
            last: None,
        }
    }

    /// Redraws with `done` bytes of `total` (if known), rate-limited.
    pub fn update(&mut self, done: u64, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self.last.is_some_and(|l| now.duration_since(l) < REDRAW) {
            return;
        }
        self.last = Some(now);
        let line = render(done, total, now.duration_since(self.started));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
    }

    /// Erases the progress line.
    pub fn finish(&mut self) {
        if self.enabled && self.last.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
        self.last = None;
    }
}

/// The text of one progress line.
pub fn render(done: u64, total: Option<u64>, elapsed: Duration) -> String {
    const WIDTH: u64 = 30;
    let secs = elapsed.as_secs_f64();
    let mbps = if secs > 0.0 {
        done as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    };
    let mb = done as f64 / 1e6;
    match total {
        Some(t) if t > 0 => {
            let frac = (done.min(t) as f64) / (t as f64);
            let filled = (frac * WIDTH as f64) as u64;
            format!(
                "[{}{}] {:3.0}% {mb:.1} MB {mbps:.1} Mbit/s",
                "#".repeat(filled as usize),
                ".".repeat((WIDTH - filled) as usize),
                frac * 100.0,
            )
        }
        _ => format!("{mb:.1} MB {mbps:.1} Mbit/s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_bar_and_rate() {
        let s = render(500_000, Some(1_000_000), Duration::from_secs(1));
        assert!(s.starts_with("[###############..............."), "{s}");
        assert!(s.contains(" 50%"));
        assert!(s.contains("4.0 Mbit/s"));
        assert_eq!(render(0, None, Duration::ZERO), "0.0 MB 0.0 Mbit/s");
        assert!(render(2, Some(1), Duration::from_secs(1)).contains("100%"));
    }
}
