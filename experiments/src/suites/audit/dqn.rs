//! The transition unit of DP-SGD DQN, and one observation as a group of two transitions,
//! audited from the agent's released gradients (issue 44, item 2).
//!
//! Threat model: white-box, as the DP-SGD audit: the adversary sees every noisy gradient the
//! agent releases and the parameters it is computed at (public: the initial parameters and the
//! releases determine them), and knows every other transition of the replay buffer (DP's
//! adversary may know the rest of the data), hence their clipped gradients at each step, and
//! which of them each step's Poisson batch holds (those bits are independent of the canary's,
//! so revealing them leaves its privacy loss as accounted). It does not see whether the canary
//! was sampled into a step. Unit and adjacency: one transition, add/remove, as
//! `privrl_agents`' DP-SGD docs state it (docs/dp-sgd.md); the canary is one transition pushed
//! once. One observation lives in two transitions (as s′ of one and s of the next): the
//! observation audit pushes both of them or neither, a group of 2, and is judged against
//! privrl's group-of-2 ε (the releases accounted under substitution adjacency, which
//! docs/dp-sgd.md states for a pair two records apart: per step min(2α/σ², 3·ε_add/remove(2α))
//! by RDP, Mironov 2017 Prop. 2; the PLD accountant's replace-one pair, exact at q = 1, where
//! the two records move the release by at most 2C), not against a transition's ε.
//!
//! Each run is a real [`DpSgdDqn`] on CartPole: acting, replay, Poisson sampling at
//! q_t = min(1, |B|/n_t), the engine's traced per-transition TD gradients, clipping, noise and
//! accounting are the agent's own; the audit only adds, with probability ½ drawn before the
//! run, the canary transitions through [`DpSgdDqn::push_transition`] before the first step
//! (replay indices 0, 1, …), and reads each step through [`DpSgdDqn::step_observed`]
//! ([`DpSgdDqnStep`]: the release, the step's Poisson batch and clipped gradients at its
//! parameters). The canary is out of distribution (observation o = 10·𝟏, action 0, reward
//! 10⁴), so its TD gradient is far above C and its clipped gradient has norm exactly C. The
//! observation canary is s′ of A = (x, 0, 10⁴, o, not terminal) and s of B = (o, 0, 10⁴, o,
//! terminal), with x = o (the agent stood still): the worst case of the group, where A's and
//! B's clipped gradients align and move the release by 2C.
//!
//! Sampling: at q = 1 (|B| = 64 above every n_t of the run, one gradient step per environment
//! step) each step samples the whole buffer. At q < 1 the run takes its T gradient steps at one
//! buffer size, after n = |B|/q − 1 environment steps (|B| = 8), so that with the canary in
//! the buffer holds n_in = |B|/q transitions and every step samples at q = |B|/n_in. Without
//! the canary the buffer holds one transition less, as the add/remove neighbour does (n_t
//! counts it); the score below reads neither n_t nor how many others were sampled, so it is
//! the same test of the canary's releases in both worlds.
//!
//! Score: at each step the adversary multiplies the release by q_t·n_t, subtracts the other
//! sampled transitions' clipped gradients, and projects the rest on the canary's clipped
//! gradient ĝ (for the observation, on ĝ_A + ĝ_B) at that step's parameters:
//! yₜ = bₜ·c/σ + zₜ, zₜ ~ N(0, 1), c = ‖ĝ‖/C, where bₜ = 1 only if the canary is in **and**
//! sampled into step t (probability q). The steps' noises are independent given the past, so
//! the likelihood ratio of the T releases factorises, and the score is its logarithm,
//! Σₜ ln(1 − q + q·exp(c·yₜ/σ − c²/(2σ²))): the Neyman–Pearson test of "in" against "out" (at
//! q = 1 an affine function of Σₜ c·yₜ). One canary per run: the runs are independent trials.

use anyhow::{ensure, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use privrl_agents::{
    DpSgdDqn, DpSgdDqnStep, DpSgdTrainingConfig, Dqn, DqnConfig, GradientRecord, TransitionBatch,
};
use privrl_privacy::{AccountantKind, Adjacency};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::dpsgd::{ln_mixture, CLIP};
use super::CanaryRuns;
use crate::backend::BackendTask;

/// The environment of the audited agent.
const ENV: &str = "CartPole-v1";
/// |B| at q = 1: above every buffer size of a run, so that q_t = 1.
const BATCH: usize = 64;
/// |B| at q < 1.
const SUBSAMPLED_BATCH: usize = 8;
/// Real transitions in the buffer before the first gradient step, at q = 1.
const LEARNING_STARTS: usize = 16;
/// The canary's observation (every coordinate), far outside CartPole's states.
const CANARY_OBS: f32 = 10.0;
/// The canary's reward: its TD error, hence its gradient, is far above C.
const CANARY_REWARD: f32 = 1.0e4;

/// The most steps a run may take with q_t = 1 (the buffer holds the learning-start
/// transitions, the canary and one transition per step, at most |B|).
pub(super) const MAX_STEPS: u64 = (BATCH - LEARNING_STARTS - 2) as u64;

/// What the audit's canary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DqnCanary {
    /// One transition: privrl's stated unit.
    Transition,
    /// One observation: the two transitions it lives in (s′ of one, s of the next).
    Observation,
}

/// One DQN audit: `runs` runs of `steps` DP-SGD steps at rate `sample_rate`, one canary each.
#[derive(Debug, Clone, Copy)]
pub(super) struct DqnTransitionAudit {
    pub(super) noise_multiplier: f64,
    /// q of the canary's steps: 1, or |B|/n_in < 1 with n_in = |B|/q an integer.
    pub(super) sample_rate: f64,
    pub(super) steps: u64,
    pub(super) runs: usize,
    pub(super) delta: f64,
    pub(super) seed: u64,
    pub(super) canary: DqnCanary,
    /// Times each canary transition is pushed when in: 1 is the audit; 2 is a deliberately
    /// broken feed (a record counted twice) that the tests use to show the audit can fail.
    pub(super) copies: usize,
}

impl BackendTask for DqnTransitionAudit {
    type Output = CanaryRuns;

    fn run<B: Backend>(self, device: B::Device) -> Result<CanaryRuns> {
        self.scores::<Autodiff<B>>(&device)
    }
}

/// The canary transitions: one (observation o, action 0, terminal), or the observation o's two
/// (module docs).
fn canary(obs_len: usize, kind: DqnCanary) -> TransitionBatch {
    let o = vec![CANARY_OBS; obs_len];
    let terminated = match kind {
        DqnCanary::Transition => vec![true],
        DqnCanary::Observation => vec![false, true],
    };
    let k = terminated.len();
    TransitionBatch {
        obs_len,
        obs: o.repeat(k),
        actions: vec![0; k],
        rewards: vec![CANARY_REWARD; k],
        next_obs: o.repeat(k),
        terminated,
    }
}

/// A record's values in parameter order, checked against `layout`'s names.
pub(super) fn values(record: &GradientRecord, layout: &GradientRecord) -> Result<Vec<f64>> {
    ensure!(
        record.params.len() == layout.params.len(),
        "gradient records of different layouts"
    );
    let mut out = Vec::new();
    for (p, l) in record.params.iter().zip(&layout.params) {
        ensure!(
            p.name == l.name && p.values.len() == l.values.len(),
            "gradient records of different layouts"
        );
        out.extend(p.values.iter().map(|&v| f64::from(v)));
    }
    Ok(out)
}

impl DqnTransitionAudit {
    /// The agent's DQN configuration and the environment steps before its first gradient step.
    fn dqn_config(&self) -> Result<DqnConfig> {
        let q = self.sample_rate;
        let config = DqnConfig::new()
            .with_hidden(vec![16, 16])
            .with_buffer_capacity(BATCH)
            .with_train_frequency(1);
        if q == 1.0 {
            ensure!(
                (1..=MAX_STEPS).contains(&self.steps),
                "the DQN audit at q = 1 takes 1 to {MAX_STEPS} steps, got {}",
                self.steps
            );
            return Ok(config
                .with_batch_size(BATCH)
                .with_learning_starts(LEARNING_STARTS)
                .with_gradient_steps(1));
        }
        ensure!(
            self.canary == DqnCanary::Transition,
            "the observation audit runs at q = 1 only, got q = {q}"
        );
        // n_in = |B|/q transitions with the canary in: the canary and n_in − 1 of the agent's.
        let n_in = SUBSAMPLED_BATCH as f64 / q;
        ensure!(
            q > 0.0 && n_in.fract() == 0.0 && n_in > SUBSAMPLED_BATCH as f64 && n_in <= BATCH as f64,
            "the DQN audit at q < 1 needs |B|/q = {n_in} an integer in ({SUBSAMPLED_BATCH}, {BATCH}]"
        );
        Ok(config
            .with_batch_size(SUBSAMPLED_BATCH)
            .with_learning_starts(n_in as usize - 1)
            .with_gradient_steps(self.steps as usize))
    }

    fn scores<B: AutodiffBackend>(&self, device: &B::Device) -> Result<CanaryRuns> {
        let (sigma, q) = (self.noise_multiplier, self.sample_rate);
        let mut out = CanaryRuns {
            held_in: Vec::new(),
            held_out: Vec::new(),
            rdp_epsilon: f64::NAN,
            pld_epsilon: f64::NAN,
        };
        let dqn_config = self.dqn_config()?;
        let dp_config = DpSgdTrainingConfig::new()
            .with_noise_multiplier(sigma)
            .with_clip(Some(CLIP))
            .with_delta(self.delta);
        for run in 0..self.runs as u64 {
            let run_seed = self.seed.wrapping_mul(1_000_003).wrapping_add(run);
            let is_in = ChaCha8Rng::seed_from_u64(run_seed ^ 0x00ca_9a7e).random_bool(0.5);
            let dqn = Dqn::<B>::new(
                dqn_config.clone(),
                privrl_envs::make(ENV)?,
                device,
                run_seed,
            )?;
            let obs_len = dqn.q_network().d_input();
            let mut agent = DpSgdDqn::new(dqn, &dp_config, run_seed ^ 0xd9_5e0d)?;
            let canary = canary(obs_len, self.canary);
            let copies = if is_in { self.copies } else { 0 };
            let pushed = copies * canary.len();
            for i in 0..canary.len() {
                let row = i * obs_len..(i + 1) * obs_len;
                for _ in 0..copies {
                    agent.push_transition(
                        &canary.obs[row.clone()],
                        canary.actions[i],
                        canary.rewards[i],
                        &canary.next_obs[row.clone()],
                        canary.terminated[i],
                    )?;
                }
            }
            let mut score = 0.0;
            let mut failure = None;
            while agent.engine().steps() < self.steps {
                let mut observe = |step: &DpSgdDqnStep<'_, B>| {
                    let read = || -> Result<f64> {
                        let released = step.released();
                        let n = step.agent().replay().len();
                        let q_t = step.expected_batch_size() / n as f64;
                        ensure!(
                            q == 1.0 && n <= BATCH || q < 1.0 && (q_t - q).abs() < 1e-12 || !is_in,
                            "the canary's step ran at q_t = {q_t} ({n} transitions), not q = {q}"
                        );
                        let direction = values(&step.clipped_gradient(&canary)?, released)?;
                        let norm = direction.iter().map(|v| v * v).sum::<f64>().sqrt();
                        ensure!(norm > 0.0, "the canary's gradient is zero");
                        // Every other record the step sampled (records 0..pushed are the
                        // canary's when it is in); the canary's own bits are not read.
                        let others: Vec<usize> = step
                            .batch()
                            .iter()
                            .copied()
                            .filter(|&i| i >= pushed)
                            .collect();
                        let others = values(&step.clipped_sum(&others)?, released)?;
                        let scale = step.expected_batch_size();
                        let projection: f64 = values(released, released)?
                            .iter()
                            .zip(&others)
                            .zip(&direction)
                            .map(|((r, o), d)| (r * scale - o) * d)
                            .sum();
                        let y = projection / (norm * sigma * CLIP);
                        let c = norm / CLIP;
                        Ok(ln_mixture(q, c * y / sigma - c * c / (2.0 * sigma * sigma)))
                    };
                    match read() {
                        Ok(llr) => score += llr,
                        Err(e) => failure = Some(e),
                    }
                    Ok(())
                };
                agent.step_observed(&mut observe)?;
                if let Some(e) = failure.take() {
                    return Err(e);
                }
            }
            ensure!(
                agent.engine().steps() == self.steps,
                "{} steps released, T = {}",
                agent.engine().steps(),
                self.steps
            );
            // The canary's accounting: the in-world's releases (at q < 1 its n_t count the
            // canary), per transition, or as a group of 2 for the observation.
            if is_in && out.rdp_epsilon.is_nan() {
                let adjacency = match self.canary {
                    DqnCanary::Transition => Adjacency::AddRemove,
                    DqnCanary::Observation => Adjacency::Substitution,
                };
                let tally = agent.tally().with_adjacency(adjacency);
                out.rdp_epsilon = tally
                    .clone()
                    .with_accountant(AccountantKind::Rdp)
                    .epsilon()?;
                out.pld_epsilon = tally.with_accountant(AccountantKind::Pld).epsilon()?;
            }
            if is_in {
                out.held_in.push(score);
            } else {
                out.held_out.push(score);
            }
        }
        Ok(out)
    }
}
