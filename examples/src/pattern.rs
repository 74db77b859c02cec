//! The deterministic byte pattern behind the server's `/bytes/<n>`
//! resource: byte `i` of the body is `b'a' + (i % 26)`.
//!
//! [`Pattern`] hands out slices of one small precomputed table, so a body
//! of any length is streamed without an allocation of its size.

/// Length of the repeating period.
const PERIOD: usize = 26;

/// Value of byte `offset` of a pattern body.
pub fn byte_at(offset: u64) -> u8 {
    b'a' + (offset % PERIOD as u64) as u8
}

/// A reusable table from which pattern chunks are sliced.
#[derive(Debug, Clone)]
pub struct Pattern {
    table: Vec<u8>,
    chunk: usize,
}

impl Pattern {
    /// Creates a source able to hand out chunks of up to `chunk` bytes.
    pub fn new(chunk: usize) -> Pattern {
        let table = (0..(chunk + PERIOD) as u64).map(byte_at).collect();
        Pattern { table, chunk }
    }

    /// The bytes `[offset, offset + len)` of the body, `len` capped at the
    /// chunk size given to [`Pattern::new`].
    pub fn slice(&self, offset: u64, len: u64) -> &[u8] {
        let start = (offset % PERIOD as u64) as usize;
        let len = len.min(self.chunk as u64) as usize;
        &self.table[start..start + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_match_byte_at() {
        let p = Pattern::new(100);
        for off in [0u64, 1, 25, 26, 27, 1_000_003, u64::MAX - 200] {
            let s = p.slice(off, 100);
            assert_eq!(s.len(), 100);
            for (i, b) in s.iter().enumerate() {
                assert_eq!(*b, byte_at(off + i as u64));
            }
        }
        assert_eq!(p.slice(5, 1_000).len(), 100);
        assert_eq!(p.slice(5, 3), b"fgh");
    }
}
