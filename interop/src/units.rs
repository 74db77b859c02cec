//! Parsing of human-friendly quantities used on the command line:
//! rates (`20mbit`), durations (`20ms`), buffer sizes (`bdp`, `64p`, `100kB`)
//! and probabilities (`0.05`, `5%`). Every parser returns a one-line error.

use std::time::Duration;

/// Splits `s` into a leading number and a trailing unit (both trimmed).
fn split_num(s: &str) -> (&str, &str) {
    let s = s.trim();
    let idx = s
        .char_indices()
        .find(|&(_, c)| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // "e" could start a unit; only treat it as an exponent if a digit follows.
    let (mut num, mut unit) = s.split_at(idx);
    if let Some(pos) = num.find(['e', 'E']) {
        if !num[pos + 1..].chars().any(|c| c.is_ascii_digit()) {
            unit = &s[pos..];
            num = &s[..pos];
        }
    }
    (num.trim(), unit.trim())
}

fn parse_f64(num: &str, what: &str, orig: &str) -> Result<f64, String> {
    let v: f64 = num
        .parse()
        .map_err(|_| format!("cannot parse {what} '{orig}'"))?;
    if !v.is_finite() {
        return Err(format!("{what} '{orig}' is not finite"));
    }
    if v < 0.0 {
        return Err(format!("{what} '{orig}' is negative"));
    }
    Ok(v)
}

/// Parses a rate such as `20mbit`, `1.5Gbit`, `500kbit`, `64kbps`, `1000000`
/// (bit/s), `10MBps` (bytes/s). `unlimited`/`inf`/`none` give `None`.
/// Rates must be > 0.
pub fn parse_rate(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if matches!(
        t.to_ascii_lowercase().as_str(),
        "unlimited" | "inf" | "none"
    ) {
        return Ok(None);
    }
    let (num, unit) = split_num(t);
    let v = parse_f64(num, "rate", s)?;
    let mult = match unit {
        "" | "bit" | "bps" | "b/s" => 1.0,
        "Bps" | "B/s" => 8.0,
        _ => {
            let lower = unit.to_ascii_lowercase();
            let (prefix, rest) = lower.split_at(1);
            let p = match prefix {
                "k" => 1e3,
                "m" => 1e6,
                "g" => 1e9,
                _ => {
                    return Err(format!(
                        "unknown rate unit in '{s}' (use e.g. 20mbit, 500kbit, 1gbit)"
                    ))
                }
            };
            // Bytes only if the original unit has an upper-case B ("MBps", "MB/s").
            let bytes = unit[1..].starts_with('B');
            match rest {
                "bit" | "bps" | "b/s" | "bit/s" if !bytes => p,
                "bps" | "b/s" if bytes => p * 8.0,
                _ => {
                    return Err(format!(
                        "unknown rate unit in '{s}' (use e.g. 20mbit, 500kbit, 1gbit)"
                    ))
                }
            }
        }
    };
    let bps = v * mult;
    if bps < 1.0 {
        return Err(format!("rate '{s}' must be at least 1 bit/s"));
    }
    if bps > 1e12 {
        return Err(format!("rate '{s}' is above 1 Tbit/s"));
    }
    Ok(Some(bps.round() as u64))
}

/// Parses a duration such as `20ms`, `1.5s`, `500us`, `0`, `2m` (minutes).
/// A bare number is seconds unless `default_ms` is set, then milliseconds.
pub fn parse_duration_with(s: &str, default_ms: bool) -> Result<Duration, String> {
    let (num, unit) = split_num(s);
    let v = parse_f64(num, "duration", s)?;
    let secs = match unit {
        "" if default_ms => v / 1e3,
        "" | "s" | "sec" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "ns" => v / 1e9,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "unknown duration unit in '{s}' (use e.g. 20ms, 1.5s, 500us)"
            ))
        }
    };
    if secs > 1e9 {
        return Err(format!("duration '{s}' is too large"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a duration; a bare number is seconds. See [`parse_duration_with`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    parse_duration_with(s, false)
}

/// A buffer size as given on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferSpec {
    /// One bandwidth-delay product (rate × round-trip propagation delay).
    Bdp,
    /// A number of packets.
    Packets(u64),
    /// A number of bytes.
    Bytes(u64),
    /// No limit.
    Unlimited,
}

/// Parses `bdp`, `64p` (packets), `100kB`, `1MB`, `64KiB`, `150000` (bytes), `unlimited`.
pub fn parse_buffer(s: &str) -> Result<BufferSpec, String> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "bdp" => return Ok(BufferSpec::Bdp),
        "unlimited" | "inf" | "none" => return Ok(BufferSpec::Unlimited),
        _ => {}
    }
    let (num, unit) = split_num(t);
    let v = parse_f64(num, "buffer", s)?;
    let (bytes, mult) = match unit {
        "p" | "pkt" | "pkts" | "packets" => (false, 1.0),
        "" | "B" | "b" | "bytes" => (true, 1.0),
        "kB" | "KB" | "k" | "K" => (true, 1e3),
        "KiB" | "kiB" => (true, 1024.0),
        "MB" | "M" => (true, 1e6),
        "MiB" => (true, 1024.0 * 1024.0),
        _ => {
            return Err(format!(
                "unknown buffer unit in '{s}' (use bdp, 64p, 100kB, 1MB)"
            ))
        }
    };
    let n = v * mult;
    if n.fract() != 0.0 && !bytes {
        return Err(format!("buffer '{s}': packet count must be an integer"));
    }
    if n > 1e12 {
        return Err(format!("buffer '{s}' is too large"));
    }
    let n = n.round() as u64;
    Ok(if bytes {
        BufferSpec::Bytes(n)
    } else {
        BufferSpec::Packets(n)
    })
}

/// Parses a probability: `0.05` or `5%`; must lie in `[0, 1]`.
pub fn parse_prob(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, pct) = match t.strip_suffix('%') {
        Some(n) => (n, true),
        None => (t, false),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("cannot parse probability '{s}'"))?;
    let v = if pct { v / 100.0 } else { v };
    if !(0.0..=1.0).contains(&v) {
        // NaN also ends up here
        return Err(format!("probability '{s}' is outside [0, 1]"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("20mbit"), Ok(Some(20_000_000)));
        assert_eq!(parse_rate("20Mbit"), Ok(Some(20_000_000)));
        assert_eq!(parse_rate("1.5gbit"), Ok(Some(1_500_000_000)));
        assert_eq!(parse_rate("500kbps"), Ok(Some(500_000)));
        assert_eq!(parse_rate("10MBps"), Ok(Some(80_000_000)));
        assert_eq!(parse_rate("1000"), Ok(Some(1000)));
        assert_eq!(parse_rate("unlimited"), Ok(None));
        for bad in [
            "-5mbit",
            "NaN",
            "nanmbit",
            "0",
            "20 furlongs",
            "",
            "mbit",
            "inf mbit",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20ms"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(
            parse_duration_with("40", true),
            Ok(Duration::from_millis(40))
        );
        for bad in ["-1ms", "abc", "5 parsecs", "NaN"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn buffers() {
        assert_eq!(parse_buffer("bdp"), Ok(BufferSpec::Bdp));
        assert_eq!(parse_buffer("64p"), Ok(BufferSpec::Packets(64)));
        assert_eq!(parse_buffer("100kB"), Ok(BufferSpec::Bytes(100_000)));
        assert_eq!(parse_buffer("64KiB"), Ok(BufferSpec::Bytes(65_536)));
        assert_eq!(parse_buffer("1500"), Ok(BufferSpec::Bytes(1500)));
        assert!(parse_buffer("1.5p").is_err());
        assert!(parse_buffer("-3p").is_err());
        assert!(parse_buffer("10 bananas").is_err());
    }

    #[test]
    fn probs() {
        assert_eq!(parse_prob("0.05"), Ok(0.05));
        assert_eq!(parse_prob("5%"), Ok(0.05));
        assert_eq!(parse_prob("1"), Ok(1.0));
        for bad in ["1.01", "-0.1", "NaN", "x", "150%"] {
            assert!(parse_prob(bad).is_err(), "{bad}");
        }
    }
}
