//! What a connection's coding layer is configured with, and the parsers of
//! the tools' `--nc*` flags.

use std::time::Duration;

use nc_frames::{Mode, PolicyKind};

/// Every value `--nc-policy` accepts (`fixed:R` takes the factor R).
pub const POLICY_NAMES: &[&str] = &["adaptive", "fixed:R", "ctcp", "von", "fnc"];

/// Every value `--nc-mode` accepts.
pub const MODE_NAMES: &[&str] = &["systematic", "full"];

/// The coding layer's configuration for one connection.
#[derive(Clone, Debug, PartialEq)]
pub struct CodingConfig {
    /// Redundancy policy of our sending direction.
    pub policy: PolicyKind,
    /// Mode we send in, when the peer supports it (systematic otherwise).
    pub mode: Mode,
    /// Largest coding window we accept, in symbols: what we offer in
    /// `nc_parameters`, the window of the direction we receive (the peer's
    /// offer sets the one we send in).
    pub max_window: usize,
    /// Largest source symbol we accept and offer, in bytes.
    pub max_symbol_size: usize,
    /// A symbol still undecoded this long after it was sent is given up and
    /// its data retransmitted (systematic mode; in fully coded mode the
    /// data is only in the code, so nothing is given up).
    pub abandon_after: Duration,
    /// Bound of the decoding work a peer can make us do, in symbols
    /// combined per second ([`nc_frames::WorkBudget`]).
    pub work_per_second: f64,
}

/// Default receive window (what a client offers, and the library's
/// default): the wire's largest, 4,096 symbols. The window bounds the
/// source data in flight towards us (symbols sent beyond our seen index),
/// so it must not be what limits a long path: 512 symbols capped a 20
/// Mbit/s link at 300 ms RTT to half of what uncoded QUIC got
/// (docs/results.md §7.8). The decoder's memory follows what arrives, but
/// a hostile sender can make it hold up to
/// `nc_frames::codec::Decoder::memory_bound` (about 330 MB at 4,096
/// symbols of 1500 bytes: coefficient rows grow with the window, so the
/// bound is quadratic in it; about 12 MB at 512); a client accepts that
/// from the server it chose to download from.
pub const DEFAULT_WINDOW: usize = 4096;

/// Default receive window of a server (`qnc-server`): 512 symbols, which
/// bounds what an untrusted client can make its decoder hold to about
/// 12 MB per connection. It limits only the client's uploads; downloads
/// use the window the client offers.
pub const DEFAULT_SERVER_WINDOW: usize = 512;

/// Default largest symbol: a 1500-byte datagram's worth.
pub const DEFAULT_SYMBOL_SIZE: usize = 1500;

impl Default for CodingConfig {
    fn default() -> Self {
        CodingConfig {
            policy: PolicyKind::ADAPTIVE,
            mode: Mode::Systematic,
            max_window: DEFAULT_WINDOW,
            max_symbol_size: DEFAULT_SYMBOL_SIZE,
            abandon_after: Duration::from_secs(10),
            work_per_second: (1u64 << 22) as f64,
        }
    }
}

/// Parses a `--nc-policy` value: `adaptive`, `fixed:R` (R >= 1), `ctcp`,
/// `ctcp:N` (block size N), `von`, `fnc`.
pub fn parse_policy(s: &str) -> Result<PolicyKind, String> {
    let bad = || {
        format!(
            "unknown coding policy '{s}' (expected one of: {})",
            POLICY_NAMES.join(", ")
        )
    };
    let (name, arg) = match s.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (s, None),
    };
    Ok(match (name, arg) {
        ("adaptive", None) => PolicyKind::ADAPTIVE,
        ("adaptive", Some(b)) => match b.parse::<f64>() {
            Ok(beta) if beta.is_finite() && (0.0..=10.0).contains(&beta) => {
                PolicyKind::Adaptive { beta }
            }
            _ => return Err(format!("adaptive:{b}: beta must be a number in 0..=10")),
        },
        ("fixed", Some(r)) => match r.parse::<f64>() {
            Ok(r) if r.is_finite() && (1.0..=4.0).contains(&r) => PolicyKind::FixedR(r),
            _ => return Err(format!("fixed:{r}: R must be a number in 1..=4")),
        },
        ("ctcp", None) => PolicyKind::CtcpBlock { n: 32 },
        ("ctcp", Some(n)) => match n.parse::<u32>() {
            Ok(n) if (1..=4096).contains(&n) => PolicyKind::CtcpBlock { n },
            _ => return Err(format!("ctcp:{n}: N must be an integer in 1..=4096")),
        },
        ("von", None) => PolicyKind::Von,
        ("fnc", None) => PolicyKind::Fnc,
        _ => return Err(bad()),
    })
}

/// The `--nc-policy` spelling of `p` (the inverse of [`parse_policy`]).
pub fn policy_name(p: PolicyKind) -> String {
    match p {
        p if p == PolicyKind::ADAPTIVE => "adaptive".into(),
        PolicyKind::Adaptive { beta } => format!("adaptive:{beta}"),
        PolicyKind::FixedR(r) => format!("fixed:{r}"),
        PolicyKind::CtcpBlock { n: 32 } => "ctcp".into(),
        PolicyKind::CtcpBlock { n } => format!("ctcp:{n}"),
        PolicyKind::Von => "von".into(),
        PolicyKind::Fnc => "fnc".into(),
    }
}

/// Parses a `--nc-mode` value.
pub fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "systematic" => Ok(Mode::Systematic),
        "full" => Ok(Mode::FullyCoded),
        _ => Err(format!(
            "unknown coding mode '{s}' (expected one of: {})",
            MODE_NAMES.join(", ")
        )),
    }
}

/// The `--nc-mode` spelling of `m`.
pub fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Systematic => "systematic",
        Mode::FullyCoded => "full",
    }
}

/// Parses a `--nc-window` value (1..=4096 symbols, the wire's limit).
pub fn parse_window(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(w) if (1..=nc_frames::frames::MAX_WINDOW_LIMIT as usize).contains(&w) => Ok(w),
        _ => Err(format!("'{s}' is not a window of 1..=4096 symbols")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print_back() {
        for s in [
            "adaptive",
            "adaptive:1.5",
            "fixed:1.25",
            "ctcp",
            "ctcp:16",
            "von",
            "fnc",
        ] {
            let p = parse_policy(s).unwrap();
            assert_eq!(policy_name(p), s);
        }
        for bad in [
            "fixed",
            "fixed:0.5",
            "fixed:x",
            "ctcp:0",
            "vonn",
            "adaptive:-1",
            "",
        ] {
            let e = parse_policy(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(parse_policy("nope").unwrap_err().contains("fixed:R"));
    }

    #[test]
    fn modes_and_windows() {
        assert_eq!(parse_mode("full").unwrap(), Mode::FullyCoded);
        assert_eq!(mode_name(parse_mode("systematic").unwrap()), "systematic");
        assert!(parse_mode("coded").is_err());
        assert_eq!(parse_window("64").unwrap(), 64);
        assert!(parse_window("0").is_err());
        assert!(parse_window("4097").is_err());
    }
}
