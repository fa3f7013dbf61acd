//! Privacy-preserving kickstarting (paper 000): φ_λ and its gradient on hand-made cases, the
//! teacher's ledger and budget, and the k → ∞ limit of the privacy-aware student.

use std::sync::{Arc, Mutex};

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Tensor, TensorData};
use privrl_agents::losses::privacy_aware_penalty;
use privrl_agents::{
    Agent, AgentError, AuxiliaryPolicyLoss, DirichletRelease, ExhaustedTeacher, MlpConfig, Ppo,
    PpoConfig, PrivacyAwareConfig, PrivacyAwareKickstarting, PrivateTeacher, PrivateTeacherConfig,
    Teacher,
};
use privrl_privacy::{Mechanism, SimplexMap};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray<f64>>;

fn matrix(rows: usize, cols: usize, values: &[f64]) -> Tensor<B, 2> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [rows, cols]),
        &Default::default(),
    )
}

fn vector(values: &[f64]) -> Tensor<B, 1> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [values.len()]),
        &Default::default(),
    )
}

fn host<Bk: burn::tensor::backend::Backend, const D: usize>(t: Tensor<Bk, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

#[test]
fn penalty_and_gradient_inside_and_outside_the_ball() {
    privrl_agents::autodiff::exclusive(|| {
        // Row 0: π_θ = (0.5, 0.5), π^t = (0.8, 0.2): d = (−0.3, 0.3), ‖d‖ = 0.3√2 ≈ 0.42426.
        // Row 1: π_θ = (0.6, 0.4), π^t = (0.5, 0.5): d = (0.1, −0.1), ‖d‖ = 0.1√2 ≈ 0.14142.
        // α = 0.2 for both rows: row 0 is outside the ball, row 1 inside.
        // E[φ] = (0.42426 + 0)/2 = 0.21213; ∂/∂π_θ row 0 = d/‖d‖/2 = (−1/√2, 1/√2)/2, row 1 = 0.
        let probs = matrix(2, 2, &[0.5, 0.5, 0.6, 0.4]).require_grad();
        let teacher = matrix(2, 2, &[0.8, 0.2, 0.5, 0.5]);
        let loss = privacy_aware_penalty(
            probs.clone(),
            teacher.clone(),
            vector(&[0.2, 0.2]),
            vector(&[1.0, 1.0]),
        );
        let value = host(loss.clone())[0];
        assert!((value - 0.3 * 2f64.sqrt() / 2.0).abs() < 1e-6, "{value}");
        let grads = loss.backward();
        let g = host(probs.grad(&grads).unwrap());
        let h = 0.5 / 2f64.sqrt();
        for (got, want) in g.iter().zip([-h, h, 0.0, 0.0]) {
            assert!((got - want).abs() < 1e-6, "{g:?}");
        }
        // α = 0.1: both rows outside, E[φ] = (0.3√2 + 0.1√2)/2 = 0.2√2.
        let loss = privacy_aware_penalty(
            probs.clone(),
            teacher.clone(),
            vector(&[0.1, 0.1]),
            vector(&[1.0, 1.0]),
        );
        assert!((host(loss)[0] - 0.2 * 2f64.sqrt()).abs() < 1e-6);
        // α = 0.5: both inside: no penalty and no gradient.
        let loss = privacy_aware_penalty(
            probs.clone(),
            teacher.clone(),
            vector(&[0.5, 0.5]),
            vector(&[1.0, 1.0]),
        );
        assert_eq!(host(loss.clone())[0], 0.0);
        let g = host(probs.grad(&loss.backward()).unwrap());
        assert!(g.iter().all(|&v| v == 0.0), "{g:?}");
        // Weight 0 drops a row; a perfect match at α = 0 gives 0 and a finite gradient.
        let loss = privacy_aware_penalty(
            probs.clone(),
            teacher,
            vector(&[0.0, 0.0]),
            vector(&[0.0, 1.0]),
        );
        assert!((host(loss)[0] - 0.1 * 2f64.sqrt() / 2.0).abs() < 1e-6);
        let same = matrix(1, 2, &[0.3, 0.7]).require_grad();
        let loss = privacy_aware_penalty(
            same.clone(),
            matrix(1, 2, &[0.3, 0.7]),
            vector(&[0.0]),
            vector(&[1.0]),
        );
        let g = host(same.grad(&loss.backward()).unwrap());
        assert!(g.iter().all(|v| v.is_finite()), "{g:?}");
    });
}

#[test]
fn penalty_gradient_matches_finite_differences() {
    privrl_agents::autodiff::exclusive(|| {
        let p = [0.2, 0.5, 0.3, 0.6, 0.1, 0.3];
        let t = [0.7, 0.2, 0.1, 0.5, 0.2, 0.3];
        let radius = [0.1, 0.1];
        let f = |p: &[f64]| {
            host(privacy_aware_penalty(
                matrix(2, 3, p),
                matrix(2, 3, &t),
                vector(&radius),
                vector(&[1.0, 1.0]),
            ))[0]
        };
        let probs = matrix(2, 3, &p).require_grad();
        let loss = privacy_aware_penalty(
            probs.clone(),
            matrix(2, 3, &t),
            vector(&radius),
            vector(&[1.0, 1.0]),
        );
        let g = host(probs.grad(&loss.backward()).unwrap());
        // The backend computes in f32 in places, so a larger step; f is smooth off the ball's edge.
        let h = 1e-3;
        for i in 0..6 {
            let (mut up, mut down) = (p, p);
            up[i] += h;
            down[i] -= h;
            let numeric = (f(&up) - f(&down)) / (2.0 * h);
            assert!((numeric - g[i]).abs() < 1e-4, "{i}: {numeric} vs {}", g[i]);
        }
    });
}

fn teacher() -> Teacher {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let actor = MlpConfig::new(4, vec![8, 8], 2).init::<NdArray>(&Default::default(), &mut rng);
    Teacher::from_actor(&actor).unwrap()
}

/// Over three epochs, k is 5·0.5^epoch after each and the teacher has seen three trajectories.
fn assert_k_halves_every_epoch(private: &Mutex<PrivateTeacher>, ppo: &mut Ppo<B>) {
    for epoch in 0..3 {
        ppo.train_epoch().unwrap();
        let k = PrivateTeacher::lock(private).concentration();
        assert_eq!(k, 5.0 * 0.5f64.powi(epoch));
    }
    let summary = PrivateTeacher::lock(private).summary().unwrap();
    assert_eq!(summary.trajectories, 3);
}

/// A privacy-aware PPO student of `teacher()` released through a private teacher with
/// `config` and k₀ = 5 on CartPole: `steps` per epoch, one hidden layer of `hidden` units and
/// `iters` policy and value iterations, seeded by `seed`.
fn kickstarted_student(
    config: PrivateTeacherConfig,
    steps: usize,
    hidden: usize,
    iters: usize,
    seed: u64,
) -> (Arc<Mutex<PrivateTeacher>>, Ppo<B>) {
    let private = Arc::new(Mutex::new(
        PrivateTeacher::new(teacher(), config, 5).unwrap(),
    ));
    let mut ppo = Ppo::<B>::new(
        PpoConfig::new()
            .with_steps_per_epoch(steps)
            .with_hidden(vec![hidden])
            .with_train_pi_iters(iters)
            .with_train_v_iters(iters),
        privrl_envs::make("CartPole-v1").unwrap(),
        &Default::default(),
        seed,
    )
    .unwrap();
    ppo.set_auxiliary_loss(Box::new(
        PrivacyAwareKickstarting::new(private.clone(), PrivacyAwareConfig::new()).unwrap(),
    ));
    (private, ppo)
}

fn states(n: usize) -> Vec<Vec<f32>> {
    (0..n)
        .map(|i| {
            (0..4)
                .map(|j| ((i * 7 + j * 3) % 11) as f32 / 11.0 - 0.5)
                .collect()
        })
        .collect()
}

#[test]
fn ledger_totals_are_the_sums_of_the_releases_and_k_vanishes_per_trajectory() {
    let config = PrivateTeacherConfig::new().with_vanishing_coefficient(0.5);
    let mut private = PrivateTeacher::new(teacher(), config, 3).unwrap();
    assert!(private.lipschitz() > 0.0);
    let mut expected_k = Vec::new();
    for (i, s) in states(60).iter().enumerate() {
        if i % 10 == 0 {
            private.start_trajectory();
        }
        let d = private.demonstrate(s).unwrap().unwrap();
        assert!((d.policy.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        expected_k.push(d.concentration);
    }
    // k₀ = 5 in the first trajectory, then halved at the start of each of the next five.
    for (i, k) in expected_k.iter().enumerate() {
        assert_eq!(*k, 5.0 * 0.5f64.powi((i / 10) as i32), "state {i}");
    }
    let ledger = private.ledger();
    assert_eq!(ledger.len(), 60);
    let (eps, delta) = ledger
        .entries()
        .iter()
        .fold((0.0, 0.0), |(e, d), x| (e + x.epsilon, d + x.delta));
    let basic = ledger.spent_basic();
    assert!((basic.epsilon - eps).abs() < 1e-9 * eps && (basic.delta - delta).abs() < 1e-9);
    assert!((private.spent_basic().epsilon - eps).abs() < 1e-9 * eps);
    // Per-release values are Theorem 1's at that k: ten identical entries per trajectory.
    let entries = ledger.entries().to_vec();
    let first = private.release_cost(5.0).unwrap().unwrap();
    let ledger = private.ledger();
    assert_eq!(entries[0].epsilon, first.epsilon);
    assert_eq!(ledger.entries()[9].delta, first.delta);
    let summary = private.summary().unwrap();
    assert_eq!(summary.dirichlet_releases, 60);
    assert!(summary.advanced.epsilon <= summary.basic.epsilon);
}

#[test]
fn the_teacher_never_releases_once_the_budget_is_spent() {
    let probe = PrivateTeacher::new(teacher(), PrivateTeacherConfig::new(), 0)
        .unwrap()
        .release_cost(5.0)
        .unwrap()
        .unwrap();
    for exhausted in [ExhaustedTeacher::Uniform, ExhaustedTeacher::Stop] {
        // Room for three releases and a half.
        let config = PrivateTeacherConfig::new()
            .with_budget_epsilon(Some(3.5 * probe.epsilon))
            .with_exhausted(exhausted);
        let mut private = PrivateTeacher::new(teacher(), config, 1).unwrap();
        private.start_trajectory();
        let answers: Vec<_> = states(20)
            .iter()
            .map(|s| private.demonstrate(s).unwrap())
            .collect();
        let dirichlet = private
            .ledger()
            .entries()
            .iter()
            .filter(|e| e.mechanism == "dirichlet")
            .count();
        assert_eq!(dirichlet, 3, "{exhausted:?}");
        assert!(private.spent_basic().epsilon <= 3.5 * probe.epsilon);
        assert!(private.is_exhausted());
        for a in &answers[3..] {
            match exhausted {
                ExhaustedTeacher::Uniform => assert_eq!(a.as_ref().unwrap().concentration, 0.0),
                ExhaustedTeacher::Stop => assert!(a.is_none()),
            }
        }
        // A new trajectory does not reopen the budget.
        private.start_trajectory();
        private.demonstrate(&states(1)[0]).unwrap();
        assert_eq!(private.spent_basic(), private.ledger().spent_basic());
        // After the three Dirichlet releases: 18 uniform ones at (0, 0), or nothing at all
        // (a stopped teacher records no release and withholds the 18 answers).
        let after = &private.ledger().entries()[3..];
        let summary = private.summary().unwrap();
        match exhausted {
            ExhaustedTeacher::Uniform => {
                assert_eq!(after.len(), 18);
                assert!(after
                    .iter()
                    .all(|e| e.mechanism == "uniform" && e.epsilon == 0.0 && e.delta == 0.0));
                assert_eq!((summary.uniform_releases, summary.withheld), (18, 0));
            }
            ExhaustedTeacher::Stop => {
                assert!(after.is_empty());
                assert_eq!((summary.uniform_releases, summary.withheld), (0, 18));
            }
        }
    }
    // The floor: k = 5·0.01 < 0.1 in the second trajectory.
    let config = PrivateTeacherConfig::new()
        .with_vanishing_coefficient(0.01)
        .with_concentration_floor(0.1);
    let mut private = PrivateTeacher::new(teacher(), config, 1).unwrap();
    private.start_trajectory();
    assert_eq!(
        private
            .demonstrate(&states(1)[0])
            .unwrap()
            .unwrap()
            .concentration,
        5.0
    );
    private.start_trajectory();
    assert_eq!(
        private
            .demonstrate(&states(1)[0])
            .unwrap()
            .unwrap()
            .concentration,
        0.0
    );
    // Bad parameters are refused by name.
    let err = PrivateTeacher::new(
        teacher(),
        PrivateTeacherConfig::new().with_vanishing_coefficient(1.5),
        0,
    )
    .unwrap_err();
    assert!(err.to_string().contains("vanishing_coefficient"), "{err}");
    assert!(PrivacyAwareConfig::new().with_beta(1.0).validate().is_err());
}

/// The student's penalty on a CartPole batch with the given teacher config and λ.
fn penalty_on_batch(teacher_config: PrivateTeacherConfig, lambda: f64) -> (f64, Vec<f64>) {
    privrl_agents::autodiff::exclusive(|| {
        let device = Default::default();
        let private = Arc::new(Mutex::new(
            PrivateTeacher::new(teacher(), teacher_config, 5).unwrap(),
        ));
        let mut loss =
            PrivacyAwareKickstarting::new(private, PrivacyAwareConfig::new().with_lambda(lambda))
                .unwrap();
        let mut ppo = Ppo::<B>::new(
            PpoConfig::new()
                .with_steps_per_epoch(64)
                .with_hidden(vec![4]),
            privrl_envs::make("CartPole-v1").unwrap(),
            &device,
            2,
        )
        .unwrap();
        // Observe the same states the student would see.
        let batch = ppo.collect_rollout().unwrap();
        for (i, s) in batch.obs.chunks(batch.obs_len).enumerate() {
            AuxiliaryPolicyLoss::<B>::observe(&mut loss, s, i == 0).unwrap();
        }
        AuxiliaryPolicyLoss::<B>::prepare(&mut loss, &batch.obs, batch.obs_len).unwrap();
        let probs_host: Vec<f64> = (0..batch.len())
            .flat_map(|i| [0.3 + 0.001 * i as f64, 0.7 - 0.001 * i as f64])
            .collect();
        let probs = matrix(batch.len(), 2, &probs_host).require_grad();
        let obs = matrix(
            batch.len(),
            4,
            &batch.obs.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        );
        let value = AuxiliaryPolicyLoss::<B>::loss(&mut loss, &obs, probs.clone());
        let grad = host(probs.grad(&value.clone().backward()).unwrap());
        (host(value)[0], grad)
    })
}

#[test]
fn with_k_to_infinity_the_privacy_aware_student_is_conventional_kickstarting() {
    let (conventional, g0) =
        penalty_on_batch(PrivateTeacherConfig::new().with_mechanism(false), 0.0);
    assert!(conventional > 0.01);
    let huge_k = PrivateTeacherConfig::new()
        .with_initial_concentration(1e12)
        .with_eta(1e-6)
        .with_tau(1e-7);
    for lambda in [0.5, 2.0] {
        let (aware, g) = penalty_on_batch(huge_k.clone(), lambda);
        assert!(
            (aware - conventional).abs() < 1e-4,
            "λ = {lambda}: {aware} vs {conventional}"
        );
        for (a, b) in g.iter().zip(&g0) {
            assert!((a - b).abs() < 1e-3, "λ = {lambda}: gradient {a} vs {b}");
        }
    }
    // At k = 5 a privacy-aware student ignores more of the (noisier) demonstrations than at
    // k → ∞: a positive α_λ = λ√(log 20 / 12) ≈ 0.5·0.50 switches some rows off.
    let (at5, _) = penalty_on_batch(PrivateTeacherConfig::new(), 0.5);
    let (unaware5, _) = penalty_on_batch(PrivateTeacherConfig::new(), 0.0);
    assert!(at5 < unaware5, "{at5} vs {unaware5}");
}

#[test]
fn a_kickstarted_ppo_epoch_records_its_releases() {
    let (private, mut ppo) = kickstarted_student(
        PrivateTeacherConfig::new().with_vanishing_coefficient(0.9),
        200,
        8,
        3,
        4,
    );
    let stats = ppo.train_epoch().unwrap();
    let penalty = stats
        .extra
        .iter()
        .find(|(n, _)| *n == "kickstart_penalty")
        .unwrap()
        .1;
    assert!(penalty.is_finite() && penalty > 0.0);
    let teacher = PrivateTeacher::lock(&private);
    assert_eq!(teacher.ledger().len(), 200);
    let episodes = ppo.episode_log().episodes() as u64;
    let summary = teacher.summary().unwrap();
    // One trajectory per finished episode, plus the one in progress.
    assert_eq!(summary.trajectories, episodes + 1);
    let expected = 5.0 * 0.9f64.powi(episodes as i32);
    assert!((summary.concentration - expected).abs() < 1e-12 * expected);
}

#[test]
fn per_rollout_vanishing_multiplies_k_once_per_epoch() {
    let config = PrivateTeacherConfig::new()
        .with_vanishing_coefficient(0.5)
        .with_vanishing_unit(privrl_agents::VanishingUnit::Rollout);
    let (private, mut ppo) = kickstarted_student(config, 100, 8, 2, 4);
    assert_k_halves_every_epoch(&private, &mut ppo);
}

/// (observation, trajectory start) of every `observe` call.
type Observed = Vec<(Vec<f32>, bool)>;

/// Records every `observe` call.
#[derive(Default)]
struct Recorder(Arc<Mutex<Observed>>);

impl AuxiliaryPolicyLoss<B> for Recorder {
    fn observe(&mut self, obs: &[f32], trajectory_start: bool) -> Result<(), AgentError> {
        self.0
            .lock()
            .unwrap()
            .push((obs.to_vec(), trajectory_start));
        Ok(())
    }

    fn loss(&mut self, _observations: &Tensor<B, 2>, probabilities: Tensor<B, 2>) -> Tensor<B, 1> {
        probabilities.sum() * 0.0
    }
}

/// Three 4-step epochs on CartPole (no episode can end within 4 steps of a reset: the pole
/// needs more than 4 steps of 0.02 s to leave ±12°).
fn starts_over_three_epochs(reset_at_epoch_end: bool) -> (Observed, usize) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut ppo = Ppo::<B>::new(
        PpoConfig::new()
            .with_steps_per_epoch(4)
            .with_hidden(vec![4])
            .with_train_pi_iters(1)
            .with_train_v_iters(1)
            .with_reset_at_epoch_end(reset_at_epoch_end),
        privrl_envs::make("CartPole-v1").unwrap(),
        &Default::default(),
        9,
    )
    .unwrap();
    ppo.set_auxiliary_loss(Box::new(Recorder(seen.clone())));
    for _ in 0..3 {
        ppo.train_epoch().unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    (seen, ppo.episode_log().episodes())
}

#[test]
fn spinning_up_ends_the_trajectory_at_every_epoch_boundary() {
    let (seen, episodes) = starts_over_three_epochs(true);
    assert_eq!(seen.len(), 12);
    for (i, (obs, start)) in seen.iter().enumerate() {
        // A trajectory starts at each epoch's first step, from a fresh reset (CartPole draws
        // every state variable in ±0.05), and nowhere else.
        assert_eq!(*start, i % 4 == 0, "step {i}");
        if i % 4 == 0 {
            assert!(obs.iter().all(|v| v.abs() <= 0.05), "step {i}: {obs:?}");
        }
    }
    // The cut trajectories are not episodes.
    assert_eq!(episodes, 0);
    // Without the reset the first episode runs on through the epochs.
    let (carried, _) = starts_over_three_epochs(false);
    // (This seed's first episode ends after 9 steps, mid-epoch: the next starts at step 9.)
    let starts: Vec<usize> = (0..12).filter(|&i| carried[i].1).collect();
    assert_eq!(starts, vec![0, 9]);
    // Same seed, same first epoch; then one resets and the other carries on.
    assert_eq!(carried[..4], seen[..4]);
    assert_ne!(carried[4].0, seen[4].0);
}

#[test]
fn per_trajectory_vanishing_multiplies_k_at_every_epoch_boundary() {
    // With Spinning Up's reset every epoch starts a trajectory, so k vanishes once per epoch
    // even when no episode ends (4-step epochs).
    let (private, mut ppo) = kickstarted_student(
        PrivateTeacherConfig::new().with_vanishing_coefficient(0.5),
        4,
        4,
        1,
        9,
    );
    assert_k_halves_every_epoch(&private, &mut ppo);
}

/// The student's prepared weights and its penalty on a 64-step CartPole batch whose teacher
/// is exhausted from the second trajectory on (k₀ = 5, then 5·0.001 below the floor 0.1).
fn exhausted_batch(ignore_uninformative: bool) -> (Vec<f32>, f64) {
    privrl_agents::autodiff::exclusive(|| {
        let private = Arc::new(Mutex::new(
            PrivateTeacher::new(
                teacher(),
                PrivateTeacherConfig::new()
                    .with_vanishing_coefficient(0.001)
                    .with_concentration_floor(0.1),
                5,
            )
            .unwrap(),
        ));
        let config = PrivacyAwareConfig::new().with_ignore_uninformative(ignore_uninformative);
        let mut loss = PrivacyAwareKickstarting::new(private, config).unwrap();
        let obs: Vec<f32> = states(64).concat();
        for (i, s) in obs.chunks(4).enumerate() {
            AuxiliaryPolicyLoss::<B>::observe(&mut loss, s, i % 8 == 0).unwrap();
        }
        AuxiliaryPolicyLoss::<B>::prepare(&mut loss, &obs, 4).unwrap();
        let weights = loss.prepared().2.to_vec();
        let probs = matrix(64, 2, &[0.9, 0.1].repeat(64));
        let value = AuxiliaryPolicyLoss::<B>::loss(&mut loss, &matrix(64, 4, &[0.0; 256]), probs);
        (weights, host(value)[0])
    })
}

#[test]
fn uniform_releases_do_not_pull_the_student_by_default() {
    // Trajectory 1 (8 states) is released through Dir_5; trajectories 2–8 (56 states) are
    // uniformly random policies.
    let (weights, penalty) = exhausted_batch(true);
    assert_eq!(&weights[..8], &[1.0; 8]);
    assert_eq!(&weights[8..], &[0.0; 56]);
    // The literal eq. 16 at k → 0⁺: α_λ ≈ 0.61·0.5 < ‖(0.9, 0.1) − u‖ for most uniform draws, so
    // those rows pull the student towards random policies.
    let (weights, literal) = exhausted_batch(false);
    assert!(weights.iter().all(|&w| w == 1.0));
    assert!(literal > penalty + 0.05, "{literal} vs {penalty}");
    // φ on the first trajectory alone: the default's value is 8/64 of the Dir_5 rows' mean.
    assert!(penalty >= 0.0 && penalty < 8.0 / 64.0 * 2f64.sqrt());
}

#[test]
fn the_euclidean_projection_keeps_policies_in_the_restricted_simplex_and_l() {
    let mix = PrivateTeacher::new(teacher(), PrivateTeacherConfig::new().with_eta(0.2), 0).unwrap();
    let projection = PrivateTeacher::new(
        teacher(),
        PrivateTeacherConfig::new()
            .with_eta(0.2)
            .with_simplex_map(SimplexMap::EuclideanProjection),
        0,
    )
    .unwrap();
    let l = teacher().lipschitz().upper_bound;
    assert!((mix.lipschitz() - 0.6 * l).abs() < 1e-12 * l);
    assert_eq!(projection.lipschitz(), l);
    // At k → ∞ the release is the mapped policy: the projection leaves a policy inside
    // Δ_{2,0.2} where it is, the mix moves it to 0.6π + 0.2.
    let huge = |map| {
        PrivateTeacher::new(
            teacher(),
            PrivateTeacherConfig::new()
                .with_eta(0.2)
                .with_tau(1e-9)
                .with_initial_concentration(1e9)
                .with_simplex_map(map),
            0,
        )
        .unwrap()
    };
    let (mut mix, mut projection) = (
        huge(SimplexMap::MixWithUniform),
        huge(SimplexMap::EuclideanProjection),
    );
    let mut inside = 0;
    for s in states(30) {
        let pi = teacher().policy(&s);
        let (m, p) = (
            mix.demonstrate(&s).unwrap().unwrap().policy,
            projection.demonstrate(&s).unwrap().unwrap().policy,
        );
        assert!((m[0] - (0.6 * pi[0] + 0.2)).abs() < 1e-3, "{m:?} {pi:?}");
        let projected = pi[0].clamp(0.2, 0.8);
        assert!((p[0] - projected).abs() < 1e-3, "{p:?} {pi:?}");
        inside += usize::from(pi[0] > 0.2 && pi[0] < 0.8);
    }
    assert!(inside > 0);
}

#[test]
fn calibrated_tau_keeps_delta_at_k0_for_six_actions() {
    // m = 6, η = 0.4/6: the m = 2 τ = 0.0127 gives δ ≈ 0.95 at k₀ = 5 (vacuous); the
    // calibrated τ gives the teacher δ ≤ 0.05 at k₀ with its own accounting.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let actor = MlpConfig::new(4, vec![8], 6).init::<NdArray>(&Default::default(), &mut rng);
    let six = Teacher::from_actor(&actor).unwrap();
    let base = PrivateTeacherConfig::new()
        .with_eta(0.4 / 6.0)
        .with_tau(0.0127)
        .with_delta_samples(4000);
    let weak = PrivateTeacher::new(six.clone(), base.clone(), 0)
        .unwrap()
        .summary()
        .unwrap()
        .initial_release;
    assert!(weak.is_none_or(|c| c.delta > 0.9), "{weak:?}");
    let tau = base.calibrated_tau(6, 0.05).unwrap();
    let cost = PrivateTeacher::new(six, base.with_tau(tau), 0)
        .unwrap()
        .summary()
        .unwrap()
        .initial_release
        .unwrap();
    assert!(
        cost.delta <= 0.05 && cost.delta > 0.03,
        "{cost:?} at τ = {tau}"
    );
    assert!(cost.epsilon.is_finite() && cost.epsilon > 0.0);
}

/// A two-action teacher releasing through the grid variant with n = 1000, τ = 0.0127, η = 0.2,
/// k₀ = 5 halved at every trajectory: six trajectories of ten states, and its demonstrations.
fn grid_teacher(seed: u64) -> (PrivateTeacher, Vec<Vec<f64>>) {
    let config = PrivateTeacherConfig::new()
        .with_vanishing_coefficient(0.5)
        .with_eta(0.2)
        .with_tau(0.0127)
        .with_release(DirichletRelease::Grid { points: 1000 });
    let mut private = PrivateTeacher::new(teacher(), config, seed).unwrap();
    let mut released = Vec::new();
    for (i, s) in states(60).iter().enumerate() {
        if i % 10 == 0 {
            private.start_trajectory();
        }
        let d = private.demonstrate(s).unwrap().unwrap();
        assert_eq!(d.concentration, 5.0 * 0.5f64.powi((i / 10) as i32));
        released.push(d.policy);
    }
    (private, released)
}

#[test]
fn the_grid_release_outputs_grid_points_of_the_restricted_simplex_and_composes_its_epsilon() {
    let (private, released) = grid_teacher(3);
    // Every release is (j/1000, 1 − j/1000) with 13 ≤ j ≤ 987 (j/1000 ∈ [τ, 1 − τ]).
    for policy in &released {
        assert_eq!(policy.len(), 2);
        let j = (policy[0] * 1000.0).round();
        assert_eq!(policy[0], j / 1000.0, "{policy:?} is not a grid point");
        assert_eq!(policy[1], 1.0 - policy[0]);
        assert!((13.0..=987.0).contains(&j), "{policy:?} outside Δ_(2,τ)");
    }
    // Not one point: the releases depend on the draws.
    assert!(released.iter().any(|p| p != &released[0]));
    // Each release costs the grid mechanism's own (ε, 0) at its k. By hand: ε = 2kΔG with
    // Δ = min(L·b/√2, 1 − 2η) and G = ln(0.987/0.013), the largest |logit| on the grid; the
    // rounding terms (8k·2⁻⁵², 4μ ≈ 1e-11) are below 1e-9 relatively.
    let config = private.config();
    let shift = (private.lipschitz() * config.adjacency / 2f64.sqrt()).min(1.0 - 2.0 * config.eta);
    let logit = (0.987f64 / 0.013).ln();
    let theorem1 = PrivateTeacherConfig::new()
        .with_eta(0.2)
        .with_tau(0.0127)
        .release_cost(2, private.teacher().lipschitz().upper_bound, 5.0)
        .unwrap()
        .unwrap();
    let mut total = 0.0;
    for (i, entry) in private.ledger().entries().iter().enumerate() {
        let k = 5.0 * 0.5f64.powi((i / 10) as i32);
        let grid = config
            .dirichlet_privacy(2, private.teacher().lipschitz().upper_bound)
            .unwrap()
            .with_concentration(k)
            .unwrap()
            .grid_mechanism(1000)
            .unwrap()
            .cost();
        assert_eq!(entry.mechanism, "dirichlet-grid");
        assert_eq!(
            (entry.epsilon, entry.delta),
            (grid.epsilon, 0.0),
            "release {i}"
        );
        let by_hand = 2.0 * k * shift * logit;
        // The simplex check's tolerance on η widens 1 − 2η by up to 4e-6 relatively.
        assert!(
            (entry.epsilon - by_hand).abs() <= 1e-5 * by_hand,
            "release {i}: {} against 2kΔG = {by_hand}",
            entry.epsilon
        );
        total += entry.epsilon;
    }
    // Not Theorem 1's figure (which has δ > 0).
    assert!(theorem1.delta > 0.0 && theorem1.epsilon != private.ledger().entries()[0].epsilon);
    // Basic composition: 10 releases at each k = 5·2⁻ᵗ, t = 0..5, so Σε = 10·ε(5)·(2 − 2⁻⁵)
    // up to the rounding terms; δ stays 0, and advanced composition never exceeds basic.
    let summary = private.summary().unwrap();
    assert_eq!(summary.dirichlet_releases, 60);
    assert_eq!(summary.basic.delta, 0.0);
    assert!((summary.basic.epsilon - total).abs() <= 1e-12 * total);
    let first = private.ledger().entries()[0].epsilon;
    assert!((summary.basic.epsilon - 10.0 * first * (2.0 - 0.5f64.powi(5))).abs() <= 1e-9 * total);
    assert_eq!(summary.initial_release.unwrap().epsilon, first);
    assert!(summary.advanced.epsilon <= summary.basic.epsilon);
}

#[test]
fn a_seeded_grid_teacher_is_reproducible() {
    let (a, first) = grid_teacher(11);
    let (b, again) = grid_teacher(11);
    assert_eq!(first, again);
    assert_eq!(a.ledger(), b.ledger());
    let (_, other) = grid_teacher(12);
    assert_ne!(first, other, "another seed draws other grid points");
}

#[test]
fn the_grid_release_refuses_three_actions_and_a_grid_out_of_range() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let actor = MlpConfig::new(4, vec![8], 3).init::<NdArray>(&Default::default(), &mut rng);
    let three = Teacher::from_actor(&actor).unwrap();
    let grid = |points| {
        PrivateTeacherConfig::new()
            .with_eta(0.1)
            .with_release(DirichletRelease::Grid { points })
    };
    let named = |result: Result<PrivateTeacher, AgentError>| match result {
        Err(AgentError::InvalidParameter { name, .. }) => name,
        other => panic!("expected a named error, got {other:?}"),
    };
    assert_eq!(
        named(PrivateTeacher::new(three.clone(), grid(1000), 0)),
        "release"
    );
    // The real-valued release of the same teacher is accepted.
    assert!(PrivateTeacher::new(three, grid(1000).with_release(DirichletRelease::Real), 0).is_ok());
    assert_eq!(
        named(PrivateTeacher::new(teacher(), grid(1), 0)),
        "release.points"
    );
    assert_eq!(
        named(PrivateTeacher::new(
            teacher(),
            grid(privrl_agents::MAX_GRID_POINTS + 1),
            0
        )),
        "release.points"
    );
    // A grid with no point in [τ, 1 − τ] is refused by the mechanism, by name, at construction.
    let coarse = PrivateTeacher::new(teacher(), grid(3).with_tau(0.4), 0);
    assert!(
        matches!(
            coarse,
            Err(AgentError::Privacy(
                privrl_privacy::PrivacyError::OutOfRange { name: "grid", .. }
            ))
        ),
        "{coarse:?}"
    );
}

/// A kickstarted student like [`kickstarted_student`] whose epochs start from seeded resets
/// (`reseed_at_epoch_end`, or not), its teacher seeded by `teacher_seed`.
fn resumable_student(reseed: bool, seed: u64, teacher_seed: u64) -> Ppo<B> {
    let private = Arc::new(Mutex::new(
        PrivateTeacher::new(
            teacher(),
            PrivateTeacherConfig::new().with_vanishing_coefficient(0.9),
            teacher_seed,
        )
        .unwrap(),
    ));
    let mut ppo = Ppo::<B>::new(
        PpoConfig::new()
            .with_steps_per_epoch(150)
            .with_hidden(vec![8])
            .with_train_pi_iters(3)
            .with_train_v_iters(3)
            .with_reseed_at_epoch_end(reseed),
        privrl_envs::make("CartPole-v1").unwrap(),
        &Default::default(),
        seed,
    )
    .unwrap();
    ppo.set_auxiliary_loss(Box::new(
        PrivacyAwareKickstarting::new(private, PrivacyAwareConfig::new()).unwrap(),
    ));
    ppo
}

/// Every file of a checkpoint directory, by name.
fn checkpoint_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Three epochs in one go, and two epochs, a checkpoint and one more epoch in an agent built
/// from other seeds: with `reseed_at_epoch_end` the two give the same checkpoint byte for byte
/// (networks, optimisers, generator, episode log, and the teacher's k, ledger and noise
/// stream). Without it the resumed agent's environment does not start where the first one's
/// stood, and the runs part: the check can fail.
#[test]
fn a_kickstarted_student_resumed_from_an_epoch_checkpoint_continues_bit_for_bit() {
    let root = std::env::temp_dir().join(format!("privrl-kick-resume-{}", std::process::id()));
    let resumed_equals_straight = |reseed: bool| {
        let dir = root.join(format!("reseed-{reseed}"));
        let mut straight = resumable_student(reseed, 3, 5);
        for _ in 0..3 {
            straight.train_epoch().unwrap();
        }
        straight.save_checkpoint(&dir.join("straight")).unwrap();

        let mut first = resumable_student(reseed, 3, 5);
        for _ in 0..2 {
            first.train_epoch().unwrap();
        }
        first.save_checkpoint(&dir.join("two")).unwrap();
        let mut resumed = resumable_student(reseed, 11, 13);
        resumed.load_checkpoint(&dir.join("two")).unwrap();
        resumed.train_epoch().unwrap();
        resumed.save_checkpoint(&dir.join("resumed")).unwrap();
        let straight = checkpoint_files(&dir.join("straight"));
        assert!(straight.iter().any(|(n, _)| n == "private_teacher.json"));
        straight == checkpoint_files(&dir.join("resumed"))
    };
    assert!(resumed_equals_straight(true));
    assert!(!resumed_equals_straight(false));
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn reseeding_at_epoch_end_needs_the_epoch_end_reset() {
    let config = PpoConfig::new()
        .with_reset_at_epoch_end(false)
        .with_reseed_at_epoch_end(true);
    assert!(matches!(
        config.validate(),
        Err(AgentError::InvalidParameter {
            name: "reseed_at_epoch_end",
            ..
        })
    ));
}
