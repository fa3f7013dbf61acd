//! tanh on burn-ndarray in one pass after the exponential, with the same bits as the generic
//! tensor expressions it replaces.
//!
//! [`super::fast_tanh`] is eleven element-wise tensor operations (four of them tracked by the
//! graph), each a pass over the activations with its own buffer; on PPO's 4000 × 64 hidden
//! layers those passes were a third of the actor's update. On `Autodiff<NdArray>` and `NdArray`,
//! the backends privrl trains and acts on by default on a CPU, the same arithmetic runs here as
//! one loop after burn-ndarray's `exp`, and under autodiff as one graph node whose backward is the
//! product the graph formed before (`grad · slope`, the same `float_mul`). Each element goes
//! through the same `f32` operations in the same order as the tensor expression (recip as
//! `1 / v`, neg as `· −1`, and the graph's `(x − x̄) · s` term, which is +0 unless x is ±∞),
//! and Rust does not contract or reassociate them, so every value and every gradient keeps its
//! bits (the tests below compare both paths bit for bit). Other backends,
//! `Autodiff<Autodiff<NdArray>>` (whose slope must stay differentiable) and non-standard layouts
//! take the generic path.

use std::any::Any;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{Tensor, TensorPrimitive};
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::NoCheckpointing;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{unary, Backward, Ops, OpsKind};
use burn_ndarray::{NdArrayTensor, SharedArray};

/// burn-ndarray's ops, with the backend's default type parameters spelled out.
type Ops32 = NdArray<f32>;

/// `value` as a `U` when `T` is `U`, else `value` back.
fn cast<T: 'static, U: 'static>(value: T) -> Result<U, T> {
    let mut slot = Some(value);
    match (&mut slot as &mut dyn Any).downcast_mut::<Option<U>>() {
        Some(cast) => Ok(cast.take().expect("the slot was filled")),
        None => Err(slot.expect("the slot was not taken")),
    }
}

/// The `f32` array of a standard-layout float tensor, or the tensor back.
fn standard_f32(tensor: NdArrayTensor) -> Result<SharedArray<f32>, NdArrayTensor> {
    match tensor {
        NdArrayTensor::F32(storage) => {
            let array = storage.into_shared();
            if array.is_standard_layout() {
                Ok(array)
            } else {
                Err(NdArrayTensor::from(array))
            }
        }
        other => Err(other),
    }
}

/// e^{2x} for a standard-layout `x`, as a buffer of its own (burn-ndarray's `exp`, the same
/// `x · 2` then `exp` as the tensor expression).
fn exp_twice(x: &SharedArray<f32>) -> SharedArray<f32> {
    let doubled = <Ops32 as FloatTensorOps<Ops32>>::float_mul_scalar(
        NdArrayTensor::from(x.clone()),
        2.0.into(),
    );
    match <Ops32 as FloatTensorOps<Ops32>>::float_exp(doubled) {
        NdArrayTensor::F32(storage) => storage.into_shared(),
        _ => unreachable!("exp of an f32 tensor is f32"),
    }
}

/// [`super::fast_tanh`]'s value and slope, `(t + (x − x) · s, s)` with r = 2 / (e^{2x} + 1),
/// t = 1 − r and s = r (2 − r), written as the tensor expression computes them.
// `r * -1.0`, not `-r`: neg is mul_scalar(−1) in burn-ndarray, which keeps a NaN's sign where
// `-r` flips it; `x − x` is the graph's (x − x̄) term, NaN for x = ±∞.
#[allow(clippy::neg_multiply, clippy::eq_op)]
fn value_and_slope(x: &SharedArray<f32>) -> (SharedArray<f32>, SharedArray<f32>) {
    let mut value = exp_twice(x);
    let x = x.as_slice().expect("checked to be in standard layout");
    let exp = value.as_slice_mut().expect("a fresh array is contiguous");
    let n = exp.len();
    let mut slope = Vec::with_capacity(n);
    let (x, spare) = (&x[..n], &mut slope.spare_capacity_mut()[..n]);
    // Indexed over slices of one length, so that the loop vectorises (no reassociation: the
    // lanes do the scalar operations).
    for i in 0..n {
        // ((e + 1).recip() · 2): add_scalar, recip (1 / v), mul_scalar.
        let r = (1.0 / (exp[i] + 1.0)) * 2.0;
        // r.neg() + 1 and r · (r.neg() + 2): neg is mul_scalar(−1).
        let t = r * -1.0 + 1.0;
        let s = r * (r * -1.0 + 2.0);
        // t + (x − x̄) · s.
        exp[i] = t + (x[i] - x[i]) * s;
        spare[i].write(s);
    }
    // SAFETY: the loop wrote all n elements of the spare capacity.
    unsafe { slope.set_len(n) };
    let slope = SharedArray::from_shape_vec(value.raw_dim(), slope)
        .expect("the slope has one element per activation");
    (value, slope)
}

/// The graph node of [`super::fast_tanh`] on `Autodiff<NdArray>`: its backward multiplies the
/// incoming gradient by the slope, as the graph's `(x − x̄) · s` product did.
#[derive(Debug)]
struct FastTanhBackward;

impl Backward<NdArray, 1> for FastTanhBackward {
    type State = NdArrayTensor;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let slope = ops.state;
        unary::<NdArray, _>(ops.parents, ops.node, grads, |grad| {
            <Ops32 as FloatTensorOps<Ops32>>::float_mul(grad, slope)
        });
    }
}

/// [`super::fast_tanh`] on `Autodiff<NdArray>` or `NdArray` in standard layout; any other
/// tensor is handed back.
pub(crate) fn fast_tanh<B: Backend, const D: usize>(
    x: Tensor<B, D>,
) -> Result<Tensor<B, D>, Tensor<B, D>> {
    let x = match cast::<Tensor<B, D>, Tensor<Autodiff<NdArray>, D>>(x) {
        Ok(tracked) => {
            let primitive = tracked.clone().into_primitive().tensor();
            let array = match standard_f32(primitive.primitive.clone()) {
                Ok(array) => array,
                Err(_) => return Err(cast(tracked).expect("B is Autodiff<NdArray>")),
            };
            let (value, slope) = value_and_slope(&array);
            let (value, slope) = (NdArrayTensor::from(value), NdArrayTensor::from(slope));
            let output = match FastTanhBackward
                .prepare::<NoCheckpointing>([primitive.node.clone()])
                .compute_bound()
                .stateful()
            {
                OpsKind::Tracked(prep) => prep.finish(slope, value),
                OpsKind::UnTracked(prep) => prep.finish(value),
            };
            let output =
                Tensor::<Autodiff<NdArray>, D>::from_primitive(TensorPrimitive::Float(output));
            return Ok(cast(output).expect("B is Autodiff<NdArray>"));
        }
        Err(x) => x,
    };
    map_untracked(x, |array| NdArrayTensor::from(value_and_slope(array).0))
}

/// The untracked tanh of [`super::Activation::forward_untracked`], ((e^{2x} + 1)⁻¹ · (−2)) + 1,
/// on `NdArray` in standard layout; any other tensor is handed back.
pub(crate) fn tanh_untracked<B: Backend, const D: usize>(
    x: Tensor<B, D>,
) -> Result<Tensor<B, D>, Tensor<B, D>> {
    map_untracked(x, |array| {
        let mut value = exp_twice(array);
        for e in value.as_slice_mut().expect("a fresh array is contiguous") {
            *e = (1.0 / (*e + 1.0)) * -2.0 + 1.0;
        }
        NdArrayTensor::from(value)
    })
}

/// `back ⊙ (1 − t²)` written as `back · ((t · t) · (−1) + 1)` (the critic's hand-written backward
/// through tanh, [`super::Activation::derivative_from_output`]), on `NdArray` in standard
/// layout; any other pair is handed back.
#[allow(clippy::neg_multiply)] // `· −1` as burn-ndarray's neg computes it (see above)
pub(crate) fn times_tanh_slope<B: Backend, const D: usize>(
    back: Tensor<B, D>,
    t: Tensor<B, D>,
) -> Result<Tensor<B, D>, (Tensor<B, D>, Tensor<B, D>)> {
    let pair = (back, t);
    let (back, t) = cast::<_, (Tensor<NdArray, D>, Tensor<NdArray, D>)>(pair)?;
    if back.dims() != t.dims() {
        return Err(cast((back, t)).expect("B is NdArray"));
    }
    let arrays = (
        standard_f32(back.clone().into_primitive().tensor()),
        standard_f32(t.clone().into_primitive().tensor()),
    );
    let (Ok(back_array), Ok(t_array)) = arrays else {
        return Err(cast((back, t)).expect("B is NdArray"));
    };
    let back_slice = back_array
        .as_slice()
        .expect("checked to be in standard layout");
    let t_slice = t_array
        .as_slice()
        .expect("checked to be in standard layout");
    let n = back_slice.len();
    let mut product = Vec::with_capacity(n);
    let (t_slice, spare) = (&t_slice[..n], &mut product.spare_capacity_mut()[..n]);
    for i in 0..n {
        spare[i].write(back_slice[i] * ((t_slice[i] * t_slice[i]) * -1.0 + 1.0));
    }
    // SAFETY: the loop wrote all n elements of the spare capacity.
    unsafe { product.set_len(n) };
    let product = SharedArray::from_shape_vec(back_array.raw_dim(), product)
        .expect("one element per activation");
    let product =
        Tensor::<NdArray, D>::from_primitive(TensorPrimitive::Float(NdArrayTensor::from(product)));
    Ok(cast(product).expect("B is NdArray"))
}

/// `f` of the array of an untracked `NdArray` tensor in standard layout; any other tensor is
/// handed back.
fn map_untracked<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    f: impl FnOnce(&SharedArray<f32>) -> NdArrayTensor,
) -> Result<Tensor<B, D>, Tensor<B, D>> {
    let x = cast::<Tensor<B, D>, Tensor<NdArray, D>>(x)?;
    match standard_f32(x.clone().into_primitive().tensor()) {
        Ok(array) => {
            let y = Tensor::<NdArray, D>::from_primitive(TensorPrimitive::Float(f(&array)));
            Ok(cast(y).expect("B is NdArray"))
        }
        Err(_) => Err(cast(x).expect("B is NdArray")),
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, NdArray};
    use burn::tensor::{Tensor, TensorData};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::super::Activation;

    type Tracked = Autodiff<NdArray>;

    /// 4000 pre-activations: normal draws at scales from 1e-3 to 30, and the awkward values
    /// (±0, a subnormal, ±88 where `exp` leaves its main path, ±∞, NaN).
    fn inputs() -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut xs: Vec<f32> = (0..3990)
            .map(|i| {
                let scale = [1e-3, 0.1, 1.0, 3.0, 30.0][i % 5];
                scale * (rng.random::<f32>() * 2.0 - 1.0)
            })
            .collect();
        xs.extend([
            0.0,
            -0.0,
            1e-40,
            44.5,
            -44.5,
            88.5,
            -88.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        xs.push(f32::NAN);
        xs
    }

    fn bits<const D: usize, B: burn::tensor::backend::Backend>(t: Tensor<B, D>) -> Vec<u32> {
        t.into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    }

    /// The generic tensor expression of `fast_tanh` (the code the fused path stands in for).
    fn generic_fast_tanh<B: burn::tensor::backend::Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
        let x_const = x.clone().set_require_grad(false);
        let r = ((x_const.clone() * 2.0).exp() + 1.0).recip() * 2.0;
        let t = r.clone().neg() + 1.0;
        let slope = r.clone() * (r.neg() + 2.0);
        t + (x - x_const) * slope
    }

    fn matrix<B: burn::tensor::backend::Backend>(values: &[f32]) -> Tensor<B, 2> {
        Tensor::from_data(
            TensorData::new(values.to_vec(), [values.len() / 40, 40]),
            &Default::default(),
        )
    }

    #[test]
    fn fused_tanh_has_the_bits_of_the_graph_it_replaces() {
        let xs = inputs();
        let weights: Vec<f32> = (0..xs.len()).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect();
        // loss = Σ w ⊙ tanh(x): the gradient reaching x is w ⊙ slope, through each path.
        let run = |fused: bool| {
            let x = matrix::<Tracked>(&xs).require_grad();
            let t = if fused {
                super::super::fast_tanh(x.clone())
            } else {
                generic_fast_tanh(x.clone())
            };
            let loss = (t.clone() * matrix::<Tracked>(&weights)).sum();
            let grads = loss.backward();
            (bits(t), bits(x.grad(&grads).unwrap()))
        };
        let (fused_value, fused_grad) = run(true);
        let (value, grad) = run(false);
        assert_eq!(fused_value, value, "values");
        assert_eq!(fused_grad, grad, "gradients");
        // The value is tanh to a few ulps, NaN for ±∞ as the graph's (x − x̄) term makes it.
        let values: Vec<f32> = fused_value.iter().map(|b| f32::from_bits(*b)).collect();
        for (x, t) in xs.iter().zip(&values) {
            if x.is_finite() {
                assert!(
                    (t - x.tanh()).abs() <= 4.0 * f32::EPSILON,
                    "tanh({x}) = {t}"
                );
            } else {
                assert!(t.is_nan());
            }
        }
    }

    #[test]
    fn fused_untracked_tanh_and_its_backward_have_the_bits_of_the_tensor_expressions() {
        let xs = inputs();
        let x = matrix::<NdArray>(&xs);
        assert_eq!(
            bits(super::super::fast_tanh(x.clone())),
            bits(generic_fast_tanh(x.clone()))
        );
        let t = Activation::Tanh.forward_untracked(x.clone());
        let expected_t = ((x.clone() * 2.0).exp() + 1.0).recip() * -2.0 + 1.0;
        assert_eq!(bits(t.clone()), bits(expected_t));
        let back = matrix::<NdArray>(&xs.iter().map(|v| v * 0.3 - 1.0).collect::<Vec<_>>());
        let product = Activation::Tanh.backward_from_output(back.clone(), t.clone());
        let expected = back * (t.clone() * t * -1.0 + 1.0);
        assert_eq!(bits(product), bits(expected));
    }

    #[test]
    fn a_transposed_tensor_takes_the_generic_path_with_the_same_values() {
        let xs = inputs();
        let x = matrix::<NdArray>(&xs).transpose();
        assert_eq!(
            bits(super::super::fast_tanh(x.clone())),
            bits(generic_fast_tanh(x.clone()))
        );
        let tracked = matrix::<Tracked>(&xs).transpose().require_grad();
        assert_eq!(
            bits(super::super::fast_tanh(tracked.clone())),
            bits(generic_fast_tanh(tracked))
        );
    }
}
