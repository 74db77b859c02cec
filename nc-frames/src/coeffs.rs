//! Coding coefficients: the RFC 8681 (Section 3.6) generator for m = 8, and
//! explicit vectors.

use crate::tinymt::TinyMt32;

/// Maximum density threshold (DT = 15 means "all coefficients non-zero").
pub const DT_MAX: u8 = 15;

/// Generate `out.len()` coefficients from a 16-bit repair key and density
/// threshold `dt` (0..=15) exactly as RFC 8681 `generate_coding_coefficients`
/// does for GF(2^8): each coefficient is non-zero with probability
/// (dt+1)/16, and non-zero ones are uniform in 1..=255.
///
/// Returns `false` (leaving `out` untouched) if `dt > 15`.
pub fn generate(repair_key: u16, dt: u8, out: &mut [u8]) -> bool {
    if dt > DT_MAX {
        return false;
    }
    let mut g = TinyMt32::new(u32::from(repair_key));
    let nonzero = |g: &mut TinyMt32| loop {
        let c = g.rand256();
        if c != 0 {
            break c;
        }
    };
    for c in out.iter_mut() {
        // DT = 15 draws no rand16 at all (RFC 8681), hence the short circuit.
        let dense = dt == DT_MAX || g.rand16() <= dt;
        *c = if dense { nonzero(&mut g) } else { 0 };
    }
    true
}

/// How the coefficients of a repair symbol are described on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coefficients {
    /// RFC 8681 generator: 16-bit repair key and density threshold (0..=15).
    Seeded {
        /// TinyMT32 seed.
        repair_key: u16,
        /// Density threshold DT.
        dt: u8,
    },
    /// Explicit coefficient vector, one byte per window position.
    Explicit(Vec<u8>),
}

impl Coefficients {
    /// Expand to `n` coefficients into `out` (resized). Returns `false` if the
    /// description is invalid for `n` (bad DT, explicit vector length != n).
    pub fn expand(&self, n: usize, out: &mut Vec<u8>) -> bool {
        self.as_ref().expand(n, out)
    }

    /// A borrowed view.
    pub fn as_ref(&self) -> CoefRef<'_> {
        match self {
            Coefficients::Seeded { repair_key, dt } => CoefRef::Seeded {
                repair_key: *repair_key,
                dt: *dt,
            },
            Coefficients::Explicit(v) => CoefRef::Explicit(v),
        }
    }
}

/// A coefficient description as parsed from a frame, borrowing an explicit
/// vector from the input (no allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoefRef<'a> {
    /// See [`Coefficients::Seeded`].
    Seeded {
        /// TinyMT32 seed.
        repair_key: u16,
        /// Density threshold DT.
        dt: u8,
    },
    /// See [`Coefficients::Explicit`].
    Explicit(&'a [u8]),
}

impl CoefRef<'_> {
    /// Expand to `n` coefficients into `out` (resized); see
    /// [`Coefficients::expand`].
    pub fn expand(&self, n: usize, out: &mut Vec<u8>) -> bool {
        match *self {
            CoefRef::Seeded { repair_key, dt } => {
                out.clear();
                out.resize(n, 0);
                generate(repair_key, dt, out)
            }
            CoefRef::Explicit(v) => {
                if v.len() != n {
                    return false;
                }
                out.clear();
                out.extend_from_slice(v);
                true
            }
        }
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Coefficients {
        match *self {
            CoefRef::Seeded { repair_key, dt } => Coefficients::Seeded { repair_key, dt },
            CoefRef::Explicit(v) => Coefficients::Explicit(v.to_vec()),
        }
    }
}

impl<'a> From<&'a Coefficients> for CoefRef<'a> {
    fn from(c: &'a Coefficients) -> Self {
        c.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_checked_dense() {
        // Seed 1: low bytes of the RFC 8682 sequence are 37, 225, 177, 176,
        // 21, 246, ... (none zero), so DT=15 yields exactly those.
        let mut c = [0u8; 6];
        assert!(generate(1, 15, &mut c));
        assert_eq!(c, [37, 225, 177, 176, 21, 246]);
    }

    #[test]
    fn hand_checked_sparse() {
        // DT=7: draw rand16; if <= 7 draw rand256 (non-zero). Sequence low
        // nibbles/bytes: 5->225, 1->176, 5->246, 6->139, 8->0, 13->0, 3->187.
        let mut c = [0u8; 7];
        assert!(generate(1, 7, &mut c));
        assert_eq!(c, [225, 176, 246, 139, 0, 0, 187]);
    }

    #[test]
    fn density_and_validity() {
        let mut c = vec![0u8; 4000];
        assert!(!generate(3, 16, &mut c));
        for dt in 0..=15u8 {
            assert!(generate(0xBEEF, dt, &mut c));
            let nz = c.iter().filter(|&&x| x != 0).count() as f64 / c.len() as f64;
            let want = (dt as f64 + 1.0) / 16.0;
            assert!((nz - want).abs() < 0.04, "dt={dt} density {nz} want {want}");
        }
        let mut v = Vec::new();
        assert!(Coefficients::Explicit(vec![1, 2]).expand(2, &mut v));
        assert_eq!(v, [1, 2]);
        assert!(!Coefficients::Explicit(vec![1, 2]).expand(3, &mut v));
    }
}
