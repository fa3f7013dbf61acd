//! PGC-A3C: the non-private PGC path against plain A3C updates (SGD and Adam), the mechanisms' shapes and
//! bounds, idempotent application and checkpoint resume, and a short threaded run.

use std::time::Duration;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::pgc::{flatten_parameters, initial_parameters, run_pgc, AggregatorState};
use privrl_agents::{
    A3c, A3cConfig, Aggregator, InProcess, OptimizerKind, Parameters, PgcAgent, PgcConfig,
    Submission, Transport,
};
use privrl_envs::{CartPoleConfig, Env};
use privrl_privacy::{Epsilon, GradientMechanismConfig, GradientPrivacy, PrivacyCost};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray>;

const D: usize = 112;

#[test]
fn pgc_network_has_the_papers_dimension() {
    let theta = initial_parameters::<B>(&PgcConfig::new(), 0, &Default::default()).unwrap();
    // θ^(c) ∈ R^{16×4}, θ^(p) ∈ R^{2×16}, θ^(v) ∈ R^{1×16}: 64 + 32 + 16.
    assert_eq!(theta.len(), D);
}

/// With the identity mechanism, submitting through PGC (agent → transport → aggregator,
/// eq. 22 on the host) moves θ exactly as `A3c::gradient` + `A3c::submit` (Burn's SGD).
#[test]
fn non_private_pgc_path_equals_plain_a3c_updates() {
    assert_pgc_path_equals_a3c(OptimizerKind::Sgd, 0.05, 1e-6);
}

/// The aggregator's flat Adam moves θ as Burn's Adam does in `A3c::submit`.
#[test]
fn aggregator_adam_equals_burns_adam() {
    assert_pgc_path_equals_a3c(OptimizerKind::Adam, 0.01, 1e-5);
}

fn assert_pgc_path_equals_a3c(optimizer: OptimizerKind, lr: f64, tolerance: f32) {
    let device = Default::default();
    let a3c_config = A3cConfig::pgc_paper()
        .with_workers(1)
        .with_lr(lr)
        .with_optimizer(optimizer)
        .with_buffer_size(2);
    let mut a3c = A3c::<B>::new(
        a3c_config.clone(),
        Box::new(|_| {
            CartPoleConfig::v0()
                .with_gravity(9.8)
                .build()
                .map(|env| Box::new(env) as Box<dyn Env>)
        }),
        &device,
        3,
    )
    .unwrap();
    let config = PgcConfig::new()
        .with_a3c(a3c_config)
        .with_mechanism(GradientMechanismConfig::None);
    let mut aggregator = Aggregator::new(&config, flatten_parameters(&a3c.model())).unwrap();
    let mut agent = PgcAgent::<B>::new(&config, "agent", 7, &device).unwrap();
    let transport = InProcess::new();
    let mut updates = 0;
    for _ in 0..6 {
        let parameters = aggregator.parameters();
        let (model, episode) = agent.play(&parameters).unwrap();
        let pgc_gradient = agent.gradient_of(&model, &episode).unwrap();
        let a3c_gradient = a3c.gradient(&episode).unwrap();
        for (p, a) in pgc_gradient.flatten().iter().zip(a3c_gradient.flatten()) {
            assert!((p - a).abs() <= 1e-5 * (1.0 + a.abs()), "{p} vs {a}");
        }
        if a3c.submit(a3c_gradient).unwrap() {
            updates += 1;
        }
        let submission = agent.release(&pgc_gradient, &parameters, 1.0).unwrap();
        transport.submit(&submission).unwrap();
        aggregator
            .poll(&transport, 10, Duration::from_millis(100))
            .unwrap();
        let expected = flatten_parameters(&a3c.model());
        let got = &aggregator.state().theta;
        for (e, g) in expected.iter().zip(got) {
            assert!((e - g).abs() <= tolerance * (1.0 + e.abs()), "{e} vs {g}");
        }
    }
    assert_eq!(updates, 3);
    assert_eq!(aggregator.state().version, 3);
    assert_eq!(aggregator.state().applied, 6);
}

fn gradient() -> Vec<f32> {
    (0..D).map(|i| 0.05 * (i as f32 * 0.7).sin()).collect()
}

fn cosine(a: &[f64], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, &y)| x * f64::from(y)).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|&y| f64::from(y).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// PGC's Laplace (C = 0.01) at ε, `None` for ∞.
fn laplace_at(epsilon: Option<f64>) -> GradientMechanismConfig {
    GradientMechanismConfig::laplace(Epsilon::try_from(epsilon).unwrap())
}

/// PGC's PRS (C = 1) at ε, `None` for ∞.
fn prs_at(epsilon: Option<f64>) -> GradientMechanismConfig {
    GradientMechanismConfig::prs(Epsilon::try_from(epsilon).unwrap())
}

#[test]
fn mechanism_outputs_have_the_right_shapes_and_bounds() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let g = gradient();
    let l1: f64 = g.iter().map(|&v| f64::from(v).abs()).sum();

    assert_eq!(
        GradientMechanismConfig::None
            .build(D, 1)
            .unwrap()
            .release(&g, &mut rng)
            .unwrap(),
        g
    );

    // Laplace, ε = ∞: eq. 19 only, ‖ḡ‖₁ = C/2 = 0.005 (‖g‖₁ > C/2), same direction.
    let clip_only = laplace_at(None).build(D, 1).unwrap();
    let clipped = clip_only.release(&g, &mut rng).unwrap();
    assert_eq!(clipped.len(), D);
    let clipped_l1: f64 = clipped.iter().map(|&v| f64::from(v).abs()).sum();
    assert!((clipped_l1 - 0.005).abs() < 1e-6, "{clipped_l1}");
    for (c, &x) in clipped.iter().zip(&g) {
        assert!((f64::from(*c) - f64::from(x) * 0.005 / l1).abs() < 1e-7);
    }

    // Laplace, ε = 2: ḡ + z with E|z_i| = C/ε = 0.005 and E z_i = 0 (Monte Carlo).
    let laplace = laplace_at(Some(2.0)).build(D, 1).unwrap();
    let draws = 500;
    let (mut abs_dev, mut dev) = (0.0, 0.0);
    for _ in 0..draws {
        let out = laplace.release(&g, &mut rng).unwrap();
        assert_eq!(out.len(), D);
        for (o, c) in out.iter().zip(&clipped) {
            abs_dev += f64::from(o - c).abs();
            dev += f64::from(o - c);
        }
    }
    let n = (draws * D) as f64;
    assert!((abs_dev / n - 0.005).abs() < 0.0002, "{}", abs_dev / n);
    assert!((dev / n).abs() < 0.0002, "{}", dev / n);
    // T = 4 rounds: ε/T each, so the scale is 4× larger.
    let per_round = laplace_at(Some(2.0)).build(D, 4).unwrap();
    assert_eq!(
        per_round.privacy(),
        GradientPrivacy::PerRelease(PrivacyCost::pure(0.5).unwrap())
    );

    // PRS, ε = 1 and 10: d̂ = max(1, ⌊ε/2.5⌋) = 1 and 4; Mᵀũ has entries in √3·C·{−d̂..d̂}.
    for (epsilon, reduced) in [(1.0, 1usize), (10.0, 4)] {
        let prs = prs_at(Some(epsilon)).build(D, 1).unwrap();
        assert!(prs.to_string().ends_with(&format!("d̂={reduced}")), "{prs}");
        for _ in 0..50 {
            let out = prs.release(&g, &mut rng).unwrap();
            assert_eq!(out.len(), D);
            for &v in &out {
                let units = f64::from(v) / 3f64.sqrt();
                assert!(units.abs() <= reduced as f64 + 1e-5, "{v}");
                assert!((units - units.round()).abs() < 1e-4, "{v}");
            }
        }
    }

    // PRS, ε = ∞: d̂ = d and the stochastic sign is unbiased, so the mean report points along
    // E(MᵀM) g = d·g.
    let sign = prs_at(None).build(D, 1).unwrap();
    let mut mean = vec![0.0f64; D];
    let draws = 400;
    for _ in 0..draws {
        let out = sign.release(&g, &mut rng).unwrap();
        assert_eq!(out.len(), D);
        for (m, &o) in mean.iter_mut().zip(&out) {
            *m += f64::from(o) / draws as f64;
        }
    }
    assert!(cosine(&mean, &g) > 0.9, "{}", cosine(&mean, &g));

    // Bad inputs: an error naming the problem, never a panic or NaN.
    assert!(laplace.release(&g[..10], &mut rng).is_err());
    let mut bad = g.clone();
    bad[3] = f32::NAN;
    assert!(sign.release(&bad, &mut rng).is_err());
    assert!(Epsilon::finite(-1.0).is_err() && Epsilon::finite(0.0).is_err());
    let no_clip = GradientMechanismConfig::Laplace {
        epsilon: Epsilon::INFINITE,
        clip: 0.0,
    };
    assert!(no_clip.build(D, 1).is_err());
    assert!(PgcConfig::paper(no_clip).validate().is_err());
}

fn submission(source: &str, seq: u64, value: f32) -> Submission {
    Submission {
        source: source.into(),
        seq,
        version: 0,
        score: 20.0,
        gradient: vec![value; D],
    }
}

#[test]
fn aggregator_applies_each_submission_once_and_resumes_from_its_checkpoint() {
    let dir = std::env::temp_dir().join(format!("privrl-pgc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let checkpoint = dir.join("aggregator.json");
    let _ = std::fs::remove_file(&checkpoint);
    let config = PgcConfig::new().with_a3c(A3cConfig::pgc_paper().with_lr(0.5).with_buffer_size(2));
    let transport = InProcess::new();
    let wait = Duration::from_millis(50);
    let mut aggregator = Aggregator::new(&config, vec![0.0; D])
        .unwrap()
        .with_checkpoint(&checkpoint)
        .unwrap();
    // a:1 and b:1 fill the buffer: θ = −0.5·(1 + 3)/2 = −1. a:1 again is a duplicate; a
    // gradient of the wrong length is refused.
    for s in [
        submission("a", 1, 1.0),
        submission("b", 1, 3.0),
        submission("a", 1, 1.0),
    ] {
        transport.submit(&s).unwrap();
    }
    let mut short = submission("c", 1, 1.0);
    short.gradient.pop();
    transport.submit(&short).unwrap();
    let applied = aggregator.poll(&transport, 10, wait).unwrap();
    assert_eq!(applied.len(), 2);
    let state = aggregator.state().clone();
    assert_eq!(state.theta, vec![-1.0; D]);
    assert_eq!((state.applied, state.version), (2, 1));
    assert_eq!((state.duplicates, state.rejected), (1, 1));

    // A restart from the checkpoint has the same state and still refuses a:1.
    let resumed = Aggregator::new(&config, vec![0.0; D])
        .unwrap()
        .with_checkpoint(&checkpoint)
        .unwrap();
    let saved: &AggregatorState = resumed.state();
    assert_eq!(saved, &state);
    let mut resumed = resumed;
    transport.submit(&submission("a", 1, 1.0)).unwrap();
    transport.submit(&submission("a", 2, 2.0)).unwrap();
    transport.submit(&submission("b", 2, 2.0)).unwrap();
    resumed.poll(&transport, 10, wait).unwrap();
    assert_eq!(resumed.state().applied, 4);
    assert_eq!(resumed.state().duplicates, 2);
    assert_eq!(resumed.state().theta, vec![-2.0; D]);
    let published: Parameters = transport.parameters().unwrap().unwrap();
    assert_eq!(published.version, 2);
    assert_eq!(published.values, vec![-2.0; D]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threaded_run_applies_what_the_agents_send() {
    let config = PgcConfig::paper(laplace_at(Some(1.0)))
        .with_max_submissions(40)
        .with_a3c(A3cConfig::pgc_paper().with_workers(3));
    let transport = InProcess::new();
    let mut scores = Vec::new();
    let outcome = run_pgc::<B>(&config, &transport, 5, &Default::default(), |a| {
        scores.push((a.n, a.score))
    })
    .unwrap();
    assert_eq!(outcome.applied, 40);
    assert!(outcome.sent >= 40);
    assert_eq!(scores.len(), 40);
    assert!(scores
        .iter()
        .enumerate()
        .all(|(i, &(n, _))| n == i as u64 + 1));
    // CartPole-v0 scores lie in [1, 200].
    assert!(scores.iter().all(|&(_, s)| (1.0..=200.0).contains(&s)));
    assert!(transport.is_closed().unwrap());
}
