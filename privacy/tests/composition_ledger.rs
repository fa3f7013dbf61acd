//! Composition theorems, the accountants and the ledger.

use privrl_privacy::{
    advanced_composition, basic_composition, drv_advanced_composition, Accountant,
    AdvancedAccountant, BasicAccountant, Budget, Composition, LaplaceConfig, Ledger, Mechanism,
    PrivacyCost, PrivacyError,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn cost(epsilon: f64, delta: f64) -> PrivacyCost {
    PrivacyCost::new(epsilon, delta).unwrap()
}

#[test]
fn basic_by_hand() {
    let c = basic_composition(&[cost(0.5, 1e-6), cost(1.0, 0.0), cost(0.25, 2e-6)]);
    assert_eq!(c.epsilon, 1.75);
    assert!((c.delta - 3e-6).abs() < 1e-18);
    assert_eq!(basic_composition(&[]), PrivacyCost::FREE);
}

#[test]
fn drv_by_hand() {
    // k = 100 releases of (0.1, 1e-6), δ' = 1e-5:
    //   √(2·100·ln 1e5)·0.1 = √(200·11.5129255)·0.1 = 47.9852591·0.1 = 4.7985259
    //   100·0.1·(e^0.1 − 1) = 10·0.1051709 = 1.0517092
    //   ε = 5.8502351, δ = 100·1e-6 + 1e-5 = 1.1e-4.
    let c = drv_advanced_composition(cost(0.1, 1e-6), 100, 1e-5).unwrap();
    assert!((c.epsilon - 5.850_235_1).abs() < 1e-6, "{}", c.epsilon);
    assert!((c.delta - 1.1e-4).abs() < 1e-15);
    assert_eq!(
        drv_advanced_composition(cost(3.0, 0.0), 0, 1e-5).unwrap(),
        PrivacyCost::FREE
    );
}

#[test]
fn kairouz_by_hand() {
    // Homogeneous: 100 × ε = 0.1, δ' = 1e-5. D = Σ ε tanh(ε/2) = 10·tanh(0.05) = 0.4995837;
    // third term D + √(2·Σε²·ln 1e5) = 0.4995837 + √(2·1·11.5129255) = 0.4995837 + 4.7985259
    // = 5.2981097 < DRV's 5.8502351 < Σε = 10.
    let releases = vec![cost(0.1, 0.0); 100];
    let c = advanced_composition(&releases, 1e-5).unwrap();
    assert!((c.epsilon - 5.298_109_7).abs() < 1e-6, "{}", c.epsilon);
    assert!((c.delta - 1e-5).abs() < 1e-15);
    // Heterogeneous: 100 × 0.1, 300 × 0.02, 10 × 0.5, each δ = 1e-8, δ' = 1e-6.
    //   Σε = 21, Σε² = 1 + 0.12 + 2.5 = 3.62,
    //   D = 10·tanh(0.05) + 6·tanh(0.01) + 5·tanh(0.25) = 0.4995837 + 0.0599980 + 1.2245933
    //     = 1.7841751,
    //   D + √(2·3.62·ln 1e6) = 1.7841751 + √(7.24·13.8155106) = 1.7841751 + 10.0012147
    //     = 11.7853898,
    //   δ = 1 − (1 − 1e-6)(1 − 1e-8)^410 = 5.0999875e-6.
    let mut het = vec![cost(0.1, 1e-8); 100];
    het.extend(vec![cost(0.02, 1e-8); 300]);
    het.extend(vec![cost(0.5, 1e-8); 10]);
    let c = advanced_composition(&het, 1e-6).unwrap();
    assert!((c.epsilon - 11.785_389_8).abs() < 1e-6, "{}", c.epsilon);
    assert!((c.delta - 5.099_987_5e-6).abs() < 1e-12, "{}", c.delta);
    // Few large releases: the basic sum is the minimum.
    let c = advanced_composition(&[cost(1.0, 0.0), cost(2.0, 0.0)], 1e-6).unwrap();
    assert_eq!(c.epsilon, 3.0);
    assert!(advanced_composition(&releases, 0.0).is_err());
}

#[test]
fn accountants_agree_with_functions() {
    let mut basic = BasicAccountant::new();
    let mut advanced = AdvancedAccountant::new(1e-5).unwrap();
    for _ in 0..100 {
        basic.record(cost(0.1, 0.0));
        advanced.record(cost(0.1, 0.0));
    }
    assert!((basic.spent().unwrap().epsilon - 10.0).abs() < 1e-12);
    assert!((advanced.spent().unwrap().epsilon - 5.298_109_7).abs() < 1e-6);
    let accountants: Vec<&dyn Accountant> = vec![&basic, &advanced];
    assert_eq!(
        accountants.iter().map(|a| a.name()).collect::<Vec<_>>(),
        ["basic", "advanced"]
    );
}

#[test]
fn ledger_records_and_checks_budgets() {
    let mut ledger = Ledger::new();
    let mech = LaplaceConfig {
        epsilon: 1.0,
        clip: 0.01,
        rounds: 4,
        dimension: 3,
    }
    .build()
    .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for _ in 0..3 {
        ledger.release(&mech, &[0.1, 0.2, 0.3], &mut rng).unwrap();
    }
    ledger
        .record(
            "dp_sgd",
            vec![("noise_multiplier".to_string(), 1.1)],
            cost(2.0, 1e-5),
        )
        .unwrap();
    assert_eq!(ledger.len(), 4);
    assert_eq!(ledger.entries()[0].mechanism, "laplace");
    assert_eq!(ledger.entries()[0].parameters["rounds"], 4.0);
    let spent = ledger.spent_basic();
    assert!((spent.epsilon - 2.75).abs() < 1e-12 && spent.delta == 1e-5);
    assert_eq!(ledger.spent(Composition::Basic).unwrap(), spent);
    assert!(ledger.spent_advanced(1e-6).unwrap().delta > 1e-5);

    // Budget (3, 1e-4): one more ε = 0.25 fits (3.0), two more do not.
    let budget = Budget::new(3.0, 1e-4).unwrap();
    assert!(ledger
        .can_afford(mech.cost(), budget, Composition::Basic)
        .unwrap());
    ledger
        .release_within(&mech, &[0.0; 3], budget, Composition::Basic, &mut rng)
        .unwrap();
    assert!(!ledger
        .can_afford(mech.cost(), budget, Composition::Basic)
        .unwrap());
    assert!(matches!(
        ledger.release_within(&mech, &[0.0; 3], budget, Composition::Basic, &mut rng),
        Err(PrivacyError::Unreachable { .. })
    ));
    assert_eq!(ledger.len(), 5);
    // A failed release is not recorded.
    assert!(ledger.release(&mech, &[0.0; 2], &mut rng).is_err());
    assert_eq!(ledger.len(), 5);

    // JSON round trip.
    let json = serde_json::to_string(&ledger).unwrap();
    let back: Ledger = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ledger);
    assert!(json.contains("\"mechanism\":\"dp_sgd\""));

    assert!(Budget::new(-1.0, 0.0).is_err());
    assert!(Budget::new(1.0, 1.0).is_err());
    assert!(ledger
        .record(
            "x",
            vec![],
            PrivacyCost {
                epsilon: f64::NAN,
                delta: 0.0
            }
        )
        .is_err());
}

/// A checkpoint stores the ledger as runs of equal consecutive entries: the runs are the
/// hand-counted ones, and reading them back gives the same ledger, entry for entry.
#[test]
fn ledger_runs_round_trip_and_refuse_bad_costs() {
    let mut ledger = Ledger::new();
    let k = |k: f64| vec![("concentration".to_string(), k)];
    for (k0, eps, n) in [(5.0, 0.5, 3), (2.5, 0.25, 1), (5.0, 0.5, 2)] {
        for _ in 0..n {
            ledger.record("dirichlet", k(k0), cost(eps, 1e-7)).unwrap();
        }
    }
    let runs = ledger.runs();
    let counts: Vec<u64> = runs.iter().map(|r| r.count).collect();
    assert_eq!(counts, [3, 1, 2]);
    assert_eq!(runs[1].entry.parameters["concentration"], 2.5);
    let back = Ledger::from_runs(runs.clone()).unwrap();
    assert_eq!(back, ledger);
    assert_eq!(back.spent_basic(), ledger.spent_basic());
    assert_eq!(Ledger::from_runs(Vec::new()).unwrap(), Ledger::new());

    let mut bad = runs;
    bad[0].entry.epsilon = -1.0;
    assert!(Ledger::from_runs(bad).is_err());
}
