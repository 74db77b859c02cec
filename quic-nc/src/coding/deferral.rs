//! The sender's book of the source symbols it sent and of the lost stream
//! data it deferred (sans-IO: every call takes `now`).
//!
//! quiche reports a lost STREAM range without its packet number; the book
//! maps the range back to the source symbol that carried it. Lost data of
//! a symbol still in the coding window is *deferred*: quiche keeps it
//! buffered and un-acked while repair symbols do the work. Every deferral
//! is resolved exactly once, as
//!
//! * [`StreamAction::Acked`] when the peer's NC_ACK shows the symbol
//!   decoded (or the packet that carried it is acknowledged after all);
//! * [`StreamAction::Retransmit`] when no repair that could cover it has
//!   been sent for `RTT + 4 RTTVAR` (so repair is not coming), or when the
//!   coding layer gave the symbol up.
//!
//! An entry lives until quiche resolves its packet (acknowledged, or
//! declared lost after the peer decoded it: that loss is released as
//! acknowledged at once), so it outlives the peer's decoding point by
//! about a round trip. Memory: at most [`Book::with_capacity`] entries;
//! older ones are forgotten (their late loss reports are retransmitted).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use quiche::extension::StreamAction;

use super::wire::{Range, Ranges};

/// A symbol the book knows.
#[derive(Debug)]
struct Sent {
    pkt_num: u64,
    ranges: Ranges,
    bytes: usize,
}

/// Deferred ranges of one symbol.
#[derive(Debug)]
struct Deferred {
    ranges: Vec<Range>,
    /// Deadline of the retransmission fallback.
    deadline: Instant,
}

/// How a lost range was handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossDecision {
    /// Not ours to defer: quiche retransmits it as usual.
    Retransmit,
    /// Deferred until the symbol is decoded or the fallback fires.
    Deferred {
        /// The symbol that carried the range.
        index: u64,
    },
    /// Reported lost again while already deferred (a PTO re-queued the
    /// frames, then the packet was declared lost): still deferred, not a
    /// new deferral.
    AlreadyDeferred {
        /// The symbol that carried the range.
        index: u64,
    },
    /// The peer already decoded the symbol: released as acknowledged at
    /// once.
    AlreadyDecoded {
        /// The symbol that carried the range.
        index: u64,
        /// The packet that carried it.
        pkt_num: u64,
        /// Its symbol's bytes.
        bytes: usize,
    },
}

/// What a resolution freed, for statistics and controller feedback.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Ranges resolved.
    pub ranges: u64,
    /// Packet numbers of the symbols whose deferrals were resolved (one
    /// per symbol).
    pub pkt_nums: Vec<u64>,
    /// Bytes of those packets' symbols.
    pub bytes: usize,
    /// The symbols.
    pub indexes: Vec<u64>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Book {
    /// Most entries kept.
    cap: usize,
    /// Symbols `[base, base + sent.len())`; `None` for an index the book
    /// dropped (acknowledged, decoded or given up).
    sent: VecDeque<Option<Sent>>,
    base: u64,
    by_range: HashMap<(u64, u64, usize), u64>,
    deferred: BTreeMap<u64, Deferred>,
    /// The peer decoded every symbol below this (NC_ACK I_p).
    decoded_below: u64,
    /// Symbols below this were given up by the coding layer.
    abandoned_below: u64,
    actions: VecDeque<StreamAction>,
}

impl Book {
    /// An empty book keeping at most `cap` symbols (use a few times the
    /// coding window: entries outlive the window by the transport's loss
    /// detection delay).
    pub fn with_capacity(cap: usize) -> Book {
        Book {
            cap: cap.max(1),
            sent: VecDeque::new(),
            base: 0,
            by_range: HashMap::new(),
            deferred: BTreeMap::new(),
            decoded_below: 0,
            abandoned_below: 0,
            actions: VecDeque::new(),
        }
    }

    /// Deferrals not yet resolved (ranges).
    pub fn pending(&self) -> usize {
        self.deferred.values().map(|d| d.ranges.len()).sum()
    }

    /// Symbols the book holds.
    pub fn len(&self) -> usize {
        self.sent.iter().filter(|s| s.is_some()).count()
    }

    /// Whether the book holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Source symbol `index` was sent in packet `pkt_num` with `ranges`.
    /// Indexes are consecutive.
    pub fn on_source_sent(&mut self, index: u64, pkt_num: u64, ranges: Ranges, bytes: usize) {
        if self.sent.is_empty() {
            self.base = index;
        }
        debug_assert_eq!(index, self.base + self.sent.len() as u64);
        for r in &ranges {
            self.by_range.insert((r.stream, r.offset, r.len), index);
        }
        self.sent.push_back(Some(Sent {
            pkt_num,
            ranges,
            bytes,
        }));
        while self.sent.len() > self.cap {
            // Forget the oldest symbol; a deferral of it is resolved (by
            // retransmission), never dropped. `take` trims the front.
            let i = self.base;
            self.retransmit(i);
        }
    }

    fn get(&self, index: u64) -> Option<&Sent> {
        let off = index.checked_sub(self.base)?;
        self.sent.get(off as usize)?.as_ref()
    }

    fn take(&mut self, index: u64) -> Option<Sent> {
        let off = index.checked_sub(self.base)?;
        let s = self.sent.get_mut(off as usize)?.take()?;
        for r in &s.ranges {
            self.by_range.remove(&(r.stream, r.offset, r.len));
        }
        while self.sent.front().is_some_and(|s| s.is_none()) {
            self.sent.pop_front();
            self.base += 1;
        }
        Some(s)
    }

    /// quiche declared `range` lost. `rto` is the retransmission fallback
    /// delay (`RTT + 4 RTTVAR`).
    pub fn on_stream_lost(&mut self, range: Range, now: Instant, rto: Duration) -> LossDecision {
        let Some(&index) = self.by_range.get(&(range.stream, range.offset, range.len)) else {
            return LossDecision::Retransmit;
        };
        if index < self.abandoned_below && index >= self.decoded_below {
            return LossDecision::Retransmit;
        }
        if index < self.decoded_below {
            self.actions.push_back(acked(range));
            let s = self.take(index);
            return LossDecision::AlreadyDecoded {
                index,
                pkt_num: s.as_ref().map_or(0, |s| s.pkt_num),
                bytes: s.map_or(0, |s| s.bytes),
            };
        }
        let d = self.deferred.entry(index).or_insert(Deferred {
            ranges: Vec::new(),
            deadline: now + rto,
        });
        if d.ranges.contains(&range) {
            return LossDecision::AlreadyDeferred { index };
        }
        d.ranges.push(range);
        LossDecision::Deferred { index }
    }

    /// A repair over `[first, first + count)` was sent: deferrals it covers
    /// wait another `rto` for it.
    pub fn on_repair_sent(&mut self, first: u64, count: u64, now: Instant, rto: Duration) {
        for d in self.deferred.range_mut(first..first.saturating_add(count)) {
            d.1.deadline = d.1.deadline.max(now + rto);
        }
    }

    /// The packet carrying `index` was acknowledged: its data is the
    /// peer's (quiche acknowledges the ranges itself).
    pub fn on_source_acked(&mut self, index: u64) -> Resolved {
        let mut out = Resolved::default();
        if let Some(d) = self.deferred.remove(&index) {
            out.ranges = d.ranges.len() as u64;
            self.actions.extend(d.ranges.into_iter().map(acked));
        }
        self.take(index);
        out
    }

    /// The peer decoded every symbol below `below`: their deferrals are
    /// released as acknowledged. Returns what was released (the lost
    /// packets the decoder recovered).
    pub fn on_decoded(&mut self, below: u64) -> Resolved {
        let mut out = Resolved::default();
        if below <= self.decoded_below {
            return out;
        }
        self.decoded_below = below;
        let keep = self.deferred.split_off(&below);
        let done = std::mem::replace(&mut self.deferred, keep);
        for (index, d) in done {
            out.ranges += d.ranges.len() as u64;
            self.actions.extend(d.ranges.into_iter().map(acked));
            if let Some(s) = self.get(index) {
                out.pkt_nums.push(s.pkt_num);
                out.bytes += s.bytes;
            }
            out.indexes.push(index);
            self.take(index);
        }
        out
    }

    /// The coding layer gave up symbol `index`: its deferred data is
    /// retransmitted, and later losses of it are not deferred.
    pub fn on_abandoned(&mut self, index: u64) -> Resolved {
        self.abandoned_below = self.abandoned_below.max(index + 1);
        self.retransmit(index)
    }

    fn retransmit(&mut self, index: u64) -> Resolved {
        let mut out = Resolved::default();
        if let Some(d) = self.deferred.remove(&index) {
            out.ranges = d.ranges.len() as u64;
            self.actions
                .extend(d.ranges.into_iter().map(|r| StreamAction::Retransmit {
                    stream_id: r.stream,
                    offset: r.offset,
                    len: r.len,
                    fin: r.fin,
                }));
            if let Some(s) = self.get(index) {
                out.pkt_nums.push(s.pkt_num);
                out.bytes += s.bytes;
            }
            out.indexes.push(index);
        }
        // A later loss report of the same range is retransmitted as usual.
        self.take(index);
        out
    }

    /// Earliest retransmission fallback.
    pub fn deadline(&self) -> Option<Instant> {
        self.deferred.values().map(|d| d.deadline).min()
    }

    /// Fires the fallbacks due at `now`: their data is retransmitted.
    pub fn on_timeout(&mut self, now: Instant) -> Resolved {
        let due: Vec<u64> = self
            .deferred
            .iter()
            .filter(|(_, d)| d.deadline <= now)
            .map(|(&i, _)| i)
            .collect();
        let mut out = Resolved::default();
        for i in due {
            let r = self.retransmit(i);
            out.ranges += r.ranges;
            out.pkt_nums.extend(r.pkt_nums);
            out.bytes += r.bytes;
            out.indexes.extend(r.indexes);
        }
        out
    }

    /// Next resolution for quiche.
    pub fn next_action(&mut self) -> Option<StreamAction> {
        self.actions.pop_front()
    }
}

fn acked(r: Range) -> StreamAction {
    StreamAction::Acked {
        stream_id: r.stream,
        offset: r.offset,
        len: r.len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(i: u64) -> Range {
        Range {
            stream: 0,
            offset: i * 1000,
            len: 1000,
            fin: false,
        }
    }

    fn book(n: u64) -> Book {
        let mut b = Book::with_capacity(4096);
        for i in 0..n {
            b.on_source_sent(i, 100 + i, [range(i)].into_iter().collect(), 1000);
        }
        b
    }

    const RTO: Duration = Duration::from_millis(100);

    #[test]
    fn deferred_until_decoded_then_released_as_acked() {
        let t = Instant::now();
        let mut b = book(10);
        assert_eq!(
            b.on_stream_lost(range(3), t, RTO),
            LossDecision::Deferred { index: 3 }
        );
        assert_eq!(b.pending(), 1);
        assert!(b.next_action().is_none());
        let r = b.on_decoded(4);
        assert_eq!((r.ranges, r.pkt_nums.clone()), (1, vec![103]));
        assert_eq!(
            b.next_action(),
            Some(StreamAction::Acked {
                stream_id: 0,
                offset: 3000,
                len: 1000
            })
        );
        assert_eq!(b.pending(), 0);
        // quiche often declares the loss only after the NC_ACK that reports
        // the symbol decoded: released at once, not retransmitted.
        assert_eq!(
            b.on_stream_lost(range(2), t, RTO),
            LossDecision::AlreadyDecoded {
                index: 2,
                pkt_num: 102,
                bytes: 1000
            }
        );
        assert!(matches!(b.next_action(), Some(StreamAction::Acked { .. })));
        assert_eq!(b.on_stream_lost(range(2), t, RTO), LossDecision::Retransmit);
    }

    #[test]
    fn fallback_retransmits_and_repairs_postpone_it() {
        let t = Instant::now();
        let mut b = book(10);
        b.on_stream_lost(range(5), t, RTO);
        assert_eq!(b.deadline(), Some(t + RTO));
        b.on_repair_sent(4, 3, t + Duration::from_millis(50), RTO);
        assert_eq!(b.deadline(), Some(t + Duration::from_millis(150)));
        // A repair not covering it changes nothing.
        b.on_repair_sent(6, 3, t + Duration::from_millis(90), RTO);
        assert_eq!(b.deadline(), Some(t + Duration::from_millis(150)));
        assert!(b
            .on_timeout(t + Duration::from_millis(149))
            .indexes
            .is_empty());
        let r = b.on_timeout(t + Duration::from_millis(150));
        assert_eq!(r.pkt_nums, vec![105]);
        assert!(matches!(
            b.next_action(),
            Some(StreamAction::Retransmit { offset: 5000, .. })
        ));
        assert_eq!(b.deadline(), None);
        // Its retransmission is a new symbol; a repeated report of the old
        // range is not deferred again.
        assert_eq!(b.on_stream_lost(range(5), t, RTO), LossDecision::Retransmit);
    }

    #[test]
    fn a_range_reported_lost_twice_is_one_deferral() {
        let t = Instant::now();
        let mut b = book(3);
        assert_eq!(
            b.on_stream_lost(range(1), t, RTO),
            LossDecision::Deferred { index: 1 }
        );
        assert_eq!(
            b.on_stream_lost(range(1), t, RTO),
            LossDecision::AlreadyDeferred { index: 1 }
        );
        assert_eq!(b.pending(), 1);
        assert_eq!(b.on_decoded(2).ranges, 1);
        assert!(b.next_action().is_some());
        assert!(b.next_action().is_none(), "resolved once");
    }

    #[test]
    fn acknowledged_source_resolves_its_deferral() {
        // PTO re-queues frames of a packet that is acknowledged later.
        let t = Instant::now();
        let mut b = book(3);
        b.on_stream_lost(range(1), t, RTO);
        assert_eq!(b.on_source_acked(1).ranges, 1);
        assert!(matches!(b.next_action(), Some(StreamAction::Acked { .. })));
        assert_eq!(b.pending(), 0);
    }

    #[test]
    fn abandoned_symbols_are_retransmitted() {
        let t = Instant::now();
        let mut b = book(4);
        b.on_stream_lost(range(0), t, RTO);
        let r = b.on_abandoned(0);
        assert_eq!(r.ranges, 1);
        assert!(matches!(
            b.next_action(),
            Some(StreamAction::Retransmit { .. })
        ));
        assert_eq!(b.on_stream_lost(range(0), t, RTO), LossDecision::Retransmit);
    }

    #[test]
    fn entries_leave_when_resolved_and_memory_is_capped() {
        let mut b = book(1000);
        assert_eq!(b.len(), 1000);
        for i in 0..990 {
            b.on_source_acked(i);
        }
        assert_eq!(b.len(), 10);
        assert_eq!(b.by_range.len(), 10);
        assert_eq!(b.sent.len(), 10, "the front is trimmed");
        // The cap holds whatever the transport does, and a deferral at the
        // front is resolved (retransmitted) rather than forgotten.
        let t = Instant::now();
        let mut b = Book::with_capacity(8);
        for i in 0..8 {
            b.on_source_sent(i, i, [range(i)].into_iter().collect(), 1000);
        }
        b.on_stream_lost(range(0), t, RTO);
        for i in 8..100 {
            b.on_source_sent(i, i, [range(i)].into_iter().collect(), 1000);
        }
        assert_eq!(b.sent.len(), 8);
        assert_eq!(b.by_range.len(), 8);
        assert!(matches!(
            b.next_action(),
            Some(StreamAction::Retransmit { offset: 0, .. })
        ));
        assert_eq!(b.pending(), 0);
    }
}
