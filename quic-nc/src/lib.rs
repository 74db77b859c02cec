//! QUIC-NC glue between our sans-IO crates and quiche's hooks.
//!
//! * [`install()`]: the one per-connection installer — the congestion
//!   controller and the QUIC-NC extension, returning a [`Handle`] to read
//!   the connection's coding statistics.
//! * [`coding`]: the transport extension that runs network coding on the
//!   connection ([`nc_frames`] behind quiche's hooks).
//! * [`cc`]: our [`congestion::Controller`]s as quiche external
//!   controllers, and controller names.
//! * [`channel`]: the per-connection channel between the extension and the
//!   controller (coding feedback one way, controller state the other).
//! * [`qlog`]: QUIC-NC's events in the connection's qlog.
//!
//! The hooks themselves are a patch series on quiche 0.30.0
//! (`patches/quiche/`, described in `docs/hooks.md`).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod cc;
pub mod channel;
pub mod coding;
pub mod install;
pub mod qlog;

pub use coding::{CodingConfig, CodingStats};
pub use install::{install, Handle, Options};
/// The `nc_parameters` transport parameter id.
pub use nc_frames::frames::TRANSPORT_PARAM_ID;
