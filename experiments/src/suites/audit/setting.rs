//! What is audited: one mechanism at one setting and one size, with its threat model and its
//! unit of privacy.

use serde::{Deserialize, Serialize};

/// One audited mechanism at one setting. The size (releases, canaries, runs) is part of the
/// setting, so that a quick unit never stands in for a full one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mechanism", rename_all = "kebab-case")]
pub enum Setting {
    /// PGC's Laplace mechanism (Ono & Takahashi, Algorithm 2), one release per input.
    Laplace {
        /// ε of one release (T = 1).
        epsilon: f64,
        /// Releases per input (held in: g, held out: g').
        releases: u64,
    },
    /// PGC's projected random sign (Algorithm 3), one release per input.
    Prs {
        /// ε of one release (T = 1).
        epsilon: f64,
        /// Releases per input.
        releases: u64,
        /// Whether the auditor sees only the back-projected release Mᵀũ with a fresh secret M,
        /// as privrl's PGC aggregator does (`true`), or also knows M, as Lemma 3's guarantee
        /// allows (`false`).
        hidden_projection: bool,
    },
    /// The kickstarting teacher's Dirichlet mechanism (paper 000, Theorem 1), one release per
    /// input, between two observations whose policies are opposite vertices of Δ_{m,η}.
    Dirichlet {
        /// Actions m.
        actions: usize,
        /// Concentration k of Dir(kπ).
        concentration: f64,
        /// η of the restricted simplex Δ_{m,η}.
        eta: f64,
        /// L·b: the teacher's certified Lipschitz constant times the adjacency radius.
        lipschitz_adjacency: f64,
        /// δ of the stated (ε, δ) and of the audit.
        delta: f64,
        /// Releases per input.
        releases: u64,
    },
    /// DP-SGD through privrl's `PrivacyEngine` with Dirac gradient canaries.
    DpSgd {
        /// σ.
        noise_multiplier: f64,
        /// Poisson rate q.
        sample_rate: f64,
        /// Steps T of each run.
        steps: u64,
        /// Canaries (= records, = parameters) per run.
        canaries: usize,
        /// Independent runs.
        runs: usize,
        /// Noise drawn on a grid (within total variation 10⁻⁷⁰ a coordinate of the exact
        /// discrete Gaussian) from the operating system's generator
        /// (`RandomnessSource::Secure`, `--noise-rng secure`): unseeded, not repeatable.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        secure: bool,
    },
    /// The transition unit of DP-SGD DQN ([`privrl_agents::DpSgdDqn`] on CartPole), one canary
    /// transition per run, every step of the run at the canary's rate q.
    DqnTransition {
        /// σ.
        noise_multiplier: f64,
        /// q of every step (with the canary in): 1 (|B| above the buffer), or |B|/n < 1.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        sample_rate: f64,
        /// DP-SGD steps T of each run.
        steps: u64,
        /// Independent runs (= canaries).
        runs: usize,
    },
    /// One observation of DP-SGD DQN as a group of two transitions (s′ of one, s of the next),
    /// both pushed or neither, every step at q = 1.
    DqnObservation {
        /// σ.
        noise_multiplier: f64,
        /// DP-SGD steps T of each run.
        steps: u64,
        /// Independent runs (= canaries).
        runs: usize,
    },
    /// The episode unit of DP-SGD REINFORCE ([`privrl_agents::DpSgdReinforce`] on
    /// CartPole), one canary episode per run, in the run's first step of L episodes.
    ReinforceEpisode {
        /// σ.
        noise_multiplier: f64,
        /// Episodes L per DP-SGD step.
        episodes_per_step: usize,
        /// Independent runs (= canaries).
        runs: usize,
    },
    /// The episode unit of DP-PPO ([`privrl_agents::DpPpo`] on CartPole), one canary episode
    /// per run among the N of one rollout, observed at every one of the rollout's K steps.
    PpoEpisode {
        /// σ.
        noise_multiplier: f64,
        /// N: episodes per rollout.
        episodes_per_rollout: usize,
        /// qN: expected episodes per step (q = qN/N).
        minibatch_episodes: usize,
        /// E: passes over the rollout; K = E·⌈N/qN⌉ steps.
        epochs: usize,
        /// Independent runs (= canaries).
        runs: usize,
    },
}

fn one() -> f64 {
    1.0
}

fn is_one(value: &f64) -> bool {
    *value == 1.0
}

/// q = qN/N and K = E·⌈N/qN⌉ of a DP-PPO setting, by [`privrl_agents::DpPpoConfig`] itself.
pub(super) fn ppo_rate_and_steps(
    episodes_per_rollout: usize,
    minibatch_episodes: usize,
    epochs: usize,
) -> (f64, u64) {
    // DP-PPO's own formulas (q = qN/N, K = E·⌈N/qN⌉), not a copy of them.
    let config = privrl_agents::DpPpoConfig::new()
        .with_episodes_per_rollout(episodes_per_rollout)
        .with_minibatch_episodes(minibatch_episodes)
        .with_epochs(epochs);
    (config.sample_rate(), config.steps_per_rollout())
}

impl Setting {
    /// File-safe name, e.g. `laplace-eps1-n2000000`, `dpsgd-sigma1-q1-t1-m1000-r100`.
    pub fn name(&self) -> String {
        match *self {
            Setting::Laplace { epsilon, releases } => format!("laplace-eps{epsilon}-n{releases}"),
            Setting::Prs {
                epsilon,
                releases,
                hidden_projection,
            } => format!(
                "prs{}-eps{epsilon}-n{releases}",
                if hidden_projection { "-hidden" } else { "" }
            ),
            Setting::Dirichlet {
                actions,
                concentration,
                lipschitz_adjacency,
                delta,
                releases,
                ..
            } => format!(
                "dirichlet-m{actions}-k{concentration}-lb{lipschitz_adjacency}-d{delta}-n{releases}"
            ),
            Setting::DpSgd {
                noise_multiplier,
                sample_rate,
                steps,
                canaries,
                runs,
                secure,
            } => format!(
                "dpsgd{}-sigma{noise_multiplier}-q{sample_rate}-t{steps}-m{canaries}-r{runs}",
                if secure { "-secure" } else { "" }
            ),
            Setting::DqnTransition {
                noise_multiplier,
                sample_rate,
                steps,
                runs,
            } => {
                // q = 1 keeps the name of the units written before q < 1 was audited.
                if sample_rate == 1.0 {
                    format!("dqn-transition-sigma{noise_multiplier}-t{steps}-r{runs}")
                } else {
                    format!(
                        "dqn-transition-sigma{noise_multiplier}-q{sample_rate}-t{steps}-r{runs}"
                    )
                }
            }
            Setting::DqnObservation {
                noise_multiplier,
                steps,
                runs,
            } => format!("dqn-observation-sigma{noise_multiplier}-t{steps}-r{runs}"),
            Setting::ReinforceEpisode {
                noise_multiplier,
                episodes_per_step,
                runs,
            } => format!("reinforce-episode-sigma{noise_multiplier}-l{episodes_per_step}-r{runs}"),
            Setting::PpoEpisode {
                noise_multiplier,
                episodes_per_rollout,
                minibatch_episodes,
                epochs,
                runs,
            } => format!(
                "ppo-episode-sigma{noise_multiplier}-n{episodes_per_rollout}-b{minibatch_episodes}\
                 -e{epochs}-r{runs}"
            ),
        }
    }

    /// The mechanism, in words for a table.
    pub fn mechanism(&self) -> String {
        match *self {
            Setting::Laplace { epsilon, .. } => format!("PGC Laplace, ε = {epsilon} per release"),
            Setting::Prs {
                epsilon,
                hidden_projection,
                ..
            } => format!(
                "PGC PRS, ε = {epsilon} per release{}",
                if hidden_projection { " (secret M)" } else { "" }
            ),
            Setting::Dirichlet {
                actions,
                concentration,
                eta,
                lipschitz_adjacency,
                delta,
                ..
            } => format!(
                "Kickstarting Dirichlet teacher, m = {actions}, k = {concentration}, η = {}, \
                 L·b = {lipschitz_adjacency}, δ = {delta}, per release",
                crate::report::format_number(eta)
            ),
            Setting::DpSgd {
                noise_multiplier,
                sample_rate,
                steps,
                secure,
                ..
            } => format!(
                "DP-SGD, σ = {noise_multiplier}, q = {sample_rate}, T = {steps}{}",
                if secure { ", secure (grid) noise" } else { "" }
            ),
            Setting::DqnTransition {
                noise_multiplier,
                sample_rate,
                steps,
                ..
            } => format!("DP-SGD DQN, σ = {noise_multiplier}, q = {sample_rate}, T = {steps}"),
            Setting::DqnObservation {
                noise_multiplier,
                steps,
                ..
            } => format!(
                "DP-SGD DQN, one observation (2 transitions), σ = {noise_multiplier}, q = 1, \
                 T = {steps}"
            ),
            Setting::ReinforceEpisode {
                noise_multiplier,
                episodes_per_step,
                ..
            } => format!("DP-SGD REINFORCE, σ = {noise_multiplier}, L = {episodes_per_step}"),
            Setting::PpoEpisode {
                noise_multiplier,
                episodes_per_rollout,
                minibatch_episodes,
                epochs,
                ..
            } => {
                let (q, k) = ppo_rate_and_steps(episodes_per_rollout, minibatch_episodes, epochs);
                format!(
                    "DP-PPO, σ = {noise_multiplier}, q = {q}, K = {k}, N = {episodes_per_rollout}"
                )
            }
        }
    }

    /// Who sees what, and what the audit's adjacent inputs are.
    pub fn threat_model(&self) -> &'static str {
        match self {
            Setting::Laplace { .. } => {
                "local: the aggregator sees each release; adjacent inputs are any two \
                 gradients (here ±10·e₁, clipped to ±(C/2)·e₁)"
            }
            Setting::Prs {
                hidden_projection: false,
                ..
            } => {
                "local: the aggregator sees each release and knows the projection M (as \
                 Lemma 3 allows); adjacent inputs g, −g with every coordinate of Mg at least C"
            }
            Setting::Prs {
                hidden_projection: true,
                ..
            } => {
                "local: the aggregator sees each release Mᵀũ only, M drawn fresh and kept by \
                 the agent (privrl's PGC); adjacent inputs g, −g"
            }
            Setting::Dirichlet { .. } => {
                "the student (anyone who sees the shared policies) sees each release; adjacent \
                 observations are any two within b, here two whose policies are opposite \
                 vertices of Δ_{m,η} (neighbours whenever L·b ≥ √2(1 − mη), as for the AirRaid \
                 teacher)"
            }
            Setting::DpSgd { .. } => {
                "white-box DP-SGD: the adversary sees every noisy update (federated learning; \
                 privrl's leakage suite) and inserts gradient canaries"
            }
            Setting::DqnTransition { .. } => {
                "white-box DQN: the adversary sees every noisy gradient the agent releases and \
                 the parameters it is computed at, knows the rest of the replay buffer and \
                 which of it each step sampled (not whether the canary was), and inserts one \
                 canary transition (observation 10·𝟏, reward 10⁴, terminal)"
            }
            Setting::DqnObservation { .. } => {
                "white-box DQN: the adversary sees every noisy gradient the agent releases and \
                 the parameters it is computed at, knows the rest of the replay buffer, and \
                 inserts one canary observation o = 10·𝟏 in the two transitions it lives in: \
                 s′ of (o, 0, 10⁴, o, not terminal) and s of (o, 0, 10⁴, o, terminal), the \
                 previous observation equal to o (the worst case: the two clipped gradients \
                 align)"
            }
            Setting::ReinforceEpisode { .. } => {
                "white-box REINFORCE: the adversary sees the noisy gradient the agent releases \
                 and the parameters it is computed at, knows the step's other L − 1 episodes, \
                 and inserts one canary episode (one step from the zero observation, weight \
                 10⁴)"
            }
            Setting::PpoEpisode { .. } => {
                "white-box DP-PPO: the adversary sees every one of the rollout's K noisy updates \
                 and the networks each is computed at, knows the rollout's other episodes and \
                 which of them each step sampled (not whether the canary was), and inserts one \
                 canary episode (one step from observation 10·𝟏, reward 10⁴)"
            }
        }
    }

    /// The unit of privacy and the adjacency audited.
    pub fn unit_of_privacy(&self) -> &'static str {
        match self {
            Setting::Laplace { .. } | Setting::Prs { .. } => "one release (T = 1), any two inputs",
            Setting::Dirichlet { .. } => {
                "one release (one state's shared policy), b-adjacent observations (Definition 1)"
            }
            Setting::DpSgd { .. } => "one record, add/remove (a canary's gradient 2C·eᵢ or none)",
            Setting::DqnTransition { .. } => {
                "one transition, add/remove (privrl's stated DQN unit; an observation, which \
                 lives in two transitions, is a group of 2, audited in its own row)"
            }
            Setting::DqnObservation { .. } => {
                "one observation, add/remove of both its transitions: a group of 2, judged \
                 against privrl's group-of-2 ε (the releases accounted under substitution \
                 adjacency: RDP min(2α/σ², 3·ε_add/remove(2α)) per step, Mironov 2017 Prop. 2; \
                 PLD replace-one, exact at q = 1), not a transition's ε"
            }
            Setting::ReinforceEpisode { .. } => {
                "one episode, zero-out (privrl's stated REINFORCE unit and adjacency: the \
                 canary's gradient or zero among L episodes, one release at q = 1, where it \
                 gives the add/remove ε; a user with many episodes is not what is tested)"
            }
            Setting::PpoEpisode { .. } => {
                "one episode, add/remove (the canary's loss weight 1 or 0 among N episodes, N \
                 public; privrl's stated DP-PPO unit, every step of its rollout composed at \
                 (q, σ); a user with many episodes is not what is tested)"
            }
        }
    }
}

/// Runs (one canary each) of an RL unit audit under `--quick` (seconds).
pub(super) const QUICK_RL_RUNS: usize = 2000;
/// Runs of a full-size RL unit audit (minutes on one core).
pub(super) const FULL_RL_RUNS: usize = 20_000;

/// The audits `cargo xtask audit` runs: the full ones, or the CI-sized ones of `--quick`.
pub fn plan(quick: bool) -> Vec<Setting> {
    let releases = if quick { 20_000 } else { 2_000_000 };
    let (canaries, runs) = if quick { (200, 5) } else { (1000, 100) };
    let dpsgd = |noise_multiplier: f64, sample_rate: f64, steps: u64| Setting::DpSgd {
        noise_multiplier,
        sample_rate,
        steps,
        canaries,
        runs,
        secure: false,
    };
    let dqn_runs = if quick { QUICK_RL_RUNS } else { FULL_RL_RUNS };
    let dqn = |noise_multiplier: f64, steps: u64| Setting::DqnTransition {
        noise_multiplier,
        sample_rate: 1.0,
        steps,
        runs: dqn_runs,
    };
    vec![
        Setting::Laplace {
            epsilon: 1.0,
            releases,
        },
        Setting::Laplace {
            epsilon: 4.0,
            releases,
        },
        Setting::Prs {
            epsilon: 1.0,
            releases,
            hidden_projection: false,
        },
        Setting::Prs {
            epsilon: 10.0,
            releases,
            hidden_projection: false,
        },
        Setting::Prs {
            epsilon: 1.0,
            releases,
            hidden_projection: true,
        },
        dpsgd(1.0, 1.0, 1),
        dpsgd(2.0, 1.0, 9),
        dpsgd(1.0, 0.1, 50),
        // Secure mode: DP-SGD's Gaussian drawn on a grid from the OS generator.
        Setting::DpSgd {
            noise_multiplier: 1.0,
            sample_rate: 1.0,
            steps: 1,
            canaries,
            runs,
            secure: true,
        },
        dqn(1.0, 1),
        dqn(2.0, 4),
        // q < 1: |B| = 8 of the 16 transitions with the canary in, T = 4 steps at that size
        // (the σ, q and K of the DP-PPO row at q = 0.5).
        Setting::DqnTransition {
            noise_multiplier: 1.0,
            sample_rate: 0.5,
            steps: 4,
            runs: dqn_runs,
        },
        // One observation as a group of two transitions, q = 1: μ = 2√T/σ = 1.
        Setting::DqnObservation {
            noise_multiplier: 2.0,
            steps: 1,
            runs: dqn_runs,
        },
        Setting::ReinforceEpisode {
            noise_multiplier: 1.0,
            episodes_per_step: 1,
            runs: dqn_runs,
        },
        Setting::ReinforceEpisode {
            noise_multiplier: 2.0,
            episodes_per_step: 1,
            runs: dqn_runs,
        },
        // L > 1: the canary among L − 1 other episodes that the adversary knows.
        Setting::ReinforceEpisode {
            noise_multiplier: 1.0,
            episodes_per_step: 4,
            runs: dqn_runs,
        },
        // DP-PPO's episode unit: q = 1, K = 2 (a Gaussian trade-off curve, μ = √2) and
        // q = 0.5, K = 4 (the canary Poisson-sampled into some of the K steps).
        Setting::PpoEpisode {
            noise_multiplier: 1.0,
            episodes_per_rollout: 2,
            minibatch_episodes: 2,
            epochs: 2,
            runs: dqn_runs,
        },
        Setting::PpoEpisode {
            noise_multiplier: 1.0,
            episodes_per_rollout: 4,
            minibatch_episodes: 2,
            epochs: 2,
            runs: dqn_runs,
        },
        // The AirRaid teacher's release at k₀ (results/kickstart-airraid: m = 6, k₀ = 5,
        // η = 0.4/m, L = 445.6, b = 0.01, δ = 0.05), whose eq. 12 ε privrl prints as 537 and
        // the paper as 4.46.
        Setting::Dirichlet {
            actions: 6,
            concentration: 5.0,
            eta: 0.4 / 6.0,
            lipschitz_adjacency: 4.456,
            delta: 0.05,
            releases,
        },
    ]
}
