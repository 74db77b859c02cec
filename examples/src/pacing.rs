//! Honours quiche's pacing hints: a datagram is never handed to the socket
//! before its `SendInfo::at` release time.
//!
//! Each connection owns one [`Pacer`]. [`Pacer::drive`] pulls datagrams
//! from the connection and writes them out until the connection has nothing
//! more to send, the next datagram is due in the future (it is held and its
//! release time returned), or the socket is full (the datagram is held
//! until the socket is writable again).

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Somewhere datagrams can be written to (a UDP socket, or a test double).
pub trait DatagramSink {
    /// Sends one datagram to `to`.
    fn send_datagram(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize>;
}

impl DatagramSink for mio::net::UdpSocket {
    fn send_datagram(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.send_to(buf, to)
    }
}

/// Retry interval after the socket reported it was full.
const BLOCKED_RETRY: Duration = Duration::from_millis(1);

/// One datagram produced by the connection: length, destination and
/// release time.
pub type Produced = (usize, SocketAddr, Instant);

/// Why [`Pacer::drive`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// The connection has nothing more to send right now.
    Idle,
    /// A datagram is held until this instant.
    Paced(Instant),
    /// The socket would block; a datagram is held until it is writable.
    Blocked,
}

/// Holds at most one datagram that is not yet due or could not be sent.
#[derive(Debug)]
pub struct Pacer {
    buf: Vec<u8>,
    held: Option<(usize, SocketAddr, Instant)>,
    blocked_since: Option<Instant>,
    slack: Duration,
    /// Datagrams dropped because the socket reported a hard error.
    pub send_errors: u64,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer::new()
    }
}

impl Pacer {
    /// An empty pacer with room for one maximum-size datagram.
    pub fn new() -> Pacer {
        Pacer {
            buf: vec![0; crate::MAX_DATAGRAM_SIZE],
            held: None,
            blocked_since: None,
            slack: Duration::ZERO,
            send_errors: 0,
        }
    }

    /// A pacer that releases a datagram up to `slack` before its release
    /// time (zero, the default, means strictly never early).
    pub fn with_slack(slack: Duration) -> Pacer {
        Pacer {
            slack,
            ..Pacer::new()
        }
    }

    /// When [`Pacer::drive`] should run again: the release time of the held
    /// datagram (less the slack), or shortly after the socket was found full (a fallback;
    /// normally the socket's writable event comes first).
    pub fn deadline(&self) -> Option<Instant> {
        if let Some(t) = self.blocked_since {
            return Some(t + BLOCKED_RETRY);
        }
        self.held.map(|(_, _, at)| at - self.slack)
    }

    /// Sends due datagrams; `produce` fills the given buffer with the next
    /// datagram (`Ok(None)` when there is none).
    pub fn drive<S, P>(&mut self, now: Instant, sink: &S, mut produce: P) -> Drive
    where
        S: DatagramSink + ?Sized,
        P: FnMut(&mut [u8]) -> Option<Produced>,
    {
        loop {
            if let Some((len, to, at)) = self.held {
                if at > now + self.slack {
                    return Drive::Paced(at - self.slack);
                }
                match sink.send_datagram(&self.buf[..len], to) {
                    Ok(_) => self.blocked_since = None,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.blocked_since.get_or_insert(now);
                        return Drive::Blocked;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // A hard error loses this datagram; QUIC recovers it
                    // like any other loss.
                    Err(_) => {
                        self.blocked_since = None;
                        self.send_errors += 1;
                    }
                }
                self.held = None;
            }
            match produce(&mut self.buf) {
                Some(p) => self.held = Some(p),
                None => return Drive::Idle,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct Sink {
        sent: RefCell<Vec<Vec<u8>>>,
        full: bool,
    }

    impl DatagramSink for Sink {
        fn send_datagram(&self, buf: &[u8], _to: SocketAddr) -> io::Result<usize> {
            if self.full {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.sent.borrow_mut().push(buf.to_vec());
            Ok(buf.len())
        }
    }

    fn addr() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    #[test]
    fn holds_future_datagrams_until_due() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_millis(5);
        let sink = Sink {
            sent: RefCell::new(vec![]),
            full: false,
        };
        let mut queue = vec![(b'c', later), (b'b', t0), (b'a', t0)];
        let mut p = Pacer::new();
        let mut produce = |buf: &mut [u8]| {
            queue.pop().map(|(b, at)| {
                buf[0] = b;
                (1, addr(), at)
            })
        };
        assert_eq!(p.drive(t0, &sink, &mut produce), Drive::Paced(later));
        assert_eq!(sink.sent.borrow().len(), 2, "only the due ones");
        assert_eq!(p.deadline(), Some(later));
        assert_eq!(p.drive(later, &sink, &mut produce), Drive::Idle);
        assert_eq!(
            *sink.sent.borrow(),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(p.deadline(), None);
    }

    #[test]
    fn slack_releases_slightly_early_datagrams() {
        let t0 = Instant::now();
        let sink = Sink {
            sent: RefCell::new(vec![]),
            full: false,
        };
        let mut queue = vec![
            (b'b', t0 + Duration::from_millis(5)),
            (b'a', t0 + Duration::from_micros(500)),
        ];
        let mut p = Pacer::with_slack(Duration::from_millis(1));
        let mut produce = |buf: &mut [u8]| {
            queue.pop().map(|(b, at)| {
                buf[0] = b;
                (1, addr(), at)
            })
        };
        assert_eq!(
            p.drive(t0, &sink, &mut produce),
            Drive::Paced(t0 + Duration::from_millis(4))
        );
        assert_eq!(*sink.sent.borrow(), vec![b"a".to_vec()]);
    }

    #[test]
    fn keeps_datagram_when_socket_is_full() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        let full = Sink {
            sent: RefCell::new(vec![]),
            full: true,
        };
        let mut once = Some(b'x');
        let r = p.drive(t0, &full, |buf: &mut [u8]| {
            once.take().map(|b| {
                buf[0] = b;
                (1, addr(), t0)
            })
        });
        assert_eq!(r, Drive::Blocked);
        assert_eq!(
            p.deadline(),
            Some(t0 + BLOCKED_RETRY),
            "retry soon, never spin"
        );
        let ok = Sink {
            sent: RefCell::new(vec![]),
            full: false,
        };
        assert_eq!(p.drive(t0, &ok, |_: &mut [u8]| None), Drive::Idle);
        assert_eq!(*ok.sent.borrow(), vec![b"x".to_vec()]);
        assert_eq!(p.deadline(), None);
    }
}
