//! What the server and the client share: the QUIC transport settings, TLS
//! with rustls' ring provider, the `/bytes/N` pattern, the `/stamped/N`
//! chunks and JSON output.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::args::{Cc, Transport};

/// The application protocol.
pub const ALPN: &[u8] = b"h3";

/// UDP payload size of our own stacks (quiche's `max_send_udp_payload_size`
/// in qnc-server/qnc-client), used here as quinn's fixed MTU.
pub const UDP_PAYLOAD: u16 = 1350;

/// Per-stream receive window (bytes): far above the BDP of the emulated
/// links (20 Mbit/s x 40 ms = 100 kB), like the quic-go peer's 16 MB.
pub const STREAM_WINDOW: u32 = 16 << 20;
/// Connection receive window (bytes), like the quic-go peer's 24 MB.
pub const CONN_WINDOW: u32 = 24 << 20;
/// Bytes of application writes quinn may hold per connection (quinn's
/// default is 10 MB; a larger one never limits the sender here).
pub const SEND_WINDOW: u64 = 32 << 20;

/// Largest `/bytes/N` body (10 GB), as in qnc-server.
pub const MAX_BYTES: u64 = 10_000_000_000;

/// Socket buffer size asked for (the kernel caps it at net.core.rmem_max /
/// wmem_max): bursts of a fast sender on loopback overflow the default
/// ~200 kB receive buffer long before the receiver falls behind for real.
const SOCKET_BUFFER: usize = 8 << 20;

/// A UDP socket bound to `addr` with enlarged buffers (best effort), for
/// `quinn::Endpoint::new`.
pub fn udp_socket(addr: SocketAddr) -> Result<std::net::UdpSocket, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| format!("UDP socket: {e}"))?;
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.bind(&addr.into()).map_err(|e| format!("{addr}: {e}"))?;
    Ok(s.into())
}

/// A quinn endpoint on `addr` (a server when `server` is given).
pub fn endpoint(
    addr: SocketAddr,
    server: Option<quinn::ServerConfig>,
) -> Result<quinn::Endpoint, String> {
    let socket = udp_socket(addr)?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        server,
        socket,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(|e| format!("{addr}: {e}"))
}

/// quinn's transport settings for both roles.
pub fn transport_config(t: &Transport) -> Result<TransportConfig, String> {
    let mut c = TransportConfig::default();
    let idle = IdleTimeout::try_from(t.idle_timeout)
        .map_err(|_| format!("idle timeout {:?} is too large", t.idle_timeout))?;
    c.max_idle_timeout(Some(idle))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONN_WINDOW))
        .send_window(SEND_WINDOW)
        // Fixed 1350-byte datagrams, as our stacks send: no PMTU discovery,
        // and min_mtu = initial_mtu so that black-hole detection (which
        // quinn runs even without discovery) never shrinks them to 1200
        // after a burst of random losses.
        .initial_mtu(UDP_PAYLOAD)
        .min_mtu(UDP_PAYLOAD)
        .mtu_discovery_config(None);
    match t.cc {
        Cc::Bbr => {
            let mut b = BbrConfig::default();
            if let Some(w) = t.initial_window {
                b.initial_window(w);
            }
            c.congestion_controller_factory(Arc::new(b));
        }
        Cc::Cubic => {
            let mut b = CubicConfig::default();
            if let Some(w) = t.initial_window {
                b.initial_window(w);
            }
            c.congestion_controller_factory(Arc::new(b));
        }
        Cc::NewReno => {
            let mut b = NewRenoConfig::default();
            if let Some(w) = t.initial_window {
                b.initial_window(w);
            }
            c.congestion_controller_factory(Arc::new(b));
        }
    }
    Ok(c)
}

/// rustls with the ring provider (never aws-lc-rs).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A quinn server config for the leaf certificate chain `cert` and key `key`
/// (accepting 0-RTT when `early_data`). The server always issues session
/// tickets (rustls' default: 2 per connection, kept in memory).
pub fn server_config(
    cert: &Path,
    key: &Path,
    t: &Transport,
    early_data: bool,
) -> Result<quinn::ServerConfig, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("certificate/key: {e}"))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    // QUIC allows only 0 or u32::MAX (RFC 9001, 4.6.1).
    tls.max_early_data_size = if early_data { u32::MAX } else { 0 };
    // Writes the TLS secrets to $SSLKEYLOGFILE when it is set.
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    let crypto =
        quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    sc.transport_config(Arc::new(transport_config(t)?));
    Ok(sc)
}

/// Where trust anchors come from when the client gets no `--ca`.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The client's TLS session cache (rustls' in-memory one), counting the
/// session tickets it received and handed out for resumption.
#[derive(Debug)]
pub struct Tickets {
    cache: rustls::client::ClientSessionMemoryCache,
    received: AtomicUsize,
    used: AtomicUsize,
}

impl Tickets {
    fn new() -> Tickets {
        Tickets {
            cache: rustls::client::ClientSessionMemoryCache::new(64),
            received: AtomicUsize::new(0),
            used: AtomicUsize::new(0),
        }
    }

    /// Session tickets received so far.
    pub fn received(&self) -> usize {
        self.received.load(Ordering::Relaxed)
    }

    /// Tickets offered to servers for resumption so far.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

impl rustls::client::ClientSessionStore for Tickets {
    fn set_kx_hint(&self, name: ServerName<'static>, group: rustls::NamedGroup) {
        self.cache.set_kx_hint(name, group)
    }

    fn kx_hint(&self, name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.cache.kx_hint(name)
    }

    fn set_tls12_session(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.cache.set_tls12_session(name, value)
    }

    fn tls12_session(
        &self,
        name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.cache.tls12_session(name)
    }

    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.cache.remove_tls12_session(name)
    }

    fn insert_tls13_ticket(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.received.fetch_add(1, Ordering::Relaxed);
        self.cache.insert_tls13_ticket(name, value)
    }

    fn take_tls13_ticket(
        &self,
        name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let t = self.cache.take_tls13_ticket(name);
        if t.is_some() {
            self.used.fetch_add(1, Ordering::Relaxed);
        }
        t
    }
}

/// How the client checks the server's certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Chains to the CA certificates in this file (None: the system's
    /// bundle), verified by rustls (webpki).
    Roots(Option<std::path::PathBuf>),
    /// `--insecure`: any certificate is accepted, but the server must
    /// still prove it holds the key of the one it sent (the handshake
    /// signature is verified). For test setups only, like the interop
    /// runner's, whose quinn image verifies nothing: webpki refuses chains
    /// with more than six intermediate CAs (`MaximumPathDepthExceeded`)
    /// and the runner's amplificationlimit chain has eight.
    SignaturesOnly,
}

/// The `--insecure` verifier: no chain or name check, handshake
/// signatures checked with the provider's algorithms.
#[derive(Debug)]
struct SignaturesOnly(Arc<CryptoProvider>);

/// rustls' signature check for one TLS version.
type SignatureCheck = fn(
    &[u8],
    &CertificateDer<'_>,
    &rustls::DigitallySignedStruct,
    &rustls::crypto::WebPkiSupportedAlgorithms,
) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error>;

impl SignaturesOnly {
    /// Checks the handshake signature with `f` and the provider's algorithms.
    fn check(
        &self,
        f: SignatureCheck,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        f(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
}

impl rustls::client::danger::ServerCertVerifier for SignaturesOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.check(rustls::crypto::verify_tls12_signature, message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.check(rustls::crypto::verify_tls13_signature, message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A quinn client config trusting what `trust` says, sending 0-RTT data when it can if `early_data`, and
/// its session cache (shared by every connection made with the config).
pub fn client_config(
    trust: &Trust,
    t: &Transport,
    early_data: bool,
) -> Result<(quinn::ClientConfig, Arc<Tickets>), String> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?;
    let mut tls = match trust {
        Trust::Roots(ca) => {
            let path = ca.as_deref().unwrap_or(Path::new(SYSTEM_ROOTS));
            let mut roots = rustls::RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let (added, _ignored) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("{}: no usable CA certificate", path.display()));
            }
            builder.with_root_certificates(roots)
        }
        Trust::SignaturesOnly => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SignaturesOnly(provider()))),
    }
    .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let tickets = Arc::new(Tickets::new());
    tls.resumption = rustls::client::Resumption::store(tickets.clone());
    tls.enable_early_data = early_data;
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut cc = quinn::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(Arc::new(transport_config(t)?));
    Ok((cc, tickets))
}

/// Length of one chunk of the pattern handed to the stream.
const CHUNK: usize = 64 * 1024;

/// The `/bytes/N` body (byte i is `b'a' + i % 26`) as cheap slices of one
/// shared buffer.
pub struct Pattern {
    buf: Bytes,
}

impl Pattern {
    pub fn new() -> Pattern {
        let v: Vec<u8> = (0..CHUNK + 26).map(|i| b'a' + (i % 26) as u8).collect();
        Pattern {
            buf: Bytes::from(v),
        }
    }

    /// The body bytes [off, off + len) for len <= 64 KiB.
    pub fn slice(&self, off: u64, len: usize) -> Bytes {
        debug_assert!(len <= CHUNK);
        let s = (off % 26) as usize;
        self.buf.slice(s..s + len)
    }

    /// Chunks covering a body of `n` bytes, in order.
    pub fn chunks(&self, n: u64) -> impl Iterator<Item = Bytes> + '_ {
        (0..n.div_ceil(CHUNK as u64)).map(move |k| {
            let off = k * CHUNK as u64;
            self.slice(off, (n - off).min(CHUNK as u64) as usize)
        })
    }
}

/// Bytes of one `/stamped/N` chunk (qnc-server's `stream::CHUNK`).
pub const STAMP_CHUNK: usize = 1200;

/// Nanoseconds of the host's monotonic clock (`CLOCK_MONOTONIC`), the clock
/// of qnc-server's stamps and of the client that reads them.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer and
    // CLOCK_MONOTONIC is always available on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Chunk `seq` of a `/stamped/N` body, in qnc-server's format: the stamp
/// `stamp_ns` (8 bytes, big endian), the sequence number (4 bytes, big
/// endian), then letters; `len` bytes of it (the last chunk of a body is
/// shorter unless N is a multiple of [`STAMP_CHUNK`]).
pub fn stamped_chunk(seq: u64, stamp_ns: u64, len: usize) -> Bytes {
    let mut c = vec![0u8; STAMP_CHUNK];
    c[..8].copy_from_slice(&stamp_ns.to_be_bytes());
    c[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
    for (i, b) in c[12..].iter_mut().enumerate() {
        *b = b'a' + ((seq as usize + i) % 26) as u8;
    }
    c.truncate(len);
    Bytes::from(c)
}

/// What to answer for a request path.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// N bytes of the pattern.
    Bytes(u64),
    /// N bytes of stamped chunks (`/stamped/N`).
    Stamped(u64),
    /// 400 with a reason.
    BadRequest(&'static str),
    /// 404.
    NotFound,
}

/// Maps a request path to a route, like qnc-server does for `/bytes/N`
/// (the server has no document root: any other path is 404).
pub fn route(path: &str) -> Route {
    let path = path.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/') {
        return Route::BadRequest("path must start with '/'");
    }
    let segs: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segs.contains(&"..") {
        return Route::BadRequest("'..' is not allowed in paths");
    }
    // A decimal count: Ok(n), Err(true) above 10 GB, Err(false) malformed.
    let count = |n: &str| -> Result<u64, bool> {
        if n.is_empty() || n.len() > 20 || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(false);
        }
        n.parse::<u64>()
            .ok()
            .filter(|&n| n <= MAX_BYTES)
            .ok_or(true)
    };
    match segs.as_slice() {
        ["bytes", n] => match count(n) {
            Ok(n) => Route::Bytes(n),
            Err(true) => Route::BadRequest("/bytes/<n> is capped at 10 GB"),
            Err(false) => Route::BadRequest("/bytes/<n> needs a decimal count"),
        },
        ["stamped", n] => match count(n) {
            Ok(n) => Route::Stamped(n),
            Err(true) => Route::BadRequest("/stamped/<n> is capped at 10 GB"),
            Err(false) => Route::BadRequest("/stamped/<n> needs a decimal count"),
        },
        _ => Route::NotFound,
    }
}

/// The file under `root` that `path` names (after the same clean-up as
/// [`route`]), if it is a regular file.
pub fn file_under(root: &Path, path: &str) -> Option<PathBuf> {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let segs: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segs.is_empty() || segs.iter().any(|s| *s == ".." || s.contains('\\')) {
        return None;
    }
    let p = segs.iter().fold(root.to_path_buf(), |p, s| p.join(s));
    p.is_file().then_some(p)
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_matches_definition() {
        let p = Pattern::new();
        for n in [0u64, 1, 25, 26, 65_536, 65_537, 200_003] {
            let body: Vec<u8> = p.chunks(n).flat_map(|c| c.to_vec()).collect();
            assert_eq!(body.len() as u64, n);
            assert!(body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == b'a' + (i % 26) as u8));
        }
    }

    #[test]
    fn stamped_chunks_have_qnc_servers_format() {
        let c = stamped_chunk(7, 0x0102_0304_0506_0708, STAMP_CHUNK);
        assert_eq!(c.len(), STAMP_CHUNK);
        assert_eq!(stamped_chunk(7, 0, 5).len(), 5);
        assert_eq!(&c[..12], &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 7]);
        assert_eq!(c[12], b'a' + 7);
        let (a, b) = (monotonic_ns(), monotonic_ns());
        assert!(a > 0 && b >= a);
    }

    #[test]
    fn routes() {
        assert_eq!(route("/bytes/0"), Route::Bytes(0));
        assert_eq!(route("/bytes/1000000"), Route::Bytes(1_000_000));
        assert_eq!(route("/bytes/10000000000"), Route::Bytes(MAX_BYTES));
        assert_eq!(route("//bytes/./7?x=1"), Route::Bytes(7));
        for bad in [
            "/bytes/10000000001",
            "/bytes/-1",
            "/bytes/1e3",
            "/bytes/99999999999999999999999",
            "/bytes/../x",
            "bytes/1",
        ] {
            assert!(matches!(route(bad), Route::BadRequest(_)), "{bad}");
        }
        assert_eq!(route("/bytes/"), Route::NotFound);
        assert_eq!(route("/stamped/2401"), Route::Stamped(2401));
        for bad in ["/stamped/10000000001", "/stamped/x"] {
            assert!(matches!(route(bad), Route::BadRequest(_)), "{bad}");
        }
        assert_eq!(route("/"), Route::NotFound);
        assert_eq!(route("/index.html"), Route::NotFound);
    }

    #[test]
    fn files_under_root() {
        let dir = std::env::temp_dir().join(format!("quinn-peer-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("f"), b"x").unwrap();
        std::fs::write(dir.join("sub/g"), b"y").unwrap();
        assert_eq!(file_under(&dir, "/f"), Some(dir.join("f")));
        assert_eq!(file_under(&dir, "//sub/./g?x"), Some(dir.join("sub/g")));
        assert_eq!(file_under(&dir, "/sub"), None);
        assert_eq!(file_under(&dir, "/"), None);
        assert_eq!(file_under(&dir, "/sub/../f"), None);
        assert_eq!(file_under(&dir, "/nope"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_strings() {
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    }

    #[test]
    fn transport_settings_build() {
        for cc in [Cc::Bbr, Cc::Cubic, Cc::NewReno] {
            let t = Transport {
                cc,
                initial_window: Some(13_500),
                ..Transport::default()
            };
            transport_config(&t).unwrap();
        }
    }
}
