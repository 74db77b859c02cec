//! x86-64 SIMD kernels. This module (and `neon.rs`) is the only place in the
//! crate with `unsafe` code.
//!
//! Every kernel computes, for `i < n`:
//! `dst[i] = (ADD ? dst[i] : 0) ^ c * src[i]` in GF(2^8)/0x11D.
//! `src` and `dst` may be the same pointer (in-place scaling) but must not
//! otherwise overlap.
//!
//! Safety contract of the `unsafe fn`s: the CPU supports the named target
//! features, `dst` is valid for `n` byte reads and writes and `src` for `n`
//! byte reads. The safe wrappers at the bottom are only reachable through a
//! [`super::Kernel`] value, which can only be constructed after runtime
//! feature detection succeeded.

use core::arch::x86_64::*;

use crate::gf256;

#[inline(always)]
unsafe fn tail_scalar<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let row = &gf256::MUL[c as usize];
    for i in 0..n {
        // SAFETY: caller guarantees `i < n` is in bounds for both pointers.
        unsafe {
            let p = row[*src.add(i) as usize];
            let d = dst.add(i);
            *d = if ADD { *d ^ p } else { p };
        }
    }
}

/// Load `min(rem, 32)` bytes into a zero-extended vector (bounce buffer).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load_partial256(p: *const u8, rem: usize) -> __m256i {
    let mut b = [0u8; 32];
    // SAFETY: `p` is valid for `rem.min(32)` bytes (caller).
    unsafe {
        core::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), rem.min(32));
        _mm256_loadu_si256(b.as_ptr() as *const __m256i)
    }
}

/// Store the first `min(rem, 32)` bytes of `v` to `p`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store_partial256(p: *mut u8, v: __m256i, rem: usize) {
    let mut b = [0u8; 32];
    // SAFETY: `p` is valid for `rem.min(32)` bytes (caller).
    unsafe {
        _mm256_storeu_si256(b.as_mut_ptr() as *mut __m256i, v);
        core::ptr::copy_nonoverlapping(b.as_ptr(), p, rem.min(32));
    }
}

#[target_feature(enable = "ssse3")]
unsafe fn mul_ssse3<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let t = &gf256::NIBBLES[c as usize];
    let mut i = 0;
    // SAFETY: all accesses are at offsets `< n`; loads/stores are unaligned;
    // `t` is 32 bytes.
    unsafe {
        let tlo = _mm_loadu_si128(t.as_ptr() as *const __m128i);
        let thi = _mm_loadu_si128(t.as_ptr().add(16) as *const __m128i);
        let mask = _mm_set1_epi8(0x0f);
        while i + 16 <= n {
            let x = _mm_loadu_si128(src.add(i) as *const __m128i);
            let l = _mm_and_si128(x, mask);
            let h = _mm_and_si128(_mm_srli_epi64(x, 4), mask);
            let mut p = _mm_xor_si128(_mm_shuffle_epi8(tlo, l), _mm_shuffle_epi8(thi, h));
            if ADD {
                p = _mm_xor_si128(p, _mm_loadu_si128(dst.add(i) as *const __m128i));
            }
            _mm_storeu_si128(dst.add(i) as *mut __m128i, p);
            i += 16;
        }
        tail_scalar::<ADD>(dst.add(i), src.add(i), n - i, c);
    }
}

/// Shared loop of the 256-bit kernels: `dst[i] = (ADD ? dst[i] : 0) ^ f(src[i])`
/// for `i < n`, with `f` a byte-wise map computed 32 bytes at a time.
///
/// Four independent vectors per iteration, then single vectors. For
/// `n >= 32` a ragged end is handled without scalar code or bounce buffers:
/// the *last* 32 bytes (`n - 32 .. n`) are loaded and computed before the
/// loop, from the original `dst`/`src`, and stored after it. The bytes this
/// overlaps with the loop's last vector receive the same value twice
/// (`dst` is the original one in both computations), so the result is
/// exact, including in place (`src == dst`). Below 32 bytes, one
/// bounce-buffered partial vector.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn run256<const ADD: bool, F: Fn(__m256i) -> __m256i>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    f: F,
) {
    // SAFETY: every full-width access is at an offset `<= n - 32` (so within
    // the `n` valid bytes); partial accesses go through bounce buffers of
    // `n` bytes. `src` and `dst` are either equal or disjoint (contract).
    unsafe {
        let ld = |p: *const u8| _mm256_loadu_si256(p as *const __m256i);
        let st = |p: *mut u8, v: __m256i| _mm256_storeu_si256(p as *mut __m256i, v);
        if n < 32 {
            if n > 0 {
                let mut p = f(load_partial256(src, n));
                if ADD {
                    p = _mm256_xor_si256(p, load_partial256(dst, n));
                }
                store_partial256(dst, p, n);
            }
            return;
        }
        let last = n - 32;
        let mut pt = f(ld(src.add(last)));
        if ADD {
            pt = _mm256_xor_si256(pt, ld(dst.add(last)));
        }
        let mut i = 0;
        while i + 128 <= n {
            let mut p0 = f(ld(src.add(i)));
            let mut p1 = f(ld(src.add(i + 32)));
            let mut p2 = f(ld(src.add(i + 64)));
            let mut p3 = f(ld(src.add(i + 96)));
            if ADD {
                p0 = _mm256_xor_si256(p0, ld(dst.add(i)));
                p1 = _mm256_xor_si256(p1, ld(dst.add(i + 32)));
                p2 = _mm256_xor_si256(p2, ld(dst.add(i + 64)));
                p3 = _mm256_xor_si256(p3, ld(dst.add(i + 96)));
            }
            st(dst.add(i), p0);
            st(dst.add(i + 32), p1);
            st(dst.add(i + 64), p2);
            st(dst.add(i + 96), p3);
            i += 128;
        }
        while i + 32 <= n {
            let mut p = f(ld(src.add(i)));
            if ADD {
                p = _mm256_xor_si256(p, ld(dst.add(i)));
            }
            st(dst.add(i), p);
            i += 32;
        }
        if i < n {
            st(dst.add(last), pt);
        }
    }
}

#[target_feature(enable = "avx2")]
unsafe fn mul_avx2<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let t = &gf256::NIBBLES[c as usize];
    // SAFETY: `t` is 32 bytes (two 16-byte tables); `run256` has the
    // contract of this function.
    unsafe {
        let tlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i));
        let thi =
            _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().add(16) as *const __m128i));
        let mask = _mm256_set1_epi8(0x0f);
        let prod = |x: __m256i| {
            _mm256_xor_si256(
                _mm256_shuffle_epi8(tlo, _mm256_and_si256(x, mask)),
                _mm256_shuffle_epi8(thi, _mm256_and_si256(_mm256_srli_epi64(x, 4), mask)),
            )
        };
        run256::<ADD, _>(dst, src, n, prod);
    }
}

#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn mul_avx512<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let t = &gf256::NIBBLES[c as usize];
    let mut i = 0;
    // SAFETY: full-width accesses are at offsets `< n`; the tail uses
    // byte-masked loads/stores that touch only the `n - i` valid bytes;
    // `t` is 32 bytes.
    unsafe {
        let tlo = _mm512_broadcast_i32x4(_mm_loadu_si128(t.as_ptr() as *const __m128i));
        let thi = _mm512_broadcast_i32x4(_mm_loadu_si128(t.as_ptr().add(16) as *const __m128i));
        let mask = _mm512_set1_epi8(0x0f);
        let prod = |x: __m512i| {
            _mm512_xor_si512(
                _mm512_shuffle_epi8(tlo, _mm512_and_si512(x, mask)),
                _mm512_shuffle_epi8(thi, _mm512_and_si512(_mm512_srli_epi64(x, 4), mask)),
            )
        };
        while i + 128 <= n {
            let mut p0 = prod(_mm512_loadu_si512(src.add(i) as *const _));
            let mut p1 = prod(_mm512_loadu_si512(src.add(i + 64) as *const _));
            if ADD {
                p0 = _mm512_xor_si512(p0, _mm512_loadu_si512(dst.add(i) as *const _));
                p1 = _mm512_xor_si512(p1, _mm512_loadu_si512(dst.add(i + 64) as *const _));
            }
            _mm512_storeu_si512(dst.add(i) as *mut _, p0);
            _mm512_storeu_si512(dst.add(i + 64) as *mut _, p1);
            i += 128;
        }
        while i < n {
            let rem = n - i;
            let k: __mmask64 = if rem >= 64 { !0 } else { (1u64 << rem) - 1 };
            let x = _mm512_maskz_loadu_epi8(k, src.add(i) as *const i8);
            let mut p = prod(x);
            if ADD {
                p = _mm512_xor_si512(p, _mm512_maskz_loadu_epi8(k, dst.add(i) as *const i8));
            }
            _mm512_mask_storeu_epi8(dst.add(i) as *mut i8, k, p);
            i += 64;
        }
    }
}

#[target_feature(enable = "gfni,avx2")]
unsafe fn mul_gfni256<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let m = _mm256_set1_epi64x(gf256::affine_matrix(c) as i64);
    // SAFETY: `run256` has the contract of this function.
    unsafe { run256::<ADD, _>(dst, src, n, |x| _mm256_gf2p8affine_epi64_epi8::<0>(x, m)) }
}

#[target_feature(enable = "gfni,avx512f,avx512bw")]
unsafe fn mul_gfni512<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let m = _mm512_set1_epi64(gf256::affine_matrix(c) as i64);
    let mut i = 0;
    // SAFETY: as in `mul_avx512`.
    unsafe {
        while i + 128 <= n {
            let mut p0 =
                _mm512_gf2p8affine_epi64_epi8::<0>(_mm512_loadu_si512(src.add(i) as *const _), m);
            let mut p1 = _mm512_gf2p8affine_epi64_epi8::<0>(
                _mm512_loadu_si512(src.add(i + 64) as *const _),
                m,
            );
            if ADD {
                p0 = _mm512_xor_si512(p0, _mm512_loadu_si512(dst.add(i) as *const _));
                p1 = _mm512_xor_si512(p1, _mm512_loadu_si512(dst.add(i + 64) as *const _));
            }
            _mm512_storeu_si512(dst.add(i) as *mut _, p0);
            _mm512_storeu_si512(dst.add(i + 64) as *mut _, p1);
            i += 128;
        }
        while i < n {
            let rem = n - i;
            let k: __mmask64 = if rem >= 64 { !0 } else { (1u64 << rem) - 1 };
            let x = _mm512_maskz_loadu_epi8(k, src.add(i) as *const i8);
            let mut p = _mm512_gf2p8affine_epi64_epi8::<0>(x, m);
            if ADD {
                p = _mm512_xor_si512(p, _mm512_maskz_loadu_epi8(k, dst.add(i) as *const i8));
            }
            _mm512_mask_storeu_epi8(dst.add(i) as *mut i8, k, p);
            i += 64;
        }
    }
}

/// Which x86 implementation to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum X86 {
    Ssse3,
    Avx2,
    Avx512,
    Gfni256,
    Gfni512,
}

impl X86 {
    /// Whether the running CPU supports this implementation.
    pub(super) fn detected(self) -> bool {
        match self {
            X86::Ssse3 => is_x86_feature_detected!("ssse3"),
            X86::Avx2 => is_x86_feature_detected!("avx2"),
            X86::Avx512 => {
                is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
            }
            X86::Gfni256 => is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2"),
            X86::Gfni512 => {
                is_x86_feature_detected!("gfni")
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
            }
        }
    }

    /// `dst ^= c * src` (over the common length).
    pub(super) fn axpy(self, dst: &mut [u8], src: &[u8], c: u8) {
        let n = dst.len().min(src.len());
        self.run::<true>(dst.as_mut_ptr(), src.as_ptr(), n, c);
    }

    /// `dst = c * src` (over the common length).
    pub(super) fn mul_into(self, dst: &mut [u8], src: &[u8], c: u8) {
        let n = dst.len().min(src.len());
        self.run::<false>(dst.as_mut_ptr(), src.as_ptr(), n, c);
    }

    /// `dst = c * dst`.
    pub(super) fn scale(self, dst: &mut [u8], c: u8) {
        let p = dst.as_mut_ptr();
        self.run::<false>(p, p as *const u8, dst.len(), c);
    }

    fn run<const ADD: bool>(self, dst: *mut u8, src: *const u8, n: usize, c: u8) {
        // `X86` values are only created by `super::Kernel` constructors after
        // `detected()` returned true (checked again in debug builds).
        debug_assert!(self.detected());
        // SAFETY: features verified at Kernel construction; `dst`/`src` come
        // from slices of at least `n` bytes (or are the same slice).
        unsafe {
            match self {
                X86::Ssse3 => mul_ssse3::<ADD>(dst, src, n, c),
                X86::Avx2 => mul_avx2::<ADD>(dst, src, n, c),
                X86::Avx512 => mul_avx512::<ADD>(dst, src, n, c),
                X86::Gfni256 => mul_gfni256::<ADD>(dst, src, n, c),
                X86::Gfni512 => mul_gfni512::<ADD>(dst, src, n, c),
            }
        }
    }
}

/// Maximum number of sources combined in one fused pass.
pub(super) const GROUP: usize = 8;

/// Fused linear combination over `k <= GROUP` sources:
/// `dst[i] = (ADD ? dst[i] : 0) ^ sum_j c_j * src_j[i]` for `i < n`, every
/// source valid for `n` bytes. The accumulator stays in a register, so `dst`
/// is read and written once per vector instead of once per source.
#[target_feature(enable = "gfni,avx512f,avx512bw")]
unsafe fn lc_gfni512<const ADD: bool>(
    dst: *mut u8,
    srcs: &[*const u8; GROUP],
    coefs: &[u8; GROUP],
    k: usize,
    n: usize,
) {
    let mut m = [_mm512_setzero_si512(); GROUP];
    for j in 0..k {
        m[j] = _mm512_set1_epi64(gf256::affine_matrix(coefs[j]) as i64);
    }
    let mut i = 0;
    // SAFETY: every pointer is valid for `n` bytes (caller); full vectors
    // stay below `n`, the tail uses byte masks.
    unsafe {
        while i + 64 <= n {
            let mut acc = if ADD {
                _mm512_loadu_si512(dst.add(i) as *const _)
            } else {
                _mm512_setzero_si512()
            };
            for j in 0..k {
                let x = _mm512_loadu_si512(srcs[j].add(i) as *const _);
                acc = _mm512_xor_si512(acc, _mm512_gf2p8affine_epi64_epi8::<0>(x, m[j]));
            }
            _mm512_storeu_si512(dst.add(i) as *mut _, acc);
            i += 64;
        }
        if i < n {
            let km: __mmask64 = (1u64 << (n - i)) - 1;
            let mut acc = if ADD {
                _mm512_maskz_loadu_epi8(km, dst.add(i) as *const i8)
            } else {
                _mm512_setzero_si512()
            };
            for j in 0..k {
                let x = _mm512_maskz_loadu_epi8(km, srcs[j].add(i) as *const i8);
                acc = _mm512_xor_si512(acc, _mm512_gf2p8affine_epi64_epi8::<0>(x, m[j]));
            }
            _mm512_mask_storeu_epi8(dst.add(i) as *mut i8, km, acc);
        }
    }
}

/// As [`lc_gfni512`] with 256-bit vectors (bounce-buffer tail).
#[target_feature(enable = "gfni,avx2")]
unsafe fn lc_gfni256<const ADD: bool>(
    dst: *mut u8,
    srcs: &[*const u8; GROUP],
    coefs: &[u8; GROUP],
    k: usize,
    n: usize,
) {
    let mut m = [_mm256_setzero_si256(); GROUP];
    for j in 0..k {
        m[j] = _mm256_set1_epi64x(gf256::affine_matrix(coefs[j]) as i64);
    }
    let mut i = 0;
    // SAFETY: every pointer is valid for `n` bytes (caller); vectors stay
    // below `n`; the tail goes through bounce buffers of `n - i` bytes.
    unsafe {
        while i + 32 <= n {
            let mut acc = if ADD {
                _mm256_loadu_si256(dst.add(i) as *const __m256i)
            } else {
                _mm256_setzero_si256()
            };
            for j in 0..k {
                let x = _mm256_loadu_si256(srcs[j].add(i) as *const __m256i);
                acc = _mm256_xor_si256(acc, _mm256_gf2p8affine_epi64_epi8::<0>(x, m[j]));
            }
            _mm256_storeu_si256(dst.add(i) as *mut __m256i, acc);
            i += 32;
        }
        if i < n {
            let rem = n - i;
            let mut acc = if ADD {
                load_partial256(dst.add(i), rem)
            } else {
                _mm256_setzero_si256()
            };
            for j in 0..k {
                let x = load_partial256(srcs[j].add(i), rem);
                acc = _mm256_xor_si256(acc, _mm256_gf2p8affine_epi64_epi8::<0>(x, m[j]));
            }
            store_partial256(dst.add(i), acc, rem);
        }
    }
}

/// As [`lc_gfni512`] with AVX2 nibble tables (bounce-buffer tail).
#[target_feature(enable = "avx2")]
unsafe fn lc_avx2<const ADD: bool>(
    dst: *mut u8,
    srcs: &[*const u8; GROUP],
    coefs: &[u8; GROUP],
    k: usize,
    n: usize,
) {
    let mut lo = [_mm256_setzero_si256(); GROUP];
    let mut hi = [_mm256_setzero_si256(); GROUP];
    let mut i = 0;
    // SAFETY: tables are 32 bytes; every pointer is valid for `n` bytes
    // (caller); vectors stay below `n`; the tail goes through bounce buffers.
    unsafe {
        for j in 0..k {
            let t = &gf256::NIBBLES[coefs[j] as usize];
            lo[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i));
            hi[j] =
                _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().add(16) as *const __m128i));
        }
        let mask = _mm256_set1_epi8(0x0f);
        while i + 32 <= n {
            let mut acc = if ADD {
                _mm256_loadu_si256(dst.add(i) as *const __m256i)
            } else {
                _mm256_setzero_si256()
            };
            for j in 0..k {
                let x = _mm256_loadu_si256(srcs[j].add(i) as *const __m256i);
                let p = _mm256_xor_si256(
                    _mm256_shuffle_epi8(lo[j], _mm256_and_si256(x, mask)),
                    _mm256_shuffle_epi8(hi[j], _mm256_and_si256(_mm256_srli_epi64(x, 4), mask)),
                );
                acc = _mm256_xor_si256(acc, p);
            }
            _mm256_storeu_si256(dst.add(i) as *mut __m256i, acc);
            i += 32;
        }
        if i < n {
            let rem = n - i;
            let mut acc = if ADD {
                load_partial256(dst.add(i), rem)
            } else {
                _mm256_setzero_si256()
            };
            for j in 0..k {
                let x = load_partial256(srcs[j].add(i), rem);
                let p = _mm256_xor_si256(
                    _mm256_shuffle_epi8(lo[j], _mm256_and_si256(x, mask)),
                    _mm256_shuffle_epi8(hi[j], _mm256_and_si256(_mm256_srli_epi64(x, 4), mask)),
                );
                acc = _mm256_xor_si256(acc, p);
            }
            store_partial256(dst.add(i), acc, rem);
        }
    }
}

impl X86 {
    /// Fused `dst = (add ? dst : 0) ^ sum c_j src_j` over `dst.len()` bytes
    /// for up to [`GROUP`] sources that are all at least `dst.len()` long.
    /// Returns `false` (doing nothing) if this implementation has no fused
    /// kernel or the inputs do not qualify.
    pub(super) fn lincomb_group(
        self,
        dst: &mut [u8],
        srcs: &[&[u8]],
        coefs: &[u8],
        add: bool,
    ) -> bool {
        let n = dst.len();
        let k = srcs.len().min(coefs.len());
        if k == 0 || k > GROUP || srcs[..k].iter().any(|s| s.len() < n) {
            return false;
        }
        let mut p = [core::ptr::null::<u8>(); GROUP];
        let mut c = [0u8; GROUP];
        for j in 0..k {
            p[j] = srcs[j].as_ptr();
            c[j] = coefs[j];
        }
        let d = dst.as_mut_ptr();
        debug_assert!(self.detected());
        // SAFETY: features verified at Kernel construction; `dst` is valid for
        // `n` bytes and every source for at least `n` bytes (checked above);
        // `dst` is a `&mut` so it does not alias the shared sources.
        unsafe {
            match (self, add) {
                (X86::Gfni512, false) => lc_gfni512::<false>(d, &p, &c, k, n),
                (X86::Gfni512, true) => lc_gfni512::<true>(d, &p, &c, k, n),
                (X86::Gfni256, false) => lc_gfni256::<false>(d, &p, &c, k, n),
                (X86::Gfni256, true) => lc_gfni256::<true>(d, &p, &c, k, n),
                (X86::Avx2 | X86::Avx512, false) => lc_avx2::<false>(d, &p, &c, k, n),
                (X86::Avx2 | X86::Avx512, true) => lc_avx2::<true>(d, &p, &c, k, n),
                (X86::Ssse3, _) => return false,
            }
        }
        true
    }
}
