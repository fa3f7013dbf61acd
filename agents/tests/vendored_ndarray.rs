//! The vendored burn-ndarray's direct paths claim the exact values of the code they bypass
//! (`vendor/burn-ndarray/PRIVRL.md`): seeded runs must not change. Each is compared bit for bit
//! with the original path, reached through the same data in a form the direct path hands back:
//! `sum_dim` of a standard-layout matrix against the same data as a rank-3 tensor
//! `[1, rows, columns]` (ndarray's `sum_axis`, both of its branches); the broadcast `mul` and
//! `relu_backward` against a transposed copy of the operands (a layout they do not take),
//! transposed back.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{activation, DType, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Values that make the order of additions visible: magnitudes over 30 binades (so that a
/// different order rounds differently), signed zeros, and now and then an infinity.
fn awkward_values(len: usize, rng: &mut ChaCha8Rng) -> Vec<f32> {
    (0..len)
        .map(|_| match rng.random_range(0..40) {
            0 => -0.0,
            1 => 0.0,
            2 if rng.random_bool(0.1) => f32::INFINITY,
            _ => {
                let magnitude = 2f32.powi(rng.random_range(-15..15));
                let sign = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
                sign * magnitude * rng.random::<f32>()
            }
        })
        .collect()
}

fn bits(tensor: Tensor<NdArray, 1>) -> Vec<u32> {
    tensor
        .into_data()
        .into_vec::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

fn matrix_bits(tensor: Tensor<NdArray, 2>) -> Vec<u32> {
    bits(tensor.flatten(0, 1))
}

#[test]
fn matrix_sum_dim_has_the_bits_of_ndarray_sum_axis() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // Widths around the fold's eight lanes and its tail, and the shapes the agents use.
    let shapes = [
        (1, 1),
        (1, 9),
        (5, 1),
        (3, 7),
        (8, 8),
        (13, 17),
        (128, 128),
        (128, 2),
        (64, 257),
    ];
    for (rows, columns) in shapes {
        for trial in 0..20 {
            let values = awkward_values(rows * columns, &mut rng);
            let matrix = Tensor::<NdArray, 2>::from_data(
                TensorData::new(values.clone(), [rows, columns]),
                &device,
            );
            let cube = Tensor::<NdArray, 3>::from_data(
                TensorData::new(values, [1, rows, columns]),
                &device,
            );
            for dim in 0..2 {
                let fast = matrix_bits(matrix.clone().sum_dim(dim));
                let reference = bits(cube.clone().sum_dim(dim + 1).flatten(0, 2));
                assert_eq!(
                    fast, reference,
                    "sum over dim {dim} of a [{rows}, {columns}] matrix, trial {trial}"
                );
            }
        }
    }
}

#[test]
fn matrix_sum_dim_matches_a_hand_worked_case() {
    // Over the rows: (0 + 1) + 2 = 3 and (0 + −0) + −0 = +0 (ndarray starts from +0).
    // Over a row of nine: the eight-way fold pairs lane k with lane k + 4, then adds the tail.
    let device = Default::default();
    let matrix = Tensor::<NdArray, 2>::from_data(
        TensorData::new(vec![1.0f32, -0.0, 2.0, -0.0], [2, 2]),
        &device,
    );
    assert_eq!(
        matrix_bits(matrix.sum_dim(0)),
        vec![3f32.to_bits(), 0f32.to_bits()]
    );
    // 1e8 and −1e8 cancel only if added to each other before the small terms join them.
    let row = vec![1e8f32, 1.0, 1.0, 1.0, -1e8, 1.0, 1.0, 1.0, 0.5];
    let matrix = Tensor::<NdArray, 2>::from_data(TensorData::new(row, [1, 9]), &device);
    // ((((0 + (1e8 + −1e8)) + (1 + 1)) + (1 + 1)) + (1 + 1)) + 0.5 = 6.5
    assert_eq!(matrix_bits(matrix.sum_dim(1)), vec![6.5f32.to_bits()]);
}

#[test]
fn zeros_are_positive_zeros_of_the_dtype() {
    let device = Default::default();
    let zeros = Tensor::<NdArray, 3>::zeros([2, 3, 5], &device);
    assert_eq!(zeros.dims(), [2, 3, 5]);
    let values = zeros.into_data().into_vec::<f32>().unwrap();
    assert_eq!(values.len(), 30);
    assert!(values.iter().all(|x| x.to_bits() == 0));
    let wide = Tensor::<NdArray, 2>::zeros([4, 4], (&device, DType::F64));
    assert_eq!(wide.dtype(), DType::F64);
    let values = wide.into_data().into_vec::<f64>().unwrap();
    assert_eq!(values.len(), 16);
    assert!(values.iter().all(|x| x.to_bits() == 0));
}

/// `tensor` with the same values in a transposed (column-major) layout: `t.transpose()` is a
/// view, so a matrix built from the transposed values and transposed back reads as `tensor`
/// while its strides are not the standard ones.
fn column_major(tensor: &Tensor<NdArray, 2>) -> Tensor<NdArray, 2> {
    let [rows, columns] = tensor.dims();
    let transposed: Vec<f32> = tensor
        .clone()
        .transpose()
        .flatten::<1>(0, 1)
        .into_data()
        .into_vec::<f32>()
        .unwrap();
    Tensor::<NdArray, 2>::from_data(
        TensorData::new(transposed, [columns, rows]),
        &tensor.device(),
    )
    .transpose()
}

#[test]
fn broadcast_mul_has_the_bits_of_the_general_broadcast() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for (rows, columns) in [(1, 1), (1, 5), (6, 1), (13, 17), (128, 128)] {
        let values = awkward_values(rows * columns, &mut rng);
        let x = Tensor::<NdArray, 2>::from_data(TensorData::new(values, [rows, columns]), &device);
        let mut per_row = awkward_values(rows, &mut rng);
        per_row[0] = f32::NAN;
        let per_row = Tensor::<NdArray, 2>::from_data(TensorData::new(per_row, [rows, 1]), &device);
        let per_column = Tensor::<NdArray, 2>::from_data(
            TensorData::new(awkward_values(columns, &mut rng), [1, columns]),
            &device,
        );
        for scale in [per_row, per_column] {
            let reference = matrix_bits(column_major(&x) * scale.clone());
            // `x` shared (`x` itself is still alive): into a new buffer.
            assert_eq!(matrix_bits(x.clone() * scale.clone()), reference);
            // A copy owned alone: in place.
            let owned = Tensor::<NdArray, 2>::from_data(x.to_data(), &device);
            assert_eq!(
                matrix_bits(owned * scale.clone()),
                reference,
                "[{rows}, {columns}] times {:?}",
                scale.dims()
            );
        }
    }
}

#[test]
fn relu_backward_has_the_bits_of_mask_and_fill() {
    // Through autodiff: the gradient of Σ relu(x) · w is w where relu's output is > 0, else +0.
    type Ad = Autodiff<NdArray>;
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (rows, columns) = (9, 21);
    let mut x = awkward_values(rows * columns, &mut rng);
    x[0] = f32::NAN;
    x[1] = -0.0;
    x[2] = 0.0;
    let w = awkward_values(rows * columns, &mut rng);
    let weights =
        Tensor::<NdArray, 2>::from_data(TensorData::new(w.clone(), [rows, columns]), &device);
    let input =
        Tensor::<NdArray, 2>::from_data(TensorData::new(x.clone(), [rows, columns]), &device);
    let gradient = |input: Tensor<NdArray, 2>| {
        let input = Tensor::<Ad, 2>::from_inner(input).require_grad();
        let loss =
            (activation::relu(input.clone()) * Tensor::<Ad, 2>::from_inner(weights.clone())).sum();
        let grads = loss.backward();
        matrix_bits(input.grad(&grads).unwrap())
    };
    let direct = gradient(input.clone());
    let general = gradient(column_major(&input));
    assert_eq!(direct, general);
    // Hand-worked: burn-ndarray's relu keeps a NaN (NaN < 0 is false), which is not ≤ 0, so
    // the NaN keeps its weight; ±0 and negatives give +0.
    let expected: Vec<u32> = x
        .iter()
        .zip(&w)
        .map(|(&x, &w)| {
            let relu = if x < 0.0 { 0.0 } else { x };
            if relu <= 0.0 {
                0
            } else {
                w.to_bits()
            }
        })
        .collect();
    assert_eq!(direct, expected);
}
