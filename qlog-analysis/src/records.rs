//! JSON-SEQ records, one at a time. Records are separated by RS (0x1E)
//! and/or newlines, as [`crate::Trace::parse`] reads them, and numbered
//! from 1 in the same way (empty pieces do not count). Only the record
//! being read is held in memory.

use std::io::BufRead;

use serde_json::Value;

/// Longest record accepted (a guard against a file without separators).
pub const MAX_RECORD: usize = 64 << 20;

/// Reads the records of one JSON-SEQ stream.
pub struct Records<R> {
    input: R,
    /// A record read ahead (to tell a truncated last record from a broken
    /// one in the middle).
    ahead: Option<Vec<u8>>,
    count: u64,
    /// Number of the last record, if it was cut off and ignored.
    pub truncated: Option<u64>,
}

impl<R: BufRead> Records<R> {
    /// Records of `input`.
    pub fn new(input: R) -> Records<R> {
        Records {
            input,
            ahead: None,
            count: 0,
            truncated: None,
        }
    }

    /// The next record and its number; `None` at the end. A record that is
    /// not JSON is an error unless it is the last one (a file still being
    /// written), which is then skipped and noted in `truncated`.
    pub fn next_record(&mut self) -> Result<Option<(u64, Value)>, String> {
        let Some(raw) = self.take()? else {
            return Ok(None);
        };
        self.count += 1;
        let n = self.count;
        match serde_json::from_slice(&raw) {
            Ok(v) => Ok(Some((n, v))),
            Err(e) => {
                if self.ahead.is_none() {
                    self.ahead = self.piece(n + 1)?;
                }
                if self.ahead.is_some() {
                    Err(format!("record {n}: {e}"))
                } else {
                    self.truncated = Some(n);
                    Ok(None)
                }
            }
        }
    }

    fn take(&mut self) -> Result<Option<Vec<u8>>, String> {
        match self.ahead.take() {
            Some(r) => Ok(Some(r)),
            None => self.piece(self.count + 1),
        }
    }

    /// The next non-empty piece between separators, trimmed; `n` is its
    /// record number, for errors.
    fn piece(&mut self, n: u64) -> Result<Option<Vec<u8>>, String> {
        let mut buf = Vec::new();
        loop {
            let (done, used) = {
                let avail = self
                    .input
                    .fill_buf()
                    .map_err(|e| format!("record {n}: cannot read: {e}"))?;
                if avail.is_empty() {
                    (true, 0)
                } else {
                    match avail.iter().position(|&c| c == 0x1e || c == b'\n') {
                        Some(i) => {
                            buf.extend_from_slice(&avail[..i]);
                            (true, i + 1)
                        }
                        None => {
                            buf.extend_from_slice(avail);
                            (false, avail.len())
                        }
                    }
                }
            };
            let at_end = used == 0;
            self.input.consume(used);
            if buf.len() > MAX_RECORD {
                return Err(format!(
                    "record {n}: longer than {} MiB (not JSON-SEQ?)",
                    MAX_RECORD >> 20
                ));
            }
            if done {
                let trimmed = buf.trim_ascii();
                if !trimmed.is_empty() {
                    return Ok(Some(trimmed.to_vec()));
                }
                if at_end {
                    return Ok(None);
                }
                buf.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of `text` and the number of a cut-off last one.
    type Parsed = (Vec<(u64, Value)>, Option<u64>);

    fn all(text: &str) -> Result<Parsed, String> {
        // A tiny buffer makes records straddle reads.
        let mut r = Records::new(std::io::BufReader::with_capacity(3, text.as_bytes()));
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok((out, r.truncated))
    }

    #[test]
    fn splits_on_rs_and_newlines_and_numbers_like_trace_parse() {
        let (recs, truncated) =
            all("\u{1e}{\"a\":1}\n\n\u{1e} {\"b\":2}\u{1e}{\"c\":3}\n[4]").unwrap();
        let numbers: Vec<u64> = recs.iter().map(|r| r.0).collect();
        assert_eq!(numbers, vec![1, 2, 3, 4]);
        assert_eq!(recs[2].1["c"], 3);
        assert_eq!(truncated, None);
    }

    #[test]
    fn a_cut_off_last_record_is_skipped_and_a_broken_middle_one_is_an_error() {
        let (recs, truncated) = all("\u{1e}{\"a\":1}\n\u{1e}{\"b\":[1,\n\n").unwrap();
        assert_eq!((recs.len(), truncated), (1, Some(2)));
        let e = all("\u{1e}{\"a\":1}\n\u{1e}{\"b\":\n\u{1e}{\"c\":3}\n").unwrap_err();
        assert!(e.starts_with("record 2: "), "{e}");
    }

    #[test]
    fn empty_input_has_no_records() {
        assert_eq!(all("").unwrap(), (vec![], None));
        assert_eq!(all("\n\u{1e}\n  \n").unwrap(), (vec![], None));
    }
}
