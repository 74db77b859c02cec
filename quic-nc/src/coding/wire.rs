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
}
