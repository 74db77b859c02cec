//! Kernel receive timestamps for UDP sockets (`SO_TIMESTAMPNS`).
//!
//! The relay's model needs the instant a datagram *arrived*, not the instant
//! the receiving thread got scheduled. With `SO_TIMESTAMPNS` the kernel
//! stamps each datagram (CLOCK_REALTIME) when it is queued to the socket;
//! [`recv_stamped`] converts that to an [`Instant`] with a [`StampClock`],
//! a (monotonic, realtime) reference pair sampled tightly (the closest of
//! several bracketed readings) and refreshed every second. The result is
//! clamped to "not after the receive call returned"; if no stamp is
//! available, or it is implausible (clock step), `Instant::now()` is used.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Asks the kernel to attach receive timestamps; returns false if refused.
pub fn enable(sock: &UdpSocket) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: valid fd owned by `sock`; the option value is a live c_int.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

fn to_socket_addr(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, and
            // sockaddr_storage is large and aligned enough for it.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Converts kernel realtime stamps to [`Instant`]s.
#[derive(Debug)]
pub struct StampClock {
    base_instant: Instant,
    base_wall: SystemTime,
}

impl Default for StampClock {
    fn default() -> Self {
        Self::new()
    }
}

impl StampClock {
    /// Samples the reference pair.
    pub fn new() -> Self {
        let mut best: Option<(Duration, Instant, SystemTime)> = None;
        for _ in 0..16 {
            let i1 = Instant::now();
            let w = SystemTime::now();
            let i2 = Instant::now();
            let width = i2 - i1;
            if best.is_none_or(|b| width < b.0) {
                best = Some((width, i1 + width / 2, w));
            }
        }
        let (_, base_instant, base_wall) =
            best.unwrap_or((Duration::ZERO, Instant::now(), SystemTime::now()));
        StampClock {
            base_instant,
            base_wall,
        }
    }

    /// The instant corresponding to kernel stamp `stamp`, given that the
    /// datagram was received at `now`.
    pub fn to_instant(&mut self, stamp: SystemTime, now: Instant) -> Instant {
        if now.saturating_duration_since(self.base_instant) > Duration::from_secs(1) {
            *self = StampClock::new();
        }
        let at = match stamp.duration_since(self.base_wall) {
            Ok(d) => self.base_instant.checked_add(d),
            Err(e) => self.base_instant.checked_sub(e.duration()),
        };
        match at {
            Some(at) if at <= now && now - at < Duration::from_secs(1) => at,
            Some(at) if at > now && at - now < Duration::from_millis(1) => now,
            _ => now,
        }
    }
}

/// Receives one datagram like `recv_from`, also returning its arrival instant.
pub fn recv_stamped(
    sock: &UdpSocket,
    buf: &mut [u8],
    clock: &mut StampClock,
) -> io::Result<(usize, SocketAddr, Instant)> {
    let mut addr = MaybeUninit::<libc::sockaddr_storage>::zeroed();
    // u64 array: aligned for cmsghdr; room for several control messages.
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; all-zero is a valid initial value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = addr.as_mut_ptr() as *mut libc::c_void;
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = size_of::<[u64; 16]>() as _;
    // SAFETY: every pointer in `msg` refers to a live buffer of the stated
    // length that outlives the call.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    let now = Instant::now();
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: recvmsg initialised the first msg_namelen bytes of `addr`
    // (it was zeroed before, so the rest is initialised too).
    let ss = unsafe { addr.assume_init_ref() };
    let from = to_socket_addr(ss, msg.msg_namelen)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unknown address family"))?;

    let mut at = now;
    // SAFETY: CMSG_* walk the control buffer recvmsg filled, bounded by
    // msg_controllen; the timespec is read unaligned from CMSG_DATA.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                if ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                    let stamp = UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
                    at = clock.to_instant(stamp, now);
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, from, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_not_after_the_receive_call() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(enable(&b));
        // The kernel switches stamping on in deferred work; until then it
        // stamps at receive time. Give it a moment.
        std::thread::sleep(Duration::from_millis(100));
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let before = Instant::now();
        a.send_to(b"hello", b.local_addr().unwrap()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 64];
        let (n, from, at) = recv_stamped(&b, &mut buf, &mut StampClock::new()).unwrap();
        let after = Instant::now();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from, a.local_addr().unwrap());
        // The stamp is when the datagram was queued: after the send started
        // (allow clock-conversion error) and before the receive returned.
        assert!(at <= after);
        assert!(at + Duration::from_millis(5) >= before);
        // The 20 ms spent queued is visible in the stamp (the age
        // conversion error is microseconds, not milliseconds).
        assert!(after - at >= Duration::from_millis(15), "{:?}", after - at);
    }

    #[test]
    fn clock_conversion_and_clamping() {
        let mut c = StampClock::new();
        let now = Instant::now();
        let wall = SystemTime::now();
        let at = c.to_instant(wall - Duration::from_millis(10), now);
        // within conversion error (bracketing width, microseconds) of now-10ms
        let d = now - at;
        assert!(
            d >= Duration::from_millis(9) && d <= Duration::from_millis(11),
            "{d:?}"
        );
        // stamps in the future or absurdly old fall back to `now`
        assert_eq!(c.to_instant(wall + Duration::from_secs(5), now), now);
        assert_eq!(c.to_instant(wall - Duration::from_secs(5), now), now);
    }

    #[test]
    fn unstamped_socket_still_works() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 8];
        let (n, from, _) = recv_stamped(&b, &mut buf, &mut StampClock::new()).unwrap();
        assert_eq!((n, from), (1, a.local_addr().unwrap()));
    }
}
