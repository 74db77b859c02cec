//! Test support: an in-memory client/server pair of quiche connections.
//!
//! [`Pair`] moves datagrams between two connections without sockets, with an
//! optional filter that drops chosen datagrams, so hook behaviour (acks,
//! losses, recovery) can be driven precisely.
#![deny(unsafe_op_in_unsafe_fn)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

/// Directory of the patched quiche tree (for its test certificates).
pub fn quiche_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.quiche/quiche-0.30.0")
}

/// A quiche config with quiche's bundled test certificate, ALPN "nc-test",
/// and generous flow-control limits.
pub fn config(is_server: bool) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    if is_server {
        let dir = quiche_dir().join("examples");
        c.load_cert_chain_from_pem_file(dir.join("cert.crt").to_str().unwrap())
            .expect("cert");
        c.load_priv_key_from_pem_file(dir.join("cert.key").to_str().unwrap())
            .expect("key");
    }
    c.verify_peer(false);
    c.set_application_protos(&[b"nc-test"]).unwrap();
    c.set_initial_max_data(100_000_000);
    c.set_initial_max_stream_data_bidi_local(50_000_000);
    c.set_initial_max_stream_data_bidi_remote(50_000_000);
    c.set_initial_max_stream_data_uni(50_000_000);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_max_idle_timeout(30_000);
    c
}

/// Which side sent a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client.
    Client,
    /// The server.
    Server,
}

/// A client and a server connection joined in memory.
pub struct Pair {
    /// Client connection.
    pub client: quiche::Connection,
    /// Server connection.
    pub server: quiche::Connection,
    /// The client's own local address.
    client_addr: SocketAddr,
    /// The client's address as the server sees it (a NAT in between).
    client_seen: SocketAddr,
    /// Server datagrams addressed here are dropped (a NAT binding that no
    /// longer exists).
    pub dead_binding: Option<SocketAddr>,
    server_addr: SocketAddr,
    /// Datagrams sent so far by each side (client, server).
    pub sent: (u64, u64),
}

impl Pair {
    /// Creates both endpoints; `setup` runs on each connection right after
    /// `connect()`/`accept()` (the place to install hooks).
    pub fn new(
        client_cfg: &mut quiche::Config,
        server_cfg: &mut quiche::Config,
        mut setup: impl FnMut(Side, &mut quiche::Connection),
    ) -> Pair {
        let client_addr: SocketAddr = "127.0.0.1:1234".parse().unwrap();
        let server_addr: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        let cid_c = quiche::ConnectionId::from_ref(&[0xc1; 16]);
        let cid_s = quiche::ConnectionId::from_ref(&[0x5e; 16]);
        let mut client = quiche::connect(
            Some("quic.tech"),
            &cid_c,
            client_addr,
            server_addr,
            client_cfg,
        )
        .unwrap();
        setup(Side::Client, &mut client);
        let mut server =
            quiche::accept(&cid_s, None, server_addr, client_addr, server_cfg).unwrap();
        setup(Side::Server, &mut server);
        Pair {
            client,
            server,
            client_addr,
            client_seen: client_addr,
            dead_binding: None,
            server_addr,
            sent: (0, 0),
        }
    }

    /// Moves every datagram both sides want to send until both are quiet,
    /// dropping those for which `drop(side, index_of_datagram_from_that_side)`
    /// returns true. Returns the number of datagrams moved.
    pub fn advance_with(&mut self, drop: &mut dyn FnMut(Side, u64, &[u8]) -> bool) -> usize {
        let mut moved = 0;
        let mut buf = vec![0u8; 65535];
        loop {
            let mut any = false;
            for side in [Side::Client, Side::Server] {
                loop {
                    let (from, to) = match side {
                        Side::Client => (&mut self.client, &mut self.server),
                        Side::Server => (&mut self.server, &mut self.client),
                    };
                    let (n, sent_to) = match from.send(&mut buf) {
                        Ok((n, info)) => (n, info.to),
                        Err(quiche::Error::Done) => break,
                        Err(e) => panic!("send failed: {e:?}"),
                    };
                    let idx = match side {
                        Side::Client => {
                            self.sent.0 += 1;
                            self.sent.0 - 1
                        }
                        Side::Server => {
                            self.sent.1 += 1;
                            self.sent.1 - 1
                        }
                    };
                    any = true;
                    moved += 1;
                    if drop(side, idx, &buf[..n]) {
                        continue;
                    }
                    if side == Side::Server && Some(sent_to) == self.dead_binding {
                        continue;
                    }
                    let info = match side {
                        Side::Client => quiche::RecvInfo {
                            from: self.client_seen,
                            to: self.server_addr,
                        },
                        Side::Server => quiche::RecvInfo {
                            from: self.server_addr,
                            to: self.client_addr,
                        },
                    };
                    // Errors close the receiving connection; tests look at
                    // its local_error.
                    let _ = to.recv(&mut buf[..n], info);
                }
            }
            if !any {
                return moved;
            }
        }
    }

    /// A NAT rebinding: from now on the server sees the client's packets
    /// come from `addr`, while the client keeps its own address.
    pub fn rebind_client(&mut self, addr: SocketAddr) {
        self.client_seen = addr;
    }

    /// A connection migration started by the client: it moves to the local
    /// address `addr` (quiche's `migrate_source`), and the server sees its
    /// packets come from there. Returns the new path's DCID sequence number.
    pub fn migrate_client(&mut self, addr: SocketAddr) -> quiche::Result<u64> {
        let seq = self.client.migrate_source(addr)?;
        self.client_addr = addr;
        self.client_seen = addr;
        Ok(seq)
    }

    /// The client's address as the server currently sees it.
    pub fn client_seen(&self) -> SocketAddr {
        self.client_seen
    }

    /// Like [`Pair::advance_with`] with no losses.
    pub fn advance(&mut self) -> usize {
        self.advance_with(&mut |_, _, _| false)
    }

    /// Completes the handshake.
    pub fn handshake(&mut self) {
        for _ in 0..20 {
            self.advance();
            if self.client.is_established() && self.server.is_established() {
                return;
            }
        }
        panic!("handshake did not complete");
    }

    /// Fires the timers whose deadline has passed; with `force`, first
    /// waits for the earliest deadline of either side (never for a later
    /// one, such as the other side's idle timeout), as an event loop would.
    pub fn fire_timers(&mut self, force: bool) {
        if force {
            let earliest = [&self.client, &self.server]
                .iter()
                .filter_map(|c| c.timeout_instant())
                .min();
            if let Some(t) = earliest {
                // quiche checks deadlines against the clock.
                std::thread::sleep(t.saturating_duration_since(Instant::now()));
            }
        }
        let now = Instant::now();
        for c in [&mut self.client, &mut self.server] {
            if c.timeout_instant().is_some_and(|t| t <= now) {
                c.on_timeout();
            }
        }
    }

    /// Reads everything readable on `stream_id` at the server; returns the
    /// bytes read and whether FIN was seen.
    pub fn server_read(&mut self, stream_id: u64, out: &mut Vec<u8>) -> bool {
        read_stream(&mut self.server, stream_id, out)
    }

    /// The same at the client.
    pub fn client_read(&mut self, stream_id: u64, out: &mut Vec<u8>) -> bool {
        read_stream(&mut self.client, stream_id, out)
    }
}

/// Appends everything readable on `stream_id` of `conn` to `out`; true once
/// FIN was read.
fn read_stream(conn: &mut quiche::Connection, stream_id: u64, out: &mut Vec<u8>) -> bool {
    let mut buf = vec![0u8; 65535];
    loop {
        match conn.stream_recv(stream_id, &mut buf) {
            Ok((n, fin)) => {
                out.extend_from_slice(&buf[..n]);
                if fin {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
}
