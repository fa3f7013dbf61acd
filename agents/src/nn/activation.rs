//! The non-linearities between layers, and a tanh with a cheap, twice differentiable backward.

use burn::config::Config;
use burn::tensor::activation;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use crate::tensor::float_of_mask;

/// Element-wise non-linearity between layers.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Hyperbolic tangent (Spinning Up's default for PPO).
    Tanh,
    /// Rectified linear unit.
    Relu,
}

impl Activation {
    /// Applies the non-linearity.
    pub fn forward<B: Backend, const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Activation::Tanh => fast_tanh(x),
            Activation::Relu => activation::relu(x),
        }
    }

    /// The non-linearity on a tensor that no graph tracks: tanh as t = 1 − 2 / (e^{2x} + 1)
    /// alone, without [`fast_tanh`]'s graph terms.
    pub(crate) fn forward_untracked<B: Backend, const D: usize>(
        &self,
        x: Tensor<B, D>,
    ) -> Tensor<B, D> {
        match self {
            Activation::Tanh => {
                #[cfg(feature = "ndarray")]
                let x = match super::ndarray_tanh::tanh_untracked(x) {
                    Ok(t) => return t,
                    Err(x) => x,
                };
                ((x * 2.0).exp() + 1.0).recip() * -2.0 + 1.0
            }
            Activation::Relu => activation::relu(x),
        }
    }

    /// `back ⊙ σ′(z)` from the activation a = σ(z): σ′ = 1 − a² for tanh, 1{a > 0} for ReLU
    /// (a hand-written backward through the non-linearity).
    pub(crate) fn backward_from_output<B: Backend, const D: usize>(
        &self,
        back: Tensor<B, D>,
        output: Tensor<B, D>,
    ) -> Tensor<B, D> {
        match self {
            Activation::Tanh => {
                #[cfg(feature = "ndarray")]
                let (back, output) = match super::ndarray_tanh::times_tanh_slope(back, output) {
                    Ok(product) => return product,
                    Err(pair) => pair,
                };
                back * (output.clone() * output * -1.0 + 1.0)
            }
            Activation::Relu => back * float_of_mask(output.greater_elem(0.0)),
        }
    }

    /// Lipschitz constant of the non-linearity (both are 1-Lipschitz).
    pub fn lipschitz_constant(&self) -> f64 {
        1.0
    }
}

/// tanh with a cheap backward, twice differentiable.
///
/// The value t = 1 − r with r = 2 / (e^{2x} + 1) (no overflow: e^{2x} = ∞ gives t = 1) and
/// the slope s = 1 − t² = r (2 − r) are computed off the graph, and the result is
/// `t + (x − x̄) s` with x̄ = x off the graph: its value is exactly t and its derivative is s.
/// The backward is then one multiplication, where burn-ndarray's `tanh` is an element-wise
/// `f64` call and its autodiff backward computes it a second time (together half of a PPO
/// update on CartPole).
///
/// Under `Autodiff<Autodiff<B>>` "off the graph" means off the outer graph only: t and s stay
/// tracked by the inner one, so a weight gradient (a function of s) is still differentiable
/// with respect to the input, with ∂s/∂x = −2t(1 − t²).
pub fn fast_tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    // The same arithmetic in one pass on burn-ndarray (same bits; `ndarray_tanh`).
    #[cfg(feature = "ndarray")]
    let x = match super::ndarray_tanh::fast_tanh(x) {
        Ok(t) => return t,
        Err(x) => x,
    };
    let x_const = x.clone().set_require_grad(false);
    let r = ((x_const.clone() * 2.0).exp() + 1.0).recip() * 2.0;
    let t = r.clone().neg() + 1.0;
    let slope = r.clone() * (r.neg() + 2.0);
    t + (x - x_const) * slope
}
