//! Sans-IO network-coding sender.
//!
//! Integration contract (see also `docs/protocol.md`):
//! 1. at each send opportunity call [`NcSender::poll_transmit`]; it says
//!    whether the packet should carry a repair symbol;
//! 2. for new data: systematic mode — [`NcSender::on_source_sent`] returns
//!    the index for the SOURCE_SYMBOL_ID frame and the payload is sent in
//!    clear; fully coded mode — call [`NcSender::on_source_sent`] and then
//!    [`NcSender::write_repair`] to get the coded REPAIR frame for the packet;
//! 3. for repairs call [`NcSender::write_repair_into`] with the free space
//!    of the packet being built ([`NcSender::write_repair`] returns a new
//!    buffer instead);
//! 4. feed NC_ACK frames to [`NcSender::on_ack`], drive the timer with
//!    [`NcSender::timeout`] / [`NcSender::on_timeout`], and drain
//!    [`NcSender::poll_event`] and [`NcSender::poll_window_frame`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::codec::Encoder;
use crate::coeffs::{Coefficients, DT_MAX};
use crate::error::{Error, Result};
use crate::frames::{repair_header_len, write_repair_header, AckFrame, Writer};
use crate::policy::{Ctx, Policy, PolicyKind, Scope};

/// Coding mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Sources in clear plus repair symbols.
    Systematic,
    /// Every transmission is a random combination of the window.
    FullyCoded,
}

/// Sender configuration.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Coding mode.
    pub mode: Mode,
    /// Redundancy policy.
    pub policy: PolicyKind,
    /// Negotiated maximum window (symbols between the peer's I_p and i_s).
    pub max_window: usize,
    /// Negotiated maximum symbol payload size.
    pub max_symbol_size: usize,
    /// RFC 8681 density threshold for seeded coefficients (15 = dense).
    pub density: u8,
    /// Initial RTT before any sample.
    pub initial_rtt: Duration,
    /// A symbol still undecoded this long after it was first sent is given
    /// up (reported [`SenderEvent::Lost`]) so the application retransmits it.
    pub abandon_after: Duration,
    /// Tail protection: when the application has no new data (the end of a
    /// response, or between the writes of a stream) and symbols were sent
    /// since the last repair, send a repair at once if the policy has any
    /// credit toward one, instead of waiting for the credit to reach a
    /// whole repair or for the peer's report. The repair is an advance on
    /// the policy's credit (which may go down to -1), so the average
    /// redundancy does not change; only repairs move earlier.
    pub tail_protection: bool,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mode: Mode::Systematic,
            policy: PolicyKind::ADAPTIVE,
            max_window: 64,
            max_symbol_size: 1500,
            density: DT_MAX,
            initial_rtt: Duration::from_millis(100),
            abandon_after: Duration::from_secs(10),
            tail_protection: true,
        }
    }
}

/// What the next packet should carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transmit {
    /// New source data (if the application has any and [`NcSender::can_send_source`]).
    NewData,
    /// A repair symbol: call [`NcSender::write_repair`].
    Repair,
}

/// Notifications for the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderEvent {
    /// The peer has seen every symbol below this index.
    Seen(u64),
    /// The peer has decoded every symbol below this index (their data needs
    /// no retransmission).
    Decoded(u64),
    /// Symbol given up: its data must be retransmitted by other means.
    Lost(u64),
}

/// Sender counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Source symbols sent.
    pub sources: u64,
    /// Repair symbols sent (in fully coded mode: the extra ones only).
    pub repairs: u64,
    /// Coded transmissions carrying new data (fully coded mode).
    pub coded_new: u64,
    /// Stall probes sent.
    pub probes: u64,
    /// Tail-protection repairs sent (included in `repairs`).
    pub tail_repairs: u64,
    /// Bytes of REPAIR frames written (fully coded mode: the extra ones
    /// only).
    pub repair_bytes: u64,
    /// Symbols given up.
    pub abandoned: u64,
}

/// Sans-IO NC sender.
#[derive(Debug)]
pub struct NcSender {
    cfg: SenderConfig,
    enc: Encoder,
    policy: Policy,
    ctx: Ctx,
    send_times: VecDeque<Instant>, // send time of symbols [times_base, i_s)
    acked_clear: VecDeque<bool>,   // transport-acked in clear, same range
    lost_clear: VecDeque<bool>,    // transport-declared lost, same range
    times_base: u64,
    /// Sources at or beyond `unknown_from` (the peer's MAX_SEQ) neither
    /// acknowledged nor declared lost: `Ctx::sources_inflight`, kept up to
    /// date incrementally (it is read several times per packet).
    unknown: u64,
    unknown_from: u64,
    srtt: Option<Duration>,
    rttvar: Duration,
    repair_seq: u64,
    pending_coded_new: bool,
    events: VecDeque<SenderEvent>,
    last_seen_ev: u64,
    last_decoded_ev: u64,
    abandon_point: u64,
    window_frame_due: Option<Instant>,
    last_progress: Instant,
    probe_backoff: u32,
    probe_burst: u64,
    repair_times: VecDeque<(u64, Instant)>,
    repair_acked_end: u64,
    loss_prev: (u64, u64),
    /// Loss rate from the NC_ACK counters: decayed (lost, sent) packet
    /// counts (see [`LOSS_MEMORY_PACKETS`]); the policies see
    /// [`NcSender::loss_estimate`], which also folds in transport losses.
    loss_ack: f64,
    loss_counts: (f64, f64),
    /// Source index / repair sequence up to which the NC_ACK counters were
    /// last folded into `loss_ack` (losses below are already counted).
    cov_src: u64,
    cov_rep: u64,
    /// Transport-declared losses not yet covered by an NC_ACK sample:
    /// source indexes (deduplicated by `lost_clear`, within the window).
    lost_src: VecDeque<u64>,
    /// The latest `LOST_REPAIRS_MAX` repair sequence numbers declared lost
    /// (for deduplication), and how many of them are `>= cov_rep`.
    lost_rep: VecDeque<u64>,
    lost_rep_uncovered: usize,
    /// The reason the last `poll_transmit` asked for a repair was tail
    /// protection (consumed by the next write).
    pending_tail: bool,
    /// Next source index when the last repair was sent: symbols at or
    /// above it have no repair yet.
    protected_through: u64,
    /// The newest RTT sample from NC_ACK timing.
    last_rtt_sample: Option<Duration>,
    /// When `on_timeout` last ran (deadlines up to it are delivered).
    timer_ran: Option<Instant>,
    /// Sequence numbers of the extra repairs (not fully coded mode's coded
    /// new-data frames) whose fate is unknown: sent after the newest one
    /// the peer reports and not declared lost (oldest first, bounded), and
    /// whether each was a tail-protection repair.
    repairs_out: VecDeque<(u64, bool)>,
    stats: SenderStats,
}

/// Why [`NcSender::poll_transmit`] asks for a repair (or new data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    NewData,
    Policy,
    ProbeBurst,
    Tail,
    StallProbe,
}

/// Where [`NcSender::write_repair_into`] wrote a REPAIR frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrittenRepair {
    /// Repair sequence number (for [`NcSender::on_repair_lost`]).
    pub seq: u64,
    /// First source index combined.
    pub first: u64,
    /// Number of source symbols combined.
    pub count: u64,
    /// Bytes written (the whole frame, type included).
    pub len: usize,
    /// It was a tail-protection repair ([`SenderConfig::tail_protection`]).
    pub tail: bool,
}

/// Memory of the NC_ACK loss estimate in packets: each packet's weight
/// decays by `1 - 1/LOSS_MEMORY_PACKETS` per packet sent after it. Counts,
/// not an average of samples started at zero, so the first samples are
/// unbiased (an EWMA from zero read 5.6% for 10% loss after 100 packets,
/// and the controller took the difference for congestion), and a sample
/// weighs by the packets it covers.
const LOSS_MEMORY_PACKETS: f64 = 500.0;

/// Weight, in packets, of the NC_ACK loss estimate when transport-declared
/// losses not yet covered by NC_ACK counters are folded in.
const LOSS_PRIOR_PACKETS: f64 = 64.0;

/// Bound of the list of lost repair sequence numbers kept for deduplication.
const LOST_REPAIRS_MAX: usize = 1024;

impl NcSender {
    /// New sender. The window and symbol size are clamped to what the wire
    /// can negotiate (1..=4096 symbols, 1..=65535 bytes).
    pub fn new(mut cfg: SenderConfig, now: Instant) -> NcSender {
        cfg.max_window = cfg
            .max_window
            .clamp(1, crate::frames::MAX_WINDOW_LIMIT as usize);
        cfg.max_symbol_size = cfg.max_symbol_size.clamp(1, crate::codec::MAX_SYMBOL_SIZE);
        let enc = Encoder::new(cfg.max_window, cfg.max_symbol_size);
        let policy = Policy::new(cfg.policy);
        let rtt = cfg.initial_rtt;
        NcSender {
            enc,
            policy,
            ctx: Ctx {
                srtt: rtt,
                rttvar: rtt / 2,
                ..Ctx::default()
            },
            send_times: VecDeque::new(),
            acked_clear: VecDeque::new(),
            lost_clear: VecDeque::new(),
            times_base: 0,
            unknown: 0,
            unknown_from: 0,
            srtt: None,
            rttvar: rtt / 2,
            repair_seq: 0,
            pending_coded_new: false,
            events: VecDeque::new(),
            last_seen_ev: 0,
            last_decoded_ev: 0,
            abandon_point: 0,
            window_frame_due: None,
            last_progress: now,
            probe_backoff: 0,
            probe_burst: 0,
            repair_times: VecDeque::new(),
            repair_acked_end: 0,
            loss_prev: (0, 0),
            loss_ack: 0.0,
            loss_counts: (0.0, 0.0),
            cov_src: 0,
            cov_rep: 0,
            lost_src: VecDeque::new(),
            lost_rep: VecDeque::new(),
            lost_rep_uncovered: 0,
            pending_tail: false,
            protected_through: 0,
            last_rtt_sample: None,
            timer_ran: None,
            repairs_out: VecDeque::new(),
            stats: SenderStats::default(),
            cfg,
        }
    }

    /// Configuration in use.
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }
    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }
    /// Sequence number the next repair symbol gets.
    pub fn next_repair_seq(&self) -> u64 {
        self.repair_seq
    }
    /// Index the next source symbol gets (i_s).
    pub fn next_index(&self) -> u64 {
        self.enc.next_index()
    }
    /// Start of the coding window (first symbol the peer has not seen).
    pub fn window_start(&self) -> u64 {
        self.enc.window_start()
    }
    /// Symbols in the coding window.
    pub fn window_len(&self) -> usize {
        self.enc.len()
    }
    /// Current loss-rate estimate: the EWMA of the NC_ACK counter samples,
    /// raised by transport-declared losses ([`NcSender::on_source_lost`],
    /// [`NcSender::on_repair_lost`]) that no NC_ACK sample covers yet.
    pub fn loss_estimate(&self) -> f64 {
        self.ctx.loss
    }
    /// Smoothed RTT in use.
    pub fn srtt(&self) -> Duration {
        self.ctx.srtt
    }
    /// RTT variation in use.
    pub fn rttvar(&self) -> Duration {
        self.ctx.rttvar
    }
    /// The newest RTT sample taken from NC_ACK timing: the time from
    /// sending the newest symbol the peer reports to its report (the
    /// degree-of-freedom delivery RTT of TCP/NC).
    pub fn last_rtt_sample(&self) -> Option<Duration> {
        self.last_rtt_sample
    }
    /// Source symbols sent since the last repair that the peer has not
    /// seen yet: what a repair sent now would newly protect.
    pub fn unprotected(&self) -> u64 {
        self.enc
            .next_index()
            .saturating_sub(self.protected_through.max(self.ctx.i_q))
    }
    /// Peer's state from the latest NC_ACK (I_p, I_q, I_r, MAX_SEQ, DIFF).
    pub fn peer_state(&self) -> (u64, u64, u64, u64, u64) {
        (
            self.ctx.i_p,
            self.ctx.i_q,
            self.ctx.i_r,
            self.ctx.max_seq,
            self.ctx.diff,
        )
    }

    /// Override the RTT estimate with the transport's (e.g. quiche's
    /// smoothed RTT and RTT variation).
    pub fn set_rtt(&mut self, srtt: Duration, rttvar: Duration) {
        self.srtt = Some(srtt);
        self.rttvar = rttvar;
        self.ctx.srtt = srtt;
        self.ctx.rttvar = rttvar;
    }

    /// Bytes to keep free in a packet after the data frames of a new source
    /// symbol: systematic mode, room for its SOURCE_SYMBOL_ID frame and at
    /// least the growth from a symbol to a REPAIR frame carrying it, so
    /// that any repair covering it fits a packet the size of this one;
    /// fully coded mode, the growth from the data to the coded frame that
    /// replaces it.
    pub fn source_reserve(&self) -> usize {
        let i_s = self.enc.next_index();
        // The repair sequence and window start grow: size them as they will
        // be (4-byte varints up to 2^30) or a symbol sent now may later be
        // one byte too long for any repair, and block the window.
        let repair = repair_header_len(
            self.repair_seq.max(1 << 14),
            self.enc.window_start().max(1 << 14),
            self.cfg.max_window as u64,
            crate::coeffs::CoefRef::Seeded {
                repair_key: 0,
                dt: self.cfg.density,
            },
            self.cfg.max_symbol_size + crate::codec::LEN_PREFIX,
        ) + crate::codec::LEN_PREFIX;
        match self.cfg.mode {
            Mode::Systematic => {
                let tag = crate::frames::FrameRef::SourceSymbolId {
                    index: i_s,
                    length: self.cfg.max_symbol_size as u64,
                }
                .encoded_len();
                tag.max(repair)
            }
            Mode::FullyCoded => repair,
        }
    }

    /// Whether a packet with `capacity` bytes free for data can carry a new
    /// source symbol: in fully coded mode its coded frame must also fit the
    /// longest symbol still in the window.
    pub fn new_data_fits(&self, capacity: usize) -> bool {
        let reserve = self.source_reserve();
        match self.cfg.mode {
            Mode::Systematic => capacity > reserve,
            Mode::FullyCoded => {
                let longest = self
                    .enc
                    .coded_len(self.enc.window_start(), self.enc.len())
                    .unwrap_or(0);
                capacity > reserve && capacity >= reserve - crate::codec::LEN_PREFIX + longest
            }
        }
    }

    /// Whether a new source symbol may be sent now: room in the coding
    /// window and below the peer's decoding limit (acked I_p + max_window).
    pub fn can_send_source(&self) -> bool {
        self.enc.has_room() && self.enc.next_index() < self.ctx.i_p + self.cfg.max_window as u64
    }

    /// Decide what the next packet carries. `has_new_data`: whether the
    /// application has data waiting.
    pub fn poll_transmit(&mut self, has_new_data: bool, now: Instant) -> Option<Transmit> {
        self.refresh_ctx();
        self.pending_tail = false;
        match self.decide(has_new_data, now)? {
            Reason::NewData => return Some(Transmit::NewData),
            Reason::Policy => {}
            Reason::ProbeBurst => {
                self.probe_burst -= 1;
                self.stats.probes += 1;
            }
            Reason::Tail => self.pending_tail = true,
            Reason::StallProbe => {
                self.probe_backoff += 1;
                self.last_progress = now;
                self.stats.probes += 1;
                // One probe per missing degree of freedom the peer last reported.
                self.probe_burst = self
                    .ctx
                    .diff
                    .saturating_sub(1)
                    .min(self.cfg.max_window as u64);
            }
        }
        Some(Transmit::Repair)
    }

    /// Whether [`NcSender::poll_transmit`] would ask for a repair now,
    /// without changing any state: the integration asks this to decide
    /// whether to build a packet when it has nothing else to send.
    pub fn repair_pending(&self, has_new_data: bool, now: Instant) -> bool {
        !matches!(self.decide(has_new_data, now), None | Some(Reason::NewData))
    }

    /// The decision of [`NcSender::poll_transmit`] (read-only; `ctx` must
    /// be fresh: `refresh_ctx` only recomputes derived fields, so the
    /// stored context is used as is between refreshes).
    fn decide(&self, has_new_data: bool, now: Instant) -> Option<Reason> {
        let ctx = self.fresh_ctx();
        let can_send = has_new_data && self.can_send_source();
        if self.enc.is_empty() {
            return can_send.then_some(Reason::NewData);
        }
        if self.policy.repair_due(&ctx, now).is_some() {
            return Some(Reason::Policy);
        }
        if self.probe_burst > 0 {
            return Some(Reason::ProbeBurst);
        }
        if can_send {
            return Some(Reason::NewData);
        }
        let unprotected = self.unprotected();
        if self.cfg.tail_protection
            && !has_new_data
            && unprotected > 0
            && self.policy.tail_due(&ctx, unprotected)
        {
            return Some(Reason::Tail);
        }
        // Stalled (window full or no data) with unseen symbols: probe after a
        // backed-off RTO so that every policy eventually completes.
        if now.duration_since(self.last_progress) >= self.probe_wait() {
            return Some(Reason::StallProbe);
        }
        None
    }

    /// Register a source symbol about to be sent now. Returns its index
    /// (systematic mode: put it in SOURCE_SYMBOL_ID; fully coded mode: then
    /// call [`NcSender::write_repair`] for this packet's coded frame).
    pub fn on_source_sent(&mut self, payload: &[u8], now: Instant) -> Result<u64> {
        if !self.can_send_source() {
            return Err(Error::WindowFull);
        }
        let idx = self.enc.push(payload)?;
        if self.send_times.is_empty() {
            self.times_base = idx;
        }
        self.send_times.push_back(now);
        self.acked_clear.push_back(false);
        self.lost_clear.push_back(false);
        if idx >= self.unknown_from {
            self.unknown += 1;
        }
        self.stats.sources += 1;
        self.ctx.sent_total += 1;
        self.refresh_ctx();
        if self.cfg.mode == Mode::FullyCoded {
            self.pending_coded_new = true;
        }
        self.policy.on_source_sent(&self.ctx);
        Ok(idx)
    }

    /// Produce a REPAIR frame (type included) of at most `budget` bytes, or
    /// `None` if nothing to code or the budget is too small. Returns the
    /// repair sequence number (for [`NcSender::on_repair_lost`]) and bytes.
    /// A budget of `max_symbol_size + 2 + frames::REPAIR_OVERHEAD_MAX` always
    /// fits; smaller budgets shrink a repair's window from its end (never
    /// for the coded new-data frame of fully coded mode). This allocates the
    /// frame; [`NcSender::write_repair_into`] writes it in place.
    pub fn write_repair(&mut self, budget: usize, now: Instant) -> Option<(u64, Vec<u8>)> {
        let cap = budget.min(self.cfg.max_symbol_size + 2 + crate::frames::REPAIR_OVERHEAD_MAX);
        let mut buf = vec![0u8; cap];
        let w = self.write_repair_into(&mut buf, now)?;
        buf.truncate(w.len);
        Some((w.seq, buf))
    }

    /// Write a REPAIR frame (type included) at the start of `out` (the free
    /// space of the packet being built), sized to fit it; `None` if there
    /// is nothing to code or it is too small. No allocation: the coded
    /// payload is computed in place. See [`NcSender::write_repair`] for
    /// how the window shrinks to fit.
    pub fn write_repair_into(&mut self, out: &mut [u8], now: Instant) -> Option<WrittenRepair> {
        self.refresh_ctx();
        if self.enc.is_empty() {
            return None;
        }
        let ws = self.enc.window_start();
        let end = self.enc.next_index();
        let coded_new = std::mem::take(&mut self.pending_coded_new);
        let tail = std::mem::take(&mut self.pending_tail);
        let scope = if coded_new || tail {
            Scope::Window
        } else {
            self.policy
                .repair_due(&self.ctx, now)
                .unwrap_or(Scope::Window)
        };
        let want = match scope {
            Scope::Window => end,
            Scope::Prefix(n) => ws.saturating_add(n.max(1)).min(end),
            Scope::UpTo(e) => e.clamp(ws + 1, end),
        };
        let seq = self.repair_seq;
        let coefs = Coefficients::Seeded {
            repair_key: seq as u16,
            dt: self.cfg.density,
        };
        // The longest prefix of [ws, want) whose frame fits: the coded
        // length is the running maximum of the symbols' coded lengths.
        let mut last = ws;
        let mut maxlen = 0;
        while last < want {
            let l = self
                .enc
                .payload(last)
                .map_or(2, |p| p.len() + 2)
                .max(maxlen);
            let hdr = repair_header_len(seq, ws, last + 1 - ws, coefs.as_ref(), l);
            if hdr + l > out.len() {
                break;
            }
            maxlen = l;
            last += 1;
        }
        if last == ws || (coded_new && last < want) {
            // A coded new-data frame must include the new symbol: never
            // shrink it into a redundant one; let the caller retry with a
            // larger budget (>= max symbol size + REPAIR_OVERHEAD_MAX).
            self.pending_coded_new = coded_new;
            self.pending_tail = tail;
            return None;
        }
        let count = last - ws;
        let mut w = Writer::new(out);
        write_repair_header(&mut w, seq, ws, count, coefs.as_ref(), maxlen)?;
        let hdr = w.pos();
        let len = self
            .enc
            .encode_into(ws, count as usize, &coefs, &mut out[hdr..])
            .ok()?;
        debug_assert_eq!(len, maxlen);
        self.repair_times.push_back((seq, now));
        if self.repair_times.len() > 4 * self.cfg.max_window + 64 {
            self.repair_times.pop_front();
        }
        self.repair_seq += 1;
        self.protected_through = end;
        if coded_new {
            self.stats.coded_new += 1;
        } else {
            self.repairs_out.push_back((seq, tail));
            if self.repairs_out.len() > 4 * self.cfg.max_window + 64 {
                self.repairs_out.pop_front();
            }
            self.stats.repairs += 1;
            self.stats.repair_bytes += (hdr + len) as u64;
            if tail {
                self.stats.tail_repairs += 1;
            }
            self.ctx.sent_total += 1;
            self.ctx.repairs_total += 1;
            self.policy.on_repair_sent(&self.ctx, now, tail);
        }
        Some(WrittenRepair {
            seq,
            first: ws,
            count,
            len: hdr + len,
            tail,
        })
    }

    /// Process an NC_ACK from the peer.
    pub fn on_ack(&mut self, ack: &AckFrame, now: Instant) -> Result<()> {
        if ack.max_seq > self.enc.next_index() || ack.repair_seq_end > self.repair_seq {
            return Err(Error::UnsentAcknowledged);
        }
        if ack.i_p < self.ctx.i_p || ack.i_q < self.ctx.i_q {
            // Reordered, older ACK: ignore.
            return Ok(());
        }
        // RTT sample (TCP/NC-style matching): the newest sensed source and
        // the newest received repair give candidate send times; the most
        // recent one is the packet that triggered this ACK. A source first
        // sensed through a later repair would inflate the sample, so the
        // smaller candidate wins.
        let mut sample: Option<Duration> = None;
        if ack.max_seq > self.ctx.max_seq && ack.max_seq > 0 {
            sample = self
                .send_time(ack.max_seq - 1)
                .map(|t| now.duration_since(t));
        }
        if ack.repair_seq_end > self.repair_acked_end {
            self.repair_acked_end = ack.repair_seq_end;
            while self
                .repairs_out
                .front()
                .is_some_and(|r| r.0 < ack.repair_seq_end)
            {
                self.repairs_out.pop_front();
            }
            while self
                .repair_times
                .front()
                .is_some_and(|x| x.0 + 1 < ack.repair_seq_end)
            {
                self.repair_times.pop_front();
            }
            if let Some(&(sq, t)) = self.repair_times.front() {
                if sq + 1 == ack.repair_seq_end {
                    let d = now.duration_since(t);
                    sample = Some(sample.map_or(d, |x| x.min(d)));
                }
            }
        }
        if let Some(d) = sample {
            self.last_rtt_sample = Some(d);
            self.rtt_sample(d);
        }
        if ack.i_q > self.ctx.i_q || ack.i_p > self.ctx.i_p || ack.diff < self.ctx.diff {
            self.last_progress = now;
            self.probe_backoff = 0;
        }
        // Loss estimate from cumulative counters.
        let sent_cov = if self.cfg.mode == Mode::Systematic {
            ack.max_seq
        } else {
            0
        } + ack.repair_seq_end;
        let recv = ack.rx_source + ack.rx_repair;
        let (ps, pr) = self.loss_prev;
        if sent_cov >= ps + 16 && recv >= pr {
            let ds = (sent_cov - ps) as f64;
            let dr = (recv - pr) as f64;
            let keep = (1.0 - 1.0 / LOSS_MEMORY_PACKETS).powf(ds);
            let (lost, sent) = self.loss_counts;
            let (lost, sent) = (lost * keep + (ds - dr).max(0.0), sent * keep + ds);
            self.loss_counts = (lost, sent);
            self.loss_ack = (lost / sent).clamp(0.0, 0.95);
            self.loss_prev = (sent_cov, recv);
            // Transport losses below this point are now in the counters.
            self.cov_src = self.cov_src.max(ack.max_seq);
            self.cov_rep = self.cov_rep.max(ack.repair_seq_end);
            let (cs, cr) = (self.cov_src, self.cov_rep);
            self.lost_src.retain(|&i| i >= cs);
            self.lost_rep_uncovered = self.lost_rep.iter().filter(|&&q| q >= cr).count();
        }
        self.ctx.i_p = ack.i_p;
        self.ctx.i_q = ack.i_q;
        self.ctx.i_r = ack.i_r;
        self.ctx.max_seq = ack.max_seq;
        self.ctx.diff = ack.diff;
        self.advance_unknown_from(ack.max_seq);
        self.enc.slide_to(ack.i_q.max(self.abandon_point));
        while self.times_base < ack.i_p && !self.send_times.is_empty() {
            self.send_times.pop_front();
            self.acked_clear.pop_front();
            self.lost_clear.pop_front();
            self.times_base += 1;
        }
        // At most one Seen and one Decoded event wait in the queue (a newer
        // one replaces the older), so NC_ACKs cannot grow it.
        if ack.i_q > self.last_seen_ev {
            self.last_seen_ev = ack.i_q;
            self.push_progress_event(SenderEvent::Seen(ack.i_q));
        }
        if ack.i_p > self.last_decoded_ev {
            self.last_decoded_ev = ack.i_p;
            self.push_progress_event(SenderEvent::Decoded(ack.i_p));
        }
        if ack.i_p >= self.abandon_point {
            self.window_frame_due = None;
        }
        self.refresh_ctx();
        self.policy.on_ack(&self.ctx, now);
        Ok(())
    }

    /// Transport-level acknowledgement of the packet carrying source `index`
    /// (systematic mode): the peer has that symbol, so it is never reported
    /// [`SenderEvent::Lost`]. The peer's NC_ACK remains authoritative for
    /// seen/decoded progress.
    pub fn on_source_acked(&mut self, index: u64, _now: Instant) {
        if let Some(off) = index.checked_sub(self.times_base) {
            let off = off as usize;
            if let Some(a) = self.acked_clear.get_mut(off) {
                if !*a && !self.lost_clear[off] && index >= self.unknown_from {
                    self.unknown -= 1;
                }
                *a = true;
            }
        }
    }

    /// Transport-level loss of the packet carrying source `index`
    /// (systematic mode; in fully coded mode, of the coded new-data frame
    /// that brought symbol `index`: other repairs are reported with
    /// [`NcSender::on_repair_lost`]). The data must NOT be retransmitted as
    /// is: the coding layer repairs it.
    ///
    /// The loss feeds the loss estimate at once (see
    /// [`NcSender::loss_estimate`]) and, if the peer has not reported the
    /// symbol yet (`index >= MAX_SEQ` of the latest NC_ACK and not seen),
    /// it counts as one more missing degree of freedom on top of the
    /// reported DIFF, so the feedback policies repair it without waiting for
    /// the NC_ACKs that will report it: the adaptive policy owes
    /// `DIFF + unreported losses - repairs in flight`, VON raises RealGap,
    /// FNC treats the transport's loss declaration as its DIFF trigger,
    /// CTCP and fixed R only update the loss rate. Unknown, already seen,
    /// acknowledged or repeated indexes are ignored.
    pub fn on_source_lost(&mut self, index: u64, now: Instant) {
        if index < self.ctx.i_q {
            return; // the peer already has (an equation for) it
        }
        let Some(off) = index.checked_sub(self.times_base) else {
            return;
        };
        let off = off as usize;
        if off >= self.lost_clear.len() || self.lost_clear[off] || self.acked_clear[off] {
            return;
        }
        self.lost_clear[off] = true;
        if index >= self.unknown_from {
            self.unknown -= 1;
        }
        if index >= self.cov_src {
            self.lost_src.push_back(index);
            if self.lost_src.len() > self.cfg.max_window + 64 {
                self.lost_src.pop_front();
            }
        }
        self.refresh_ctx();
        if index >= self.ctx.max_seq {
            self.policy.on_source_lost(&self.ctx, index, now);
        }
    }

    /// Transport-level loss of the packet carrying repair `seq` (a faster
    /// signal than the policies' own `RTT + 4 Delta` timers: VON lowers
    /// ExpGap, the adaptive policy owes the repair again). Also feeds the
    /// loss estimate; unknown or repeated sequence numbers are ignored.
    pub fn on_repair_lost(&mut self, seq: u64, now: Instant) {
        if seq >= self.repair_seq || self.lost_rep.contains(&seq) {
            return;
        }
        if let Ok(k) = self.repairs_out.binary_search_by_key(&seq, |r| r.0) {
            self.repairs_out.remove(k);
        }
        self.lost_rep.push_back(seq);
        if seq >= self.cov_rep {
            self.lost_rep_uncovered += 1;
        }
        if self.lost_rep.len() > LOST_REPAIRS_MAX
            && self.lost_rep.pop_front().is_some_and(|q| q >= self.cov_rep)
        {
            self.lost_rep_uncovered -= 1;
        }
        self.policy.on_repair_lost(now);
        self.refresh_ctx();
        self.policy.after_timeout(&self.ctx);
    }

    /// Next notification, if any. Unpolled `Seen`/`Decoded` events are
    /// coalesced (the queue holds at most one of each, with the newest
    /// value); `Lost` events are one per abandoned symbol.
    pub fn poll_event(&mut self) -> Option<SenderEvent> {
        self.events.pop_front()
    }

    /// An NC_WINDOW frame to send (after abandoning symbols), repeated once
    /// per RTT until the peer's I_p passes the abandon point.
    pub fn poll_window_frame(&mut self, now: Instant) -> Option<Vec<u8>> {
        let mut v = vec![0u8; 16];
        let n = self.poll_window_frame_into(&mut v, now)?;
        v.truncate(n);
        Some(v)
    }

    /// Whether an NC_WINDOW frame is due ([`NcSender::poll_window_frame`]).
    pub fn window_frame_due(&self, now: Instant) -> bool {
        self.window_frame_due.is_some_and(|d| d <= now)
    }

    /// As [`NcSender::poll_window_frame`], written at the start of `out`;
    /// returns its length (`None` if none is due or it does not fit).
    pub fn poll_window_frame_into(&mut self, out: &mut [u8], now: Instant) -> Option<usize> {
        if !self.window_frame_due(now) {
            return None;
        }
        let n = crate::frames::FrameRef::Window {
            abandon_below: self.abandon_point,
        }
        .encode_into(out)?;
        self.window_frame_due = Some(now + self.ctx.srtt.max(Duration::from_millis(1)));
        Some(n)
    }

    /// Earliest time [`NcSender::on_timeout`] must be called. This includes
    /// the stall-probe and NC_WINDOW deadlines: after `on_timeout` the
    /// integration should treat the moment as a send opportunity
    /// ([`NcSender::poll_transmit`], [`NcSender::repair_pending`]). A
    /// deadline that `on_timeout` has already seen pass is not returned
    /// again while it waits for that opportunity (e.g. a full congestion
    /// window), so an event loop never spins on it.
    pub fn timeout(&self) -> Option<Instant> {
        let abandon = self.send_times.front().map(|&t| t + self.cfg.abandon_after);
        let probe = if !self.enc.is_empty() {
            Some(self.last_progress + self.probe_wait())
        } else {
            None
        };
        [self.policy.timeout(), abandon, self.window_frame_due, probe]
            .into_iter()
            .flatten()
            .filter(|&d| self.timer_ran.is_none_or(|r| d > r))
            .min()
    }

    fn probe_wait(&self) -> Duration {
        let rto = (self.ctx.srtt + 4 * self.ctx.rttvar).max(Duration::from_millis(10));
        (rto * (1u32 << self.probe_backoff.min(4))).min(rto.max(Duration::from_secs(2)))
    }

    /// Handle expired timers.
    pub fn on_timeout(&mut self, now: Instant) {
        self.timer_ran = Some(self.timer_ran.map_or(now, |r| r.max(now)));
        self.policy.on_timeout(now);
        self.refresh_ctx();
        self.policy.after_timeout(&self.ctx);
        // Abandon symbols undecoded for too long.
        let mut new_point = self.abandon_point;
        for (i, &t) in (self.times_base..).zip(&self.send_times) {
            if now.duration_since(t) >= self.cfg.abandon_after && i >= self.ctx.i_p {
                new_point = i + 1;
            }
        }
        if new_point > self.abandon_point {
            for idx in self.abandon_point.max(self.ctx.i_p)..new_point {
                let acked = idx
                    .checked_sub(self.times_base)
                    .and_then(|o| self.acked_clear.get(o as usize).copied())
                    .unwrap_or(false);
                if !acked {
                    self.events.push_back(SenderEvent::Lost(idx));
                    self.stats.abandoned += 1;
                }
            }
            self.abandon_point = new_point;
            self.enc.slide_to(new_point);
            self.advance_unknown_from(new_point);
            while self.times_base < new_point && !self.send_times.is_empty() {
                self.send_times.pop_front();
                self.acked_clear.pop_front();
                self.lost_clear.pop_front();
                self.times_base += 1;
            }
            self.window_frame_due = Some(now);
        }
    }

    /// Moves the start of the `unknown` count forward to `to`, uncounting
    /// the sources it passes.
    fn advance_unknown_from(&mut self, to: u64) {
        if to <= self.unknown_from {
            return;
        }
        let lo = self.unknown_from.max(self.times_base);
        let hi = to.min(self.times_base + self.send_times.len() as u64);
        for i in lo..hi {
            let off = (i - self.times_base) as usize;
            if !self.acked_clear[off] && !self.lost_clear[off] {
                self.unknown -= 1;
            }
        }
        self.unknown_from = to;
    }

    fn push_progress_event(&mut self, ev: SenderEvent) {
        let same = |e: &SenderEvent| {
            matches!(
                (e, ev),
                (SenderEvent::Seen(_), SenderEvent::Seen(_))
                    | (SenderEvent::Decoded(_), SenderEvent::Decoded(_))
            )
        };
        match self.events.iter_mut().find(|e| same(e)) {
            Some(e) => *e = ev,
            None => self.events.push_back(ev),
        }
    }

    fn send_time(&self, idx: u64) -> Option<Instant> {
        let off = idx.checked_sub(self.times_base)?;
        self.send_times.get(off as usize).copied()
    }

    fn rtt_sample(&mut self, s: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(s);
                self.rttvar = s / 2;
            }
            Some(srtt) => {
                let d = srtt.abs_diff(s);
                self.rttvar = (self.rttvar * 3 + d) / 4;
                self.srtt = Some((srtt * 7 + s) / 8);
            }
        }
        self.ctx.srtt = self.srtt.unwrap_or(self.cfg.initial_rtt);
        self.ctx.rttvar = self.rttvar;
    }

    fn refresh_ctx(&mut self) {
        self.ctx = self.fresh_ctx();
    }

    /// The policy context as the sender's state makes it now (a pure
    /// function of that state, so read-only queries see what a mutating
    /// call would).
    fn fresh_ctx(&self) -> Ctx {
        let mut ctx = self.ctx;
        ctx.i_s = self.enc.next_index();
        // Sources declared lost that the peer has not reported yet.
        let (mq, iq) = (ctx.max_seq, ctx.i_q);
        let unreported = self.lost_src.iter().filter(|&&i| i >= mq && i >= iq);
        ctx.lost_unreported = unreported.clone().count() as u64;
        ctx.lost_end = unreported.map(|&i| i + 1).max().unwrap_or(mq).max(mq);
        // Sources beyond the peer's report whose fate is unknown.
        ctx.sources_inflight = self.unknown;
        debug_assert_eq!(self.unknown, {
            let from = self.unknown_from.max(self.times_base) - self.times_base;
            self.acked_clear
                .iter()
                .zip(&self.lost_clear)
                .skip(from as usize)
                .filter(|(a, l)| !**a && !**l)
                .count() as u64
        });
        // Extra repairs beyond the newest the peer reports, not found lost.
        let end = self.repair_acked_end;
        let out = self.repairs_out.iter().filter(|r| r.0 >= end);
        ctx.repairs_inflight = out.clone().count() as u64;
        ctx.tail_inflight = out.filter(|r| r.1).count() as u64;
        // Loss estimate: the NC_ACK EWMA, raised by the transport losses the
        // NC_ACK counters do not cover yet (the EWMA weighs as a prior of
        // LOSS_PRIOR_PACKETS packets against the uncovered packets sent).
        // Never below the EWMA, and each loss is counted by the fresh part
        // only until an NC_ACK sample covers it, so nothing counts twice.
        let uncovered =
            ctx.i_s.saturating_sub(self.cov_src) + self.repair_seq.saturating_sub(self.cov_rep);
        let lost = (self.lost_src.len() + self.lost_rep_uncovered) as f64;
        let fresh =
            (self.loss_ack * LOSS_PRIOR_PACKETS + lost) / (LOSS_PRIOR_PACKETS + uncovered as f64);
        ctx.loss = self.loss_ack.max(fresh).min(0.95);
        ctx
    }

    /// The active policy kind.
    pub fn policy(&self) -> PolicyKind {
        self.policy.kind()
    }
}
