//! # nc-frames — the coding core of QUIC-NC
//!
//! Network coding for QUIC, free of any quiche type:
//!
//! * [`gf256`]: GF(2^8) arithmetic with the RFC 8681 polynomial 0x11D;
//! * [`simd`]: runtime-dispatched bulk kernels (scalar, SSSE3, AVX2,
//!   AVX-512BW, GFNI, NEON);
//! * [`tinymt`] and [`coeffs`]: RFC 8682 TinyMT32 and the RFC 8681 coding
//!   coefficient generator;
//! * [`codec`]: sliding-window encoder and online RREF decoder with
//!   seen/decoded tracking;
//! * [`frames`]: wire formats (see `docs/protocol.md`);
//! * [`sender`], [`receiver`], [`policy`]: sans-IO state machines;
//! * [`sim`]: deterministic virtual-time channel simulation; [`fuzzing`]:
//!   fuzz entry points; [`testrng`]: a small deterministic PRNG.
//!
//! ```
//! use std::time::Instant;
//! use nc_frames::{Frame, Mode, NcReceiver, NcSender, PolicyKind, SenderConfig, Transmit};
//!
//! let now = Instant::now();
//! let cfg = SenderConfig { mode: Mode::Systematic, policy: PolicyKind::FixedR(2.0), ..Default::default() };
//! let mut tx = NcSender::new(cfg, now);
//! let mut rx = NcReceiver::new(64, 1500);
//!
//! // A packet with new data: SOURCE_SYMBOL_ID(idx) + the payload, lost on the way.
//! assert_eq!(tx.poll_transmit(true, now), Some(Transmit::NewData));
//! let idx = tx.on_source_sent(b"STREAM frames", now).unwrap();
//! // R = 2: the next opportunity carries a repair symbol, which arrives.
//! assert_eq!(tx.poll_transmit(true, now), Some(Transmit::Repair));
//! let (_seq, bytes) = tx.write_repair(1200, now).unwrap();
//! let (frame, _) = Frame::parse(&bytes).unwrap();
//! rx.on_frame(&frame, now).unwrap();
//! let got = rx.poll_recovered().unwrap();
//! assert_eq!((got.index, &got.payload[..]), (idx, &b"STREAM frames"[..]));
//!
//! // The receiver's NC_ACK tells the sender the symbol is decoded.
//! let ack = rx.ack();
//! tx.on_ack(&ack, now).unwrap();
//! assert_eq!(tx.peer_state().0, 1);
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

pub mod codec;
pub mod coeffs;
pub mod error;
pub mod frames;
pub mod fuzzing;
pub mod gf256;
pub mod policy;
pub mod receiver;
pub mod sender;
pub mod sim;
pub mod simd;
pub mod testrng;
pub mod tinymt;
pub use error::{Error, ErrorKind, Result};
pub use frames::{AckFrame, Frame, FrameRef, Negotiated, RepairFrame, RepairRef, TransportParams};
pub use policy::PolicyKind;
pub use receiver::{NcReceiver, RecoveredSymbol, WorkBudget};
pub use sender::{Mode, NcSender, SenderConfig, SenderEvent, SenderStats, Transmit, WrittenRepair};
