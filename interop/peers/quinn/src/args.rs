//! Command-line parsing (no external parser: a handful of flags).
//!
//! Flags are accepted as `--name VALUE`, `--name=VALUE`, and with a single
//! dash (`-name VALUE`) like the quic-go peer's Go flags.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Congestion controllers quinn provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cc {
    /// quinn's BBR (`quinn::congestion::BbrConfig`, BBRv1-style).
    Bbr,
    /// quinn's CUBIC.
    Cubic,
    /// quinn's NewReno.
    NewReno,
}

impl Cc {
    pub fn parse(s: &str) -> Result<Cc, String> {
        match s {
            "bbr" => Ok(Cc::Bbr),
            "cubic" => Ok(Cc::Cubic),
            "newreno" | "reno" => Ok(Cc::NewReno),
            _ => Err(format!("unknown --cc '{s}' (bbr, cubic, newreno)")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Cc::Bbr => "bbr",
            Cc::Cubic => "cubic",
            Cc::NewReno => "newreno",
        }
    }
}

/// Settings shared by both roles.
#[derive(Clone, Debug, PartialEq)]
pub struct Transport {
    pub cc: Cc,
    pub idle_timeout: Duration,
    /// Overrides the controller's initial window (bytes); quinn's default
    /// when `None` (BBR: 200 × 1200 bytes, CUBIC/NewReno: 12000 bytes).
    pub initial_window: Option<u64>,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            cc: Cc::Bbr,
            idle_timeout: Duration::from_secs(30),
            initial_window: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerArgs {
    pub addr: SocketAddr,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Directory whose files `GET /<path>` serves (besides `/bytes/N`).
    pub root: Option<PathBuf>,
    /// Answer every connection attempt without a Retry token with a Retry.
    pub retry: bool,
    /// Accept 0-RTT data (and serve requests in 0.5-RTT).
    pub early_data: bool,
    pub transport: Transport,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClientArgs {
    /// The URLs, in order (`--url` repeated); one connection for all of
    /// them unless `multiconnect` / `resume` says otherwise.
    pub urls: Vec<String>,
    pub ca: Option<PathBuf>,
    /// `--insecure`: accept any server certificate (handshake signature
    /// still checked).
    pub insecure: bool,
    /// Body of the (only) URL.
    pub out: Option<PathBuf>,
    /// Bodies saved as DIR/<last path segment of the URL>.
    pub outdir: Option<PathBuf>,
    /// One new connection per URL, one after the other.
    pub multiconnect: bool,
    /// The first URL on a first connection, the others on a second one
    /// that resumes its TLS session.
    pub resume: bool,
    /// Like `resume`, with the second connection's requests in 0-RTT.
    pub zero_rtt: bool,
    /// Initiate a TLS key update once the first response head arrived.
    pub key_update: bool,
    pub timeout: Duration,
    pub transport: Transport,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Server(ServerArgs),
    Client(ClientArgs),
    Help,
}

pub const USAGE: &str = "\
usage: quinn-peer server --addr IP:PORT --cert cert.pem --key key.pem
                         [--root DIR] [--retry] [--early-data]
                         [--cc bbr|cubic|newreno] [--idle-timeout-ms N]
                         [--initial-window BYTES]
       quinn-peer client --url https://HOST:PORT/PATH [--url ...] [--ca ca.pem | --insecure]
                         [--out FILE | --outdir DIR]
                         [--multiconnect | --resume | --0rtt] [--key-update]
                         [--cc bbr|cubic|newreno] [--timeout S]
                         [--idle-timeout-ms N] [--initial-window BYTES]

server: GET /bytes/N answers N pattern bytes; with --root, GET /PATH answers
  the file DIR/PATH. --retry sends a Retry to every new connection,
  --early-data accepts 0-RTT. SSLKEYLOGFILE is honoured by both roles.
client: all URLs on one connection (in parallel); --multiconnect: one
  connection per URL; --resume: the first URL on a first connection, the
  others on a second one resuming its TLS session; --0rtt: the same with the
  second connection's requests in 0-RTT; --key-update: the client updates
  its keys during the transfer; --insecure: accept any server certificate
  (the handshake signature is still checked; for test chains rustls
  refuses). One JSON line per URL.";

/// Flags without a value (`--retry`, or `--retry=false`).
const SWITCHES: &[&str] = &[
    "retry",
    "early-data",
    "multiconnect",
    "resume",
    "0rtt",
    "key-update",
    "insecure",
];

/// Splits `args` (without the program name) into (flag, value) pairs.
fn pairs(args: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let Some(flag) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            return Err(format!("unexpected argument '{a}'"));
        };
        if flag == "h" || flag == "help" {
            return Ok(vec![("help".into(), String::new())]);
        }
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None if SWITCHES.contains(&flag) => (flag.to_string(), "true".to_string()),
            None => {
                let v = it.next().ok_or_else(|| format!("--{flag} needs a value"))?;
                (flag.to_string(), v.clone())
            }
        };
        out.push((name, value));
    }
    Ok(out)
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("--{flag}: '{v}' is not a valid number"))
}

fn switch(flag: &str, v: &str) -> Result<bool, String> {
    match v {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(format!("--{flag}: '{v}' is not true or false")),
    }
}

/// `S` or `Ss` (the quic-go peer's Go duration for whole seconds), seconds.
fn seconds(flag: &str, v: &str) -> Result<Duration, String> {
    let s: f64 = number(flag, v.strip_suffix('s').unwrap_or(v))?;
    if !(s > 0.0 && s.is_finite()) {
        return Err(format!("--{flag}: must be positive"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Applies a flag common to both roles; `Ok(false)` if it is not one.
fn transport_flag(t: &mut Transport, name: &str, v: &str) -> Result<bool, String> {
    match name {
        "cc" => t.cc = Cc::parse(v)?,
        "idle-timeout-ms" => {
            let ms: u64 = number(name, v)?;
            if ms == 0 {
                return Err("--idle-timeout-ms must be positive".into());
            }
            t.idle_timeout = Duration::from_millis(ms);
        }
        "initial-window" => {
            let w: u64 = number(name, v)?;
            if w < 2400 {
                return Err("--initial-window must be at least 2400 bytes".into());
            }
            t.initial_window = Some(w);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

pub fn parse(args: &[String]) -> Result<Mode, String> {
    let Some((mode, rest)) = args.split_first() else {
        return Err("missing mode (server|client)".into());
    };
    let flags = pairs(rest)?;
    if mode == "help" || mode == "-h" || mode == "--help" || flags.iter().any(|(n, _)| n == "help")
    {
        return Ok(Mode::Help);
    }
    match mode.as_str() {
        "server" => {
            let mut s = ServerArgs {
                addr: "127.0.0.1:4433".parse().unwrap(),
                cert: "cert.pem".into(),
                key: "key.pem".into(),
                root: None,
                retry: false,
                early_data: false,
                transport: Transport::default(),
            };
            for (n, v) in &flags {
                if transport_flag(&mut s.transport, n, v)? {
                    continue;
                }
                match n.as_str() {
                    "addr" | "listen" => {
                        s.addr = v
                            .parse()
                            .map_err(|_| format!("--{n}: '{v}' is not IP:PORT"))?
                    }
                    "cert" => s.cert = v.into(),
                    "key" => s.key = v.into(),
                    "root" | "www" => s.root = Some(v.into()),
                    "retry" => s.retry = switch(n, v)?,
                    "early-data" | "0rtt" => s.early_data = switch(n, v)?,
                    _ => return Err(format!("server: unknown flag --{n}")),
                }
            }
            Ok(Mode::Server(s))
        }
        "client" => {
            let mut c = ClientArgs {
                urls: Vec::new(),
                ca: None,
                insecure: false,
                out: None,
                outdir: None,
                multiconnect: false,
                resume: false,
                zero_rtt: false,
                key_update: false,
                timeout: Duration::from_secs(300),
                transport: Transport::default(),
            };
            for (n, v) in &flags {
                if transport_flag(&mut c.transport, n, v)? {
                    continue;
                }
                match n.as_str() {
                    "url" => c.urls.push(v.clone()),
                    "ca" => c.ca = Some(v.into()),
                    "insecure" => c.insecure = switch(n, v)?,
                    "out" => c.out = Some(v.into()),
                    "outdir" => c.outdir = Some(v.into()),
                    "multiconnect" => c.multiconnect = switch(n, v)?,
                    "resume" => c.resume = switch(n, v)?,
                    "0rtt" | "early-data" => c.zero_rtt = switch(n, v)?,
                    "key-update" => c.key_update = switch(n, v)?,
                    "timeout" => c.timeout = seconds(n, v)?,
                    _ => return Err(format!("client: unknown flag --{n}")),
                }
            }
            if c.insecure && c.ca.is_some() {
                return Err("client: --ca and --insecure exclude each other".into());
            }
            if c.urls.is_empty() || c.urls.iter().any(|u| u.is_empty()) {
                return Err("client needs --url".into());
            }
            if c.out.is_some() && (c.outdir.is_some() || c.urls.len() > 1) {
                return Err("--out takes the body of a single --url (use --outdir)".into());
            }
            // 0-RTT needs a resumed second connection.
            c.resume |= c.zero_rtt;
            if c.multiconnect && c.resume {
                return Err("--multiconnect excludes --resume / --0rtt".into());
            }
            Ok(Mode::Client(c))
        }
        m => Err(format!("unknown mode '{m}' (server|client)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Mode, String> {
        parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn server_flags() {
        let Mode::Server(s) = p(&[
            "server",
            "--addr",
            "127.0.0.1:0",
            "--cert=/c/cert.pem",
            "-key",
            "/c/key.pem",
            "--cc",
            "cubic",
            "--idle-timeout-ms",
            "5000",
            "--retry",
            "--root",
            "/www",
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(s.addr.port(), 0);
        assert_eq!(s.cert, PathBuf::from("/c/cert.pem"));
        assert_eq!(s.key, PathBuf::from("/c/key.pem"));
        assert_eq!(s.transport.cc, Cc::Cubic);
        assert_eq!(s.transport.idle_timeout, Duration::from_secs(5));
        assert!(s.retry && !s.early_data);
        assert_eq!(s.root, Some(PathBuf::from("/www")));
        let Mode::Server(d) = p(&["server"]).unwrap() else {
            panic!()
        };
        assert_eq!(d.transport, Transport::default());
        assert_eq!(d.transport.cc, Cc::Bbr);
    }

    #[test]
    fn client_flags() {
        let Mode::Client(c) = p(&[
            "client",
            "--url",
            "https://127.0.0.1:1/bytes/5",
            "--ca",
            "ca.pem",
            "--timeout",
            "30s",
            "--out",
            "/tmp/x",
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.ca, Some(PathBuf::from("ca.pem")));
        assert_eq!(c.out, Some(PathBuf::from("/tmp/x")));
        assert_eq!(c.urls, ["https://127.0.0.1:1/bytes/5"]);
        assert_eq!(c.transport.cc, Cc::Bbr);
        assert!(!c.multiconnect && !c.resume && !c.zero_rtt && !c.key_update);
        assert!(!c.insecure);
        let Mode::Client(c) = p(&["client", "--url", "u", "--insecure"]).unwrap() else {
            panic!()
        };
        assert!(c.insecure && c.ca.is_none());

        let Mode::Client(c) = p(&[
            "client",
            "--url",
            "https://h/a",
            "--0rtt",
            "--url",
            "https://h/b",
            "--outdir",
            "/d",
            "--key-update=false",
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(c.urls, ["https://h/a", "https://h/b"]);
        assert!(c.zero_rtt && c.resume && !c.key_update);
        assert_eq!(c.outdir, Some(PathBuf::from("/d")));
    }

    #[test]
    fn errors() {
        for bad in [
            &["client"][..],
            &["client", "--url"],
            &["server", "--cc", "vegas"],
            &["server", "--addr", "nope"],
            &["server", "--bogus", "1"],
            &["server", "stray"],
            &["client", "--url", "u", "--timeout", "0"],
            &["client", "--url", "u", "--url", "v", "--out", "f"],
            &["client", "--url", "u", "--multiconnect", "--resume"],
            &["client", "--url", "u", "--ca", "ca.pem", "--insecure"],
            &["client", "--url", "u", "--resume=maybe"],
            &["peer"],
            &[],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
        assert_eq!(p(&["server", "--help"]), Ok(Mode::Help));
    }
}
