//! Minimal parsing of the `https://` URLs the client accepts.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// A parsed `https://host[:port]/path?query` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The original text.
    pub text: String,
    /// Host name or IP literal, without IPv6 brackets.
    pub host: String,
    /// UDP port (443 when absent).
    pub port: u16,
    /// `host[:port]` as written, used for the `:authority` header.
    pub authority: String,
    /// Path plus query, always starting with `/`.
    pub path: String,
}

impl Url {
    /// Parses `text`; only the `https` scheme is accepted.
    pub fn parse(text: &str) -> Result<Url, String> {
        let bad = |why: &str| format!("invalid URL '{text}': {why}");
        let rest = text
            .strip_prefix("https://")
            .ok_or_else(|| bad("only https:// URLs are supported"))?;
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let path = path.split('#').next().unwrap_or("");
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        if authority.is_empty() {
            return Err(bad("missing host"));
        }
        if authority.contains('@') {
            return Err(bad("user information is not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6.find(']').ok_or_else(|| bad("unclosed '['"))?;
            let host = &v6[..end];
            host.parse::<std::net::Ipv6Addr>()
                .map_err(|_| bad("bad IPv6 address"))?;
            let after = &v6[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => parse_port(p).ok_or_else(|| bad("bad port"))?,
                None if after.is_empty() => 443,
                None => return Err(bad("junk after ']'")),
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), parse_port(p).ok_or_else(|| bad("bad port"))?),
                None => (authority.to_string(), 443),
            }
        };
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(bad("bad host"));
        }
        Ok(Url {
            text: text.to_string(),
            host,
            port,
            authority: authority.to_string(),
            path,
        })
    }

    /// The host as an IP address when it is an IP literal.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// Resolves the host to one socket address (IPv4 preferred, matching
    /// how most test servers listen on 127.0.0.1).
    pub fn resolve(&self) -> Result<SocketAddr, String> {
        if let Some(ip) = self.ip() {
            return Ok(SocketAddr::new(ip, self.port));
        }
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
            .collect();
        addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or_else(|| addrs.first())
            .copied()
            .ok_or_else(|| format!("cannot resolve {}: no address", self.host))
    }

    /// File name to save the body under: the last path segment, or
    /// `index.html` when the path ends in `/`. Never contains `/` and is
    /// never `.` or `..`.
    pub fn file_name(&self) -> String {
        let path = self.path.split('?').next().unwrap_or("");
        let last = path.rsplit('/').next().unwrap_or("");
        match last {
            "" | "." | ".." => "index.html".to_string(),
            s => s.replace('\\', "_"),
        }
    }
}

fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_port_path() {
        let u = Url::parse("https://localhost:4433/a/b.bin?x=1#frag").unwrap();
        assert_eq!(u.host, "localhost");
        assert_eq!(u.port, 4433);
        assert_eq!(u.authority, "localhost:4433");
        assert_eq!(u.path, "/a/b.bin?x=1");
        assert_eq!(u.file_name(), "b.bin");
    }

    #[test]
    fn defaults_and_ipv6() {
        let u = Url::parse("https://example.org").unwrap();
        assert_eq!((u.port, u.path.as_str()), (443, "/"));
        assert_eq!(u.file_name(), "index.html");
        let v6 = Url::parse("https://[::1]:9/x").unwrap();
        assert_eq!(v6.host, "::1");
        assert_eq!(v6.resolve().unwrap(), "[::1]:9".parse().unwrap());
        assert_eq!(Url::parse("https://[::1]/").unwrap().port, 443);
        let q = Url::parse("https://h?x").unwrap();
        assert_eq!(q.path, "/?x");
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "http://h/",
            "https://",
            "https://h:x/",
            "https://h:99999/",
            "https://[::1/",
            "https://[zz]:1/",
            "https://u@h/",
            "h/x",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(
            Url::parse("https://h/d/..").unwrap().file_name(),
            "index.html"
        );
        assert_eq!(
            Url::parse("https://h/d/").unwrap().file_name(),
            "index.html"
        );
        assert_eq!(Url::parse("https://h/bytes/10").unwrap().file_name(), "10");
    }
}
