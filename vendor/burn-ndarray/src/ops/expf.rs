//! privrl: `exp` of an `f32` array, four lanes at a time, with the bits of glibc's `expf`.
//!
//! burn-ndarray computes `exp` element by element through `f32::exp`, which on Linux is glibc's
//! `expf`: a function call per element, and in a PPO update on CartPole (tanh layers) a sixth of
//! the profile. glibc's `expf` (since 2.28, Szabolcs Nagy's algorithm, `e_expf.c`) is branch-free
//! double-precision arithmetic on its main path: k = round(x·32/ln 2), r = x·32/ln 2 − k, then
//! 2^(k/32) from a 32-entry table times a cubic in r, rounded to `f32` once. Its x86-64 build
//! selects the variant compiled with FMA (`__expf_fma`) on CPUs with AVX2 and FMA, and that
//! variant's instruction sequence is fixed: the kernel below performs the same double-precision
//! operations, fused where `__expf_fma` fuses them, on four lanes with AVX2, so every result has
//! the same bits as `f32::exp`. Inputs off the main path (|x| ≥ 88, NaN, ±∞) are handed to
//! `f32::exp` itself.
//!
//! The kernel runs only where that claim can hold: x86-64 Linux with glibc, AVX2 and FMA present,
//! and a probe of 65,536 inputs spread over every exponent agreeing bit for bit with `f32::exp`
//! in this process (a libm with another algorithm fails it and keeps the element-wise call).
//! privrl's test `vectorised_exp_has_the_bits_of_libm` compares all 2³² inputs.

use alloc::vec::Vec;

use crate::SharedArray;
use crate::element::FloatNdArrayElement;

/// `exp` of every element; `f32` arrays in standard layout go through the vectorised kernel
/// where it is usable, everything else element-wise as before.
pub(crate) fn exp<E: FloatNdArrayElement>(array: SharedArray<E>) -> SharedArray<E> {
    #[cfg(all(feature = "std", target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    if core::any::TypeId::of::<E>() == core::any::TypeId::of::<f32>()
        && array.is_standard_layout()
        && avx2::usable()
    {
        let len = array.len();
        let mut array = array;
        if array.is_unique() {
            let out = array.as_slice_mut().expect("a standard layout is contiguous");
            let ptr = out.as_mut_ptr() as *mut f32;
            // SAFETY: E is f32 (checked above), the slice holds `len` elements, and the kernel
            // reads each lane before it writes it, so source and destination may coincide;
            // `usable` checked AVX2 and FMA.
            unsafe { avx2::exp(ptr, ptr, len) };
            return array;
        }
        let src = array.as_slice().expect("a standard layout is contiguous");
        let mut out: Vec<E> = Vec::with_capacity(len);
        // SAFETY: as above; `out` has capacity for `len` elements and the kernel writes all of
        // them before `set_len`.
        unsafe {
            avx2::exp(src.as_ptr() as *const f32, out.as_mut_ptr() as *mut f32, len);
            out.set_len(len);
        }
        return SharedArray::from_shape_vec(array.raw_dim(), out)
            .expect("the shape of a contiguous array holds its elements");
    }
    array.mapv_into(|a| a.exp_elem())
}

#[cfg(all(feature = "std", target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod avx2 {
    use core::arch::x86_64::*;
    use std::sync::OnceLock;

    /// glibc's `__exp2f_data.tab`: tab\[i\] = bits(2^(i/32)) − (i << 47).
    const TABLE: [u64; 32] = [
        0x3ff0000000000000,
        0x3fefd9b0d3158574,
        0x3fefb5586cf9890f,
        0x3fef9301d0125b51,
        0x3fef72b83c7d517b,
        0x3fef54873168b9aa,
        0x3fef387a6e756238,
        0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715,
        0x3feef1a7373aa9cb,
        0x3feedea64c123422,
        0x3feece086061892d,
        0x3feebfdad5362a27,
        0x3feeb42b569d4f82,
        0x3feeab07dd485429,
        0x3feea47eb03a5585,
        0x3feea09e667f3bcd,
        0x3fee9f75e8ec5f74,
        0x3feea11473eb0187,
        0x3feea589994cce13,
        0x3feeace5422aa0db,
        0x3feeb737b0cdc5e5,
        0x3feec49182a3f090,
        0x3feed503b23e255d,
        0x3feee89f995ad3ad,
        0x3feeff76f2fb5e47,
        0x3fef199bdd85529c,
        0x3fef3720dcef9069,
        0x3fef5818dcfba487,
        0x3fef7c97337b9b5f,
        0x3fefa4afa2a490da,
        0x3fefd0765b6e4540,
    ];
    /// 32 / ln 2 (`invln2_scaled`).
    const INV_LN2_N: u64 = 0x40471547652b82fe;
    /// 1.5 · 2^52: adding it rounds to an integer held in the low mantissa bits (`shift`).
    const SHIFT: u64 = 0x4338000000000000;
    /// The cubic's coefficients for r scaled by 32 (`poly_scaled`).
    const C0: u64 = 0x3ebc6af84b912394;
    const C1: u64 = 0x3f2ebfce50fac4f3;
    const C2: u64 = 0x3f962e42ff0c52d6;
    /// Inputs whose top 12 bits (sign cleared) exceed this leave glibc's main path: |x| ≥ 88.
    const MAIN_PATH_TOP: i32 = 0x42a;

    /// Whether the kernel may stand in for `f32::exp` in this process (checked once).
    pub(super) fn usable() -> bool {
        static USABLE: OnceLock<bool> = OnceLock::new();
        *USABLE.get_or_init(|| {
            if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
                return false;
            }
            // Every 65,536th bit pattern: all exponents, both signs, NaNs and infinities.
            let probe: Vec<f32> = (0..65_536u32)
                .map(|i| f32::from_bits(i.wrapping_mul(65_537).wrapping_add(i >> 3)))
                .collect();
            let mut out = vec![0.0f32; probe.len()];
            // SAFETY: AVX2 and FMA are present; both buffers hold `probe.len()` elements.
            unsafe { exp(probe.as_ptr(), out.as_mut_ptr(), probe.len()) };
            probe
                .iter()
                .zip(&out)
                .all(|(x, y)| x.exp().to_bits() == y.to_bits())
        })
    }

    /// `dst[i] = exp(src[i])` for `i < len`; `src` and `dst` may be the same buffer.
    ///
    /// # Safety
    /// AVX2 and FMA must be present, `src` valid for `len` reads and `dst` for `len` writes.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exp(src: *const f32, dst: *mut f32, len: usize) {
        let inv_ln2_n = _mm256_set1_pd(f64::from_bits(INV_LN2_N));
        let shift = _mm256_set1_pd(f64::from_bits(SHIFT));
        let c0 = _mm256_set1_pd(f64::from_bits(C0));
        let c1 = _mm256_set1_pd(f64::from_bits(C1));
        let c2 = _mm256_set1_pd(f64::from_bits(C2));
        let one = _mm256_set1_pd(1.0);
        let low5 = _mm256_set1_epi64x(31);
        let top_mask = _mm_set1_epi32(0x7ff);
        let main_top = _mm_set1_epi32(MAIN_PATH_TOP);
        let mut i = 0;
        while i + 4 <= len {
            // SAFETY (all pointer arithmetic below): i + 4 <= len.
            let x = unsafe { _mm_loadu_ps(src.add(i)) };
            let top = _mm_and_si128(_mm_srli_epi32::<20>(_mm_castps_si128(x)), top_mask);
            if _mm_movemask_epi8(_mm_cmpgt_epi32(top, main_top)) != 0 {
                for j in i..i + 4 {
                    unsafe { *dst.add(j) = (*src.add(j)).exp() };
                }
                i += 4;
                continue;
            }
            // __expf_fma, line by line (e_expf.c with GCC's contractions):
            let xd = _mm256_cvtps_pd(x);
            // kd = fma(InvLn2N, xd, SHIFT); ki = bits(kd); kd -= SHIFT
            let shifted = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
            let ki = _mm256_castpd_si256(shifted);
            let kd = _mm256_sub_pd(shifted, shift);
            // r = fma(InvLn2N, xd, −kd)
            let r = _mm256_fmsub_pd(inv_ln2_n, xd, kd);
            // s = double(T[ki % 32] + (ki << 47))
            let t = unsafe {
                _mm256_i64gather_epi64::<8>(
                    TABLE.as_ptr() as *const i64,
                    _mm256_and_si256(ki, low5),
                )
            };
            let s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64::<47>(ki)));
            // z = fma(r, C0, C1); r2 = r·r; y = fma(r, C2, 1); y = fma(z, r2, y); y·s
            let z = _mm256_fmadd_pd(r, c0, c1);
            let r2 = _mm256_mul_pd(r, r);
            let y = _mm256_fmadd_pd(r, c2, one);
            let y = _mm256_fmadd_pd(z, r2, y);
            let y = _mm256_mul_pd(y, s);
            unsafe { _mm_storeu_ps(dst.add(i), _mm256_cvtpd_ps(y)) };
            i += 4;
        }
        while i < len {
            unsafe { *dst.add(i) = (*src.add(i)).exp() };
            i += 1;
        }
    }
}
