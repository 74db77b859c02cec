//! The quiche transport configuration shared by server and client.

use std::path::Path;

use crate::args::TransportArgs;

/// Connection-level flow-control window advertised at start.
const INITIAL_MAX_DATA: u64 = 16 * 1024 * 1024;
/// Per-stream flow-control window advertised at start.
const INITIAL_MAX_STREAM_DATA: u64 = 8 * 1024 * 1024;
/// Concurrent bidirectional streams the peer may open.
const MAX_STREAMS_BIDI: u64 = 1000;
/// The server's `active_connection_id_limit`. quiche keeps every path a
/// peer has used and caps them at this limit (a bound against peers that
/// rotate ports), so a client behind a NAT can be rebound this many times
/// minus one per connection; quiche's default of 2 allows one rebinding.
pub const SERVER_PATHS: u64 = 8;

/// Whether `SSLKEYLOGFILE` asks for TLS key logging.
pub fn keylog_requested() -> bool {
    std::env::var_os("SSLKEYLOGFILE").is_some_and(|v| !v.is_empty())
}

/// Applies the settings both tools use: HTTP/3 ALPN, flow-control windows,
/// idle timeout, pacing, the congestion controller, 0-RTT and key logging.
pub fn configure(config: &mut quiche::Config, t: &TransportArgs) -> Result<(), String> {
    config
        .set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .map_err(|e| format!("cannot set ALPN: {e}"))?;
    config.set_max_idle_timeout(t.idle_timeout);
    config.set_max_recv_udp_payload_size(crate::MAX_DATAGRAM_SIZE);
    config.set_max_send_udp_payload_size(crate::MAX_DATAGRAM_SIZE);
    config.set_initial_max_data(INITIAL_MAX_DATA);
    config.set_initial_max_stream_data_bidi_local(INITIAL_MAX_STREAM_DATA);
    config.set_initial_max_stream_data_bidi_remote(INITIAL_MAX_STREAM_DATA);
    config.set_initial_max_stream_data_uni(1024 * 1024);
    config.set_initial_max_streams_bidi(MAX_STREAMS_BIDI);
    config.set_initial_max_streams_uni(100);
    config.set_disable_active_migration(true);
    config.enable_pacing(true);
    // Our pacer releases a datagram up to `--pacing-slack-us` before its
    // `at` (`pacing.rs`), and quiche records it as sent at `at`, so RTT
    // samples can be that much short. `Config::set_pacing_slack(t.pacing_slack())`
    // corrects that, but hybrid's shallow-buffer tuning depends on the
    // bias: docs/hooks.md §12.
    crate::cc::apply(config, &t.cc)?;
    if t.early_data {
        config.enable_early_data();
    }
    if keylog_requested() {
        config.log_keys();
    }
    Ok(())
}

/// Server configuration: [`configure`] plus the certificate and key.
///
/// Unreadable files are reported as one line naming the file.
pub fn server_config(t: &TransportArgs, cert: &Path, key: &Path) -> Result<quiche::Config, String> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)
        .map_err(|e| format!("cannot create QUIC config: {e}"))?;
    let cert_s = readable_path(cert, "certificate")?;
    let key_s = readable_path(key, "key")?;
    config
        .load_cert_chain_from_pem_file(&cert_s)
        .map_err(|_| format!("cannot load certificate chain from {cert_s}"))?;
    config
        .load_priv_key_from_pem_file(&key_s)
        .map_err(|_| format!("cannot load private key from {key_s}"))?;
    configure(&mut config, t)?;
    config.set_active_connection_id_limit(SERVER_PATHS);
    Ok(config)
}

/// How the client checks the server's certificate.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Trust only this CA file.
    CaFile(std::path::PathBuf),
    /// Trust the system's CA store.
    System,
    /// Accept exactly the leaf certificate whose DER encoding has this
    /// SHA-256 (hex), whoever signed it (certificate pinning).
    Pinned(String),
    /// Accept any certificate.
    NoVerify,
}

/// The SHA-256 pin (lower-case hex) of a PEM certificate, as
/// [`Trust::Pinned`] and `qnc-client --pin-sha256` take it.
pub fn pin_of_pem(pem: &[u8]) -> Result<String, String> {
    let cert =
        boring::x509::X509::from_pem(pem).map_err(|_| "not a PEM certificate".to_string())?;
    let d = cert
        .digest(boring::hash::MessageDigest::sha256())
        .map_err(|e| format!("digest: {e}"))?;
    Ok(crate::hex(&d))
}

/// Checks a pin's spelling: 64 hex digits (colons allowed, case ignored).
pub fn parse_pin(s: &str) -> Result<String, String> {
    let h: String = s
        .chars()
        .filter(|c| *c != ':')
        .collect::<String>()
        .to_ascii_lowercase();
    if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(h)
    } else {
        Err(format!("'{s}' is not a SHA-256 pin (64 hex digits)"))
    }
}

/// Client configuration: [`configure`] plus certificate verification.
///
/// When the server is addressed by IP literal `ip`, the certificate must
/// carry that IP address as subject alternative name.
pub fn client_config(
    t: &TransportArgs,
    trust: &Trust,
    ip: Option<std::net::IpAddr>,
) -> Result<quiche::Config, String> {
    use boring::ssl::{SslContextBuilder, SslMethod};
    let tls_err = |e: boring::error::ErrorStack| format!("TLS setup failed: {e}");
    let mut builder = SslContextBuilder::new(SslMethod::tls()).map_err(tls_err)?;
    match trust {
        Trust::CaFile(path) => {
            let p = readable_path(path, "CA")?;
            builder
                .set_ca_file(&p)
                .map_err(|_| format!("cannot load CA certificates from {p}"))?;
        }
        Trust::System => builder.set_default_verify_paths().map_err(tls_err)?,
        Trust::Pinned(pin) => {
            // The pin replaces chain and name checks: the leaf itself is
            // what the caller trusts.
            let pin = parse_pin(pin)?;
            builder.set_cert_verify_callback(move |ctx| {
                ctx.cert()
                    .and_then(|c| c.digest(boring::hash::MessageDigest::sha256()).ok())
                    .is_some_and(|d| crate::hex(&d) == pin)
            });
        }
        Trust::NoVerify => (),
    }
    let checks_chain = matches!(trust, Trust::CaFile(_) | Trust::System);
    if let (Some(ip), true) = (ip, checks_chain) {
        // Run the normal chain verification with the IP address added to
        // the identities the leaf must match.
        builder.set_cert_verify_callback(move |ctx| {
            ctx.verify_param_mut().set_ip(ip).is_ok() && ctx.verify_cert().unwrap_or(false)
        });
    }
    let mut config = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, builder)
        .map_err(|e| format!("cannot create QUIC config: {e}"))?;
    config.verify_peer(!matches!(trust, Trust::NoVerify));
    configure(&mut config, t)?;
    Ok(config)
}

/// Checks that `path` names a readable file and returns it as a string.
fn readable_path(path: &Path, what: &str) -> Result<String, String> {
    std::fs::File::open(path)
        .map_err(|e| format!("cannot read {what} file {}: {e}", path.display()))?;
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{what} file name is not UTF-8: {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targs() -> TransportArgs {
        use clap::Parser;
        let mut a =
            crate::args::ServerArgs::parse_from(["qnc-server", "--cert", "c", "--key", "k"])
                .transport;
        a.cc = "reno".into();
        a.idle_timeout = 1000;
        a.pacing_slack_us = 0;
        a
    }

    #[test]
    fn missing_files_are_one_line_errors() {
        let e = server_config(&targs(), Path::new("/nonexistent/c.pem"), Path::new("k"))
            .err()
            .unwrap();
        assert!(
            e.starts_with("cannot read certificate file /nonexistent/c.pem"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = client_config(&targs(), &Trust::CaFile("/nonexistent/ca".into()), None)
            .err()
            .unwrap();
        assert!(e.contains("CA file"), "{e}");
    }

    #[test]
    fn client_config_without_verification() {
        assert!(client_config(&targs(), &Trust::NoVerify, None).is_ok());
        let ip = "127.0.0.1".parse().ok();
        assert!(client_config(&targs(), &Trust::NoVerify, ip).is_ok());
    }

    #[test]
    fn pins_are_64_hex_digits() {
        let h = "AB".repeat(32);
        assert_eq!(parse_pin(&h).unwrap(), "ab".repeat(32));
        let colons = vec!["ab"; 32].join(":");
        assert_eq!(parse_pin(&colons).unwrap(), "ab".repeat(32));
        assert!(parse_pin("abc").is_err());
        assert!(parse_pin(&"zz".repeat(32)).is_err());
        assert!(client_config(&targs(), &Trust::Pinned("x".into()), None).is_err());
    }
}
