//! Request bodies for `qnc-client --upload FILE` / `--upload-bytes N`: read
//! in chunks (a file) or generated (the `/bytes/<n>` pattern), with their
//! SHA-256 computed as they go, so the client can check the server's
//! receipt (`x-sha256`).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::pattern::Pattern;

/// Bytes handed to quiche per call.
pub const CHUNK: usize = 64 * 1024;

/// What to upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadSpec {
    /// The contents of a file.
    File(PathBuf),
    /// `n` bytes of the synthetic pattern (byte i = `'a' + i % 26`).
    Pattern(u64),
    /// Bytes held in memory (library callers).
    Bytes(std::sync::Arc<[u8]>),
}

impl UploadSpec {
    /// Opens the body (the file's length is read now).
    pub fn open(&self) -> Result<Body, String> {
        let (src, len) = match self {
            UploadSpec::File(p) => {
                let f = File::open(p)
                    .map_err(|e| format!("cannot read upload file {}: {e}", p.display()))?;
                let len = f
                    .metadata()
                    .map_err(|e| format!("cannot read upload file {}: {e}", p.display()))?
                    .len();
                (Source::File(f, p.clone()), len)
            }
            UploadSpec::Pattern(n) => (Source::Pattern(Pattern::new(CHUNK)), *n),
            UploadSpec::Bytes(b) => (Source::Memory(b.clone()), b.len() as u64),
        };
        let mut b = Body {
            src,
            len,
            taken: 0,
            buf: Vec::new(),
            start: 0,
            sha: Some(boring::sha::Sha256::new()),
            digest: None,
        };
        if len == 0 {
            b.consume(0);
        }
        Ok(b)
    }
}

enum Source {
    File(File, PathBuf),
    Pattern(Pattern),
    Memory(std::sync::Arc<[u8]>),
}

/// A request body being sent.
pub struct Body {
    src: Source,
    len: u64,
    /// Bytes handed over so far.
    taken: u64,
    buf: Vec<u8>,
    start: usize,
    sha: Option<boring::sha::Sha256>,
    digest: Option<String>,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("len", &self.len)
            .field("taken", &self.taken)
            .finish()
    }
}

impl Body {
    /// Total length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the body is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes handed over so far.
    pub fn sent(&self) -> u64 {
        self.taken
    }

    /// The next bytes to send (empty once everything was taken).
    pub fn peek(&mut self) -> Result<&[u8], String> {
        if self.start == self.buf.len() && self.taken < self.len {
            let want = (self.len - self.taken).min(CHUNK as u64) as usize;
            match &mut self.src {
                Source::Pattern(p) => {
                    self.buf.clear();
                    self.buf.extend_from_slice(p.slice(self.taken, want as u64));
                }
                Source::Memory(m) => {
                    let at = self.taken as usize;
                    self.buf.clear();
                    self.buf.extend_from_slice(&m[at..at + want]);
                }
                Source::File(f, path) => {
                    self.buf.resize(want, 0);
                    let mut got = 0;
                    while got < want {
                        match f.read(&mut self.buf[got..]) {
                            Ok(0) => break,
                            Ok(n) => got += n,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => {
                                return Err(format!(
                                    "cannot read {}: {e}",
                                    Path::new(path).display()
                                ))
                            }
                        }
                    }
                    if got < want {
                        return Err(format!("{} shrank while uploading", path.display()));
                    }
                }
            }
            self.start = 0;
        }
        Ok(&self.buf[self.start..])
    }

    /// `n` bytes of what [`Body::peek`] returned were sent.
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.buf.len() - self.start);
        if let Some(sha) = self.sha.as_mut() {
            sha.update(&self.buf[self.start..self.start + n]);
        }
        self.start += n;
        self.taken += n as u64;
        if self.taken == self.len && self.digest.is_none() {
            if let Some(sha) = self.sha.take() {
                self.digest = Some(crate::hex(&sha.finish()));
            }
        }
    }

    /// SHA-256 of the body (hex), once all of it was sent.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(b: &mut Body, step: usize) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let chunk = b.peek().unwrap();
            if chunk.is_empty() {
                return out;
            }
            let n = step.min(chunk.len());
            out.extend_from_slice(&chunk[..n]);
            b.consume(n);
        }
    }

    #[test]
    fn pattern_and_file_bodies_with_their_digest() {
        let mut b = UploadSpec::Pattern(200_000).open().unwrap();
        let data = drain(&mut b, 7_000);
        assert_eq!(data.len(), 200_000);
        assert!(data
            .iter()
            .enumerate()
            .all(|(i, &x)| x == crate::pattern::byte_at(i as u64)));
        let want = {
            let mut h = boring::sha::Sha256::new();
            h.update(&data);
            crate::hex(&h.finish())
        };
        assert_eq!(b.digest(), Some(want.as_str()));

        let path = std::env::temp_dir().join(format!("qnc-upload-{}", std::process::id()));
        std::fs::write(&path, &data[..70_000]).unwrap();
        let mut f = UploadSpec::File(path.clone()).open().unwrap();
        assert_eq!(f.len(), 70_000);
        assert_eq!(drain(&mut f, 70_000), &data[..70_000]);
        let _ = std::fs::remove_file(&path);
        let mut m = UploadSpec::Bytes(data[..100_000].into()).open().unwrap();
        assert_eq!(drain(&mut m, 9_999), &data[..100_000]);
        assert!(m.digest().is_some());
        assert!(UploadSpec::File("/nonexistent/x".into())
            .open()
            .unwrap_err()
            .contains("/nonexistent/x"));
    }
}
