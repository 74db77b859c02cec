//! Waiting for socket readiness or the next deadline.
//!
//! `epoll` only sleeps in whole milliseconds, which would throttle paced
//! senders; deadlines closer than [`SPIN_THRESHOLD`] are therefore waited
//! for precisely (a thread sleep, then a short spin for the last
//! [`SPIN_TAIL`]) before polling the socket without blocking.
//! [`precise_timers`] removes the kernel's default 50 µs timer slack.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Poll};

/// Deadlines closer than this are slept precisely instead of via `epoll`.
pub const SPIN_THRESHOLD: Duration = Duration::from_millis(2);

/// The last part of a precise wait is spent spinning, not sleeping.
pub const SPIN_TAIL: Duration = Duration::from_micros(20);

/// Asks the kernel for minimal timer slack on this thread (Linux), so
/// short sleeps end within microseconds of their deadline. Best effort.
pub fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only
    // changes a scheduling attribute of the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Waits until `deadline` as precisely as the platform allows.
pub fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    let left = deadline - now;
    if left > SPIN_TAIL {
        std::thread::sleep(left - SPIN_TAIL);
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// The earlier of two optional instants.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Waits for socket events or until `deadline`, never longer than `cap`.
///
/// A signal interrupting the wait is not an error: the caller re-checks
/// its shutdown flag.
pub fn wait(
    poll: &mut Poll,
    events: &mut Events,
    deadline: Option<Instant>,
    cap: Duration,
) -> io::Result<()> {
    let now = Instant::now();
    let timeout = deadline
        .map(|d| d.saturating_duration_since(now))
        .unwrap_or(cap)
        .min(cap);
    let timeout = if !timeout.is_zero() && timeout < SPIN_THRESHOLD {
        sleep_until(now + timeout);
        Duration::ZERO
    } else {
        timeout
    };
    match poll.poll(events, Some(timeout)) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            events.clear();
            Ok(())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_picks_the_minimum() {
        let t = Instant::now();
        let u = t + Duration::from_millis(1);
        assert_eq!(earliest(Some(t), Some(u)), Some(t));
        assert_eq!(earliest(None, Some(u)), Some(u));
        assert_eq!(earliest(Some(t), None), Some(t));
        assert_eq!(earliest(None, None), None);
    }

    #[test]
    fn short_deadlines_are_not_overslept_by_much() {
        let mut poll = Poll::new().unwrap();
        let mut events = Events::with_capacity(8);
        let start = Instant::now();
        wait(
            &mut poll,
            &mut events,
            Some(start + Duration::from_micros(300)),
            Duration::from_secs(5),
        )
        .unwrap();
        // Generous bound: only guards against a multi-second hang.
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(start.elapsed() >= Duration::from_micros(300));
    }

    #[test]
    fn sleep_until_never_wakes_early() {
        precise_timers();
        for us in [0u64, 5, 50, 500] {
            let deadline = Instant::now() + Duration::from_micros(us);
            sleep_until(deadline);
            assert!(Instant::now() >= deadline);
        }
    }
}
