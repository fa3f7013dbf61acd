//! The local side of Algorithm 1: [`PgcAgent`] and its submission loop [`run_agent`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use privrl_privacy::{GradientMechanism, MechanismRng};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{load_flat_parameters, Parameters, PgcConfig, PgcError, Submission, Transport};
use crate::a3c::{episode_loss, play_episode, A3cEpisode, ExplorationTime};
use crate::autodiff;
use crate::env::RolloutEnv;
use crate::error::AgentError;
use crate::heads::ActorCritic;
use crate::record::GradientRecord;

/// One agent identity: its private environment and the submissions it has left.
struct Identity {
    env: RolloutEnv,
    rounds_left: usize,
}

/// The local side of Algorithm 1: copy θ, play an episode in a private environment, compute
/// g_n (eq. 15–18), release g̃_n = Q(g_n).
///
/// A `PgcAgent` stands for a stream of agents: every `rounds` submissions it becomes a new
/// agent with a fresh CartPole whose gravity ψ is drawn uniformly from the config's list.
pub struct PgcAgent<B: AutodiffBackend> {
    config: PgcConfig,
    mechanism: Box<dyn GradientMechanism>,
    template: ActorCritic<B>,
    device: B::Device,
    rng: ChaCha8Rng,
    /// The mechanism's randomness, apart from the episodes' so that a secure source leaves
    /// play reproducible.
    noise_rng: MechanismRng,
    source: String,
    seq: u64,
    identity: Option<Identity>,
}

impl<B: AutodiffBackend> PgcAgent<B> {
    /// An agent named `source` (unique within the run) drawing its randomness from `seed`
    /// (the mechanism's from the operating system instead under `NoiseMode::Secure`).
    pub fn new(
        config: &PgcConfig,
        source: impl Into<String>,
        seed: u64,
        device: &B::Device,
    ) -> Result<Self, PgcError> {
        config.validate()?;
        let (obs_len, num_actions) = config.dims()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let template = config.network(obs_len, num_actions).init(device, &mut rng);
        let mechanism =
            config
                .mechanism
                .build_for(template.num_params(), config.rounds, config.noise_rng)?;
        let noise_rng = config.noise_rng.rng(rng.random())?;
        Ok(Self {
            config: config.clone(),
            mechanism,
            template,
            device: device.clone(),
            rng,
            noise_rng,
            source: source.into(),
            seq: 0,
            identity: None,
        })
    }

    /// The mechanism this agent applies.
    pub fn mechanism(&self) -> &dyn GradientMechanism {
        self.mechanism.as_ref()
    }

    /// Submissions made so far: the `seq` of the last one.
    pub fn submitted(&self) -> u64 {
        self.seq
    }

    /// The agent's name in its submissions' `(source, seq)`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Continues the sequence after `seq` (the last one this source submitted before a
    /// restart), so that no new submission reuses a number the aggregator has seen.
    pub fn resume_after(&mut self, seq: u64) {
        self.seq = self.seq.max(seq);
    }

    /// θ′ ← θ, as a network.
    pub fn local_model(&self, parameters: &Parameters) -> Result<ActorCritic<B>, PgcError> {
        Ok(load_flat_parameters(
            self.template.clone(),
            &parameters.values,
        )?)
    }

    /// θ′ ← θ and one episode of the current agent identity at θ′ (Algorithm 1's inner
    /// loop); a new identity, with gravity ψ drawn uniformly, every `rounds` episodes.
    pub fn play(
        &mut self,
        parameters: &Parameters,
    ) -> Result<(ActorCritic<B>, A3cEpisode), PgcError> {
        let model = self.local_model(parameters)?;
        let mut identity = match self.identity.take() {
            Some(identity) if identity.rounds_left > 0 => identity,
            _ => {
                let gravity =
                    self.config.gravities[self.rng.random_range(0..self.config.gravities.len())];
                Identity {
                    env: RolloutEnv::new(PgcConfig::environment(gravity)?, self.rng.random())?,
                    rounds_left: self.config.rounds,
                }
            }
        };
        let (policy, value) = model.host_copies();
        let time = ExplorationTime {
            submissions: parameters.submissions,
            env_steps: parameters.env_steps,
        };
        let (episode, _) = play_episode(
            &mut identity.env,
            &policy,
            &value,
            &self.config.a3c,
            time,
            &mut self.rng,
        )?;
        identity.rounds_left -= 1;
        self.identity = Some(identity);
        Ok((model, episode))
    }

    /// g_n = ∂L̂_n(θ′; H_n, λ)/∂θ′ (eq. 15–18, the loss of [`crate::A3c`]).
    pub fn gradient_of(
        &self,
        model: &ActorCritic<B>,
        episode: &A3cEpisode,
    ) -> Result<GradientRecord, PgcError> {
        autodiff::exclusive(|| {
            let (loss, terms) = episode_loss(model, episode, &self.config.a3c, &self.device)?;
            if let Some(&value) = terms.iter().find(|v| !v.is_finite()) {
                return Err(AgentError::NonFinite {
                    what: "PGC episode loss",
                    value,
                    update: self.seq,
                }
                .into());
            }
            Ok(GradientRecord::from_grads(
                model,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// g̃_n = Q(g_n), packed as the next submission of this agent.
    pub fn release(
        &mut self,
        gradient: &GradientRecord,
        parameters: &Parameters,
        score: f64,
    ) -> Result<Submission, PgcError> {
        let noisy = self
            .mechanism
            .release(&gradient.flatten(), &mut self.noise_rng)?;
        self.seq += 1;
        Ok(Submission {
            source: self.source.clone(),
            seq: self.seq,
            version: parameters.version,
            score,
            gradient: noisy,
        })
    }

    /// One submission: an episode at θ′ = `parameters`, its gradient, Q applied.
    pub fn submission(&mut self, parameters: &Parameters) -> Result<Submission, PgcError> {
        let (model, episode) = self.play(parameters)?;
        let gradient = self.gradient_of(&model, &episode)?;
        self.release(&gradient, parameters, episode.rewards.len() as f64)
    }
}

/// Waits until the transport has θ (polling every 5 ms), or it is closed (`None`).
pub(crate) fn wait_for_parameters(
    transport: &dyn Transport,
    timeout: Duration,
) -> Result<Option<Parameters>, PgcError> {
    let start = Instant::now();
    loop {
        if transport.is_closed()? {
            return Ok(None);
        }
        if let Some(parameters) = transport.parameters()? {
            return Ok(Some(parameters));
        }
        if start.elapsed() > timeout {
            return Err(PgcError::NoParameters(timeout));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An agent's loop: resume the source's sequence where the transport says it stopped, then
/// fetch θ and submit until the sequence reaches `count` (if given; so a restarted agent only
/// makes up what is missing), until the aggregator closes the run, or until `stop` is set.
/// Returns the number submitted by this call.
pub fn run_agent<B: AutodiffBackend>(
    agent: &mut PgcAgent<B>,
    transport: &dyn Transport,
    count: Option<u64>,
    stop: &AtomicBool,
) -> Result<u64, PgcError> {
    agent.resume_after(transport.last_seq(agent.source())?);
    let mut sent = 0;
    while count.is_none_or(|c| agent.submitted() < c) && !stop.load(Ordering::Relaxed) {
        let Some(parameters) = wait_for_parameters(transport, Duration::from_secs(60))? else {
            break;
        };
        let submission = agent.submission(&parameters)?;
        transport.submit(&submission)?;
        sent += 1;
    }
    Ok(sent)
}
