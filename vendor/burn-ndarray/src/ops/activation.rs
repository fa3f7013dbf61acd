use crate::{
    NdArray, NdArrayTensor, SharedArray,
    element::{FloatNdArrayElement, IntNdArrayElement, NdArrayElement, QuantElement},
    execute_with_float_dtype, execute_with_numeric_dtype,
    ops::{NdArrayMathOps, NdArrayOps},
};
use burn_backend::{ElementConversion, TensorMetadata, ops::ActivationOps, tensor::FloatTensor};
use ndarray::Zip;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> ActivationOps<Self>
    for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
    fn relu(tensor: FloatTensor<Self>) -> FloatTensor<Self> {
        execute_with_numeric_dtype!(tensor, |array| NdArrayMathOps::clamp_min(array, 0.elem()))
    }

    // privrl: one pass instead of a mask and a fill (PRIVRL.md).
    fn relu_backward(output: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        execute_with_float_dtype!((output, grad), relu_backward)
    }
}

/// privrl: the default `relu_backward` (`grad` with 0 wherever `output <= 0`, by a boolean mask
/// and `mask_fill`) in one pass for arrays of one shape in standard layout, into `grad`'s
/// buffer when it owns it alone, else into a new one, as `mask_fill`'s `into_owned` would. The
/// same comparison and the same +0 fill, so the same values (a NaN output keeps its gradient).
fn relu_backward<E>(output: SharedArray<E>, grad: SharedArray<E>) -> SharedArray<E>
where
    E: NdArrayElement + PartialOrd + core::fmt::Debug,
{
    let zero: E = 0.elem();
    if output.shape() != grad.shape() || !output.is_standard_layout() || !grad.is_standard_layout()
    {
        let mask = NdArrayMathOps::lower_equal_elem(output, zero);
        return NdArrayOps::mask_fill(grad, mask, zero);
    }
    let backward = |g: E, o: E| if o <= zero { zero } else { g };
    if grad.is_unique() {
        let mut grad = grad;
        grad.zip_mut_with(&output, |g, &o| *g = backward(*g, o));
        grad
    } else {
        Zip::from(&grad)
            .and(&output)
            .map_collect(|&g, &o| backward(g, o))
            .into_shared()
    }
}
