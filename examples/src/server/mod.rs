//! The HTTP/3 server loop behind `qnc-server`.
//!
//! One UDP socket, many connections. Every new connection passes through
//! [`crate::hooks::on_new_connection`] right after `quiche::accept()`.

mod conn;
mod response;
mod retry;

pub use conn::ServerConn;
pub use response::{bulk_budget, Pump, Response};
pub use retry::{RetryTokens, TOKEN_LIFETIME};

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

use crate::args::ServerArgs;
use crate::event_loop::{earliest, wait};
use crate::pattern::Pattern;
use crate::report::{server_json, Counters};
use crate::shutdown::Shutdown;
use crate::Role;

const SOCKET: Token = Token(0);
/// Longest sleep between checks of the shutdown flag.
const WAKE_CAP: Duration = Duration::from_millis(250);
/// Clients must pad their first datagram to this size (RFC 9000 §14.1).
const MIN_INITIAL_LEN: usize = 1200;

/// Consecutive socket errors after which a read pass stops.
const MAX_RECV_ERRORS: usize = 64;

/// Writes one line to stdout and flushes; a closed stdout is ignored.
pub fn print_line(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

struct Server {
    socket: UdpSocket,
    local: SocketAddr,
    config: quiche::Config,
    h3_config: quiche::h3::Config,
    root: PathBuf,
    pattern: Pattern,
    transport: crate::args::TransportArgs,
    stats_json: bool,
    pacing_slack: Duration,
    conns: HashMap<Vec<u8>, ServerConn>,
    recv_buf: Vec<u8>,
    /// Client-chosen original destination IDs → our connection IDs, for
    /// Initial packets retransmitted before the client learnt our ID.
    aliases: HashMap<Vec<u8>, Vec<u8>>,
    /// With `--retry`: the key of our address-validation tokens.
    retry: Option<RetryTokens>,
}

/// Runs the server until SIGINT/SIGTERM.
///
/// Prints `listening ADDR` as the first stdout line once the socket is
/// bound.
pub fn run(args: &ServerArgs, shutdown: &Shutdown) -> Result<(), String> {
    let config = crate::transport::server_config(&args.transport, &args.cert, &args.key)?;
    if !args.root.is_dir() {
        return Err(format!("root {} is not a directory", args.root.display()));
    }
    let h3_config = quiche::h3::Config::new().map_err(|e| format!("h3 config: {e}"))?;
    crate::event_loop::precise_timers();
    let mut socket = UdpSocket::bind(args.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = socket
        .local_addr()
        .map_err(|e| format!("local address: {e}"))?;
    let mut poll = Poll::new().map_err(|e| format!("poll: {e}"))?;
    poll.registry()
        .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)
        .map_err(|e| format!("poll register: {e}"))?;
    print_line(&format!("listening {local}"));

    let mut server = Server {
        socket,
        local,
        config,
        h3_config,
        root: args.root.clone(),
        pattern: Pattern::new(response::CHUNK),
        transport: args.transport.clone(),
        stats_json: args.stats_json,
        pacing_slack: args.transport.pacing_slack(),
        conns: HashMap::new(),
        recv_buf: vec![0; 65_535],
        aliases: HashMap::new(),
        retry: args.retry.then(RetryTokens::new).transpose()?,
    };
    let mut events = Events::with_capacity(1024);
    loop {
        let deadline = server.next_deadline();
        wait(&mut poll, &mut events, deadline, WAKE_CAP).map_err(|e| format!("poll: {e}"))?;
        if shutdown.requested() {
            server.shutdown();
            return Ok(());
        }
        server.read_datagrams();
        server.on_timeouts();
        server.process_and_send();
        server.collect_closed();
    }
}

impl Server {
    fn next_deadline(&self) -> Option<Instant> {
        self.conns.values().fold(None, |d, c| {
            let d = earliest(d, c.next_due());
            earliest(earliest(d, c.conn.timeout_instant()), c.pacer.deadline())
        })
    }

    fn read_datagrams(&mut self) {
        let mut buf = std::mem::take(&mut self.recv_buf);
        let mut errors = 0;
        loop {
            let (len, from) = match self.socket.recv_from(&mut buf) {
                Ok(v) => v,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ICMP errors and the like concern one peer only.
                // Other errors (e.g. ICMP reports) are one-shot; a run of
                // them means something is badly wrong, so stop reading.
                Err(_) => {
                    errors += 1;
                    if errors > MAX_RECV_ERRORS {
                        break;
                    }
                    continue;
                }
            };
            self.on_datagram(&mut buf[..len], from);
        }
        self.recv_buf = buf;
    }

    fn on_datagram(&mut self, pkt: &mut [u8], from: SocketAddr) {
        let hdr = match quiche::Header::from_slice(pkt, quiche::MAX_CONN_ID_LEN) {
            Ok(h) => h,
            Err(_) => return,
        };
        let dcid = hdr.dcid.to_vec();
        let key = if self.conns.contains_key(&dcid) {
            dcid
        } else if let Some(k) = self.aliases.get(&dcid) {
            k.clone()
        } else {
            match self.accept(&hdr, pkt.len(), from) {
                Some(k) => k,
                None => return,
            }
        };
        let Some(c) = self.conns.get_mut(&key) else {
            return;
        };
        let info = quiche::RecvInfo {
            from,
            to: self.local,
        };
        // Errors here are the peer's problem; quiche closes if needed.
        let _ = c.conn.recv(pkt, info);
        c.last_recv = Instant::now();
    }

    /// Creates a connection for a new client's Initial packet.
    fn accept(&mut self, hdr: &quiche::Header, len: usize, from: SocketAddr) -> Option<Vec<u8>> {
        if hdr.ty != quiche::Type::Initial {
            return None;
        }
        if !quiche::version_is_supported(hdr.version) {
            let mut out = [0u8; crate::MAX_DATAGRAM_SIZE];
            if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut out) {
                let _ = self.socket.send_to(&out[..n], from);
            }
            return None;
        }
        if len < MIN_INITIAL_LEN {
            return None;
        }
        let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
        boring::rand::rand_bytes(&mut id).ok()?;
        let mut odcid = None;
        if let Some(tokens) = &self.retry {
            let token = hdr.token.as_deref().unwrap_or_default();
            if token.is_empty() {
                self.send_retry(hdr, &id, from);
                return None;
            }
            // The client now addresses the ID our Retry gave it; that ID
            // stays ours, and the token names the one it started with.
            let original = tokens.validate(token, from, std::time::SystemTime::now())?;
            if hdr.dcid.len() != id.len() {
                return None;
            }
            id.copy_from_slice(&hdr.dcid);
            odcid = Some(quiche::ConnectionId::from_vec(original));
        }
        let scid = quiche::ConnectionId::from_ref(&id);
        let mut conn =
            quiche::accept(&scid, odcid.as_ref(), self.local, from, &mut self.config).ok()?;
        let nc = match on_new_connection(&mut conn, &self.transport) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("warning: {e}");
                return None;
            }
        };
        let key = id.to_vec();
        self.aliases.insert(hdr.dcid.to_vec(), key.clone());
        let mut sc = ServerConn::new(conn, nc, from, self.pacing_slack);
        sc.retried = odcid.is_some();
        self.conns.insert(key.clone(), sc);
        Some(key)
    }

    /// Answers a token-less Initial with a Retry that moves the client to
    /// connection ID `new_id` and hands it a token for its address.
    fn send_retry(&self, hdr: &quiche::Header, new_id: &[u8], from: SocketAddr) {
        let Some(tokens) = &self.retry else { return };
        let token = tokens.mint(from, &hdr.dcid, std::time::SystemTime::now());
        let new_scid = quiche::ConnectionId::from_ref(new_id);
        let mut out = [0u8; crate::MAX_DATAGRAM_SIZE];
        if let Ok(n) = quiche::retry(
            &hdr.scid,
            &hdr.dcid,
            &new_scid,
            &token,
            hdr.version,
            &mut out,
        ) {
            let _ = self.socket.send_to(&out[..n], from);
        }
    }

    fn on_timeouts(&mut self) {
        let now = Instant::now();
        for c in self.conns.values_mut() {
            if c.conn.timeout_instant().is_some_and(|t| t <= now) {
                c.conn.on_timeout();
            }
        }
    }

    fn process_and_send(&mut self) {
        for (key, c) in self.conns.iter_mut() {
            for id in crate::cids::top_up(&mut c.conn) {
                self.aliases.insert(id, key.clone());
            }
            while let Some(id) = c.conn.retired_scid_next() {
                self.aliases.remove(id.as_ref());
            }
            c.process(&self.h3_config, &self.root, &self.pattern);
            drive(c, &self.socket, Instant::now());
        }
    }

    fn collect_closed(&mut self) {
        let closed: Vec<Vec<u8>> = self
            .conns
            .iter()
            .filter(|(_, c)| c.conn.is_closed())
            .map(|(k, _)| k.clone())
            .collect();
        for k in closed {
            if let Some(c) = self.conns.remove(&k) {
                self.report(&c);
            }
        }
        let conns = &self.conns;
        self.aliases.retain(|_, v| conns.contains_key(v));
    }

    fn report(&self, c: &ServerConn) {
        if self.stats_json {
            let end = c.end_of_activity();
            let line = server_json(
                &c.scid,
                &c.peer.to_string(),
                &Counters::of(&c.conn),
                end.saturating_duration_since(c.started),
                &self.transport.cc,
                &c.nc.stats(),
                crate::report::Handshake {
                    retry: Some(c.retried),
                    ..crate::report::Handshake::of(&c.conn)
                },
            );
            print_line(&line);
        }
    }

    /// Closes every connection, flushes the close frames and reports.
    fn shutdown(&mut self) {
        for c in self.conns.values_mut() {
            let _ = c
                .conn
                .close(true, conn::H3_NO_ERROR, b"server shutting down");
            c.ended.get_or_insert_with(Instant::now);
            // Closing frames go out at once, pacing or not.
            drive(c, &self.socket, Instant::now() + Duration::from_secs(3600));
        }
        for c in self.conns.values() {
            self.report(c);
        }
        self.conns.clear();
    }
}

/// Sets up qlog and key logging, then runs the extension hook.
fn on_new_connection(
    conn: &mut quiche::Connection,
    t: &crate::args::TransportArgs,
) -> Result<quic_nc::Handle, String> {
    let qlog = match crate::qlog::attach(conn, Role::Server, crate::qlog::dir_from_env().as_deref())
    {
        Ok(p) => p.is_some(),
        Err(e) => {
            eprintln!("warning: {e}");
            false
        }
    };
    crate::keylog::attach(conn)?;
    crate::hooks::on_new_connection(conn, Role::Server, t, qlog)
}

/// Sends what `c` has to send, honouring pacing.
fn drive(c: &mut ServerConn, socket: &UdpSocket, now: Instant) {
    let conn = &mut c.conn;
    c.pacer.drive(now, socket, |buf| match conn.send(buf) {
        Ok((n, info)) => Some((n, info.to, info.at)),
        Err(quiche::Error::Done) => None,
        Err(_) => {
            let _ = conn.close(false, 0x1, b"send failed");
            None
        }
    });
}
