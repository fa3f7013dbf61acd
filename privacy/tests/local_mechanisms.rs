//! Local-DP gradient mechanisms of paper 003: Laplace (eq. 19–21) and projected random sign
//! (Algorithm 3, eq. 4, 5, 23, 24).

use privrl_privacy::{
    clip_l1, default_reduced_dimension, BitFlip, LaplaceConfig, Mechanism, PrivacyError,
    ProjectionMatrix, PrsConfig,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn l1_clipping_eq19() {
    let mut out = [0.0; 3];
    clip_l1(&[3.0, -1.0, 0.0], 2.0, &mut out); // ‖g‖₁ = 4 > 2: halve.
    assert_eq!(out, [1.5, -0.5, 0.0]);
    clip_l1(&[0.5, -0.5, 0.25], 2.0, &mut out); // inside: unchanged.
    assert_eq!(out, [0.5, -0.5, 0.25]);
}

/// Histogram of 1-d Laplace releases of `g`, bins of width 0.25 on [−3, 3].
fn histogram(
    mech: &impl Mechanism<Input = [f32], Output = Vec<f32>>,
    g: f32,
    n: usize,
    seed: u64,
) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut h = vec![0; 24];
    for _ in 0..n {
        let y = f64::from(mech.release(&[g], &mut rng).unwrap()[0]);
        if (-3.0..3.0).contains(&y) {
            h[((y + 3.0) / 0.25) as usize] += 1;
        }
    }
    h
}

#[test]
fn laplace_output_ratio_is_e_to_epsilon() {
    // d = 1, C = 1, ε = 1: g = +10 and −10 clip to ±C/2 = ±0.5 (L1 distance C). Outside
    // [−0.5, 0.5] the density ratio of eq. 21 is exactly e^{ε·C/C} = e; inside it is below e.
    let mech = LaplaceConfig {
        epsilon: 1.0,
        clip: 1.0,
        rounds: 1,
        dimension: 1,
    }
    .build()
    .unwrap();
    assert_eq!(mech.cost().epsilon, 1.0);
    let n = 400_000;
    let a = histogram(&mech, 10.0, n, 1);
    let b = histogram(&mech, -10.0, n, 2);
    let e = 1f64.exp();
    for (i, (&ca, &cb)) in a.iter().zip(&b).enumerate() {
        let (lo, hi) = (ca.min(cb) as f64, ca.max(cb) as f64);
        if lo < 2000.0 {
            continue;
        }
        let ratio = hi / lo;
        let tol = 4.0 * (1.0 / lo + 1.0 / hi).sqrt();
        assert!(ratio <= e * (1.0 + tol), "bin {i}: {ratio}");
        let left = -3.0 + 0.25 * i as f64;
        if left >= 0.5 || left + 0.25 <= -0.5 {
            assert!((ratio - e).abs() <= e * tol, "tail bin {i}: {ratio} vs e");
        }
    }
    // Multi-round split: T = 4 spends ε/4 per submission and uses scale C·T/ε.
    let four = LaplaceConfig {
        epsilon: 1.0,
        clip: 0.01,
        rounds: 4,
        dimension: 10,
    }
    .build()
    .unwrap();
    assert_eq!(four.cost().epsilon, 0.25);
    assert!((four.scale() - 0.04).abs() < 1e-15);
}

#[test]
fn laplace_validation() {
    let ok = LaplaceConfig {
        epsilon: 1.0,
        clip: 0.01,
        rounds: 1,
        dimension: 3,
    };
    for (c, name) in [
        (LaplaceConfig { epsilon: 0.0, ..ok }, "epsilon"),
        (
            LaplaceConfig {
                epsilon: f64::NAN,
                ..ok
            },
            "epsilon",
        ),
        (LaplaceConfig { clip: -1.0, ..ok }, "clip"),
    ] {
        assert!(matches!(c.build(), Err(PrivacyError::OutOfRange { name: n, .. }) if n == name));
    }
    assert!(matches!(
        LaplaceConfig { rounds: 0, ..ok }.build(),
        Err(PrivacyError::Empty { name: "rounds" })
    ));
    let mech = ok.build().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    assert!(matches!(
        mech.release(&[1.0, 2.0], &mut rng),
        Err(PrivacyError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        mech.release(&[1.0, f32::NAN, 0.0], &mut rng),
        Err(PrivacyError::NonFinite { index: 1, .. })
    ));
}

#[test]
fn bit_flip_probabilities_eq4() {
    // P(+1 | 1) = e^ε/(e^ε + 1), P(+1 | −1) = 1/(e^ε + 1): ratio e^ε, also for −1 outputs.
    let eps = 1.5f64;
    let flip = BitFlip::new(eps).unwrap();
    let e = eps.exp();
    assert!((flip.probability_plus(1.0) - e / (e + 1.0)).abs() < 1e-15);
    assert!((flip.probability_plus(-1.0) - 1.0 / (e + 1.0)).abs() < 1e-15);
    assert!((flip.probability_plus(0.0) - 0.5).abs() < 1e-15);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 200_000;
    let plus = |x: f64, rng: &mut ChaCha8Rng| {
        (0..n).filter(|_| flip.flip(x, rng) > 0.0).count() as f64 / n as f64
    };
    let (p_hi, p_lo) = (plus(1.0, &mut rng), plus(-1.0, &mut rng));
    assert!((p_hi / p_lo - e).abs() < 0.05 * e, "{}", p_hi / p_lo);
    assert!(((1.0 - p_lo) / (1.0 - p_hi) - e).abs() < 0.05 * e);
    // E[flip(x)] = x·tanh(ε/2).
    let mean: f64 = (0..n).map(|_| flip.flip(0.4, &mut rng)).sum::<f64>() / n as f64;
    assert!((mean - 0.4 * (eps / 2.0).tanh()).abs() < 0.01, "{mean}");
}

#[test]
fn reduced_dimension_rule() {
    // d̂ = max(1, min(d, ⌊ε/2.5⌋)).
    assert_eq!(default_reduced_dimension(1.0, 112), 1);
    assert_eq!(default_reduced_dimension(5.0, 112), 2);
    assert_eq!(default_reduced_dimension(10.0, 112), 4);
    assert_eq!(default_reduced_dimension(1000.0, 3), 3);
    let prs = PrsConfig {
        epsilon: 10.0,
        clip: 1.0,
        rounds: 2,
        dimension: 112,
        reduced_dimension: None,
        unbiased: false,
    }
    .build()
    .unwrap();
    // Two rounds: ε = 5 per submission, d̂ = 2, ε/d̂ = 2.5 per coordinate.
    assert_eq!(prs.reduced_dimension(), 2);
    assert!((prs.bit_flip().epsilon() - 2.5).abs() < 1e-15);
    assert_eq!(prs.cost().epsilon, 5.0);
}

#[test]
fn prs_pattern_ratios_bounded_by_e_to_epsilon() {
    // ε = 5, d̂ = 2, ε/d̂ = 2.5: for projections clipped to (C, C) and (−C, −C), every output
    // pattern of ũ has probability ratio ≤ e^5, and (+,+) attains it.
    let prs = PrsConfig {
        epsilon: 5.0,
        clip: 1.0,
        rounds: 1,
        dimension: 8,
        reduced_dimension: None,
        unbiased: false,
    }
    .build()
    .unwrap();
    assert_eq!(prs.reduced_dimension(), 2);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let n = 1_000_000;
    let count = |u: [f64; 2], rng: &mut ChaCha8Rng| {
        let mut c = [0usize; 4];
        for _ in 0..n {
            let t = prs.randomize_projection(&u, rng);
            assert!(t.iter().all(|&x| x == 1.0 || x == -1.0));
            c[usize::from(t[0] > 0.0) * 2 + usize::from(t[1] > 0.0)] += 1;
        }
        c
    };
    let a = count([3.0, 7.0], &mut rng); // clips to (C, C)
    let b = count([-1.0, -2.0], &mut rng); // clips to (−C, −C)
    let e5 = 5f64.exp();
    for p in 0..4 {
        let ratio = a[p].max(b[p]) as f64 / a[p].min(b[p]) as f64;
        assert!(ratio <= e5 * 1.1, "pattern {p}: {ratio}");
    }
    let r = a[3] as f64 / b[3] as f64;
    assert!((r - e5).abs() < 0.1 * e5, "(+,+): {r} vs {e5}");
}

#[test]
fn prs_release_is_back_projected_flip() {
    let prs = PrsConfig {
        epsilon: 10.0,
        clip: 0.5,
        rounds: 1,
        dimension: 6,
        reduced_dimension: None,
        unbiased: false,
    }
    .build()
    .unwrap();
    let m = ProjectionMatrix::achlioptas(prs.reduced_dimension(), 6, 42).unwrap();
    // Entries of eq. 5 only.
    let s3 = 3f64.sqrt();
    for i in 0..m.rows() {
        for j in 0..m.cols() {
            let v = m.entry(i, j);
            assert!(v == 0.0 || (v.abs() - s3).abs() < 1e-15);
        }
    }
    let g = [0.1f32, -0.2, 0.3, 0.0, 0.5, -0.1];
    let out = prs
        .release_with_projection(&g, &m, &mut ChaCha8Rng::seed_from_u64(9))
        .unwrap();
    let u = m.project(&g);
    let flipped = prs.randomize_projection(&u, &mut ChaCha8Rng::seed_from_u64(9));
    let want = m.back_project(&flipped);
    for (a, b) in out.iter().zip(&want) {
        assert!((f64::from(*a) - b).abs() < 1e-6);
    }
    // Achlioptas entry frequencies: 1/6, 2/3, 1/6.
    let big = ProjectionMatrix::achlioptas(100, 1000, 1).unwrap();
    let zeros = (0..100)
        .flat_map(|i| (0..1000).map(move |j| (i, j)))
        .filter(|&(i, j)| big.entry(i, j) == 0.0)
        .count();
    assert!((zeros as f64 / 1e5 - 2.0 / 3.0).abs() < 0.01);
}

#[test]
fn prs_unbiased_variant_estimates_the_gradient() {
    // With no clipping at work, E[(e^{ε'}+1)/((e^{ε'}−1) d̂) · Mᵀũ] = g over M and the flips.
    let g = [0.05f32, -0.1, 0.02, 0.08];
    let prs = PrsConfig {
        epsilon: 10.0,
        clip: 1.0,
        rounds: 1,
        dimension: 4,
        reduced_dimension: None,
        unbiased: true,
    }
    .build()
    .unwrap();
    assert_eq!(prs.reduced_dimension(), 4);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let n = 200_000;
    let mut mean = [0.0f64; 4];
    for _ in 0..n {
        let out = prs.release(&g, &mut rng).unwrap();
        for (m, o) in mean.iter_mut().zip(&out) {
            *m += f64::from(*o) / n as f64;
        }
    }
    for (m, &x) in mean.iter().zip(&g) {
        assert!((m - f64::from(x)).abs() < 0.01, "{mean:?}");
    }
    // The paper's biased report shrinks by tanh(ε'/2)·d̂ = tanh(1.25)·4 ≈ 3.39 in expectation.
    let biased = PrsConfig {
        unbiased: false,
        ..PrsConfig {
            epsilon: 10.0,
            clip: 1.0,
            rounds: 1,
            dimension: 4,
            reduced_dimension: None,
            unbiased: true,
        }
    }
    .build()
    .unwrap();
    let mut first = 0.0;
    for _ in 0..n {
        first += f64::from(biased.release(&g, &mut rng).unwrap()[0]) / n as f64;
    }
    let factor = (1.25f64).tanh() * 4.0;
    assert!(
        (first - factor * 0.05).abs() < 0.035,
        "{first} vs {}",
        factor * 0.05
    );
}

#[test]
fn prs_validation() {
    let ok = PrsConfig {
        epsilon: 2.0,
        clip: 1.0,
        rounds: 1,
        dimension: 5,
        reduced_dimension: Some(5),
        unbiased: true,
    };
    assert!(ok.build().is_ok());
    assert!(PrsConfig {
        reduced_dimension: Some(6),
        ..ok
    }
    .build()
    .is_err());
    assert!(PrsConfig {
        reduced_dimension: Some(0),
        ..ok
    }
    .build()
    .is_err());
    assert!(PrsConfig { clip: 0.0, ..ok }.build().is_err());
    assert!(PrsConfig {
        epsilon: -2.0,
        ..ok
    }
    .build()
    .is_err());
    assert!(PrsConfig { dimension: 0, ..ok }.build().is_err());
    let prs = ok.build().unwrap();
    let wrong = ProjectionMatrix::achlioptas(2, 5, 0).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    assert!(prs
        .release_with_projection(&[0.0; 5], &wrong, &mut rng)
        .is_err());
    assert!(prs.release(&[0.0; 4], &mut rng).is_err());
    assert!(BitFlip::new(0.0).is_err());
}

/// The grid Laplace mechanism (floating-point safe): rounding keeps two clipped gradients
/// within the stated Δ grid units, checked on adversarial and random pairs; every grid output
/// is reachable from both with a log-likelihood ratio of at most its ε (≤ ε/T); its noise is
/// within 0.2 % of the continuous mechanism's.
#[test]
fn grid_laplace_is_exact_and_as_noisy_as_the_continuous_one() {
    use privrl_privacy::{DiscreteLaplace, LaplaceConfig, Mechanism};
    use rand::{Rng, SeedableRng};
    let d = 4;
    let continuous = LaplaceConfig {
        epsilon: 2.0,
        clip: 0.01,
        rounds: 4,
        dimension: d,
    }
    .build()
    .unwrap();
    let grid = continuous.on_grid(1000).unwrap();
    assert_eq!(grid.sensitivity(), 1000 * d as u64 + 1 + d as u64);
    assert!(grid.cost().epsilon <= continuous.epsilon_per_round());
    assert!(grid.cost().epsilon > 0.99 * continuous.epsilon_per_round());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let half = 0.005f32; // C/2
    let mut pairs: Vec<(Vec<f32>, Vec<f32>)> = vec![
        // Opposite corners of the L1 ball, and coordinates on half-grid points.
        (vec![half, 0.0, 0.0, 0.0], vec![-half, 0.0, 0.0, 0.0]),
        (vec![half / 4.0; 4], vec![-half / 4.0; 4]),
        (vec![1.0, -1.0, 1.0, -1.0], vec![-1.0, 1.0, -1.0, 1.0]),
    ];
    for _ in 0..2000 {
        let mut g = || {
            (0..d)
                .map(|_| rng.random_range(-0.01f32..0.01))
                .collect::<Vec<_>>()
        };
        pairs.push((g(), g()));
    }
    for (a, b) in &pairs {
        let (qa, qb) = (grid.quantise(a).unwrap(), grid.quantise(b).unwrap());
        let distance: u64 = qa.iter().zip(&qb).map(|(x, y)| x.abs_diff(*y)).sum();
        assert!(distance <= grid.sensitivity(), "{a:?} {b:?}: {distance}");
    }
    // Every integer output has positive probability under both and a bounded ratio.
    let (qa, qb) = (
        grid.quantise(&pairs[0].0).unwrap(),
        grid.quantise(&pairs[0].1).unwrap(),
    );
    let noise = DiscreteLaplace::new(grid.noise_scale()).unwrap();
    let mut worst = 0.0f64;
    for offset in (-30_000i64..=30_000).step_by(97) {
        let output: Vec<i64> = qa.iter().map(|x| x + offset).collect();
        let log_ratio: f64 = output
            .iter()
            .zip(qa.iter().zip(&qb))
            .map(|(o, (x, y))| (noise.pmf(o - x) / noise.pmf(o - y)).ln())
            .sum();
        assert!(log_ratio.is_finite());
        worst = worst.max(log_ratio.abs());
    }
    assert!(worst <= grid.cost().epsilon * (1.0 + 1e-9), "{worst}");
    // Noise: mean 0, variance 2(γt)²/(…) ≈ the continuous 2(C/ε)², within 0.2 % + sampling.
    let n = 50_000;
    let zero = vec![0.0f32; d];
    let draws: Vec<f64> = (0..n)
        .flat_map(|_| grid.release(&zero, &mut rng).unwrap())
        .map(f64::from)
        .collect();
    let var = draws.iter().map(|x| x * x).sum::<f64>() / draws.len() as f64;
    let want = 2.0 * continuous.scale().powi(2);
    assert!((var / want - 1.0).abs() < 0.03, "variance {var} vs {want}");
}

/// The exact bit flip has eq. 4's probabilities (at ε rounded down to a multiple of 2⁻³²),
/// and an exact PRS release lies on the same ±C lattice as the default one.
#[test]
fn exact_bit_flip_has_eq_4_probabilities() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let n = 100_000;
    for epsilon in [0.3, 2.0, 8.0] {
        let flip = BitFlip::new(epsilon).unwrap();
        for x in [-1.0, -0.3, 0.0, 0.9, 1.0] {
            let p = flip.probability_plus(x);
            let plus = (0..n)
                .filter(|_| flip.flip_exact(x, &mut rng) > 0.0)
                .count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            assert!(
                (plus / n as f64 - p).abs() < 5.0 * se,
                "ε = {epsilon}, x = {x}: {} vs {p}",
                plus / n as f64
            );
        }
    }
    let prs = PrsConfig {
        epsilon: 1.0,
        clip: 0.01,
        rounds: 1,
        dimension: 8,
        reduced_dimension: Some(4),
        unbiased: false,
    }
    .build()
    .unwrap()
    .exact();
    assert!(prs.is_exact());
    let u = prs.randomize_projection(&[0.5, -0.02, 0.0, 0.01], &mut rng);
    assert!(u.iter().all(|v| (v.abs() - 0.01).abs() < 1e-15), "{u:?}");
}
