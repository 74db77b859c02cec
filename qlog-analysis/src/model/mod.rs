//! Analytical models from the papers QUIC-NC builds on, as pure `f64`
//! functions. Every function checks its inputs and returns a
//! [`ModelError`] instead of panicking or producing NaN. `docs/models.md`
//! lists the equations and the printed values each test reproduces.
//!
//! * [`kim`]: Kim, Médard, Barros, "Modeling Network Coded TCP Throughput"
//!   (2011). TCP throughput with triple-duplicate and time-out losses,
//!   Eq. (9)-(16); TCP/NC window growth and throughput, Eq. (17)-(20); the
//!   achievable rate `min{C(1-p), C/R}` of Section 7.3.
//! * [`ctcp`]: Kim et al., "Congestion Control for Coded Transport Layers"
//!   (ICC 2014). Adaptive backoff, Eq. (1); stationary AIMD rate and
//!   capacity share, Eq. (3)-(4); efficiency bound of block coding, Eq. (5).
//! * [`von`]: Bao et al., "TCP VON: Joint Congestion Control and Online
//!   Network Coding for Wireless Networks". Average decoding delay of
//!   online network coding from the Markov chain of Section IV, Eq. (2)-(4).
//! * [`tcpnc`]: Sundararajan et al., "Network coding meets TCP" (INFOCOM
//!   2009). Expected queue sizes with re-encoding nodes, Theorem 2.
//! * [`loss`]: path loss over independent hops and the minimum redundancy
//!   `R = 1/(1-p)`, used by Kim, TCP/NC and FNC.
//!
//! The fifth paper, FNC (Chen et al., "Effective Retransmission in Network
//! Coding for TCP"), describes an algorithm and simulations but no
//! analytical model; only its redundancy example is reproduced (in
//! [`loss`]).

pub mod ctcp;
pub mod kim;
pub mod loss;
pub mod tcpnc;
pub mod von;

use std::fmt;

/// Why a model could not be evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// A parameter is NaN, infinite or outside its range (the text names
    /// the parameter and the range).
    InvalidParameter(&'static str),
    /// The parameters are valid but the model is undefined or unstable
    /// there.
    OutOfDomain(&'static str),
    /// The computation would exceed this module's size bounds.
    TooLarge(&'static str),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::InvalidParameter(s) => write!(f, "invalid parameter: {s}"),
            ModelError::OutOfDomain(s) => write!(f, "outside the model's domain: {s}"),
            ModelError::TooLarge(s) => write!(f, "too large: {s}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// Result of a model evaluation.
pub type Result<T> = std::result::Result<T, ModelError>;

/// `x` if it is a probability in `[0, 1]`.
fn probability(x: f64, what: &'static str) -> Result<f64> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(ModelError::InvalidParameter(what))
    }
}

/// `x` if it is finite and strictly positive.
fn positive(x: f64, what: &'static str) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(ModelError::InvalidParameter(what))
    }
}

/// `x` if it is finite (a final guard against overflow).
fn finite(x: f64, what: &'static str) -> Result<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(ModelError::TooLarge(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validators_reject_nan_infinity_and_out_of_range() {
        assert!(probability(f64::NAN, "p").is_err());
        assert!(probability(-0.1, "p").is_err());
        assert!(probability(1.1, "p").is_err());
        assert_eq!(probability(1.0, "p"), Ok(1.0));
        assert!(positive(0.0, "x").is_err());
        assert!(positive(f64::INFINITY, "x").is_err());
        assert!(finite(f64::NAN, "x").is_err());
        assert!(ModelError::OutOfDomain("p > 12/13")
            .to_string()
            .contains("12/13"));
    }
}
