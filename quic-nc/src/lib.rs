//! QUIC-NC glue between our sans-IO crates and quiche's hooks.
//!
//! * [`cc`]: runs a [`congestion::Controller`] as a quiche external
//!   congestion controller, and selects controllers by name.
//! * [`telemetry`]: writes the controller's state to the connection's qlog.
//!
//! The hooks themselves are a patch series on quiche 0.30.0
//! (`patches/quiche/`, described in `docs/hooks.md`).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod cc;
pub mod telemetry;
