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
    pub transport: Transport,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClientArgs {
    pub url: String,
    pub ca: Option<PathBuf>,
    pub out: Option<PathBuf>,
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
                         [--cc bbr|cubic|newreno] [--idle-timeout-ms N]
                         [--initial-window BYTES]
       quinn-peer client --url https://HOST:PORT/PATH [--ca ca.pem] [--out FILE]
                         [--cc bbr|cubic|newreno] [--timeout S]
                         [--idle-timeout-ms N] [--initial-window BYTES]";

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
                    _ => return Err(format!("server: unknown flag --{n}")),
                }
            }
            Ok(Mode::Server(s))
        }
        "client" => {
            let mut c = ClientArgs {
                url: String::new(),
                ca: None,
                out: None,
                timeout: Duration::from_secs(300),
                transport: Transport::default(),
            };
            for (n, v) in &flags {
                if transport_flag(&mut c.transport, n, v)? {
                    continue;
                }
                match n.as_str() {
                    "url" => c.url = v.clone(),
                    "ca" => c.ca = Some(v.into()),
                    "out" => c.out = Some(v.into()),
                    "timeout" => c.timeout = seconds(n, v)?,
                    _ => return Err(format!("client: unknown flag --{n}")),
                }
            }
            if c.url.is_empty() {
                return Err("client needs --url".into());
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
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(s.addr.port(), 0);
        assert_eq!(s.cert, PathBuf::from("/c/cert.pem"));
        assert_eq!(s.key, PathBuf::from("/c/key.pem"));
        assert_eq!(s.transport.cc, Cc::Cubic);
        assert_eq!(s.transport.idle_timeout, Duration::from_secs(5));
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
        assert_eq!(c.transport.cc, Cc::Bbr);
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
            &["peer"],
            &[],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
        assert_eq!(p(&["server", "--help"]), Ok(Mode::Help));
    }
}
