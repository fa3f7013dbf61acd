use crate::{
    NdArray, NdArrayTensor, SharedArray,
    element::{FloatNdArrayElement, IntNdArrayElement, NdArrayElement, QuantElement},
    execute_with_float_dtype, execute_with_numeric_dtype,
    ops::{NdArrayMathOps, NdArrayOps, without_copy},
};
use burn_backend::{ElementConversion, TensorMetadata, ops::ActivationOps, tensor::FloatTensor};

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
/// and `mask_fill`) in one pass through `without_copy`, the element-wise ops' path for two
/// arrays of one shape in standard layout (into whichever operand's buffer is unshared, else a
/// new one); other shapes and layouts take the mask and the fill. The same comparison and the
/// same +0 fill, so the same values (a NaN output keeps its gradient).
fn relu_backward<E>(output: SharedArray<E>, grad: SharedArray<E>) -> SharedArray<E>
where
    E: NdArrayElement + PartialOrd + core::fmt::Debug,
{
    let zero: E = 0.elem();
    match without_copy(grad, output, |g, o| if o <= zero { zero } else { g }) {
        Ok(backward) => backward,
        Err((grad, output)) => {
            let mask = NdArrayMathOps::lower_equal_elem(output, zero);
            NdArrayOps::mask_fill(grad, mask, zero)
        }
    }
}
