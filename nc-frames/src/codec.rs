//! Sliding-window random linear encoder and online RREF decoder.
//!
//! Symbols are identified by absolute 62-bit indexes. Every source symbol is
//! coded in the form `len (u16, big endian) || payload`, zero-padded to the
//! length of the longest symbol in a combination (the RFC 8681 approach), so
//! a recovered symbol has its exact length.
//!
//! The decoder keeps its coefficient matrix in reduced row echelon form
//! (RREF) with columns ordered by symbol index: a symbol `k` is *seen*
//! (TCP/NC Definition 1) exactly when column `k` is a pivot column, because
//! the pivot row of `k` reads `p_k + sum_{l>k} a_l p_l`. It is *decoded* when
//! its pivot row has no other non-zero entry.

use std::collections::VecDeque;

use crate::coeffs::CoefRef;
use crate::error::{Error, Result};
use crate::gf256;
use crate::simd::Kernel;

/// Bytes of the length prefix coded along with every source symbol.
pub const LEN_PREFIX: usize = 2;

/// Largest payload the 2-byte length prefix can describe.
pub const MAX_SYMBOL_SIZE: usize = u16::MAX as usize;

/// Sliding window of source symbols at the sender.
#[derive(Debug)]
pub struct Encoder {
    max_window: usize,
    max_symbol: usize,
    start: u64,
    /// Coded forms (`len || payload`) of the symbols in the window.
    symbols: VecDeque<Vec<u8>>,
    /// Buffers of symbols that left the window, for reuse (at most the
    /// window size).
    pool: Vec<Vec<u8>>,
    kernel: Kernel,
    scratch: Vec<u8>,
}

/// Sources combined per call of the fused kernel.
const GROUP: usize = 8;

impl Encoder {
    /// New encoder holding at most `max_window` symbols of at most
    /// `max_symbol_size` bytes each (clamped to [`MAX_SYMBOL_SIZE`]).
    pub fn new(max_window: usize, max_symbol_size: usize) -> Encoder {
        Encoder {
            max_window: max_window.clamp(1, crate::frames::MAX_WINDOW_LIMIT as usize),
            max_symbol: max_symbol_size.min(MAX_SYMBOL_SIZE),
            start: 0,
            symbols: VecDeque::new(),
            pool: Vec::new(),
            kernel: Kernel::best(),
            scratch: Vec::new(),
        }
    }

    /// Use a specific kernel (benchmarks, tests).
    pub fn set_kernel(&mut self, k: Kernel) {
        self.kernel = k;
    }

    /// Index of the oldest symbol still in the window.
    pub fn window_start(&self) -> u64 {
        self.start
    }

    /// Index the next pushed symbol will get.
    pub fn next_index(&self) -> u64 {
        self.start + self.symbols.len() as u64
    }

    /// Number of symbols in the window.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// Whether another symbol can be pushed.
    pub fn has_room(&self) -> bool {
        self.symbols.len() < self.max_window
    }

    /// Append a source symbol (copied into a recycled buffer); returns its
    /// index.
    pub fn push(&mut self, payload: &[u8]) -> Result<u64> {
        if payload.len() > self.max_symbol {
            return Err(Error::SymbolTooLarge(payload.len()));
        }
        if !self.has_room() {
            return Err(Error::WindowFull);
        }
        let idx = self.next_index();
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v.reserve(LEN_PREFIX + payload.len());
        v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        v.extend_from_slice(payload);
        self.symbols.push_back(v);
        Ok(idx)
    }

    /// Drop every symbol with index `< new_start` (e.g. on a seen-ACK).
    pub fn slide_to(&mut self, new_start: u64) {
        while self.start < new_start {
            let Some(v) = self.symbols.pop_front() else {
                break;
            };
            if self.pool.len() < self.max_window {
                self.pool.push(v);
            }
            self.start += 1;
        }
        if self.symbols.is_empty() && new_start > self.start {
            self.start = new_start;
        }
    }

    /// Payload of symbol `idx` if still in the window.
    pub fn payload(&self, idx: u64) -> Option<&[u8]> {
        let off = idx.checked_sub(self.start)?;
        self.symbols.get(off as usize).map(|v| &v[LEN_PREFIX..])
    }

    /// Length of a repair symbol over `[first, first + count)`: the longest
    /// coded symbol in it (`None` if the range is not in the window).
    pub fn coded_len(&self, first: u64, count: usize) -> Option<usize> {
        let off = first.checked_sub(self.start)? as usize;
        if count == 0 || off.checked_add(count)? > self.symbols.len() {
            return None;
        }
        self.symbols.range(off..off + count).map(|s| s.len()).max()
    }

    /// Encode a repair symbol over `[first, first + count)` with the given
    /// coefficients into `out` (replaced). The result has the length of the
    /// longest coded symbol of the sub-window.
    pub fn encode<'c>(
        &mut self,
        first: u64,
        count: usize,
        coefs: impl Into<CoefRef<'c>>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let len = self
            .coded_len(first, count)
            .ok_or(Error::Malformed("repair window outside encoder window"))?;
        out.clear();
        out.resize(len, 0);
        self.encode_into(first, count, coefs, out).map(|_| ())
    }

    /// Encode a repair symbol over `[first, first + count)` into the start
    /// of `out` (for example the packet being built) without allocating;
    /// returns its length ([`Encoder::coded_len`]). `out` must be at least
    /// that long.
    pub fn encode_into<'c>(
        &mut self,
        first: u64,
        count: usize,
        coefs: impl Into<CoefRef<'c>>,
        out: &mut [u8],
    ) -> Result<usize> {
        let len = self
            .coded_len(first, count)
            .ok_or(Error::Malformed("repair window outside encoder window"))?;
        let out = out
            .get_mut(..len)
            .ok_or(Error::Malformed("repair buffer too short"))?;
        let off = (first - self.start) as usize;
        let mut c = std::mem::take(&mut self.scratch);
        if !coefs.into().expand(count, &mut c) {
            self.scratch = c;
            return Err(Error::Malformed("bad coefficients"));
        }
        out.fill(0);
        // A group of sources at a time, so no list of all of them is built.
        let mut group: [&[u8]; GROUP] = [&[]; GROUP];
        for (g, cs) in c.chunks(GROUP).enumerate() {
            let base = off + g * GROUP;
            for (j, slot) in group.iter_mut().enumerate().take(cs.len()) {
                *slot = &self.symbols[base + j];
            }
            self.kernel.lincomb_acc(out, &group[..cs.len()], cs);
        }
        self.scratch = c;
        Ok(len)
    }
}

/// Outcome of one arrival at the [`Decoder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrival {
    /// The arrival increased the rank.
    pub innovative: bool,
    /// The symbol that became seen by this arrival (its pivot column).
    pub newly_seen: Option<u64>,
    /// Number of symbols that became decoded.
    pub newly_decoded: usize,
    /// The arrival referred only to forgotten symbols and was ignored.
    pub stale: bool,
    /// The arrival was valid but not decoded: the receiver's decoding-work
    /// budget was spent ([`crate::receiver::WorkBudget`]).
    pub shed: bool,
}

#[derive(Debug)]
struct Row {
    /// Column of `coef[0]`; for stored rows this is the pivot (coef[0] == 1).
    start: u64,
    coef: Vec<u8>,
    /// The coded payload, or with `clear` the bare source payload.
    data: Vec<u8>,
    /// `data` is a source payload received in clear, stored as handed over
    /// (no copy, no length prefix): the coded symbol it stands for is
    /// `len (u16, big endian) || data`. Such a row is always the decoded
    /// pivot row of its own column (`coef == [1]`); a clear row that would
    /// need elimination is first rewritten in coded form
    /// ([`Decoder::materialise`]).
    clear: bool,
}

impl Row {
    /// Length of the coded symbol this row stands for.
    fn coded_len(&self) -> usize {
        self.data.len() + if self.clear { LEN_PREFIX } else { 0 }
    }
}

/// `dst ^= c * coded(src)`, growing `dst` with zeros to the coded length of
/// `src` first (a clear row contributes its virtual length prefix).
fn axpy_row(k: Kernel, dst: &mut Vec<u8>, src: &Row, c: u8) {
    let n = src.coded_len();
    if dst.len() < n {
        dst.resize(n, 0);
    }
    if src.clear {
        let l = (src.data.len() as u16).to_be_bytes();
        dst[0] ^= gf256::mul(c, l[0]);
        dst[1] ^= gf256::mul(c, l[1]);
        k.axpy(&mut dst[LEN_PREFIX..n], &src.data, c);
    } else {
        k.axpy(&mut dst[..n], &src.data, c);
    }
}

#[derive(Debug, Default)]
struct Slot {
    row: Option<Row>,
    sensed: bool,
    clear: bool,
    decoded: bool,
}

/// Counters exposed by the decoder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecoderStats {
    /// Innovative arrivals (= total rank gained).
    pub innovative: u64,
    /// Non-innovative arrivals (linearly dependent, duplicates).
    pub redundant: u64,
    /// Arrivals ignored because they referred to forgotten symbols.
    pub stale: u64,
    /// Source symbols received in clear.
    pub source_received: u64,
    /// Repair symbols received.
    pub repair_received: u64,
    /// Symbols recovered by decoding (not received in clear).
    pub recovered: u64,
    /// Symbols given up on request of the sender.
    pub abandoned: u64,
    /// Payload row operations (AXPY of one row into another) performed.
    pub row_ops: u64,
}

/// Online Gaussian-elimination decoder over a sliding window.
#[derive(Debug)]
pub struct Decoder {
    w: u64,
    /// Ring size: a power of two >= 2w (indexing by mask, not division).
    cap: usize,
    mask: u64,
    max_symbol: usize,
    base: u64,
    slots: Vec<Slot>,
    i_p: u64,
    i_q: u64,
    i_r: u64,
    max_seq: u64,
    ws_max: u64,
    undecoded: Vec<u64>,
    /// Recovered symbols not yet popped, in the order they became decodable.
    /// Their indexes are distinct and lie in `[flow_point, limit)`, so there
    /// are at most `w` of them (see [`Decoder::flow_point`]).
    recovered: VecDeque<(u64, Vec<u8>)>,
    /// Smallest index in `recovered` (`u64::MAX` when empty).
    unpolled_min: u64,
    kernel: Kernel,
    stats: DecoderStats,
    /// Recycled coefficient buffers (at most `cap`).
    coef_pool: Vec<Vec<u8>>,
    /// Recycled payload buffers (at most `cap`, each of capacity at most
    /// [`Decoder::max_buffer_capacity`]).
    data_pool: Vec<Vec<u8>>,
}

/// Heap memory held by a [`Decoder`] on behalf of the peer, in bytes of
/// allocated capacity (see [`Decoder::memory`] and
/// [`Decoder::memory_bound`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecoderMemory {
    /// Pivot rows held (decoded symbols retained for eliminations plus
    /// undecoded equations).
    pub rows: usize,
    /// Capacity of the coefficient and payload buffers of those rows.
    pub row_bytes: usize,
    /// Recycled buffers kept for reuse (coefficient and payload buffers;
    /// at most the ring size of each).
    pub pooled: usize,
    /// Capacity of the recycled buffers.
    pub pooled_bytes: usize,
    /// Recovered symbols waiting to be popped.
    pub recovered: usize,
    /// Capacity of their payloads.
    pub recovered_bytes: usize,
    /// Bookkeeping vectors (the list of undecoded rows).
    pub other_bytes: usize,
}

impl DecoderMemory {
    /// Sum of all byte counts.
    pub fn total_bytes(&self) -> usize {
        self.row_bytes + self.pooled_bytes + self.recovered_bytes + self.other_bytes
    }
}

/// Payload of a repair symbol as handed to [`Decoder::repair`].
enum RepairData<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl RepairData<'_> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn as_slice(&self) -> &[u8] {
        match self {
            RepairData::Borrowed(d) => d,
            RepairData::Owned(d) => d,
        }
    }
}

impl Decoder {
    /// New decoder accepting symbols up to `max_window` ahead of the next
    /// undecoded one, each at most `max_symbol_size` bytes.
    pub fn new(max_window: usize, max_symbol_size: usize) -> Decoder {
        // No negotiated window exceeds the wire limit; clamping keeps the
        // ring arithmetic far from overflow whatever the caller passes.
        let w = max_window.clamp(1, crate::frames::MAX_WINDOW_LIMIT as usize);
        let cap = (2 * w).next_power_of_two();
        Decoder {
            w: w as u64,
            cap,
            mask: cap as u64 - 1,
            max_symbol: max_symbol_size.min(MAX_SYMBOL_SIZE),
            base: 0,
            slots: (0..cap).map(|_| Slot::default()).collect(),
            i_p: 0,
            i_q: 0,
            i_r: 0,
            max_seq: 0,
            ws_max: 0,
            undecoded: Vec::new(),
            recovered: VecDeque::new(),
            unpolled_min: u64::MAX,
            kernel: Kernel::best(),
            stats: DecoderStats::default(),
            coef_pool: Vec::new(),
            data_pool: Vec::new(),
        }
    }

    fn take_coef(&mut self) -> Vec<u8> {
        let mut c = self.coef_pool.pop().unwrap_or_default();
        c.clear();
        c
    }

    fn take_data(&mut self) -> Vec<u8> {
        let mut d = self.data_pool.pop().unwrap_or_default();
        d.clear();
        d
    }

    fn recycle_coef(&mut self, c: Vec<u8>) {
        if self.coef_pool.len() < self.cap {
            self.coef_pool.push(c);
        }
    }

    fn recycle_data(&mut self, d: Vec<u8>) {
        let c = d.capacity();
        if self.data_pool.len() < self.cap && c > 0 && c <= self.max_buffer_capacity() {
            self.data_pool.push(d);
        }
    }

    fn recycle(&mut self, r: Row) {
        self.recycle_coef(r.coef);
        self.recycle_data(r.data);
    }

    /// Largest capacity of a payload buffer the decoder keeps (stores or
    /// pools) as it is: twice a coded symbol of maximal size. A buffer
    /// handed over with more capacity is copied into a right-sized one, so
    /// that [`Decoder::memory_bound`] holds whatever the caller passes.
    pub fn max_buffer_capacity(&self) -> usize {
        2 * (self.max_symbol + LEN_PREFIX)
    }

    /// An empty buffer for the next payload, recycled from the decoder's
    /// pool (with the capacity of an earlier symbol) when one is available,
    /// else newly created (without allocation). Together with
    /// [`Decoder::add_source_owned`] and [`Decoder::recycle_buffer`] this
    /// lets a receiver run without allocating per packet: receive into a
    /// buffer from here, hand it over by value, give popped payloads back.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.take_data()
    }

    /// Give a payload buffer back for reuse (e.g. one returned by
    /// [`Decoder::pop_recovered`] once consumed). It is kept if the pool
    /// has room and its capacity is at most
    /// [`Decoder::max_buffer_capacity`]; otherwise it is dropped.
    pub fn recycle_buffer(&mut self, buf: Vec<u8>) {
        self.recycle_data(buf);
    }

    fn reset_slot(&mut self, c: u64) {
        let s = std::mem::take(self.slot_mut(c));
        if let Some(r) = s.row {
            self.recycle(r);
        }
    }

    /// Use a specific kernel (benchmarks, tests).
    pub fn set_kernel(&mut self, k: Kernel) {
        self.kernel = k;
    }

    /// I_p: index of the next symbol to be decoded (all below are decoded).
    pub fn i_p(&self) -> u64 {
        self.i_p
    }
    /// I_q: index of the next unseen symbol (first non-pivot column).
    pub fn i_q(&self) -> u64 {
        self.i_q
    }
    /// I_r: index of the next unsensed symbol (VON definition: smallest
    /// index never involved in a received packet).
    pub fn i_r(&self) -> u64 {
        self.i_r
    }
    /// One past the highest index involved in any received packet (FNC
    /// MAX_SEQ).
    pub fn max_seq(&self) -> u64 {
        self.max_seq
    }
    /// Largest window start announced by the sender so far.
    pub fn sender_window_start(&self) -> u64 {
        self.ws_max
    }
    /// Flow-control point: the smallest index that is not yet both decoded
    /// and handed over, i.e. `min(I_p, oldest recovered symbol not yet
    /// popped)`. This is the `I_p` the receiver advertises in NC_ACK, so a
    /// conforming sender never references an index at or beyond
    /// `flow_point() + max_window`; an application that does not drain
    /// [`Decoder::pop_recovered`] thereby stalls the sender instead of
    /// growing the queue. Never decreases.
    pub fn flow_point(&self) -> u64 {
        self.i_p.min(self.unpolled_min)
    }
    /// Largest index (exclusive) the peer may currently reference:
    /// [`Decoder::flow_point`] + max window.
    pub fn limit(&self) -> u64 {
        self.flow_point() + self.w
    }
    /// FNC DIFF: unseen symbols below MAX_SEQ, i.e. the number of further
    /// innovative packets needed to decode everything sensed so far.
    pub fn diff(&self) -> u64 {
        (self.i_q..self.max_seq)
            .filter(|&c| self.slot(c).row.is_none())
            .count() as u64
    }
    /// Rank of the undelivered part of the system: pivot rows held for
    /// symbols at or above I_p (equals the number of seen undecoded-or-pending
    /// symbols).
    pub fn rank(&self) -> u64 {
        (self.i_p..self.max_seq.max(self.i_p))
            .filter(|&c| self.slot(c).row.is_some())
            .count() as u64
    }
    /// Whether symbol `idx` is seen (always true below I_q; may be true above).
    pub fn is_seen(&self, idx: u64) -> bool {
        idx < self.i_q
            || (idx < self.base + self.cap as u64
                && idx >= self.base
                && self.slot(idx).row.is_some())
    }
    /// Whether symbol `idx` is decoded.
    pub fn is_decoded(&self, idx: u64) -> bool {
        idx < self.i_p
            || (idx < self.base + self.cap as u64 && idx >= self.base && self.slot(idx).decoded)
    }
    /// Counters.
    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// Pop the next recovered symbol (decoded without having been received in
    /// clear), in the order they became decodable.
    pub fn pop_recovered(&mut self) -> Option<(u64, Vec<u8>)> {
        let r = self.recovered.pop_front()?;
        if r.0 == self.unpolled_min {
            self.unpolled_min = self.recovered.iter().map(|x| x.0).min().unwrap_or(u64::MAX);
        }
        Some(r)
    }

    /// Heap memory currently held (allocated capacities, counted exactly).
    pub fn memory(&self) -> DecoderMemory {
        let mut m = DecoderMemory::default();
        for s in &self.slots {
            if let Some(r) = &s.row {
                m.rows += 1;
                m.row_bytes += r.coef.capacity() + r.data.capacity();
            }
        }
        m.pooled = self.coef_pool.len() + self.data_pool.len();
        m.pooled_bytes = self
            .coef_pool
            .iter()
            .chain(&self.data_pool)
            .map(|b| b.capacity())
            .sum();
        m.recovered = self.recovered.len();
        m.recovered_bytes = self.recovered.iter().map(|x| x.1.capacity()).sum();
        m.other_bytes = self.undecoded.capacity() * 8;
        m
    }

    /// Upper bound of [`DecoderMemory::total_bytes`] that holds whatever the
    /// peer sends (a function of the negotiated limits only). With `ring` the
    /// smallest power of two not below twice the max window: at most `ring`
    /// rows plus `ring` pooled payload and `ring` pooled coefficient buffers,
    /// each payload buffer at most [`Decoder::max_buffer_capacity`] =
    /// `2 * (max symbol + 2)` and each coefficient buffer at most `2 * ring`
    /// bytes of capacity (amortised growth; larger buffers handed over by
    /// the caller are copied or dropped, never kept); at most `max window`
    /// recovered payloads, each in a buffer of at most
    /// [`Decoder::max_buffer_capacity`] (recycled from the pool); the
    /// undecoded list.
    pub fn memory_bound(&self) -> usize {
        let pair = 2 * (self.max_symbol + LEN_PREFIX) + 2 * self.cap;
        2 * self.cap * pair + self.w as usize * self.max_buffer_capacity() + 2 * self.cap * 8
    }

    /// Number of recovered symbols waiting in [`Decoder::pop_recovered`].
    pub fn recovered_pending(&self) -> usize {
        self.recovered.len()
    }

    fn slot(&self, c: u64) -> &Slot {
        &self.slots[(c & self.mask) as usize]
    }
    fn slot_mut(&mut self, c: u64) -> &mut Slot {
        let m = self.mask;
        &mut self.slots[(c & m) as usize]
    }

    /// Rewrite a clear row in coded form (`len || payload`) in a recycled
    /// buffer, so that it can be eliminated and scaled like any other row.
    fn materialise(&mut self, r: &mut Row) {
        if !r.clear {
            return;
        }
        let mut d = self.take_data();
        d.reserve(LEN_PREFIX + r.data.len());
        d.extend_from_slice(&(r.data.len() as u16).to_be_bytes());
        d.extend_from_slice(&r.data);
        let old = std::mem::replace(&mut r.data, d);
        r.clear = false;
        self.recycle_data(old);
    }

    fn check_symbol_len(&self, n: usize) -> Result<()> {
        if n > self.max_symbol + LEN_PREFIX {
            Err(Error::SymbolTooLarge(n))
        } else {
            Ok(())
        }
    }

    /// A source symbol received in clear, borrowed: copied once into a
    /// recycled buffer, then handled as [`Decoder::add_source_owned`].
    pub fn add_source(&mut self, idx: u64, payload: &[u8]) -> Result<Arrival> {
        if payload.len() > self.max_symbol {
            return Err(Error::SymbolTooLarge(payload.len()));
        }
        if idx >= self.limit() {
            return Err(Error::WindowExceeded {
                index: idx.saturating_add(1),
                limit: self.limit(),
            });
        }
        // Duplicates and stale arrivals are decided before copying.
        if idx < self.base || idx < self.i_p || self.slot(idx).decoded {
            return self.add_source_owned(idx, Vec::new());
        }
        let mut data = self.take_data();
        data.extend_from_slice(payload);
        self.add_source_owned(idx, data)
    }

    /// A source symbol received in clear, handed over by value.
    ///
    /// The buffer is stored as it is (no copy, no length prefix: the prefix
    /// of the coded form is implied by its length) for as long as later
    /// repair symbols may combine it, then recycled into the decoder's pool
    /// ([`Decoder::take_buffer`]). It is copied only if its capacity exceeds
    /// [`Decoder::max_buffer_capacity`] (to keep [`Decoder::memory_bound`])
    /// or, rarely, if a pending equation already has its column as pivot
    /// (the row is then eliminated in coded form). As with
    /// [`Decoder::add_source`], the symbol is not delivered by
    /// [`Decoder::pop_recovered`]: the caller processes a clear payload
    /// itself, before handing it over. Errors and outcomes are those of
    /// [`Decoder::add_source`].
    pub fn add_source_owned(&mut self, idx: u64, payload: Vec<u8>) -> Result<Arrival> {
        if payload.len() > self.max_symbol {
            return Err(Error::SymbolTooLarge(payload.len()));
        }
        if idx >= self.limit() {
            return Err(Error::WindowExceeded {
                index: idx.saturating_add(1),
                limit: self.limit(),
            });
        }
        self.stats.source_received += 1;
        if idx < self.base || idx < self.i_p {
            self.stats.stale += 1;
            self.recycle_data(payload);
            return Ok(Arrival {
                stale: true,
                ..Arrival::default()
            });
        }
        let s = self.slot_mut(idx);
        s.sensed = true;
        s.clear = true;
        if s.decoded {
            self.stats.redundant += 1;
            self.recycle_data(payload);
            return Ok(Arrival::default());
        }
        self.max_seq = self.max_seq.max(idx + 1);
        let data = if payload.capacity() > self.max_buffer_capacity() {
            let mut d = self.take_data();
            d.extend_from_slice(&payload);
            d
        } else {
            payload
        };
        let mut coef = self.take_coef();
        coef.push(1);
        let row = Row {
            start: idx,
            coef,
            data,
            clear: true,
        };
        if self.undecoded.is_empty() && self.slot(idx).row.is_none() {
            // Systematic common case: nothing to eliminate and no pending
            // equation mentions `idx`, so the row is stored as it is (no
            // copy, no scaling, no list walk).
            self.stats.innovative += 1;
            let s = self.slot_mut(idx);
            s.row = Some(row);
            s.decoded = true;
            self.advance();
            return Ok(Arrival {
                innovative: true,
                newly_seen: Some(idx),
                newly_decoded: 1,
                ..Arrival::default()
            });
        }
        let a = self.insert(row)?;
        self.advance();
        Ok(a)
    }

    /// A repair symbol over `[first, first + count)`, borrowed (copied once
    /// into a recycled buffer).
    pub fn add_repair<'c>(
        &mut self,
        first: u64,
        count: u64,
        coefs: impl Into<CoefRef<'c>>,
        data: &[u8],
    ) -> Result<Arrival> {
        self.repair(first, count, coefs.into(), RepairData::Borrowed(data))
    }

    /// A repair symbol over `[first, first + count)`, handed over by value
    /// (e.g. [`crate::frames::RepairFrame::data`]): eliminated in place,
    /// no copy unless its capacity exceeds
    /// [`Decoder::max_buffer_capacity`].
    pub fn add_repair_owned<'c>(
        &mut self,
        first: u64,
        count: u64,
        coefs: impl Into<CoefRef<'c>>,
        data: Vec<u8>,
    ) -> Result<Arrival> {
        self.repair(first, count, coefs.into(), RepairData::Owned(data))
    }

    /// The checks [`Decoder::add_repair`] applies before touching any
    /// state: a repair over `[first, first + count)` with `len` coded bytes
    /// is acceptable now (so an integration can validate a frame it then
    /// decides not to decode).
    pub fn check_repair(&self, first: u64, count: u64, len: usize) -> Result<()> {
        if count == 0 {
            return Err(Error::Malformed("empty repair window"));
        }
        if count > self.w {
            return Err(Error::WindowTooLong(count));
        }
        let end = first
            .checked_add(count)
            .ok_or(Error::Malformed("window overflow"))?;
        if end > self.limit() {
            return Err(Error::WindowExceeded {
                index: end,
                limit: self.limit(),
            });
        }
        self.check_symbol_len(len)
    }

    fn repair(
        &mut self,
        first: u64,
        count: u64,
        coefs: CoefRef<'_>,
        data: RepairData<'_>,
    ) -> Result<Arrival> {
        self.check_repair(first, count, data.len())?;
        let mut coef = self.take_coef();
        if !coefs.expand(count as usize, &mut coef) {
            self.recycle_coef(coef);
            return Err(Error::Malformed("coefficients do not match window"));
        }
        self.stats.repair_received += 1;
        if first > self.ws_max {
            self.ws_max = first;
        }
        // Columns below `base` are forgotten: usable only if their coefficient is 0.
        let mut start = first;
        if start < self.base {
            let skip = (self.base - start).min(count) as usize;
            if coef[..skip].iter().any(|&c| c != 0) {
                self.stats.stale += 1;
                self.recycle_coef(coef);
                if let RepairData::Owned(d) = data {
                    self.recycle_data(d);
                }
                self.advance();
                return Ok(Arrival {
                    stale: true,
                    ..Arrival::default()
                });
            }
            coef.drain(..skip);
            start = self.base;
        }
        for (i, &c) in coef.iter().enumerate() {
            if c != 0 {
                let col = start + i as u64;
                self.slot_mut(col).sensed = true;
                self.max_seq = self.max_seq.max(col + 1);
            }
        }
        let buf = match data {
            RepairData::Owned(d) if d.capacity() <= self.max_buffer_capacity() => d,
            d => {
                let mut b = self.take_data();
                b.extend_from_slice(d.as_slice());
                b
            }
        };
        let row = Row {
            start,
            coef,
            data: buf,
            clear: false,
        };
        let a = self.insert(row)?;
        self.advance();
        Ok(a)
    }

    /// The sender gave up on every symbol below `idx`: drop them (undecoded
    /// ones are lost for good) and move I_p to at least `idx`.
    pub fn abandon_below(&mut self, idx: u64) -> Result<()> {
        if idx > self.limit() {
            return Err(Error::WindowExceeded {
                index: idx,
                limit: self.limit(),
            });
        }
        if idx <= self.i_p {
            return Ok(());
        }
        for c in self.i_p..idx {
            if !self.slot(c).decoded {
                self.stats.abandoned += 1;
            }
            self.reset_slot(c);
        }
        self.undecoded.retain(|&p| p >= idx);
        for c in self.base..self.i_p {
            self.reset_slot(c);
        }
        self.base = idx;
        self.i_p = idx;
        self.i_q = self.i_q.max(idx);
        self.i_r = self.i_r.max(idx);
        self.max_seq = self.max_seq.max(idx);
        self.ws_max = self.ws_max.max(idx);
        self.advance();
        Ok(())
    }

    fn insert(&mut self, mut r: Row) -> Result<Arrival> {
        let k = self.kernel;
        if r.clear && self.slot(r.start).row.is_some() {
            // A pending equation has this column as pivot: eliminate in
            // coded form.
            self.materialise(&mut r);
        }
        let mut pivot: Option<u64> = None;
        let mut i = 0;
        while i < r.coef.len() {
            let c = r.coef[i];
            if c != 0 {
                let col = r.start + i as u64;
                let slot = &self.slots[(col & self.mask) as usize];
                if let Some(pr) = &slot.row {
                    if slot.decoded {
                        r.coef[i] = 0;
                    } else {
                        if r.coef.len() < i + pr.coef.len() {
                            r.coef.resize(i + pr.coef.len(), 0);
                        }
                        k.axpy(&mut r.coef[i..i + pr.coef.len()], &pr.coef, c);
                    }
                    axpy_row(k, &mut r.data, pr, c);
                    self.stats.row_ops += 1;
                } else if pivot.is_none() {
                    pivot = Some(col);
                }
            }
            i += 1;
        }
        let Some(p) = pivot else {
            self.stats.redundant += 1;
            self.recycle(r);
            return Ok(Arrival::default());
        };
        // Normalise: pivot first, coefficient 1, trailing zeros trimmed.
        r.coef.drain(..(p - r.start) as usize);
        r.start = p;
        while r.coef.len() > 1 && *r.coef.last().unwrap() == 0 {
            r.coef.pop();
        }
        let inv = gf256::inv(r.coef[0]);
        if inv != 1 {
            debug_assert!(!r.clear, "a clear row is never rescaled");
            k.scale(&mut r.coef, inv);
            k.scale(&mut r.data, inv);
        }
        let mut arrival = Arrival {
            innovative: true,
            newly_seen: Some(p),
            ..Arrival::default()
        };
        self.stats.innovative += 1;

        // Back-substitute into undecoded rows that involve column p.
        let mut corrupt: Option<Error> = None;
        let mut j = 0;
        while j < self.undecoded.len() {
            let qp = self.undecoded[j];
            let qs = (qp & self.mask) as usize;
            let q = self.slots[qs].row.as_mut().expect("undecoded row present");
            let off = p.saturating_sub(q.start) as usize;
            let c = if p > q.start && off < q.coef.len() {
                q.coef[off]
            } else {
                0
            };
            if c != 0 {
                if q.coef.len() < off + r.coef.len() {
                    q.coef.resize(off + r.coef.len(), 0);
                }
                k.axpy(&mut q.coef[off..off + r.coef.len()], &r.coef, c);
                axpy_row(k, &mut q.data, &r, c);
                self.stats.row_ops += 1;
                while q.coef.len() > 1 && *q.coef.last().unwrap() == 0 {
                    q.coef.pop();
                }
                if q.coef.len() == 1 {
                    self.undecoded.swap_remove(j);
                    corrupt = corrupt.or(self.mark_decoded(qp).err());
                    arrival.newly_decoded += 1;
                    continue;
                }
            }
            j += 1;
        }
        let decoded = r.coef.len() == 1;
        self.slot_mut(p).row = Some(r);
        if decoded {
            corrupt = corrupt.or(self.mark_decoded(p).err());
            arrival.newly_decoded += 1;
        } else {
            self.undecoded.push(p);
        }
        // The state stays consistent either way; a corrupt symbol is
        // reported after the elimination completed.
        match corrupt {
            Some(e) => Err(e),
            None => Ok(arrival),
        }
    }

    fn mark_decoded(&mut self, c: u64) -> Result<()> {
        let max_symbol = self.max_symbol;
        let s = self.slot_mut(c);
        s.decoded = true;
        if s.clear {
            return Ok(());
        }
        let row = s.row.as_ref().expect("decoded row present");
        if row.data.len() < LEN_PREFIX {
            return Err(Error::CorruptSymbol(c));
        }
        let len = u16::from_be_bytes([row.data[0], row.data[1]]) as usize;
        if len > max_symbol || LEN_PREFIX + len > row.data.len() {
            return Err(Error::CorruptSymbol(c));
        }
        let mut payload = self.data_pool.pop().unwrap_or_default();
        payload.clear();
        let row = self.slot(c).row.as_ref().expect("decoded row present");
        payload.extend_from_slice(&row.data[LEN_PREFIX..LEN_PREFIX + len]);
        self.stats.recovered += 1;
        self.recovered.push_back((c, payload));
        self.unpolled_min = self.unpolled_min.min(c);
        Ok(())
    }

    fn advance(&mut self) {
        let lim = self.limit();
        while self.i_p < lim && self.slot(self.i_p).decoded {
            self.i_p += 1;
        }
        // Forget decoded symbols the sender no longer combines, keeping at
        // most `w` of them below I_p so the ring never holds more than 2w.
        let new_base = self
            .ws_max
            .min(self.i_p)
            .max(self.i_p.saturating_sub(self.w));
        while self.base < new_base {
            let b = self.base;
            self.reset_slot(b);
            self.base += 1;
        }
        let lim = self.limit();
        self.i_q = self.i_q.max(self.i_p);
        while self.i_q < lim && self.slot(self.i_q).row.is_some() {
            self.i_q += 1;
        }
        self.i_r = self.i_r.max(self.i_q);
        while self.i_r < lim && self.slot(self.i_r).sensed {
            self.i_r += 1;
        }
        self.max_seq = self.max_seq.max(self.i_r);
    }

    /// Recompute every invariant from scratch and panic on violation
    /// (test/fuzz helper; O(w^2)).
    pub fn check_invariants(&self) {
        assert!(self.base <= self.i_p && self.i_p <= self.i_q && self.i_q <= self.i_r);
        assert!(self.i_r <= self.max_seq.max(self.i_r));
        assert!(self.limit() <= self.base + self.cap as u64);
        let live = self.base..self.limit();
        let pivots: Vec<u64> = live
            .clone()
            .filter(|&c| self.slot(c).row.is_some())
            .collect();
        for &p in &pivots {
            let s = self.slot(p);
            let r = s.row.as_ref().unwrap();
            assert_eq!(r.start, p);
            assert_eq!(r.coef[0], 1, "pivot {p} not normalised");
            if r.clear {
                assert!(s.clear && s.decoded, "clear row {p} not a decoded source");
                assert_eq!(r.coef.len(), 1, "clear row {p} with coefficients");
            }
            for &q in &pivots {
                if q > p && ((q - p) as usize) < r.coef.len() {
                    assert_eq!(
                        r.coef[(q - p) as usize],
                        0,
                        "row {p} not reduced at pivot {q}"
                    );
                }
            }
            let dec = r.coef[1..].iter().all(|&x| x == 0);
            assert_eq!(dec, s.decoded, "decoded flag of {p}");
            assert_eq!(!dec, self.undecoded.contains(&p), "undecoded list of {p}");
            assert!(p + (r.coef.len() as u64) <= self.limit() + self.w);
        }
        assert_eq!(
            self.undecoded.len(),
            pivots.iter().filter(|&&p| !self.slot(p).decoded).count()
        );
        for c in self.i_p.max(self.base)..self.i_q {
            assert!(self.slot(c).row.is_some());
        }
        for c in self.base..self.i_p {
            assert!(self.slot(c).decoded);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coeffs::Coefficients;
    use crate::testrng::Rng;

    fn coded(payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(payload);
        v
    }

    fn payloads(rng: &mut Rng, n: usize, max: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                let mut v = vec![0u8; rng.below(max as u64 + 1) as usize];
                rng.fill(&mut v);
                v
            })
            .collect()
    }

    #[test]
    fn tcpnc_seen_example() {
        // FNC example: x = p1, y = p1+p2 (lost), z = p1+p2+p3.
        let mut d = Decoder::new(8, 16);
        let p = [b"a".to_vec(), b"bb".to_vec(), b"ccc".to_vec()];
        let mut e = Encoder::new(8, 16);
        for s in &p {
            e.push(s).unwrap();
        }
        let mut out = Vec::new();
        e.encode(0, 1, &Coefficients::Explicit(vec![1]), &mut out)
            .unwrap();
        let a = d
            .add_repair(0, 1, &Coefficients::Explicit(vec![1]), &out)
            .unwrap();
        assert_eq!(a.newly_seen, Some(0));
        e.encode(0, 3, &Coefficients::Explicit(vec![1, 1, 1]), &mut out)
            .unwrap();
        let a = d
            .add_repair(0, 3, &Coefficients::Explicit(vec![1, 1, 1]), &out)
            .unwrap();
        assert_eq!(a.newly_seen, Some(1));
        assert_eq!(
            (d.i_p(), d.i_q(), d.i_r(), d.max_seq(), d.diff()),
            (1, 2, 3, 3, 1)
        );
        d.check_invariants();
        // A repair over just p2 (FNC "first DIFF symbols") decodes everything.
        e.encode(1, 1, &Coefficients::Explicit(vec![7]), &mut out)
            .unwrap();
        let a = d
            .add_repair(1, 1, &Coefficients::Explicit(vec![7]), &out)
            .unwrap();
        assert!(a.innovative);
        assert_eq!(d.i_p(), 3);
        assert_eq!(d.diff(), 0);
        let got: Vec<_> = std::iter::from_fn(|| d.pop_recovered()).collect();
        let mut ids: Vec<u64> = got.iter().map(|x| x.0).collect();
        ids.sort();
        assert_eq!(ids, vec![0, 1, 2]);
        for (i, pl) in got {
            assert_eq!(pl, p[i as usize]);
        }
        d.check_invariants();
    }

    #[test]
    fn random_arrival_orders_decode_exactly() {
        let mut rng = Rng::new(42);
        for round in 0..300 {
            let w = 1 + rng.below(24) as usize;
            let n = w;
            let src = payloads(&mut rng, n, 40);
            let mut e = Encoder::new(w, 40);
            for s in &src {
                e.push(s).unwrap();
            }
            let mut d = Decoder::new(w, 40);
            let mut out = Vec::new();
            let mut got = vec![None; n];
            let mut packets = 0;
            while d.i_p() < n as u64 {
                packets += 1;
                assert!(packets < 10 * n + 50, "round {round} does not converge");
                let kind = rng.below(3);
                if kind == 0 {
                    let i = rng.below(n as u64);
                    d.add_source(i, &src[i as usize]).unwrap();
                    got[i as usize] = Some(src[i as usize].clone());
                } else {
                    let first = rng.below(n as u64);
                    let count = 1 + rng.below(n as u64 - first);
                    let coefs = if kind == 1 {
                        Coefficients::Seeded {
                            repair_key: rng.next_u64() as u16,
                            dt: rng.below(16) as u8,
                        }
                    } else {
                        Coefficients::Explicit((0..count).map(|_| rng.byte() & 3).collect())
                    };
                    e.encode(first, count as usize, &coefs, &mut out).unwrap();
                    d.add_repair(first, count, &coefs, &out).unwrap();
                }
                d.check_invariants();
                while let Some((i, p)) = d.pop_recovered() {
                    assert!(got[i as usize].is_none(), "delivered twice");
                    got[i as usize] = Some(p);
                }
            }
            for i in 0..n {
                assert_eq!(
                    got[i].as_deref(),
                    Some(&src[i][..]),
                    "round {round} sym {i}"
                );
            }
            assert_eq!(d.stats().innovative, n as u64);
        }
    }

    #[test]
    fn no_loss_is_o1_and_slides() {
        let mut d = Decoder::new(4, 8);
        for i in 0..1000u64 {
            let a = d.add_source(i, &i.to_be_bytes()).unwrap();
            assert_eq!(a.newly_seen, Some(i));
            assert_eq!(a.newly_decoded, 1);
        }
        assert_eq!(d.i_p(), 1000);
        assert!(d.pop_recovered().is_none());
        assert_eq!(d.stats().row_ops, 0, "no loss: no row operations at all");
        // Limits are errors, not panics.
        assert!(matches!(
            d.add_source(1004, b"x"),
            Err(Error::WindowExceeded { .. })
        ));
        assert!(matches!(
            d.add_source(1000, &[0; 9]),
            Err(Error::SymbolTooLarge(9))
        ));
        assert!(matches!(
            d.add_repair(
                1000,
                5,
                &Coefficients::Seeded {
                    repair_key: 1,
                    dt: 15
                },
                b"xx"
            ),
            Err(Error::WindowTooLong(5))
        ));
        assert!(d
            .add_repair(1000, 0, &Coefficients::Explicit(vec![]), b"")
            .is_err());
        assert!(d
            .add_repair(1000, 2, &Coefficients::Explicit(vec![1]), b"")
            .is_err());
        assert!(d
            .add_repair(u64::MAX, 2, &Coefficients::Explicit(vec![1, 1]), b"")
            .is_err());
        // Stale arrivals are ignored.
        assert!(d.add_source(3, b"x").unwrap().stale);
    }

    #[test]
    fn corrupt_length_prefix_is_an_error() {
        let mut d = Decoder::new(4, 8);
        let r = d.add_repair(0, 1, &Coefficients::Explicit(vec![1]), &[0xff, 0xff, 1, 2]);
        assert_eq!(r, Err(Error::CorruptSymbol(0)));
    }

    #[test]
    fn abandon_moves_window() {
        let mut d = Decoder::new(4, 8);
        d.add_source(1, b"b").unwrap();
        d.add_repair(0, 3, &Coefficients::Explicit(vec![1, 1, 1]), &[0, 1, 9])
            .unwrap();
        assert_eq!(d.i_p(), 0);
        d.abandon_below(2).unwrap();
        assert_eq!(d.i_p(), 2);
        d.check_invariants();
        d.add_source(5, b"x").unwrap();
        assert!(d.add_source(6, b"x").is_err());
        assert_eq!(d.stats().abandoned, 1);
    }

    /// Recover symbol `i` from a one-symbol repair (`coef * coded(payload)`).
    fn recover_one(d: &mut Decoder, i: u64, payload: &[u8]) -> Result<Arrival> {
        let mut c = coded(payload);
        gf256::scale_scalar(&mut c, 3);
        d.add_repair(i, 1, &Coefficients::Explicit(vec![3]), &c)
    }

    #[test]
    fn unpolled_recovered_symbols_hold_the_window() {
        let (w, sym) = (8usize, 16usize);
        let mut d = Decoder::new(w, sym);
        // A peer that only sends repairs: every symbol is recovered and
        // queued; the application never polls.
        for i in 0..w as u64 {
            let a = recover_one(&mut d, i, &[i as u8; 16]).unwrap();
            assert_eq!(a.newly_decoded, 1);
        }
        assert_eq!((d.i_p(), d.flow_point(), d.limit()), (8, 0, 8));
        assert_eq!(d.recovered_pending(), w);
        // Beyond flow point + window: a protocol violation, nothing stored.
        let before = d.memory();
        for i in [8u64, 9, 15] {
            let e = recover_one(&mut d, i, b"x").unwrap_err();
            assert_eq!(
                e,
                Error::WindowExceeded {
                    index: i + 1,
                    limit: 8
                }
            );
            assert_eq!(e.quic_code(), Some(0x0a));
            assert!(d.add_source(i, b"x").is_err());
        }
        assert!(d.abandon_below(9).is_err());
        assert_eq!(d.memory().recovered, before.recovered);
        assert_eq!(d.recovered_pending(), w);
        d.check_invariants();
        // Polling frees exactly one slot of window per symbol.
        assert_eq!(d.pop_recovered().unwrap().0, 0);
        assert_eq!(d.limit(), 9);
        recover_one(&mut d, 8, b"y").unwrap();
        assert!(recover_one(&mut d, 9, b"z").is_err());
        while d.pop_recovered().is_some() {}
        assert_eq!(d.flow_point(), 9);
        d.check_invariants();
    }

    #[test]
    fn flow_point_is_the_oldest_unpolled_even_out_of_order() {
        let mut d = Decoder::new(8, 8);
        // 0 lost; 1 and 2 decode (from two repairs) before 0 does...
        d.add_source(3, b"d").unwrap();
        let c1 = coded(b"bb");
        let c2 = coded(b"c");
        let mut s12 = c1.clone();
        gf256::axpy_scalar(&mut s12[..c2.len()], &c2, 1);
        d.add_repair(1, 2, &Coefficients::Explicit(vec![1, 1]), &s12)
            .unwrap();
        d.add_repair(2, 1, &Coefficients::Explicit(vec![1]), &c2)
            .unwrap();
        // ... so 1 and 2 are queued while I_p is still 0.
        assert_eq!(d.recovered_pending(), 2);
        assert_eq!((d.i_p(), d.flow_point()), (0, 0));
        recover_one(&mut d, 0, b"a").unwrap();
        assert_eq!((d.i_p(), d.flow_point()), (4, 0));
        let order: Vec<u64> = std::iter::from_fn(|| d.pop_recovered().map(|x| x.0)).collect();
        // (Both became decodable on the same arrival, 1 by back-substitution
        // first.)
        assert_eq!(order, vec![1, 2, 0]);
        assert_eq!(d.flow_point(), 4);
    }

    /// Adversarial peer against a never-polling application: random frames
    /// (sources, repairs of any window and coefficients, oversized and
    /// corrupt data, abandon requests at and past the limit). Whatever
    /// happens, the decoder's memory stays under its bound and the queue
    /// of recovered symbols under the window.
    #[test]
    fn adversarial_peer_cannot_grow_memory() {
        let mut rng = Rng::new(7);
        for round in 0..40 {
            let w = 1 + rng.below(40) as usize;
            let sym = 1 + rng.below(300) as usize;
            let mut d = Decoder::new(w, sym);
            let bound = d.memory_bound();
            let poll_every = [0u64, 0, 7, 50][round % 4];
            let mut max_seen = 0usize;
            if poll_every == 0 {
                // Worst case first: a full queue of maximal recovered symbols.
                // (Bounded loop: without flow control this would never stop.)
                for _ in 0..4 * w + 4 {
                    let i = d.i_q();
                    if recover_one(&mut d, i, &vec![7; sym]).is_err() {
                        break;
                    }
                }
                assert_eq!(d.recovered_pending(), w, "round {round}");
                assert!(d.memory().total_bytes() <= bound);
            }
            for step in 0..3000u64 {
                let lim = d.limit();
                let idx = lim.saturating_sub(rng.below(2 * w as u64 + 2)) + rng.below(3);
                match rng.below(5) {
                    0 => {
                        let mut p = vec![0u8; rng.below(sym as u64 + 2) as usize];
                        rng.fill(&mut p);
                        let _ = d.add_source(idx, &p);
                    }
                    1 | 2 => {
                        let count = 1 + rng.below(w as u64 + 1);
                        let first = idx.saturating_sub(count);
                        let mut data = vec![0u8; rng.below(sym as u64 + 4) as usize];
                        rng.fill(&mut data);
                        // Plausible length prefixes most of the time.
                        if data.len() >= 2 && rng.below(4) != 0 {
                            let l = (data.len() - 2) as u16;
                            data[..2].copy_from_slice(&l.to_be_bytes());
                        }
                        let coefs = if rng.below(2) == 0 {
                            Coefficients::Seeded {
                                repair_key: rng.next_u64() as u16,
                                dt: rng.below(16) as u8,
                            }
                        } else {
                            Coefficients::Explicit((0..count).map(|_| rng.byte()).collect())
                        };
                        let _ = d.add_repair(first, count, &coefs, &data);
                    }
                    3 => {
                        // Single-symbol repairs: the fastest way to fill the
                        // recovered queue.
                        let mut p = vec![0u8; rng.below(sym as u64 + 1) as usize];
                        rng.fill(&mut p);
                        let i = if rng.below(2) == 0 {
                            d.i_q()
                        } else {
                            idx.saturating_sub(1)
                        };
                        let _ = recover_one(&mut d, i, &p);
                    }
                    _ => {
                        let _ = d.abandon_below(d.i_p() + rng.below(w as u64 + 2));
                    }
                }
                let m = d.memory();
                assert!(
                    m.total_bytes() <= bound,
                    "round {round} step {step}: {m:?} above {bound}"
                );
                assert!(m.recovered <= w, "round {round} step {step}: {m:?}");
                assert!(m.rows <= d.cap && m.pooled <= 2 * d.cap);
                max_seen = max_seen.max(m.recovered);
                if poll_every > 0 && step % poll_every == 0 {
                    while d.pop_recovered().is_some() {}
                }
            }
            d.check_invariants();
            if poll_every == 0 {
                assert_eq!(max_seen, w, "round {round}: the queue must have filled");
            }
        }
    }

    /// Everything observable about a decoder, for comparing two of them.
    fn observe(d: &Decoder) -> (u64, u64, u64, u64, u64, u64, u64, DecoderStats) {
        (
            d.i_p(),
            d.i_q(),
            d.i_r(),
            d.max_seq(),
            d.flow_point(),
            d.diff(),
            d.rank(),
            d.stats(),
        )
    }

    /// The owned path (`add_source_owned`, `add_repair_owned`, buffers of
    /// any capacity, recycled or not) and the borrowed path give identical
    /// outcomes, state, errors and recovered symbols on random traces with
    /// losses, repairs, duplicates, stale and out-of-window arrivals,
    /// oversized symbols and abandonments; memory stays within its bound.
    #[test]
    fn owned_and_borrowed_paths_agree() {
        let mut rng = Rng::new(0x0b5e);
        let mut recovered = 0;
        for round in 0..300 {
            let w = 1 + rng.below(24) as usize;
            let sym = 1 + rng.below(60) as usize;
            let n = 3 * w + rng.below(20) as usize;
            let src = payloads(&mut rng, n, sym);
            let mut e = Encoder::new(n, sym);
            for s in &src {
                e.push(s).unwrap();
            }
            let mut a = Decoder::new(w, sym);
            let mut b = Decoder::new(w, sym);
            let bound = b.memory_bound();
            let mut out = Vec::new();
            for step in 0..(6 * n) {
                let ctx = format!("round {round} step {step}");
                let lo = a.flow_point();
                match rng.below(10) {
                    // Sources (mostly new, some duplicates, stale or beyond
                    // the limit, some oversized).
                    0..=4 => {
                        let i = (lo + rng.below(w as u64 + 2)).saturating_sub(rng.below(3));
                        let oversized = rng.below(40) == 0;
                        let p: Vec<u8> = if oversized {
                            vec![1; sym + 1]
                        } else if (i as usize) < n {
                            src[i as usize].clone()
                        } else {
                            vec![9; sym.min(3)]
                        };
                        let ra = a.add_source(i, &p);
                        let owned = match rng.below(4) {
                            0 => p.clone(),
                            1 => {
                                let mut v = Vec::with_capacity(p.len() + rng.below(64) as usize);
                                v.extend_from_slice(&p);
                                v
                            }
                            // More capacity than the decoder may keep.
                            2 => {
                                let mut v =
                                    Vec::with_capacity(b.max_buffer_capacity() + 1 + p.len());
                                v.extend_from_slice(&p);
                                v
                            }
                            _ => {
                                let mut v = b.take_buffer();
                                assert!(v.is_empty());
                                v.extend_from_slice(&p);
                                v
                            }
                        };
                        let rb = b.add_source_owned(i, owned);
                        assert_eq!(ra, rb, "{ctx}: source {i}");
                    }
                    // Repairs over a random part of the window.
                    5..=8 => {
                        let first = lo.saturating_sub(rng.below(3)).min(n as u64 - 1);
                        let room = (n as u64 - first).min(w as u64);
                        let count = 1 + rng.below(room);
                        let coefs = if rng.below(2) == 0 {
                            Coefficients::Seeded {
                                repair_key: rng.next_u64() as u16,
                                dt: rng.below(16) as u8,
                            }
                        } else {
                            Coefficients::Explicit((0..count).map(|_| rng.byte() & 7).collect())
                        };
                        e.encode(first, count as usize, &coefs, &mut out).unwrap();
                        let ra = a.add_repair(first, count, &coefs, &out);
                        let rb = b.add_repair_owned(first, count, &coefs, out.clone());
                        assert_eq!(ra, rb, "{ctx}: repair {first}+{count}");
                    }
                    _ => {
                        let to = lo + rng.below(3);
                        assert_eq!(a.abandon_below(to), b.abandon_below(to), "{ctx}");
                    }
                }
                a.check_invariants();
                b.check_invariants();
                assert_eq!(observe(&a), observe(&b), "{ctx}");
                assert!(b.memory().total_bytes() <= bound, "{ctx}: {:?}", b.memory());
                if rng.below(3) != 0 {
                    loop {
                        let (x, y) = (a.pop_recovered(), b.pop_recovered());
                        assert_eq!(x, y, "{ctx}");
                        let Some((i, p)) = y else { break };
                        assert_eq!(p, src[i as usize], "{ctx}: recovered {i}");
                        recovered += 1;
                        b.recycle_buffer(p);
                    }
                }
            }
        }
        assert!(
            recovered > 1000,
            "the traces must exercise recovery ({recovered})"
        );
    }

    /// A clear source whose column is already the pivot of a pending
    /// equation is eliminated in coded form (and recovers the other symbol).
    #[test]
    fn clear_source_after_pending_equation() {
        let (s0, s1) = (b"first".to_vec(), b"second!".to_vec());
        let mut e = Encoder::new(4, 16);
        e.push(&s0).unwrap();
        e.push(&s1).unwrap();
        let co = Coefficients::Explicit(vec![3, 5]);
        let mut out = Vec::new();
        e.encode(0, 2, &co, &mut out).unwrap();
        let mut d = Decoder::new(4, 16);
        let a = d.add_repair_owned(0, 2, &co, out).unwrap();
        assert_eq!((a.newly_seen, a.newly_decoded), (Some(0), 0));
        let a = d.add_source_owned(0, s0.clone()).unwrap();
        assert_eq!((a.newly_seen, a.newly_decoded), (Some(1), 2));
        d.check_invariants();
        assert_eq!(d.pop_recovered(), Some((1, s1.clone())));
        assert_eq!(d.pop_recovered(), None, "a clear symbol is not delivered");
        assert_eq!(d.i_p(), 2);
        // Decoded and delivered by now: a late clear copy is stale.
        let a = d.add_source_owned(1, s1).unwrap();
        assert!(!a.innovative && a.stale);
    }

    /// Owned clear payloads are stored without copy and come back through
    /// `take_buffer` once forgotten; recovery still uses them.
    #[test]
    fn owned_buffers_are_moved_and_recycled() {
        let (w, sym) = (4usize, 100usize);
        let mut d = Decoder::new(w, sym);
        let mut e = Encoder::new(64, sym);
        let mut fresh = 0;
        for i in 0..40u64 {
            let p = vec![i as u8; 50 + i as usize];
            e.push(&p).unwrap();
            if i % 5 == 3 {
                continue; // lost
            }
            let mut v = d.take_buffer();
            if v.capacity() == 0 {
                fresh += 1;
            }
            v.extend_from_slice(&p);
            let ptr = v.as_ptr();
            d.add_source_owned(i, v).unwrap();
            // Stored as handed over, not copied.
            assert!(d
                .slot(i)
                .row
                .as_ref()
                .is_some_and(|r| r.clear && r.data.as_ptr() == ptr));
            if i % 5 == 4 {
                // Repair over the last two symbols: the lost one and a
                // clear one (eliminated through its implied length prefix).
                let co = Coefficients::Explicit(vec![7, 9]);
                let mut out = Vec::new();
                e.encode(i - 1, 2, &co, &mut out).unwrap();
                let a = d.add_repair(i - 1, 2, &co, &out).unwrap();
                assert_eq!(a.newly_decoded, 1);
                let (j, got) = d.pop_recovered().unwrap();
                assert_eq!((j, &got[..]), (i - 1, e.payload(i - 1).unwrap()));
                d.recycle_buffer(got);
                // The sender moves on: nothing below `i + 1` is combined.
                d.add_repair(i + 1, 1, &Coefficients::Explicit(vec![0]), &[])
                    .unwrap();
            }
            d.check_invariants();
        }
        assert_eq!(d.i_p(), 40);
        assert_eq!(d.stats().recovered, 8);
        let m = d.memory();
        assert!(m.rows <= w + 1, "{m:?}");
        // Forgotten clear payloads went to the pool: only the first few of
        // the 32 source buffers had to be allocated, the rest were reused.
        assert!(fresh <= 2 * w, "{fresh} buffers allocated for 32 sources");
        assert!(m.pooled > 0);
    }

    #[test]
    fn all_zero_coefficients_are_redundant() {
        let mut d = Decoder::new(8, 8);
        let a = d
            .add_repair(0, 4, &Coefficients::Explicit(vec![0; 4]), &[0; 6])
            .unwrap();
        assert!(!a.innovative);
        d.check_invariants();
    }
}
