//! privrl's one clip → sum → noise path (Abadi et al. 2016, Algorithm 1, lines 5–7; paper 004,
//! Figure 7): every sampled record's gradient clipped to the mechanism's C by
//! [`PerSampleGradients::clipped_sum`] (whose factors min(1, C/‖g_i‖) have one home,
//! `grad_sample`), the clipped gradients summed, and the sum released by the mechanism
//! ([`GradientMechanism::release_clipped_sum_with`]: N(0, σ²C²I) added and the sum divided by
//! the expected batch size for DP-SGD, the mean for clipping alone). The [`PrivacyEngine`] and
//! the DP agents release through it; nothing else adds DP-SGD's noise.
//!
//! [`PrivacyEngine`]: crate::PrivacyEngine

use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use privrl_privacy::GradientMechanism;
use rand::RngCore;

use crate::autodiff;
use crate::dp::{ClippedSum, ParamLayout, PerSampleGradients};
use crate::error::EngineError;

/// What [`release_batch`] returns.
#[derive(Debug)]
pub struct BatchRelease {
    /// The module's parameter layout, which `values` follows.
    pub layout: ParamLayout,
    /// The released gradient (flat, in `layout`'s order).
    pub values: Vec<f32>,
    /// Each record's gradient norm before clipping (empty for an empty batch).
    pub norms: Vec<f32>,
    /// Σ_i ℓ_i over the batch where the strategy sees the losses (NaN otherwise, and for an
    /// empty batch).
    pub loss_sum: f64,
}

/// The private release of `module`'s gradient on the records `batch`: each record's gradient
/// clipped to `mechanism`'s [`record_clip`](GradientMechanism::record_clip) (∞ if none),
/// summed, and released by `mechanism` with `expected_batch_size` (under Poisson sampling the
/// expected, not the drawn, size). An empty batch releases pure noise: skipping it would break
/// the accounting. The mechanism's noise is drawn on a second thread while the sum is computed
/// ([`GradientMechanism::draw_sum_noise`]): the same draws in the same order as drawing them
/// after. No accounting here: the caller records the release.
pub fn release_batch<B, M>(
    module: &M,
    batch: &[usize],
    per_sample: &(impl PerSampleGradients<B, M> + Sync),
    mechanism: &dyn GradientMechanism,
    expected_batch_size: f64,
    rng: &mut (dyn RngCore + Send),
) -> Result<BatchRelease, EngineError>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Sync,
{
    let clip = mechanism.record_clip().unwrap_or(f64::INFINITY);
    // Reading the parameters initialises Burn's lazy ones, which makes tracked leaves: in a
    // section, like every other tracked op, and on `module` itself (a clone of an
    // uninitialised module initialises its own, different, values). One section for the
    // layout and the gradients: entering one hands the work to the section's thread, which
    // costs a context switch on a loaded machine. The noise needs no graph.
    let (section, noise) = autodiff::exclusive(|| {
        rayon::join(
            || clipped_sum_in_section(module, batch, per_sample, clip),
            || mechanism.draw_sum_noise(&mut *rng),
        )
    });
    let (layout, clipped) = section?;
    let values =
        mechanism.release_clipped_sum_with(clipped.sum, expected_batch_size, noise, rng)?;
    Ok(BatchRelease {
        layout,
        values,
        norms: clipped.norms,
        loss_sum: clipped.loss,
    })
}

/// The layout and the clipped sum of [`release_batch`], in a section.
fn clipped_sum_in_section<B, M>(
    module: &M,
    batch: &[usize],
    per_sample: &(impl PerSampleGradients<B, M> + Sync),
    clip: f64,
) -> Result<(ParamLayout, ClippedSum), EngineError>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Sync,
{
    let layout = ParamLayout::of(module);
    let dimension = layout.num_values();
    let clipped = if batch.is_empty() {
        ClippedSum {
            sum: vec![0.0; dimension],
            norms: Vec::new(),
            loss: f64::NAN,
        }
    } else {
        let clipped = per_sample.clipped_sum(module, batch, &layout, clip)?;
        if clipped.sum.len() != dimension || clipped.norms.len() != batch.len() {
            return Err(EngineError::Shape {
                what: "clipped per-sample gradients",
                expected: vec![batch.len(), dimension],
                got: vec![clipped.norms.len(), clipped.sum.len()],
            });
        }
        clipped
    };
    Ok((layout, clipped))
}
