//! Deterministic virtual-time channel simulation of [`NcSender`] +
//! [`NcReceiver`] (used by the channel tests and the tables in
//! `docs/coding.md`). Frames are encoded and re-parsed on every hop.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use crate::frames::Frame;
use crate::policy::PolicyKind;
use crate::receiver::NcReceiver;
use crate::sender::{Mode, NcSender, SenderConfig, Transmit};
use crate::testrng::Rng;

/// Packet-erasure model of the forward path.
#[derive(Clone, Copy, Debug)]
pub enum Channel {
    /// Independent losses with probability `p`.
    Bernoulli(f64),
    /// Two-state Gilbert–Elliott: no loss in Good, loss in Bad; stationary
    /// loss `p`, mean burst length `burst` time slots (the chain advances
    /// once per send opportunity, so an idle sender does not freeze it).
    GilbertElliott {
        /// Stationary loss rate.
        p: f64,
        /// Mean number of consecutive losses.
        burst: f64,
    },
}

/// Simulation parameters.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Source symbols to deliver.
    pub symbols: u64,
    /// Coding mode.
    pub mode: Mode,
    /// Redundancy policy.
    pub policy: PolicyKind,
    /// Negotiated window.
    pub window: usize,
    /// Forward channel.
    pub channel: Channel,
    /// One-way delay (both directions).
    pub one_way: Duration,
    /// Time between send opportunities.
    pub interval: Duration,
    /// Extra per-packet delay, uniform in `[0, jitter]`, on both paths
    /// (packets and ACKs get reordered when it exceeds the send interval).
    pub jitter: Duration,
    /// Optional 100 % loss outage (start, length) on both paths.
    pub outage: Option<(Duration, Duration)>,
    /// RNG seed.
    pub seed: u64,
    /// Maximum symbol size.
    pub max_symbol: usize,
    /// Transport loss detection: when set, a packet the channel dropped is
    /// reported to the sender ([`crate::NcSender::on_source_lost`] /
    /// [`crate::NcSender::on_repair_lost`]) this long after it was sent (a
    /// stand-in for QUIC's packet/time thresholds; typically RTT plus a few
    /// send intervals), unless the feedback path is in an outage then.
    /// `None` (the default, used for the tables): no transport signals.
    pub loss_detection: Option<Duration>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            symbols: 10_000,
            mode: Mode::Systematic,
            policy: PolicyKind::ADAPTIVE,
            window: 256,
            channel: Channel::Bernoulli(0.05),
            one_way: Duration::from_millis(25),
            interval: Duration::from_millis(1),
            jitter: Duration::ZERO,
            outage: None,
            seed: 1,
            max_symbol: 1200,
            loss_detection: None,
        }
    }
}

/// Simulation outcome.
#[derive(Clone, Debug, Default)]
pub struct SimResult {
    /// Source symbols sent.
    pub sources: u64,
    /// Repair symbols sent beyond the one-per-source coded transmissions.
    pub repairs: u64,
    /// repairs / sources.
    pub overhead: f64,
    /// Of `repairs`: stall probes and tail-protection repairs.
    pub probes: u64,
    /// See `probes`.
    pub tail_repairs: u64,
    /// The sender's loss estimate at the end.
    pub loss_estimate: f64,
    /// Mean in-order delivery delay (ms) from first send.
    pub mean_delay_ms: f64,
    /// 99th percentile in-order delivery delay (ms).
    pub p99_delay_ms: f64,
    /// Maximum in-order delivery delay (ms).
    pub max_delay_ms: f64,
    /// Largest coding window observed.
    pub max_window_seen: usize,
    /// Virtual duration of the run (ms).
    pub duration_ms: f64,
}

/// Deterministic payload of symbol `idx` (length 1..=max).
pub fn payload_of(idx: u64, max: usize) -> Vec<u8> {
    let mut r = Rng::new(idx.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let len = 1 + r.below(max as u64) as usize;
    let mut v = vec![0u8; len];
    r.fill(&mut v);
    v
}

/// A delay line that releases items in order of their due time (ties in
/// insertion order), so jitter reorders packets.
struct Delay<T> {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    items: HashMap<u64, T>,
    seq: u64,
}

impl<T> Default for Delay<T> {
    fn default() -> Self {
        Delay {
            heap: BinaryHeap::new(),
            items: HashMap::new(),
            seq: 0,
        }
    }
}

impl<T> Delay<T> {
    fn push(&mut self, due: Instant, item: T) {
        self.heap.push(Reverse((due, self.seq)));
        self.items.insert(self.seq, item);
        self.seq += 1;
    }
    fn pop_due(&mut self, now: Instant) -> Option<T> {
        let Reverse((due, id)) = *self.heap.peek()?;
        if due > now {
            return None;
        }
        self.heap.pop();
        self.items.remove(&id)
    }
}

enum Pkt {
    /// A source packet as on the wire: the symbol, then its
    /// SOURCE_SYMBOL_ID frame at offset `tag` (the transport reports
    /// where extension frames start).
    Source { bytes: Vec<u8>, tag: usize },
    /// A REPAIR frame; fully coded mode's coded new-data frames name the
    /// symbol they carry (their loss is that source's loss).
    Repair(Vec<u8>, Option<u64>),
}

/// A source packet: `payload` followed by SOURCE_SYMBOL_ID(index, length).
fn source_packet(index: u64, payload: &[u8]) -> Pkt {
    let mut bytes = payload.to_vec();
    Frame::SourceSymbolId {
        index,
        length: payload.len() as u64,
    }
    .encode(&mut bytes);
    Pkt::Source {
        bytes,
        tag: payload.len(),
    }
}

/// Run one simulation; `Err` describes the first violated property
/// (delivery exactly once and byte-identical, seen count == rank, window
/// bound, no protocol error, completion).
pub fn run(cfg: &SimConfig) -> Result<SimResult, String> {
    let t0 = Instant::now();
    let n = cfg.symbols;
    let mut rng = Rng::new(cfg.seed);
    let scfg = SenderConfig {
        mode: cfg.mode,
        policy: cfg.policy,
        max_window: cfg.window,
        max_symbol_size: cfg.max_symbol,
        initial_rtt: cfg.one_way * 2,
        abandon_after: Duration::from_secs(3600),
        ..SenderConfig::default()
    };
    let mut tx = NcSender::new(scfg, t0);
    let mut rx = NcReceiver::new(cfg.window, cfg.max_symbol);
    let mut fwd: Delay<Pkt> = Delay::default();
    // Transport loss declarations due: (is a source, index or repair seq).
    let mut lossdet: Delay<(bool, u64)> = Delay::default();
    let mut back: Delay<Vec<u8>> = Delay::default();
    let mut jrng = Rng::new(cfg.seed ^ 0x6a09_e667);
    let mut jitter = move || {
        let j = cfg.jitter.as_nanos() as u64;
        Duration::from_nanos(if j == 0 { 0 } else { jrng.below(j + 1) })
    };
    let mut sent_at: Vec<Instant> = Vec::with_capacity(n as usize);
    let mut decoded_at: Vec<Option<Instant>> = vec![None; n as usize];
    let mut ge_bad = false;
    let mut res = SimResult::default();
    let mut now = t0;
    let deadline = t0 + cfg.interval * (n as u32).saturating_mul(20) + Duration::from_secs(60);
    let budget = cfg.max_symbol + 64;
    let mut tick: u64 = 0;
    let in_outage = |t: Instant| {
        cfg.outage
            .is_some_and(|(s, l)| t >= t0 + s && t < t0 + s + l)
    };

    while rx.decoder().i_p() < n {
        if now > deadline {
            return Err(format!(
                "did not complete: I_p = {} of {n}",
                rx.decoder().i_p()
            ));
        }
        // 1. Forward arrivals.
        while let Some(p) = fwd.pop_due(now) {
            match p {
                Pkt::Source { mut bytes, tag } => {
                    let (f, _) = Frame::parse(&bytes[tag..]).map_err(|e| format!("parse: {e}"))?;
                    let Frame::SourceSymbolId { index, length } = f else {
                        return Err("bad frame".into());
                    };
                    let start = tag
                        .checked_sub(length as usize)
                        .ok_or("symbol longer than the packet")?;
                    if bytes[start..tag] != *payload_of(index, cfg.max_symbol).as_slice() {
                        return Err(format!("clear payload {index} corrupted"));
                    }
                    // Hand the packet buffer over (owned path; the
                    // borrowed one is exercised by `fuzzing::session`).
                    bytes.truncate(tag);
                    bytes.drain(..start);
                    let a = rx
                        .on_source_owned(index, bytes, now)
                        .map_err(|e| format!("rx source: {e}"))?;
                    if !a.stale && index < n && decoded_at[index as usize].is_none() {
                        decoded_at[index as usize] = Some(now);
                    }
                }
                Pkt::Repair(bytes, _) => {
                    let (f, _) = Frame::parse(&bytes).map_err(|e| format!("parse: {e}"))?;
                    rx.on_frame_owned(f, now)
                        .map_err(|e| format!("rx repair: {e}"))?;
                }
            }
            while let Some(r) = rx.poll_recovered() {
                let i = r.index as usize;
                if i >= n as usize || decoded_at[i].is_some() {
                    return Err(format!("symbol {i} delivered twice"));
                }
                if r.payload != payload_of(r.index, cfg.max_symbol) {
                    return Err(format!("recovered payload {i} differs"));
                }
                decoded_at[i] = Some(now);
            }
            let mut ack = Vec::new();
            rx.write_ack(&mut ack);
            if !in_outage(now) {
                back.push(now + cfg.one_way + jitter(), ack);
            }
        }
        // 2. ACKs.
        while let Some(bytes) = back.pop_due(now) {
            let (f, _) = Frame::parse(&bytes).map_err(|e| format!("ack parse: {e}"))?;
            if let Frame::Ack(a) = f {
                tx.on_ack(&a, now).map_err(|e| format!("on_ack: {e}"))?;
            }
        }
        while tx.poll_event().is_some() {}
        // 2b. Transport loss declarations.
        while let Some((src, id)) = lossdet.pop_due(now) {
            if in_outage(now) {
                continue;
            }
            if src {
                tx.on_source_lost(id, now);
            } else {
                tx.on_repair_lost(id, now);
            }
        }
        // 3. Timers.
        if tx.timeout().is_some_and(|t| t <= now) {
            tx.on_timeout(now);
        }
        // 4. Send opportunity.
        let has_data = (sent_at.len() as u64) < n;
        let pkt = match tx.poll_transmit(has_data, now) {
            Some(Transmit::NewData) => {
                let idx = sent_at.len() as u64;
                let p = payload_of(idx, cfg.max_symbol);
                let got = tx
                    .on_source_sent(&p, now)
                    .map_err(|e| format!("send: {e}"))?;
                if got != idx {
                    return Err("index mismatch".into());
                }
                sent_at.push(now);
                match cfg.mode {
                    Mode::Systematic => Some(source_packet(idx, &p)),
                    Mode::FullyCoded => tx
                        .write_repair(budget, now)
                        .map(|x| Pkt::Repair(x.1, Some(idx))),
                }
            }
            Some(Transmit::Repair) => tx.write_repair(budget, now).map(|x| Pkt::Repair(x.1, None)),
            None => None,
        };
        res.max_window_seen = res.max_window_seen.max(tx.window_len());
        if tx.window_len() > cfg.window || tx.next_index() > tx.peer_state().0 + cfg.window as u64 {
            return Err("window limit exceeded".into());
        }
        // The Gilbert-Elliott chain evolves once per time slot (time-correlated
        // fading), whether or not a packet is sent in it.
        if let Channel::GilbertElliott { p, burst } = cfg.channel {
            let p_bg = 1.0 / burst.max(1.0);
            let p_gb = if p >= 1.0 { 1.0 } else { p * p_bg / (1.0 - p) };
            ge_bad = if ge_bad {
                rng.unit() >= p_bg
            } else {
                rng.unit() < p_gb
            };
        }
        if let Some(p) = pkt {
            let lost = in_outage(now)
                || match cfg.channel {
                    Channel::Bernoulli(p) => rng.unit() < p,
                    Channel::GilbertElliott { .. } => ge_bad,
                };
            if !lost {
                fwd.push(now + cfg.one_way + jitter(), p);
            } else if let Some(d) = cfg.loss_detection {
                let bytes = match &p {
                    Pkt::Source { bytes, tag } => &bytes[*tag..],
                    Pkt::Repair(_, Some(index)) => {
                        lossdet.push(now + d, (true, *index));
                        &[][..]
                    }
                    Pkt::Repair(b, None) => b,
                };
                match Frame::parse(bytes) {
                    Ok((Frame::SourceSymbolId { index, .. }, _)) => {
                        lossdet.push(now + d, (true, index))
                    }
                    Ok((Frame::Repair(r), _)) => lossdet.push(now + d, (false, r.repair_seq)),
                    _ => {}
                }
            }
        }
        // 5. Invariants, sampled.
        tick += 1;
        if tick.is_multiple_of(997) {
            let d = rx.decoder();
            if d.stats().innovative != d.i_p() + d.rank() {
                return Err(format!(
                    "seen count {} != rank {}",
                    d.stats().innovative,
                    d.i_p() + d.rank()
                ));
            }
            if tick.is_multiple_of(997 * 8) {
                d.check_invariants();
            }
        }
        now += cfg.interval;
    }
    let st = tx.stats();
    res.sources = st.sources;
    res.repairs = st.repairs;
    res.overhead = st.repairs as f64 / st.sources.max(1) as f64;
    res.probes = st.probes;
    res.tail_repairs = st.tail_repairs;
    res.loss_estimate = tx.loss_estimate();
    let mut delays = Vec::with_capacity(n as usize);
    let mut inorder = t0;
    for i in 0..n as usize {
        let d = decoded_at[i].ok_or(format!("symbol {i} never delivered"))?;
        inorder = inorder.max(d);
        delays.push(inorder.duration_since(sent_at[i]).as_secs_f64() * 1e3);
    }
    res.mean_delay_ms = delays.iter().sum::<f64>() / delays.len().max(1) as f64;
    delays.sort_by(|a, b| a.total_cmp(b));
    res.p99_delay_ms = delays[((delays.len() as f64 * 0.99) as usize).min(delays.len() - 1)];
    res.max_delay_ms = *delays.last().unwrap_or(&0.0);
    res.duration_ms = now.duration_since(t0).as_secs_f64() * 1e3;
    Ok(res)
}
