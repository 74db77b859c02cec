//! Probing a quiet server while a response is outstanding (RFC 9000
//! §10.1.2).
//!
//! A client that has acknowledged everything has nothing in flight, so its
//! transport never probes. If the server's last packets were lost and so
//! was the client's ACK of a later one, the server learns nothing until
//! its own probe timer fires, and after a lossy handshake that timer can
//! exceed the idle timeout (RFC 9002 takes the first RTT sample even when
//! it spans retransmissions). So while a response is outstanding and no
//! packet has arrived for a while, the client sends a PING with the ACK
//! frame again (quiche's `send_ack`, hook patch 0009): the server then
//! finds its losses and repeats the data. The interval starts at a few
//! round trips and doubles with each probe that brings no progress (a
//! server's ACK of the probe is not progress: response data is). After
//! the idle timeout without progress the client stops probing, so a server
//! that answers PINGs but never responds cannot keep the connection open
//! for ever.

use std::time::{Duration, Instant};

/// The first probe waits this many minimum RTTs of silence…
const QUIET_RTTS: u32 = 8;
/// …but at least this long, so a server that thinks does not get a burst.
const MIN_QUIET: Duration = Duration::from_millis(500);
/// …and at most this long: a handshake through heavy loss can leave a
/// minimum RTT of seconds (its first samples span retransmissions), and a
/// probe is one small packet, so an early one on a long path costs little.
const MAX_FIRST_QUIET: Duration = Duration::from_secs(2);
/// The interval stops doubling here.
const MAX_QUIET: Duration = Duration::from_secs(8);

/// When to ask the server for a sign of life (sans-IO: the caller passes
/// `now` and what it knows of the connection).
#[derive(Debug)]
pub(crate) struct Liveness {
    /// The caller's progress count (response bytes and completions), at the
    /// last look.
    progress: u64,
    /// When `progress` last changed, or the wait began.
    progress_at: Option<Instant>,
    /// No probes once progress has stalled this long.
    give_up: Duration,
    /// The next probe, when a response is outstanding.
    next: Option<Instant>,
    /// The wait before `next`, doubled by each probe.
    interval: Duration,
}

impl Liveness {
    /// `give_up`: the connection's idle timeout (`Duration::MAX`: none).
    pub fn new(give_up: Duration) -> Liveness {
        Liveness {
            progress: 0,
            progress_at: None,
            give_up,
            next: None,
            interval: MIN_QUIET,
        }
    }

    /// Looks at the connection: `progress` counts what the responses have
    /// brought so far (any measure that grows with response data),
    /// `waiting` is whether a response is outstanding and `min_rtt` the
    /// path's minimum RTT, if known. Returns true when a probe is due now.
    pub fn on_tick(
        &mut self,
        now: Instant,
        progress: u64,
        waiting: bool,
        min_rtt: Option<Duration>,
    ) -> bool {
        if !waiting {
            self.progress = progress;
            self.progress_at = None;
            self.next = None;
            return false;
        }
        if progress != self.progress || self.progress_at.is_none() {
            // Progress (or the wait just began): start over.
            self.progress = progress;
            self.progress_at = Some(now);
            self.interval = min_rtt
                .map_or(MIN_QUIET, |r| r * QUIET_RTTS)
                .clamp(MIN_QUIET, MAX_FIRST_QUIET);
            self.next = Some(now + self.interval);
            return false;
        }
        match (self.next, self.progress_at) {
            (Some(t), Some(since)) if now >= t => {
                self.interval = (self.interval * 2).min(MAX_QUIET);
                let next = now + self.interval;
                // Past the idle timeout without progress: stop probing, and
                // let the transport's idle timer decide.
                let within = since.checked_add(self.give_up).is_none_or(|end| next < end);
                self.next = within.then_some(next);
                true
            }
            _ => false,
        }
    }

    /// When [`Liveness::on_tick`] must be called again at the latest.
    pub fn deadline(&self) -> Option<Instant> {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Option<Duration> = Some(Duration::from_millis(100));

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Ticks every 10 ms for `until_ms` without progress (count 5); the
    /// times of the probes, in ms from `t0`.
    fn probe_times(l: &mut Liveness, t0: Instant, until_ms: u64) -> Vec<u128> {
        let mut probes = Vec::new();
        let mut t = t0;
        while t < t0 + ms(until_ms) {
            t += ms(10);
            if l.on_tick(t, 5, true, RTT) {
                probes.push((t - t0).as_millis());
            }
        }
        probes
    }

    #[test]
    fn probes_back_off_while_nothing_arrives() {
        let t0 = Instant::now();
        let mut l = Liveness::new(ms(60_000));
        assert!(!l.on_tick(t0, 5, true, RTT));
        // 8 RTTs of silence, then 1.6 s, 3.2 s, 6.4 s, 8 s, 8 s.
        let probes = probe_times(&mut l, t0, 30_000);
        assert_eq!(probes, vec![800, 2400, 5600, 12000, 20000, 28000]);
    }

    #[test]
    fn probing_stops_after_the_idle_timeout_without_progress() {
        let t0 = Instant::now();
        let mut l = Liveness::new(ms(30_000));
        l.on_tick(t0, 5, true, RTT);
        let probes = probe_times(&mut l, t0, 90_000);
        // The next probe would come at 36 s, past the 30 s idle timeout.
        assert_eq!(probes, vec![800, 2400, 5600, 12000, 20000, 28000]);
        assert_eq!(l.deadline(), None);
        // Progress starts it again.
        let t = t0 + ms(90_000);
        assert!(!l.on_tick(t, 6, true, RTT));
        assert!(l.on_tick(t + ms(800), 6, true, RTT));
    }

    #[test]
    fn progress_restarts_the_wait() {
        let t0 = Instant::now();
        let mut l = Liveness::new(ms(60_000));
        l.on_tick(t0, 1, true, RTT);
        assert!(l.on_tick(t0 + ms(800), 1, true, RTT));
        // Response data arrives: no probe before another 800 ms.
        assert!(!l.on_tick(t0 + ms(900), 2, true, RTT));
        assert_eq!(l.deadline(), Some(t0 + ms(1700)));
        assert!(!l.on_tick(t0 + ms(1600), 2, true, RTT));
        assert!(l.on_tick(t0 + ms(1700), 2, true, RTT));
    }

    #[test]
    fn nothing_outstanding_means_no_probe() {
        let t0 = Instant::now();
        let mut l = Liveness::new(ms(60_000));
        for s in 0..60 {
            assert!(!l.on_tick(t0 + ms(s * 1000), 3, false, RTT));
        }
        assert_eq!(l.deadline(), None);
        // The wait starts when a request goes out, not before.
        assert!(!l.on_tick(t0 + ms(60_000), 3, true, RTT));
        assert!(!l.on_tick(t0 + ms(60_700), 3, true, RTT));
        assert!(l.on_tick(t0 + ms(60_800), 3, true, RTT));
    }

    #[test]
    fn the_first_wait_is_bounded() {
        let t0 = Instant::now();
        for (rtt, first) in [(None, 500), (Some(ms(1)), 500), (Some(ms(5000)), 2000)] {
            let mut l = Liveness::new(ms(60_000));
            l.on_tick(t0, 0, true, rtt);
            assert_eq!(l.deadline(), Some(t0 + ms(first)), "{rtt:?}");
        }
    }
}
