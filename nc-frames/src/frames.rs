//! Wire formats of the QUIC-NC extension (normative text: `docs/protocol.md`).
//!
//! All integers are QUIC variable-length integers (RFC 9000 Section 16)
//! unless stated otherwise. Parsers never panic and never allocate more
//! than the input length; every malformed input is an [`Error`] whose
//! [`Error::kind`] is `FrameEncoding` (or `ProtocolViolation` for values
//! that break negotiated limits, checked by the state machines).

use crate::coeffs::{CoefRef, Coefficients, DT_MAX};
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
/// produce them: every value written is bounded by the window logic or
/// checked before, e.g. the repair sequence at parse time).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 8];
    let n = write_varint(&mut b, v.min(VARINT_MAX)).unwrap_or(0);
    out.extend_from_slice(&b[..n]);
}

/// Write a varint at the start of `out`; returns its length, or `None` if
/// it does not fit or `v` exceeds [`VARINT_MAX`] (nothing is clamped).
pub fn write_varint(out: &mut [u8], v: u64) -> Option<usize> {
    if v > VARINT_MAX {
        return None;
    }
    let n = varint_len(v);
    let dst = out.get_mut(..n)?;
    match n {
        1 => dst[0] = v as u8,
        2 => dst.copy_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => dst.copy_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => dst.copy_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
    Some(n)
}

/// Minimal cursor writing into a caller's buffer (a packet being built).
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    /// New writer at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer { buf, pos: 0 }
    }
    /// Bytes written so far.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Write a varint.
    pub fn varint(&mut self, v: u64) -> Option<()> {
        self.pos += write_varint(&mut self.buf[self.pos..], v)?;
        Some(())
    }
    /// Write bytes.
    pub fn bytes(&mut self, b: &[u8]) -> Option<()> {
        self.buf
            .get_mut(self.pos..self.pos + b.len())?
            .copy_from_slice(b);
        self.pos += b.len();
        Some(())
    }
    /// The next `n` bytes, to be filled by the caller (counted as written).
    pub fn reserve(&mut self, n: usize) -> Option<&mut [u8]> {
        let s = self.buf.get_mut(self.pos..self.pos + n)?;
        self.pos += n;
        Some(s)
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

impl RepairFrame {
    /// A borrowed view.
    pub fn as_ref(&self) -> RepairRef<'_> {
        RepairRef {
            repair_seq: self.repair_seq,
            first: self.first,
            count: self.count,
            coefs: self.coefs.as_ref(),
            data: &self.data,
        }
    }
}

/// A REPAIR frame as parsed, borrowing its coefficients and payload from
/// the input (the parser never allocates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepairRef<'a> {
    /// See [`RepairFrame::repair_seq`].
    pub repair_seq: u64,
    /// See [`RepairFrame::first`].
    pub first: u64,
    /// See [`RepairFrame::count`].
    pub count: u64,
    /// Coefficient description.
    pub coefs: CoefRef<'a>,
    /// Coded payload.
    pub data: &'a [u8],
}

impl RepairRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> RepairFrame {
        RepairFrame {
            repair_seq: self.repair_seq,
            first: self.first,
            count: self.count,
            coefs: self.coefs.to_owned(),
            data: self.data.to_vec(),
        }
    }

    /// Encoded length of the frame (type included).
    pub fn encoded_len(&self) -> usize {
        repair_header_len(
            self.repair_seq,
            self.first,
            self.count,
            self.coefs,
            self.data.len(),
        ) + self.data.len()
    }
}

/// NC_ACK frame: the receiver's degrees-of-freedom state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// A parsed QUIC-NC frame (owned; see [`FrameRef`] for the borrowed form
/// the integration parses packets with).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// SOURCE_SYMBOL_ID: the `length` bytes right before this frame in the
    /// packet are source symbol `index`.
    SourceSymbolId {
        /// Absolute source symbol index.
        index: u64,
        /// Length of the symbol (the data frames before this frame).
        length: u64,
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

/// A parsed QUIC-NC frame borrowing from its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameRef<'a> {
    /// See [`Frame::SourceSymbolId`].
    SourceSymbolId {
        /// Absolute source symbol index.
        index: u64,
        /// Length of the symbol (the data frames before this frame).
        length: u64,
    },
    /// REPAIR.
    Repair(RepairRef<'a>),
    /// NC_ACK.
    Ack(AckFrame),
    /// NC_WINDOW.
    Window {
        /// First index still being coded.
        abandon_below: u64,
    },
}

impl FrameRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> Frame {
        match *self {
            FrameRef::SourceSymbolId { index, length } => Frame::SourceSymbolId { index, length },
            FrameRef::Repair(r) => Frame::Repair(r.to_owned()),
            FrameRef::Ack(a) => Frame::Ack(a),
            FrameRef::Window { abandon_below } => Frame::Window { abandon_below },
        }
    }

    /// Parse one frame (type included) from the start of `buf`; returns the
    /// frame and the number of bytes consumed. Never allocates.
    pub fn parse(buf: &[u8]) -> Result<(FrameRef<'_>, usize)> {
        let mut r = Reader::new(buf);
        let ty = r.varint()?;
        let f = FrameRef::parse_body(ty, &mut r)?;
        Ok((f, r.pos()))
    }

    /// Parse the body of a frame whose type `ty` was already read.
    pub fn parse_body<'a>(ty: u64, r: &mut Reader<'a>) -> Result<FrameRef<'a>> {
        match ty {
            FRAME_SOURCE_SYMBOL_ID => {
                let index = r.varint()?;
                let length = r.varint()?;
                Ok(FrameRef::SourceSymbolId { index, length })
            }
            FRAME_REPAIR => {
                let repair_seq = r.varint()?;
                if repair_seq == VARINT_MAX {
                    // Its successor, echoed in NC_ACK, would not be a varint.
                    return Err(Error::Malformed("REPAIR sequence overflows"));
                }
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
                        CoefRef::Seeded { repair_key, dt }
                    }
                    COEF_EXPLICIT => {
                        if count > r.remaining() as u64 {
                            return Err(Error::Truncated);
                        }
                        CoefRef::Explicit(r.bytes(count as usize)?)
                    }
                    _ => return Err(Error::Malformed("REPAIR coefficient mode")),
                };
                let len = r.varint()?;
                if len > r.remaining() as u64 {
                    return Err(Error::Truncated);
                }
                let data = r.bytes(len as usize)?;
                Ok(FrameRef::Repair(RepairRef {
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
                Ok(FrameRef::Ack(AckFrame {
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
            FRAME_NC_WINDOW => Ok(FrameRef::Window {
                abandon_below: r.varint()?,
            }),
            other => Err(Error::UnknownFrameType(other)),
        }
    }

    /// Encoded length in bytes (type included).
    pub fn encoded_len(&self) -> usize {
        match *self {
            FrameRef::SourceSymbolId { index, length } => {
                varint_len(FRAME_SOURCE_SYMBOL_ID) + varint_len(index) + varint_len(length)
            }
            FrameRef::Repair(r) => r.encoded_len(),
            FrameRef::Ack(a) => {
                varint_len(FRAME_NC_ACK)
                    + varint_len(a.i_p)
                    + varint_len(a.i_q.saturating_sub(a.i_p))
                    + varint_len(a.i_r.saturating_sub(a.i_q))
                    + varint_len(a.max_seq.saturating_sub(a.i_r))
                    + varint_len(a.diff)
                    + varint_len(a.rx_source)
                    + varint_len(a.rx_repair)
                    + varint_len(a.repair_seq_end)
            }
            FrameRef::Window { abandon_below } => {
                varint_len(FRAME_NC_WINDOW) + varint_len(abandon_below)
            }
        }
    }

    /// Write the encoding (type included) at the start of `out`; returns
    /// its length, or `None` (with `out` partly written) if it does not fit.
    pub fn encode_into(&self, out: &mut [u8]) -> Option<usize> {
        let mut w = Writer::new(out);
        match *self {
            FrameRef::SourceSymbolId { index, length } => {
                w.varint(FRAME_SOURCE_SYMBOL_ID)?;
                w.varint(index)?;
                w.varint(length)?;
            }
            FrameRef::Repair(r) => {
                write_repair_header(
                    &mut w,
                    r.repair_seq,
                    r.first,
                    r.count,
                    r.coefs,
                    r.data.len(),
                )?;
                w.bytes(r.data)?;
            }
            FrameRef::Ack(a) => {
                w.varint(FRAME_NC_ACK)?;
                w.varint(a.i_p)?;
                w.varint(a.i_q.saturating_sub(a.i_p))?;
                w.varint(a.i_r.saturating_sub(a.i_q))?;
                w.varint(a.max_seq.saturating_sub(a.i_r))?;
                w.varint(a.diff)?;
                w.varint(a.rx_source)?;
                w.varint(a.rx_repair)?;
                w.varint(a.repair_seq_end)?;
            }
            FrameRef::Window { abandon_below } => {
                w.varint(FRAME_NC_WINDOW)?;
                w.varint(abandon_below)?;
            }
        }
        Some(w.pos())
    }
}

impl Frame {
    /// Whether `ty` is one of this extension's frame types.
    pub fn is_nc_type(ty: u64) -> bool {
        (FRAME_SOURCE_SYMBOL_ID..=FRAME_NC_WINDOW).contains(&ty)
    }

    /// A borrowed view.
    pub fn as_ref(&self) -> FrameRef<'_> {
        match self {
            Frame::SourceSymbolId { index, length } => FrameRef::SourceSymbolId {
                index: *index,
                length: *length,
            },
            Frame::Repair(r) => FrameRef::Repair(r.as_ref()),
            Frame::Ack(a) => FrameRef::Ack(*a),
            Frame::Window { abandon_below } => FrameRef::Window {
                abandon_below: *abandon_below,
            },
        }
    }

    /// Parse one frame (including its type) from the start of `buf` into an
    /// owned frame; returns the frame and the number of bytes consumed.
    pub fn parse(buf: &[u8]) -> Result<(Frame, usize)> {
        FrameRef::parse(buf).map(|(f, n)| (f.to_owned(), n))
    }

    /// Parse the body of a frame whose type `ty` was already read.
    pub fn parse_body(ty: u64, r: &mut Reader<'_>) -> Result<Frame> {
        FrameRef::parse_body(ty, r).map(|f| f.to_owned())
    }

    /// Append the encoding (type included) to `out`. A frame with a field
    /// the wire cannot carry (above [`VARINT_MAX`]) appends nothing.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let f = self.as_ref();
        let start = out.len();
        out.resize(start + f.encoded_len(), 0);
        match f.encode_into(&mut out[start..]) {
            Some(n) => out.truncate(start + n),
            None => out.truncate(start),
        }
    }

    /// Encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        self.as_ref().encoded_len()
    }
}

/// Length of the body of a frame of type `ty` at the start of `body`
/// (`None` if malformed or unknown): the parse rule the transport's frame
/// parser skips extension frames by.
pub fn body_len(ty: u64, body: &[u8]) -> Option<usize> {
    let mut r = Reader::new(body);
    FrameRef::parse_body(ty, &mut r).ok().map(|_| r.pos())
}

/// Upper bound of REPAIR framing bytes for seeded coefficients (type 4,
/// three 8-byte varints, mode 1, key+DT 3, length 8).
pub const REPAIR_OVERHEAD_MAX: usize = 4 + 8 + 8 + 8 + 1 + 3 + 8;

/// Upper bound of a SOURCE_SYMBOL_ID frame with a symbol of at most 16383
/// bytes: type 4, index 8, length 2.
pub const SOURCE_SYMBOL_ID_MAX: usize = 4 + 8 + 2;

/// Bytes of REPAIR framing around `data_len` coded bytes (used to size
/// repair symbols to a packet budget).
pub fn repair_overhead(
    repair_seq: u64,
    first: u64,
    count: u64,
    coefs: &Coefficients,
    data_len: usize,
) -> usize {
    repair_header_len(repair_seq, first, count, coefs.as_ref(), data_len)
}

/// Length of a REPAIR frame's fields before its coded payload.
pub fn repair_header_len(
    repair_seq: u64,
    first: u64,
    count: u64,
    coefs: CoefRef<'_>,
    data_len: usize,
) -> usize {
    varint_len(FRAME_REPAIR)
        + varint_len(repair_seq)
        + varint_len(first)
        + varint_len(count)
        + 1
        + match coefs {
            CoefRef::Seeded { .. } => 3,
            CoefRef::Explicit(v) => v.len(),
        }
        + varint_len(data_len as u64)
}

/// Write the fields of a REPAIR frame up to its coded payload (of
/// `data_len` bytes, written next by the caller).
pub fn write_repair_header(
    w: &mut Writer<'_>,
    repair_seq: u64,
    first: u64,
    count: u64,
    coefs: CoefRef<'_>,
    data_len: usize,
) -> Option<()> {
    w.varint(FRAME_REPAIR)?;
    w.varint(repair_seq)?;
    w.varint(first)?;
    w.varint(count)?;
    match coefs {
        CoefRef::Seeded { repair_key, dt } => {
            w.bytes(&[COEF_SEEDED])?;
            w.bytes(&repair_key.to_be_bytes())?;
            w.bytes(&[dt])?;
        }
        CoefRef::Explicit(v) => {
            w.bytes(&[COEF_EXPLICIT])?;
            w.bytes(v)?;
        }
    }
    w.varint(data_len as u64)
}

/// The `nc_parameters` transport parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParams {
    /// Protocol version ([`NC_VERSION`]).
    pub version: u64,
    /// Field identifier ([`FIELD_GF256_11D`]).
    pub field: u8,
    /// Largest decoding window (symbols) the sender of this parameter
    /// accepts: it bounds the direction towards it, and only that one (each
    /// end decodes within its own limit, as with QUIC's flow control).
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

    /// What this end uses once it has the peer's parameters: the peer's
    /// window for what it sends, its own for what it receives, the smaller
    /// symbol size and the common modes. `None` if no mode is common.
    pub fn negotiate(&self, peer: &TransportParams) -> Option<Negotiated> {
        let modes = self.modes & peer.modes;
        if modes == 0 {
            return None;
        }
        Some(Negotiated {
            send_window: peer.max_window.min(MAX_WINDOW_LIMIT),
            recv_window: self.max_window.min(MAX_WINDOW_LIMIT),
            max_symbol_size: self.max_symbol_size.min(peer.max_symbol_size),
            modes,
        })
    }
}

/// The outcome of [`TransportParams::negotiate`] at one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// Window of the direction this end sends: the peer's `max_window`.
    pub send_window: u64,
    /// Window of the direction this end receives: its own `max_window`.
    pub recv_window: u64,
    /// Largest symbol payload, both directions: the smaller limit.
    pub max_symbol_size: u64,
    /// Modes both ends support.
    pub modes: u8,
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
            roundtrip(&Frame::SourceSymbolId {
                index: a,
                length: a % 16384,
            });
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
        // A repair sequence whose successor is not a varint.
        let mut v = Vec::new();
        for x in [FRAME_REPAIR, VARINT_MAX, 0, 1] {
            put_varint(&mut v, x);
        }
        v.extend_from_slice(&[0, 0, 1, 15, 0]);
        assert!(matches!(Frame::parse(&v), Err(Error::Malformed(_))));
    }

    #[test]
    fn borrowed_parse_matches_owned_and_writes_in_place() {
        let f = Frame::Repair(RepairFrame {
            repair_seq: 70,
            first: 1 << 20,
            count: 3,
            coefs: Coefficients::Explicit(vec![1, 2, 3]),
            data: vec![9; 100],
        });
        let mut v = Vec::new();
        f.encode(&mut v);
        let (r, n) = FrameRef::parse(&v).unwrap();
        assert_eq!(n, v.len());
        assert_eq!(r.to_owned(), f);
        // The borrowed payload points into the input: no copy.
        let FrameRef::Repair(rr) = r else { panic!() };
        assert_eq!(rr.data.as_ptr(), v[v.len() - 100..].as_ptr());
        assert_eq!(body_len(FRAME_REPAIR, &v[4..]), Some(v.len() - 4));
        assert_eq!(body_len(FRAME_REPAIR, &v[4..v.len() - 1]), None);
        // encode_into refuses a buffer that is too short.
        let mut small = [0u8; 50];
        assert_eq!(f.as_ref().encode_into(&mut small), None);
        let mut big = [0u8; 200];
        assert_eq!(f.as_ref().encode_into(&mut big), Some(v.len()));
        assert_eq!(&big[..v.len()], &v[..]);
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
        assert_eq!(
            (n.send_window, n.recv_window, n.modes),
            (16, tp.max_window, MODE_SYSTEMATIC)
        );
        let m = other.negotiate(&tp).unwrap();
        assert_eq!((m.send_window, m.recv_window), (tp.max_window, 16));
        assert!(other
            .negotiate(&TransportParams {
                modes: MODE_FULLY_CODED,
                ..tp
            })
            .is_none());
        assert_ne!((TRANSPORT_PARAM_ID - 27) % 31, 0, "not a GREASE id");
    }
}
