//! aarch64 NEON kernel (TBL nibble tables). NEON is part of the aarch64
//! baseline, so no runtime detection is needed. Compiled only on aarch64.

use core::arch::aarch64::*;

use crate::gf256;

/// `dst[i] = (ADD ? dst[i] : 0) ^ c*src[i]` for `i < n`.
///
/// # Safety
/// `dst` valid for `n` reads/writes, `src` for `n` reads; they are equal or
/// do not overlap.
unsafe fn mul_neon<const ADD: bool>(dst: *mut u8, src: *const u8, n: usize, c: u8) {
    let (lo, hi) = gf256::nibble_tables(c);
    let row = &gf256::MUL[c as usize];
    let mut i = 0;
    // SAFETY: accesses at offsets `< n` only.
    unsafe {
        let tlo = vld1q_u8(lo.as_ptr());
        let thi = vld1q_u8(hi.as_ptr());
        let mask = vdupq_n_u8(0x0f);
        while i + 16 <= n {
            let x = vld1q_u8(src.add(i));
            let l = vandq_u8(x, mask);
            let h = vshrq_n_u8::<4>(x);
            let mut p = veorq_u8(vqtbl1q_u8(tlo, l), vqtbl1q_u8(thi, h));
            if ADD {
                p = veorq_u8(p, vld1q_u8(dst.add(i)));
            }
            vst1q_u8(dst.add(i), p);
            i += 16;
        }
        while i < n {
            let p = row[*src.add(i) as usize];
            let d = dst.add(i);
            *d = if ADD { *d ^ p } else { p };
            i += 1;
        }
    }
}

/// `dst ^= c * src`.
pub(super) fn axpy(dst: &mut [u8], src: &[u8], c: u8) {
    let n = dst.len().min(src.len());
    // SAFETY: pointers from slices of at least `n` bytes.
    unsafe { mul_neon::<true>(dst.as_mut_ptr(), src.as_ptr(), n, c) }
}

/// `dst = c * src`.
pub(super) fn mul_into(dst: &mut [u8], src: &[u8], c: u8) {
    let n = dst.len().min(src.len());
    // SAFETY: pointers from slices of at least `n` bytes.
    unsafe { mul_neon::<false>(dst.as_mut_ptr(), src.as_ptr(), n, c) }
}

/// `dst = c * dst`.
pub(super) fn scale(dst: &mut [u8], c: u8) {
    let p = dst.as_mut_ptr();
    // SAFETY: in-place, same slice.
    unsafe { mul_neon::<false>(p, p as *const u8, dst.len(), c) }
}
