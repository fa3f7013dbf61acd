//! The closed loop (`suite dp-ppo --leakage`): RGI against the update PPO releases, without a
//! defence and under DP-PPO at every ε of the frontier, on the same room samples as
//! `suite leakage` and `suite inversion`.
//!
//! **Threat model.** White box, as in the leakage suite: the adversary knows both networks,
//! the loss and the DP-PPO configuration (C, σ, qN), and sees the update released by one
//! step. It is DP's own adversary: it knows every other episode of the minibatch (so it
//! subtracts their clipped gradients), and the attacked episode was sampled into the step
//! (the attack is conditioned on inclusion, which happens with probability q). What remains
//! is one episode's clipped gradient plus the step's noise: DP-PPO releases
//! (Σ_i clip_C(g_i) + N(0, σ_Δ²C²I)) / qN ([`DpPpo`](privrl_agents::DpPpo)), so the attacker,
//! who knows qN, rescales the release by qN and faces clip_C(g) + N(0, σ_Δ²C²I). The release is
//! the [`PrivacyEngine`]'s own (`private_gradient`, a fresh engine per sample: the first step
//! of the first epoch, at the initial C), with σ calibrated by the engine to the point's ε
//! per episode at the frontier's (q, K) ([`super::suite_config`]); σ_Δ is the part of σ the
//! engine gives the gradient (adaptive clipping keeps the rest for its count).
//!
//! **The episode.** A room sample (state, action, reward r) is an episode of one step that
//! ends in a terminal state. GAE-λ of that episode ([`DpPpo`](privrl_agents::DpPpo)'s
//! `Episode::finish`) gives the advantage A = r − V(s) and the return target R̂ = r. PPO's
//! first minibatch step of the first epoch has ratio 1, so the episode's loss gradient is
//! −A ∇log π(a|s) − c₂ ∇H(π(·|s)) for the actor and c₁ ∇(V(s) − R̂)² for the critic
//! (Schulman et al. 2017, eq. 9): the actor block is RGI's REINFORCE gradient with the return
//! replaced by the advantage. A longer episode's gradient sums its steps' gradients, which an
//! attack would have to separate as a batch.
//!
//! **The attack.** RGI (two stages, action by eq. 8, the advantage by eq. 9: the attacker does
//! **not** know A, it recovers it) on the actor block of the released gradient, as the
//! leakage suite attacks REINFORCE. The critic block, which also carries the state and R̂, is
//! not used: the table bounds what the release leaks from below. Under noise the matching
//! drops its magnitude term (eq. 5 alone), as against the leakage suite's noisy defences.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::dp::{GivenGradients, ParamLayout};
use privrl_agents::losses::{clipped_surrogate, value_loss};
use privrl_agents::tensor::{float_options, matrix, one_hot, vector};
use privrl_agents::{
    autodiff, Categorical, DpPpoConfig, GradientRecord, MultimodalNet, PrivacyEngine, PrivacyTally,
    PrivacyUnit,
};
use privrl_attacks::{
    attack, score_reconstruction, ImageNormalisation, InversionRow, Outer, Sample, Victim,
    VictimKind,
};
use privrl_envs::room::RoomSetting;
use privrl_privacy::NoiseMode;
use serde::{Deserialize, Serialize};

use super::{Point, DELTA};
use crate::backend::BackendTask;
use crate::suites::inversion::{
    flat_scores, recovered, room_samples, victim_config, BaselineScores, Method, RoomSelection,
    VictimWidth, RECOVERY_MARGIN_DB,
};
use crate::unit::Unit;

/// Control of the criterion: without a defence (plain PPO's gradient) the attack recovers an
/// image (RGB or depth at least [`RECOVERY_MARGIN_DB`] above the flat oracle) on at least this
/// fraction of the samples; otherwise the loop shows nothing. Fixed before any run.
pub(crate) const CONTROL_RECOVERED_FRACTION: f64 = 0.5;
/// Protection: at every frontier ε ≤ [`PROTECTED_EPSILON`] per episode the attack recovers an
/// image on at most this fraction of the samples. Fixed before any run.
pub(crate) const PROTECTED_RECOVERED_FRACTION: f64 = 0.1;
/// ... and its action accuracy is at most chance (1/|A|) plus this. Fixed before any run.
pub(crate) const PROTECTED_ACTION_MARGIN: f64 = 0.25;
/// The ε per episode up to which the criterion asks for protection.
pub(crate) const PROTECTED_EPSILON: f64 = 1.0;

/// What the attacker faces: plain PPO's gradient, or DP-PPO's release at a frontier point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Release {
    /// Plain PPO: the episode's loss gradient itself (no clipping, no noise).
    Plain,
    /// DP-PPO's release at this frontier point (ε = ∞: σ = 0, clipping kept).
    Private(Point),
}

impl Release {
    fn slug(self) -> String {
        match self {
            Release::Plain => "plain-ppo".into(),
            Release::Private(point) => format!("dp-ppo-{}", point.slug()),
        }
    }

    fn label(self) -> String {
        match self {
            Release::Plain => "plain PPO (no defence)".into(),
            Release::Private(point) => format!("DP-PPO, target ε = {}", point.label()),
        }
    }
}

/// The closed loop's sizes, the leakage suite's (full: 40 samples, 32 px, 1000 iterations per
/// stage, TV 0.1; `--quick`: 20, 16 px, 300, TV 0.01), and the (q, K) that σ is calibrated at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct LeakageSizes {
    /// Room samples attacked.
    pub(crate) samples: usize,
    /// Image side in pixels.
    pub(crate) image_size: usize,
    /// Attack iterations per stage.
    pub(crate) iterations: usize,
    /// TV weight of stage 2.
    pub(crate) tv_weight: f64,
    /// q of the DP-PPO configuration whose σ the releases use.
    pub(crate) sample_rate: f64,
    /// K, its steps per rollout.
    pub(crate) steps_per_rollout: u64,
}

impl LeakageSizes {
    /// The leakage suite's sizes, quick or full, at the (q, K) of `config` (the frontier's
    /// default, also under `--quick`).
    pub(crate) fn of(quick: bool, config: &DpPpoConfig) -> Self {
        let (samples, image_size, iterations, tv_weight) = if quick {
            (20, 16, 300, 0.01)
        } else {
            (40, 32, 1000, 0.1)
        };
        Self {
            samples,
            image_size,
            iterations,
            tv_weight,
            sample_rate: config.sample_rate(),
            steps_per_rollout: config.steps_per_rollout(),
        }
    }
}

/// One finished closed-loop unit: one release × attack seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LeakageUnit {
    /// Whether the release is DP-PPO's (false: plain PPO's gradient).
    pub(crate) private: bool,
    /// DP-PPO's target ε per episode (`None`: ∞, or plain PPO). Not an `Option<Option<_>>`,
    /// whose `Some(None)` JSON cannot tell from `None`.
    pub(crate) target_epsilon: Option<f64>,
    /// Seed of the samples, the networks, the attack and the noise.
    pub(crate) seed: u64,
    /// The commit the unit ran at.
    pub(crate) commit: Option<String>,
    /// Sizes.
    pub(crate) sizes: LeakageSizes,
    /// Actions of the policy (chance accuracy is 1/this).
    pub(crate) num_actions: usize,
    /// σ calibrated by the engine (DP-PPO only).
    pub(crate) noise_multiplier: Option<f64>,
    /// σ_Δ, the gradient's share of σ (DP-PPO only).
    pub(crate) gradient_noise_multiplier: Option<f64>,
    /// C of the attacked (first) step (DP-PPO only).
    pub(crate) clip: Option<f64>,
    /// qN, the expected minibatch the release is divided by (DP-PPO only).
    pub(crate) expected_batch: Option<f64>,
    /// ε per episode of the engine's K steps at (q, σ), δ = 1e-5 (DP-PPO with σ > 0 only).
    pub(crate) epsilon_per_episode: Option<f64>,
    /// Per sample: the true advantage A = r − V(s).
    pub(crate) advantages: Vec<f64>,
    /// Per sample: the unclipped norm of the episode's joint (actor and critic) gradient.
    pub(crate) gradient_norms: Vec<f64>,
    /// Per sample: the attack's scores (`reward_abs_error` is |A_rec − A|).
    pub(crate) rows: Vec<InversionRow>,
    /// Per sample: the flat-at-the-true-mean oracle's scores.
    pub(crate) flat: Vec<BaselineScores>,
    /// Wall-clock seconds.
    pub(crate) wall_s: f64,
}

impl LeakageUnit {
    fn release(&self) -> Release {
        if self.private {
            Release::Private(Point(self.target_epsilon))
        } else {
            Release::Plain
        }
    }

    /// Samples with an image (RGB or depth) recovered: PSNR ≥ flat oracle + margin.
    pub(crate) fn recovered_images(&self) -> usize {
        let either: std::collections::BTreeSet<usize> = [false, true]
            .into_iter()
            .flat_map(|depth| {
                self.rows
                    .iter()
                    .filter(|r| recovered(std::slice::from_ref(r), &self.flat, depth) == 1)
                    .map(|r| r.sample)
                    .collect::<Vec<_>>()
            })
            .collect();
        either.len()
    }

    /// Fraction of the samples whose action was recovered.
    pub(crate) fn action_accuracy(&self) -> f64 {
        self.rows.iter().filter(|r| r.action_correct).count() as f64 / self.rows.len().max(1) as f64
    }
}

impl Unit for LeakageUnit {
    type Setting = Release;
    fn path(root: &Path, setting: &Release, seed: u64) -> PathBuf {
        root.join(format!("{}-seed{seed}", setting.slug()))
            .join("summary.json")
    }
}

/// Actor and critic as one module, in the order [`DpPpo`](privrl_agents::DpPpo) releases
/// them: the layout of the joint gradient the engine clips and noises.
#[derive(Module, Debug)]
pub(crate) struct PpoNets<B: Backend> {
    actor: MultimodalNet<B>,
    critic: MultimodalNet<B>,
}

/// The PPO learner on room observations: the actor as an RGI victim (a REINFORCE victim whose
/// return is the advantage, entropy weight c₂) and a critic of the same architecture with one
/// output, both freshly initialised, as the inversion suites' victims.
pub(crate) struct PpoVictim<B: Backend> {
    actor: Victim<B>,
    nets: PpoNets<Outer<B>>,
    value_coef: f64,
    entropy_coef: f64,
    clip_ratio: f64,
    device: B::Device,
}

impl<B: Backend> PpoVictim<B> {
    pub(crate) fn new(
        image_size: usize,
        config: &DpPpoConfig,
        seed: u64,
        device: &B::Device,
    ) -> Result<Self> {
        let net = victim_config(RoomSetting::S1, image_size, VictimWidth::Wide);
        let actor = Victim::<B>::from_seed(
            &net,
            VictimKind::Reinforce {
                entropy_weight: config.entropy_coef,
            },
            seed,
            device,
        )?;
        let mut critic_net = net.clone();
        critic_net.d_output = 1;
        let critic =
            Victim::<B>::from_seed(&critic_net, VictimKind::Dqn, seed ^ 0xc417_1c00, device)?;
        let nets = PpoNets {
            actor: actor.net().clone(),
            critic: critic.net().clone(),
        };
        Ok(Self {
            actor,
            nets,
            value_coef: config.value_coef,
            entropy_coef: config.entropy_coef,
            clip_ratio: config.clip_ratio,
            device: device.clone(),
        })
    }

    pub(crate) fn num_actions(&self) -> usize {
        self.actor.num_actions()
    }

    /// The state of `sample` as `[1, …]` tensors (RGB, depth, vector).
    fn state<BB: Backend<Device = B::Device>>(
        &self,
        sample: &Sample,
    ) -> (Option<Tensor<BB, 4>>, Option<Tensor<BB, 4>>, Tensor<BB, 2>) {
        let image = |values: &Option<Vec<f32>>, channels: usize| {
            values.as_ref().map(|v| {
                let side = ((v.len() / channels) as f64).sqrt().round() as usize;
                Tensor::<BB, 4>::from_data(
                    TensorData::new(v.clone(), [1, channels, side, side])
                        .convert::<BB::FloatElem>(),
                    float_options::<BB>(&self.device),
                )
            })
        };
        (
            image(&sample.rgb, 3),
            image(&sample.depth, 1),
            matrix::<BB>(&sample.vector, sample.vector.len(), &self.device),
        )
    }

    /// V(s) of the critic.
    fn value(&self, sample: &Sample) -> f64 {
        autodiff::exclusive(|| {
            let (rgb, depth, vec) = self.state::<Outer<B>>(sample);
            let v = self.nets.critic.forward(rgb, depth, vec).into_data();
            f64::from(v.convert::<f32>().into_vec::<f32>().expect("float")[0])
        })
    }

    /// The one-step episode's advantage A = r − V(s) (terminal: no bootstrap), with R̂ = r.
    pub(crate) fn advantage(&self, sample: &Sample) -> f64 {
        sample.signal - self.value(sample)
    }

    /// The sample as the actor's RGI victim sees it: its signal is the advantage.
    pub(crate) fn actor_sample(&self, sample: &Sample) -> Sample {
        Sample {
            signal: self.advantage(sample),
            ..sample.clone()
        }
    }

    /// The gradient of the one-step episode's PPO loss at ratio 1 (eq. 9 as DP-PPO sums it:
    /// −min(r A, clip(r, 1 ± ε) A) + c₁ (V(s) − R̂)² − c₂ H), through the agents' own
    /// [`clipped_surrogate`] and [`value_loss`], with respect to actor and critic jointly
    /// (names `actor.*`, `critic.*`, in [`PpoNets`]' layout).
    pub(crate) fn ppo_gradient(&self, sample: &Sample) -> Result<GradientRecord> {
        let advantage = self.advantage(sample) as f32;
        let ret = sample.signal as f32;
        autodiff::exclusive(|| {
            let (rgb, depth, vec) = self.state::<Outer<B>>(sample);
            let logits = self
                .nets
                .actor
                .forward(rgb.clone(), depth.clone(), vec.clone());
            let values = self.nets.critic.forward(rgb, depth, vec).reshape([1]);
            let actions = one_hot::<Outer<B>>(&[sample.action], self.num_actions(), &self.device);
            let pi = Categorical::from_logits(logits.clone());
            // π_old = π_θ at the first step of the first epoch: ratio 1.
            let log_probs_old = pi.log_prob(actions.clone()).detach();
            let surrogate = clipped_surrogate(
                logits,
                actions,
                vector::<Outer<B>>(&[advantage], &self.device),
                log_probs_old,
                self.clip_ratio,
            );
            let loss = surrogate.loss
                + value_loss(values, vector::<Outer<B>>(&[ret], &self.device)) * self.value_coef
                - pi.entropy() * self.entropy_coef;
            Ok(GradientRecord::from_grads(
                &self.nets,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// What the attacker sees of `sample`'s episode, rescaled by qN, as the actor's record:
    /// the loss gradient itself (`engine` `None`, plain PPO), or the engine's release of it as
    /// the only episode of a step (clip to C, N(0, σ_Δ²C²I), ÷ qN) times qN.
    pub(crate) fn released_actor_gradient(
        &self,
        sample: &Sample,
        engine: Option<&mut PrivacyEngine>,
    ) -> Result<GradientRecord> {
        let joint = self.ppo_gradient(sample)?;
        let released = match engine {
            None => joint,
            Some(engine) => {
                let layout = ParamLayout::of(&self.nets);
                let mut flat = Vec::with_capacity(layout.num_values());
                for entry in layout.entries() {
                    let g = joint
                        .get(&entry.name)
                        .with_context(|| format!("no gradient for {}", entry.name))?;
                    flat.extend_from_slice(&g.values);
                }
                let expected = engine.expected_batch_size();
                let mut released =
                    engine.private_gradient(&self.nets, &[0], &GivenGradients(vec![flat]))?;
                released.scale(expected as f32);
                released
            }
        };
        Ok(released.strip_prefix("actor"))
    }

    /// RGI on the actor block of what the attacker sees, scored against the sample with its
    /// true advantage.
    pub(crate) fn attack_sample(
        &self,
        sample: &Sample,
        index: usize,
        sizes: &LeakageSizes,
        seed: u64,
        engine: Option<&mut PrivacyEngine>,
    ) -> Result<InversionRow> {
        let noisy = engine
            .as_ref()
            .is_some_and(|e| e.gradient_noise_multiplier() > 0.0);
        let record = self.released_actor_gradient(sample, engine)?;
        let mut config = Method::Rgi.attack_config(sizes.iterations, seed, sizes.tv_weight);
        if noisy {
            config.matching = config.matching.with_magnitude_weight(0.0);
        }
        let start = Instant::now();
        let reconstruction = attack(&self.actor, &record, &config)?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let mut row = score_reconstruction(
            &self.actor,
            &self.actor_sample(sample),
            &reconstruction,
            ImageNormalisation::Clamp,
            index,
            ms,
        )?;
        row.reconstructed = Default::default();
        Ok(row)
    }
}

/// The engine of DP-PPO at `point` with the suite's (q, K, C, δ, adjacency, accountant),
/// seeded by `seed`.
fn engine_at(base: &DpPpoConfig, point: Point, seed: u64) -> Result<PrivacyEngine> {
    let config = super::point_config(base, point);
    Ok(PrivacyEngine::new(
        config.engine_config(),
        NoiseMode::Seeded.source(seed),
    )?)
}

/// One closed-loop unit.
pub(super) struct LeakageTask {
    pub(super) release: Release,
    pub(super) config: DpPpoConfig,
    pub(super) sizes: LeakageSizes,
    pub(super) seed: u64,
}

impl BackendTask for LeakageTask {
    type Output = LeakageUnit;

    fn run<B: Backend>(self, device: B::Device) -> Result<LeakageUnit> {
        let start = Instant::now();
        let (samples, _) = room_samples(
            RoomSetting::S1,
            self.sizes.image_size,
            self.sizes.samples,
            self.seed,
            RoomSelection::First,
        )?;
        let victim = PpoVictim::<B>::new(self.sizes.image_size, &self.config, self.seed, &device)?;
        let point = match self.release {
            Release::Plain => None,
            Release::Private(point) => Some(point),
        };
        let mut unit = LeakageUnit {
            private: point.is_some(),
            target_epsilon: point.and_then(|p| p.0),
            seed: self.seed,
            commit: crate::run::source_commit(),
            sizes: self.sizes,
            num_actions: victim.num_actions(),
            noise_multiplier: None,
            gradient_noise_multiplier: None,
            clip: None,
            expected_batch: None,
            epsilon_per_episode: None,
            advantages: Vec::new(),
            gradient_norms: Vec::new(),
            rows: Vec::new(),
            flat: Vec::new(),
            wall_s: 0.0,
        };
        if let Some(point) = point {
            let engine = engine_at(&self.config, point, self.seed)?;
            let sigma = engine.noise_multiplier();
            unit.noise_multiplier = Some(sigma);
            unit.gradient_noise_multiplier = Some(engine.gradient_noise_multiplier());
            unit.clip = Some(engine.clip());
            unit.expected_batch = Some(engine.expected_batch_size());
            if sigma > 0.0 {
                let mut tally = PrivacyTally::new(PrivacyUnit::Episode, sigma, DELTA)
                    .with_adjacency(self.config.adjacency)
                    .with_accountant(self.config.accountant);
                tally.record(self.config.sample_rate(), self.config.steps_per_rollout());
                unit.epsilon_per_episode = Some(tally.epsilon()?);
            }
        }
        for (index, sample) in samples.iter().enumerate() {
            unit.advantages.push(victim.advantage(sample));
            unit.gradient_norms
                .push(victim.ppo_gradient(sample)?.l2_norm());
            // A fresh engine per sample: each release is a first step, at the initial C.
            let mut engine = point
                .map(|p| engine_at(&self.config, p, self.seed ^ (0x1eaf_0045 + index as u64)))
                .transpose()?;
            unit.rows.push(victim.attack_sample(
                sample,
                index,
                &self.sizes,
                self.seed,
                engine.as_mut(),
            )?);
            unit.flat.push(flat_scores(sample, self.sizes.image_size)?);
        }
        unit.wall_s = start.elapsed().as_secs_f64();
        Ok(unit)
    }
}

/// The releases the closed loop attacks: plain PPO, then every frontier point.
pub(super) fn releases(points: &[Point]) -> Vec<Release> {
    std::iter::once(Release::Plain)
        .chain(points.iter().map(|&p| Release::Private(p)))
        .collect()
}

/// The verdict of the criterion on the units (fixed before any run, constants above).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Verdict {
    /// The control holds: plain PPO's gradient leaks.
    pub(super) control: Option<bool>,
    /// Every point ε ≤ 1 judged, and whether it protects.
    pub(super) protected: Vec<(f64, bool)>,
}

impl Verdict {
    pub(super) fn holds(&self) -> bool {
        self.control == Some(true)
            && !self.protected.is_empty()
            && self.protected.iter().all(|&(_, ok)| ok)
    }
}

/// The criterion on one attack seed's units.
pub(super) fn verdict(units: &[&LeakageUnit]) -> Verdict {
    let fraction = |u: &LeakageUnit| u.recovered_images() as f64 / u.rows.len().max(1) as f64;
    let control = units
        .iter()
        .find(|u| u.release() == Release::Plain)
        .map(|u| fraction(u) >= CONTROL_RECOVERED_FRACTION);
    let protected = units
        .iter()
        .filter_map(|u| match (u.private, u.target_epsilon) {
            (true, Some(e)) if e <= PROTECTED_EPSILON => {
                let chance = 1.0 / u.num_actions.max(1) as f64;
                Some((
                    e,
                    fraction(u) <= PROTECTED_RECOVERED_FRACTION
                        && u.action_accuracy() <= chance + PROTECTED_ACTION_MARGIN,
                ))
            }
            _ => None,
        })
        .collect();
    Verdict { control, protected }
}

/// Checks that every unit on disk ran at `sizes`: a report never mixes sizes.
pub(super) fn check_sizes(units: &[LeakageUnit], sizes: LeakageSizes) -> Result<()> {
    for u in units {
        ensure!(
            u.sizes == sizes,
            "a closed-loop unit on disk ({}, seed {}) ran at {:?}, not {:?}: use another --dir or \
             remove it",
            u.release().label(),
            u.seed,
            u.sizes,
            sizes
        );
    }
    Ok(())
}

/// The closed-loop section of the report: one row per release (and the flat oracle), with the
/// frontier's final return at the same point where its units exist.
pub(super) fn add_section(
    report: &mut crate::report::Report,
    units: &[LeakageUnit],
    returns: &dyn Fn(Point) -> String,
    quick: bool,
) {
    use crate::report::{format_mean_std, format_number, Cell};
    report.heading("Closed loop: gradient inversion against the released update");
    let Some(first) = units.first() else {
        report.paragraph(&format!(
            "No closed-loop units on disk: `cargo xtask suite dp-ppo --leakage{}` runs them.",
            if quick { " --quick" } else { "" }
        ));
        return;
    };
    let s = first.sizes;
    report.paragraph(&format!(
        "RGI (two stages, action by eq. 8, advantage by eq. 9) on the actor block of one step's \
         released update, white box, the adversary knowing every other episode of the step \
         (DP's adversary) and the attacked episode sampled into it; each room sample is a \
         one-step episode (A = r − V(s), R̂ = r), PPO's first step (ratio 1). DP-PPO's release \
         is the PrivacyEngine's own: clip the joint actor–critic gradient to C, add \
         N(0, σ_Δ²C²I), divide by qN; the attacker multiplies by qN. σ is the engine's \
         calibration to each target ε per episode at the frontier's default q = {} and K = {} \
         (δ = {DELTA}). The critic block is not attacked, so this bounds the leakage from \
         below; so does the single step: ε per episode covers every step the episode is \
         sampled into (about q·K of the rollout's K), and an adversary averaging those \
         releases faces noise about √(q·K) times smaller. {} samples (S1, the leakage suite's rooms), {} px, {} iterations per stage, \
         TV {}. An image is recovered when its PSNR is ≥ {RECOVERY_MARGIN_DB} dB above the flat \
         oracle's (each image flat at its true mean). Module docs: \
         experiments/src/suites/dp_ppo/leakage.rs.",
        format_number(s.sample_rate),
        s.steps_per_rollout,
        s.samples,
        s.image_size,
        s.iterations,
        format_number(s.tv_weight),
    ));
    let mean = |values: Vec<f64>| {
        let finite: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        format_mean_std(&finite)
    };
    let mut rows = Vec::new();
    let mut units: Vec<&LeakageUnit> = units.iter().collect();
    units.sort_by_key(|u| {
        (
            u.seed,
            match (u.private, u.target_epsilon) {
                (false, _) => 0,
                (true, None) => 1,
                (true, Some(e)) => 2 + (1e6 / e) as u64,
            },
        )
    });
    for u in &units {
        let n = u.rows.len();
        let psnr = |depth: bool| {
            mean(
                u.rows
                    .iter()
                    .filter(|r| !r.failed)
                    .filter_map(|r| if depth { r.depth } else { r.rgb })
                    .map(|s| s.psnr)
                    .collect(),
            )
        };
        let opt = |v: Option<f64>| v.map_or("-".to_string(), format_number);
        let noise_std = match (u.gradient_noise_multiplier, u.clip, u.expected_batch) {
            (Some(s), Some(c), Some(b)) => format_number(s * c / b),
            _ => "-".into(),
        };
        rows.push(vec![
            Cell::from(u.release().label()),
            Cell::from(format!("{}", u.seed)),
            Cell::from(opt(u.epsilon_per_episode)),
            Cell::from(match u.release() {
                Release::Plain => "-".into(),
                Release::Private(p) => returns(p),
            }),
            Cell::from(opt(u.noise_multiplier)),
            Cell::from(opt(u.gradient_noise_multiplier)),
            Cell::from(noise_std),
            Cell::from(psnr(false)),
            Cell::from(psnr(true)),
            Cell::from(mean(u.rows.iter().filter_map(|r| r.vector_iou).collect())),
            Cell::from(format_number(u.action_accuracy())),
            Cell::from(mean(
                u.rows.iter().filter_map(|r| r.reward_abs_error).collect(),
            )),
            Cell::from(format!("{}/{n}", u.recovered_images())),
        ]);
    }
    let flat_psnr = |depth: bool| {
        mean(
            first
                .flat
                .iter()
                .filter_map(|&(rgb, d)| if depth { d } else { rgb })
                .map(|s| s.psnr)
                .collect(),
        )
    };
    rows.push(vec![
        Cell::from("flat image at the true mean (oracle baseline)"),
        Cell::from("-"),
        Cell::from("-"),
        Cell::from("-"),
        Cell::from("-"),
        Cell::from("-"),
        Cell::from("-"),
        Cell::from(flat_psnr(false)),
        Cell::from(flat_psnr(true)),
        Cell::from("-"),
        Cell::from(format!(
            "{} (chance)",
            format_number(1.0 / first.num_actions.max(1) as f64)
        )),
        Cell::from("-"),
        Cell::from("-"),
    ]);
    report.table(
        &[
            "release",
            "attack seed",
            "ε per episode (engine, K steps)",
            "final mean return (100), frontier",
            "σ",
            "σ_Δ (gradient)",
            "noise std per coordinate of the release (σ_Δ C / qN)",
            "RGB PSNR",
            "depth PSNR",
            "box IoU",
            "action accuracy",
            "|A_rec − A|",
            "images recovered",
        ],
        rows,
    );
    let seeds: std::collections::BTreeSet<u64> = units.iter().map(|u| u.seed).collect();
    let mut lines = Vec::new();
    for seed in seeds {
        let of_seed: Vec<&LeakageUnit> = units.iter().copied().filter(|u| u.seed == seed).collect();
        let v = verdict(&of_seed);
        lines.push(format!(
            "attack seed {seed}: control {}; ε ≤ {PROTECTED_EPSILON}: {}; **{}**",
            match v.control {
                Some(true) => "holds",
                Some(false) => "fails (the attack does not recover plain PPO's images)",
                None => "not run",
            },
            if v.protected.is_empty() {
                "no point run".to_string()
            } else {
                v.protected
                    .iter()
                    .map(|(e, ok)| {
                        format!(
                            "ε = {} {}",
                            format_number(*e),
                            if *ok { "protects" } else { "does not protect" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if v.holds() {
                "criterion holds"
            } else {
                "criterion does not hold"
            }
        ));
    }
    report
        .paragraph(&format!(
            "Criterion (fixed in experiments/src/suites/dp_ppo/leakage.rs before any run): the \
         control, plain PPO's gradient, has an image recovered on ≥ {:.0}% of the samples, and \
         at every frontier ε ≤ {PROTECTED_EPSILON} per episode at most {:.0}% of the samples \
         have an image recovered and the action accuracy is at most chance + {}.",
            CONTROL_RECOVERED_FRACTION * 100.0,
            PROTECTED_RECOVERED_FRACTION * 100.0,
            PROTECTED_ACTION_MARGIN
        ))
        .bullets(lines);
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::NdArray;

    fn sample_of(size: usize) -> Sample {
        let (samples, _) = room_samples(RoomSetting::S1, size, 1, 0, RoomSelection::First).unwrap();
        samples.into_iter().next().unwrap()
    }

    /// The gradient the attack matches (the actor as RGI's REINFORCE victim with the return
    /// replaced by A; the critic as a one-output TD victim scaled by c₁) equals the gradient
    /// of PPO's own loss at ratio 1, entropy included.
    #[test]
    fn the_attacked_gradient_is_ppos_loss_gradient_at_ratio_one() {
        let device = Default::default();
        let config = super::super::suite_config().with_entropy_coef(0.05);
        let victim = PpoVictim::<NdArray>::new(8, &config, 3, &device).unwrap();
        let sample = sample_of(8);
        let ppo = victim.ppo_gradient(&sample).unwrap();
        // The actor block: RGI's own victim on the sample with signal A.
        let actor = victim
            .actor
            .shared_gradient(std::slice::from_ref(&victim.actor_sample(&sample)))
            .unwrap();
        // The critic block: (V − R̂)² as a one-output TD loss, times c₁.
        let mut critic_net = victim_config(RoomSetting::S1, 8, VictimWidth::Wide);
        critic_net.d_output = 1;
        let critic = Victim::<NdArray>::from_seed(&critic_net, VictimKind::Dqn, 0, &device)
            .unwrap()
            .with_parameters_of(&victim.nets.critic)
            .unwrap();
        let td = Sample {
            action: 0,
            ..sample.clone()
        };
        let mut critic = critic.shared_gradient(std::slice::from_ref(&td)).unwrap();
        critic.scale(config.value_coef as f32);
        let mut expected = actor.prefixed("actor");
        expected.extend(critic.prefixed("critic"));
        assert_eq!(ppo.names(), expected.names());
        let (got, want) = (ppo.flatten(), expected.flatten());
        let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(scale > 1e-4, "a gradient to compare: {scale}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-4 * scale + 1e-6, "{g} vs {w}");
        }
        assert!(
            victim.advantage(&sample) != sample.signal,
            "A = r − V(s), V ≠ 0"
        );
    }

    /// The released gradient is the engine's: clipped to C, with noise of std σ_Δ C per
    /// coordinate after the attacker's rescaling by qN; with σ = 0 it is the clipped gradient
    /// (C set below the gradient's norm, so that the clip binds).
    #[test]
    fn the_release_is_the_engines_clip_and_noise() {
        let device = Default::default();
        // C below the gradient's norm, so that the clip binds.
        let clip = 0.1;
        let config = super::super::suite_config().with_clip(Some(clip));
        let victim = PpoVictim::<NdArray>::new(8, &config, 3, &device).unwrap();
        let sample = sample_of(8);
        let plain = victim.released_actor_gradient(&sample, None).unwrap();
        let joint = victim.ppo_gradient(&sample).unwrap();
        let norm = joint.l2_norm();
        assert!(norm > 2.0 * clip, "the room gradient exceeds C: {norm}");
        let mut clip_only = engine_at(&config, Point(None), 1).unwrap();
        assert_eq!(clip_only.noise_multiplier(), 0.0);
        assert_eq!(clip_only.clip(), clip);
        let clipped = victim
            .released_actor_gradient(&sample, Some(&mut clip_only))
            .unwrap();
        let factor = clip / norm;
        let scale = plain
            .flatten()
            .iter()
            .fold(0f64, |m, v| m.max(f64::from(v.abs())));
        for (c, p) in clipped.flatten().iter().zip(plain.flatten()) {
            let want = f64::from(p) * factor;
            assert!(
                (f64::from(*c) - want).abs() < 1e-4 * scale * factor,
                "{c} vs {want}"
            );
        }
        let mut private = engine_at(&config, Point(Some(1.0)), 1).unwrap();
        let sigma = private.gradient_noise_multiplier();
        assert!(sigma > 0.5, "{sigma}");
        let noisy = victim
            .released_actor_gradient(&sample, Some(&mut private))
            .unwrap();
        let residual: Vec<f64> = noisy
            .flatten()
            .iter()
            .zip(clipped.flatten())
            .map(|(n, c)| f64::from(*n) - f64::from(c))
            .collect();
        let std = (residual.iter().map(|r| r * r).sum::<f64>() / residual.len() as f64).sqrt();
        assert!(
            (std / (sigma * clip) - 1.0).abs() < 0.05,
            "{std} vs σ_Δ C = {}",
            sigma * clip
        );
    }

    /// Without noise, a small attack (8 px, 60 iterations per stage) recovers the action and
    /// the advantage (within 5%) of every sample: the attacker need not know A.
    #[test]
    fn a_small_noiseless_attack_recovers_action_and_advantage() {
        let device = Default::default();
        let config = super::super::suite_config();
        let sizes = LeakageSizes {
            samples: 3,
            image_size: 8,
            iterations: 60,
            tv_weight: 0.01,
            ..LeakageSizes::of(true, &config)
        };
        let (samples, _) =
            room_samples(RoomSetting::S1, 8, sizes.samples, 0, RoomSelection::First).unwrap();
        let victim = PpoVictim::<NdArray>::new(8, &config, 0, &device).unwrap();
        for (i, sample) in samples.iter().enumerate() {
            let a = victim.advantage(sample);
            let row = victim.attack_sample(sample, i, &sizes, 0, None).unwrap();
            assert!(row.action_correct, "sample {i}: {row:?}");
            let error = row.reward_abs_error.unwrap();
            assert!(
                error < 0.05 * a.abs().max(0.1),
                "sample {i}: |A_rec − A| = {error}, A = {a}"
            );
        }
    }
}
