//! A real UDP relay driven by two [`Link`] models (one per direction).
//!
//! The relay listens on one UDP address for clients. By default the first
//! source address it hears from becomes *the* client (one client 4-tuple per
//! relay); datagrams from any other source are counted in `ignored_packets`
//! and dropped. With [`RelayConfig::max_clients`] > 1, each new source
//! address (up to that many) becomes another client with its own upstream
//! socket, and all clients share the same two links (one bottleneck per
//! direction, as flows competing on a real path would). Everything a client
//! sends goes through the "up" link to its upstream server via its own
//! connected socket; everything the server sends back on that socket goes
//! through the "down" link to that client.
//!
//! Several servers: [`RelayConfig::upstreams`] may list several addresses.
//! Clients are numbered in order of first appearance (0, 1, ...); client `k`
//! is relayed to `upstreams[k]`, or to the last upstream if `k` is past the
//! end (so with one upstream every client goes to it). Each client/server
//! pair is then an independent flow, yet all flows share the same per-
//! direction [`Link`] (the same queue, rate and loss process). Per-client
//! counters are reported in [`Stats::per_client`].
//!
//! Threads: one receiver per socket (stamps the arrival time, runs the model,
//! queues the datagram with its delivery instant) and one sender that waits
//! for the earliest delivery instant of both directions. The sender sleeps on
//! a condition variable until [`SPIN_WINDOW`] before the deadline, then
//! spins (yielding the CPU) until the deadline, so the added delay is
//! accurate to a few tens of microseconds on an idle machine.
//!
//! Memory is bounded: the model's buffer is bounded and the delay line of
//! each direction holds at most `max_pending_bytes` (excess is counted in
//! `overflow_drops`).

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::link::{Link, LinkConfig, LinkStats, Verdict};
use crate::rng::derive_seed;

/// Spin window used when [`RelayConfig::spin_window`] is `None` and the
/// threads could not get real-time priority: the sender sleeps until this
/// long before a delivery deadline, then spins (yielding the CPU).
pub const SPIN_WINDOW: Duration = Duration::from_micros(500);

/// `SCHED_FIFO` priority used by [`RelayConfig::realtime`].
pub const RT_PRIORITY: i32 = 10;

/// Upper bound of [`RelayConfig::max_clients`].
pub const MAX_CLIENTS: usize = 64;

/// Receive timeout used so that threads notice [`RelayHandle::stop`].
const POLL: Duration = Duration::from_millis(20);

/// How many datagrams of the first client's flow [`Stats::server_view`]
/// records.
pub const SERVER_VIEW_LEN: usize = 256;

/// NAT rebinding of every client's upstream socket (the interop runner's
/// `rebind` scenario): at `first` and then every `every`, each client's
/// packets leave from a new source port (and, with `addr`, a new IPv4
/// loopback address 127.0.0.2, .3, ...). Server packets to a previous
/// binding are dropped, as a NAT that forgot the mapping would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebind {
    /// Time of the first rebinding (since the relay started).
    pub first: Duration,
    /// Interval between rebindings (at least 100 ms).
    pub every: Duration,
    /// Change the source address as well as the port (IPv4 only).
    pub addr: bool,
}

/// One datagram as the (first) server saw it: client datagrams when they
/// are delivered, server datagrams when they are sent. Enough to check the
/// anti-amplification limit as the interop runner does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSeen {
    /// Sent by the client (else by the server).
    pub from_client: bool,
    /// UDP payload bytes.
    pub len: usize,
    /// Holds an Initial packet.
    pub initial: bool,
    /// Holds a Handshake packet.
    pub handshake: bool,
}

impl ServerSeen {
    fn new(from_client: bool, data: &[u8]) -> Self {
        let mut w = crate::wire::WireTally::default();
        w.observe(data);
        ServerSeen {
            from_client,
            len: data.len(),
            initial: w.initial > 0,
            handshake: w.handshake > 0,
        }
    }
}

/// Direction of travel through the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client → upstream server.
    Up,
    /// Upstream server → client.
    Down,
}

/// The seed of one direction's [`Link`] derived from the relay's seed.
pub fn link_seed(seed: u64, dir: Direction) -> u64 {
    derive_seed(seed, if dir == Direction::Up { 0 } else { 1 })
}

/// Configuration of a [`Relay`].
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Address the client sends to (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The servers' addresses (at least one): client `k`, in order of first
    /// appearance, is relayed to `upstreams[k]`, or to the last one if `k`
    /// is past the end.
    pub upstreams: Vec<SocketAddr>,
    /// Client → server link.
    pub up: LinkConfig,
    /// Server → client link.
    pub down: LinkConfig,
    /// Seed of the loss processes (see [`link_seed`]).
    pub seed: u64,
    /// Upper bound on bytes held in one direction's delay line.
    pub max_pending_bytes: usize,
    /// The sender sleeps until this long before a deadline, then spins
    /// (yielding the CPU). Larger = more robust to late wake-ups, more CPU.
    /// `None` (default): zero if the threads run with real-time priority,
    /// else [`SPIN_WINDOW`].
    pub spin_window: Option<Duration>,
    /// How many distinct client addresses are relayed (1..=[`MAX_CLIENTS`]);
    /// default 1: the first client only.
    pub max_clients: usize,
    /// Run the relay threads with real-time priority (`SCHED_FIFO`, priority
    /// [`RT_PRIORITY`]) so that they are woken on time on a busy machine
    /// (default true). Needs CAP_SYS_NICE (root); if refused, the relay runs
    /// with normal priority and `Stats::realtime` is false. Avoid a large
    /// explicit spin window with it: a real-time thread that spins keeps
    /// other processes off its core.
    pub realtime: bool,
    /// NAT rebinding of the clients' upstream sockets (default none).
    pub rebind: Option<Rebind>,
    /// Extra one-way delay of client `k`'s path (in order of first
    /// appearance), each way, outside the shared links: datagrams of that
    /// client leave either link this much later (flows with different RTTs
    /// behind one bottleneck). Clients past the end get none.
    pub peer_delay: Vec<Duration>,
}

impl RelayConfig {
    /// A lossless, undelayed relay between `listen` and `upstream`.
    pub fn new(listen: SocketAddr, upstream: SocketAddr) -> Self {
        RelayConfig {
            listen,
            upstreams: vec![upstream],
            up: LinkConfig::default(),
            down: LinkConfig::default(),
            seed: 1,
            max_pending_bytes: 256 << 20,
            spin_window: None,
            max_clients: 1,
            realtime: true,
            rebind: None,
            peer_delay: Vec::new(),
        }
    }

    /// The upstream of client `k` (clients numbered in order of first
    /// appearance); `None` only if `upstreams` is empty.
    pub fn upstream_of(&self, k: usize) -> Option<SocketAddr> {
        upstream_of(&self.upstreams, k)
    }
}

fn upstream_of(upstreams: &[SocketAddr], k: usize) -> Option<SocketAddr> {
    upstreams.get(k).or_else(|| upstreams.last()).copied()
}

/// Counters of one client (one flow) of a relay, both directions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStats {
    /// The client's address.
    pub addr: String,
    /// The upstream server this client is relayed to.
    pub upstream: String,
    /// Client → server datagrams dropped by the loss model.
    pub up_lost_packets: u64,
    /// Client → server datagrams dropped because the buffer was full.
    pub up_queue_drop_packets: u64,
    /// Client → server datagrams handed to the kernel.
    pub up_sent_packets: u64,
    /// Client → server bytes handed to the kernel.
    pub up_sent_bytes: u64,
    /// Server → client datagrams dropped by the loss model.
    pub down_lost_packets: u64,
    /// Server → client datagrams dropped because the buffer was full.
    pub down_queue_drop_packets: u64,
    /// Server → client datagrams handed to the kernel.
    pub down_sent_packets: u64,
    /// Server → client bytes handed to the kernel.
    pub down_sent_bytes: u64,
    /// NAT rebindings of this client's upstream socket.
    #[serde(default)]
    pub rebinds: u64,
    /// Upstream bindings (source address and port) on which the server sent
    /// this client packets: more than one shows that it followed a rebinding.
    #[serde(default)]
    pub answered_bindings: u64,
    /// Server datagrams to a previous binding, dropped.
    #[serde(default)]
    pub stale_packets: u64,
}

/// Counters of one direction of a relay.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionStats {
    /// The model's counters.
    #[serde(flatten)]
    pub link: LinkStats,
    /// Datagrams actually handed to the kernel.
    pub sent_packets: u64,
    /// Bytes actually handed to the kernel.
    pub sent_bytes: u64,
    /// Send failures (e.g. server not listening, client unknown).
    pub send_errors: u64,
    /// Datagrams dropped because the delay line was full.
    pub overflow_drops: u64,
    /// Datagrams still waiting for their delivery time.
    pub pending_packets: u64,
    /// QUIC packet types seen, before the link model (as the sender sent them).
    #[serde(default)]
    pub wire: crate::wire::WireTally,
}

/// Statistics of a relay, as written to the stats JSON file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Seconds since the relay started.
    pub elapsed_s: f64,
    /// The relay's seed.
    pub seed: u64,
    /// Address clients send to.
    pub listen: String,
    /// The (first) upstream server.
    pub upstream: String,
    /// All upstream servers, in configuration order.
    #[serde(default)]
    pub upstreams: Vec<String>,
    /// The first learned client address, if any.
    pub client: Option<String>,
    /// All learned client addresses, in order of first appearance.
    #[serde(default)]
    pub clients: Vec<String>,
    /// Datagrams from other sources than the learned client (dropped).
    pub ignored_packets: u64,
    /// Per-client counters, in order of first appearance.
    #[serde(default)]
    pub per_client: Vec<ClientStats>,
    /// Client → server.
    pub up: DirectionStats,
    /// Server → client.
    pub down: DirectionStats,
    /// Whether the sender thread runs with real-time priority.
    #[serde(default)]
    pub realtime: bool,
    /// Configuration of the client → server link.
    #[serde(default)]
    pub up_config: Option<LinkConfig>,
    /// Configuration of the server → client link.
    #[serde(default)]
    pub down_config: Option<LinkConfig>,
    /// The first client's first [`SERVER_VIEW_LEN`] datagrams as its server
    /// saw them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_view: Vec<ServerSeen>,
}

impl Stats {
    /// Pretty JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Writes the JSON atomically (temporary file + rename) to `path`.
    pub fn write_file(&self, path: &std::path::Path) -> io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, self.to_json() + "\n")?;
        std::fs::rename(&tmp, path)
    }
}

struct Dir {
    link: Link,
    /// (delivery instant, datagram, client index)
    queue: VecDeque<(Instant, Vec<u8>, usize)>,
    pending_bytes: usize,
    sent_packets: u64,
    sent_bytes: u64,
    send_errors: u64,
    overflow_drops: u64,
    wire: crate::wire::WireTally,
}

impl Dir {
    fn new(link: Link) -> Self {
        Dir {
            link,
            queue: VecDeque::new(),
            pending_bytes: 0,
            sent_packets: 0,
            sent_bytes: 0,
            send_errors: 0,
            overflow_drops: 0,
            wire: crate::wire::WireTally::default(),
        }
    }

    fn stats(&self) -> DirectionStats {
        DirectionStats {
            link: self.link.stats_at(Instant::now()),
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            send_errors: self.send_errors,
            overflow_drops: self.overflow_drops,
            pending_packets: self.queue.len() as u64,
            wire: self.wire.clone(),
        }
    }

    /// Runs the model and queues the datagram, to leave `extra` after the
    /// link delivers it; returns whether it became the first datagram due
    /// (the sender must wake), and the model's verdict.
    fn offer(
        &mut self,
        now: Instant,
        data: &[u8],
        peer: usize,
        max_pending: usize,
        extra: Duration,
    ) -> (bool, Verdict) {
        self.wire.observe(data);
        let v = self.link.on_packet(now, data.len());
        if let Verdict::Deliver(at) = v {
            if self.pending_bytes + data.len() > max_pending {
                self.overflow_drops += 1;
                return (false, v);
            }
            self.pending_bytes += data.len();
            let mut d = data.to_vec();
            self.link.corrupt(now, &mut d);
            let i = insert_due(&mut self.queue, (at + extra, d, peer));
            return (i == 0, v);
        }
        (false, v)
    }
}

/// Inserts into a delay line kept in order of due time, after every entry
/// due no later (so each client's datagrams keep their order); returns the
/// position. Without per-client delays every entry goes to the back.
fn insert_due<T>(queue: &mut VecDeque<(Instant, T, usize)>, entry: (Instant, T, usize)) -> usize {
    let at = entry.0;
    let i = queue
        .iter()
        .rposition(|(t, _, _)| *t <= at)
        .map_or(0, |i| i + 1);
    queue.insert(i, entry);
    i
}

struct Peer {
    addr: SocketAddr,
    upstream: Arc<UdpSocket>,
    stats: ClientStats,
}

impl Peer {
    /// Counts a model verdict against this client.
    fn count(&mut self, dir: Direction, v: &Verdict) {
        let s = &mut self.stats;
        let (lost, qdrop) = match dir {
            Direction::Up => (&mut s.up_lost_packets, &mut s.up_queue_drop_packets),
            Direction::Down => (&mut s.down_lost_packets, &mut s.down_queue_drop_packets),
        };
        match v {
            Verdict::Lost => *lost += 1,
            Verdict::QueueDrop => *qdrop += 1,
            Verdict::Deliver(_) => {}
        }
    }
}

struct Inner {
    up: Dir,
    down: Dir,
    clients: Vec<Peer>,
    /// Bumped whenever a client's upstream socket changes.
    generation: u64,
    server_view: Vec<ServerSeen>,
    /// Upstream socket created at start for the first client.
    spare: Option<Arc<UdpSocket>>,
    ignored: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    cv: Condvar,
    stop: AtomicBool,
    /// Set when a receiver queued a packet into an empty delay line.
    kick: AtomicBool,
    spin_window: Option<Duration>,
    start: Instant,
    seed: u64,
    listen: SocketAddr,
    upstreams: Vec<SocketAddr>,
    max_pending: usize,
    max_clients: usize,
    realtime: bool,
    rebind: Option<Rebind>,
    peer_delay: Vec<Duration>,
    /// Set by the sender thread once it runs with real-time priority.
    realtime_ok: AtomicBool,
    /// Receiver threads of the upstream sockets.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    /// [`RelayConfig::peer_delay`] of client `peer`.
    fn extra_delay(&self, peer: usize) -> Duration {
        self.peer_delay.get(peer).copied().unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panicking thread cannot leave Inner inconsistent in a way that
        // matters for counters; keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stats(&self) -> Stats {
        let g = self.lock();
        Stats {
            elapsed_s: self.start.elapsed().as_secs_f64(),
            seed: self.seed,
            listen: self.listen.to_string(),
            upstream: self
                .upstreams
                .first()
                .map(|u| u.to_string())
                .unwrap_or_default(),
            upstreams: self.upstreams.iter().map(|u| u.to_string()).collect(),
            client: g.clients.first().map(|c| c.addr.to_string()),
            clients: g.clients.iter().map(|c| c.addr.to_string()).collect(),
            ignored_packets: g.ignored,
            per_client: g.clients.iter().map(|c| c.stats.clone()).collect(),
            realtime: self.realtime_ok.load(Ordering::Relaxed),
            up: g.up.stats(),
            down: g.down.stats(),
            up_config: Some(g.up.link.config().clone()),
            down_config: Some(g.down.link.config().clone()),
            server_view: g.server_view.clone(),
        }
    }
}

/// Entry point for starting relays.
pub struct Relay;

impl Relay {
    /// Validates `cfg`, binds the sockets and starts the relay threads.
    pub fn spawn(cfg: RelayConfig) -> io::Result<RelayHandle> {
        for (name, c) in [("up", &cfg.up), ("down", &cfg.down)] {
            c.validate().map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{name} link: {e}"))
            })?;
        }
        let first = cfg
            .upstream_of(0)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no upstream address"))?;
        if !(1..=MAX_CLIENTS).contains(&cfg.max_clients) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("max_clients must be in 1..={MAX_CLIENTS}"),
            ));
        }
        if let Some(r) = cfg.rebind {
            if r.every < Duration::from_millis(100) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "rebinding interval must be at least 100 ms",
                ));
            }
            if r.addr && !first.ip().is_loopback() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "address rebinding needs a loopback upstream",
                ));
            }
        }
        let client_sock = UdpSocket::bind(cfg.listen)?;
        prepare(&client_sock)?;
        let up_sock = Arc::new(upstream_socket(first, None)?);
        let listen = client_sock.local_addr()?;
        let start = Instant::now();
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                up: Dir::new(Link::new(
                    cfg.up.clone(),
                    link_seed(cfg.seed, Direction::Up),
                    start,
                )),
                down: Dir::new(Link::new(
                    cfg.down.clone(),
                    link_seed(cfg.seed, Direction::Down),
                    start,
                )),
                clients: Vec::new(),
                generation: 0,
                server_view: Vec::new(),
                spare: Some(up_sock.clone()),
                ignored: 0,
            }),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            kick: AtomicBool::new(false),
            spin_window: cfg.spin_window,
            start,
            seed: cfg.seed,
            listen,
            upstreams: cfg.upstreams.clone(),
            max_pending: cfg.max_pending_bytes,
            max_clients: cfg.max_clients,
            realtime: cfg.realtime,
            rebind: cfg.rebind,
            peer_delay: cfg.peer_delay.clone(),
            realtime_ok: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
        });

        let mut handle = RelayHandle {
            shared: shared.clone(),
            client_rx: None,
            tx: None,
        };
        spawn_server_rx(&shared, up_sock, 0)?;
        let client_sock = Arc::new(client_sock);
        {
            let (sh, sock) = (shared.clone(), client_sock.clone());
            handle.client_rx = Some(spawn_named("linkem-rx-client", move || {
                rx_client_loop(&sh, &sock)
            })?);
        }
        {
            let sh = shared.clone();
            handle.tx = Some(spawn_named("linkem-tx", move || {
                tx_loop(&sh, &client_sock)
            })?);
        }
        Ok(handle)
    }
}

fn prepare(s: &UdpSocket) -> io::Result<()> {
    set_buffers(s, 4 << 20);
    crate::rxstamp::enable(s);
    s.set_read_timeout(Some(POLL))
}

/// A new socket connected to the server, bound to `from` (any address if
/// `None`) and a free port.
fn upstream_socket(upstream: SocketAddr, from: Option<IpAddr>) -> io::Result<UdpSocket> {
    let any: IpAddr = if upstream.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let s = UdpSocket::bind(SocketAddr::new(from.unwrap_or(any), 0))?;
    s.connect(upstream)?;
    prepare(&s)?;
    Ok(s)
}

fn spawn_server_rx(sh: &Arc<Shared>, sock: Arc<UdpSocket>, peer: usize) -> io::Result<()> {
    let sh2 = sh.clone();
    let t = spawn_named(&format!("linkem-rx-srv{peer}"), move || {
        rx_server_loop(&sh2, sock, peer)
    })?;
    sh.threads.lock().unwrap_or_else(|e| e.into_inner()).push(t);
    Ok(())
}

fn spawn_named<F: FnOnce() + Send + 'static>(name: &str, f: F) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

fn set_buffers(s: &UdpSocket, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    let fd = s.as_raw_fd();
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: fd is a valid open socket owned by `s` for the duration of
        // the call; the option value points to a live c_int of the given size.
        // Failure (e.g. a lower system limit) is harmless and ignored.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                &bytes as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Receives one datagram; `None` on timeout or a transient error.
fn recv(
    sock: &UdpSocket,
    buf: &mut [u8],
    clock: &mut crate::rxstamp::StampClock,
) -> Option<(usize, SocketAddr, Instant)> {
    match crate::rxstamp::recv_stamped(sock, buf, clock) {
        Ok(x) => Some(x),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        // ICMP errors (ECONNREFUSED) etc.: keep going, but never busy-loop.
        Err(_) => {
            std::thread::sleep(Duration::from_millis(1));
            None
        }
    }
}

fn wake(sh: &Shared) {
    sh.kick.store(true, Ordering::Release);
    sh.cv.notify_one();
}

fn rx_client_loop(sh: &Arc<Shared>, sock: &UdpSocket) {
    if sh.realtime {
        make_realtime();
    }
    let mut buf = vec![0u8; 65536];
    let mut clock = crate::rxstamp::StampClock::new();
    let mut next_rebind = sh.rebind.map(|r| sh.start + r.first);
    let mut rebinds = 0u32;
    while !sh.stop.load(Ordering::Relaxed) {
        if let (Some(at), Some(r)) = (next_rebind, sh.rebind) {
            if Instant::now() >= at {
                rebinds += 1;
                rebind_all(sh, r, rebinds);
                next_rebind = Some(at + r.every);
            }
        }
        let Some((n, from, now)) = recv(sock, &mut buf, &mut clock) else {
            continue;
        };
        let mut g = sh.lock();
        let peer = match g.clients.iter().position(|p| p.addr == from) {
            Some(i) => i,
            None if g.clients.len() < sh.max_clients => {
                let i = g.clients.len();
                // Spawn checked that there is at least one upstream.
                let target = upstream_of(&sh.upstreams, i).unwrap_or(sh.listen);
                let upstream = match g.spare.take() {
                    Some(s) => Ok(s),
                    None => upstream_socket(target, None).map(Arc::new).and_then(|s| {
                        spawn_server_rx(sh, s.clone(), i)?;
                        Ok(s)
                    }),
                };
                match upstream {
                    Ok(upstream) => {
                        g.clients.push(Peer {
                            addr: from,
                            upstream,
                            stats: ClientStats {
                                addr: from.to_string(),
                                upstream: target.to_string(),
                                ..Default::default()
                            },
                        });
                        i
                    }
                    Err(_) => {
                        g.ignored += 1;
                        continue;
                    }
                }
            }
            None => {
                g.ignored += 1;
                continue;
            }
        };
        let extra = sh.extra_delay(peer);
        let (woke, v) = g.up.offer(now, &buf[..n], peer, sh.max_pending, extra);
        g.clients[peer].count(Direction::Up, &v);
        drop(g);
        if woke {
            wake(sh);
        }
    }
}

/// Moves every client to a new upstream socket (the `n`-th rebinding).
fn rebind_all(sh: &Arc<Shared>, r: Rebind, n: u32) {
    let mut g = sh.lock();
    for i in 0..g.clients.len() {
        let target = upstream_of(&sh.upstreams, i).unwrap_or(sh.listen);
        // 127.0.0.2, .3, ... (the whole 127/8 is loopback on Linux).
        let from = (r.addr && target.is_ipv4()).then(|| {
            IpAddr::V4(Ipv4Addr::new(
                127,
                0,
                (1 + n / 250) as u8,
                (1 + n % 250) as u8,
            ))
        });
        let Ok(s) = upstream_socket(target, from).map(Arc::new) else {
            continue;
        };
        if spawn_server_rx(sh, s.clone(), i).is_err() {
            continue;
        }
        let p = &mut g.clients[i];
        p.upstream = s;
        p.stats.rebinds += 1;
    }
    g.generation += 1;
}

fn rx_server_loop(sh: &Shared, sock: Arc<UdpSocket>, peer: usize) {
    if sh.realtime {
        make_realtime();
    }
    let mut buf = vec![0u8; 65536];
    let mut clock = crate::rxstamp::StampClock::new();
    let mut answered = false;
    // Whether this socket is (still) the client's binding; before the
    // first client arrives, the spare socket is.
    let current = |g: &Inner| {
        g.clients
            .get(peer)
            .is_none_or(|p| Arc::ptr_eq(&p.upstream, &sock))
    };
    while !sh.stop.load(Ordering::Relaxed) {
        let got = recv(&sock, &mut buf, &mut clock);
        let mut g = sh.lock();
        if !current(&g) {
            // Rebound: the NAT forgot this mapping. Drop what arrives and
            // close the socket.
            if let (Some(p), Some(_)) = (g.clients.get_mut(peer), got) {
                p.stats.stale_packets += 1;
            }
            return;
        }
        let Some((n, _, now)) = got else {
            continue;
        };
        if peer == 0 && g.server_view.len() < SERVER_VIEW_LEN {
            let seen = ServerSeen::new(false, &buf[..n]);
            g.server_view.push(seen);
        }
        let extra = sh.extra_delay(peer);
        let (woke, v) = g.down.offer(now, &buf[..n], peer, sh.max_pending, extra);
        if let Some(p) = g.clients.get_mut(peer) {
            p.count(Direction::Down, &v);
            if !answered {
                answered = true;
                p.stats.answered_bindings += 1;
            }
        }
        drop(g);
        if woke {
            wake(sh);
        }
    }
}

/// Asks the kernel for precise timed waits on this thread (default slack is 50 µs).
fn precise_timers() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Switches the calling thread to `SCHED_FIFO`; false if not permitted.
fn make_realtime() -> bool {
    let param = libc::sched_param {
        sched_priority: RT_PRIORITY,
    };
    // SAFETY: pid 0 = the calling thread; `param` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

fn tx_loop(sh: &Shared, client_sock: &UdpSocket) {
    precise_timers();
    let rt = sh.realtime && make_realtime();
    sh.realtime_ok.store(rt, Ordering::Relaxed);
    let spin = sh
        .spin_window
        .unwrap_or(if rt { Duration::ZERO } else { SPIN_WINDOW });
    let mut due: Vec<(Direction, Vec<u8>, usize)> = Vec::new();
    // (client address, upstream socket) per client index; clients only
    // grow, sockets change on rebinding (generation).
    let mut peers: Vec<(SocketAddr, Arc<UdpSocket>)> = Vec::new();
    let mut generation = 0u64;
    let mut g = sh.lock();
    loop {
        if sh.stop.load(Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        let next = [g.up.queue.front(), g.down.queue.front()]
            .into_iter()
            .flatten()
            .map(|(at, _, _)| *at)
            .min();
        match next {
            None => {
                g = sh
                    .cv
                    .wait_timeout(g, POLL)
                    .map(|r| r.0)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            Some(at) if at > now + spin => {
                let d = at - now - spin;
                g = sh
                    .cv
                    .wait_timeout(g, d)
                    .map(|r| r.0)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            Some(at) if at > now => {
                // Reset under the lock: any packet queued before this point is
                // already accounted for in `next`.
                sh.kick.store(false, Ordering::Release);
                drop(g);
                // A packet queued meanwhile may be due earlier: re-check on kick.
                while Instant::now() < at && !sh.kick.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                    std::thread::yield_now();
                }
                g = sh.lock();
            }
            Some(_) => {
                let inner = &mut *g;
                for (dir, d) in [
                    (Direction::Up, &mut inner.up),
                    (Direction::Down, &mut inner.down),
                ] {
                    while d.queue.front().is_some_and(|(at, _, _)| *at <= now) {
                        if let Some((_, data, peer)) = d.queue.pop_front() {
                            d.pending_bytes -= data.len();
                            due.push((dir, data, peer));
                        }
                    }
                }
                if peers.len() != inner.clients.len() || generation != inner.generation {
                    generation = inner.generation;
                    peers = inner
                        .clients
                        .iter()
                        .map(|p| (p.addr, p.upstream.clone()))
                        .collect();
                }
                // Record what the server will see before sending: its answer
                // may arrive (and be recorded) before this thread re-locks.
                let view: Vec<Option<usize>> = due
                    .iter()
                    .map(|(dir, data, peer)| {
                        let v = &mut g.server_view;
                        (*dir == Direction::Up && *peer == 0 && v.len() < SERVER_VIEW_LEN).then(
                            || {
                                v.push(ServerSeen::new(true, data));
                                v.len() - 1
                            },
                        )
                    })
                    .collect();
                drop(g);
                let mut res = Vec::with_capacity(due.len());
                for (dir, data, peer) in due.drain(..) {
                    let r = match (dir, peers.get(peer)) {
                        (Direction::Up, Some((_, up))) => up.send(&data),
                        (Direction::Down, Some((addr, _))) => client_sock.send_to(&data, *addr),
                        (_, None) => Err(io::ErrorKind::NotConnected.into()),
                    };
                    res.push((dir, r.is_ok(), data.len(), peer));
                }
                g = sh.lock();
                // The server never saw a datagram whose send failed. Entries
                // are only appended, so the recorded indices still hold.
                for (i, (_, ok, ..)) in res.iter().enumerate().rev() {
                    if let (false, Some(at)) = (*ok, view[i]) {
                        g.server_view.remove(at);
                    }
                }
                for (dir, ok, len, peer) in res {
                    let inner = &mut *g;
                    let d = if dir == Direction::Up {
                        &mut inner.up
                    } else {
                        &mut inner.down
                    };
                    if ok {
                        d.sent_packets += 1;
                        d.sent_bytes += len as u64;
                        if let Some(p) = inner.clients.get_mut(peer) {
                            let s = &mut p.stats;
                            if dir == Direction::Up {
                                s.up_sent_packets += 1;
                                s.up_sent_bytes += len as u64;
                            } else {
                                s.down_sent_packets += 1;
                                s.down_sent_bytes += len as u64;
                            }
                        }
                    } else {
                        d.send_errors += 1;
                    }
                }
            }
        }
    }
}

/// A running relay. Dropping it stops the relay.
pub struct RelayHandle {
    shared: Arc<Shared>,
    client_rx: Option<JoinHandle<()>>,
    tx: Option<JoinHandle<()>>,
}

impl RelayHandle {
    /// The address clients should send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.listen
    }

    /// The instant the relay started (time zero of the loss schedules).
    pub fn start_time(&self) -> Instant {
        self.shared.start
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Stops all threads (datagrams not yet delivered are discarded and
    /// reported as `pending_packets`) and returns the final counters.
    pub fn stop(mut self) -> Stats {
        self.shutdown();
        self.shared.stats()
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.cv.notify_all();
        // The client receiver first: it is the only thread that adds threads.
        for t in [self.client_rx.take(), self.tx.take()]
            .into_iter()
            .flatten()
        {
            let _ = t.join();
        }
        let rest: Vec<_> = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for t in rest {
            let _ = t.join();
        }
    }
}

impl Drop for RelayHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
