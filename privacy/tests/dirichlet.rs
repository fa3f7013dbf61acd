//! Dirichlet mechanism and Theorem 1 / Lemma 1 of paper 000.

use privrl_privacy::{
    certified_l2_radius, check_restricted_simplex, concentration_radius, penalty_radius,
    restrict_to_simplex, sample_dirichlet, DeltaMethod, DirichletConfig, DirichletSampler,
    Mechanism, PrivacyError, SimplexMap,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn config(
    actions: usize,
    concentration: f64,
    eta: f64,
    tau: f64,
    lipschitz: f64,
    adjacency: f64,
) -> DirichletConfig {
    DirichletConfig {
        actions,
        concentration,
        eta,
        tau,
        lipschitz,
        adjacency,
    }
}

/// Empirical mean and variance of each coordinate of `n` releases.
fn moments(sampler: &DirichletSampler, pi: &[f64], n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let m = pi.len();
    let (mut s1, mut s2) = (vec![0.0; m], vec![0.0; m]);
    let mut out = vec![0.0; m];
    for _ in 0..n {
        sampler.sample_into(pi, &mut rng, &mut out).unwrap();
        let sum: f64 = out.iter().sum();
        assert!(
            (sum - 1.0).abs() < 1e-12 && out.iter().all(|x| x.is_finite() && *x >= 0.0),
            "{out:?}"
        );
        for i in 0..m {
            s1[i] += out[i];
            s2[i] += out[i] * out[i];
        }
    }
    let mean: Vec<f64> = s1.iter().map(|s| s / n as f64).collect();
    let var = s2
        .iter()
        .zip(&mean)
        .map(|(s, mu)| s / n as f64 - mu * mu)
        .collect();
    (mean, var)
}

fn sampler(actions: usize, k: f64, eta: f64) -> DirichletSampler {
    DirichletSampler::new(actions, k, eta).unwrap()
}

#[test]
fn moments_match_dirichlet() {
    // Dir(kπ): E[x_i] = π_i, Var[x_i] = π_i(1 − π_i)/(k + 1).
    let pi = [0.1, 0.2, 0.3, 0.4];
    for &k in &[0.5, 20.0] {
        let mech = sampler(4, k, 0.05);
        let n = 100_000;
        let (mean, var) = moments(&mech, &pi, n, 1);
        for i in 0..4 {
            let want_var = pi[i] * (1.0 - pi[i]) / (k + 1.0);
            assert!(
                (mean[i] - pi[i]).abs() < 5.0 * (want_var / n as f64).sqrt(),
                "k={k} mean {mean:?}"
            );
            assert!(
                (var[i] - want_var).abs() < 0.03 * want_var,
                "k={k} var {var:?} want {want_var}"
            );
        }
    }
}

#[test]
fn tiny_concentration_stays_on_simplex() {
    // kπ_i ~ 1e-9: linear-space Gamma sampling underflows to 0/0 here; the log-space sampler
    // returns near-vertices with the right mean.
    let pi = [0.25, 0.25, 0.5];
    let mech = sampler(3, 4e-9, 0.2);
    let (mean, _) = moments(&mech, &pi, 20_000, 2);
    for i in 0..3 {
        assert!((mean[i] - pi[i]).abs() < 0.03, "{mean:?}");
    }
    // And directly, with shapes near the smallest normal double: a vertex, never NaN.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut out = [0.0; 3];
    for _ in 0..100 {
        sample_dirichlet(&[1e-300, 3e-300, 2.3e-308], &mut rng, &mut out).unwrap();
        assert_eq!(out.iter().sum::<f64>(), 1.0);
        assert_eq!(out.iter().filter(|&&x| x == 1.0).count(), 1);
    }
}

#[test]
fn zero_concentration_is_uniform_and_free() {
    // k = 0: Dir(1, …, 1) whatever π: mean 1/m, Var = (1/m)(1 − 1/m)/(m + 1).
    let privacy = config(3, 0.0, 0.1, 0.01, 1.0, 0.1).build().unwrap();
    assert_eq!(privacy.epsilon(), 0.0);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let delta = privacy.delta(10, 0.95, &mut rng).unwrap();
    assert_eq!(delta.delta, 0.0);
    let mech = privacy.mechanism(&delta).unwrap();
    assert_eq!(mech.cost().epsilon, 0.0);
    assert_eq!(mech.cost().delta, 0.0);
    let n = 60_000;
    let (mean, var) = moments(mech.sampler(), &[0.8, 0.1, 0.1], n, 5);
    let want_var = (1.0 / 3.0) * (2.0 / 3.0) / 4.0;
    for i in 0..3 {
        assert!((mean[i] - 1.0 / 3.0).abs() < 0.01, "{mean:?}");
        assert!((var[i] - want_var).abs() < 0.05 * want_var, "{var:?}");
    }
}

#[test]
fn lemma1_two_norm_claim_fails_but_directional_bound_holds() {
    // Eq. 14 claims P(‖Dir_k(π) − π‖₂ ≥ r) ≤ β with r = √(log(1/β)/(2(k+1))). What holds is the
    // sub-Gaussian tail of every fixed projection ⟨u, x − π⟩ (Marchal & Arbel 2017), and the
    // Markov radius √((1 − 1/m)/(β(k+1))) for the 2-norm.
    let pi = [0.05, 0.05, 0.1, 0.3, 0.5];
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let n = 40_000;
    let mut directions: Vec<[f64; 5]> = Vec::new();
    for i in 0..5 {
        let mut e = [0.0; 5];
        e[i] = 1.0;
        directions.push(e);
        e[i] = -1.0;
        directions.push(e);
    }
    directions.push([0.5, 0.5, 0.5, -0.5, 0.0]);
    for &k in &[1.0, 10.0, 200.0] {
        let mech = sampler(5, k, 0.05);
        let draws: Vec<Vec<f64>> = (0..n)
            .map(|_| mech.sample(&pi, &mut rng).unwrap())
            .collect();
        for &beta in &[0.05, 0.3] {
            let r = concentration_radius(k, beta).unwrap();
            let slack = 3.0 * (beta / n as f64).sqrt();
            for u in &directions {
                let hits = draws
                    .iter()
                    .filter(|x| (0..5).map(|i| u[i] * (x[i] - pi[i])).sum::<f64>() >= r)
                    .count();
                let rate = hits as f64 / n as f64;
                assert!(rate <= beta + slack, "k={k} beta={beta} u={u:?}: {rate}");
            }
            let r2 = certified_l2_radius(5, k, beta).unwrap();
            let norm = |x: &Vec<f64>| {
                x.iter()
                    .zip(&pi)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    .sqrt()
            };
            let rate = draws.iter().filter(|x| norm(x) >= r2).count() as f64 / n as f64;
            assert!(
                rate <= beta + slack,
                "k={k} beta={beta}: Markov radius {rate}"
            );
            if k == 10.0 && beta == 0.05 {
                // The 2-norm claim of eq. 14 fails here (numpy gives 0.0862 with 2e6 draws).
                let rate = draws.iter().filter(|x| norm(x) >= r).count() as f64 / n as f64;
                assert!(rate > 0.075, "eq. 14 2-norm rate {rate}");
            }
        }
    }
    // eq. 15 by hand: λ = 0.5, k = 5, β = 0.05: 0.5·√(ln 20 / 12) = 0.5·√(2.9957323/12)
    // = 0.5·√0.2496444 = 0.5·0.4996442 = 0.2498221.
    assert!((penalty_radius(0.5, 5.0, 0.05).unwrap() - 0.249_822_2).abs() < 1e-6);
    assert!(matches!(
        concentration_radius(0.0, 0.05),
        Err(PrivacyError::OutOfRange {
            name: "concentration",
            ..
        })
    ));
    assert!(matches!(
        concentration_radius(1.0, 1.0),
        Err(PrivacyError::OutOfRange { name: "beta", .. })
    ));
}

#[test]
fn epsilon_eq12_by_hand() {
    // m = 6, k = 5, η = 0.01, τ = 0.01, L = 1, b = 0.1:
    //   √6·1·0.1·5·ln(100) = 2.4494897·0.5·4.6051702 = 5.6401586
    //   5·lnΓ(0.05) = 5·2.9688792 = 14.8443960
    //   lnΓ(5·0.95) = lnΓ(4.75) = 2.8085714
    //   6·lnΓ(5/6) = 6·0.1211436 = 0.7268618
    //   ε = 5.6401586 + 14.8443960 + 2.8085714 − 0.7268618 = 22.5662642
    let e = config(6, 5.0, 0.01, 0.01, 1.0, 0.1)
        .build()
        .unwrap()
        .epsilon();
    assert!((e - 22.566_264_2).abs() < 1e-6, "{e}");
    // m = 2, k = 10, η = 0.1, τ = 0.05, L = 2, b = 0.05:
    //   √2·2·0.05·10·ln(20) = 1.4142136·2.9957323 = 4.2366052
    //   lnΓ(1) = 0; lnΓ(9) = ln 40320 = 10.6046029; 2·lnΓ(5) = 2·ln 24 = 6.3561077
    //   ε = 4.2366052 + 0 + 10.6046029 − 6.3561077 = 8.4851005
    let e = config(2, 10.0, 0.1, 0.05, 2.0, 0.05)
        .build()
        .unwrap()
        .epsilon();
    assert!((e - 8.485_100_5).abs() < 1e-6, "{e}");
    // m = 4, k = 50, η = 0.05, τ = 0.02, L = 0.5, b = 0.2:
    //   2·0.5·0.2·50·ln(50) = 10·3.9120230 = 39.1202301
    //   3·lnΓ(2.5) = 3·0.2846829 = 0.8540486; lnΓ(42.5) = 115.9000705; 4·lnΓ(12.5) = 74.9373900
    //   ε = 39.1202301 + 0.8540486 + 115.9000705 − 74.9373900 = 80.9369591
    let e = config(4, 50.0, 0.05, 0.02, 0.5, 0.2)
        .build()
        .unwrap()
        .epsilon();
    assert!((e - 80.936_959_1).abs() < 1e-6, "{e}");
}

#[test]
fn exact_delta_for_two_actions() {
    // scipy 1.17.1: betainc(kη, k(1−η), τ) + betainc(k(1−η), kη, τ).
    for (k, eta, tau, want) in [
        (10.0, 0.1, 0.05, 0.369_750_590_277_343_75),
        (3.0, 0.2, 0.1, 0.431_014_558_064_493_85),
        (100.0, 0.05, 0.01, 0.003_287_432_231_566_443_4),
    ] {
        let d = config(2, k, eta, tau, 1.0, 0.1)
            .build()
            .unwrap()
            .delta_exact()
            .unwrap();
        assert!(
            (d - want).abs() < 1e-10 * want.max(1e-3),
            "k={k}: {d} vs {want}"
        );
    }
    assert!(config(3, 1.0, 0.1, 0.05, 1.0, 0.1)
        .build()
        .unwrap()
        .delta_exact()
        .is_err());
}

#[test]
fn monte_carlo_delta_agrees_with_exact() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    for (k, eta, tau) in [
        (10.0, 0.1, 0.05),
        (3.0, 0.2, 0.1),
        (100.0, 0.05, 0.01),
        (0.01, 0.3, 0.2),
    ] {
        let privacy = config(2, k, eta, tau, 1.0, 0.1).build().unwrap();
        let exact = privacy.delta_exact().unwrap();
        let mc = privacy
            .delta_monte_carlo(200_000, privrl_privacy::DELTA_CONFIDENCE, &mut rng)
            .unwrap();
        assert_eq!(mc.method, DeltaMethod::MonteCarlo);
        // One-sided: the accounted δ covers the exact one.
        assert!(
            exact <= mc.upper(),
            "k={k}: exact {exact} above the accounted {}",
            mc.upper()
        );
        // Tighter, with the binomial standard error: a wrong event would fail here.
        let se = (exact * (1.0 - exact) / 200_000.0).sqrt();
        assert!(
            (mc.delta - exact).abs() < 4.5 * se + 1e-6,
            "k={k}: {} vs {exact}",
            mc.delta
        );
    }
}

/// The Clopper–Pearson bound against hand-worked values and a brute-force binomial sum.
#[test]
fn clopper_pearson_upper_bound_is_exact() {
    use privrl_privacy::clopper_pearson_upper;
    // No successes: (1 − p)^n = 1 − c, p = 1 − (1 − c)^{1/n}; n = 10, c = 0.95:
    // 1 − 0.05^0.1 = 0.2588656.
    let p = clopper_pearson_upper(0, 10, 0.95).unwrap();
    assert!((p - 0.258_865_6).abs() < 1e-7, "{p}");
    assert_eq!(clopper_pearson_upper(10, 10, 0.95).unwrap(), 1.0);
    assert!(clopper_pearson_upper(1, 0, 0.95).is_err());
    assert!(clopper_pearson_upper(3, 2, 0.95).is_err());
    assert!(clopper_pearson_upper(1, 2, 1.0).is_err());
    // P[Binomial(n, p) ≤ k] at the bound is 1 − c, by summing the pmf.
    for (k, n, c) in [
        (3u64, 20u64, 0.95),
        (1, 1000, 1.0 - 1e-9),
        (37, 200, 0.99),
        (0, 1, 0.5),
    ] {
        let p = clopper_pearson_upper(k, n, c).unwrap();
        let mut log_choose = 0.0f64;
        let mut cdf = 0.0;
        for i in 0..=k {
            if i > 0 {
                log_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
            }
            cdf += (log_choose + i as f64 * p.ln() + (n - i) as f64 * (-p).ln_1p()).exp();
        }
        assert!(
            (cdf - (1.0 - c)).abs() <= 1e-9 * (1.0 - c) + 1e-15,
            "k={k} n={n} c={c}: P[X ≤ k] = {cdf} at p = {p}"
        );
        // Never below the point estimate.
        assert!(p >= k as f64 / n as f64);
    }
}

/// The accounted δ covers the exact one in every one of 40 seeded estimates at confidence
/// 1 − 1e-9, and at small δ it is tight: the old two-sided Hoeffding half-width at 95 %
/// accounted an exact 6.3e-5 as 3.1e-3 (48×); the Clopper–Pearson bound stays within 10×.
#[test]
fn monte_carlo_delta_covers_the_exact_delta_and_is_tight_when_small() {
    for (tau, samples, tightness) in [(0.06, 2_000, 3.0), (0.0055, 200_000, 10.0)] {
        let privacy = config(2, 40.0, 0.1, tau, 1.0, 0.1).build().unwrap();
        let exact = privacy.delta_exact().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..40 {
            let mc = privacy
                .delta_monte_carlo(samples, privrl_privacy::DELTA_CONFIDENCE, &mut rng)
                .unwrap();
            assert!(exact <= mc.upper(), "τ = {tau}: {exact} > {}", mc.upper());
            assert!(
                mc.upper() < tightness * exact,
                "τ = {tau}: accounted {} for exact {exact}",
                mc.upper()
            );
        }
    }
}

#[test]
fn monte_carlo_delta_matches_an_independent_sampler() {
    // m = 3 with moderate shapes, against rand_distr's (linear-space) Dirichlet.
    use rand_distr::{Dirichlet, Distribution};
    let (k, eta, tau) = (20.0, 0.1, 0.08);
    let privacy = config(3, k, eta, tau, 1.0, 0.1).build().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mc = privacy.delta_monte_carlo(200_000, 0.99, &mut rng).unwrap();
    let reference = Dirichlet::new([k * eta, k * eta, k * (1.0 - 2.0 * eta)]).unwrap();
    let n = 200_000;
    let outside = (0..n)
        .filter(|_| reference.sample(&mut rng).iter().any(|&x| x < tau))
        .count();
    let d_ref = outside as f64 / n as f64;
    let se = (d_ref * (1.0 - d_ref) / n as f64).sqrt();
    assert!(
        (mc.delta - d_ref).abs() < 6.0 * se,
        "{} vs {d_ref}",
        mc.delta
    );
}

#[test]
fn epsilon_increases_with_concentration_and_solver_inverts_it() {
    for (m, eta, tau, lb) in [
        (2, 0.1, 0.05, 0.1),
        (6, 0.01, 0.01, 1e-9),
        (10, 0.05, 0.02, 0.5),
    ] {
        let privacy = config(m, 1.0, eta, tau, lb, 1.0).build().unwrap();
        let floor = privacy.epsilon_small_concentration_limit();
        let mut previous = floor;
        let mut k = 1e-4;
        while k < 1e4 {
            let e = privacy.with_concentration(k).unwrap().epsilon();
            assert!(e > previous - 1e-9, "m={m} k={k}: {e} <= {previous}");
            previous = e;
            k *= 1.3;
        }
        for target in [floor + 0.5, floor + 3.0, floor + 40.0] {
            let k = privacy.solve_concentration(target).unwrap();
            let e = privacy.with_concentration(k).unwrap().epsilon();
            assert!(
                e <= target && e > target - 1e-8 * target,
                "m={m}: target {target} got {e} at k={k}"
            );
        }
        assert!(matches!(
            privacy.solve_concentration(floor * 0.99),
            Err(PrivacyError::Unreachable { .. })
        ));
    }
    // The floor for m = 6, η = 0.01 by hand: −5 ln 0.01 − ln 0.95 − 6 ln 6
    // = 23.0258509 + 0.0512933 − 10.7505568 = 12.3265874.
    let p = config(6, 1.0, 0.01, 0.01, 1.0, 0.1).build().unwrap();
    assert!((p.epsilon_small_concentration_limit() - 12.326_587_4).abs() < 1e-6);
}

#[test]
fn mechanism_cost_is_epsilon_and_upper_delta() {
    let privacy = config(4, 8.0, 0.05, 0.02, 1.0, 0.1).build().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let delta = privacy.delta(50_000, 0.95, &mut rng).unwrap();
    let mech = privacy.mechanism(&delta).unwrap();
    assert_eq!(mech.cost().epsilon, privacy.epsilon());
    assert_eq!(mech.cost().delta, delta.delta + delta.margin);
    assert_eq!(mech.name(), "dirichlet");
    assert!(mech
        .parameters()
        .iter()
        .any(|(k, v)| k == "concentration" && *v == 8.0));
    // A policy off Δ_{m,η} or of the wrong length is refused.
    assert!(matches!(
        mech.release(&[0.5, 0.5, 0.0, 0.0], &mut rng),
        Err(PrivacyError::NotOnSimplex { .. })
    ));
    assert!(matches!(
        mech.release(&[0.5, 0.5], &mut rng),
        Err(PrivacyError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        mech.release(&[0.3, 0.3, 0.3, 0.3], &mut rng),
        Err(PrivacyError::NotOnSimplex { .. })
    ));
    // A δ computed for other parameters is refused.
    let other = privacy
        .with_concentration(9.0)
        .unwrap()
        .delta(1_000, 0.95, &mut rng)
        .unwrap();
    assert!(matches!(
        privacy.mechanism(&other),
        Err(PrivacyError::Inconsistent(_))
    ));
    // A vacuous δ (small k: Dir_k(p*) almost always leaves Δ_{m,τ}) gives no mechanism.
    let small = privacy.with_concentration(1e-3).unwrap();
    let delta = small.delta(2_000, 0.95, &mut rng).unwrap();
    assert!(matches!(
        small.mechanism(&delta),
        Err(PrivacyError::OutOfRange { name: "delta", .. })
    ));
}

#[test]
fn config_validation() {
    let ok = config(4, 5.0, 0.05, 0.02, 1.0, 0.1);
    assert!(ok.build().is_ok());
    let cases: [(DirichletConfig, &str); 10] = [
        (DirichletConfig { actions: 1, ..ok }, "actions"),
        (
            DirichletConfig {
                concentration: -1.0,
                ..ok
            },
            "concentration",
        ),
        (
            DirichletConfig {
                concentration: f64::NAN,
                ..ok
            },
            "concentration",
        ),
        (DirichletConfig { eta: 0.25, ..ok }, "eta"),
        (DirichletConfig { eta: 0.0, ..ok }, "eta"),
        (DirichletConfig { tau: 0.0, ..ok }, "tau"),
        (DirichletConfig { tau: 0.3, ..ok }, "tau"),
        (
            DirichletConfig {
                lipschitz: 0.0,
                ..ok
            },
            "lipschitz",
        ),
        (
            DirichletConfig {
                adjacency: f64::INFINITY,
                ..ok
            },
            "adjacency",
        ),
        (
            DirichletConfig {
                concentration: 1e308,
                ..ok
            },
            "concentration",
        ),
    ];
    for (c, name) in cases {
        match c.build() {
            Err(PrivacyError::OutOfRange { name: n, .. }) => assert_eq!(n, name),
            other => panic!("{c:?}: {other:?}"),
        }
    }
    let p = ok.build().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    assert!(p.delta_monte_carlo(0, 0.9, &mut rng).is_err());
    assert!(p.delta_monte_carlo(10, 1.0, &mut rng).is_err());
}

#[test]
fn simplex_maps() {
    let eta = 0.05;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    use rand::Rng;
    for _ in 0..200 {
        let raw: Vec<f64> = (0..5).map(|_| rng.random::<f64>().powi(3)).collect();
        let s: f64 = raw.iter().sum();
        let p: Vec<f64> = raw.iter().map(|x| x / s).collect();
        let mixed = restrict_to_simplex(&p, eta, SimplexMap::MixWithUniform).unwrap();
        check_restricted_simplex("mixed", &mixed, 5, eta).unwrap();
        for (a, b) in mixed.iter().zip(&p) {
            assert!((a - (0.75 * b + eta)).abs() < 1e-12);
        }
        // Projection: in Δ_{m,η}, and ⟨p − y, z − y⟩ ≤ 0 for every z of the set (its vertices).
        let y = restrict_to_simplex(&p, eta, SimplexMap::EuclideanProjection).unwrap();
        check_restricted_simplex("projected", &y, 5, eta).unwrap();
        for v in 0..5 {
            let z: Vec<f64> = (0..5)
                .map(|i| if i == v { 1.0 - 4.0 * eta } else { eta })
                .collect();
            let inner: f64 = (0..5).map(|i| (p[i] - y[i]) * (z[i] - y[i])).sum();
            assert!(inner <= 1e-12, "{inner}");
        }
        // Idempotent on the set.
        let y2 = restrict_to_simplex(&y, eta, SimplexMap::EuclideanProjection).unwrap();
        for (a, b) in y.iter().zip(&y2) {
            assert!((a - b).abs() < 1e-12);
        }
    }
    assert!(restrict_to_simplex(&[0.5, 0.6], 0.1, SimplexMap::MixWithUniform).is_err());
    assert!(restrict_to_simplex(&[2.0, -3.0], 0.1, SimplexMap::EuclideanProjection).is_ok());
    assert!(restrict_to_simplex(&[0.5, 0.5], 0.5, SimplexMap::EuclideanProjection).is_err());
    assert!(restrict_to_simplex(&[], 0.1, SimplexMap::EuclideanProjection).is_err());
}

#[test]
fn solve_tau_meets_the_target_delta_for_every_m() {
    // m = 2, k = 5, η = 0.2: δ(τ) = I_τ(1, 4) + I_τ(4, 1) = 1 − (1 − τ)⁴ + τ⁴, so δ = 0.05 at
    // τ = 1 − 0.95^{1/4} = 0.0127414 (τ⁴ ≈ 3e-8 moves it in the 8th digit).
    let two = config(2, 5.0, 0.2, 0.1, 1.0, 0.01).build().unwrap();
    let seeded = || ChaCha8Rng::seed_from_u64(3);
    let tau = two.solve_tau(0.05, 20_000, 0.95, seeded).unwrap();
    assert!((tau - 0.012_741_4).abs() < 1e-6, "{tau}");
    // m = 6 with η = 0.4/m: the m = 2 τ of 0.0127 gives a vacuous δ ≈ 0.95 ...
    let six = config(6, 5.0, 0.4 / 6.0, 0.0127, 1.0, 0.01)
        .build()
        .unwrap();
    let vacuous = six.delta(20_000, 0.95, &mut seeded()).unwrap().upper();
    assert!(vacuous > 0.9, "{vacuous}");
    // ... the solved τ meets the target with the same draws, and 1% more does not.
    let tau = six.solve_tau(0.05, 20_000, 0.95, seeded).unwrap();
    let at = |t: f64| {
        config(6, 5.0, 0.4 / 6.0, t, 1.0, 0.01)
            .build()
            .unwrap()
            .delta(20_000, 0.95, &mut seeded())
            .unwrap()
            .upper()
    };
    assert!(at(tau) <= 0.05, "{tau}: {}", at(tau));
    assert!(at(tau * 1.01) > 0.05, "{tau}: {}", at(tau * 1.01));
    assert!(tau < 1e-4, "{tau}");
    // A target below the Monte Carlo margin cannot be met: a named error. With no draw
    // outside, 20,000 draws bound δ by 1 − (1e-9)^{1/20000} ≈ 1.04e-3 at 1 − 1e-9.
    assert!(matches!(
        six.solve_tau(1e-4, 20_000, privrl_privacy::DELTA_CONFIDENCE, seeded),
        Err(PrivacyError::Unreachable { .. })
    ));
}

/// The paper's "(4.46, 0.05)-differential privacy" at k = 5 (Section 5, AirRaid, m = 6)
/// recomputed with eq. 12 and eq. 6, and why privrl's AirRaid teacher costs 120× more.
///
/// The paper gives k = 5 and the result, not L, b, η or τ. Two facts pin the gap down:
/// - at privrl's η = 0.4/m the Gamma terms of eq. 12 alone exceed 4.46, so no L ≥ 0
///   reproduces the paper's ε there: the paper's η was larger;
/// - on the family that does reproduce it, L·b is 0.015–0.05 (η from 0.1 to 1/6), against
///   privrl's 0.6 · 445.6 · 0.01 = 2.67 (mixing factor 1 − mη, the certified L of the
///   teacher on RAM scaled to [0, 1], b = 0.01). One member needs no invented L: the same
///   certified network measured per raw RAM byte (the paper's AirRaid-ram-v0 feeds bytes
///   0..=255, so L = 445.6/255), b = 0.01 byte, the 1-Lipschitz projection onto Δ_{m,η},
///   η = 0.1034, τ solved for δ = 0.05 at k = 5: (4.46, 0.05).
#[test]
fn the_papers_4_46_at_k_5_is_recomputed_and_privrls_537_explained() {
    let seeded = || ChaCha8Rng::seed_from_u64(40);
    let (m, k, b) = (6, 5.0, 0.01);
    // The paper's Chebyshev estimate is a point estimate: confidence 0.5 for the bound.
    let solved = |eta: f64, lipschitz: f64| {
        let at = config(m, k, eta, 0.01, lipschitz, b).build().unwrap();
        let tau = at.solve_tau(0.05, 50_000, 0.5, seeded).unwrap();
        let privacy = config(m, k, eta, tau, lipschitz, b).build().unwrap();
        let delta = privacy.delta(50_000, 0.5, &mut seeded()).unwrap().delta;
        (tau, privacy.epsilon(), delta)
    };
    // A member of the family that reproduces the paper.
    let (tau, epsilon, delta) = solved(0.1034, 445.6 / 255.0);
    assert!((epsilon - 4.46).abs() < 0.03, "ε = {epsilon} at τ = {tau}");
    assert!((delta - 0.05).abs() < 0.003, "δ = {delta}");
    assert!(tau > 2e-5 && tau < 3.2e-5, "{tau}");
    // privrl's AirRaid teacher: η = 0.4/m, L = (1 − mη)·445.6, b = 0.01 on scaled RAM: ε ≈ 514
    // with τ solved on the point estimate (the units' 537.2 solved τ against a 95% upper
    // bound, a smaller τ).
    let (tau, epsilon, _) = solved(0.4 / 6.0, 0.6 * 445.6);
    assert!(
        (500.0..545.0).contains(&epsilon),
        "ε = {epsilon} at τ = {tau}"
    );
    // At η = 0.4/m the Gamma terms alone (L → 0) exceed the paper's ε.
    let gamma_only = config(m, k, 0.4 / 6.0, tau, 1e-12, b).build().unwrap();
    assert!(gamma_only.epsilon() > 5.0, "{}", gamma_only.epsilon());
    // The L·b that reproduces 4.46 at η = 0.1 (τ solved): ≈ 0.015, 170× below privrl's 2.67.
    let (tau, eps_unit, _) = solved(0.1, 1.0);
    let gamma = config(m, k, 0.1, tau, 1e-12, b).build().unwrap().epsilon();
    let lb = (4.46 - gamma) / ((eps_unit - gamma) / b);
    assert!(lb > 0.013 && lb < 0.018, "L·b = {lb}");
}
