//! The HTTP/3 client loop behind `qnc-client`.
//!
//! All URLs must share one `host:port`; they are sent as parallel requests
//! on one connection. Every new connection passes through
//! [`crate::hooks::on_new_connection`] right after `quiche::connect()`.

mod outcome;
mod progress;
mod request;

pub use outcome::Outcome;
pub use progress::Progress;
pub use request::{save_paths, Request};

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use quiche::h3;

use crate::args::ClientArgs;
use crate::event_loop::{earliest, wait};
use crate::pacing::{DatagramSink, Drive, Pacer};
use crate::shutdown::Shutdown;
use crate::transport::Trust;
use crate::url::Url;
use crate::Role;

const SOCKET: Token = Token(0);
/// Longest sleep between checks of the shutdown flag.
const WAKE_CAP: Duration = Duration::from_millis(250);
/// H3_NO_ERROR application error code.
const H3_NO_ERROR: u64 = 0x100;
/// Consecutive socket errors after which a read pass stops.
const MAX_RECV_ERRORS: usize = 64;
/// Exit status after SIGINT/SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// A connected UDP socket: datagrams always go to its peer.
struct Connected<'a>(&'a UdpSocket);

impl DatagramSink for Connected<'_> {
    fn send_datagram(&self, buf: &[u8], _to: SocketAddr) -> io::Result<usize> {
        self.0.send(buf)
    }
}

/// Why the loop stopped, before the connection state is examined.
#[derive(Debug, Default)]
struct Stop {
    interrupted: bool,
    timed_out: bool,
    refused: bool,
    handshake_timeout: bool,
    fatal: Option<String>,
}

struct Client {
    socket: UdpSocket,
    local: SocketAddr,
    peer: SocketAddr,
    conn: quiche::Connection,
    nc: quic_nc::Handle,
    h3_config: h3::Config,
    h3: Option<h3::Connection>,
    requests: Vec<Request>,
    by_stream: HashMap<u64, usize>,
    next_request: usize,
    pacer: Pacer,
    progress: Progress,
    started: Instant,
    finished_at: Option<Instant>,
    established: bool,
    stop: Stop,
    recv_buf: Vec<u8>,
    body_buf: Vec<u8>,
}

/// Fetches all URLs of `args`.
pub fn run(args: &ClientArgs, shutdown: &Shutdown) -> Outcome {
    let mut client = match Client::new(args) {
        Ok(c) => c,
        Err(e) => return Outcome::failed(e),
    };
    let overall = args
        .timeout
        .map(|s| client.started + Duration::from_secs_f64(s));
    let handshake = client.started + Duration::from_millis(args.transport.idle_timeout);
    if let Err(e) = client.run_loop(shutdown, overall, handshake) {
        return Outcome::failed(e);
    }
    client.progress.finish();
    if let Some(path) = &args.session_file {
        if let Err(e) = client.save_session(path) {
            return Outcome::failed(e);
        }
    }
    if let Some(path) = &args.delay_log {
        if let Some(m) = client.requests.iter().find_map(|r| r.delivery.as_ref()) {
            if let Err(e) = std::fs::write(path, m.csv()) {
                return Outcome::failed(format!("cannot write {}: {e}", path.display()));
            }
        }
    }
    client.outcome(args)
}

impl Client {
    fn new(args: &ClientArgs) -> Result<Client, String> {
        let urls = args
            .urls
            .iter()
            .map(|u| Url::parse(u))
            .collect::<Result<Vec<_>, _>>()?;
        let first = &urls[0];
        if let Some(other) = urls
            .iter()
            .find(|u| (&u.host, u.port) != (&first.host, first.port))
        {
            return Err(format!(
                "all URLs must use the same host:port ({} vs {})",
                first.authority, other.authority
            ));
        }
        let trust = match (&args.ca, args.no_verify) {
            (Some(ca), _) => Trust::CaFile(ca.clone()),
            (None, true) => Trust::NoVerify,
            (None, false) => Trust::System,
        };
        let mut config = crate::transport::client_config(&args.transport, &trust, first.ip())?;
        let saves = match &args.out {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                save_paths(dir, &urls).into_iter().map(Some).collect()
            }
            None => vec![None; urls.len()],
        };
        let upload = args.upload_spec();
        let requests: Vec<Request> = urls
            .iter()
            .cloned()
            .zip(saves)
            .map(|(u, s)| {
                let r = Request::new(u, s);
                match &upload {
                    Some(spec) => spec.open().map(|b| r.with_upload(b)),
                    None => Ok(r),
                }
            })
            .collect::<Result<_, _>>()?;

        let peer = first.resolve()?;
        let bind = crate::args::wildcard_for(&peer);
        let socket = UdpSocket::bind(bind).map_err(|e| format!("cannot bind {bind}: {e}"))?;
        socket
            .connect(peer)
            .map_err(|e| format!("cannot reach {peer}: {e}"))?;
        let local = socket
            .local_addr()
            .map_err(|e| format!("local address: {e}"))?;

        let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
        boring::rand::rand_bytes(&mut id).map_err(|e| format!("random: {e}"))?;
        let scid = quiche::ConnectionId::from_ref(&id);
        // IP literals are checked against the certificate's IP SANs (set up
        // in the TLS context); names go through SNI and host checking.
        let server_name = if first.ip().is_some() {
            None
        } else {
            Some(first.host.as_str())
        };
        let started = Instant::now();
        let mut conn = quiche::connect(server_name, &scid, local, peer, &mut config)
            .map_err(|e| format!("cannot create connection: {e}"))?;
        if let Some(path) = &args.session_file {
            load_session(&mut conn, path);
        }
        let nc = on_new_connection(&mut conn, &args.transport)?;
        Ok(Client {
            socket,
            local,
            peer,
            conn,
            nc,
            h3_config: h3::Config::new().map_err(|e| format!("h3 config: {e}"))?,
            h3: None,
            requests,
            by_stream: HashMap::new(),
            next_request: 0,
            pacer: Pacer::with_slack(args.transport.pacing_slack()),
            progress: Progress::new(!args.json),
            started,
            finished_at: None,
            established: false,
            stop: Stop::default(),
            recv_buf: vec![0; 65_535],
            body_buf: vec![0; 64 * 1024],
        })
    }

    /// Runs until the connection is done; gives up when the handshake has
    /// not completed by `handshake` or everything by `overall`.
    fn run_loop(
        &mut self,
        shutdown: &Shutdown,
        overall: Option<Instant>,
        handshake: Instant,
    ) -> Result<(), String> {
        let mut poll = Poll::new().map_err(|e| format!("poll: {e}"))?;
        poll.registry()
            .register(
                &mut self.socket,
                SOCKET,
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("poll register: {e}"))?;
        let mut events = Events::with_capacity(64);
        crate::event_loop::precise_timers();
        // Kick off the handshake.
        self.send_all(Instant::now());
        loop {
            if self.conn.is_closed() {
                return Ok(());
            }
            let handshake_deadline = (!self.established).then_some(handshake);
            let deadline = earliest(
                earliest(self.conn.timeout_instant(), self.pacer.deadline()),
                earliest(overall, handshake_deadline),
            );
            wait(&mut poll, &mut events, deadline, WAKE_CAP).map_err(|e| format!("poll: {e}"))?;
            let now = Instant::now();
            if shutdown.requested() {
                self.stop.interrupted = true;
                self.close_now(b"interrupted");
                return Ok(());
            }
            if overall.is_some_and(|t| now >= t) {
                self.stop.timed_out = true;
                self.close_now(b"timeout");
                return Ok(());
            }
            self.read_datagrams();
            if self.stop.refused {
                return Ok(());
            }
            self.established |= self.conn.is_established();
            if !self.established && Instant::now() >= handshake {
                self.stop.handshake_timeout = true;
                self.close_now(b"handshake timeout");
                return Ok(());
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
                return Ok(());
            }
            if self.finished_at.is_none() && self.requests.iter().all(|r| r.done) {
                self.finished_at = Some(Instant::now());
                let _ = self.conn.close(true, H3_NO_ERROR, b"done");
            }
            let total = self.known_total();
            self.progress.update(self.received(), total);
            let drive = self.send_all(Instant::now());
            // Once we closed and the close frame is out, there is nothing
            // left to wait for.
            if self.conn.local_error().is_some() && drive == Drive::Idle {
                return Ok(());
            }
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

    /// Stores the connection's session ticket for a later resumption; a
    /// server that sent none leaves the file as it was.
    fn save_session(&self, path: &std::path::Path) -> Result<(), String> {
        match self.conn.session() {
            Some(s) => std::fs::write(path, s)
                .map_err(|e| format!("cannot write session file {}: {e}", path.display())),
            None => Ok(()),
        }
    }

    fn advance_h3(&mut self) -> Result<(), String> {
        // With a resumed session and --early-data, the requests go out in
        // 0-RTT, before the handshake completes. See H3_SETUP_ROOM.
        if self.h3.is_none()
            && (self.conn.is_established() || self.conn.is_in_early_data())
            && self.conn.send_capacity() >= crate::H3_SETUP_ROOM
        {
            let h = h3::Connection::with_transport(&mut self.conn, &self.h3_config)
                .map_err(|e| format!("HTTP/3 setup failed: {e}"))?;
            self.h3 = Some(h);
        }
        let Some(h3c) = self.h3.as_mut() else {
            return Ok(());
        };
        while self.next_request < self.requests.len() {
            let req = &mut self.requests[self.next_request];
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
                Err(e) => return Err(format!("GET {}: cannot send request: {e}", req.url.text)),
            }
        }
        for req in self.requests[..self.next_request].iter_mut() {
            if req.body_pending() {
                req.pump_upload(h3c, &mut self.conn)?;
            }
        }
        let buf = &mut self.body_buf;
        loop {
            let (sid, ev) = match h3c.poll(&mut self.conn) {
                Ok(v) => v,
                Err(_) => return Ok(()),
            };
            let Some(req) = self
                .by_stream
                .get(&sid)
                .and_then(|&i| self.requests.get_mut(i))
            else {
                continue;
            };
            match ev {
                h3::Event::Headers { list, .. } => req.on_headers(&list),
                h3::Event::Data => {
                    while let Ok(n) = h3c.recv_body(&mut self.conn, sid, buf) {
                        if n == 0 {
                            break;
                        }
                        req.on_body(&buf[..n])?;
                    }
                }
                h3::Event::Finished => req.on_finished()?,
                h3::Event::Reset(code) => {
                    req.failure = Some(format!("stream reset by server (code {code:#x})"));
                    req.done = true;
                }
                h3::Event::PriorityUpdate | h3::Event::GoAway => (),
            }
        }
    }

    fn received(&self) -> u64 {
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
    t: &crate::args::TransportArgs,
) -> Result<quic_nc::Handle, String> {
    let qlog = match crate::qlog::attach(conn, Role::Client) {
        Ok(p) => p.is_some(),
        Err(e) => {
            eprintln!("warning: {e}");
            false
        }
    };
    crate::keylog::attach(conn)?;
    crate::hooks::on_new_connection(conn, Role::Client, t, qlog)
}
