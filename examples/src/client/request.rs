//! One request of the client: its URL, response status, and where the
//! body goes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use quiche::h3::{self, NameValue};

use crate::stream::{DelayMeter, CHUNK_HEADER};
use crate::upload::Body;
use crate::url::Url;

/// State of one request.
#[derive(Debug)]
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
    /// Whether the response is complete.
    pub done: bool,
    /// Set when the stream was reset or the body failed.
    pub failure: Option<String>,
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

impl Request {
    /// A request for `url`; the body is saved to `save_as` if given.
    pub fn new(url: Url, save_as: Option<PathBuf>) -> Request {
        Request {
            url,
            stream_id: None,
            status: None,
            content_length: None,
            bytes: 0,
            done: false,
            failure: None,
            upload: None,
            receipt: None,
            delivery: None,
            save_as,
            writer: None,
        }
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
            match h.name() {
                b":status" => self.status = v.and_then(|v| v.parse().ok()),
                b"content-length" => self.content_length = v.and_then(|v| v.parse().ok()),
                b"x-sha256" => self.receipt = v.map(str::to_string),
                n if n == CHUNK_HEADER.as_bytes() => self.delivery = Some(DelayMeter::new()),
                _ => (),
            }
        }
        if self.status.is_none() {
            self.failure = Some("response without a valid :status".into());
        }
    }

    /// Consumes a chunk of body.
    pub fn on_body(&mut self, data: &[u8]) -> Result<(), String> {
        self.bytes += data.len() as u64;
        if let Some(m) = self.delivery.as_mut() {
            m.on_body(data);
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
