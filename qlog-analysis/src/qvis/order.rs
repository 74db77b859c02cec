//! A bounded reorder window. Writers log some events with a time earlier
//! than events already written (QUIC-NC queues its `nc:` events and writes
//! them after the packet, with the time they were queued), while
//! qvis wants every trace in time order (it re-sorts the whole trace and
//! shows an alert otherwise). The window holds at most `capacity` events
//! and releases the earliest; an event later than the window can fix is
//! released at the time of the event before it (clamped).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An event released by the [`Window`].
#[derive(Debug, PartialEq)]
pub struct Released<T> {
    /// Time to write: never earlier than the previous release.
    pub time: f64,
    /// The event's own time when it was clamped.
    pub clamped_from: Option<f64>,
    /// The event.
    pub item: T,
}

/// Holds up to `capacity` events and releases them in time order (file
/// order among equal times).
pub struct Window<T> {
    heap: BinaryHeap<Entry<T>>,
    capacity: usize,
    seq: u64,
    latest_in: f64,
    last_out: f64,
    /// Events whose time was earlier than an event before them.
    pub late: u64,
    /// Late events released at the previous event's time.
    pub clamped: u64,
}

impl<T> Window<T> {
    /// An empty window; `capacity` 0 releases every event at once (late
    /// events are then all clamped).
    pub fn new(capacity: usize) -> Window<T> {
        Window {
            heap: BinaryHeap::with_capacity(capacity.min(1 << 16) + 1),
            capacity,
            seq: 0,
            latest_in: f64::NEG_INFINITY,
            last_out: f64::NEG_INFINITY,
            late: 0,
            clamped: 0,
        }
    }

    /// Adds an event; releases the earliest one once the window is full.
    pub fn push(&mut self, time: f64, item: T) -> Option<Released<T>> {
        if time < self.latest_in {
            self.late += 1;
        }
        self.latest_in = self.latest_in.max(time);
        self.heap.push(Entry {
            time,
            seq: self.seq,
            item,
        });
        self.seq += 1;
        if self.heap.len() > self.capacity {
            self.pop()
        } else {
            None
        }
    }

    /// Releases the earliest event held (to drain the window at the end).
    pub fn pop(&mut self) -> Option<Released<T>> {
        let e = self.heap.pop()?;
        if e.time < self.last_out {
            self.clamped += 1;
            return Some(Released {
                time: self.last_out,
                clamped_from: Some(e.time),
                item: e.item,
            });
        }
        self.last_out = e.time;
        Some(Released {
            time: e.time,
            clamped_from: None,
            item: e.item,
        })
    }

    /// Events held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

struct Entry<T> {
    time: f64,
    seq: u64,
    item: T,
}

impl<T> Ord for Entry<T> {
    /// Reversed, so that the max-heap yields the earliest (then first-read)
    /// event.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then(other.seq.cmp(&self.seq))
    }
}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Entry<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(capacity: usize, times: &[f64]) -> (Vec<(f64, usize)>, u64, u64) {
        let mut w = Window::new(capacity);
        let mut out = Vec::new();
        for (i, t) in times.iter().enumerate() {
            out.extend(w.push(*t, i).map(|r| (r.time, r.item)));
            assert!(w.len() <= capacity);
        }
        while let Some(r) = w.pop() {
            out.push((r.time, r.item));
        }
        (out, w.late, w.clamped)
    }

    #[test]
    fn late_events_within_the_window_are_put_in_order() {
        let (out, late, clamped) = run(4, &[1.0, 2.0, 3.0, 1.5, 4.0, 4.0, 5.0]);
        assert_eq!(
            out,
            vec![
                (1.0, 0),
                (1.5, 3),
                (2.0, 1),
                (3.0, 2),
                (4.0, 4),
                (4.0, 5),
                (5.0, 6)
            ]
        );
        assert_eq!((late, clamped), (1, 0));
    }

    #[test]
    fn events_too_late_for_the_window_are_clamped() {
        let (out, late, clamped) = run(1, &[1.0, 2.0, 3.0, 0.5, 4.0]);
        let times: Vec<f64> = out.iter().map(|o| o.0).collect();
        assert_eq!(times, vec![1.0, 2.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            out[2].1, 3,
            "the late event is released at the previous time"
        );
        assert_eq!((late, clamped), (1, 1));
        let (out, _, clamped) = run(0, &[2.0, 1.0]);
        assert_eq!((out, clamped), (vec![(2.0, 0), (2.0, 1)], 1));
    }
}
