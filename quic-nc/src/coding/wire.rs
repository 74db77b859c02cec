//! The data frames a source symbol is made of: the STREAM ranges a sent
//! symbol carries (to match quiche's loss reports against it), and the
//! check that a received symbol holds only frames a recovered copy may
//! carry.

use nc_frames::frames::Reader;
use smallvec::SmallVec;

/// One STREAM frame's range: stream id, offset, length, FIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Range {
    /// Stream id.
    pub stream: u64,
    /// Offset of the first byte.
    pub offset: u64,
    /// Bytes.
    pub len: usize,
    /// Whether the frame carried the FIN.
    pub fin: bool,
}

/// The STREAM ranges of a symbol (quiche writes one STREAM frame per
/// packet; DATAGRAM frames may precede it).
pub type Ranges = SmallVec<[Range; 2]>;

/// Parses `data` as a sequence of STREAM, DATAGRAM and PADDING frames,
/// every STREAM and DATAGRAM frame with an explicit length, and returns
/// the STREAM ranges. `None` if anything else is there or a frame runs
/// past the end.
pub fn data_frames(data: &[u8]) -> Option<Ranges> {
    let mut r = Reader::new(data);
    let mut out = Ranges::new();
    while r.remaining() > 0 {
        let ty = r.varint().ok()?;
        match ty {
            0x00 => {}
            0x08..=0x0f => {
                // OFF = 0x04, LEN = 0x02, FIN = 0x01 (RFC 9000 19.8).
                if ty & 0x02 == 0 {
                    return None;
                }
                let stream = r.varint().ok()?;
                let offset = if ty & 0x04 != 0 { r.varint().ok()? } else { 0 };
                let len = r.varint().ok()?;
                let len = usize::try_from(len).ok().filter(|&l| l <= r.remaining())?;
                r.bytes(len).ok()?;
                out.push(Range {
                    stream,
                    offset,
                    len,
                    fin: ty & 0x01 != 0,
                });
            }
            0x31 => {
                let len = r.varint().ok()?;
                let len = usize::try_from(len).ok().filter(|&l| l <= r.remaining())?;
                r.bytes(len).ok()?;
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nc_frames::frames::put_varint;

    fn stream(ty: u64, id: u64, off: u64, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        put_varint(&mut v, ty);
        put_varint(&mut v, id);
        if ty & 0x04 != 0 {
            put_varint(&mut v, off);
        }
        put_varint(&mut v, data.len() as u64);
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn stream_datagram_and_padding() {
        let mut p = vec![0x31, 2, b'd', b'g'];
        p.extend(stream(0x0f, 4, 1000, b"hello"));
        p.extend([0, 0, 0]);
        p.extend(stream(0x0a, 8, 0, b"x"));
        let r = data_frames(&p).unwrap();
        assert_eq!(
            r.as_slice(),
            [
                Range {
                    stream: 4,
                    offset: 1000,
                    len: 5,
                    fin: true
                },
                Range {
                    stream: 8,
                    offset: 0,
                    len: 1,
                    fin: false
                }
            ]
        );
    }

    #[test]
    fn anything_else_is_refused() {
        // ACK, a STREAM frame without length, DATAGRAM without length,
        // truncated data, an unknown type.
        for p in [
            vec![0x02, 0, 0, 0, 0],
            stream(0x0c, 4, 1, b"ab")[..0].to_vec(),
            vec![0x08, 4, b'a'],
            vec![0x30, b'a'],
            {
                let mut v = stream(0x0e, 4, 1, b"abcd");
                v.pop();
                v
            },
            vec![0x40, 0x21],
        ] {
            if p.is_empty() {
                assert_eq!(data_frames(&p).map(|r| r.len()), Some(0));
            } else {
                assert!(data_frames(&p).is_none(), "{p:?}");
            }
        }
    }

    /// Network input: random bytes (biased towards the accepted frame
    /// types) never panic, and accepted ranges never claim more bytes
    /// than the input holds. Well-formed sequences always parse back.
    #[test]
    fn random_input_is_refused_or_bounded() {
        let mut rng = nc_frames::testrng::Rng::new(8);
        for _ in 0..50_000 {
            let mut v = vec![0u8; rng.below(48) as usize];
            rng.fill(&mut v);
            if !v.is_empty() && rng.below(2) == 0 {
                v[0] = [0x00, 0x0a, 0x0e, 0x0f, 0x31][rng.below(5) as usize];
            }
            if let Some(r) = data_frames(&v) {
                assert!(r.iter().map(|x| x.len).sum::<usize>() <= v.len(), "{v:?}");
            }
        }
        for _ in 0..2_000 {
            let mut v = Vec::new();
            let mut want = Vec::new();
            for _ in 0..rng.below(4) {
                let mut d = vec![0u8; rng.below(40) as usize];
                rng.fill(&mut d);
                match rng.below(3) {
                    0 => v.push(0),
                    1 => {
                        v.push(0x31);
                        put_varint(&mut v, d.len() as u64);
                        v.extend_from_slice(&d);
                    }
                    _ => {
                        let ty = 0x0a | (rng.below(2) * 4) | rng.below(2);
                        let (id, off) = (rng.below(1 << 40), rng.below(1 << 60));
                        v.extend(stream(ty, id, off, &d));
                        want.push(Range {
                            stream: id,
                            offset: if ty & 0x04 != 0 { off } else { 0 },
                            len: d.len(),
                            fin: ty & 1 != 0,
                        });
                    }
                }
            }
            assert_eq!(data_frames(&v).map(|r| r.to_vec()), Some(want));
        }
    }
}
