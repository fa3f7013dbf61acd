//! Convolutions: ∇W_i = δ_i · unfold(a_i)ᵀ with unfold the im2col of the (padded) input.

use burn::module::ParamId;
use burn::nn::conv::Conv2d;
use burn::nn::PaddingConfig2d;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::module::unfold4d;
use burn::tensor::ops::UnfoldOptions;
use burn::tensor::Tensor;

use crate::dp::GradSampleLayer;
use crate::error::EngineError;
use crate::tensor::zero_pad;

/// (before, after) zero padding of one spatial axis, as Burn's `Conv2d` computes it.
fn conv_padding(
    padding: &PaddingConfig2d,
    size: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
) -> [(usize, usize); 2] {
    // "Same": output ⌈n/s⌉, the odd pixel of padding at the end (Burn's and ONNX's rule).
    let same = |n: usize, k: usize, s: usize| {
        let out = n.div_ceil(s);
        let total = if out > 0 {
            ((out - 1) * s + k).saturating_sub(n)
        } else {
            0
        };
        (total / 2, total - total / 2)
    };
    match *padding {
        PaddingConfig2d::Valid => [(0, 0), (0, 0)],
        PaddingConfig2d::Same => [
            same(size[0], kernel[0], stride[0]),
            same(size[1], kernel[1], stride[1]),
        ],
        PaddingConfig2d::Explicit(top, left, bottom, right) => [(top, bottom), (left, right)],
    }
}

impl<B: AutodiffBackend> GradSampleLayer<B, 4> for Conv2d<B> {
    fn forward_layer(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.forward(x)
    }

    /// ∇W_i = δ_i · U_iᵀ with δ_i `[c_out, L]` (L output positions) and U_i `[c_in·k_h·k_w, L]`
    /// the unfolded (im2col) padded input, whose row order (channel, kernel row, kernel column)
    /// is the weight's `[c_out, c_in, k_h, k_w]`; ∇b_i = Σ_L δ_i.
    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, 4>,
        backprops: Tensor<B::InnerBackend, 4>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        if self.groups != 1 {
            return Err(EngineError::UnsupportedLayer {
                layer: "Conv2d",
                reason: format!("groups = {} (only 1 is covered)", self.groups),
            });
        }
        let [batch, _, height, width] = activations.dims();
        let [_, c_out, h_out, w_out] = backprops.dims();
        let pads = conv_padding(
            &self.padding,
            [height, width],
            self.kernel_size,
            self.stride,
        );
        let padded = if pads == [(0, 0), (0, 0)] {
            activations
        } else {
            zero_pad(activations, pads)
        };
        let unfolded = unfold4d(
            padded,
            self.kernel_size,
            UnfoldOptions::new(self.stride, [0, 0], self.dilation),
        );
        let [_, k, positions] = unfolded.dims();
        if positions != h_out * w_out {
            return Err(EngineError::Shape {
                what: "Conv2d unfolded positions",
                expected: vec![h_out * w_out],
                got: vec![positions],
            });
        }
        let delta: Tensor<B::InnerBackend, 3> = backprops.reshape([batch, c_out, positions]);
        let w = delta
            .clone()
            .matmul(unfolded.swap_dims(1, 2))
            .reshape([batch, c_out * k]);
        let mut out = vec![(self.weight.id, w)];
        if let Some(bias) = &self.bias {
            out.push((bias.id, delta.sum_dim(2).reshape([batch, c_out])));
        }
        Ok(out)
    }
}
