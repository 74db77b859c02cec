//! One server-side connection: QUIC state, HTTP/3 state and the requests
//! in flight on it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use quiche::h3;

use super::response::{header, Pump, Response};
use crate::pacing::Pacer;
use crate::pattern::Pattern;
use crate::route;

/// H3_NO_ERROR application error code.
pub const H3_NO_ERROR: u64 = 0x100;
/// H3_INTERNAL_ERROR application error code.
const H3_INTERNAL_ERROR: u64 = 0x102;

/// A request stream: what has arrived so far and the response, once
/// started.
#[derive(Default)]
struct Request {
    method: Option<String>,
    path: Option<String>,
    headers_seen: bool,
    finished: bool,
    /// The body of an upload (POST/PUT) as it arrives: bytes and SHA-256.
    upload: Option<(u64, boring::sha::Sha256)>,
    response: Option<Response>,
}

impl Request {
    fn is_upload(&self) -> bool {
        matches!(self.method.as_deref(), Some("POST") | Some("PUT"))
    }
}

/// Everything the server keeps per connection.
pub struct ServerConn {
    /// The QUIC connection.
    pub conn: quiche::Connection,
    /// Its QUIC-NC extension (coding statistics).
    pub nc: quic_nc::Handle,
    /// Its pacing queue.
    pub pacer: Pacer,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Our connection ID, hex.
    pub scid: String,
    /// When it was accepted.
    pub started: Instant,
    /// When it started closing or draining.
    pub ended: Option<Instant>,
    /// When the last datagram from the peer was processed.
    pub last_recv: Instant,
    /// Whether the client's address was validated with a Retry first.
    pub retried: bool,
    h3: Option<h3::Connection>,
    requests: HashMap<u64, Request>,
}

impl ServerConn {
    /// Wraps a freshly accepted connection; see [`Pacer::with_slack`].
    pub fn new(
        conn: quiche::Connection,
        nc: quic_nc::Handle,
        peer: SocketAddr,
        pacing_slack: Duration,
    ) -> ServerConn {
        let scid = crate::hex(&conn.source_id());
        ServerConn {
            conn,
            nc,
            pacer: Pacer::with_slack(pacing_slack),
            peer,
            scid,
            started: Instant::now(),
            ended: None,
            last_recv: Instant::now(),
            retried: false,
            h3: None,
            requests: HashMap::new(),
        }
    }

    /// End of the connection's useful life for statistics: when it started
    /// closing, or the last datagram from the peer if that came earlier
    /// (a lost CONNECTION_CLOSE otherwise adds the whole idle timeout).
    pub fn end_of_activity(&self) -> Instant {
        match self.ended {
            Some(e) => e.min(self.last_recv.max(self.started)),
            None => self.last_recv.max(self.started),
        }
    }

    /// Advances the HTTP/3 layer: sets it up once the handshake allows,
    /// reads requests and pushes responses.
    pub fn process(&mut self, h3_config: &h3::Config, root: &Path, pattern: &Pattern) {
        if self.h3.is_none()
            && (self.conn.is_established() || self.conn.is_in_early_data())
            && self.conn.send_capacity() >= crate::H3_SETUP_ROOM
        {
            match h3::Connection::with_transport(&mut self.conn, h3_config) {
                Ok(h) => self.h3 = Some(h),
                Err(e) => {
                    let _ = self
                        .conn
                        .close(false, 0x1, format!("h3 setup: {e}").as_bytes());
                    return;
                }
            }
        }
        if self.h3.is_some() {
            self.read_events(root);
            self.push_responses(pattern);
        }
        if self.ended.is_none() && (self.conn.is_draining() || self.conn.is_closed()) {
            self.ended = Some(Instant::now());
        }
    }

    fn read_events(&mut self, root: &Path) {
        let Some(h3c) = self.h3.as_mut() else { return };
        let mut scratch = [0u8; 4096];
        loop {
            match h3c.poll(&mut self.conn) {
                Ok((sid, h3::Event::Headers { list, more_frames })) => {
                    let r = self.requests.entry(sid).or_default();
                    if !r.headers_seen {
                        r.headers_seen = true;
                        r.method = header(&list, ":method").map(str::to_string);
                        r.path = header(&list, ":path").map(str::to_string);
                        if r.is_upload() {
                            r.upload = Some((0, boring::sha::Sha256::new()));
                        }
                    }
                    if !more_frames {
                        r.finished = true;
                    }
                }
                Ok((sid, h3::Event::Data)) => {
                    // Upload bodies are hashed and counted; other request
                    // bodies are read and dropped.
                    let upload = self.requests.get_mut(&sid).and_then(|r| r.upload.as_mut());
                    let mut upload = upload;
                    while let Ok(n) = h3c.recv_body(&mut self.conn, sid, &mut scratch) {
                        if n == 0 {
                            break;
                        }
                        if let Some((bytes, sha)) = upload.as_mut() {
                            *bytes += n as u64;
                            sha.update(&scratch[..n]);
                        }
                    }
                }
                Ok((sid, h3::Event::Finished)) => {
                    if let Some(r) = self.requests.get_mut(&sid) {
                        r.finished = true;
                    }
                }
                Ok((sid, h3::Event::Reset(_))) => {
                    self.requests.remove(&sid);
                }
                Ok((_, h3::Event::PriorityUpdate)) | Ok((_, h3::Event::GoAway)) => (),
                Err(h3::Error::Done) => break,
                // quiche closes the connection itself on protocol errors.
                Err(_) => break,
            }
        }
        // Answer only once the whole request (headers and FIN) is in.
        for r in self.requests.values_mut() {
            if r.response.is_none() && r.headers_seen && r.finished {
                if let Some((bytes, sha)) = r.upload.take() {
                    r.response = Some(Response::upload_receipt(bytes, &crate::hex(&sha.finish())));
                    continue;
                }
                let method = r.method.as_deref().unwrap_or("");
                r.response = Some(match r.path.as_deref() {
                    Some(p) => Response::for_route(route::resolve(root, p), method),
                    None => Response::text(400, "bad request: missing :path\n"),
                });
            }
        }
    }

    /// When a response next has data to write (a stream's next chunk).
    pub fn next_due(&self) -> Option<std::time::Instant> {
        self.requests
            .values()
            .filter_map(|r| r.response.as_ref()?.next_due())
            .min()
    }

    fn push_responses(&mut self, pattern: &Pattern) {
        let Some(h3c) = self.h3.as_mut() else { return };
        let conn = &mut self.conn;
        // The budget of stamped bulk bodies in this pass, computed by the
        // first one that needs it.
        let mut budget = None;
        self.requests.retain(|sid, r| {
            let Some(resp) = r.response.as_mut() else {
                return true;
            };
            match resp.pump(h3c, conn, *sid, pattern, &mut budget) {
                Ok(Pump::Blocked) => true,
                Ok(Pump::Done) => false,
                Err(_) => {
                    let _ = conn.stream_shutdown(*sid, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
                    false
                }
            }
        });
    }
}
