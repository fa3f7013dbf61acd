//! Linear layers: the one place where per-sample gradients of z = a W + b are computed, for
//! [`super::PerSampleFactors`] (DQN's analytic path) and the [`super::Traced`] fast path alike.

use burn::module::ParamId;
use burn::nn::Linear;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

use crate::dp::GradSampleLayer;
use crate::error::EngineError;
use crate::nn::Dense;

/// Per-sample gradients of `z = a W + b` with W `[d_in, d_out]`, materialised, for
/// activations `[batch, ..., d_in]` and backprops `[batch, ..., d_out]`: ∇W_i = Σ_t a_itᵀ δ_it
/// `[batch, d_in·d_out]` (one term per position t of the middle axes, one for a plain
/// `[batch, d]` input) and ∇b_i = Σ_t δ_it `[batch, d_out]`.
pub(super) fn linear_grad_samples<B: Backend, const D: usize>(
    activations: Tensor<B, D>,
    backprops: Tensor<B, D>,
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let dims_a = activations.dims();
    let dims_d = backprops.dims();
    let (batch, d_in, d_out) = (dims_a[0], dims_a[D - 1], dims_d[D - 1]);
    let a: Tensor<B, 3> = activations.reshape([batch as i32, -1, d_in as i32]);
    let delta: Tensor<B, 3> = backprops.reshape([batch as i32, -1, d_out as i32]);
    let w = a
        .swap_dims(1, 2)
        .matmul(delta.clone())
        .reshape([batch, d_in * d_out]);
    (w, delta.sum_dim(1).reshape([batch, d_out]))
}

/// Per-sample squared norms of a linear layer's weight and bias gradients `[batch]` each,
/// without materialising them, for one position per sample (`a` `[batch, d_in]`, `δ`
/// `[batch, d_out]`): ‖a_iᵀ δ_i‖_F² = ‖a_i‖² ‖δ_i‖² and ‖δ_i‖².
pub(super) fn linear_squared_norms<B: Backend>(
    a: &Tensor<B, 2>,
    delta: &Tensor<B, 2>,
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let input_sq = row_squared_norms(a.clone());
    let error_sq = row_squared_norms(delta.clone());
    (input_sq * error_sq.clone(), error_sq)
}

/// Σ_i c_i ∇W_i = aᵀ diag(c) δ `[d_in, d_out]` and Σ_i c_i ∇b_i `[d_out]`: the clipped sum of
/// a linear layer's per-sample gradients in one matmul (one position per sample).
pub(super) fn linear_weighted_sums<B: Backend>(
    a: &Tensor<B, 2>,
    delta: &Tensor<B, 2>,
    factors: Tensor<B, 1>,
) -> (Tensor<B, 2>, Tensor<B, 1>) {
    let weighted = delta.clone() * factors.unsqueeze_dim::<2>(1);
    let weight = a.clone().transpose().matmul(weighted.clone());
    (weight, weighted.sum_dim(0).squeeze_dim::<1>(0))
}

/// `Σ_j x_ij²` of every row of `x`.
fn row_squared_norms<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 1> {
    (x.clone() * x).sum_dim(1).squeeze_dim(1)
}

/// [`linear_grad_samples`] keyed by the parameters' ids.
pub(super) fn linear_param_samples<B: Backend, const D: usize>(
    weight: ParamId,
    bias: Option<ParamId>,
    activations: Tensor<B, D>,
    backprops: Tensor<B, D>,
) -> Vec<(ParamId, Tensor<B, 2>)> {
    let (w, b) = linear_grad_samples(activations, backprops);
    std::iter::once((weight, w))
        .chain(bias.map(|id| (id, b)))
        .collect()
}

impl<B: AutodiffBackend, const D: usize> GradSampleLayer<B, D> for Linear<B> {
    fn forward_layer(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        self.forward(x)
    }

    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, D>,
        backprops: Tensor<B::InnerBackend, D>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        let [d_in, d_out] = self.weight.val().dims();
        if activations.dims()[D - 1] != d_in || backprops.dims()[D - 1] != d_out {
            return Err(EngineError::UnsupportedLayer {
                layer: "Linear",
                reason: format!(
                    "activations or backprops do not match the weight [{d_in}, {d_out}]"
                ),
            });
        }
        Ok(linear_param_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }

    fn linear_ids(&self) -> Option<(ParamId, Option<ParamId>)> {
        Some((self.weight.id, self.bias.as_ref().map(|b| b.id)))
    }
}

impl<B: AutodiffBackend> GradSampleLayer<B, 2> for Dense<B> {
    fn forward_layer(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward(x)
    }

    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, 2>,
        backprops: Tensor<B::InnerBackend, 2>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        Ok(linear_param_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }

    fn linear_ids(&self) -> Option<(ParamId, Option<ParamId>)> {
        Some((self.weight.id, self.bias.as_ref().map(|b| b.id)))
    }
}

/// A [`Dense`] layer on `[records, positions, d]`: every position of a record goes through the
/// same weights, so a record's gradient is Σ_t a_tᵀ δ_t over its positions (DP-PPO's records
/// are whole episodes, one position per step: [`crate::DpPpo`]). Always materialised
/// (`[records, d_in·d_out]`): the factored norms ‖a_i‖‖δ_i‖ hold for one position only.
impl<B: AutodiffBackend> GradSampleLayer<B, 3> for Dense<B> {
    fn forward_layer(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let [records, positions, d_in] = x.dims();
        let y = self.forward(x.reshape([records * positions, d_in]));
        let d_out = y.dims()[1];
        y.reshape([records, positions, d_out])
    }

    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, 3>,
        backprops: Tensor<B::InnerBackend, 3>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        Ok(linear_param_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }
}
