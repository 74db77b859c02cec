//! Runtime-dispatched GF(2^8) bulk kernels.
//!
//! A [`Kernel`] is an opaque handle to one implementation. It can only be
//! obtained through constructors that check the running CPU, which is what
//! makes calling the `#[target_feature]` code sound. [`Kernel::best`] picks
//! the fastest available one once per process.

use std::sync::OnceLock;

use crate::gf256;

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Imp {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    X86(x86::X86),
    #[cfg(target_arch = "aarch64")]
    Neon,
}

/// A GF(2^8) bulk-arithmetic implementation verified to run on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(Imp);

/// All implementation names, fastest last (the order `best` prefers from the end).
const NAMES: &[&str] = &[
    "scalar",
    "ssse3",
    "avx2",
    "avx512",
    "gfni-avx2",
    "gfni-avx512",
    "neon",
];

impl Kernel {
    /// The portable table-driven reference implementation.
    pub const fn scalar() -> Kernel {
        Kernel(Imp::Scalar)
    }

    /// The kernel called `name` (see [`Kernel::name`]) if this CPU supports it.
    pub fn by_name(name: &str) -> Option<Kernel> {
        let imp = match name {
            "scalar" => Imp::Scalar,
            #[cfg(target_arch = "x86_64")]
            "ssse3" => Imp::X86(x86::X86::Ssse3),
            #[cfg(target_arch = "x86_64")]
            "avx2" => Imp::X86(x86::X86::Avx2),
            #[cfg(target_arch = "x86_64")]
            "avx512" => Imp::X86(x86::X86::Avx512),
            #[cfg(target_arch = "x86_64")]
            "gfni-avx2" => Imp::X86(x86::X86::Gfni256),
            #[cfg(target_arch = "x86_64")]
            "gfni-avx512" => Imp::X86(x86::X86::Gfni512),
            #[cfg(target_arch = "aarch64")]
            "neon" => Imp::Neon,
            _ => return None,
        };
        match imp {
            #[cfg(target_arch = "x86_64")]
            Imp::X86(x) if !x.detected() => None,
            _ => Some(Kernel(imp)),
        }
    }

    /// Every kernel this CPU can run, slowest (scalar) first.
    pub fn available() -> Vec<Kernel> {
        NAMES.iter().filter_map(|n| Kernel::by_name(n)).collect()
    }

    /// The fastest available kernel (detected once, then cached).
    /// The environment variable `NC_FRAMES_KERNEL=<name>` overrides the choice
    /// when that kernel is available (for benchmarking and debugging).
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            if let Ok(n) = std::env::var("NC_FRAMES_KERNEL") {
                if let Some(k) = Kernel::by_name(&n) {
                    return k;
                }
            }
            // Preference: GFNI-512 > GFNI-256 ~ AVX-512 > AVX2 > SSSE3; measured in
            // docs/coding.md (GFNI needs one instruction per vector, the nibble
            // method needs two shuffles, two ands and a shift).
            for n in [
                "gfni-avx512",
                "avx512",
                "gfni-avx2",
                "avx2",
                "ssse3",
                "neon",
            ] {
                if let Some(k) = Kernel::by_name(n) {
                    return k;
                }
            }
            Kernel::scalar()
        })
    }

    /// Stable short name of this kernel.
    pub fn name(self) -> &'static str {
        match self.0 {
            Imp::Scalar => "scalar",
            #[cfg(target_arch = "x86_64")]
            Imp::X86(x) => match x {
                x86::X86::Ssse3 => "ssse3",
                x86::X86::Avx2 => "avx2",
                x86::X86::Avx512 => "avx512",
                x86::X86::Gfni256 => "gfni-avx2",
                x86::X86::Gfni512 => "gfni-avx512",
            },
            #[cfg(target_arch = "aarch64")]
            Imp::Neon => "neon",
        }
    }

    /// `dst[i] ^= c * src[i]` for `i < min(dst.len(), src.len())`.
    #[inline]
    pub fn axpy(self, dst: &mut [u8], src: &[u8], c: u8) {
        match c {
            0 => {}
            1 => xor_into(dst, src),
            _ => match self.0 {
                Imp::Scalar => gf256::axpy_scalar(dst, src, c),
                #[cfg(target_arch = "x86_64")]
                Imp::X86(x) => x.axpy(dst, src, c),
                #[cfg(target_arch = "aarch64")]
                Imp::Neon => neon::axpy(dst, src, c),
            },
        }
    }

    /// `dst[i] = c * src[i]` for `i < min(dst.len(), src.len())`.
    #[inline]
    pub fn mul_into(self, dst: &mut [u8], src: &[u8], c: u8) {
        let n = dst.len().min(src.len());
        match c {
            0 => dst[..n].fill(0),
            1 => dst[..n].copy_from_slice(&src[..n]),
            _ => match self.0 {
                Imp::Scalar => {
                    let row = &gf256::MUL[c as usize];
                    for (d, s) in dst[..n].iter_mut().zip(&src[..n]) {
                        *d = row[*s as usize];
                    }
                }
                #[cfg(target_arch = "x86_64")]
                Imp::X86(x) => x.mul_into(dst, src, c),
                #[cfg(target_arch = "aarch64")]
                Imp::Neon => neon::mul_into(dst, src, c),
            },
        }
    }

    /// `dst[i] = c * dst[i]` in place.
    #[inline]
    pub fn scale(self, dst: &mut [u8], c: u8) {
        match c {
            0 => dst.fill(0),
            1 => {}
            _ => match self.0 {
                Imp::Scalar => gf256::scale_scalar(dst, c),
                #[cfg(target_arch = "x86_64")]
                Imp::X86(x) => x.scale(dst, c),
                #[cfg(target_arch = "aarch64")]
                Imp::Neon => neon::scale(dst, c),
            },
        }
    }

    /// Fused kernel over the first `common` bytes, adding to `dst` if
    /// `acc`, else overwriting it; `false` (nothing written) if unavailable.
    #[cfg(target_arch = "x86_64")]
    fn fused_prefix(
        self,
        dst: &mut [u8],
        srcs: &[&[u8]],
        coefs: &[u8],
        common: usize,
        acc: bool,
    ) -> bool {
        let Imp::X86(x) = self.0 else { return false };
        if srcs.is_empty() || common == 0 {
            return false;
        }
        let groups = srcs.chunks(x86::GROUP).zip(coefs.chunks(x86::GROUP));
        for (g, (ss, cc)) in groups.enumerate() {
            // Only SSSE3 has no fused kernel, and it fails on the first group.
            if !x.lincomb_group(&mut dst[..common], ss, cc, acc || g > 0) {
                return false;
            }
        }
        true
    }

    /// No fused kernel on this architecture.
    #[cfg(not(target_arch = "x86_64"))]
    fn fused_prefix(self, _: &mut [u8], _: &[&[u8]], _: &[u8], _: usize, _: bool) -> bool {
        false
    }

    /// `dst ^= sum_j coefs[j] * srcs[j]` (each source over its common
    /// length with `dst`): [`Kernel::lincomb`] without clearing `dst`
    /// first, so a combination can be built a group of sources at a time.
    pub fn lincomb_acc(self, dst: &mut [u8], srcs: &[&[u8]], coefs: &[u8]) {
        let k = srcs.len().min(coefs.len());
        let common = srcs[..k]
            .iter()
            .map(|s| s.len())
            .min()
            .unwrap_or(0)
            .min(dst.len());
        let from = if self.fused_prefix(dst, &srcs[..k], &coefs[..k], common, true) {
            common
        } else {
            0
        };
        for (s, &c) in srcs[..k].iter().zip(&coefs[..k]) {
            let n = dst.len().min(s.len());
            if n > from {
                self.axpy(&mut dst[from..n], &s[from..n], c);
            }
        }
    }

    /// Linear combination `dst = sum_j coefs[j] * srcs[j]`, each source
    /// zero-extended (or truncated) to `dst.len()`. On x86 with AVX2 or GFNI
    /// the common prefix of all sources is computed by a fused kernel that
    /// keeps the accumulator in registers (groups of 8 sources).
    pub fn lincomb(self, dst: &mut [u8], srcs: &[&[u8]], coefs: &[u8]) {
        let k = srcs.len().min(coefs.len());
        let common = srcs[..k]
            .iter()
            .map(|s| s.len())
            .min()
            .unwrap_or(0)
            .min(dst.len());
        let done = self.fused_prefix(dst, &srcs[..k], &coefs[..k], common, false);
        let from = if done {
            dst[common..].fill(0);
            common
        } else {
            dst.fill(0);
            0
        };
        for (s, &c) in srcs[..k].iter().zip(&coefs[..k]) {
            let n = dst.len().min(s.len());
            if n > from {
                self.axpy(&mut dst[from..n], &s[from..n], c);
            }
        }
    }
}

/// `dst ^= src` over the common length (auto-vectorised by the compiler).
#[inline]
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let (d, s) = (&mut dst[..n], &src[..n]);
    let mut dc = d.chunks_exact_mut(32);
    let mut sc = s.chunks_exact(32);
    for (a, b) in (&mut dc).zip(&mut sc) {
        for k in 0..32 {
            a[k] ^= b[k];
        }
    }
    for (a, b) in dc.into_remainder().iter_mut().zip(sc.remainder()) {
        *a ^= *b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::Rng;

    #[test]
    fn scalar_always_available_and_best_is_listed() {
        let av = Kernel::available();
        assert_eq!(av[0], Kernel::scalar());
        assert!(av.contains(&Kernel::best()));
        assert!(Kernel::by_name("nope").is_none());
        for k in &av {
            assert_eq!(Kernel::by_name(k.name()), Some(*k));
        }
    }

    /// Property test: every available kernel agrees with the scalar reference
    /// on random data, coefficients, lengths and (mis)alignments.
    #[test]
    fn kernels_match_scalar_reference() {
        let mut rng = Rng::new(0x5eed);
        let kernels = Kernel::available();
        eprintln!(
            "testing kernels: {:?}",
            kernels.iter().map(|k| k.name()).collect::<Vec<_>>()
        );
        for iter in 0..3000 {
            let len = match iter % 4 {
                0 => rng.below(16) as usize,
                1 => rng.below(200) as usize,
                2 => 1 + rng.below(3000) as usize,
                // Around every loop boundary of the kernels (1, 2 and 4
                // vectors of 16, 32 and 64 bytes, overlapped tails).
                _ => [
                    15, 16, 17, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 159, 160, 161,
                    191, 192, 193, 255, 256, 257, 1199, 1200, 1201,
                ][rng.below(27) as usize],
            };
            let off_s = rng.below(64) as usize;
            let off_d = rng.below(64) as usize;
            let c = if iter < 256 { iter as u8 } else { rng.byte() };
            let mut src = vec![0u8; len + off_s];
            let mut dst0 = vec![0u8; len + off_d + 7];
            rng.fill(&mut src);
            rng.fill(&mut dst0);
            let src = &src[off_s..];
            let mut want_axpy = dst0.clone();
            gf256::axpy_scalar(&mut want_axpy[off_d..off_d + len], src, c);
            let mut want_mul = dst0.clone();
            for i in 0..len {
                want_mul[off_d + i] = gf256::mul_slow(c, src[i]);
            }
            for &k in &kernels {
                let mut d = dst0.clone();
                k.axpy(&mut d[off_d..off_d + len], src, c);
                assert_eq!(d, want_axpy, "axpy kernel={} len={len} c={c}", k.name());
                let mut d = dst0.clone();
                k.mul_into(&mut d[off_d..off_d + len], src, c);
                assert_eq!(d, want_mul, "mul_into kernel={} len={len} c={c}", k.name());
                let mut d = dst0.clone();
                d[off_d..off_d + len].copy_from_slice(src);
                k.scale(&mut d[off_d..off_d + len], c);
                assert_eq!(d, want_mul, "scale kernel={} len={len} c={c}", k.name());
            }
        }
    }

    #[test]
    fn lincomb_matches_reference() {
        let mut rng = Rng::new(7);
        for it in 0..400 {
            let w = 1 + rng.below(40) as usize;
            let len = rng.below(1300) as usize;
            // Half the cases: equal lengths (the fused kernels cover all of
            // dst); the other half: ragged lengths (fused prefix + tails).
            let equal = it % 2 == 0;
            let srcs: Vec<Vec<u8>> = (0..w)
                .map(|_| {
                    let l = if equal {
                        len + rng.below(3) as usize
                    } else {
                        rng.below(len as u64 + 1) as usize
                    };
                    let mut v = vec![0u8; l];
                    rng.fill(&mut v);
                    v
                })
                .collect();
            let coefs: Vec<u8> = (0..w).map(|_| rng.byte()).collect();
            let mut want = vec![0u8; len];
            for (s, &c) in srcs.iter().zip(&coefs) {
                for (i, b) in s.iter().take(len).enumerate() {
                    want[i] ^= gf256::mul_slow(c, *b);
                }
            }
            let refs: Vec<&[u8]> = srcs.iter().map(|v| v.as_slice()).collect();
            for k in Kernel::available() {
                let mut d = vec![0xAAu8; len];
                k.lincomb(&mut d, &refs, &coefs);
                assert_eq!(d, want, "kernel {}", k.name());
                // Accumulating, split into two calls at a random source.
                let mut init = vec![0u8; len];
                rng.fill(&mut init);
                let mut d = init.clone();
                let cut = rng.below(w as u64 + 1) as usize;
                k.lincomb_acc(&mut d, &refs[..cut], &coefs[..cut]);
                k.lincomb_acc(&mut d, &refs[cut..], &coefs[cut..]);
                let acc: Vec<u8> = init.iter().zip(&want).map(|(a, b)| a ^ b).collect();
                assert_eq!(d, acc, "lincomb_acc kernel {}", k.name());
            }
        }
    }
}
