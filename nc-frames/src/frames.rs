//! Wire formats of the QUIC-NC extension (normative text: `docs/protocol.md`).
//!
//! All integers are QUIC variable-length integers (RFC 9000 Section 16)
//! unless stated otherwise. Parsers never panic and never allocate more
//! than the input length; every malformed input is an [`Error`] whose
//! [`Error::kind`] is `FrameEncoding` (or `ProtocolViolation` for values
//! that break negotiated limits, checked by the state machines).

use crate::coeffs::{Coefficients, DT_MAX};
use crate::error::{Error, Result};

/// Frame type of SOURCE_SYMBOL_ID (experimental range, 4-byte varint).
pub const FRAME_SOURCE_SYMBOL_ID: u64 = 0x4e_4300;
/// Frame type of REPAIR.
pub const FRAME_REPAIR: u64 = 0x4e_4301;
/// Frame type of NC_ACK.
pub const FRAME_NC_ACK: u64 = 0x4e_4302;
/// Frame type of NC_WINDOW (sender abandons symbols below an index).
pub const FRAME_NC_WINDOW: u64 = 0x4e_4303;
/// Transport parameter id of `nc_parameters` (experimental, not of the
/// reserved 31*N+27 form).
pub const TRANSPORT_PARAM_ID: u64 = 0x4e_4350;
/// Protocol version carried in the transport parameter.
pub const NC_VERSION: u64 = 1;
/// Field identifier: GF(2^8) with polynomial 0x11D (RFC 8681, m = 8).
pub const FIELD_GF256_11D: u8 = 8;
/// Mode bit: systematic (sources in clear plus repair).
pub const MODE_SYSTEMATIC: u8 = 0x01;
/// Mode bit: fully coded (every transmission a combination).
pub const MODE_FULLY_CODED: u8 = 0x02;
/// Largest value a varint can hold.
pub const VARINT_MAX: u64 = (1 << 62) - 1;

const COEF_SEEDED: u8 = 0;
const COEF_EXPLICIT: u8 = 1;

/// Encoded length of a varint.
pub fn varint_len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16383 => 2,
        16384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Append a varint. Values above [`VARINT_MAX`] are clamped (callers never
/// produce them: indexes are bounded by the window logic).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let v = v.min(VARINT_MAX);
    match varint_len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Minimal cursor over an input buffer.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// New reader.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// Read `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(Error::Truncated);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// Read one byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }
    /// Read a big-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// Read a QUIC varint.
    pub fn varint(&mut self) -> Result<u64> {
        let first = *self.buf.get(self.pos).ok_or(Error::Truncated)?;
        let len = 1usize << (first >> 6);
        let b = self.bytes(len)?;
        let mut v = u64::from(b[0] & 0x3f);
        for &x in &b[1..] {
            v = (v << 8) | u64::from(x);
        }
        Ok(v)
    }
}

/// REPAIR frame: one coded symbol over `[first, first + count)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairFrame {
    /// Sender's repair sequence number (for loss estimation and acks).
    pub repair_seq: u64,
    /// First source index of the combination; also tells the receiver that
    /// the sender no longer combines symbols below it.
    pub first: u64,
    /// Number of consecutive source symbols combined (>= 1).
    pub count: u64,
    /// Coefficient description.
    pub coefs: Coefficients,
    /// Coded payload (length prefix and payload, combined).
    pub data: Vec<u8>,
}

/// NC_ACK frame: the receiver's degrees-of-freedom state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckFrame {
    /// Next symbol to be decoded (all below are decoded).
    pub i_p: u64,
    /// Next unseen symbol.
    pub i_q: u64,
    /// Next unsensed symbol (VON).
    pub i_r: u64,
    /// One past the highest sensed symbol (FNC MAX_SEQ).
    pub max_seq: u64,
    /// FNC DIFF: unseen symbols below `max_seq`.
    pub diff: u64,
    /// Cumulative count of source symbols received in clear.
    pub rx_source: u64,
    /// Cumulative count of repair symbols received.
    pub rx_repair: u64,
    /// One plus the largest repair sequence number received (0 = none).
    pub repair_seq_end: u64,
}

/// A parsed QUIC-NC frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// SOURCE_SYMBOL_ID: the rest of this packet's payload is source symbol
    /// `index`.
    SourceSymbolId {
        /// Absolute source symbol index.
        index: u64,
    },
    /// REPAIR.
    Repair(RepairFrame),
    /// NC_ACK.
    Ack(AckFrame),
    /// NC_WINDOW: the sender abandoned all symbols below `abandon_below`.
    Window {
        /// First index still being coded.
        abandon_below: u64,
    },
}

impl Frame {
    /// Whether `ty` is one of this extension's frame types.
    pub fn is_nc_type(ty: u64) -> bool {
        (FRAME_SOURCE_SYMBOL_ID..=FRAME_NC_WINDOW).contains(&ty)
    }

    /// Parse one frame (including its type) from the start of `buf`; returns
    /// the frame and the number of bytes consumed.
    pub fn parse(buf: &[u8]) -> Result<(Frame, usize)> {
        let mut r = Reader::new(buf);
        let ty = r.varint()?;
        let f = Frame::parse_body(ty, &mut r)?;
        Ok((f, r.pos()))
    }

    /// Parse the body of a frame whose type `ty` was already read.
    pub fn parse_body(ty: u64, r: &mut Reader<'_>) -> Result<Frame> {
        match ty {
            FRAME_SOURCE_SYMBOL_ID => Ok(Frame::SourceSymbolId { index: r.varint()? }),
            FRAME_REPAIR => {
                let repair_seq = r.varint()?;
                let first = r.varint()?;
                let count = r.varint()?;
                if count == 0 {
                    return Err(Error::Malformed("REPAIR count is 0"));
                }
                if first.checked_add(count).is_none_or(|e| e > VARINT_MAX + 1) {
                    return Err(Error::Malformed("REPAIR window overflows"));
                }
                let coefs = match r.u8()? {
                    COEF_SEEDED => {
                        let repair_key = r.u16()?;
                        let dt = r.u8()?;
                        if dt > DT_MAX {
                            return Err(Error::Malformed("REPAIR density > 15"));
                        }
                        Coefficients::Seeded { repair_key, dt }
                    }
                    COEF_EXPLICIT => {
                        if count > r.remaining() as u64 {
                            return Err(Error::Truncated);
                        }
                        Coefficients::Explicit(r.bytes(count as usize)?.to_vec())
                    }
                    _ => return Err(Error::Malformed("REPAIR coefficient mode")),
                };
                let len = r.varint()?;
                if len > r.remaining() as u64 {
                    return Err(Error::Truncated);
                }
                let data = r.bytes(len as usize)?.to_vec();
                Ok(Frame::Repair(RepairFrame {
                    repair_seq,
                    first,
                    count,
                    coefs,
                    data,
                }))
            }
            FRAME_NC_ACK => {
                let i_p = r.varint()?;
                let d_q = r.varint()?;
                let d_r = r.varint()?;
                let d_m = r.varint()?;
                let diff = r.varint()?;
                let rx_source = r.varint()?;
                let rx_repair = r.varint()?;
                let repair_seq_end = r.varint()?;
                let i_q = i_p
                    .checked_add(d_q)
                    .ok_or(Error::Malformed("NC_ACK overflow"))?;
                let i_r = i_q
                    .checked_add(d_r)
                    .ok_or(Error::Malformed("NC_ACK overflow"))?;
                let max_seq = i_r
                    .checked_add(d_m)
                    .ok_or(Error::Malformed("NC_ACK overflow"))?;
                if max_seq > VARINT_MAX || diff > max_seq - i_q {
                    return Err(Error::Malformed("NC_ACK fields inconsistent"));
                }
                Ok(Frame::Ack(AckFrame {
                    i_p,
                    i_q,
                    i_r,
                    max_seq,
                    diff,
                    rx_source,
                    rx_repair,
                    repair_seq_end,
                }))
            }
            FRAME_NC_WINDOW => Ok(Frame::Window {
                abandon_below: r.varint()?,
            }),
            other => Err(Error::UnknownFrameType(other)),
        }
    }

    /// Append the encoding (type included) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Frame::SourceSymbolId { index } => {
                put_varint(out, FRAME_SOURCE_SYMBOL_ID);
                put_varint(out, *index);
            }
            Frame::Repair(f) => {
                put_varint(out, FRAME_REPAIR);
                put_varint(out, f.repair_seq);
                put_varint(out, f.first);
                put_varint(out, f.count);
                match &f.coefs {
                    Coefficients::Seeded { repair_key, dt } => {
                        out.push(COEF_SEEDED);
                        out.extend_from_slice(&repair_key.to_be_bytes());
                        out.push(*dt);
                    }
                    Coefficients::Explicit(v) => {
                        out.push(COEF_EXPLICIT);
                        out.extend_from_slice(v);
                    }
                }
                put_varint(out, f.data.len() as u64);
                out.extend_from_slice(&f.data);
            }
            Frame::Ack(a) => {
                put_varint(out, FRAME_NC_ACK);
                put_varint(out, a.i_p);
                put_varint(out, a.i_q.saturating_sub(a.i_p));
                put_varint(out, a.i_r.saturating_sub(a.i_q));
                put_varint(out, a.max_seq.saturating_sub(a.i_r));
                put_varint(out, a.diff);
                put_varint(out, a.rx_source);
                put_varint(out, a.rx_repair);
                put_varint(out, a.repair_seq_end);
            }
            Frame::Window { abandon_below } => {
                put_varint(out, FRAME_NC_WINDOW);
                put_varint(out, *abandon_below);
            }
        }
    }

    /// Encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        let mut v = Vec::new();
        self.encode(&mut v);
        v.len()
    }
}

/// Upper bound of REPAIR framing bytes for seeded coefficients (type 4,
/// three 8-byte varints, mode 1, key+DT 3, length 8).
pub const REPAIR_OVERHEAD_MAX: usize = 4 + 8 + 8 + 8 + 1 + 3 + 8;

/// Bytes of REPAIR framing around `data_len` coded bytes (worst case for the
/// given fields; used to size repair symbols to a packet budget).
pub fn repair_overhead(
    repair_seq: u64,
    first: u64,
    count: u64,
    coefs: &Coefficients,
    data_len: usize,
) -> usize {
    varint_len(FRAME_REPAIR)
        + varint_len(repair_seq)
        + varint_len(first)
        + varint_len(count)
        + 1
        + match coefs {
            Coefficients::Seeded { .. } => 3,
            Coefficients::Explicit(v) => v.len(),
        }
        + varint_len(data_len as u64)
}

/// The `nc_parameters` transport parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParams {
    /// Protocol version ([`NC_VERSION`]).
    pub version: u64,
    /// Field identifier ([`FIELD_GF256_11D`]).
    pub field: u8,
    /// Largest decoding window (symbols) the sender of this parameter accepts.
    pub max_window: u64,
    /// Largest source symbol payload (bytes) it accepts.
    pub max_symbol_size: u64,
    /// Supported modes ([`MODE_SYSTEMATIC`] | [`MODE_FULLY_CODED`]).
    pub modes: u8,
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            version: NC_VERSION,
            field: FIELD_GF256_11D,
            max_window: 64,
            max_symbol_size: 1500,
            modes: MODE_SYSTEMATIC | MODE_FULLY_CODED,
        }
    }
}

/// Hard cap on a negotiated window (bounds receiver memory at 2 * window *
/// symbol size).
pub const MAX_WINDOW_LIMIT: u64 = 4096;

impl TransportParams {
    /// Encode the parameter *value* (without id and length).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.version);
        out.push(self.field);
        put_varint(out, self.max_window);
        put_varint(out, self.max_symbol_size);
        out.push(self.modes);
    }

    /// Decode a parameter value. Unknown trailing bytes are a
    /// FRAME_ENCODING-class error (the value must be consumed exactly);
    /// unsupported versions/fields and out-of-range limits are protocol
    /// violations.
    pub fn decode(buf: &[u8]) -> Result<TransportParams> {
        let mut r = Reader::new(buf);
        let tp = TransportParams {
            version: r.varint()?,
            field: r.u8()?,
            max_window: r.varint()?,
            max_symbol_size: r.varint()?,
            modes: r.u8()?,
        };
        if r.remaining() != 0 {
            return Err(Error::Malformed("trailing bytes in nc_parameters"));
        }
        if tp.version != NC_VERSION {
            return Err(Error::Unsupported("version"));
        }
        if tp.field != FIELD_GF256_11D {
            return Err(Error::Unsupported("field"));
        }
        if tp.max_window == 0 || tp.max_window > MAX_WINDOW_LIMIT {
            return Err(Error::Unsupported("max_window"));
        }
        if tp.max_symbol_size == 0 || tp.max_symbol_size > u16::MAX as u64 {
            return Err(Error::Unsupported("max_symbol_size"));
        }
        if tp.modes & (MODE_SYSTEMATIC | MODE_FULLY_CODED) == 0 || tp.modes & !0x03 != 0 {
            return Err(Error::Unsupported("modes"));
        }
        Ok(tp)
    }

    /// The parameters both sides use: the smaller limits and the common
    /// modes. `None` if no mode is common.
    pub fn negotiate(&self, peer: &TransportParams) -> Option<TransportParams> {
        let modes = self.modes & peer.modes;
        if modes == 0 {
            return None;
        }
        Some(TransportParams {
            version: NC_VERSION,
            field: FIELD_GF256_11D,
            max_window: self.max_window.min(peer.max_window),
            max_symbol_size: self.max_symbol_size.min(peer.max_symbol_size),
            modes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::Rng;

    fn roundtrip(f: &Frame) {
        let mut v = Vec::new();
        f.encode(&mut v);
        assert_eq!(v.len(), f.encoded_len());
        let (g, n) = Frame::parse(&v).unwrap();
        assert_eq!(&g, f);
        assert_eq!(n, v.len());
        // Every strict prefix is an error, never a panic.
        for k in 0..v.len() {
            assert!(Frame::parse(&v[..k]).is_err(), "prefix {k} of {f:?}");
        }
    }

    #[test]
    fn varint_boundaries() {
        for v in [
            0,
            63,
            64,
            16383,
            16384,
            1_073_741_823,
            1_073_741_824,
            VARINT_MAX,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(Reader::new(&b).varint().unwrap(), v);
        }
        assert_eq!(varint_len(FRAME_REPAIR), 4);
    }

    #[test]
    fn frames_roundtrip_exhaustive_shapes() {
        let vals = [0u64, 1, 63, 64, 16383, 16384, 1 << 30, VARINT_MAX >> 1];
        for &a in &vals {
            roundtrip(&Frame::SourceSymbolId { index: a });
            roundtrip(&Frame::Window { abandon_below: a });
            for &d in &[0u64, 1, 64, 20000] {
                roundtrip(&Frame::Ack(AckFrame {
                    i_p: a,
                    i_q: a + d,
                    i_r: a + 2 * d,
                    max_seq: a + 3 * d + 1,
                    diff: d.min(2 * d + 1),
                    rx_source: a / 3,
                    rx_repair: d,
                    repair_seq_end: a ^ d,
                }));
            }
        }
        let mut rng = Rng::new(1);
        for _ in 0..300 {
            let count = 1 + rng.below(70);
            let mut data = vec![0u8; rng.below(1300) as usize];
            rng.fill(&mut data);
            let coefs = if rng.below(2) == 0 {
                Coefficients::Seeded {
                    repair_key: rng.next_u64() as u16,
                    dt: rng.below(16) as u8,
                }
            } else {
                Coefficients::Explicit((0..count).map(|_| rng.byte()).collect())
            };
            let f = RepairFrame {
                repair_seq: rng.next_u64() >> (2 + rng.below(60)),
                first: rng.next_u64() >> (3 + rng.below(60)),
                count,
                coefs: coefs.clone(),
                data,
            };
            let oh = repair_overhead(f.repair_seq, f.first, f.count, &coefs, f.data.len());
            let fr = Frame::Repair(f.clone());
            assert_eq!(fr.encoded_len(), oh + f.data.len());
            roundtrip(&fr);
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        let mut v = Vec::new();
        put_varint(&mut v, FRAME_REPAIR);
        put_varint(&mut v, 0);
        put_varint(&mut v, 5);
        put_varint(&mut v, 0); // count 0
        v.extend_from_slice(&[0, 0, 1, 15, 0]);
        assert!(matches!(Frame::parse(&v), Err(Error::Malformed(_))));
        let mut v = Vec::new();
        Frame::Repair(RepairFrame {
            repair_seq: 0,
            first: 0,
            count: 2,
            coefs: Coefficients::Seeded {
                repair_key: 0,
                dt: 15,
            },
            data: vec![],
        })
        .encode(&mut v);
        let dt_pos = v.len() - 2;
        v[dt_pos] = 16;
        assert!(matches!(Frame::parse(&v), Err(Error::Malformed(_))));
        v[dt_pos - 3] = 7; // coefficient mode
        assert!(Frame::parse(&v).is_err());
        // ACK with diff larger than possible.
        let mut v = Vec::new();
        for x in [FRAME_NC_ACK, 5, 1, 1, 1, 3, 0, 0, 0] {
            put_varint(&mut v, x);
        }
        assert!(Frame::parse(&v).is_err());
        assert_eq!(Frame::parse(&[0x01]), Err(Error::UnknownFrameType(1)));
        assert_eq!(Frame::parse(&[]), Err(Error::Truncated));
        // Huge explicit count with tiny input: no allocation, just an error.
        let mut v = Vec::new();
        for x in [FRAME_REPAIR, 0, 0, 1 << 40] {
            put_varint(&mut v, x);
        }
        v.push(1);
        assert_eq!(Frame::parse(&v), Err(Error::Truncated));
        assert!(Error::Truncated.quic_code() == Some(0x07));
    }

    #[test]
    fn transport_params() {
        let tp = TransportParams::default();
        let mut v = Vec::new();
        tp.encode(&mut v);
        assert_eq!(TransportParams::decode(&v).unwrap(), tp);
        for k in 0..v.len() {
            assert!(TransportParams::decode(&v[..k]).is_err());
        }
        let mut bad = v.clone();
        bad.push(0);
        assert!(TransportParams::decode(&bad).is_err());
        let mut bad = v.clone();
        bad[1] = 9;
        assert_eq!(
            TransportParams::decode(&bad),
            Err(Error::Unsupported("field"))
        );
        let other = TransportParams {
            max_window: 16,
            modes: MODE_SYSTEMATIC,
            ..tp.clone()
        };
        let n = tp.negotiate(&other).unwrap();
        assert_eq!((n.max_window, n.modes), (16, MODE_SYSTEMATIC));
        assert!(other
            .negotiate(&TransportParams {
                modes: MODE_FULLY_CODED,
                ..tp
            })
            .is_none());
        assert_ne!((TRANSPORT_PARAM_ID - 27) % 31, 0, "not a GREASE id");
    }
}
