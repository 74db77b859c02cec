//! Trace-driven link capacity in mahimahi's `mm-link` format.
//!
//! A trace is a list of millisecond timestamps, one line per *delivery
//! opportunity*; each opportunity can carry [`OPPORTUNITY_BYTES`] bytes. The
//! trace repeats: when it ends, it starts over shifted by its last
//! timestamp (its period). Semantics follow mahimahi's link queue:
//!
//! * an opportunity serves the FIFO queue's head packets that arrived before
//!   it; bytes of an opportunity that no waiting packet uses are lost;
//! * a packet that does not fit in what is left of an opportunity continues
//!   in the next one and leaves the link at the opportunity that carries its
//!   last byte (so several small packets can share one opportunity, and a
//!   partially sent packet counts as delivered only when complete);
//! * a packet occupies its UDP payload plus [`HEADER_BYTES`] (IPv4 + UDP
//!   headers), since mahimahi sees whole IP packets.
//!
//! Because the service schedule is fixed in advance, the departure of a
//! packet is known when it arrives ([`TraceService::serve`]), like the
//! constant-rate link of [`crate::link`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Bytes carried by one delivery opportunity.
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// Bytes counted on top of a datagram's UDP payload (IPv4 20 + UDP 8).
pub const HEADER_BYTES: u64 = 28;

/// Largest trace accepted, in lines (bounded memory: 8 bytes per line).
pub const MAX_TRACE_LINES: usize = 50_000_000;

/// Largest timestamp accepted (about 115 days), so that nanosecond
/// arithmetic on trace times cannot overflow.
pub const MAX_TRACE_MS: u64 = 10_000_000_000;

/// A parsed trace: nondecreasing millisecond timestamps, the last one > 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    ms: Vec<u64>,
}

impl Trace {
    /// Parses mahimahi's format. `name` prefixes errors, which give the
    /// 1-based line number of the first bad line.
    pub fn parse(text: &str, name: &str) -> Result<Trace, String> {
        let mut ms: Vec<u64> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let n = i + 1;
            if line.is_empty() {
                return Err(format!("{name}:{n}: empty line"));
            }
            let v: u64 = line.parse().map_err(|_| {
                format!("{name}:{n}: '{line}' is not a millisecond timestamp (an unsigned integer)")
            })?;
            if v > MAX_TRACE_MS {
                return Err(format!(
                    "{name}:{n}: timestamp {v} is beyond the largest supported ({MAX_TRACE_MS} ms)"
                ));
            }
            if let Some(&last) = ms.last() {
                if v < last {
                    return Err(format!(
                        "{name}:{n}: timestamp {v} is smaller than the previous one ({last}); \
                         timestamps must not decrease"
                    ));
                }
            }
            if ms.len() >= MAX_TRACE_LINES {
                return Err(format!("{name}:{n}: more than {MAX_TRACE_LINES} lines"));
            }
            ms.push(v);
        }
        match ms.last() {
            None => Err(format!("{name}: no timestamps")),
            Some(0) => Err(format!(
                "{name}: the last timestamp is 0; a trace must last a nonzero time"
            )),
            Some(_) => Ok(Trace { ms }),
        }
    }

    /// Reads and parses a trace file.
    pub fn load(path: &Path) -> Result<Trace, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
        Trace::parse(&text, &path.display().to_string())
    }

    /// Builds a trace from timestamps (same checks as [`Trace::parse`]).
    pub fn from_ms(ms: Vec<u64>) -> Result<Trace, String> {
        let text: String = ms.iter().map(|v| format!("{v}\n")).collect();
        Trace::parse(&text, "trace")
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// The period (last timestamp).
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms())
    }

    fn period_ms(&self) -> u64 {
        self.ms.last().copied().unwrap_or(1).max(1)
    }

    /// Mean capacity over one period in bit/s.
    pub fn mean_rate_bps(&self) -> u64 {
        (self.ms.len() as u128 * OPPORTUNITY_BYTES as u128 * 8 * 1000 / self.period_ms() as u128)
            as u64
    }

    /// Time of global opportunity `g` (the repeated trace, counted from 0)
    /// in nanoseconds of trace time.
    pub fn time_ns(&self, g: u64) -> u64 {
        let n = self.ms.len().max(1) as u64;
        let cycle = g / n;
        let ms = cycle
            .saturating_mul(self.period_ms())
            .saturating_add(self.ms[(g % n) as usize]);
        ms.saturating_mul(1_000_000)
    }

    /// Number of opportunities at trace times `<= t_ns` (equivalently, the
    /// index of the first opportunity strictly after `t_ns`).
    pub fn count_upto(&self, t_ns: u64) -> u64 {
        let n = self.ms.len() as u64;
        let p_ns = self.period_ms() * 1_000_000;
        let cycle = t_ns / p_ns;
        let within = t_ns - cycle * p_ns;
        // Opportunities of this cycle at or before `within`; the previous
        // cycle's ones are all <= cycle·P <= t.
        let k = self.ms.partition_point(|&m| m * 1_000_000 <= within) as u64;
        cycle * n + k
    }
}

/// A trace applied to one direction of a link, as configured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceConfig {
    /// Where the trace came from (shown in the stats).
    pub path: String,
    /// Offset into the trace at which the link starts.
    pub offset: Duration,
    /// Opportunities per period (informational).
    pub opportunities: usize,
    /// Period of the trace.
    pub period: Duration,
    /// Mean capacity of the trace in bit/s.
    pub mean_rate_bps: u64,
    /// The schedule itself (not serialised).
    #[serde(skip)]
    pub trace: Arc<Trace>,
}

impl TraceConfig {
    /// Wraps a parsed trace.
    pub fn new(trace: Trace, path: impl Into<String>, offset: Duration) -> TraceConfig {
        TraceConfig {
            path: path.into(),
            offset,
            opportunities: trace.opportunities(),
            period: trace.period(),
            mean_rate_bps: trace.mean_rate_bps(),
            trace: Arc::new(trace),
        }
    }

    /// Loads `path`.
    pub fn load(path: &Path, offset: Duration) -> Result<TraceConfig, String> {
        Ok(TraceConfig::new(
            Trace::load(path)?,
            path.display().to_string(),
            offset,
        ))
    }
}

/// FIFO service of a trace (sans-IO). Times are nanoseconds since the
/// link's start.
#[derive(Clone, Debug)]
pub struct TraceService {
    trace: Arc<Trace>,
    offset_ns: u64,
    /// Opportunity in which the previous packet finished, and the bytes
    /// left in it.
    last: Option<(u64, u64)>,
}

impl TraceService {
    /// Starts serving `cfg` at link time 0.
    pub fn new(cfg: &TraceConfig) -> TraceService {
        TraceService {
            trace: cfg.trace.clone(),
            offset_ns: cfg.offset.as_nanos().min(u64::MAX as u128) as u64,
            last: None,
        }
    }

    /// A packet of `bytes` (headers included) that arrives at `now_ns` and
    /// is accepted into the queue: returns when its last byte leaves.
    pub fn serve(&mut self, now_ns: u64, bytes: u64) -> u64 {
        let tau = now_ns.saturating_add(self.offset_ns);
        // First opportunity strictly after the arrival.
        let first = self.trace.count_upto(tau);
        let (mut g, mut credit) = match self.last {
            // The previous packet finished inside an opportunity that has
            // not happened yet: this packet waits with it and shares it.
            Some((g, left)) if left > 0 && g >= first => (g, left),
            Some((g, _)) if g + 1 > first => (g + 1, OPPORTUNITY_BYTES),
            _ => (first, OPPORTUNITY_BYTES),
        };
        let mut remaining = bytes.max(1);
        loop {
            let take = credit.min(remaining);
            remaining -= take;
            credit -= take;
            if remaining == 0 {
                break;
            }
            g += 1;
            credit = OPPORTUNITY_BYTES;
        }
        self.last = Some((g, credit));
        self.trace.time_ns(g).saturating_sub(self.offset_ns)
    }

    /// Capacity the trace offered from link time 0 to `now_ns`, in bytes.
    pub fn offered_bytes(&self, now_ns: u64) -> u64 {
        let tau = now_ns.saturating_add(self.offset_ns);
        let n = self.trace.count_upto(tau) - self.trace.count_upto(self.offset_ns);
        n.saturating_mul(OPPORTUNITY_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::VecDeque;

    trait Below {
        fn below(&mut self, n: u64) -> u64;
    }
    impl Below for Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.next_u64() % n.max(1)
        }
    }

    #[test]
    fn parse_errors_name_the_line() {
        let cases = [
            ("", "no timestamps"),
            ("0\n0\n", "nonzero time"),
            ("1\n2\n\n3\n", "t:3: empty line"),
            ("1\n2\nx\n", "t:3: 'x' is not"),
            ("1\n-2\n", "t:2:"),
            ("5\n4\n", "t:2: timestamp 4 is smaller"),
            ("1.5\n", "t:1:"),
            ("1\n99999999999\n", "t:2: timestamp 99999999999 is beyond"),
        ];
        for (text, want) in cases {
            let e = Trace::parse(text, "t").expect_err(text);
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let t = Trace::parse("0\n0\n1\n3\n", "t").unwrap();
        assert_eq!(
            (t.opportunities(), t.period()),
            (4, Duration::from_millis(3))
        );
        // 4 × 1500 B per 3 ms = 16 Mbit/s.
        assert_eq!(t.mean_rate_bps(), 16_000_000);
        // Windows line endings are accepted.
        assert!(Trace::parse("1\r\n2\r\n", "t").is_ok());
    }

    #[test]
    fn repeated_schedule_and_counting() {
        let t = Trace::from_ms(vec![0, 0, 1, 3]).unwrap();
        let ms = 1_000_000;
        // Cycle 0: 0, 0, 1, 3 ms; cycle 1: 3, 3, 4, 6 ms; ...
        let times: Vec<u64> = (0..8).map(|g| t.time_ns(g) / ms).collect();
        assert_eq!(times, [0, 0, 1, 3, 3, 3, 4, 6]);
        for (tns, want) in [
            (0, 2),
            (ms - 1, 2),
            (ms, 3),
            (3 * ms - 1, 3),
            (3 * ms, 6),
            (6 * ms, 10),
        ] {
            assert_eq!(t.count_upto(tns), want, "t={tns}");
            // count_upto is the first g with time > t.
            let brute = (0..100).take_while(|&g| t.time_ns(g) <= tns).count() as u64;
            assert_eq!(brute, want);
        }
    }

    fn constant(ms_per_opp: u64, len_ms: u64) -> TraceConfig {
        let v: Vec<u64> = (1..=len_ms / ms_per_opp).map(|k| k * ms_per_opp).collect();
        TraceConfig::new(Trace::from_ms(v).unwrap(), "const", Duration::ZERO)
    }

    #[test]
    fn idle_link_departs_at_the_next_opportunity() {
        // One opportunity per ms: a lone packet leaves at the next ms tick.
        let mut s = TraceService::new(&constant(1, 100));
        let ms = 1_000_000;
        assert_eq!(s.serve(0, 1000), ms);
        assert_eq!(s.serve(ms / 2 + 10 * ms, 1000), 11 * ms);
        // An opportunity exactly at the arrival time has already passed.
        assert_eq!(s.serve(20 * ms, 1000), 21 * ms);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_two() {
        let mut s = TraceService::new(&constant(1, 100));
        let ms = 1_000_000;
        // Three 500-byte packets queued at t=0 fill the opportunity at 1 ms.
        assert_eq!(s.serve(0, 500), ms);
        assert_eq!(s.serve(0, 500), ms);
        assert_eq!(s.serve(0, 500), ms);
        // The next starts a new opportunity.
        assert_eq!(s.serve(0, 1000), 2 * ms);
        // 1000 B at 2 ms leaves 500 B; a 1400 B packet uses them and 900 B of 3 ms.
        assert_eq!(s.serve(ms, 1400), 3 * ms);
        // Arriving after 3 ms, the leftover 600 B of that opportunity are gone.
        assert_eq!(s.serve(3 * ms + 1, 600), 4 * ms);
    }

    #[test]
    fn start_offset_shifts_the_schedule() {
        // Opportunities at 10, 20, ..., 100 ms; start 35 ms into the trace.
        let v: Vec<u64> = (1..=10).map(|k| k * 10).collect();
        let cfg = TraceConfig::new(Trace::from_ms(v).unwrap(), "t", Duration::from_millis(35));
        let mut s = TraceService::new(&cfg);
        let ms = 1_000_000;
        assert_eq!(s.serve(0, 100), 5 * ms); // trace time 40 ms
        assert_eq!(s.offered_bytes(0), 0);
        assert_eq!(s.offered_bytes(5 * ms), OPPORTUNITY_BYTES);
        // Trace times 40..100 ms are link times 5..65 ms; then it wraps
        // (trace 110 ms = link 75 ms).
        assert_eq!(s.offered_bytes(65 * ms), 7 * OPPORTUNITY_BYTES);
        assert_eq!(s.offered_bytes(75 * ms), 8 * OPPORTUNITY_BYTES);
    }

    /// An independent event-driven replay written the way mahimahi's link
    /// queue runs: at each opportunity, hand `OPPORTUNITY_BYTES` to the head
    /// of the queue of packets that arrived strictly before it. Returns each
    /// packet's departure time (ns).
    fn reference(trace: &Trace, offset_ns: u64, arrivals: &[(u64, u64)]) -> Vec<u64> {
        let mut out = vec![0; arrivals.len()];
        let mut queue: VecDeque<(usize, u64)> = VecDeque::new();
        let mut next = 0usize;
        let mut g = trace.count_upto(offset_ns);
        let mut left = arrivals.len();
        while left > 0 {
            let t = trace.time_ns(g) - offset_ns;
            while next < arrivals.len() && arrivals[next].0 < t {
                queue.push_back((next, arrivals[next].1));
                next += 1;
            }
            let mut credit = OPPORTUNITY_BYTES;
            while credit > 0 {
                let Some(head) = queue.front_mut() else { break };
                let take = credit.min(head.1);
                head.1 -= take;
                credit -= take;
                if head.1 == 0 {
                    out[head.0] = t;
                    queue.pop_front();
                    left -= 1;
                }
            }
            g += 1;
        }
        out
    }

    fn random_trace(rng: &mut Rng, len_ms: u64) -> Trace {
        // Bursty: per ms 0–3 opportunities, with idle stretches.
        let mut v = Vec::new();
        let mut idle = 0;
        for ms in 0..len_ms {
            if idle > 0 {
                idle -= 1;
                continue;
            }
            if rng.below(100) < 3 {
                idle = rng.below(40);
            }
            for _ in 0..rng.below(4) {
                v.push(ms);
            }
        }
        v.push(len_ms);
        Trace::from_ms(v).unwrap()
    }

    #[test]
    fn departures_match_an_event_driven_replay() {
        let mut rng = Rng::new(7);
        for case in 0..20 {
            let trace = random_trace(&mut rng, 300 + 50 * case);
            let offset_ns = rng.below(400) * 1_000_000 + rng.below(1_000_000);
            let cfg = TraceConfig::new(trace.clone(), "r", Duration::from_nanos(offset_ns));
            let mut t = 0u64;
            let arrivals: Vec<(u64, u64)> = (0..2000)
                .map(|_| {
                    // Bursts and gaps: sometimes many packets at once.
                    t += if rng.below(4) == 0 {
                        rng.below(3_000_000)
                    } else {
                        0
                    };
                    (t, 40 + rng.below(1500))
                })
                .collect();
            let mut s = TraceService::new(&cfg);
            let ours: Vec<u64> = arrivals.iter().map(|&(at, b)| s.serve(at, b)).collect();
            assert_eq!(ours, reference(&trace, offset_ns, &arrivals), "case {case}");
        }
    }

    #[test]
    fn shared_trace_replays_like_the_reference() {
        // The public LTE traces live outside the repository (../shared/traces);
        // QNC_TRACE_DIR points elsewhere. The synthetic test above always runs.
        let dir = std::env::var("QNC_TRACE_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces").into());
        let path = Path::new(&dir).join("Verizon-LTE-short.down");
        let Ok(trace) = Trace::load(&path) else {
            eprintln!("skipped: {} not found (set QNC_TRACE_DIR)", path.display());
            return;
        };
        assert!(trace.opportunities() > 10_000);
        let mut rng = Rng::new(3);
        let offset_ns = 17_000_000_000;
        let cfg = TraceConfig::new(trace.clone(), "v", Duration::from_nanos(offset_ns));
        // A saturating sender for 5 s: 1378-byte packets every 0.3 ms plus bursts.
        let mut t = 0u64;
        let arrivals: Vec<(u64, u64)> = (0..16_000)
            .map(|_| {
                t += 300_000 + rng.below(10_000);
                (t, 1378)
            })
            .collect();
        let mut s = TraceService::new(&cfg);
        let ours: Vec<u64> = arrivals.iter().map(|&(at, b)| s.serve(at, b)).collect();
        assert_eq!(ours, reference(&trace, offset_ns, &arrivals));
    }
}
