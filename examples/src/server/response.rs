//! One HTTP/3 response being streamed: headers, then a body that is pushed
//! only as far as flow control allows.

use std::fs::File;
use std::io::Read;
use std::time::{Duration, Instant};

use quiche::h3::{self, NameValue};

use crate::pattern::Pattern;
use crate::route::Route;

/// Size of one body chunk handed to quiche.
pub const CHUNK: usize = 64 * 1024;

/// Where the body bytes come from.
#[derive(Debug)]
enum Body {
    /// A short in-memory body (error messages).
    Static(Vec<u8>),
    /// The synthetic pattern.
    Pattern,
    /// A file, read chunk by chunk into `buf[start..end]`.
    File {
        file: File,
        buf: Vec<u8>,
        start: usize,
        end: usize,
    },
    /// Stamped chunks on a schedule ([`crate::stream`]); `next` is the next
    /// chunk to write, `written` how much of the current one quiche took.
    Stream {
        schedule: crate::stream::Schedule,
        started: Option<Instant>,
        next: u64,
        chunk: Box<[u8; crate::stream::CHUNK]>,
        written: usize,
    },
}

/// Progress of [`Response::pump`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pump {
    /// Everything, including FIN, was handed to quiche.
    Done,
    /// Flow control or congestion stopped us; call again when writable.
    Blocked,
}

/// A response being sent on one request stream.
#[derive(Debug)]
pub struct Response {
    status: u16,
    length: u64,
    sent: u64,
    headers_sent: bool,
    body: Body,
    extra: Vec<(String, String)>,
}

impl Response {
    /// The response for `route`, answering a request with `method`
    /// (uploads are answered by [`Response::upload_receipt`]).
    pub fn for_route(route: Route, method: &str) -> Response {
        if method != "GET" {
            return Response::text(405, "only GET, POST and PUT are supported\n");
        }
        match route {
            Route::Bytes(n) => Response::new(200, n, Body::Pattern),
            Route::Stream(schedule) => Response::new(
                200,
                schedule.len(),
                Body::Stream {
                    schedule,
                    started: None,
                    next: 0,
                    chunk: Box::new([0u8; crate::stream::CHUNK]),
                    written: 0,
                },
            ),
            Route::File(path, len) => match File::open(&path) {
                Ok(file) => Response::new(
                    200,
                    len,
                    Body::File {
                        file,
                        buf: Vec::new(),
                        start: 0,
                        end: 0,
                    },
                ),
                Err(_) => Response::text(404, "not found\n"),
            },
            Route::NotFound => Response::text(404, "not found\n"),
            Route::BadRequest(why) => Response::text(400, &format!("bad request: {why}\n")),
        }
    }

    /// The answer to an upload (POST or PUT): the body's length and
    /// SHA-256, in the body and in `x-bytes` / `x-sha256` headers.
    pub fn upload_receipt(bytes: u64, sha256: &str) -> Response {
        let mut r = Response::text(200, &format!("bytes {bytes}\nsha256 {sha256}\n"));
        r.extra = vec![
            ("x-bytes".into(), bytes.to_string()),
            ("x-sha256".into(), sha256.to_string()),
        ];
        r
    }

    /// When the body next has data to hand over (a stream's next chunk).
    pub fn next_due(&self) -> Option<Instant> {
        match &self.body {
            Body::Stream {
                schedule,
                started: Some(t0),
                next,
                written: 0,
                ..
            } if *next < schedule.chunks && !schedule.is_bulk() => {
                Some(*t0 + schedule.interval.mul_f64(*next as f64))
            }
            _ => None,
        }
    }

    /// A short plain-text response.
    pub fn text(status: u16, body: &str) -> Response {
        Response::new(
            status,
            body.len() as u64,
            Body::Static(body.as_bytes().to_vec()),
        )
    }

    fn new(status: u16, length: u64, body: Body) -> Response {
        Response {
            status,
            length,
            sent: 0,
            headers_sent: false,
            body,
            extra: Vec::new(),
        }
    }

    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    fn headers(&self) -> Vec<h3::Header> {
        let ctype = match self.body {
            Body::Static(_) => "text/plain",
            _ => "application/octet-stream",
        };
        let mut h = vec![
            h3::Header::new(b":status", self.status.to_string().as_bytes()),
            h3::Header::new(b"server", b"qnc-server"),
            h3::Header::new(b"content-type", ctype.as_bytes()),
            h3::Header::new(b"content-length", self.length.to_string().as_bytes()),
        ];
        if let Body::Stream { .. } = self.body {
            h.push(h3::Header::new(
                crate::stream::CHUNK_HEADER.as_bytes(),
                crate::stream::CHUNK.to_string().as_bytes(),
            ));
        }
        for (k, v) in &self.extra {
            h.push(h3::Header::new(k.as_bytes(), v.as_bytes()));
        }
        h
    }

    /// Hands as much of the response to quiche as it accepts. A stamped
    /// bulk body starts a chunk only while `budget` (the [`bulk_budget`]
    /// of this pass over the connection's responses, computed by the first
    /// body that needs it) is not spent, and spends what it writes.
    ///
    /// `Err` means the body source failed (e.g. a file read error); the
    /// caller should reset the stream.
    pub fn pump(
        &mut self,
        h3c: &mut h3::Connection,
        conn: &mut quiche::Connection,
        stream_id: u64,
        pattern: &Pattern,
        budget: &mut Option<usize>,
    ) -> Result<Pump, String> {
        if !self.headers_sent {
            let fin = self.length == 0;
            match h3c.send_response(conn, stream_id, &self.headers(), fin) {
                Ok(()) => self.headers_sent = true,
                Err(h3::Error::StreamBlocked) | Err(h3::Error::Done) => return Ok(Pump::Blocked),
                Err(e) => return Err(format!("send_response: {e}")),
            }
            if fin {
                return Ok(Pump::Done);
            }
        }
        while self.sent < self.length {
            let remaining = self.length - self.sent;
            if let Body::Stream { .. } = self.body {
                match self.pump_stream(h3c, conn, stream_id, budget)? {
                    Some(p) => return Ok(p),
                    None => continue,
                }
            }
            let written = {
                let chunk: &[u8] = match &mut self.body {
                    Body::Stream { .. } => unreachable!("handled above"),
                    Body::Static(data) => {
                        let start = usize::try_from(self.sent).unwrap_or(usize::MAX);
                        data.get(start..).unwrap_or(&[])
                    }
                    Body::Pattern => pattern.slice(self.sent, remaining),
                    Body::File {
                        file,
                        buf,
                        start,
                        end,
                    } => {
                        if *start == *end {
                            refill(file, buf, remaining)?;
                            *start = 0;
                            *end = buf.len();
                        }
                        &buf[*start..*end]
                    }
                };
                if chunk.is_empty() {
                    return Err("response body shorter than announced".into());
                }
                let fin = chunk.len() as u64 == remaining;
                match h3c.send_body(conn, stream_id, chunk, fin) {
                    Ok(n) => n,
                    Err(h3::Error::Done) | Err(h3::Error::StreamBlocked) => {
                        return Ok(Pump::Blocked)
                    }
                    Err(e) => return Err(format!("send_body: {e}")),
                }
            };
            self.sent += written as u64;
            if let Body::File { start, .. } = &mut self.body {
                *start += written;
            }
            if written == 0 {
                return Ok(Pump::Blocked);
            }
        }
        Ok(Pump::Done)
    }
}

impl Response {
    /// Hands the stream's due chunks to quiche: `Some` when it must wait
    /// (the next chunk is not due, or flow control), `None` after a chunk
    /// was completed.
    fn pump_stream(
        &mut self,
        h3c: &mut h3::Connection,
        conn: &mut quiche::Connection,
        stream_id: u64,
        budget: &mut Option<usize>,
    ) -> Result<Option<Pump>, String> {
        let Body::Stream {
            schedule,
            started,
            next,
            chunk,
            written,
        } = &mut self.body
        else {
            return Ok(None);
        };
        let now = Instant::now();
        let t0 = *started.get_or_insert(now);
        if *written == 0
            && schedule.is_bulk()
            && *budget.get_or_insert_with(|| bulk_budget(conn)) == 0
        {
            return Ok(Some(Pump::Blocked));
        }
        if *written == 0 {
            let due = t0 + schedule.interval.mul_f64(*next as f64);
            if due > now {
                return Ok(Some(Pump::Blocked));
            }
            // Stamped with the time it was due, not the time it is
            // written: a live source produced it then, and the time it
            // waited because the transport could not take it is part of
            // its delivery delay. A bulk chunk is due when the transport
            // takes it: until its first byte is taken it is stamped again
            // at every attempt.
            let late = if schedule.is_bulk() {
                Duration::ZERO
            } else {
                now - due
            };
            crate::stream::write_chunk(chunk, *next, late);
        }
        let fin = *next + 1 == schedule.chunks;
        let len = schedule.chunk_len(*next);
        let n = match h3c.send_body(conn, stream_id, &chunk[*written..len], fin) {
            Ok(n) => n,
            Err(h3::Error::Done) | Err(h3::Error::StreamBlocked) => return Ok(Some(Pump::Blocked)),
            Err(e) => return Err(format!("send_body: {e}")),
        };
        *written += n;
        self.sent += n as u64;
        if let (true, Some(b)) = (schedule.is_bulk(), budget.as_mut()) {
            *b = b.saturating_sub(n);
        }
        if *written < len {
            return Ok(Some(Pump::Blocked));
        }
        *written = 0;
        *next += 1;
        Ok(None)
    }
}

/// What a stamped bulk body may hand to quiche in one pass over a
/// connection's responses: the congestion window's free space less the
/// stream data already waiting to be sent. quiche's own limit
/// ([`quiche::Connection::send_capacity`]) does not count that backlog
/// (an application writing all it accepts kept 0.3-0.8 MB queued on a
/// 20 Mbit/s link, its stamps 0.3 s early), and while a PTO probe is
/// outstanding it ignores the window altogether (the flow-control limit,
/// megabytes). With this budget a chunk is stamped when the window has
/// room for it; a PTO probe can still send up to a window on top of a
/// full flight, so chunks written then leave up to a window late.
pub fn bulk_budget(conn: &quiche::Connection) -> usize {
    let cwnd = conn.path_stats().find(|p| p.active).map_or(0, |p| p.cwnd);
    conn.send_capacity()
        .min(cwnd)
        .saturating_sub(conn.send_buffered())
}

/// Reads the next chunk of a file body (at most `remaining` bytes).
fn refill(file: &mut File, buf: &mut Vec<u8>, remaining: u64) -> Result<(), String> {
    let want = remaining.min(CHUNK as u64) as usize;
    buf.resize(want, 0);
    let mut got = 0;
    while got < want {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => (),
            Err(e) => return Err(format!("file read failed: {e}")),
        }
    }
    buf.truncate(got);
    Ok(())
}

/// The value of header `name` in `list`, as UTF-8.
pub fn header<'a>(list: &'a [h3::Header], name: &str) -> Option<&'a str> {
    list.iter()
        .find(|h| h.name() == name.as_bytes())
        .and_then(|h| std::str::from_utf8(h.value()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_for_routes() {
        assert_eq!(Response::for_route(Route::Bytes(5), "GET").status(), 200);
        assert_eq!(Response::for_route(Route::NotFound, "GET").status(), 404);
        assert_eq!(
            Response::for_route(Route::BadRequest("x"), "GET").status(),
            400
        );
        assert_eq!(Response::for_route(Route::Bytes(5), "DELETE").status(), 405);
        let u = Response::upload_receipt(3, "ab");
        assert_eq!(header(&u.headers(), "x-sha256"), Some("ab"));
        let r = Response::text(404, "not found\n");
        let h = r.headers();
        assert_eq!(header(&h, ":status"), Some("404"));
        assert_eq!(header(&h, "content-length"), Some("10"));
    }
}
