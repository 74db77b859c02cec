//! Each server's last smoothed RTT, kept in a small file so that the next
//! connection to it starts its loss timers from a measured RTT instead of
//! RFC 9002's 333 ms default (§6.2.2 allows a previous connection's RTT
//! over the same network). Browsers keep such per-server estimates too.
//!
//! With the default, a lost first Initial is resent after 1 s, then 3, 7
//! and 15 s; on a 30 ms path with a cached RTT, after 0.09, 0.27, 0.63, 1.35
//! s and so on: a lossy handshake completes in far less time, and within
//! the handshake time limits of servers (5 s for quic-go, 10 s for s2n-quic
//! and ngtcp2).
//!
//! The file has one line per server: `authority rtt_us saved_unix_s`.
//! Entries older than [`MAX_AGE`] are ignored (the network may have
//! changed), the file keeps at most [`MAX_ENTRIES`] servers, and malformed
//! lines are skipped: the cache only ever tunes a timer.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a stored RTT is trusted.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// Servers kept in one file (the most recently saved).
pub const MAX_ENTRIES: usize = 256;
/// A stored RTT is clamped to this range before use.
pub const RTT_RANGE: (Duration, Duration) = (Duration::from_millis(1), Duration::from_secs(2));

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    authority: String,
    rtt: Duration,
    saved: u64,
}

fn parse(text: &str) -> Vec<Entry> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let authority = f.next()?.to_string();
            let rtt = Duration::from_micros(f.next()?.parse().ok()?);
            let saved = f.next()?.parse().ok()?;
            f.next().is_none().then_some(Entry {
                authority,
                rtt,
                saved,
            })
        })
        .collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The RTT stored for `authority` at `path`, if there is a fresh one.
pub fn lookup(path: &Path, authority: &str) -> Option<Duration> {
    lookup_at(path, authority, unix_now())
}

fn lookup_at(path: &Path, authority: &str, now: u64) -> Option<Duration> {
    let text = std::fs::read_to_string(path).ok()?;
    parse(&text)
        .into_iter()
        .rev()
        .find(|e| e.authority == authority)
        .filter(|e| e.saved <= now && now - e.saved <= MAX_AGE.as_secs())
        .map(|e| e.rtt.clamp(RTT_RANGE.0, RTT_RANGE.1))
}

/// Records `rtt` for `authority` at `path` (written to a temporary file
/// and renamed, so a concurrent reader sees the old or the new file).
pub fn store(path: &Path, authority: &str, rtt: Duration) -> Result<(), String> {
    store_at(path, authority, rtt, unix_now())
}

fn store_at(path: &Path, authority: &str, rtt: Duration, now: u64) -> Result<(), String> {
    if authority.is_empty() || authority.contains(char::is_whitespace) {
        return Err(format!("cannot cache the RTT of '{authority}'"));
    }
    let mut entries = std::fs::read_to_string(path)
        .map(|t| parse(&t))
        .unwrap_or_default();
    entries.retain(|e| e.authority != authority);
    entries.sort_by_key(|e| e.saved);
    let excess = (entries.len() + 1).saturating_sub(MAX_ENTRIES);
    entries.drain(..excess);
    entries.push(Entry {
        authority: authority.to_string(),
        rtt,
        saved: now,
    });
    let text: String = entries
        .iter()
        .map(|e| format!("{} {} {}\n", e.authority, e.rtt.as_micros(), e.saved))
        .collect();
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write RTT cache {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("qnc-rtt-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("rtt")
    }

    #[test]
    fn a_stored_rtt_is_found_per_server_until_it_is_stale() {
        let p = file("roundtrip");
        let ms = Duration::from_millis;
        assert_eq!(lookup_at(&p, "a:443", 1000), None, "no file yet");
        store_at(&p, "a:443", ms(31), 1000).unwrap();
        store_at(&p, "b:443", ms(120), 1000).unwrap();
        store_at(&p, "a:443", ms(35), 1010).unwrap();
        assert_eq!(lookup_at(&p, "a:443", 1020), Some(ms(35)));
        assert_eq!(lookup_at(&p, "b:443", 1020), Some(ms(120)));
        assert_eq!(lookup_at(&p, "c:443", 1020), None);
        let stale = 1010 + MAX_AGE.as_secs() + 1;
        assert_eq!(lookup_at(&p, "a:443", stale), None);
        assert_eq!(lookup_at(&p, "a:443", 999), None, "saved in the future");
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2, "one line per server: {text}");
    }

    #[test]
    fn stored_rtts_are_clamped_and_malformed_lines_skipped() {
        let p = file("clamp");
        std::fs::write(
            &p,
            "a:1 0 100\nb:1 99000000 100\njunk\nc:1 x 100\nd:1 5000 100 extra\ne:1 7000 100\n",
        )
        .unwrap();
        assert_eq!(lookup_at(&p, "a:1", 100), Some(RTT_RANGE.0));
        assert_eq!(lookup_at(&p, "b:1", 100), Some(RTT_RANGE.1));
        assert_eq!(lookup_at(&p, "c:1", 100), None);
        assert_eq!(lookup_at(&p, "d:1", 100), None);
        assert_eq!(lookup_at(&p, "e:1", 100), Some(Duration::from_millis(7)));
        assert!(store_at(&p, "has space", Duration::from_millis(1), 100).is_err());
    }

    #[test]
    fn the_file_keeps_the_most_recent_servers() {
        let p = file("bound");
        for i in 0..MAX_ENTRIES as u64 + 10 {
            store_at(&p, &format!("h{i}:443"), Duration::from_millis(20), i).unwrap();
        }
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), MAX_ENTRIES);
        let now = MAX_ENTRIES as u64 + 10;
        assert_eq!(lookup_at(&p, "h0:443", now), None, "oldest dropped");
        assert!(lookup_at(&p, &format!("h{}:443", now - 1), now).is_some());
    }
}
