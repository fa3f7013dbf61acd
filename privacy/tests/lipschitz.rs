//! Lipschitz upper bounds of MLP policies (the L of Theorem 1, paper 000).

use privrl_privacy::{
    mlp_lipschitz_bound, spectral_norm, Activation, Matrix, OutputMap, PrivacyError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_matrix(rows: usize, cols: usize, rng: &mut impl Rng) -> Matrix {
    let scale = 1.0 / (cols as f64).sqrt();
    Matrix::new(
        rows,
        cols,
        (0..rows * cols)
            .map(|_| scale * (2.0 * rng.random::<f64>() - 1.0) * 1.7)
            .collect(),
    )
    .unwrap()
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// The MLP the bound is about, evaluated independently: tanh/relu hidden layers with biases.
fn forward(
    layers: &[Matrix],
    biases: &[Vec<f64>],
    hidden: Activation,
    output: OutputMap,
    x: &[f64],
) -> Vec<f64> {
    let mut h = x.to_vec();
    for (l, (w, b)) in layers.iter().zip(biases).enumerate() {
        h = w.apply(&h).iter().zip(b).map(|(a, c)| a + c).collect();
        if l + 1 < layers.len() {
            for v in h.iter_mut() {
                *v = match hidden {
                    Activation::Tanh => v.tanh(),
                    Activation::Relu => v.max(0.0),
                    Activation::Sigmoid => 1.0 / (1.0 + (-*v).exp()),
                    Activation::Identity => *v,
                };
            }
        }
    }
    match output {
        OutputMap::Softmax => softmax(&h),
        OutputMap::Identity => h,
    }
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn spectral_norm_of_known_matrices() {
    // Rank one u vᵀ: σ = ‖u‖‖v‖ = √(1+4+4)·√(9+16) = 3·5 = 15; rank 1 makes the Schatten bound exact.
    let u = [1.0, 2.0, -2.0];
    let v = [3.0, 4.0];
    let w = Matrix::new(
        3,
        2,
        u.iter()
            .flat_map(|a| v.iter().map(move |b| a * b))
            .collect(),
    )
    .unwrap();
    let s = spectral_norm(&w);
    assert!(
        (s.power_iteration - 15.0).abs() < 1e-9 && (s.upper_bound - 15.0).abs() < 1e-7,
        "{s:?}"
    );
    // diag(3, 2, 1) inside a 3×4: σ = 3; the bound is (3^1024 + 2^1024 + 1)^(1/1024) = 3(1 + 1e-180).
    let mut d = vec![0.0; 12];
    d[0] = 3.0;
    d[5] = -2.0;
    d[10] = 1.0;
    let s = spectral_norm(&Matrix::new(3, 4, d).unwrap());
    assert!(
        (s.upper_bound - 3.0).abs() < 1e-7 && s.upper_bound >= 3.0,
        "{s:?}"
    );
    // Zero and huge entries.
    assert_eq!(
        spectral_norm(&Matrix::new(2, 2, vec![0.0; 4]).unwrap()).upper_bound,
        0.0
    );
    let s = spectral_norm(&Matrix::new(1, 2, vec![3e200, 4e200]).unwrap());
    assert!((s.upper_bound / 5e200 - 1.0).abs() < 1e-7, "{s:?}");
}

#[test]
fn upper_bound_is_above_power_iteration_and_tight() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for &(r, c) in &[(5, 3), (16, 16), (64, 20), (32, 100)] {
        let w = random_matrix(r, c, &mut rng);
        let s = spectral_norm(&w);
        // ‖W x‖ ≤ upper for random unit x.
        for _ in 0..200 {
            let x: Vec<f64> = (0..c).map(|_| rng.random::<f64>() - 0.5).collect();
            let n = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            let y = w.apply(&x);
            assert!(dist(&y, &vec![0.0; r]) / n <= s.upper_bound);
        }
        let rank = r.min(c) as f64;
        assert!(s.upper_bound >= s.power_iteration);
        assert!(
            s.upper_bound <= s.power_iteration * rank.powf(1.0 / 1024.0) * (1.0 + 1e-8),
            "{s:?}"
        );
        assert!(s.upper_bound <= w.frobenius_norm() * (1.0 + 1e-8));
    }
}

#[test]
fn mlp_bound_dominates_observed_ratios() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for (hidden, output) in [
        (Activation::Tanh, OutputMap::Softmax),
        (Activation::Relu, OutputMap::Identity),
    ] {
        let dims = [6, 32, 32, 4];
        let layers: Vec<Matrix> = dims
            .windows(2)
            .map(|d| random_matrix(d[1], d[0], &mut rng))
            .collect();
        let biases: Vec<Vec<f64>> = dims[1..]
            .iter()
            .map(|&d| (0..d).map(|_| rng.random::<f64>() - 0.5).collect())
            .collect();
        let bound = mlp_lipschitz_bound(&layers, hidden, output).unwrap();
        assert!(bound.upper_bound >= bound.power_iteration_estimate);
        let mut worst: f64 = 0.0;
        for i in 0..4000 {
            let x: Vec<f64> = (0..6).map(|_| 4.0 * (rng.random::<f64>() - 0.5)).collect();
            // Half the pairs are close (local Jacobian), half far apart.
            let step = if i % 2 == 0 { 1e-4 } else { 2.0 };
            let y: Vec<f64> = x
                .iter()
                .map(|v| v + step * (rng.random::<f64>() - 0.5))
                .collect();
            let fx = forward(&layers, &biases, hidden, output, &x);
            let fy = forward(&layers, &biases, hidden, output, &y);
            worst = worst.max(dist(&fx, &fy) / dist(&x, &y));
        }
        assert!(
            worst <= bound.upper_bound,
            "{hidden:?}: observed {worst} > bound {}",
            bound.upper_bound
        );
        assert!(worst > 0.0);
    }
}

#[test]
fn softmax_constant_is_one_half_and_attained() {
    // Two classes at equal logits, moved along (1, −1): ratio → σ'(0)·√2·√2 = 1/2.
    let a = softmax(&[1e-6, -1e-6, -50.0]);
    let b = softmax(&[-1e-6, 1e-6, -50.0]);
    let ratio = dist(&a, &b) / dist(&[1e-6, -1e-6, -50.0], &[-1e-6, 1e-6, -50.0]);
    assert!((ratio - 0.5).abs() < 1e-6, "{ratio}");
    assert_eq!(OutputMap::Softmax.lipschitz(), 0.5);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..20_000 {
        let x: Vec<f64> = (0..5).map(|_| 6.0 * (rng.random::<f64>() - 0.5)).collect();
        let y: Vec<f64> = (0..5).map(|_| 6.0 * (rng.random::<f64>() - 0.5)).collect();
        assert!(dist(&softmax(&x), &softmax(&y)) <= 0.5 * dist(&x, &y) + 1e-15);
    }
}

#[test]
fn shapes_are_checked() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let a = random_matrix(8, 4, &mut rng);
    let b = random_matrix(3, 7, &mut rng);
    assert!(matches!(
        mlp_lipschitz_bound(&[a.clone(), b], Activation::Tanh, OutputMap::Softmax),
        Err(PrivacyError::DimensionMismatch {
            expected: 8,
            found: 7,
            ..
        })
    ));
    // Burn's [d_in, d_out] layout chains after a transpose.
    let burn_layout = random_matrix(8, 3, &mut rng);
    assert!(mlp_lipschitz_bound(
        &[a, burn_layout.transposed()],
        Activation::Tanh,
        OutputMap::Softmax
    )
    .is_ok());
    assert!(mlp_lipschitz_bound(&[], Activation::Tanh, OutputMap::Softmax).is_err());
    assert!(Matrix::new(2, 2, vec![1.0; 3]).is_err());
    assert!(Matrix::new(0, 2, vec![]).is_err());
    assert!(Matrix::new(1, 2, vec![1.0, f64::NAN]).is_err());
    assert!(Matrix::from_f32(1, 2, &[1.0, 2.0]).is_ok());
}
