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
//! finds its losses and repeats the data. The interval starts at a few round trips
//! and doubles with each probe that brings nothing back.

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
    /// quiche's count of packets received, at the last look.
    received: usize,
    /// The next probe, when a response is outstanding.
    next: Option<Instant>,
    /// The wait before `next`, doubled by each probe.
    interval: Duration,
}

impl Liveness {
    pub fn new() -> Liveness {
        Liveness {
            received: 0,
            next: None,
            interval: MIN_QUIET,
        }
    }

    /// Looks at the connection: `received` is the number of packets it has
    /// received so far, `waiting` whether a response is outstanding and
    /// `min_rtt` the path's minimum RTT, if known. Returns true when a
    /// probe is due now.
    pub fn on_tick(
        &mut self,
        now: Instant,
        received: usize,
        waiting: bool,
        min_rtt: Option<Duration>,
    ) -> bool {
        if !waiting {
            self.received = received;
            self.next = None;
            return false;
        }
        if received != self.received || self.next.is_none() {
            // Something arrived (or the wait just began): start over.
            self.received = received;
            self.interval = min_rtt
                .map_or(MIN_QUIET, |r| r * QUIET_RTTS)
                .clamp(MIN_QUIET, MAX_FIRST_QUIET);
            self.next = Some(now + self.interval);
            return false;
        }
        match self.next {
            Some(t) if now >= t => {
                self.interval = (self.interval * 2).min(MAX_QUIET);
                self.next = Some(now + self.interval);
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

    #[test]
    fn probes_back_off_while_nothing_arrives() {
        let t0 = Instant::now();
        let mut l = Liveness::new();
        assert!(!l.on_tick(t0, 5, true, RTT));
        // 8 RTTs of silence, then 1.6 s, 3.2 s, 6.4 s, 8 s, 8 s.
        let mut probes = Vec::new();
        let mut t = t0;
        while t < t0 + ms(30_000) {
            t += ms(10);
            if l.on_tick(t, 5, true, RTT) {
                probes.push((t - t0).as_millis());
            }
        }
        assert_eq!(probes, vec![800, 2400, 5600, 12000, 20000, 28000]);
    }

    #[test]
    fn a_packet_restarts_the_wait() {
        let t0 = Instant::now();
        let mut l = Liveness::new();
        l.on_tick(t0, 1, true, RTT);
        assert!(l.on_tick(t0 + ms(800), 1, true, RTT));
        // A packet arrives: no probe before another 800 ms of silence.
        assert!(!l.on_tick(t0 + ms(900), 2, true, RTT));
        assert_eq!(l.deadline(), Some(t0 + ms(1700)));
        assert!(!l.on_tick(t0 + ms(1600), 2, true, RTT));
        assert!(l.on_tick(t0 + ms(1700), 2, true, RTT));
    }

    #[test]
    fn nothing_outstanding_means_no_probe() {
        let t0 = Instant::now();
        let mut l = Liveness::new();
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
            let mut l = Liveness::new();
            l.on_tick(t0, 0, true, rtt);
            assert_eq!(l.deadline(), Some(t0 + ms(first)), "{rtt:?}");
        }
    }
}
