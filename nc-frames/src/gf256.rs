//! Arithmetic in GF(2^8) with the reduction polynomial x^8+x^4+x^3+x^2+1
//! (0x11D), the field RFC 8681 uses for its RLC codes (m = 8).
//!
//! This module is the *scalar reference*: every SIMD kernel in
//! [`crate::simd`] is property-tested against the functions here.

/// The reduction polynomial x^8 + x^4 + x^3 + x^2 + 1.
pub const POLY: u16 = 0x11D;

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        exp[i + 255] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLY;
        }
        i += 1;
    }
    // exp[510], exp[511] never read for valid inputs; keep them defined.
    exp[510] = exp[0];
    exp[511] = exp[1];
    (exp, log)
}

const EXP_LOG: ([u8; 512], [u8; 256]) = build_exp_log();
/// `EXP[i] = alpha^i` for `i` in `0..510` (alpha = 2 is primitive for 0x11D).
pub static EXP: [u8; 512] = EXP_LOG.0;
/// `LOG[x]` = discrete log of `x` base 2 (`LOG[0]` is unused and 0).
pub static LOG: [u8; 256] = EXP_LOG.1;

/// Carry-less "Russian peasant" multiplication, used to build the tables and
/// as an independent oracle in tests.
pub const fn mul_slow(mut a: u8, mut b: u8) -> u8 {
    let mut r: u8 = 0;
    while b != 0 {
        if b & 1 != 0 {
            r ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= (POLY & 0xFF) as u8;
        }
        b >>= 1;
    }
    r
}

const fn build_mul_table() -> [[u8; 256]; 256] {
    let mut t = [[0u8; 256]; 256];
    let mut a = 0;
    while a < 256 {
        let mut b = 0;
        while b < 256 {
            t[a][b] = mul_slow(a as u8, b as u8);
            b += 1;
        }
        a += 1;
    }
    t
}

/// Full 256x256 multiplication table: `MUL[a][b] = a*b`. Row `MUL[c]` is the
/// lookup table of the scalar AXPY kernel.
pub static MUL: [[u8; 256]; 256] = build_mul_table();

/// Product of two field elements.
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    MUL[a as usize][b as usize]
}

/// Multiplicative inverse; `inv(0)` is defined as 0 (never used as a divisor
/// by this crate: callers check for zero first).
#[inline]
pub fn inv(a: u8) -> u8 {
    if a == 0 {
        0
    } else {
        EXP[255 - LOG[a as usize] as usize]
    }
}

/// Quotient `a / b`; `b` must be non-zero (returns 0 for `b == 0`).
#[inline]
pub fn div(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[(LOG[a as usize] as usize + 255 - LOG[b as usize] as usize) % 255]
    }
}

/// Scalar reference: `dst[i] ^= c * src[i]` over `min(dst.len(), src.len())`.
pub fn axpy_scalar(dst: &mut [u8], src: &[u8], c: u8) {
    let n = dst.len().min(src.len());
    if c == 0 {
        return;
    }
    if c == 1 {
        for (d, s) in dst[..n].iter_mut().zip(&src[..n]) {
            *d ^= *s;
        }
        return;
    }
    let row = &MUL[c as usize];
    for (d, s) in dst[..n].iter_mut().zip(&src[..n]) {
        *d ^= row[*s as usize];
    }
}

/// Scalar reference: `dst[i] = c * dst[i]`.
pub fn scale_scalar(dst: &mut [u8], c: u8) {
    if c == 1 {
        return;
    }
    let row = &MUL[c as usize];
    for d in dst.iter_mut() {
        *d = row[*d as usize];
    }
}

const fn build_nibbles() -> [[u8; 32]; 256] {
    let mut t = [[0u8; 32]; 256];
    let mut c = 0;
    while c < 256 {
        let mut n = 0;
        while n < 16 {
            t[c][n] = mul_slow(c as u8, n as u8);
            t[c][16 + n] = mul_slow(c as u8, (n as u8) << 4);
            n += 1;
        }
        c += 1;
    }
    t
}

/// Per-coefficient nibble tables: `NIBBLES[c][n] = c*n` and
/// `NIBBLES[c][16+n] = c*(n<<4)` (precomputed: no per-call setup).
pub static NIBBLES: [[u8; 32]; 256] = build_nibbles();

/// The 16-entry low/high nibble product tables of `c` used by the PSHUFB
/// kernels: `lo[n] = c*n`, `hi[n] = c*(n<<4)`.
pub fn nibble_tables(c: u8) -> ([u8; 16], [u8; 16]) {
    let t = &NIBBLES[c as usize];
    let mut lo = [0u8; 16];
    let mut hi = [0u8; 16];
    lo.copy_from_slice(&t[..16]);
    hi.copy_from_slice(&t[16..]);
    (lo, hi)
}

const fn affine_matrix_slow(c: u8) -> u64 {
    let mut m: u64 = 0;
    let mut i = 0;
    while i < 8 {
        let mut row: u8 = 0;
        let mut j = 0;
        while j < 8 {
            if (mul_slow(c, 1 << j) >> i) & 1 != 0 {
                row |= 1 << j;
            }
            j += 1;
        }
        m |= (row as u64) << (8 * (7 - i));
        i += 1;
    }
    m
}

const fn build_affine() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = affine_matrix_slow(c as u8);
        c += 1;
    }
    t
}

/// Precomputed GF2P8AFFINEQB matrices for every coefficient.
pub static AFFINE: [u64; 256] = build_affine();

/// The 8x8 bit matrix of "multiply by `c`" in the operand layout of
/// GF2P8AFFINEQB: byte `7-i` of the result holds the row producing output
/// bit `i`, i.e. bit `j` of that byte is bit `i` of `c * 2^j`.
pub fn affine_matrix(c: u8) -> u64 {
    AFFINE[c as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_axioms() {
        for a in 0..=255u8 {
            assert_eq!(mul(a, 1), a);
            assert_eq!(mul(a, 0), 0);
            if a != 0 {
                assert_eq!(mul(a, inv(a)), 1, "a={a}");
                assert_eq!(div(mul(a, 7), 7), a);
            }
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), mul(b, a));
                assert_eq!(mul(a, b), mul_slow(a, b));
            }
        }
        // 0x11D specific: 0x80 * 2 = 0x1D (with 0x11B it would be 0x1B).
        assert_eq!(mul(0x80, 2), 0x1D);
        // alpha = 2 generates the whole multiplicative group.
        let mut seen = [false; 256];
        for i in 0..255 {
            assert!(!seen[EXP[i] as usize]);
            seen[EXP[i] as usize] = true;
        }
    }

    #[test]
    fn distributive_sample() {
        for a in (0..=255u8).step_by(7) {
            for b in (0..=255u8).step_by(5) {
                for c in (0..=255u8).step_by(11) {
                    assert_eq!(mul(a, b ^ c), mul(a, b) ^ mul(a, c));
                }
            }
        }
    }

    #[test]
    fn affine_matrix_matches_mul() {
        // Evaluate the matrix the way the instruction does, in software.
        for c in 0..=255u8 {
            let m = affine_matrix(c);
            for x in 0..=255u8 {
                let mut out = 0u8;
                for i in 0..8 {
                    let row = (m >> (8 * (7 - i))) as u8;
                    if (row & x).count_ones() & 1 == 1 {
                        out |= 1 << i;
                    }
                }
                assert_eq!(out, mul(c, x), "c={c} x={x}");
            }
        }
    }
}
