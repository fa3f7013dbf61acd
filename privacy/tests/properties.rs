//! Property test, seeded, plain loops: constructors never panic on any parameter, and whatever
//! they accept releases outputs without NaN or infinities.

use privrl_privacy::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A parameter drawn from valid values, boundaries and garbage.
fn wild(rng: &mut ChaCha8Rng) -> f64 {
    match rng.random_range(0..14) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => 0.0,
        4 => -rng.random::<f64>() * 10.0,
        5 => 1e300,
        6 => 1e-300,
        7 => 1.0,
        8 => 5e-324,
        9 => rng.random::<f64>() * 1e-3,
        10 => rng.random::<f64>() * 100.0,
        _ => rng.random::<f64>(),
    }
}

fn wild_count(rng: &mut ChaCha8Rng) -> usize {
    match rng.random_range(0..6) {
        0 => 0,
        1 => 1,
        2 => usize::MAX,
        _ => rng.random_range(2..8),
    }
}

fn finite32(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn random_gradient(rng: &mut ChaCha8Rng, d: usize) -> Vec<f32> {
    (0..d)
        .map(|_| match rng.random_range(0..10) {
            0 => f32::MAX,
            1 => -f32::MAX,
            2 => 0.0,
            _ => (rng.random::<f32>() - 0.5) * 10f32.powi(rng.random_range(-8..8)),
        })
        .collect()
}

#[test]
fn constructors_never_panic_and_outputs_are_finite() {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let mut accepted = [0usize; 8];
    for _ in 0..20000 {
        // Dirichlet / Theorem 1.
        let m = wild_count(&mut rng).min(8);
        let cfg = DirichletConfig {
            actions: m,
            concentration: wild(&mut rng),
            eta: wild(&mut rng) / 8.0,
            tau: wild(&mut rng) / 8.0,
            lipschitz: wild(&mut rng),
            adjacency: wild(&mut rng),
        };
        if let Ok(p) = cfg.build() {
            accepted[0] += 1;
            assert!(p.epsilon().is_finite() && p.epsilon() >= 0.0);
            let d = p
                .delta(500, 0.9, &mut rng)
                .unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
            assert!(d.delta.is_finite() && (0.0..=1.0).contains(&d.delta));
            let _ = p.solve_concentration(wild(&mut rng));
            let sampler = DirichletSampler::new(m, cfg.concentration, cfg.eta).unwrap();
            let pi = p.extreme_policy();
            let x = sampler.sample(&pi, &mut rng).unwrap();
            assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0));
            assert!(
                (x.iter().sum::<f64>() - 1.0).abs() < 1e-9,
                "{x:?} for {cfg:?}"
            );
            if let Ok(mech) = p.mechanism(&d) {
                let c = mech.cost();
                assert!(c.epsilon.is_finite() && c.delta < 1.0);
            }
        }
        let alpha: Vec<f64> = (0..3).map(|_| wild(&mut rng)).collect();
        let mut out = [0.0; 3];
        if sample_dirichlet(&alpha, &mut rng, &mut out).is_ok() {
            assert!(
                (out.iter().sum::<f64>() - 1.0).abs() < 1e-9 && out.iter().all(|v| v.is_finite())
            );
        }
        let _ =
            concentration_radius(wild(&mut rng), wild(&mut rng)).map(|r| assert!(r.is_finite()));
        let _ = penalty_radius(wild(&mut rng), wild(&mut rng), wild(&mut rng))
            .map(|r| assert!(r.is_finite()));
        let p: Vec<f64> = (0..4).map(|_| wild(&mut rng)).collect();
        for map in [SimplexMap::MixWithUniform, SimplexMap::EuclideanProjection] {
            if let Ok(y) = restrict_to_simplex(&p, wild(&mut rng) / 4.0, map) {
                assert!(y.iter().all(|v| v.is_finite()));
            }
        }

        // Laplace.
        let d = wild_count(&mut rng).min(6);
        let lap = LaplaceConfig {
            epsilon: wild(&mut rng),
            clip: wild(&mut rng),
            rounds: wild_count(&mut rng),
            dimension: d,
        };
        if let Ok(mech) = lap.build() {
            accepted[1] += 1;
            let g = random_gradient(&mut rng, d);
            assert!(finite32(&mech.release(&g, &mut rng).unwrap()));
        }

        // PRS.
        let prs = PrsConfig {
            epsilon: wild(&mut rng),
            clip: wild(&mut rng),
            rounds: wild_count(&mut rng),
            dimension: d,
            reduced_dimension: if rng.random() {
                None
            } else {
                Some(wild_count(&mut rng))
            },
            unbiased: rng.random(),
        };
        if let Ok(mech) = prs.build() {
            accepted[2] += 1;
            let g = random_gradient(&mut rng, d);
            assert!(finite32(&mech.release(&g, &mut rng).unwrap()));
        }
        let _ = BitFlip::new(wild(&mut rng))
            .map(|f| assert!(f.probability_plus(wild(&mut rng).max(-5.0)).is_finite()));

        // Gaussian.
        let gauss = GaussianConfig {
            epsilon: wild(&mut rng),
            delta: wild(&mut rng),
            l2_sensitivity: wild(&mut rng),
            calibration: if rng.random() {
                GaussianCalibration::Classic
            } else {
                GaussianCalibration::Analytic
            },
            dimension: d,
        };
        if let Ok(mech) = gauss.build() {
            accepted[3] += 1;
            assert!(mech.sigma().is_finite() && mech.sigma() > 0.0);
            let g = random_gradient(&mut rng, d);
            assert!(finite32(&mech.release(&g, &mut rng).unwrap()));
        }

        // DP-SGD.
        let clipping = if rng.random() {
            Clipping::Flat {
                clip: wild(&mut rng),
            }
        } else {
            Clipping::PerLayer {
                layer_sizes: vec![wild_count(&mut rng), wild_count(&mut rng)],
                clips: vec![wild(&mut rng), wild(&mut rng)],
            }
        };
        let dp = DpSgdConfig {
            noise_multiplier: wild(&mut rng),
            clipping,
            dimension: wild_count(&mut rng).min(12),
        };
        if let Ok(dp) = dp.build() {
            accepted[4] += 1;
            assert!(dp.noise_std().is_finite());
            let n = rng.random_range(0..4);
            let grads: Vec<Vec<f32>> = (0..n)
                .map(|_| random_gradient(&mut rng, dp.dimension()))
                .collect();
            assert!(finite32(
                &dp.noisy_mean(&grads, 1.0 + rng.random::<f64>(), &mut rng)
                    .unwrap()
            ));
        }

        // RDP (a cheap subset of orders).
        let orders = [1.5, 2.0, 8.0, 32.0];
        if let Ok(r) = compute_rdp(
            wild(&mut rng),
            wild(&mut rng),
            rng.random_range(0..1000),
            &orders,
        ) {
            accepted[5] += 1;
            assert!(r.iter().all(|v| !v.is_nan()));
            if let Ok((e, _)) = rdp_to_dp(&orders, &r, wild(&mut rng)) {
                assert!(e.is_finite() && e >= 0.0);
            }
        }

        // Composition, ledger, budgets.
        let costs: Vec<PrivacyCost> = (0..3)
            .filter_map(|_| PrivacyCost::new(wild(&mut rng), wild(&mut rng)).ok())
            .collect();
        if let Ok(c) = advanced_composition(&costs, wild(&mut rng)) {
            accepted[6] += 1;
            assert!(!c.epsilon.is_nan() && !c.delta.is_nan());
        }
        if let Some(&c) = costs.first() {
            let _ = drv_advanced_composition(c, rng.random_range(0..5), wild(&mut rng))
                .map(|r| assert!(!r.epsilon.is_nan()));
        }
        let _ = Budget::new(wild(&mut rng), wild(&mut rng));

        // Observation noise.
        let warm: Vec<Vec<f32>> = (0..rng.random_range(0..4))
            .map(|_| random_gradient(&mut rng, 2))
            .collect();
        if let Ok(noise) = (ObservationNoiseConfig {
            noise_scale: wild(&mut rng),
        })
        .fit(&warm)
        {
            accepted[7] += 1;
            assert!(finite32(
                &noise
                    .perturb(&random_gradient(&mut rng, 2), &mut rng)
                    .unwrap()
            ));
        }

        // Bounded observation noise: clipped, then noised; finite whatever the input.
        let bounded = BoundedObservationNoiseConfig {
            bounds: (0..rng.random_range(0..3))
                .map(|_| wild(&mut rng))
                .collect(),
            noise_multiplier: wild(&mut rng),
        };
        if let Ok(noise) = bounded.build() {
            let d = bounded.bounds.len();
            assert!(finite32(
                &noise
                    .perturb(&random_gradient(&mut rng, d), &mut rng)
                    .unwrap()
            ));
            let _ = bounded
                .epsilon(rng.random_range(0..3), wild(&mut rng), AccountantKind::Rdp)
                .map(|e| assert!(!e.is_nan()));
        }

        // Lipschitz bounds on wild matrices.
        if let Ok(w) = Matrix::new(2, 3, (0..6).map(|_| wild(&mut rng)).collect()) {
            let s = spectral_norm(&w);
            assert!(s.upper_bound.is_finite() && s.upper_bound >= s.power_iteration);
        }
    }
    // The generator must also produce valid configurations, or the test proves nothing.
    assert!(accepted.iter().all(|&a| a > 20), "{accepted:?}");
}
