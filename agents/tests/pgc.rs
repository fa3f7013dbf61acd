//! PGC-A3C: the non-private PGC path against plain A3C updates (SGD and Adam), the mechanisms' shapes and
//! bounds, idempotent application and checkpoint resume, and a short threaded run.

use std::time::Duration;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{
    first_success_time, flatten_parameters, initial_parameters, run_pgc, AggregatorState, Delivery,
    SubmissionOrder,
};
use privrl_agents::{
    A3c, A3cConfig, Aggregator, Exploration, ExplorationClock, ExplorationTime, GreedyAction,
    InProcess, LossReduction, OptimizerKind, Parameters, PgcAgent, PgcConfig, RewardScheme,
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

/// A source's submissions out of order within one buffer (a retry, a restarted agent): the
/// high-water mark is the larger seq, not the one applied last, so the gap below it stays
/// closed; a negative score is refused like a malformed gradient.
#[test]
fn aggregator_high_water_mark_is_maxed_not_overwritten() {
    let config = PgcConfig::new().with_a3c(A3cConfig::pgc_paper().with_lr(0.5).with_buffer_size(2));
    let transport = InProcess::new();
    let mut aggregator = Aggregator::new(&config, vec![0.0; D]).unwrap();
    transport.submit(&submission("a", 5, 1.0)).unwrap();
    transport.submit(&submission("a", 3, 1.0)).unwrap();
    let mut negative = submission("b", 1, 1.0);
    negative.score = -1.0;
    transport.submit(&negative).unwrap();
    transport.submit(&submission("a", 4, 1.0)).unwrap();
    let applied = aggregator
        .poll(&transport, 10, Duration::from_millis(50))
        .unwrap();
    assert_eq!(applied.len(), 2);
    let state = aggregator.state();
    assert_eq!(state.high_water["a"], 5);
    // a:4 is below the mark: a duplicate, not a third submission in B.
    assert_eq!((state.duplicates, state.rejected), (1, 1));
    assert_eq!(aggregator.buffered(), 0);
}

/// The aggregator's FST on a hand-made score log is eq. 26's: the first submission of the
/// first window of m whose mean reaches Θ (eq. 25 looks forward), whatever |B|.
#[test]
fn aggregator_first_success_time_follows_eq_26_on_a_hand_made_log() {
    // m = 10, Θ = 195. Windows: μ_1 … μ_5 hold a 20 (≤ (9·200 + 20)/10 = 182); μ_6 = ζ_6 … ζ_15
    // = 200 each except ζ_13 = 190: (9·200 + 190)/10 = 199 ≥ 195. FST = 6, reached when the
    // 15th submission completes the window (the old count said 15).
    let mut log = vec![200.0, 200.0, 200.0, 200.0, 20.0];
    log.extend([
        200.0, 200.0, 200.0, 200.0, 200.0, 200.0, 200.0, 190.0, 200.0, 200.0,
    ]);
    log.extend([10.0; 6]);
    assert_eq!(first_success_time(&log, 10, 195.0), Some(6));
    for buffer in [1, 3] {
        let config = PgcConfig::new().with_a3c(A3cConfig::pgc_paper().with_buffer_size(buffer));
        let transport = InProcess::new();
        let mut aggregator = Aggregator::new(&config, vec![0.0; D]).unwrap();
        for (i, &score) in log.iter().enumerate() {
            let mut s = submission("a", i as u64 + 1, 0.0);
            s.score = score;
            transport.submit(&s).unwrap();
        }
        let applied = aggregator
            .poll(&transport, log.len(), Duration::from_millis(50))
            .unwrap();
        assert_eq!(applied.len(), 21, "|B| = {buffer}");
        assert_eq!(aggregator.state().first_success, Some(6), "|B| = {buffer}");
        // The curve's 15th point is the mean of ζ_6 … ζ_15, i.e. μ_6.
        assert_eq!(applied[14].mean_score, 199.0);
    }
}

/// The cutoff counts model updates (Section 4.2: "90,000 updates"), not submissions: with
/// |B| = 3 a run cut at 4 updates applies exactly 12 submissions.
#[test]
fn run_cutoff_counts_updates_not_submissions() {
    let config = PgcConfig::paper(laplace_at(Some(1.0)))
        .with_max_updates(4)
        .with_stop_at_success(false)
        .with_a3c(A3cConfig::pgc_paper().with_workers(2).with_buffer_size(3));
    let outcome = run_pgc::<B>(&config, &InProcess::new(), 1, &Default::default(), |_| {}).unwrap();
    assert_eq!((outcome.updates, outcome.applied), (4, 12));
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

/// The in-process transport with one agent's submissions held back by `delay` each, and the
/// others by a little jitter: thread timing unlike an undisturbed run's.
struct Perturbed {
    inner: InProcess,
    slow: &'static str,
    delay: Duration,
}

impl Transport for Perturbed {
    fn publish(&self, p: &Parameters) -> Result<(), privrl_agents::PgcError> {
        self.inner.publish(p)
    }
    fn parameters(&self) -> Result<Option<Parameters>, privrl_agents::PgcError> {
        self.inner.parameters()
    }
    fn submit(&self, s: &Submission) -> Result<(), privrl_agents::PgcError> {
        if s.source == self.slow {
            std::thread::sleep(self.delay);
        } else if s.seq.is_multiple_of(3) {
            std::thread::sleep(Duration::from_micros(300));
        }
        self.inner.submit(s)
    }
    fn receive(
        &self,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Delivery>, privrl_agents::PgcError> {
        self.inner.receive(max, wait)
    }
    fn acknowledge(&self, tags: &[String]) -> Result<(), privrl_agents::PgcError> {
        self.inner.acknowledge(tags)
    }
    fn close(&self) -> Result<(), privrl_agents::PgcError> {
        self.inner.close()
    }
    fn is_closed(&self) -> Result<bool, privrl_agents::PgcError> {
        self.inner.is_closed()
    }
}

/// Round-robin order: the same seed gives the same θ, bit for bit, and the same applied
/// sequence when one agent is slowed down; agent i's k-th submission is the ((k−1)·W + i)-th
/// applied and was computed exactly W − 1 submissions stale (|B| = 1: version n − W). The
/// asynchronous order stays available and applies what it is asked to.
#[test]
fn round_robin_order_fixes_the_run_whatever_the_thread_timing() {
    const W: u64 = 3;
    for buffer in [1usize, 2] {
        let config = PgcConfig::paper(laplace_at(Some(5.0)))
            .with_max_submissions(48)
            .with_stop_at_success(false)
            .with_a3c(
                A3cConfig::pgc_paper()
                    .with_workers(W as usize)
                    .with_buffer_size(buffer),
            );
        assert_eq!(config.order, SubmissionOrder::RoundRobin);
        let run = |transport: &dyn Transport| {
            let mut log = Vec::new();
            let outcome = run_pgc::<B>(&config, transport, 11, &Default::default(), |a| {
                log.push((a.n, a.score, a.version, a.computed_at))
            })
            .unwrap();
            (outcome, log)
        };
        let (plain, plain_log) = run(&InProcess::new());
        let (slowed, slowed_log) = run(&Perturbed {
            inner: InProcess::new(),
            slow: "agent-1",
            delay: Duration::from_millis(4),
        });
        assert_eq!(plain.applied, 48);
        let bytes = |t: &[f32]| t.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(bytes(&plain.theta), bytes(&slowed.theta), "|B| = {buffer}");
        assert_eq!(plain_log, slowed_log, "|B| = {buffer}");
        assert!(plain.theta.len() == D && plain.theta.iter().all(|v| v.is_finite()));
        if buffer == 1 {
            for &(n, _, version, computed_at) in &plain_log {
                assert_eq!(version, n);
                assert_eq!(computed_at, n.saturating_sub(W), "submission {n}");
            }
        }
    }
    // The asynchronous order is still there (its θ depends on the timing, so only what it
    // applied is checked).
    let config = PgcConfig::paper(laplace_at(Some(5.0)))
        .with_max_submissions(30)
        .with_stop_at_success(false)
        .with_order(SubmissionOrder::Arrival)
        .with_a3c(A3cConfig::pgc_paper().with_workers(W as usize));
    let outcome =
        run_pgc::<B>(&config, &InProcess::new(), 11, &Default::default(), |_| {}).unwrap();
    assert_eq!((outcome.applied, outcome.updates), (30, 30));
}

// ---------------------------------------------------------------------------------------------
// The learner's factors (the ablation's options)
// ---------------------------------------------------------------------------------------------

/// θ = 0 published after `submissions` episodes of `env_steps` steps in all.
fn zero_parameters(bias: bool, submissions: u64, env_steps: u64) -> Parameters {
    let d = if bias { 131 } else { D };
    Parameters {
        version: 0,
        submissions,
        env_steps,
        values: vec![0.0; d],
    }
}

/// The sparse scheme of the Keras A3C CartPole example on hand-made episodes: 0 per step, −1
/// on the failing step, +1 on the step that reaches the cap, which ends the episode like a
/// terminal state; Gymnasium's +1 per step bootstraps only a cut episode.
#[test]
fn reward_schemes_on_hand_made_episodes() {
    use privrl_agents::losses::value_targets;
    let steps = |scheme: RewardScheme, flags: &[(bool, bool)]| -> (Vec<f32>, bool) {
        let mut bootstrap = false;
        let rewards = flags
            .iter()
            .map(|&(terminated, truncated)| {
                let (r, b) = scheme.reward(1.0, terminated, truncated);
                bootstrap = b;
                r
            })
            .collect();
        (rewards, bootstrap)
    };
    let failed = [(false, false), (false, false), (true, false)];
    let capped = [(false, false), (false, false), (false, true)];
    let both = [(false, false), (true, true)];
    assert_eq!(
        steps(RewardScheme::Sparse, &failed),
        (vec![0.0, 0.0, -1.0], false)
    );
    assert_eq!(
        steps(RewardScheme::Sparse, &capped),
        (vec![0.0, 0.0, 1.0], false)
    );
    assert_eq!(steps(RewardScheme::Sparse, &both), (vec![0.0, 1.0], false));
    assert_eq!(
        steps(RewardScheme::Gymnasium, &failed),
        (vec![1.0, 1.0, 1.0], false)
    );
    assert_eq!(
        steps(RewardScheme::Gymnasium, &capped),
        (vec![1.0, 1.0, 1.0], true)
    );
    // V̂ at γ = 0.5 for the failed episode: −0.25, −0.5, −1 (eq. 18 with V(s_T) = 0).
    assert_eq!(
        value_targets(&[0.0, 0.0, -1.0], 0.0, 0.5),
        vec![-0.25, -0.5, -1.0]
    );

    // An agent under the sparse scheme: argmax at θ = 0 pushes one way and fails well before
    // the cap; its rewards are 0 … 0, −1 and its score is still the number of steps.
    let config = PgcConfig::paper(laplace_at(None))
        .with_a3c(A3cConfig::pgc_paper().with_reward(RewardScheme::Sparse));
    let mut agent = PgcAgent::<B>::new(&config, "a", 3, &Default::default()).unwrap();
    let (_, episode) = agent.play(&zero_parameters(false, 10_000, 0)).unwrap();
    let t = episode.rewards.len();
    assert!((2..200).contains(&t), "{t} steps");
    assert_eq!(episode.rewards[t - 1], -1.0);
    assert!(episode.rewards[..t - 1].iter().all(|&r| r == 0.0));
    assert_eq!(episode.bootstrap_value, 0.0);
}

/// The mean loss is the sum divided by the episode's T, so its gradient is 1/T of the sum's,
/// entry by entry.
#[test]
fn mean_loss_gradient_is_the_sum_gradient_over_t() {
    let device = Default::default();
    let sum_config = PgcConfig::paper(laplace_at(None));
    let mean_config = PgcConfig::paper(laplace_at(None))
        .with_a3c(A3cConfig::pgc_paper().with_loss_reduction(LossReduction::Mean));
    let theta = initial_parameters::<B>(&sum_config, 4, &device).unwrap();
    let parameters = Parameters {
        version: 0,
        submissions: 0,
        env_steps: 0,
        values: theta,
    };
    let mut agent = PgcAgent::<B>::new(&sum_config, "a", 5, &device).unwrap();
    let (model, episode) = agent.play(&parameters).unwrap();
    let t = episode.rewards.len() as f32;
    assert!(t > 1.0);
    let sum = agent.gradient_of(&model, &episode).unwrap().flatten();
    let mean_agent = PgcAgent::<B>::new(&mean_config, "b", 5, &device).unwrap();
    let mean = mean_agent.gradient_of(&model, &episode).unwrap().flatten();
    let scale = sum.iter().map(|g| g.abs()).fold(0.0f32, f32::max);
    assert!(scale > 0.0);
    for (s, m) in sum.iter().zip(&mean) {
        assert!((s / t - m).abs() <= 1e-5 * scale, "{s} / {t} vs {m}");
    }
}

/// α on the two clocks: on submissions it stays put within an episode; on environment steps
/// it starts from the steps already played (the aggregator publishes the sum of the scores
/// it received) and falls step by step.
#[test]
fn exploration_clocks_by_hand() {
    let greedy = |clock| Exploration::EpsilonGreedy {
        start: 0.5,
        decay: 1800.0,
        clock,
        greedy: GreedyAction::Argmax,
    };
    let time = ExplorationTime {
        submissions: 90,
        env_steps: 450,
    };
    let by_submissions = greedy(ExplorationClock::Submissions);
    let by_steps = greedy(ExplorationClock::EnvSteps);
    assert_eq!(by_submissions.epsilon_at(time, 0), 0.45);
    assert_eq!(by_submissions.epsilon_at(time, 100), 0.45);
    assert_eq!(by_steps.epsilon_at(time, 0), 0.25);
    assert_eq!(by_steps.epsilon_at(time, 90), 0.2);
    assert_eq!(by_steps.epsilon_at(time, 900), 0.0);

    // The aggregator's clock: 3 submissions with scores 12, 30 and 7 (|B| = 2: one applied
    // pair and one buffered) put the env-steps clock at 49.
    let config = PgcConfig::new().with_a3c(A3cConfig::pgc_paper().with_buffer_size(2));
    let transport = InProcess::new();
    let mut aggregator = Aggregator::new(&config, vec![0.0; D]).unwrap();
    for (seq, score) in [(1, 12.0), (2, 30.0), (3, 7.0)] {
        let mut s = submission("a", seq, 0.0);
        s.score = score;
        transport.submit(&s).unwrap();
    }
    aggregator
        .poll(&transport, 3, Duration::from_millis(50))
        .unwrap();
    let published = transport.parameters().unwrap().unwrap();
    assert_eq!((published.submissions, published.env_steps), (3, 49));
    assert_eq!(aggregator.state().env_steps, 42);
}

/// Once α = 0, argmax at θ = 0 (a uniform π) always takes the first action, while sampling
/// from π takes both.
#[test]
fn sampled_and_argmax_actions_differ_where_pi_is_uniform() {
    let actions = |greedy: GreedyAction| -> Vec<usize> {
        let mut a3c = A3cConfig::pgc_paper();
        if let Exploration::EpsilonGreedy {
            start,
            decay,
            clock,
            ..
        } = a3c.exploration
        {
            a3c.exploration = Exploration::EpsilonGreedy {
                start,
                decay,
                clock,
                greedy,
            };
        }
        let config = PgcConfig::paper(laplace_at(None)).with_a3c(a3c);
        let mut agent = PgcAgent::<B>::new(&config, "a", 7, &Default::default()).unwrap();
        // 900 submissions in: α = 0.
        let (_, episode) = agent.play(&zero_parameters(false, 900, 0)).unwrap();
        episode.actions
    };
    let argmax = actions(GreedyAction::Argmax);
    assert!(argmax.iter().all(|&a| a == argmax[0]), "{argmax:?}");
    let sampled = actions(GreedyAction::Sample);
    assert!(sampled.contains(&0) && sampled.contains(&1), "{sampled:?}");
}
