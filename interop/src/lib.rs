//! Link emulator and experiment runners.
//!
//! * [`link`]: sans-IO model of one direction of an emulated link
//!   (rate, drop-tail buffer, delay, loss) in virtual time.
//! * [`trace`]: trace-driven capacity (mahimahi `mm-link` traces).
//! * [`loss`]: loss models (Bernoulli, Gilbert–Elliott) and time schedules.
//! * [`relay`]: a real UDP relay on top of the model (`linkem`).
//! * [`experiment`]: the `nc-experiment` runner (spawns processes only): the
//!   (row × loss) matrix with medians over interleaved runs, `bench-e2e`.
//! * [`compete`]: `nc-experiment --compete A,B`, two flows sharing one bottleneck.
//! * [`peer`]: flow specs (`hybrid+nc=off`, `quinn:bbr`, ...) and the QUIC
//!   stacks behind them (ours, quinn, ngtcp2, quic-go).
//! * [`cli`]: argument parsing of the `linkem` binary.
//! * [`units`]: parsing of rates, durations, buffer sizes, probabilities.
//! * [`rxstamp`]: kernel receive timestamps (arrival instants for the model).
//! * [`rng`]: the seeded PRNG used for loss decisions.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod cli;
pub mod compete;
pub mod experiment;
pub mod link;
pub mod loss;
pub mod peer;
pub mod relay;
pub mod rng;
pub mod runner;
pub mod rxstamp;
pub mod scenario;
pub mod trace;
pub mod units;
pub mod wire;

/// Maximum UDP payload size the emulator expects on the path (bytes); also
/// the smallest allowed byte-sized buffer.
pub const MTU: usize = 1500;
