//! Sans-IO network-coding receiver.

use std::time::Instant;

use std::time::Duration;

use crate::codec::{Arrival, Decoder, DecoderMemory, DecoderStats};
use crate::error::Result;
use crate::frames::{AckFrame, Frame, FrameRef, RepairFrame, RepairRef};

/// A bound on the decoding work a peer can make the receiver do.
///
/// A REPAIR over `count` symbols costs up to `count` row operations (each
/// an AXPY over a symbol and its coefficients). Tokens, in symbols
/// combined, refill at `per_second` up to `burst`; a REPAIR that finds
/// fewer tokens than its `count` is *shed*: checked against the negotiated
/// limits but not decoded (the sender sees it as lost and its data is
/// recovered by a later repair or retransmitted). An honest sender stays
/// far below the default: at 20 Mbit/s with 20% loss it asks for about
/// 10^5 symbol operations per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkBudget {
    /// Refill rate, in symbols combined per second.
    pub per_second: f64,
    /// Largest balance.
    pub burst: f64,
}

impl WorkBudget {
    /// 2^22 symbol operations per second (a few percent of a core with the
    /// SIMD kernels at 1500-byte symbols), bursts of 64 full windows.
    pub fn default_for(max_window: usize) -> WorkBudget {
        WorkBudget {
            per_second: (1u64 << 22) as f64,
            burst: 64.0 * max_window as f64,
        }
    }
}

/// A source symbol recovered by decoding (never received in clear).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveredSymbol {
    /// Absolute source symbol index.
    pub index: u64,
    /// Exact payload (the bytes of the STREAM frames originally sent).
    pub payload: Vec<u8>,
}

/// Sans-IO NC receiver: turns arrivals into recovered symbols and NC_ACK
/// contents.
#[derive(Debug)]
pub struct NcReceiver {
    dec: Decoder,
    repair_seq_end: u64,
    ack_pending: bool,
    last_arrival: Option<Instant>,
    budget: Option<WorkBudget>,
    tokens: f64,
    refilled: Option<Instant>,
    shed: u64,
}

impl NcReceiver {
    /// New receiver for the negotiated window and symbol size.
    pub fn new(max_window: usize, max_symbol_size: usize) -> NcReceiver {
        NcReceiver {
            dec: Decoder::new(max_window, max_symbol_size),
            repair_seq_end: 0,
            ack_pending: false,
            last_arrival: None,
            budget: None,
            tokens: 0.0,
            refilled: None,
            shed: 0,
        }
    }

    /// Bound the decoding work per second (none by default).
    pub fn set_work_budget(&mut self, b: WorkBudget) {
        self.budget = Some(b);
        self.tokens = b.burst;
    }

    /// REPAIR frames shed by the work budget.
    pub fn shed(&self) -> u64 {
        self.shed
    }

    /// Take `cost` tokens if the budget allows it.
    fn charge(&mut self, cost: u64, now: Instant) -> bool {
        let Some(b) = self.budget else { return true };
        let dt = self
            .refilled
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.refilled = Some(now);
        self.tokens = (self.tokens + dt.as_secs_f64() * b.per_second).min(b.burst);
        if self.tokens < cost as f64 {
            return false;
        }
        self.tokens -= cost as f64;
        true
    }

    /// The underlying decoder (I_p, I_q, I_r, rank, DIFF, stats).
    pub fn decoder(&self) -> &Decoder {
        &self.dec
    }

    /// Decoder counters.
    pub fn stats(&self) -> DecoderStats {
        self.dec.stats()
    }

    /// A packet carried SOURCE_SYMBOL_ID(`index`) and `payload` (the rest of
    /// its frames, serialized). The application processes the payload
    /// itself; it is kept only to decode other symbols.
    pub fn on_source(&mut self, index: u64, payload: &[u8], now: Instant) -> Result<Arrival> {
        self.last_arrival = Some(now);
        self.ack_pending = true;
        self.dec.add_source(index, payload)
    }

    /// As [`NcReceiver::on_source`], handing the payload over by value: the
    /// decoder keeps the buffer itself instead of a copy
    /// ([`Decoder::add_source_owned`]). Process the payload before handing
    /// it over; take the buffer for the next packet from
    /// [`NcReceiver::take_buffer`] to reuse the ones the decoder is done
    /// with.
    pub fn on_source_owned(
        &mut self,
        index: u64,
        payload: Vec<u8>,
        now: Instant,
    ) -> Result<Arrival> {
        self.last_arrival = Some(now);
        self.ack_pending = true;
        self.dec.add_source_owned(index, payload)
    }

    /// An empty payload buffer, recycled from the decoder when possible
    /// ([`Decoder::take_buffer`]).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.dec.take_buffer()
    }

    /// Give a consumed payload (e.g. [`RecoveredSymbol::payload`]) back for
    /// reuse ([`Decoder::recycle_buffer`]).
    pub fn recycle_buffer(&mut self, buf: Vec<u8>) {
        self.dec.recycle_buffer(buf)
    }

    /// A REPAIR frame arrived.
    pub fn on_repair(&mut self, f: &RepairFrame, now: Instant) -> Result<Arrival> {
        self.on_repair_ref(&f.as_ref(), now)
    }

    /// A REPAIR frame arrived, borrowed from the packet (its payload is
    /// copied once, into a recycled buffer, only if it is kept).
    pub fn on_repair_ref(&mut self, f: &RepairRef<'_>, now: Instant) -> Result<Arrival> {
        self.last_arrival = Some(now);
        self.ack_pending = true;
        self.dec.check_repair(f.first, f.count, f.data.len())?;
        self.repair_seq_end = self.repair_seq_end.max(f.repair_seq.saturating_add(1));
        if !self.charge(f.count, now) {
            self.shed += 1;
            return Ok(Arrival {
                shed: true,
                ..Arrival::default()
            });
        }
        self.dec.add_repair(f.first, f.count, f.coefs, f.data)
    }

    /// As [`NcReceiver::on_repair`], taking the frame by value: its coded
    /// payload is eliminated in place instead of being copied first.
    pub fn on_repair_owned(&mut self, f: RepairFrame, now: Instant) -> Result<Arrival> {
        self.last_arrival = Some(now);
        self.ack_pending = true;
        self.dec.check_repair(f.first, f.count, f.data.len())?;
        self.repair_seq_end = self.repair_seq_end.max(f.repair_seq.saturating_add(1));
        if !self.charge(f.count, now) {
            self.shed += 1;
            return Ok(Arrival {
                shed: true,
                ..Arrival::default()
            });
        }
        self.dec
            .add_repair_owned(f.first, f.count, &f.coefs, f.data)
    }

    /// An NC_WINDOW frame arrived.
    pub fn on_window(&mut self, abandon_below: u64, now: Instant) -> Result<()> {
        self.last_arrival = Some(now);
        self.ack_pending = true;
        self.dec.abandon_below(abandon_below)
    }

    /// Dispatch a parsed receiver-side frame (REPAIR or NC_WINDOW; a
    /// SOURCE_SYMBOL_ID needs its payload: use [`NcReceiver::on_source`]).
    /// Other frames are ignored and return `Ok(None)`. See
    /// [`NcReceiver::on_frame_owned`] to hand a REPAIR over without copy.
    pub fn on_frame(&mut self, f: &Frame, now: Instant) -> Result<Option<Arrival>> {
        match f {
            Frame::Repair(r) => self.on_repair(r, now).map(Some),
            Frame::Window { abandon_below } => self.on_window(*abandon_below, now).map(|_| None),
            _ => Ok(None),
        }
    }

    /// As [`NcReceiver::on_frame`] for a borrowed frame (a REPAIR goes
    /// through [`NcReceiver::on_repair_ref`]).
    pub fn on_frame_ref(&mut self, f: &FrameRef<'_>, now: Instant) -> Result<Option<Arrival>> {
        match f {
            FrameRef::Repair(r) => self.on_repair_ref(r, now).map(Some),
            FrameRef::Window { abandon_below } => self.on_window(*abandon_below, now).map(|_| None),
            _ => Ok(None),
        }
    }

    /// As [`NcReceiver::on_frame`], taking the frame by value (a REPAIR
    /// goes through [`NcReceiver::on_repair_owned`]).
    pub fn on_frame_owned(&mut self, f: Frame, now: Instant) -> Result<Option<Arrival>> {
        match f {
            Frame::Repair(r) => self.on_repair_owned(r, now).map(Some),
            other => self.on_frame(&other, now),
        }
    }

    /// Next recovered symbol, as soon as decodable.
    ///
    /// Recovered symbols wait here until polled, and they count against the
    /// peer's window: the `I_p` advertised in NC_ACK is
    /// [`Decoder::flow_point`], the oldest symbol not yet both decoded and
    /// polled. An application that stops polling therefore stalls the
    /// sender (which may send nothing at or beyond that point plus the
    /// window) instead of growing this queue: at most `max_window` symbols
    /// ever wait here. When polling moves the flow point, an NC_ACK is due
    /// ([`NcReceiver::wants_ack`]) so that the sender learns of the room.
    pub fn poll_recovered(&mut self) -> Option<RecoveredSymbol> {
        let before = self.dec.flow_point();
        let r = self
            .dec
            .pop_recovered()
            .map(|(index, payload)| RecoveredSymbol { index, payload });
        if self.dec.flow_point() > before {
            self.ack_pending = true;
        }
        r
    }

    /// Heap memory held by the decoder (see [`Decoder::memory_bound`] for
    /// the limit that holds whatever the peer sends).
    pub fn memory(&self) -> DecoderMemory {
        self.dec.memory()
    }

    /// An NC_ACK we sent was lost: send a fresh one with the next packet.
    pub fn ack_lost(&mut self) {
        self.ack_pending = true;
    }

    /// Whether state changed since the last ACK was produced.
    pub fn wants_ack(&self) -> bool {
        self.ack_pending
    }

    /// Current NC_ACK contents (clears the pending flag).
    pub fn ack(&mut self) -> AckFrame {
        self.ack_pending = false;
        let d = &self.dec;
        let s = d.stats();
        AckFrame {
            // The delivery point, not the decoding point: see
            // `poll_recovered`.
            i_p: d.flow_point(),
            i_q: d.i_q(),
            i_r: d.i_r(),
            max_seq: d.max_seq(),
            diff: d.diff(),
            rx_source: s.source_received,
            rx_repair: s.repair_received,
            repair_seq_end: self.repair_seq_end,
        }
    }

    /// Append an encoded NC_ACK frame to `out` (clears the pending flag).
    pub fn write_ack(&mut self, out: &mut Vec<u8>) {
        let a = self.ack();
        Frame::Ack(a).encode(out);
    }

    /// Write an NC_ACK frame at the start of `out`; returns its length, or
    /// `None` (the ACK stays pending) if it does not fit.
    pub fn write_ack_into(&mut self, out: &mut [u8]) -> Option<usize> {
        let pending = self.ack_pending;
        let n = FrameRef::Ack(self.ack()).encode_into(out);
        if n.is_none() {
            self.ack_pending = pending;
        }
        n
    }
}
