//! One request of the client: its URL, response status, where the body
//! goes, and who hears about it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use quiche::h3::{self, NameValue};

use super::error::{Error, ErrorKind};
use super::response::Response;
use crate::stream::{DelayMeter, CHUNK_HEADER};
use crate::upload::Body;
use crate::url::Url;

/// Largest body kept in memory ([`Sink::Memory`]): a server cannot make the
/// client allocate more; larger responses belong in a file.
pub const MEMORY_LIMIT: u64 = 256 << 20;

/// Least time between two progress callbacks of one request.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How far a response has come, as progress callbacks see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transferred {
    /// Body bytes received so far.
    pub bytes: u64,
    /// The announced length, if the server sent one.
    pub total: Option<u64>,
    /// Goodput since the request was issued, bit/s.
    pub goodput_bps: f64,
}

/// Called with the request's progress (at most every 100 ms, and once at
/// the end), on the connection's thread.
pub type ProgressFn = Box<dyn FnMut(Transferred) + Send>;

/// Called with each piece of body as it arrives, on the connection's thread.
pub type ChunkFn = Box<dyn FnMut(&[u8]) + Send>;

/// Called once with the request's result, on the connection's thread.
pub type DoneFn = Box<dyn FnOnce(Result<Response, Error>) + Send>;

/// Where a response body goes.
pub enum Sink {
    /// Counted, not kept.
    Discard,
    /// Into this file (created with the first byte or at the end).
    File(PathBuf),
    /// Into [`Response::body`], up to [`MEMORY_LIMIT`].
    Memory,
    /// To a callback, piece by piece.
    Chunks(ChunkFn),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::Discard => f.write_str("Discard"),
            Sink::File(p) => write!(f, "File({})", p.display()),
            Sink::Memory => f.write_str("Memory"),
            Sink::Chunks(_) => f.write_str("Chunks"),
        }
    }
}

/// State of one request.
pub struct Request {
    /// The URL requested.
    pub url: Url,
    /// The stream it was sent on, once sent.
    pub stream_id: Option<u64>,
    /// Response status, once the headers arrived.
    pub status: Option<u16>,
    /// Announced body length.
    pub content_length: Option<u64>,
    /// Body bytes received.
    pub bytes: u64,
    /// Whether the response is complete (or failed).
    pub done: bool,
    /// Set when the stream was reset, the body failed or the request was
    /// cancelled or timed out.
    pub failure: Option<Error>,
    /// The library's id of the request (0 for the command-line tool's).
    pub id: u64,
    /// When the request was issued.
    pub issued: Instant,
    /// When it must have finished.
    pub deadline: Option<Instant>,
    /// The response headers, as text.
    pub response_headers: Vec<(String, String)>,
    /// Where the result goes (library requests).
    pub reply: Option<DoneFn>,
    /// Progress callback.
    pub on_progress: Option<ProgressFn>,
    last_progress: Option<Instant>,
    memory: Option<Vec<u8>>,
    chunks: Option<ChunkFn>,
    /// The request body being uploaded (POST), if any.
    pub upload: Option<Body>,
    /// The server's receipt of the upload (`x-sha256`).
    pub receipt: Option<String>,
    /// Delivery-delay meter of a stream response (`x-chunk-size`).
    pub delivery: Option<DelayMeter>,
    /// Where to save the body; the file is created with the first byte
    /// (or at the end, for an empty body) so failed runs leave no files.
    save_as: Option<PathBuf>,
    writer: Option<BufWriter<File>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("id", &self.id)
            .field("url", &self.url.text)
            .field("stream_id", &self.stream_id)
            .field("status", &self.status)
            .field("bytes", &self.bytes)
            .field("done", &self.done)
            .field("failure", &self.failure)
            .finish()
    }
}

impl Request {
    /// A request for `url`; the body is saved to `save_as` if given.
    pub fn new(url: Url, save_as: Option<PathBuf>) -> Request {
        Request::with_sink(url, save_as.map_or(Sink::Discard, Sink::File))
    }

    /// A request for `url` whose body goes to `sink`.
    pub fn with_sink(url: Url, sink: Sink) -> Request {
        let (save_as, memory, chunks) = match sink {
            Sink::Discard => (None, None, None),
            Sink::File(p) => (Some(p), None, None),
            Sink::Memory => (None, Some(Vec::new()), None),
            Sink::Chunks(f) => (None, None, Some(f)),
        };
        Request {
            url,
            stream_id: None,
            status: None,
            content_length: None,
            bytes: 0,
            done: false,
            failure: None,
            id: 0,
            issued: Instant::now(),
            deadline: None,
            response_headers: Vec::new(),
            reply: None,
            on_progress: None,
            last_progress: None,
            memory,
            chunks,
            upload: None,
            receipt: None,
            delivery: None,
            save_as,
            writer: None,
        }
    }

    /// Ends the request with `error` (cancelled, timed out, failed).
    pub fn fail(&mut self, error: Error) {
        if !self.done {
            self.done = true;
            self.failure = Some(error);
        }
    }

    /// Calls the progress callback if it is due (or `last`).
    pub fn report_progress(&mut self, now: Instant, last: bool) {
        let Some(f) = self.on_progress.as_mut() else {
            return;
        };
        if !last && self.last_progress.is_some_and(|t| now - t < PROGRESS_EVERY) {
            return;
        }
        self.last_progress = Some(now);
        let secs = now.saturating_duration_since(self.issued).as_secs_f64();
        f(Transferred {
            bytes: self.bytes,
            total: self.content_length,
            goodput_bps: if secs > 0.0 {
                self.bytes as f64 * 8.0 / secs
            } else {
                0.0
            },
        });
    }

    /// The result to hand the caller, once done: the response, or why
    /// there is none.
    pub fn result(&mut self, now: Instant) -> Result<Response, Error> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        Ok(Response {
            url: self.url.text.clone(),
            status: self.status.unwrap_or(0),
            headers: std::mem::take(&mut self.response_headers),
            body: self.memory.take().unwrap_or_default(),
            saved_to: self.save_as.clone(),
            bytes: self.bytes,
            elapsed: now.saturating_duration_since(self.issued),
        })
    }

    /// The same request with `body` as its upload (sent as a POST).
    pub fn with_upload(mut self, body: Body) -> Request {
        self.upload = Some(body);
        self
    }

    /// Whether the request has a body still to send.
    pub fn body_pending(&self) -> bool {
        self.upload.as_ref().is_some_and(|b| b.sent() < b.len())
    }

    /// The open output file, created on first use.
    fn writer(&mut self) -> Result<Option<&mut BufWriter<File>>, String> {
        if self.writer.is_none() {
            if let Some(p) = &self.save_as {
                let f =
                    File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
                self.writer = Some(BufWriter::new(f));
            }
        }
        Ok(self.writer.as_mut())
    }

    fn write_error(&self, e: std::io::Error) -> String {
        let p = self.save_as.as_deref().unwrap_or(Path::new("?"));
        format!("cannot write {}: {e}", p.display())
    }

    /// The request headers.
    pub fn headers(&self) -> Vec<h3::Header> {
        let method: &[u8] = if self.upload.is_some() {
            b"POST"
        } else {
            b"GET"
        };
        let mut h = vec![
            h3::Header::new(b":method", method),
            h3::Header::new(b":scheme", b"https"),
            h3::Header::new(b":authority", self.url.authority.as_bytes()),
            h3::Header::new(b":path", self.url.path.as_bytes()),
            h3::Header::new(b"user-agent", b"qnc-client"),
        ];
        if let Some(b) = &self.upload {
            h.push(h3::Header::new(
                b"content-length",
                b.len().to_string().as_bytes(),
            ));
        }
        h
    }

    /// Sends as much of the upload body as quiche takes.
    pub fn pump_upload(
        &mut self,
        h3c: &mut h3::Connection,
        conn: &mut quiche::Connection,
    ) -> Result<(), String> {
        let (Some(sid), Some(body)) = (self.stream_id, self.upload.as_mut()) else {
            return Ok(());
        };
        loop {
            let (sent, len) = (body.sent(), body.len());
            if sent >= len {
                return Ok(());
            }
            let chunk = body.peek()?;
            let fin = sent + chunk.len() as u64 == len;
            match h3c.send_body(conn, sid, chunk, fin) {
                Ok(0) => return Ok(()),
                Ok(n) => body.consume(n),
                Err(h3::Error::Done) | Err(h3::Error::StreamBlocked) => return Ok(()),
                Err(e) => return Err(format!("POST {}: cannot send body: {e}", self.url.text)),
            }
        }
    }

    /// Records the response headers.
    pub fn on_headers(&mut self, list: &[h3::Header]) {
        for h in list {
            let v = std::str::from_utf8(h.value()).ok();
            if self.reply.is_some() {
                self.response_headers.push((
                    String::from_utf8_lossy(h.name()).into_owned(),
                    String::from_utf8_lossy(h.value()).into_owned(),
                ));
            }
            match h.name() {
                b":status" => self.status = v.and_then(|v| v.parse().ok()),
                b"content-length" => self.content_length = v.and_then(|v| v.parse().ok()),
                b"x-sha256" => self.receipt = v.map(str::to_string),
                n if n == CHUNK_HEADER.as_bytes() => self.delivery = Some(DelayMeter::new()),
                _ => (),
            }
        }
        if self.status.is_none() {
            self.failure = Some(Error::new(
                ErrorKind::Protocol,
                "response without a valid :status",
            ));
        }
    }

    /// Consumes a chunk of body.
    pub fn on_body(&mut self, data: &[u8]) -> Result<(), String> {
        self.bytes += data.len() as u64;
        if let Some(m) = self.delivery.as_mut() {
            m.on_body(data);
        }
        if let Some(f) = self.chunks.as_mut() {
            f(data);
        }
        if let Some(m) = self.memory.as_mut() {
            if m.len() as u64 + data.len() as u64 > MEMORY_LIMIT {
                return Err(format!(
                    "GET {}: response larger than the in-memory limit ({MEMORY_LIMIT} bytes); save it to a file",
                    self.url.text
                ));
            }
            m.extend_from_slice(data);
        }
        let res = match self.writer()? {
            Some(w) => w.write_all(data),
            None => Ok(()),
        };
        res.map_err(|e| self.write_error(e))
    }

    /// Marks the response complete, checking its length.
    pub fn on_finished(&mut self) -> Result<(), String> {
        self.done = true;
        let res = match self.writer()? {
            Some(w) => w.flush(),
            None => Ok(()),
        };
        res.map_err(|e| self.write_error(e))?;
        match self.content_length {
            Some(n) if n != self.bytes => {
                return Err(format!(
                    "GET {}: body has {} bytes, content-length said {n}",
                    self.url.text, self.bytes
                ))
            }
            _ => (),
        }
        if let Some(b) = &self.upload {
            let sent = b.digest().unwrap_or("?");
            match self.receipt.as_deref() {
                Some(r) if r == sent => (),
                Some(r) if self.status == Some(200) => {
                    return Err(format!(
                        "POST {}: the server received a different body (sha256 {r}, sent {sent})",
                        self.url.text
                    ))
                }
                _ => (),
            }
        }
        Ok(())
    }
}

/// Target paths for saving `urls` into `dir`: the URL's file name, with
/// `.1`, `.2`, … appended when two URLs map to the same name.
pub fn save_paths(dir: &Path, urls: &[Url]) -> Vec<PathBuf> {
    let mut used = std::collections::HashSet::new();
    urls.iter()
        .map(|u| {
            let base = u.file_name();
            let mut name = base.clone();
            let mut i = 1;
            while !used.insert(name.clone()) {
                name = format!("{base}.{i}");
                i += 1;
            }
            dir.join(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_names_get_suffixes() {
        let urls: Vec<Url> = ["https://h/a", "https://h/x/a", "https://h/", "https://h/a"]
            .iter()
            .map(|s| Url::parse(s).unwrap())
            .collect();
        let p = save_paths(Path::new("/o"), &urls);
        let names: Vec<_> = p.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(names, ["/o/a", "/o/a.1", "/o/index.html", "/o/a.2"]);
    }

    #[test]
    fn files_are_created_lazily() {
        let dir = std::env::temp_dir().join(format!("qnc-req-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty");
        let _ = std::fs::remove_file(&path);
        let mut r = Request::new(Url::parse("https://h/empty").unwrap(), Some(path.clone()));
        assert!(!path.exists(), "nothing before the response");
        r.on_headers(&[h3::Header::new(b":status", b"200")]);
        r.on_finished().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let mut r = Request::new(Url::parse("https://h/a").unwrap(), None);
        r.on_headers(&[
            h3::Header::new(b":status", b"200"),
            h3::Header::new(b"content-length", b"3"),
        ]);
        assert_eq!(r.status, Some(200));
        r.on_body(b"ab").unwrap();
        assert!(r.on_finished().is_err());
    }
}
