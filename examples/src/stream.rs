//! The streaming resource `/stream/<rate>/<duration>`: a body written at a
//! constant application rate in fixed-size chunks, each stamped with the
//! time it was due, and the client's measure of per-chunk delivery delay (the
//! time the application reads a chunk minus its stamp).
//!
//! `/stamped/<n>` is the bulk form: `n` bytes of chunks (the last one is
//! shorter unless `n` is a multiple of [`CHUNK`]; a shorter last chunk is
//! not measured) handed over as fast as the congestion window lets them
//! leave (the server's `bulk_budget`), each chunk stamped when the
//! transport accepts its first byte, so the delay measured is the bulk
//! transfer's in-order delivery delay from the moment the window had room:
//! the path (queueing included) and the receiver's wait for missing data
//! (head-of-line blocking). The wait for window space is not in it, so a
//! sender with a smaller window looks better on it: read it beside the
//! goodput.
//!
//! A chunk is [`CHUNK`] bytes: the time it was due (its place in the
//! constant-rate schedule, which is when a live source would have produced
//! it; the time a chunk waits in the server because the transport cannot
//! take it is part of its delay) in nanoseconds of the host's
//! monotonic clock (`CLOCK_MONOTONIC`, 8 bytes big endian), the chunk's
//! sequence number (4 bytes big endian), then filler. Server and client
//! must share the clock, i.e. run on one host (loopback, the emulator,
//! network namespaces), which is how the benchmarks run.

use std::time::Duration;

/// Bytes per chunk: about one packet's payload.
pub const CHUNK: usize = 1200;

/// Response header that announces the chunk size.
pub const CHUNK_HEADER: &str = "x-chunk-size";

/// Largest stream duration served.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// Largest rate served, bits per second.
pub const MAX_RATE_BPS: u64 = 10_000_000_000;

/// Nanoseconds of the host's monotonic clock (shared by all processes).
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

/// Parses a rate: a number of bits per second with an optional unit
/// (`bit`, `kbit`, `mbit`, `gbit`), e.g. `8mbit`, `500kbit`, `64000`.
pub fn parse_rate(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let (num, mult) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(u, m)| lower.strip_suffix(u).map(|n| (n.to_string(), *m)))
        .unwrap_or((lower.clone(), 1.0));
    let v: f64 = num.parse().ok()?;
    let bps = v * mult;
    (bps.is_finite() && bps >= 1.0 && bps <= MAX_RATE_BPS as f64).then_some(bps as u64)
}

/// Parses a duration: a number with `ms` or `s` (`20s`, `500ms`, `1.5s`).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let v: f64 = num.parse().ok()?;
    let secs = v * scale;
    (secs.is_finite() && secs > 0.0 && secs <= MAX_DURATION.as_secs_f64())
        .then(|| Duration::from_secs_f64(secs))
}

/// What a stream resource sends: `chunks` chunks, one every `interval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Number of chunks.
    pub chunks: u64,
    /// Time between two chunks; zero for a bulk body ([`Schedule::bulk`]).
    pub interval: Duration,
    /// Bytes of the last chunk (1..=[`CHUNK`]).
    pub last: usize,
}

impl Schedule {
    /// A bulk body of `bytes` bytes: no due times, every chunk is stamped
    /// when the transport takes it.
    pub fn bulk(bytes: u64) -> Schedule {
        Schedule {
            chunks: bytes.div_ceil(CHUNK as u64),
            interval: Duration::ZERO,
            last: match (bytes % CHUNK as u64) as usize {
                0 => CHUNK,
                r => r,
            },
        }
    }

    /// Bytes of chunk `seq`.
    pub fn chunk_len(&self, seq: u64) -> usize {
        if seq + 1 == self.chunks {
            self.last
        } else {
            CHUNK
        }
    }

    /// Whether this is a bulk body (no due times).
    pub fn is_bulk(&self) -> bool {
        self.interval.is_zero()
    }

    /// The schedule of `duration` at `rate_bps` (at least one chunk).
    pub fn new(rate_bps: u64, duration: Duration) -> Schedule {
        let per_sec = rate_bps as f64 / 8.0 / CHUNK as f64;
        Schedule {
            chunks: ((per_sec * duration.as_secs_f64()).round() as u64).max(1),
            interval: Duration::from_secs_f64(1.0 / per_sec),
            last: CHUNK,
        }
    }

    /// Body length in bytes.
    pub fn len(&self) -> u64 {
        match self.chunks {
            0 => 0,
            n => (n - 1) * CHUNK as u64 + self.last as u64,
        }
    }

    /// Whether the body is empty (a rate schedule has at least one chunk).
    pub fn is_empty(&self) -> bool {
        self.chunks == 0
    }
}

/// Fills `buf` (of [`CHUNK`] bytes) as chunk `seq`, stamped with the time
/// it was due: now minus `late`, how long after its due time it is written.
pub fn write_chunk(buf: &mut [u8; CHUNK], seq: u64, late: Duration) {
    let stamp = monotonic_ns().saturating_sub(late.as_nanos().min(u64::MAX as u128) as u64);
    buf[..8].copy_from_slice(&stamp.to_be_bytes());
    buf[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
    for (i, b) in buf[12..].iter_mut().enumerate() {
        *b = b'a' + ((seq as usize + i) % 26) as u8;
    }
}

/// Chunks whose delays a [`DelayMeter`] keeps one by one (for `--delay-log`):
/// about 1.26 GB of body in 8 MB. Later chunks count only in the
/// distribution, so a server that streams without end cannot make the
/// client's memory grow.
pub const LOGGED_CHUNKS: usize = 1 << 20;

/// Ratio of two neighbouring buckets of the delay distribution: quantiles
/// are exact to within half of it (0.25 %).
const BUCKET_RATIO: f64 = 1.005;

/// Buckets: 1 us up to about 1.5 hours (more falls in the last one).
const BUCKETS: usize = 4500;

/// Collects the delivery delay of the chunks of one response as the
/// application reads them, in bounded memory: the distribution in
/// log-spaced buckets ([`DelaySummary`]: count, mean and largest exact,
/// quantiles within 0.25 %), and the first [`LOGGED_CHUNKS`] delays one by
/// one for [`DelayMeter::csv`].
#[derive(Clone, Debug)]
pub struct DelayMeter {
    partial: Vec<u8>,
    delays_ns: Vec<u64>,
    buckets: Vec<u64>,
    chunks: u64,
    sum_ns: u128,
    max_ns: u64,
    next_seq: u32,
    bad: u64,
}

/// The bucket of a delay: 0 below 1 us, then one per factor [`BUCKET_RATIO`].
fn bucket(ns: u64) -> usize {
    if ns < 1_000 {
        return 0;
    }
    let k = ((ns as f64 / 1e3).ln() / BUCKET_RATIO.ln()) as usize + 1;
    k.min(BUCKETS - 1)
}

/// A representative delay of bucket `k` (its geometric middle), ns.
fn bucket_value(k: usize) -> f64 {
    if k == 0 {
        return 500.0;
    }
    1e3 * BUCKET_RATIO.powf(k as f64 - 0.5)
}

impl Default for DelayMeter {
    fn default() -> Self {
        DelayMeter::new()
    }
}

impl DelayMeter {
    /// An empty meter.
    pub fn new() -> DelayMeter {
        DelayMeter {
            partial: Vec::with_capacity(CHUNK),
            delays_ns: Vec::new(),
            buckets: vec![0; BUCKETS],
            chunks: 0,
            sum_ns: 0,
            max_ns: 0,
            next_seq: 0,
            bad: 0,
        }
    }

    /// Body bytes just read by the application.
    pub fn on_body(&mut self, mut data: &[u8]) {
        let now = monotonic_ns();
        while !data.is_empty() {
            let need = CHUNK - self.partial.len();
            let take = need.min(data.len());
            self.partial.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.partial.len() == CHUNK {
                let stamp = u64::from_be_bytes(self.partial[..8].try_into().unwrap_or_default());
                let seq = u32::from_be_bytes(self.partial[8..12].try_into().unwrap_or_default());
                if seq != self.next_seq || stamp > now {
                    self.bad += 1;
                }
                self.next_seq = seq.wrapping_add(1);
                self.record(now.saturating_sub(stamp));
                self.partial.clear();
            }
        }
    }

    fn record(&mut self, ns: u64) {
        if self.delays_ns.len() < LOGGED_CHUNKS {
            self.delays_ns.push(ns);
        }
        self.buckets[bucket(ns)] += 1;
        self.chunks += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Whether [`DelayMeter::csv`] lacks chunks (more than
    /// [`LOGGED_CHUNKS`] were measured).
    pub fn log_truncated(&self) -> bool {
        self.chunks > self.delays_ns.len() as u64
    }

    /// The per-chunk delays as CSV (`chunk,delay_ms`), in arrival order
    /// (the first [`LOGGED_CHUNKS`]).
    pub fn csv(&self) -> String {
        let mut out = String::from("chunk,delay_ms\n");
        for (i, d) in self.delays_ns.iter().enumerate() {
            out += &format!("{i},{:.3}\n", *d as f64 / 1e6);
        }
        out
    }

    /// The distribution so far.
    pub fn summary(&self) -> DelaySummary {
        let n = self.chunks;
        let max_ms = self.max_ns as f64 / 1e6;
        // The smallest bucket value with at least ceil(q n) chunks at or
        // below it, never above the largest delay seen.
        let pct = |q: f64| -> f64 {
            if n == 0 {
                return 0.0;
            }
            let want = ((q * n as f64).ceil() as u64).clamp(1, n);
            let mut seen = 0;
            for (k, c) in self.buckets.iter().enumerate() {
                seen += c;
                if seen >= want {
                    return (bucket_value(k) / 1e6).min(max_ms);
                }
            }
            max_ms
        };
        DelaySummary {
            chunks: n,
            mean_ms: if n == 0 {
                0.0
            } else {
                (self.sum_ns / u128::from(n)) as f64 / 1e6
            },
            p50_ms: pct(0.50),
            p95_ms: pct(0.95),
            p99_ms: pct(0.99),
            max_ms,
            out_of_order: self.bad,
        }
    }
}

/// Per-chunk delivery delay of a stream response.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DelaySummary {
    /// Chunks measured.
    pub chunks: u64,
    /// Mean delay, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Chunks with an unexpected sequence number or a stamp in the future
    /// (a corrupted stream or a server on another host).
    pub out_of_order: u64,
}

impl DelaySummary {
    /// As a JSON object (the `delivery` member of the client's JSON line).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "chunks": self.chunks,
            "mean_ms": self.mean_ms,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
            "out_of_order": self.out_of_order,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_durations_and_schedules() {
        assert_eq!(parse_rate("8mbit"), Some(8_000_000));
        assert_eq!(parse_rate("500kbit"), Some(500_000));
        assert_eq!(parse_rate("1.5Mbit"), Some(1_500_000));
        assert_eq!(parse_rate("64000"), Some(64_000));
        for bad in ["", "x", "-1mbit", "0", "20gbit", "nan"] {
            assert_eq!(parse_rate(bad), None, "{bad}");
        }
        assert_eq!(parse_duration("20s"), Some(Duration::from_secs(20)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        for bad in ["20", "0s", "-1s", "2h", "99999s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        let b = Schedule::bulk(2_401);
        assert!(b.is_bulk() && !Schedule::new(8_000_000, Duration::from_secs(1)).is_bulk());
        assert_eq!((b.chunks, b.len()), (3, 2_401));
        assert_eq!((b.chunk_len(1), b.chunk_len(2)), (CHUNK, 1));
        assert_eq!(Schedule::bulk(2_400).len(), 2_400);
        assert_eq!(Schedule::bulk(2_400).chunk_len(1), CHUNK);
        assert!(Schedule::bulk(0).is_empty());
        assert_eq!(Schedule::bulk(0).len(), 0);
        let s = Schedule::new(8_000_000, Duration::from_secs(20));
        assert_eq!(s.chunks, 16_667);
        assert!((s.interval.as_secs_f64() - 0.0012).abs() < 1e-9);
        assert_eq!(s.len(), 16_667 * 1200);
    }

    #[test]
    fn meter_measures_chunks_split_anywhere() {
        let mut body = Vec::new();
        for seq in 0..5 {
            let mut c = [0u8; CHUNK];
            write_chunk(&mut c, seq, Duration::ZERO);
            body.extend_from_slice(&c);
        }
        std::thread::sleep(Duration::from_millis(2));
        let mut m = DelayMeter::new();
        for piece in body.chunks(700) {
            m.on_body(piece);
        }
        let s = m.summary();
        assert_eq!(s.chunks, 5);
        assert_eq!(s.out_of_order, 0);
        assert!(s.p50_ms >= 2.0 && s.max_ms < 1000.0, "{s:?}");
        assert!(s.p50_ms <= s.p99_ms && s.p99_ms <= s.max_ms);
        // A chunk written late is stamped with its due time: the wait in
        // the server counts.
        let mut c = [0u8; CHUNK];
        write_chunk(&mut c, 5, Duration::from_millis(500));
        let mut m2 = m.clone();
        m2.on_body(&c);
        assert!(m2.summary().max_ms >= 500.0, "{:?}", m2.summary());
        // A repeated chunk is flagged.
        m.on_body(&body[..CHUNK]);
        assert_eq!(m.summary().out_of_order, 1);
    }

    #[test]
    fn quantiles_of_the_buckets_are_within_a_quarter_percent() {
        let mut m = DelayMeter::new();
        // 1..=10_000 ms, one chunk each: p50 = 5000, p95 = 9500, p99 = 9900.
        for ms in 1..=10_000u64 {
            m.record(ms * 1_000_000);
        }
        let s = m.summary();
        assert_eq!(s.chunks, 10_000);
        assert!((s.mean_ms - 5000.5).abs() < 1e-6, "{s:?}");
        assert_eq!(s.max_ms, 10_000.0);
        for (got, want) in [(s.p50_ms, 5000.0), (s.p95_ms, 9500.0), (s.p99_ms, 9900.0)] {
            assert!((got / want - 1.0).abs() < 0.0026, "{got} vs {want}");
        }
        // Sub-microsecond and enormous delays land in the end buckets.
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert!(bucket_value(BUCKETS - 2) < 6.0e12);
    }

    #[test]
    fn the_per_chunk_log_is_bounded() {
        let mut m = DelayMeter::new();
        for _ in 0..LOGGED_CHUNKS + 10 {
            m.record(2_000_000);
        }
        assert!(m.log_truncated());
        assert_eq!(m.summary().chunks, LOGGED_CHUNKS as u64 + 10);
        assert_eq!(m.csv().lines().count(), LOGGED_CHUNKS + 1);
    }
}
