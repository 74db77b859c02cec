//! Command-line definitions of the three tools.
//!
//! The binaries only call `parse()` on these structs and hand the result to
//! [`crate::server::run`] / [`crate::client::run`] / [`crate::certs::generate`].

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser};

/// Default idle timeout in milliseconds.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 30_000;

/// Default pacing release quantum in microseconds.
pub const DEFAULT_PACING_SLACK_US: u64 = 1_000;

/// Transport flags shared by `qnc-server` and `qnc-client`.
#[derive(Args, Debug, Clone)]
pub struct TransportArgs {
    /// Congestion controller: hybrid (ours, the default), hybrid-yield,
    /// ctcp, vegas, vegas-nc, aimd (ours) or reno, cubic, bbr2 (quiche's).
    #[arg(long, value_name = "NAME", default_value = crate::cc::DEFAULT,
          value_parser = crate::cc::validate)]
    pub cc: String,

    /// QUIC idle timeout in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_IDLE_TIMEOUT_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,

    /// Release paced datagrams up to this many microseconds before their
    /// pacing time (0 = never early). quiche's pacer does not make up for
    /// late wake-ups, so a small release quantum keeps paced senders at
    /// their rate on a loaded machine (1 ms is about two packets at
    /// 20 Mbit/s).
    #[arg(long, value_name = "US", default_value_t = DEFAULT_PACING_SLACK_US,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub pacing_slack_us: u64,

    /// Network coding: `auto` offers it (plain QUIC if the peer does not
    /// take it up), `off` never uses it.
    #[arg(long, value_name = "auto|off", default_value = "auto",
          value_parser = ["auto", "off"])]
    pub nc: String,

    /// Redundancy policy of the coded direction we send: adaptive,
    /// fixed:R (R >= 1), ctcp[:N], von, fnc.
    #[arg(long = "nc-policy", value_name = "POLICY", default_value = "adaptive",
          value_parser = quic_nc::coding::config::parse_policy)]
    pub nc_policy: quic_nc::coding::PolicyKind,

    /// Coding mode we send in: systematic (data in clear plus repair) or
    /// full (every packet a coded combination; falls back to systematic if
    /// the peer does not support it).
    #[arg(long = "nc-mode", value_name = "MODE", default_value = "systematic",
          value_parser = quic_nc::coding::config::parse_mode)]
    pub nc_mode: quic_nc::coding::Mode,

    /// Largest coding window, in symbols, we accept (1..=4096): it bounds
    /// the direction towards us (the peer's sets the one we send in) and
    /// our decoder's memory. Default: 4096 for the client, 512 for the
    /// server (a hostile client cannot make it hold more than about 12 MB
    /// per connection; downloads use the client's window).
    #[arg(long = "nc-window", value_name = "N",
          value_parser = quic_nc::coding::config::parse_window)]
    pub nc_window: Option<usize>,

    /// Allow 0-RTT: a client sends its requests in early data when it
    /// resumes a session (see --session-file); a server accepts them.
    /// Early data can be replayed by an attacker, so a server should only
    /// enable it when its requests are idempotent (ours serve GETs; a POST
    /// in 0-RTT is answered normally).
    #[arg(long)]
    pub early_data: bool,
}

impl ClientArgs {
    /// The upload requested, if any.
    pub fn upload_spec(&self) -> Option<crate::upload::UploadSpec> {
        match (&self.upload, self.upload_bytes) {
            (Some(f), _) => Some(crate::upload::UploadSpec::File(f.clone())),
            (None, Some(n)) => Some(crate::upload::UploadSpec::Pattern(n)),
            (None, None) => None,
        }
    }
}

impl Default for TransportArgs {
    /// The command line's defaults (one definition: clap's).
    fn default() -> TransportArgs {
        use clap::{Command, FromArgMatches};
        let m = TransportArgs::augment_args(Command::new("defaults"))
            .try_get_matches_from(["defaults"])
            .expect("the defaults parse");
        TransportArgs::from_arg_matches(&m).expect("the defaults parse")
    }
}

impl TransportArgs {
    /// The pacing slack as a duration.
    pub fn pacing_slack(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.pacing_slack_us)
    }

    /// The coding configuration of `role`, or `None` with `--nc off`.
    pub fn coding(&self, role: crate::Role) -> Option<quic_nc::CodingConfig> {
        use quic_nc::coding::config::{DEFAULT_SERVER_WINDOW, DEFAULT_WINDOW};
        let window = self.nc_window.unwrap_or(match role {
            crate::Role::Server => DEFAULT_SERVER_WINDOW,
            crate::Role::Client => DEFAULT_WINDOW,
        });
        (self.nc != "off").then(|| quic_nc::CodingConfig {
            policy: self.nc_policy,
            mode: self.nc_mode,
            max_window: window,
            ..quic_nc::CodingConfig::default()
        })
    }
}

/// `qnc-certs`: mint a test CA and a localhost leaf certificate.
#[derive(Parser, Debug)]
#[command(
    name = "qnc-certs",
    version,
    about = "Write ca.pem, ca.key, cert.pem and key.pem for local HTTP/3 tests"
)]
pub struct CertsArgs {
    /// Directory to write the files into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Certificates in cert.pem: the leaf and N-1 intermediate CAs (RSA-2048)
    /// between it and the root in ca.pem, e.g. 9 for the interop runner's
    /// amplificationlimit case.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u8).range(1..=crate::certs::MAX_CHAIN as i64))]
    pub chain: u8,
}

/// `qnc-server`: an HTTP/3 file server.
#[derive(Parser, Debug)]
#[command(
    name = "qnc-server",
    version,
    about = "HTTP/3 server: serves files under --root, /bytes/<n>, /stamped/<n> and /stream/<rate>/<duration>"
)]
pub struct ServerArgs {
    /// UDP address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4433")]
    pub listen: SocketAddr,

    /// Directory whose files are served.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,

    /// PEM certificate chain of the server.
    #[arg(long, value_name = "FILE")]
    pub cert: PathBuf,

    /// PEM (PKCS#8) private key of the server.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,

    /// Print one JSON line of statistics per closed connection on stdout.
    #[arg(long)]
    pub stats_json: bool,

    /// Validate client addresses with a Retry packet before accepting a
    /// connection (RFC 9000 §8.1.2); costs the client one round trip.
    #[arg(long)]
    pub retry: bool,

    /// Transport options.
    #[command(flatten)]
    pub transport: TransportArgs,
}

/// `qnc-client`: fetch URLs over HTTP/3.
#[derive(Parser, Debug)]
#[command(
    name = "qnc-client",
    version,
    about = "HTTP/3 client: fetches the URLs as parallel requests"
)]
pub struct ClientArgs {
    /// PEM file of the certificate authority to trust.
    #[arg(long, value_name = "FILE", conflicts_with = "no_verify")]
    pub ca: Option<PathBuf>,

    /// Do not verify the server certificate.
    #[arg(long)]
    pub no_verify: bool,

    /// Accept only the server certificate with this SHA-256 (64 hex digits
    /// of its DER encoding; `qnc-certs` prints it), whoever signed it.
    #[arg(long, value_name = "HEX", conflicts_with_all = ["ca", "no_verify"],
          value_parser = crate::transport::parse_pin)]
    pub pin_sha256: Option<String>,

    /// Save response bodies into this directory (otherwise only counted).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Print one JSON line per connection instead of the summary.
    #[arg(long)]
    pub json: bool,

    /// Give up after this many seconds overall.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub timeout: Option<f64>,

    /// POST the contents of FILE to every URL; the server answers with the
    /// body's length and SHA-256, which the client checks.
    #[arg(long, value_name = "FILE", conflicts_with = "upload_bytes")]
    pub upload: Option<PathBuf>,

    /// POST N bytes of the synthetic pattern (as served by /bytes/N) to
    /// every URL, checked like --upload.
    #[arg(long, value_name = "N")]
    pub upload_bytes: Option<u64>,

    /// Write the per-chunk delivery delays of a /stream/ or /stamped/ response to FILE
    /// (CSV: chunk, delay_ms; the first 2^20 chunks, with a warning if there were more).
    #[arg(long, value_name = "FILE")]
    pub delay_log: Option<PathBuf>,

    /// Resume the TLS session stored in FILE, if it exists, and store the
    /// session ticket of this connection there (for the next run).
    #[arg(long, value_name = "FILE")]
    pub session_file: Option<PathBuf>,

    /// Start the handshake's loss timers from the RTT that FILE holds for
    /// the server (if measured within the hour) instead of 333 ms, and
    /// store this connection's smoothed RTT there.
    #[arg(long, value_name = "FILE")]
    pub rtt_cache: Option<PathBuf>,

    /// Transport options.
    #[command(flatten)]
    pub transport: TransportArgs,

    /// https:// URLs to fetch (all with the same host:port).
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
}

/// Parses a positive, finite number of seconds.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// Address to bind a client socket to for talking to `peer`.
pub fn wildcard_for(peer: &SocketAddr) -> SocketAddr {
    match peer {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("valid literal"),
        SocketAddr::V6(_) => "[::]:0".parse().expect("valid literal"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_defaults_and_flags() {
        let a = ServerArgs::try_parse_from([
            "qnc-server",
            "--listen",
            "127.0.0.1:0",
            "--root",
            "/tmp",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--cc",
            "bbr2",
            "--idle-timeout",
            "500",
            "--stats-json",
            "--pacing-slack-us",
            "250",
        ])
        .unwrap();
        assert_eq!(
            a.transport.pacing_slack(),
            std::time::Duration::from_micros(250)
        );
        assert_eq!(a.listen.port(), 0);
        assert_eq!(a.transport.cc, "bbr2");
        assert_eq!(a.transport.idle_timeout, 500);
        assert!(a.stats_json);

        let d = ServerArgs::try_parse_from(["qnc-server", "--cert", "c", "--key", "k"]).unwrap();
        assert_eq!(d.transport.cc, "hybrid");
        assert_eq!(d.transport.nc, "auto");
        let window = |t: &TransportArgs, r| t.coding(r).unwrap().max_window;
        assert_eq!(window(&d.transport, crate::Role::Server), 512);
        assert_eq!(window(&d.transport, crate::Role::Client), 4096);
        let w = ServerArgs::try_parse_from([
            "qnc-server",
            "--cert",
            "c",
            "--key",
            "k",
            "--nc-window",
            "64",
        ])
        .unwrap();
        assert_eq!(window(&w.transport, crate::Role::Server), 64);
        assert_eq!(d.transport.idle_timeout, DEFAULT_IDLE_TIMEOUT_MS);
        assert!(!d.stats_json);
        assert_eq!(d.transport.pacing_slack_us, DEFAULT_PACING_SLACK_US);
    }

    #[test]
    fn server_rejects_unknown_cc_and_bad_address() {
        assert!(ServerArgs::try_parse_from([
            "qnc-server",
            "--cert",
            "c",
            "--key",
            "k",
            "--cc",
            "nope",
        ])
        .is_err());
        assert!(ServerArgs::try_parse_from([
            "qnc-server",
            "--cert",
            "c",
            "--key",
            "k",
            "--listen",
            "nowhere",
        ])
        .is_err());
        assert!(ServerArgs::try_parse_from([
            "qnc-server",
            "--cert",
            "c",
            "--key",
            "k",
            "--idle-timeout",
            "0",
        ])
        .is_err());
    }

    #[test]
    fn client_flags() {
        let a = ClientArgs::try_parse_from([
            "qnc-client",
            "--ca",
            "ca.pem",
            "--out",
            "d",
            "--json",
            "--timeout",
            "2.5",
            "https://localhost:1/a",
            "https://localhost:1/b",
        ])
        .unwrap();
        assert_eq!(a.urls.len(), 2);
        assert_eq!(a.timeout, Some(2.5));
        assert!(a.json);
        assert_eq!(a.transport.cc, "hybrid");
        assert!(a.session_file.is_none() && !a.transport.early_data);
        let r = ClientArgs::try_parse_from([
            "qnc-client",
            "--session-file",
            "s.bin",
            "--early-data",
            "https://[::1]:1/a",
        ])
        .unwrap();
        assert_eq!(r.session_file, Some(PathBuf::from("s.bin")));
        assert!(r.transport.early_data);
        let s = ServerArgs::try_parse_from([
            "qnc-server",
            "--cert",
            "c",
            "--key",
            "k",
            "--retry",
            "--early-data",
            "--listen",
            "[::1]:0",
        ])
        .unwrap();
        assert!(s.retry && s.transport.early_data && s.listen.is_ipv6());
    }

    #[test]
    fn upload_flags() {
        let a = ClientArgs::try_parse_from(["qnc-client", "--upload-bytes", "5", "https://h/"])
            .unwrap();
        assert_eq!(a.upload_spec(), Some(crate::upload::UploadSpec::Pattern(5)));
        let a = ClientArgs::try_parse_from(["qnc-client", "--upload", "f", "https://h/"]).unwrap();
        assert_eq!(
            a.upload_spec(),
            Some(crate::upload::UploadSpec::File("f".into()))
        );
        assert!(ClientArgs::try_parse_from([
            "qnc-client",
            "--upload",
            "f",
            "--upload-bytes",
            "1",
            "https://h/"
        ])
        .is_err());
    }

    #[test]
    fn client_needs_a_url_and_exclusive_trust_flags() {
        assert!(ClientArgs::try_parse_from(["qnc-client"]).is_err());
        assert!(ClientArgs::try_parse_from([
            "qnc-client",
            "--ca",
            "x",
            "--no-verify",
            "https://h/",
        ])
        .is_err());
        assert!(
            ClientArgs::try_parse_from(["qnc-client", "--timeout", "-1", "https://h/",]).is_err()
        );
    }

    #[test]
    fn secs_parser() {
        assert_eq!(parse_secs("3").unwrap(), 3.0);
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("NaN").is_err());
        assert!(parse_secs("inf").is_err());
    }
}
