//! The QUIC-NC transport extension: network coding on a quiche connection
//! through the hooks of `patches/quiche/` (`docs/hooks.md`). The wire
//! protocol is `docs/protocol.md`; this module only joins
//! [`nc_frames::NcSender`] / [`nc_frames::NcReceiver`] to quiche.
//!
//! * **Negotiation.** Both ends send `nc_parameters`; without the peer's,
//!   the extension stays inert and the connection is plain QUIC. NC frames
//!   from a peer that did not negotiate are a PROTOCOL_VIOLATION.
//! * **Sending** (per 1-RTT packet): an NC_ACK rides after the ACK frame
//!   when the decoder's state changed; before the data frames, a REPAIR
//!   when the redundancy policy owes one (the packet then carries no new
//!   data) or an NC_WINDOW; after them, SOURCE_SYMBOL_ID tags the packet's
//!   data frames as the next source symbol (fully coded mode: a REPAIR over
//!   the window, new symbol included, replaces them on the wire). When the
//!   coding window is full, data is held back.
//! * **Receiving**: clear symbols go to the decoder by value (one copy
//!   into a recycled buffer), repairs are decoded from the packet in place,
//!   and recovered symbols are handed back to quiche as packets.
//! * **Losses**: lost stream data of a source symbol is deferred
//!   ([`deferral`]) until the peer reports it decoded, or retransmitted by
//!   the fallback. The congestion controller hears which losses were
//!   recovered ([`crate::channel`]).

pub mod config;
pub mod deferral;
pub mod stats;
pub mod wire;

pub use config::CodingConfig;
pub use nc_frames::{Mode, PolicyKind};
pub use stats::CodingStats;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nc_frames::frames::{
    self, FrameRef, TransportParams, FRAME_NC_ACK, FRAME_NC_WINDOW, FRAME_REPAIR,
    FRAME_SOURCE_SYMBOL_ID, MODE_FULLY_CODED, MODE_SYSTEMATIC, TRANSPORT_PARAM_ID,
};
use nc_frames::{ErrorKind, NcReceiver, NcSender, SenderConfig, SenderEvent, Transmit, WorkBudget};
use quiche::extension::{
    FrameSpan, FrameType, SendContext, SendStage, StreamAction, TransportExtension,
};
use serde_json::json;

use crate::channel::Channel;
use crate::qlog::{names, EventLog};
use deferral::{Book, LossDecision};
use wire::Range;

/// The sender's loss estimate is passed to the controller once this many
/// symbols were sent (an earlier estimate says little).
const ERASURE_RATE_MIN_SOURCES: u64 = 100;

/// Book entries kept per window symbol (entries outlive the window by the
/// transport's loss-detection delay).
const BOOK_PER_WINDOW: usize = 4;

/// Bytes a fully coded symbol leaves free below the first packet's room,
/// for the ACK and NC_ACK frames later packets carry.
const FULL_SYMBOL_MARGIN: usize = 64;

/// Token flag of a fully coded mode REPAIR that carries a new symbol (the
/// token's other bits are the symbol's index; other REPAIRs' tokens are
/// their sequence numbers, always below 2^62).
const CODED_NEW: u64 = 1 << 63;

/// The peer's largest ACK delay we allow for before a deferral falls back
/// to retransmission (quiche's default `max_ack_delay`): NC_ACKs ride with
/// ACKs.
const PEER_ACK_DELAY: Duration = Duration::from_millis(25);

/// How long a deferral waits after the last repair that could cover it:
/// `sRTT + 4 RTTVAR` of the degree-of-freedom RTT, plus the peer's ACK
/// delay.
fn fallback_delay(tx: &NcSender) -> Duration {
    tx.srtt() + 4 * tx.rttvar() + PEER_ACK_DELAY
}

/// A protocol error for quiche: FRAME_ENCODING_ERROR or PROTOCOL_VIOLATION.
fn to_quiche(e: nc_frames::Error) -> quiche::Error {
    match e.kind() {
        ErrorKind::FrameEncoding => quiche::Error::InvalidFrame,
        ErrorKind::ProtocolViolation | ErrorKind::Local => quiche::Error::InvalidPacket,
    }
}

/// Coding state once negotiated.
struct Active {
    mode: Mode,
    max_symbol: usize,
    tx: NcSender,
    rx: NcReceiver,
    book: Book,
    recovered: VecDeque<Vec<u8>>,
    /// Decoder state last logged (I_p, I_q, I_r, MAX_SEQ).
    logged_decoder: (u64, u64, u64, u64),
    last_dof_rtt: Option<Duration>,
    /// Fully coded mode: the fixed symbol size.
    full_symbol: Option<usize>,
}

enum State {
    /// Waiting for the peer's transport parameters.
    Pending,
    /// Coding off (locally or not negotiated).
    Inert,
    Active(Box<Active>),
}

/// The per-connection extension: coding state, controller channel and
/// qlog events in the connection's one extension slot.
pub struct NcExtension {
    cfg: Option<CodingConfig>,
    channel: Option<Channel>,
    shared: Arc<Mutex<CodingStats>>,
    local: CodingStats,
    log: EventLog,
    state: State,
}

impl NcExtension {
    /// An extension coding with `cfg` (`None`: coding off, only the
    /// controller's qlog events), feeding `channel` and publishing its
    /// statistics to `shared`; `qlog`: the connection has a qlog.
    pub fn new(
        cfg: Option<CodingConfig>,
        channel: Option<Channel>,
        shared: Arc<Mutex<CodingStats>>,
        qlog: bool,
    ) -> NcExtension {
        let local = CodingStats {
            policy: cfg
                .as_ref()
                .map(|c| config::policy_name(c.policy))
                .unwrap_or_default(),
            ..CodingStats::default()
        };
        NcExtension {
            state: if cfg.is_some() {
                State::Pending
            } else {
                State::Inert
            },
            cfg,
            channel,
            shared,
            local,
            log: EventLog::new(qlog),
        }
    }

    fn local_params(cfg: &CodingConfig) -> TransportParams {
        TransportParams {
            max_window: cfg.max_window as u64,
            max_symbol_size: cfg.max_symbol_size as u64,
            modes: MODE_SYSTEMATIC | MODE_FULLY_CODED,
            ..TransportParams::default()
        }
    }

    /// Publishes the counters to the application's handle.
    fn sync(&mut self) {
        if let State::Active(a) = &self.state {
            let t = a.tx.stats();
            let s = &mut self.local;
            s.sources_sent = t.sources;
            s.repairs_sent = t.repairs;
            s.repair_bytes = t.repair_bytes;
            s.tail_repairs = t.tail_repairs;
            s.probes = t.probes;
            s.coded_new = t.coded_new;
            s.abandoned = t.abandoned;
            s.loss_estimate = a.tx.loss_estimate();
            let r = a.rx.stats();
            s.sources_received = r.source_received;
            s.repairs_received = r.repair_received;
            s.recovered = r.recovered;
            s.redundant = r.redundant;
            s.shed = a.rx.shed();
        }
        self.local.overflow =
            self.log.dropped() + self.channel.as_ref().map_or(0, |c| c.feedback_overflow());
        match self.shared.lock() {
            Ok(mut g) => *g = self.local.clone(),
            Err(p) => *p.into_inner() = self.local.clone(),
        }
    }

    /// Acts on the sender's notifications (after an NC_ACK or a timer).
    fn sender_events(&mut self, now: Instant) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        while let Some(ev) = a.tx.poll_event() {
            match ev {
                SenderEvent::Seen(_) => {}
                SenderEvent::Decoded(i_p) => {
                    let r = a.book.on_decoded(i_p);
                    if r.ranges > 0 {
                        self.local.released += r.ranges;
                        self.local.peer_recovered += r.indexes.len() as u64;
                        if let Some(c) = &self.channel {
                            c.push_recovered(&r.pkt_nums, r.bytes);
                        }
                        self.log.push(
                            now,
                            names::DEFERRAL_RELEASED,
                            || json!({ "indexes": r.indexes, "ranges": r.ranges }),
                        );
                    }
                }
                SenderEvent::Lost(index) => {
                    let r = a.book.on_abandoned(index);
                    self.local.timed_out += r.ranges;
                    if let Some(c) = &self.channel {
                        c.push_unrecovered(&r.pkt_nums);
                    }
                    self.log.push(
                        now,
                        names::DEFERRAL_TIMED_OUT,
                        || json!({ "index": index, "ranges": r.ranges, "abandoned": true }),
                    );
                }
            }
        }
    }

    fn on_nc_ack(&mut self, ack: &frames::AckFrame, now: Instant) -> quiche::Result<()> {
        let State::Active(a) = &mut self.state else {
            return Ok(());
        };
        a.tx.on_ack(ack, now).map_err(to_quiche)?;
        let loss = a.tx.loss_estimate();
        if let Some(c) = &self.channel {
            if a.tx.stats().sources >= ERASURE_RATE_MIN_SOURCES {
                c.set_erasure_rate(loss);
            }
            if let Some(s) =
                a.tx.last_rtt_sample()
                    .filter(|&s| Some(s) != a.last_dof_rtt)
            {
                a.last_dof_rtt = Some(s);
                c.set_dof_rtt(s);
            }
        }
        let srtt = a.tx.srtt();
        self.log.push(now, names::ACK_RECEIVED, || {
            json!({
                "i_p": ack.i_p, "i_q": ack.i_q, "i_r": ack.i_r,
                "max_seq": ack.max_seq, "diff": ack.diff,
                "rx_source": ack.rx_source, "rx_repair": ack.rx_repair,
                "repair_seq_end": ack.repair_seq_end,
                "loss_estimate": loss,
                "srtt_ms": srtt.as_secs_f64() * 1e3,
            })
        });
        self.sender_events(now);
        Ok(())
    }

    fn before_stream(&mut self, ctx: &mut SendContext) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        let now = ctx.now();
        let has_data = ctx.data_pending();
        if a.tx.window_frame_due(now) {
            let mut below = None;
            ctx.write_frame(FRAME_NC_WINDOW, 0, true, false, |buf| {
                let n = a.tx.poll_window_frame_into(buf, now).unwrap_or(0);
                if let Ok((FrameRef::Window { abandon_below }, _)) = FrameRef::parse(&buf[..n]) {
                    below = Some(abandon_below);
                }
                n
            });
            if let Some(abandon_below) = below {
                self.log.push(
                    now,
                    names::WINDOW_SENT,
                    || json!({ "abandon_below": abandon_below }),
                );
            }
        }
        let rto = fallback_delay(&a.tx);
        // Fully coded mode: every symbol gets one fixed size, set with some
        // margin below the first packet's room, so that the coded frame of
        // any window fits every ordinary packet (one with an ACK frame too).
        let reserve = a.tx.source_reserve();
        if a.mode == Mode::FullyCoded && a.full_symbol.is_none() {
            let size = ctx.capacity().saturating_sub(reserve + FULL_SYMBOL_MARGIN);
            a.full_symbol = Some(size.clamp(1, a.max_symbol));
        }
        let symbol = a.full_symbol.unwrap_or(a.max_symbol);
        // Whether this packet can carry new data at all: the sender must
        // not be told there is data it cannot send (it would neither send
        // repairs nor probe while waiting).
        let room = ctx.capacity();
        let data_fits = a.tx.can_send_source()
            && a.tx.new_data_fits(room)
            && (a.mode == Mode::Systematic || room >= symbol + reserve);
        let mut repair = None;
        match a.tx.poll_transmit(has_data && data_fits, now) {
            Some(Transmit::Repair) => {
                let seq = a.tx.next_repair_seq();
                ctx.write_frame(FRAME_REPAIR, seq, true, true, |buf| {
                    match a.tx.write_repair_into(buf, now) {
                        Some(w) => {
                            repair = Some(w);
                            w.len
                        }
                        None => 0,
                    }
                });
            }
            Some(Transmit::NewData) | None => {}
        }
        if let Some(w) = repair {
            a.book.on_repair_sent(w.first, w.count, now, rto);
            let probes = a.tx.stats().probes;
            let reason = if w.tail {
                "tail"
            } else if probes > self.local.probes {
                "probe"
            } else {
                "policy"
            };
            self.local.probes = probes;
            self.log.push(now, names::REPAIR_SENT, || {
                json!({ "seq": w.seq, "first": w.first, "count": w.count,
                        "key": w.seq as u16, "length": w.len, "reason": reason })
            });
            // The repair fills the packet: no data joins it.
            ctx.hold_data();
            return;
        }
        if !has_data {
            return;
        }
        if !data_fits {
            ctx.hold_data();
            return;
        }
        // Room for the tag (and the repair headroom), and never more data
        // than a symbol may hold.
        ctx.reserve_after_stream(reserve.max(room.saturating_sub(symbol)));
    }

    fn after_stream(&mut self, ctx: &mut SendContext) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        let now = ctx.now();
        let len = ctx.stream_frames().len();
        if len == 0 || len > a.max_symbol || !a.tx.can_send_source() {
            // Untagged: ordinary QUIC data (not reached when the window or
            // the symbol size hold data back in the previous stage).
            return;
        }
        let ranges = wire::data_frames(ctx.stream_frames()).unwrap_or_default();
        let Ok(index) = a.tx.on_source_sent(ctx.stream_frames(), now) else {
            return;
        };
        a.book.on_source_sent(index, ctx.pkt_num(), ranges, len);
        let pn = ctx.pkt_num();
        match a.mode {
            Mode::Systematic => {
                let written = ctx.write_frame(FRAME_SOURCE_SYMBOL_ID, index, true, false, |buf| {
                    FrameRef::SourceSymbolId {
                        index,
                        length: len as u64,
                    }
                    .encode_into(buf)
                    .unwrap_or(0)
                });
                self.local.source_bytes += len as u64;
                self.log.push(
                    now,
                    names::SOURCE_SENT,
                    || json!({ "index": index, "pkt_num": pn, "length": len, "tagged": written }),
                );
            }
            Mode::FullyCoded => {
                ctx.replace_data_frames();
                let mut seq = None;
                ctx.write_frame(FRAME_REPAIR, CODED_NEW | index, true, true, |buf| {
                    match a.tx.write_repair_into(buf, now) {
                        Some(w) => {
                            seq = Some(w);
                            w.len
                        }
                        None => 0,
                    }
                });
                self.local.source_bytes += len as u64;
                self.log.push(now, names::SOURCE_SENT, || {
                    json!({ "index": index, "pkt_num": pn, "length": len,
                            "coded": seq.map(|w| json!({"seq": w.seq, "first": w.first, "count": w.count})) })
                });
            }
        }
    }

    fn after_ack(&mut self, ctx: &mut SendContext) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        if !a.rx.wants_ack() {
            return;
        }
        let mut sent = None;
        ctx.write_frame(FRAME_NC_ACK, 0, false, false, |buf| {
            let ack = a.rx.ack();
            match FrameRef::Ack(ack).encode_into(buf) {
                Some(n) => {
                    sent = Some(ack);
                    n
                }
                None => {
                    // No room in this packet: still pending.
                    a.rx.ack_lost();
                    0
                }
            }
        });
        if let Some(ack) = sent {
            self.local.acks_sent += 1;
            self.log.push(ctx.now(), names::ACK_SENT, || {
                json!({ "i_p": ack.i_p, "i_q": ack.i_q, "i_r": ack.i_r,
                        "max_seq": ack.max_seq, "diff": ack.diff,
                        "rx_source": ack.rx_source, "rx_repair": ack.rx_repair,
                        "repair_seq_end": ack.repair_seq_end })
            });
        }
    }

    /// Logs the decoder's progress when it moved.
    fn log_decoder(&mut self, now: Instant) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        if !self.log.enabled() {
            return;
        }
        let d = a.rx.decoder();
        let cur = (d.flow_point(), d.i_q(), d.i_r(), d.max_seq());
        if cur != a.logged_decoder {
            a.logged_decoder = cur;
            let diff = d.diff();
            self.log.push(now, names::DECODER_UPDATED, || {
                json!({ "i_p": cur.0, "i_q": cur.1, "i_r": cur.2, "max_seq": cur.3, "diff": diff })
            });
        }
    }
}

impl TransportExtension for NcExtension {
    fn frame_types(&self) -> Vec<FrameType> {
        if self.cfg.is_none() {
            return Vec::new();
        }
        [
            (FRAME_SOURCE_SYMBOL_ID, true),
            (FRAME_REPAIR, true),
            (FRAME_NC_ACK, false),
            (FRAME_NC_WINDOW, true),
        ]
        .into_iter()
        .map(|(frame_type, ack_eliciting)| FrameType {
            frame_type,
            ack_eliciting,
        })
        .collect()
    }

    fn frame_body_len(&self, frame_type: u64, body: &[u8]) -> Option<usize> {
        frames::body_len(frame_type, body)
    }

    fn local_transport_params(&self) -> Vec<(u64, Vec<u8>)> {
        let Some(cfg) = &self.cfg else {
            return Vec::new();
        };
        let mut v = Vec::new();
        Self::local_params(cfg).encode(&mut v);
        vec![(TRANSPORT_PARAM_ID, v)]
    }

    fn on_peer_transport_params(&mut self, params: &quiche::TransportParams) -> quiche::Result<()> {
        let Some(cfg) = self.cfg.clone() else {
            return Ok(());
        };
        let raw = params
            .unknown_params
            .as_ref()
            .and_then(|u| u.into_iter().find(|p| p.id == TRANSPORT_PARAM_ID))
            .map(|p| p.value.clone());
        let peer = match raw.map(|r| TransportParams::decode(&r)) {
            None => None,
            Some(Ok(p)) => Some(p),
            // A value that does not parse exactly is an error; an unknown
            // version, field or mode only disables coding (protocol.md §3).
            Some(Err(e)) if e.kind() == ErrorKind::FrameEncoding => {
                return Err(quiche::Error::InvalidTransportParam)
            }
            Some(Err(_)) => None,
        };
        let ours = Self::local_params(&cfg);
        let Some(n) = peer.as_ref().and_then(|p| ours.negotiate(p)) else {
            self.state = State::Inert;
            self.log.push(
                Instant::now(),
                names::PARAMETERS,
                || json!({ "negotiated": false, "peer_offered": peer.is_some() }),
            );
            self.sync();
            return Ok(());
        };
        let mode = match cfg.mode {
            Mode::FullyCoded if n.modes & MODE_FULLY_CODED != 0 => Mode::FullyCoded,
            _ if n.modes & MODE_SYSTEMATIC != 0 => Mode::Systematic,
            _ => Mode::FullyCoded,
        };
        // Each end decodes within the window it offered; we send within
        // the peer's.
        let window = n.send_window as usize;
        let recv_window = n.recv_window as usize;
        let symbol = n.max_symbol_size as usize;
        let now = Instant::now();
        let tx = NcSender::new(
            SenderConfig {
                mode,
                policy: cfg.policy,
                max_window: window,
                max_symbol_size: symbol,
                // Fully coded data exists only in the code (quiche already
                // freed what the peer acknowledged): never give it up.
                abandon_after: match mode {
                    Mode::Systematic => cfg.abandon_after,
                    Mode::FullyCoded => Duration::from_secs(86_400),
                },
                ..SenderConfig::default()
            },
            now,
        );
        let mut rx = NcReceiver::new(recv_window, symbol);
        rx.set_work_budget(WorkBudget {
            per_second: cfg.work_per_second,
            burst: 64.0 * recv_window as f64,
        });
        self.local.negotiated = true;
        self.local.mode = Some(config::mode_name(mode));
        self.local.window = window as u64;
        self.local.recv_window = recv_window as u64;
        self.local.symbol_size = symbol as u64;
        let policy = self.local.policy.clone();
        self.log.push(now, names::PARAMETERS, || {
            json!({ "negotiated": true, "mode": config::mode_name(mode), "policy": policy,
                    "window": window, "recv_window": recv_window, "symbol_size": symbol,
                    "modes": n.modes })
        });
        self.state = State::Active(Box::new(Active {
            mode,
            max_symbol: symbol,
            tx,
            rx,
            book: Book::with_capacity(BOOK_PER_WINDOW * window),
            recovered: VecDeque::new(),
            logged_decoder: (0, 0, 0, 0),
            last_dof_rtt: None,
            full_symbol: None,
        }));
        self.sync();
        Ok(())
    }

    fn on_packet_received(
        &mut self,
        _pkt_num: u64,
        now: Instant,
        payload: &[u8],
        spans: &[FrameSpan],
    ) -> quiche::Result<()> {
        if spans.is_empty() {
            return Ok(());
        }
        if !matches!(self.state, State::Active(_)) {
            // NC frames without negotiation.
            return Err(quiche::Error::InvalidPacket);
        }
        let mut prev_end = 0;
        let mut tagged = false;
        for span in spans {
            let (f, _) = FrameRef::parse(&payload[span.range.clone()]).map_err(to_quiche)?;
            let State::Active(a) = &mut self.state else {
                unreachable!("checked above")
            };
            match f {
                FrameRef::SourceSymbolId { index, length } => {
                    // One per packet, tagging data frames right before it
                    // and after any other extension frame.
                    let start = usize::try_from(length)
                        .ok()
                        .filter(|&l| l <= a.max_symbol && !tagged)
                        .and_then(|l| span.range.start.checked_sub(l))
                        .filter(|&s| s >= prev_end)
                        .ok_or(quiche::Error::InvalidPacket)?;
                    tagged = true;
                    let data = &payload[start..span.range.start];
                    wire::data_frames(data).ok_or(quiche::Error::InvalidPacket)?;
                    let mut buf = a.rx.take_buffer();
                    buf.extend_from_slice(data);
                    let arr = a.rx.on_source_owned(index, buf, now).map_err(to_quiche)?;
                    self.log.push(now, names::SOURCE_RECEIVED, || {
                        json!({ "index": index, "length": length, "innovative": arr.innovative,
                                "stale": arr.stale })
                    });
                }
                FrameRef::Repair(r) => {
                    let arr = a.rx.on_repair_ref(&r, now).map_err(to_quiche)?;
                    self.log.push(now, names::REPAIR_RECEIVED, || {
                        json!({ "seq": r.repair_seq, "first": r.first, "count": r.count,
                                "length": r.data.len(), "innovative": arr.innovative,
                                "decoded": arr.newly_decoded, "stale": arr.stale,
                                "shed": arr.shed })
                    });
                }
                FrameRef::Ack(ack) => self.on_nc_ack(&ack, now)?,
                FrameRef::Window { abandon_below } => {
                    a.rx.on_window(abandon_below, now).map_err(to_quiche)?;
                }
            }
            prev_end = span.range.end;
        }
        if let State::Active(a) = &mut self.state {
            while let Some(sym) = a.rx.poll_recovered() {
                let (index, len) = (sym.index, sym.payload.len());
                self.log.push(
                    now,
                    names::PACKET_RECOVERED,
                    || json!({ "index": index, "length": len }),
                );
                a.recovered.push_back(sym.payload);
            }
        }
        self.log_decoder(now);
        self.sync();
        Ok(())
    }

    fn next_recovered(&mut self) -> Option<Vec<u8>> {
        match &mut self.state {
            State::Active(a) => a.recovered.pop_front(),
            _ => None,
        }
    }

    fn wants_to_send(&self, now: Instant, data_pending: bool) -> bool {
        match &self.state {
            State::Active(a) => {
                a.tx.repair_pending(data_pending, now) || a.tx.window_frame_due(now)
            }
            _ => false,
        }
    }

    fn on_send(&mut self, ctx: &mut SendContext) {
        match ctx.stage() {
            SendStage::AfterAck => self.after_ack(ctx),
            SendStage::BeforeStream => self.before_stream(ctx),
            SendStage::AfterStream => {
                self.after_stream(ctx);
                self.sync();
            }
        }
    }

    fn on_frame_acked(&mut self, frame_type: u64, token: u64, now: Instant) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        // The packet that brought a symbol (in clear, or fully coded) got
        // through: it is no longer in flight, and a deferral of its data
        // (a PTO re-queued it) is resolved.
        let index = match frame_type {
            FRAME_SOURCE_SYMBOL_ID => token,
            FRAME_REPAIR if token & CODED_NEW != 0 => token & !CODED_NEW,
            _ => return,
        };
        a.tx.on_source_acked(index, now);
        let r = a.book.on_source_acked(index);
        self.local.released += r.ranges;
    }

    fn on_frame_lost(&mut self, frame_type: u64, token: u64, now: Instant) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        match frame_type {
            FRAME_SOURCE_SYMBOL_ID => a.tx.on_source_lost(token, now),
            FRAME_REPAIR if token & CODED_NEW != 0 => a.tx.on_source_lost(token & !CODED_NEW, now),
            FRAME_REPAIR => a.tx.on_repair_lost(token, now),
            FRAME_NC_ACK => a.rx.ack_lost(),
            _ => {}
        }
    }

    fn on_stream_data_lost(
        &mut self,
        stream_id: u64,
        offset: u64,
        len: usize,
        fin: bool,
        now: Instant,
    ) -> bool {
        let State::Active(a) = &mut self.state else {
            return false;
        };
        let rto = fallback_delay(&a.tx);
        let range = Range {
            stream: stream_id,
            offset,
            len,
            fin,
        };
        match a.book.on_stream_lost(range, now, rto) {
            LossDecision::Retransmit => false,
            LossDecision::AlreadyDeferred { .. } => true,
            LossDecision::Deferred { index } => {
                self.local.deferred += 1;
                self.log.push(now, names::DEFERRED, || {
                    json!({ "stream_id": stream_id, "offset": offset, "length": len, "index": index })
                });
                true
            }
            LossDecision::AlreadyDecoded {
                index,
                pkt_num,
                bytes,
            } => {
                self.local.deferred += 1;
                self.local.released += 1;
                self.local.peer_recovered += 1;
                if let Some(c) = &self.channel {
                    c.push_recovered(&[pkt_num], bytes);
                }
                self.log.push(
                    now,
                    names::DEFERRAL_RELEASED,
                    || json!({ "indexes": [index], "ranges": 1, "decoded_before_loss": true }),
                );
                true
            }
        }
    }

    fn next_stream_action(&mut self) -> Option<StreamAction> {
        match &mut self.state {
            State::Active(a) => a.book.next_action(),
            _ => None,
        }
    }

    fn timeout(&self) -> Option<Instant> {
        match &self.state {
            State::Active(a) => match (a.tx.timeout(), a.book.deadline()) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
            _ => None,
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        let State::Active(a) = &mut self.state else {
            return;
        };
        a.tx.on_timeout(now);
        let r = a.book.on_timeout(now);
        if r.ranges > 0 {
            // Not reported to the controller as unrecovered: the fallback
            // only bounds delivery delay, the symbol stays in the code and
            // is usually decoded a little later.
            self.local.timed_out += r.ranges;
            self.log.push(
                now,
                names::DEFERRAL_TIMED_OUT,
                || json!({ "indexes": r.indexes, "ranges": r.ranges }),
            );
        }
        self.sender_events(now);
        self.sync();
    }

    fn drain_qlog(&mut self, qlog: &mut qlog::streamer::QlogStreamer) {
        self.log.drain_into(qlog, self.channel.as_ref());
    }
}

impl Drop for NcExtension {
    fn drop(&mut self) {
        self.sync();
    }
}
