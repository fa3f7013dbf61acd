//! Tensor helpers, in one place: tensors created in the backend's own float type, host data
//! to tensors and back.
//!
//! # The backend's own float type
//!
//! Burn 0.21 resolves the dtype of a tensor created without one (`from_data`, `zeros`, `ones`,
//! a bool or int tensor's `float()`) from a per-device default, and the first backend to touch
//! a device type fixes that default for the whole process. `NdArray<f32>` and `NdArray<f64>`
//! share `NdArrayDevice`, so once anything in the process has used `NdArray<f32>`, an
//! `NdArray<f64>` model silently computes in f32 (and the other way round), and which one
//! wins depends on which thread ran first. Finite-difference checks, f64 attacks and any user
//! who mixes precisions would see rounding they did not ask for. privrl therefore creates
//! every float tensor through [`float_options`] or [`float_of_mask`], which name `B::FloatElem`
//! explicitly.

use burn::tensor::backend::Backend;
use burn::tensor::{
    Bool, Element, FloatDType, IntoPadding, Tensor, TensorCreationOptions, TensorData,
};

/// The float dtype of backend `B` (`B::FloatElem`), not the device's process-wide default.
pub fn float_dtype<B: Backend>() -> FloatDType {
    <B::FloatElem as Element>::dtype().into()
}

/// Creation options on `device` in `B`'s own float dtype, for `Tensor::from_data`, `zeros`,
/// `ones` and the like.
pub fn float_options<B: Backend>(device: &B::Device) -> TensorCreationOptions<B> {
    TensorCreationOptions::new(device.clone()).with_dtype(<B::FloatElem as Element>::dtype())
}

/// A mask as 0/1 floats of `B`'s own dtype (where `.float()` would take the device's default).
pub fn float_of_mask<B: Backend, const D: usize>(mask: Tensor<B, D, Bool>) -> Tensor<B, D> {
    mask.cast(float_dtype::<B>())
}

/// `x` padded with zeros of `B`'s own dtype: `(before, after)` pairs for the last dimensions,
/// as in Burn's `Tensor::pad`, whose constant fill takes the device's default dtype instead.
/// The same two ops as Burn's (a filled tensor, then `slice_assign`), so the values and the
/// gradients are Burn's.
pub fn zero_pad<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    padding: impl IntoPadding<D>,
) -> Tensor<B, D> {
    let pairs = padding.into_padding();
    let mut dims = x.dims();
    for (dim, (before, after)) in dims.iter_mut().zip(pairs) {
        *dim += before + after;
    }
    let ranges: [std::ops::Range<usize>; D] =
        std::array::from_fn(|i| pairs[i].0..dims[i] - pairs[i].1);
    Tensor::zeros(dims, float_options::<B>(&x.device())).slice_assign(ranges, x)
}

/// One-hot rows `[actions.len(), num_actions]` for the given actions.
pub fn one_hot<B: Backend>(
    actions: &[usize],
    num_actions: usize,
    device: &B::Device,
) -> Tensor<B, 2> {
    let mut values = vec![0.0f32; actions.len() * num_actions];
    for (row, &a) in actions.iter().enumerate() {
        values[row * num_actions + a] = 1.0;
    }
    Tensor::from_data(
        TensorData::new(values, [actions.len(), num_actions]).convert::<B::FloatElem>(),
        float_options::<B>(device),
    )
}

/// Rows of a host matrix as a `[rows, cols]` tensor.
pub fn matrix<B: Backend>(values: &[f32], cols: usize, device: &B::Device) -> Tensor<B, 2> {
    let rows = values.len().checked_div(cols).unwrap_or(0);
    Tensor::from_data(
        TensorData::new(values.to_vec(), [rows, cols]).convert::<B::FloatElem>(),
        float_options::<B>(device),
    )
}

/// A host vector as a `[len]` tensor.
pub fn vector<B: Backend>(values: &[f32], device: &B::Device) -> Tensor<B, 1> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [values.len()]).convert::<B::FloatElem>(),
        float_options::<B>(device),
    )
}

/// Copies a tensor's values to the host.
pub fn to_host<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .expect("float tensor data")
}
