//! The gradient mechanisms behind `GradientMechanism`: names and aliases, what each releases
//! (hand-worked values, and the Gaussian noise's standard deviation by Monte Carlo), the cost
//! each states, and named errors on bad input.

use privrl_privacy::{
    Epsilon, GradientMechanismConfig, GradientPrivacy, MechanismKind, NoiseMode, PrivacyCost,
    PrivacyError,
};
use rand::RngCore;
fn rng() -> Box<dyn RngCore> {
    Box::new(NoiseMode::Seeded.rng(3).unwrap())
}

#[test]
fn every_name_and_alias_parses_back_to_its_kind() {
    for kind in MechanismKind::ALL {
        assert_eq!(kind.name().parse::<MechanismKind>().unwrap(), kind);
        for alias in kind.aliases() {
            assert_eq!(alias.parse::<MechanismKind>().unwrap(), kind);
        }
    }
    assert_eq!(
        "LAP".parse::<MechanismKind>().unwrap(),
        MechanismKind::Laplace
    );
    assert!("gauss".parse::<MechanismKind>().is_err());
}

#[test]
fn none_and_clip_release_the_mean_of_clipped_records() {
    let records = vec![vec![3.0f32, 4.0], vec![0.3, 0.4]];
    let none = GradientMechanismConfig::None.build(2, 1).unwrap();
    let mean = none.release_batch(&records, 2.0, &mut *rng()).unwrap();
    assert_eq!(mean, vec![1.65, 2.2]);
    let clip = GradientMechanismConfig::Clip { clip: 1.0 }
        .build(2, 1)
        .unwrap();
    // (3, 4) has norm 5 → (0.6, 0.8); (0.3, 0.4) is inside the ball.
    let mean = clip.release_batch(&records, 2.0, &mut *rng()).unwrap();
    assert!((mean[0] - 0.45).abs() < 1e-6 && (mean[1] - 0.6).abs() < 1e-6);
    assert_eq!(
        clip.release(&[3.0, 4.0], &mut *rng()).unwrap(),
        vec![0.6, 0.8]
    );
    assert!(!none.adds_noise() && !clip.adds_noise());
}

#[test]
fn dp_sgd_noise_has_standard_deviation_sigma_c_over_l() {
    let config = GradientMechanismConfig::DpSgd {
        clip: 2.0,
        noise_multiplier: 1.5,
    };
    let d = 20_000;
    let mechanism = config.build(d, 1).unwrap();
    let released = mechanism
        .release_clipped_sum(vec![0.0; d], 4.0, &mut *rng())
        .unwrap();
    let var = released.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / d as f64;
    // σC/L = 0.75; the sample std of 20k normals is within 2% of it.
    assert!((var.sqrt() - 0.75).abs() < 0.015, "std {}", var.sqrt());
    assert_eq!(
        mechanism.privacy(),
        GradientPrivacy::SubsampledGaussian {
            noise_multiplier: 1.5
        }
    );
    assert_eq!(mechanism.record_clip(), Some(2.0));
}

#[test]
fn local_mechanisms_cost_epsilon_over_rounds_and_infinity_keeps_their_clipping() {
    let laplace = GradientMechanismConfig::laplace(Epsilon::finite(3.0).unwrap())
        .build(4, 3)
        .unwrap();
    assert_eq!(
        laplace.privacy(),
        GradientPrivacy::PerRelease(PrivacyCost::pure(1.0).unwrap())
    );
    let unbounded = GradientMechanismConfig::Laplace {
        epsilon: Epsilon::INFINITE,
        clip: 1.0,
    }
    .build(2, 1)
    .unwrap();
    // L1 clipping to C/2 = 0.5: (3, 1) → (0.375, 0.125).
    assert_eq!(
        unbounded.release(&[3.0, 1.0], &mut *rng()).unwrap(),
        vec![0.375, 0.125]
    );
    assert_eq!(unbounded.privacy(), GradientPrivacy::None);
    let sign = GradientMechanismConfig::prs(Epsilon::INFINITE)
        .build(5, 1)
        .unwrap();
    assert_eq!(sign.release(&[0.1; 5], &mut *rng()).unwrap().len(), 5);
}

#[test]
fn a_config_states_what_its_built_mechanism_does() {
    let e = Epsilon::finite(4.0).unwrap();
    for config in [
        GradientMechanismConfig::None,
        GradientMechanismConfig::Clip { clip: 0.5 },
        GradientMechanismConfig::DpSgd {
            clip: 0.5,
            noise_multiplier: 1.0,
        },
        GradientMechanismConfig::laplace(e),
        GradientMechanismConfig::laplace(Epsilon::INFINITE),
        GradientMechanismConfig::prs(e),
        GradientMechanismConfig::prs(Epsilon::INFINITE),
    ] {
        let built = config.build(8, 1).unwrap();
        assert_eq!(built.kind(), config.kind(), "{config}");
        assert_eq!(built.record_clip(), config.record_clip(), "{config}");
        assert_eq!(built.adds_noise(), config.adds_noise(), "{config}");
        assert_eq!(built.dimension(), 8);
    }
}

#[test]
fn bad_inputs_are_named_errors() {
    let m = GradientMechanismConfig::None.build(2, 1).unwrap();
    assert!(matches!(
        m.release(&[1.0], &mut *rng()),
        Err(PrivacyError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        m.release(&[1.0, f32::NAN], &mut *rng()),
        Err(PrivacyError::NonFinite { .. })
    ));
    assert!(GradientMechanismConfig::Clip { clip: 0.0 }
        .build(2, 1)
        .is_err());
    assert!(GradientMechanismConfig::None.build(0, 1).is_err());
    assert!(GradientMechanismConfig::DpSgd {
        clip: 1.0,
        noise_multiplier: -1.0
    }
    .build(2, 1)
    .is_err());
}

#[test]
fn configs_round_trip_through_json_with_infinite_epsilon_as_null() {
    let config = GradientMechanismConfig::prs(Epsilon::INFINITE);
    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(json, r#"{"mechanism":"prs","epsilon":null,"clip":1.0}"#);
    assert_eq!(
        serde_json::from_str::<GradientMechanismConfig>(&json).unwrap(),
        config
    );
    assert_eq!(config.to_string(), "PRS ε=∞ C=1");
}

/// DP-SGD's batch release is the one host path (clip each record, sum in f64, noise once,
/// divide): the same bytes as `DpSgd::noisy_mean`, Figure 7 written out, from the same seed.
#[test]
fn dp_sgd_batch_release_is_figure_7_bit_for_bit() {
    let records = vec![
        vec![3.0f32, 4.0, 0.0],
        vec![0.3, 0.4, -0.2],
        vec![-9.0, 1.0, 2.0],
    ];
    let mechanism = GradientMechanismConfig::DpSgd {
        clip: 1.0,
        noise_multiplier: 0.7,
    }
    .build(3, 1)
    .unwrap();
    let released = mechanism.release_batch(&records, 2.5, &mut *rng()).unwrap();
    let dp_sgd = privrl_privacy::DpSgdConfig {
        noise_multiplier: 0.7,
        clipping: privrl_privacy::Clipping::Flat { clip: 1.0 },
        dimension: 3,
    }
    .build()
    .unwrap();
    let mut generator = NoiseMode::Seeded.rng(3).unwrap();
    let expected = dp_sgd.noisy_mean(&records, 2.5, &mut generator).unwrap();
    assert_eq!(released, expected);
}

/// Under `NoiseMode::Secure` the local mechanisms draw exactly (Laplace on a grid, PRS with
/// exact flips) at no more than the configured ε per release; seeded runs keep the textbook
/// samplers (and their bytes); DP-SGD's Gaussian is drawn on a grid.
#[test]
fn secure_mode_builds_the_exact_local_mechanisms() {
    use rand::SeedableRng;
    let d = 16;
    for config in [
        GradientMechanismConfig::laplace(Epsilon::finite(2.0).unwrap()),
        GradientMechanismConfig::Prs {
            epsilon: Epsilon::finite(2.0).unwrap(),
            clip: 1.0,
        },
    ] {
        let seeded = config.build_for(d, 4, NoiseMode::Seeded).unwrap();
        let secure = config.build_for(d, 4, NoiseMode::Secure).unwrap();
        assert_eq!(seeded.to_string(), config.build(d, 4).unwrap().to_string());
        assert!(secure.to_string().contains("exact"), "{secure}");
        let (GradientPrivacy::PerRelease(a), GradientPrivacy::PerRelease(b)) =
            (seeded.privacy(), secure.privacy())
        else {
            panic!("local mechanisms account per release");
        };
        assert!(
            b.epsilon <= a.epsilon && b.epsilon > 0.99 * a.epsilon,
            "{} vs {}",
            b.epsilon,
            a.epsilon
        );
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let out = secure.release(&[0.001f32; 16], &mut rng).unwrap();
        assert_eq!(out.len(), d);
        assert!(out.iter().all(|x| x.is_finite()));
    }
    // DP-SGD: seeded keeps the textbook Gaussian; secure releases on a grid, accounted at the
    // same σ, its values on the grid γ/L.
    let dp = GradientMechanismConfig::DpSgd {
        clip: 1.0,
        noise_multiplier: 1.0,
    };
    assert_eq!(
        dp.build_for(d, 1, NoiseMode::Seeded).unwrap().to_string(),
        dp.build(d, 1).unwrap().to_string()
    );
    let secure = dp.build_for(d, 1, NoiseMode::Secure).unwrap();
    assert!(secure.to_string().contains("grid"), "{secure}");
    assert_eq!(secure.privacy(), dp.build(d, 1).unwrap().privacy());
    assert_eq!(secure.record_clip(), Some(1.0));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let grid = privrl_privacy::GridGaussianSum::new(1.0, 1.0, d).unwrap();
    let (sum, expected_batch) = (vec![0.25f32; d], 8.0);
    let noise = secure.draw_sum_noise(&mut rng).unwrap();
    assert!(noise.iter().all(|z| z.fract() == 0.0));
    let out = secure
        .release_clipped_sum_with(sum, expected_batch, Some(noise), &mut rng)
        .unwrap();
    for x in out {
        let units = f64::from(x) * expected_batch / grid.step();
        assert!((units - units.round()).abs() < 1e-3, "{units}");
    }
    // A long gradient's noise is drawn ahead on a thread: every release still on the grid,
    // each with noise of its own.
    let d = 5000;
    let secure = dp.build_for(d, 1, NoiseMode::Secure).unwrap();
    let grid = privrl_privacy::GridGaussianSum::new(1.0, 1.0, d).unwrap();
    let releases: Vec<Vec<f32>> = (0..3)
        .map(|_| {
            let noise = secure.draw_sum_noise(&mut rng).unwrap();
            secure
                .release_clipped_sum_with(vec![0.0; d], 1.0, Some(noise), &mut rng)
                .unwrap()
        })
        .collect();
    for release in &releases {
        for &x in release {
            let units = f64::from(x) / grid.step();
            assert!((units - units.round()).abs() < 0.05, "{units}");
        }
    }
    assert_ne!(releases[0], releases[1]);
    assert_ne!(releases[1], releases[2]);
}
