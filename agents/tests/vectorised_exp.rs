//! The vendored burn-ndarray computes `exp` of `f32` arrays with a vectorised kernel that claims
//! the bits of `f32::exp` (glibc's `expf`) for every input (`vendor/burn-ndarray/PRIVRL.md`):
//! seeded runs must not change when it is used. This checks the claim on all 2³² inputs,
//! through both of its paths (an array the tensor owns alone, computed in place, and an array
//! still shared, computed into a new buffer). Where the kernel is not usable (another CPU or
//! libm) burn-ndarray falls back to `f32::exp` and the test checks that instead.

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};

/// Inputs per tensor: 2²² (16 MiB), 1,024 tensors in all.
const CHUNK: u64 = 1 << 22;

/// Compares `exp` on the inputs whose bit patterns are `first..first + CHUNK`; returns the
/// first input whose result differs from `f32::exp`, if any.
fn first_mismatch(first: u64, shared: bool) -> Option<(f32, u32, u32)> {
    let inputs: Vec<f32> = (first..first + CHUNK)
        .map(|bits| f32::from_bits(bits as u32))
        .collect();
    let device = Default::default();
    let tensor =
        Tensor::<NdArray, 1>::from_data(TensorData::new(inputs, [CHUNK as usize]), &device);
    // A clone keeps the buffer shared, so that `exp` cannot write in place.
    let keep = shared.then(|| tensor.clone());
    let outputs = tensor.exp().into_data().into_vec::<f32>().unwrap();
    drop(keep);
    outputs.iter().enumerate().find_map(|(i, y)| {
        let x = f32::from_bits((first + i as u64) as u32);
        let expected = x.exp().to_bits();
        (y.to_bits() != expected).then_some((x, y.to_bits(), expected))
    })
}

#[test]
fn vectorised_exp_has_the_bits_of_libm() {
    let chunks = (1u64 << 32) / CHUNK;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    // Plain tensors, no autodiff graph: safe to run on several threads.
    let mismatches: Vec<(f32, u32, u32)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t..chunks)
                        .step_by(threads as usize)
                        .filter_map(|c| first_mismatch(c * CHUNK, c % 2 == 1))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(
        mismatches.is_empty(),
        "{} chunks differ from f32::exp; first: exp({:e}) = {:#010x}, f32::exp gives {:#010x}",
        mismatches.len(),
        mismatches[0].0,
        mismatches[0].1,
        mismatches[0].2
    );
}
