//! Maps a request path to what the server answers with.
//!
//! Files are only served from under the root directory: any `..` segment
//! is refused, and a path that resolves (through symbolic links) outside
//! the root is treated as missing.

use std::path::{Path, PathBuf};

/// Largest `/bytes/<n>` or `/stamped/<n>` body the server generates (10 GB).
pub const MAX_SYNTHETIC_BYTES: u64 = 10_000_000_000;

/// What to answer for one request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A regular file under the root, with its length.
    File(PathBuf, u64),
    /// `n` bytes of the synthetic pattern.
    Bytes(u64),
    /// `/stream/<rate>/<duration>`: stamped chunks at a constant rate, or
    /// `/stamped/<n>`: `n` bytes of stamped chunks as fast as the transport
    /// takes them ([`crate::stream`]).
    Stream(crate::stream::Schedule),
    /// Nothing there (404).
    NotFound,
    /// Malformed or forbidden path (400), with a short reason.
    BadRequest(&'static str),
}

/// Resolves `raw` (the `:path` header, possibly with a query) under `root`.
pub fn resolve(root: &Path, raw: &str) -> Route {
    let path = raw.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/') {
        return Route::BadRequest("path must start with '/'");
    }
    let decoded = match percent_decode(path) {
        Some(d) => d,
        None => return Route::BadRequest("bad percent-encoding"),
    };
    if decoded.contains(['\0', '\\']) {
        return Route::BadRequest("forbidden character in path");
    }
    let segments: Vec<&str> = decoded
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segments.contains(&"..") {
        return Route::BadRequest("'..' is not allowed in paths");
    }
    if let ["stream", rate, duration] = segments.as_slice() {
        return match (
            crate::stream::parse_rate(rate),
            crate::stream::parse_duration(duration),
        ) {
            (Some(r), Some(d)) => Route::Stream(crate::stream::Schedule::new(r, d)),
            _ => Route::BadRequest(
                "/stream/<rate>/<duration> needs a rate like 8mbit and a duration like 20s",
            ),
        };
    }
    if let ["stamped", n] = segments.as_slice() {
        return match parse_count(n) {
            Some(n) if n <= MAX_SYNTHETIC_BYTES => Route::Stream(crate::stream::Schedule::bulk(n)),
            Some(_) => Route::BadRequest("/stamped/<n> is capped at 10 GB"),
            None => Route::BadRequest("/stamped/<n> needs a decimal count"),
        };
    }
    if let ["bytes", n] = segments.as_slice() {
        return match parse_count(n) {
            Some(n) if n <= MAX_SYNTHETIC_BYTES => Route::Bytes(n),
            Some(_) => Route::BadRequest("/bytes/<n> is capped at 10 GB"),
            None => Route::BadRequest("/bytes/<n> needs a decimal count"),
        };
    }
    let mut file = root.to_path_buf();
    for s in &segments {
        file.push(s);
    }
    if file.is_dir() {
        file.push("index.html");
    }
    match (file.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(real_root)) if real.starts_with(&real_root) => {
            match std::fs::metadata(&real) {
                Ok(m) if m.is_file() => Route::File(real, m.len()),
                _ => Route::NotFound,
            }
        }
        _ => Route::NotFound,
    }
}

fn parse_count(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Decodes `%XX` escapes; `None` on a malformed escape or non-UTF-8 result.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn root() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "qnc-route-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a.txt"), b"hello").unwrap();
        fs::write(dir.join("sub/index.html"), b"<p>").unwrap();
        dir
    }

    #[test]
    fn serves_files_and_indexes() {
        let r = root();
        match resolve(&r, "/a.txt?x=1") {
            Route::File(p, 5) => assert!(p.ends_with("a.txt")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(resolve(&r, "/sub/"), Route::File(_, 3)));
        assert!(matches!(resolve(&r, "/./a%2etxt"), Route::File(_, 5)));
        assert_eq!(resolve(&r, "/missing"), Route::NotFound);
        assert_eq!(resolve(&r, "/"), Route::NotFound);
    }

    #[test]
    fn refuses_traversal() {
        let r = root();
        for p in [
            "/../etc/passwd",
            "/sub/../a.txt",
            "/%2e%2e/x",
            "/a\\b",
            "/x%00",
        ] {
            assert!(matches!(resolve(&r, p), Route::BadRequest(_)), "{p}");
        }
        assert!(matches!(resolve(&r, "relative"), Route::BadRequest(_)));
        assert!(matches!(resolve(&r, "/%zz"), Route::BadRequest(_)));
        assert!(matches!(resolve(&r, "/%4"), Route::BadRequest(_)));
    }

    #[test]
    fn streams() {
        let r = root();
        match resolve(&r, "/stream/8mbit/20s") {
            Route::Stream(s) => assert_eq!(s.chunks, 16_667),
            other => panic!("{other:?}"),
        }
        for p in ["/stream/8mbit", "/stream/x/20s", "/stream/8mbit/20"] {
            assert!(!matches!(resolve(&r, p), Route::Stream(_)), "{p}");
        }
        assert_eq!(
            resolve(&r, "/stamped/3000"),
            Route::Stream(crate::stream::Schedule::bulk(3000))
        );
        for p in ["/stamped/10000000001", "/stamped/x", "/stamped/-1"] {
            assert!(matches!(resolve(&r, p), Route::BadRequest(_)), "{p}");
        }
        for p in ["/stamped/", "/stamped/1/2"] {
            assert!(!matches!(resolve(&r, p), Route::Stream(_)), "{p}");
        }
    }

    #[test]
    fn synthetic_bytes() {
        let r = root();
        assert_eq!(resolve(&r, "/bytes/0"), Route::Bytes(0));
        assert_eq!(resolve(&r, "/bytes/1000000"), Route::Bytes(1_000_000));
        assert_eq!(
            resolve(&r, "/bytes/10000000000"),
            Route::Bytes(MAX_SYNTHETIC_BYTES)
        );
        for p in [
            "/bytes/10000000001",
            "/bytes/-1",
            "/bytes/1e3",
            "/bytes/",
            "/bytes/99999999999999999999999",
        ] {
            assert!(!matches!(resolve(&r, p), Route::Bytes(_)), "{p}");
        }
    }
}
