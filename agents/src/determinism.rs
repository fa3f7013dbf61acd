//! Whether this build keeps "same seed, same bytes" on burn-ndarray: [`check_exact_division`].
//!
//! burn-ndarray's `simd` feature (on in Burn's default features) computes 1/x, the backward
//! of `log` and of a division, with the approximate `rcp` instruction on the aligned middle of
//! a buffer and exactly on its head and tail, so which gradient entries are exact moves with the
//! heap address: a seeded `PrivacyEngine` run gave different weights on 6 of 6 runs downstream
//! (`docs/determinism.md`). The feature is a property of the whole build (Cargo unifies it across
//! every crate that depends on burn-ndarray), so a library cannot turn it off; it can only see
//! its effect, which is what this probe does.

#[cfg(feature = "ndarray")]
use std::sync::OnceLock;

use burn::tensor::backend::Backend;

use crate::error::EngineError;

/// Refuses, with [`EngineError::InexactDivision`], a build whose burn-ndarray divides
/// inexactly, when `B` is burn-ndarray (`NdArray`, or `Autodiff` of it, at any depth); other
/// backends pass. The probe (1/x of 1,000 values,
/// compared bit for bit with Rust's division) runs once per process, in microseconds.
///
/// [`PrivacyEngine`](crate::PrivacyEngine) calls it before its first step when its source is
/// `RandomnessSource::Seeded`, which asks for a repeatable run; call it yourself before other
/// seeded work on `NdArray`. Without the `ndarray` feature it cannot probe and passes.
pub fn check_exact_division<B: Backend>() -> Result<(), EngineError> {
    #[cfg(feature = "ndarray")]
    {
        // Autodiff<…> wraps the backend it differentiates, so its name holds that one's.
        if std::any::type_name::<B>().contains("burn_ndarray::") {
            static PROBE: OnceLock<Option<(f32, f32, f32)>> = OnceLock::new();
            if let Some((x, got, exact)) = *PROBE.get_or_init(ndarray_reciprocal_probe) {
                return Err(EngineError::InexactDivision { x, got, exact });
            }
        }
    }
    Ok(())
}

/// The first x whose reciprocal on burn-ndarray differs from `1.0 / x`, with both values.
#[cfg(feature = "ndarray")]
fn ndarray_reciprocal_probe() -> Option<(f32, f32, f32)> {
    use burn::backend::NdArray;
    use burn::tensor::Tensor;

    // 1,000 values: long enough that the SIMD path takes the aligned middle.
    let x: Vec<f32> = (0..1000).map(|i| 0.5 + i as f32 * 0.37).collect();
    let device = Default::default();
    let got = Tensor::<NdArray, 1>::from_floats(x.as_slice(), &device)
        .recip()
        .into_data()
        .to_vec::<f32>()
        .ok()?;
    x.iter()
        .zip(&got)
        .find(|(x, got)| (1.0 / **x).to_bits() != got.to_bits())
        .map(|(&x, &got)| (x, got, 1.0 / x))
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use super::*;

    /// privrl's own build has `simd` off: the probe passes on NdArray and under autodiff, and
    /// both are recognised as burn-ndarray. (A build with `simd` on cannot be tested from this
    /// workspace, whose one feature set has it off; the probe computes what
    /// `tests/determinism.rs::log_and_division_backwards_divide_exactly` checks.)
    #[test]
    fn privrl_build_divides_exactly() {
        assert_eq!(ndarray_reciprocal_probe(), None);
        check_exact_division::<burn::backend::NdArray>().unwrap();
        check_exact_division::<burn::backend::Autodiff<burn::backend::NdArray>>().unwrap();
        assert!(
            std::any::type_name::<burn::backend::Autodiff<burn::backend::NdArray>>()
                .contains("burn_ndarray::")
        );
    }
}
