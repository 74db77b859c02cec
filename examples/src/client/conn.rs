//! One HTTP/3 connection and its event loop: the engine under both the
//! command-line tool (a fixed list of requests, then close) and the
//! library (requests arrive through a channel while the connection lives).
//!
//! Every new connection passes through [`crate::hooks::on_new_connection`]
//! right after `quiche::connect()`.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use quiche::h3;

use super::config::ClientConfig;
use super::error::{Error, ErrorKind};
use super::liveness::Liveness;
use super::progress::Progress;
use super::request::Request;
use super::rtt_cache;
use super::stats::Stats;
use crate::event_loop::{earliest, wait};
use crate::pacing::{DatagramSink, Drive, Pacer};
use crate::shutdown::Shutdown;
use crate::url::Url;
use crate::Role;

const SOCKET: Token = Token(0);
/// Token of the library's waker (see [`super::Client`]).
pub(crate) const WAKER: Token = Token(1);
/// Longest sleep between checks of the shutdown flag.
const WAKE_CAP: Duration = Duration::from_millis(250);
/// H3_NO_ERROR application error code.
const H3_NO_ERROR: u64 = 0x100;
/// H3_REQUEST_CANCELLED: a request the caller gave up.
const H3_REQUEST_CANCELLED: u64 = 0x10c;
/// Consecutive socket errors after which a read pass stops.
const MAX_RECV_ERRORS: usize = 64;
/// Least time between two statistics snapshots for the library.
const STATS_EVERY: Duration = Duration::from_millis(100);

/// What the library asks of a running connection.
pub(crate) enum Command {
    /// Send this request on the connection.
    Request(Box<Request>),
    /// Give up the request with this id.
    Cancel(u64),
    /// Give up every request.
    CancelAll,
    /// Close the connection (the client is going away).
    Close,
}

/// A connected UDP socket: datagrams always go to its peer.
struct Connected<'a>(&'a UdpSocket);

impl DatagramSink for Connected<'_> {
    fn send_datagram(&self, buf: &[u8], _to: SocketAddr) -> io::Result<usize> {
        self.0.send(buf)
    }
}

/// Why the loop stopped, before the connection state is examined.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    pub interrupted: bool,
    pub timed_out: bool,
    pub refused: bool,
    pub handshake_timeout: bool,
    pub closed_by_caller: bool,
    pub fatal: Option<Error>,
}

/// One connection and the requests on it.
pub(crate) struct Conn {
    socket: UdpSocket,
    local: SocketAddr,
    pub peer: SocketAddr,
    /// `host:port` of the server, the key of its cached RTT.
    authority: String,
    pub conn: quiche::Connection,
    pub nc: quic_nc::Handle,
    h3_config: h3::Config,
    h3: Option<h3::Connection>,
    pub requests: Vec<Request>,
    by_stream: HashMap<u64, usize>,
    next_request: usize,
    pacer: Pacer,
    liveness: Liveness,
    pub progress: Progress,
    pub started: Instant,
    pub finished_at: Option<Instant>,
    pub established: bool,
    pub stop: Stop,
    /// Library mode: stay open when every request is done.
    keep_open: bool,
    connect_timeout: Duration,
    pub cc: String,
    stats_out: Option<Arc<Mutex<Option<Stats>>>>,
    stats_at: Option<Instant>,
    recv_buf: Vec<u8>,
    body_buf: Vec<u8>,
}

impl Conn {
    /// Opens a connection to the host of `first` and queues `requests`
    /// (all to the same `host:port`).
    pub fn connect(
        config: &ClientConfig,
        first: &Url,
        requests: Vec<Request>,
        keep_open: bool,
    ) -> Result<Conn, Error> {
        let unreachable = |m: String| Error::new(ErrorKind::Unreachable, m);
        let mut qconfig =
            crate::transport::client_config(&config.transport, &config.trust, first.ip())
                .map_err(|m| Error::new(ErrorKind::Config, m))?;
        let peer = first.resolve().map_err(unreachable)?;
        let authority = format!("{}:{}", first.host, first.port);
        if let Some(rtt) =
            (config.rtt_cache.as_deref()).and_then(|path| rtt_cache::lookup(path, &authority))
        {
            qconfig.set_initial_rtt(rtt);
        }
        let bind = crate::args::wildcard_for(&peer);
        let socket =
            UdpSocket::bind(bind).map_err(|e| unreachable(format!("cannot bind {bind}: {e}")))?;
        socket
            .connect(peer)
            .map_err(|e| unreachable(format!("cannot reach {peer}: {e}")))?;
        let local = socket
            .local_addr()
            .map_err(|e| unreachable(format!("local address: {e}")))?;

        let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
        boring::rand::rand_bytes(&mut id)
            .map_err(|e| Error::new(ErrorKind::Protocol, format!("random: {e}")))?;
        let scid = quiche::ConnectionId::from_ref(&id);
        // IP literals are checked against the certificate's IP SANs (set up
        // in the TLS context); names go through SNI and host checking.
        let server_name = if first.ip().is_some() {
            None
        } else {
            Some(first.host.as_str())
        };
        let started = Instant::now();
        let protocol = |m: String| Error::new(ErrorKind::Protocol, m);
        let mut conn = quiche::connect(server_name, &scid, local, peer, &mut qconfig)
            .map_err(|e| protocol(format!("cannot create connection: {e}")))?;
        if let Some(path) = &config.session_file {
            load_session(&mut conn, path);
        }
        let nc = on_new_connection(&mut conn, config).map_err(protocol)?;
        Ok(Conn {
            socket,
            local,
            peer,
            authority,
            conn,
            nc,
            h3_config: h3::Config::new().map_err(|e| protocol(format!("h3 config: {e}")))?,
            h3: None,
            requests,
            by_stream: HashMap::new(),
            next_request: 0,
            pacer: Pacer::with_slack(config.transport.pacing_slack()),
            liveness: Liveness::new(match config.transport.idle_timeout {
                0 => Duration::MAX,
                ms => Duration::from_millis(ms),
            }),
            progress: Progress::new(config.progress_bar),
            started,
            finished_at: None,
            established: false,
            stop: Stop::default(),
            keep_open,
            connect_timeout: config.connect_timeout,
            cc: config.transport.cc.clone(),
            stats_out: None,
            stats_at: None,
            recv_buf: vec![0; 65_535],
            body_buf: vec![0; 64 * 1024],
        })
    }

    /// Publishes statistics snapshots into `out` while running.
    pub fn publish_stats(&mut self, out: Arc<Mutex<Option<Stats>>>) {
        self.stats_out = Some(out);
    }

    /// Runs until the connection is done. Gives up when the handshake has
    /// not completed within the connect timeout or everything by
    /// `overall`. `inbox` (library mode) brings new requests and
    /// cancellations; its sender wakes `poll` through [`WAKER`].
    pub fn run_loop(
        &mut self,
        poll: &mut Poll,
        inbox: Option<&Receiver<Command>>,
        shutdown: Option<&Shutdown>,
        overall: Option<Instant>,
    ) -> Result<(), Error> {
        let handshake = self.started + self.connect_timeout;
        let poll_err = |e: io::Error| Error::new(ErrorKind::Protocol, format!("poll: {e}"));
        poll.registry()
            .register(
                &mut self.socket,
                SOCKET,
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(poll_err)?;
        let mut events = Events::with_capacity(64);
        crate::event_loop::precise_timers();
        // Kick off the handshake.
        self.send_all(Instant::now());
        let result = loop {
            if self.conn.is_closed() {
                break Ok(());
            }
            let handshake_deadline = (!self.established).then_some(handshake);
            let deadline = earliest(
                earliest(self.conn.timeout_instant(), self.pacer.deadline()),
                earliest(
                    earliest(overall, handshake_deadline),
                    earliest(self.next_request_deadline(), self.liveness.deadline()),
                ),
            );
            if let Err(e) = wait(poll, &mut events, deadline, WAKE_CAP) {
                break Err(poll_err(e));
            }
            let now = Instant::now();
            if shutdown.is_some_and(|s| s.requested()) {
                self.stop.interrupted = true;
                self.close_now(b"interrupted");
                break Ok(());
            }
            if overall.is_some_and(|t| now >= t) {
                self.stop.timed_out = true;
                self.close_now(b"timeout");
                break Ok(());
            }
            if let Some(rx) = inbox {
                self.take_commands(rx);
            }
            self.read_datagrams();
            if self.stop.refused {
                break Ok(());
            }
            self.established |= self.conn.is_established();
            if !self.established && Instant::now() >= handshake {
                self.stop.handshake_timeout = true;
                self.close_now(b"handshake timeout");
                break Ok(());
            }
            if self
                .conn
                .timeout_instant()
                .is_some_and(|t| t <= Instant::now())
            {
                self.conn.on_timeout();
            }
            self.established |= self.conn.is_established();
            crate::cids::top_up(&mut self.conn);
            if let Err(e) = self.advance_h3() {
                self.stop.fatal = Some(e);
                self.close_now(b"client error");
                break Ok(());
            }
            let now = Instant::now();
            self.expire(now);
            self.settle(now);
            self.probe_if_quiet(now);
            if !self.keep_open && self.finished_at.is_none() && self.requests.iter().all(|r| r.done)
            {
                self.finished_at = Some(now);
                let _ = self.conn.close(true, H3_NO_ERROR, b"done");
            }
            let total = self.known_total();
            self.progress.update(self.received(), total);
            self.snapshot(now, false);
            let drive = self.send_all(Instant::now());
            // Once we closed and the close frame is out, there is nothing
            // left to wait for.
            if self.conn.local_error().is_some() && drive == Drive::Idle {
                break Ok(());
            }
        };
        let _ = poll.registry().deregister(&mut self.socket);
        self.snapshot(Instant::now(), true);
        result
    }

    /// Fails every request still open with the connection's error and
    /// hands out all results (library mode, after the loop).
    pub fn fail_outstanding(&mut self) {
        let why = self.connection_error().unwrap_or_else(|| {
            let detail = match self.conn.peer_error() {
                Some(e) => format!(" (server closed: {})", super::outcome::describe_close(e)),
                None if self.conn.is_timed_out() => " (idle timeout)".to_string(),
                None => String::new(),
            };
            Error::new(
                ErrorKind::Protocol,
                format!("connection closed before the response completed{detail}"),
            )
        });
        for r in self.requests.iter_mut() {
            r.fail(why.clone());
        }
        self.settle(Instant::now());
    }

    fn snapshot(&mut self, now: Instant, last: bool) {
        let Some(out) = &self.stats_out else {
            return;
        };
        if !last && self.stats_at.is_some_and(|t| now - t < STATS_EVERY) {
            return;
        }
        self.stats_at = Some(now);
        let s = Stats::of(&self.conn, &self.nc, &self.cc);
        if let Ok(mut g) = out.lock() {
            *g = Some(s);
        }
    }

    fn take_commands(&mut self, rx: &Receiver<Command>) {
        loop {
            match rx.try_recv() {
                Ok(Command::Request(r)) => self.requests.push(*r),
                Ok(Command::Cancel(id)) => {
                    if let Some(i) = self.requests.iter().position(|r| r.id == id) {
                        self.abandon(i, Error::new(ErrorKind::Cancelled, "cancelled"));
                    }
                }
                Ok(Command::CancelAll) => {
                    for i in 0..self.requests.len() {
                        self.abandon(i, Error::new(ErrorKind::Cancelled, "cancelled"));
                    }
                }
                // A client that went away closes its connection.
                Ok(Command::Close) | Err(TryRecvError::Disconnected) => {
                    if !self.stop.closed_by_caller {
                        self.stop.closed_by_caller = true;
                        for i in 0..self.requests.len() {
                            self.abandon(i, Error::new(ErrorKind::Cancelled, "client closed"));
                        }
                        let _ = self.conn.close(true, H3_NO_ERROR, b"bye");
                    }
                    return;
                }
                Err(TryRecvError::Empty) => return,
            }
        }
    }

    /// Ends request `i` with `why`, resetting its stream if it was sent.
    fn abandon(&mut self, i: usize, why: Error) {
        let r = &mut self.requests[i];
        if r.done {
            return;
        }
        if let Some(sid) = r.stream_id {
            let _ = self
                .conn
                .stream_shutdown(sid, quiche::Shutdown::Read, H3_REQUEST_CANCELLED);
            let _ = self
                .conn
                .stream_shutdown(sid, quiche::Shutdown::Write, H3_REQUEST_CANCELLED);
            self.by_stream.remove(&sid);
        }
        r.fail(why);
    }

    /// Sends a PING (with the ACK frame) when a response is outstanding
    /// and the server has been silent for a while (see [`Liveness`]).
    fn probe_if_quiet(&mut self, now: Instant) {
        let waiting = self.established
            && self.conn.local_error().is_none()
            && self
                .requests
                .iter()
                .any(|r| !r.done && r.stream_id.is_some());
        let min_rtt = self.conn.path_stats().next().and_then(|p| p.min_rtt);
        // Progress is response data and completions, not packets: the
        // server's ACK of a probe must not restart the wait.
        let done = self.requests.iter().filter(|r| r.done).count() as u64;
        let progress = self.received() + done;
        if self.liveness.on_tick(now, progress, waiting, min_rtt) {
            let _ = self.conn.send_ack_eliciting();
            let _ = self.conn.send_ack();
        }
    }

    fn next_request_deadline(&self) -> Option<Instant> {
        self.requests
            .iter()
            .filter(|r| !r.done)
            .filter_map(|r| r.deadline)
            .min()
    }

    /// Times out requests past their deadline.
    fn expire(&mut self, now: Instant) {
        for i in 0..self.requests.len() {
            let r = &self.requests[i];
            if !r.done && r.deadline.is_some_and(|d| d <= now) {
                let secs = now.saturating_duration_since(r.issued).as_secs_f64();
                let msg = format!("GET {}: timed out after {secs:.1} s", r.url.text);
                self.abandon(i, Error::new(ErrorKind::Timeout, msg));
            }
        }
    }

    /// Reports progress and hands out the results of finished library
    /// requests; forgets them all once none is left open.
    fn settle(&mut self, now: Instant) {
        if self.requests.iter().any(|r| r.done && r.reply.is_some()) {
            // A caller who just got a result sees statistics that cover it.
            self.snapshot(now, true);
        }
        for r in self.requests.iter_mut() {
            if r.done && r.reply.is_some() {
                r.report_progress(now, true);
                let result = r.result(now);
                if let Some(done) = r.reply.take() {
                    done(result);
                }
                r.on_progress = None;
            } else if !r.done {
                r.report_progress(now, false);
            }
        }
        if self.keep_open
            && !self.requests.is_empty()
            && self.requests.iter().all(|r| r.done && r.reply.is_none())
        {
            self.requests.clear();
            self.by_stream.clear();
            self.next_request = 0;
        }
    }

    fn send_all(&mut self, now: Instant) -> Drive {
        let conn = &mut self.conn;
        self.pacer
            .drive(now, &Connected(&self.socket), |buf| match conn.send(buf) {
                Ok((n, info)) => Some((n, info.to, info.at)),
                Err(quiche::Error::Done) => None,
                Err(_) => {
                    let _ = conn.close(false, 0x1, b"send failed");
                    None
                }
            })
    }

    /// Closes with an application close and flushes it immediately.
    fn close_now(&mut self, reason: &[u8]) {
        let _ = self.conn.close(true, H3_NO_ERROR, reason);
        self.send_all(Instant::now() + Duration::from_secs(3600));
    }

    fn read_datagrams(&mut self) {
        let buf = &mut self.recv_buf;
        let mut errors = 0;
        loop {
            let len = match self.socket.recv(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && !self.established => {
                    self.stop.refused = true;
                    return;
                }
                // Other errors (e.g. ICMP reports) are one-shot; a run of
                // them means something is badly wrong, so stop reading.
                Err(_) => {
                    errors += 1;
                    if errors > MAX_RECV_ERRORS {
                        return;
                    }
                    continue;
                }
            };
            let info = quiche::RecvInfo {
                from: self.peer,
                to: self.local,
            };
            // Bad packets are dropped by quiche; fatal errors close the
            // connection, which the loop notices.
            let _ = self.conn.recv(&mut buf[..len], info);
        }
    }

    /// Stores what the next connection to this server starts from: the
    /// session ticket (`session_file`) and the smoothed RTT (`rtt_cache`).
    /// The RTT cache is only a hint, so failing to write it only warns.
    pub fn remember(&self, config: &ClientConfig) -> Result<(), String> {
        if let Some(path) = &config.rtt_cache {
            if let Err(e) = self.save_rtt(path) {
                eprintln!("warning: {e}");
            }
        }
        match &config.session_file {
            Some(path) => self.save_session(path),
            None => Ok(()),
        }
    }

    /// Stores the smoothed RTT of the active path, if it was measured.
    fn save_rtt(&self, path: &std::path::Path) -> Result<(), String> {
        let mut paths = self.conn.path_stats();
        match paths.find(|p| p.active && p.min_rtt.is_some()) {
            Some(p) => rtt_cache::store(path, &self.authority, p.rtt),
            None => Ok(()),
        }
    }

    /// Stores the connection's session ticket for a later resumption; a
    /// server that sent none leaves the file as it was.
    fn save_session(&self, path: &std::path::Path) -> Result<(), String> {
        match self.conn.session() {
            Some(s) => std::fs::write(path, s)
                .map_err(|e| format!("cannot write session file {}: {e}", path.display())),
            None => Ok(()),
        }
    }

    /// A request-level failure: fatal for the command-line tool (whose
    /// report names it), only that request's in library mode.
    fn request_error(&mut self, i: usize, kind: ErrorKind, msg: String) -> Result<(), Error> {
        if self.keep_open {
            self.abandon(i, Error::new(kind, msg));
            Ok(())
        } else {
            Err(Error::new(kind, msg))
        }
    }

    fn advance_h3(&mut self) -> Result<(), Error> {
        // With a resumed session and --early-data, the requests go out in
        // 0-RTT, before the handshake completes. See H3_SETUP_ROOM.
        if self.h3.is_none()
            && (self.conn.is_established() || self.conn.is_in_early_data())
            && self.conn.send_capacity() >= crate::H3_SETUP_ROOM
        {
            let h =
                h3::Connection::with_transport(&mut self.conn, &self.h3_config).map_err(|e| {
                    Error::new(ErrorKind::Protocol, format!("HTTP/3 setup failed: {e}"))
                })?;
            self.h3 = Some(h);
        }
        let Some(h3c) = self.h3.as_mut() else {
            return Ok(());
        };
        while self.next_request < self.requests.len() {
            let req = &mut self.requests[self.next_request];
            if req.done {
                // Cancelled before it was sent.
                self.next_request += 1;
                continue;
            }
            let fin = !req.body_pending();
            match h3c.send_request(&mut self.conn, &req.headers(), fin) {
                Ok(sid) => {
                    req.stream_id = Some(sid);
                    self.by_stream.insert(sid, self.next_request);
                    self.next_request += 1;
                }
                Err(h3::Error::StreamBlocked)
                | Err(h3::Error::Done)
                | Err(h3::Error::TransportError(quiche::Error::StreamLimit)) => break,
                Err(e) => {
                    let msg = format!("GET {}: cannot send request: {e}", req.url.text);
                    return Err(Error::new(ErrorKind::Protocol, msg));
                }
            }
        }
        let mut failed = Vec::new();
        for (i, req) in self.requests[..self.next_request].iter_mut().enumerate() {
            if !req.done && req.body_pending() {
                if let Err(m) = req.pump_upload(h3c, &mut self.conn) {
                    failed.push((i, ErrorKind::Io, m));
                }
            }
        }
        let buf = &mut self.body_buf;
        while let Ok((sid, ev)) = h3c.poll(&mut self.conn) {
            let Some(&i) = self.by_stream.get(&sid) else {
                continue;
            };
            let Some(req) = self.requests.get_mut(i) else {
                continue;
            };
            match ev {
                h3::Event::Headers { list, .. } => req.on_headers(&list),
                h3::Event::Data => {
                    while let Ok(n) = h3c.recv_body(&mut self.conn, sid, buf) {
                        if n == 0 {
                            break;
                        }
                        if let Err(m) = req.on_body(&buf[..n]) {
                            failed.push((i, ErrorKind::Io, m));
                            break;
                        }
                    }
                }
                h3::Event::Finished => {
                    if let Err(m) = req.on_finished() {
                        failed.push((i, ErrorKind::Protocol, m));
                    }
                }
                h3::Event::Reset(code) => req.fail(Error::new(
                    ErrorKind::Protocol,
                    format!("stream reset by server (code {code:#x})"),
                )),
                h3::Event::PriorityUpdate | h3::Event::GoAway => (),
            }
        }
        for (i, kind, msg) in failed {
            self.request_error(i, kind, msg)?;
        }
        Ok(())
    }

    pub fn received(&self) -> u64 {
        self.requests.iter().map(|r| r.bytes).sum()
    }

    fn known_total(&self) -> Option<u64> {
        self.requests.iter().map(|r| r.content_length).sum()
    }
}

/// Offers the session stored at `path` for resumption. A missing file is
/// the first run; an unreadable or stale one means a full handshake.
fn load_session(conn: &mut quiche::Connection, path: &std::path::Path) {
    match std::fs::read(path) {
        Ok(s) if !s.is_empty() => {
            if let Err(e) = conn.set_session(&s) {
                eprintln!(
                    "warning: session file {} not usable ({e}); full handshake",
                    path.display()
                );
            }
        }
        Ok(_) => (),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (),
        Err(e) => eprintln!("warning: cannot read session file {}: {e}", path.display()),
    }
}

/// Sets up qlog and key logging, then runs the extension hook.
fn on_new_connection(
    conn: &mut quiche::Connection,
    config: &ClientConfig,
) -> Result<quic_nc::Handle, String> {
    let qlog = match crate::qlog::attach(conn, Role::Client, config.qlog_dir.as_deref()) {
        Ok(p) => p.is_some(),
        Err(e) => {
            eprintln!("warning: {e}");
            false
        }
    };
    crate::keylog::attach(conn)?;
    crate::hooks::on_new_connection(conn, Role::Client, &config.transport, qlog)
}
