//! Experience storage: the on-policy rollout buffer with GAE-λ (PPO), discounted returns
//! (REINFORCE, A3C), and the replay buffer (DQN). Everything lives on the host in flat `f32`
//! rows, so a whole batch becomes one tensor with one transfer.

use rand::Rng;

use crate::error::{allocate, too_large, AgentError};

/// Discounted cumulative sums: `out[t] = Σ_{k≥t} γ^{k−t} x[k]` (Spinning Up's
/// `discount_cumsum`).
pub(crate) fn discount_cumsum(x: &[f64], gamma: f64) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    let mut running = 0.0;
    for t in (0..x.len()).rev() {
        running = x[t] + gamma * running;
        out[t] = running;
    }
    out
}

/// A batch of on-policy experience, ready for a policy-gradient update.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutBatch {
    /// Values per observation.
    pub obs_len: usize,
    /// Observations, row-major `[len, obs_len]`.
    pub obs: Vec<f32>,
    /// Actions taken.
    pub actions: Vec<usize>,
    /// GAE-λ advantages, normalised to mean 0 and standard deviation 1 over the batch.
    pub advantages: Vec<f32>,
    /// Rewards-to-go, the critic's regression targets.
    pub returns: Vec<f32>,
    /// log π_old(a|s) when the action was taken.
    pub log_probs: Vec<f32>,
}

impl RolloutBatch {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the batch holds no sample.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// Spinning Up's `PPOBuffer`: stores one epoch of interaction and, at the end of each
/// trajectory, computes GAE-λ advantages and rewards-to-go.
#[derive(Debug, Clone)]
pub(crate) struct RolloutBuffer {
    obs_len: usize,
    gamma: f64,
    lambda: f64,
    obs: Vec<f32>,
    actions: Vec<usize>,
    rewards: Vec<f64>,
    values: Vec<f64>,
    log_probs: Vec<f32>,
    advantages: Vec<f64>,
    returns: Vec<f64>,
    path_start: usize,
}

impl RolloutBuffer {
    /// An empty buffer for `capacity` steps (`steps_per_epoch`); one too large for memory is
    /// an error naming `steps_per_epoch`.
    pub(crate) fn new(
        obs_len: usize,
        capacity: usize,
        gamma: f64,
        lambda: f64,
    ) -> Result<Self, AgentError> {
        let mut obs = Vec::new();
        let (mut actions, mut rewards, mut values, mut log_probs) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let fits = capacity
            .checked_mul(obs_len)
            .is_some_and(|n| obs.try_reserve_exact(n).is_ok())
            && actions.try_reserve_exact(capacity).is_ok()
            && rewards.try_reserve_exact(capacity).is_ok()
            && values.try_reserve_exact(capacity).is_ok()
            && log_probs.try_reserve_exact(capacity).is_ok();
        if !fits {
            return Err(too_large("steps_per_epoch", capacity));
        }
        Ok(Self {
            obs_len,
            gamma,
            lambda,
            obs,
            actions,
            rewards,
            values,
            log_probs,
            advantages: allocate(Some(capacity), 0.0, "steps_per_epoch", capacity)?,
            returns: allocate(Some(capacity), 0.0, "steps_per_epoch", capacity)?,
            path_start: 0,
        })
    }

    /// Steps stored so far.
    pub(crate) fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether nothing is stored.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Appends one step of interaction.
    pub(crate) fn store(
        &mut self,
        obs: &[f32],
        action: usize,
        reward: f64,
        value: f64,
        log_prob: f32,
    ) {
        debug_assert_eq!(obs.len(), self.obs_len);
        self.obs.extend_from_slice(obs);
        self.actions.push(action);
        self.rewards.push(reward);
        self.values.push(value);
        self.log_probs.push(log_prob);
    }

    /// Closes the current trajectory. `last_value` is V(s_T) if the trajectory was cut off
    /// (time limit or end of epoch) and 0 if it reached a terminal state.
    pub(crate) fn finish_path(&mut self, last_value: f64) {
        let end = self.len();
        if self.advantages.len() < end {
            self.advantages.resize(end, 0.0);
            self.returns.resize(end, 0.0);
        }
        let start = self.path_start;
        let mut rewards: Vec<f64> = self.rewards[start..end].to_vec();
        rewards.push(last_value);
        let mut values: Vec<f64> = self.values[start..end].to_vec();
        values.push(last_value);
        // GAE-λ (Schulman et al. 2016): δ_t = r_t + γ V(s_{t+1}) − V(s_t), A_t = Σ (γλ)^k δ_{t+k}.
        let deltas: Vec<f64> = (0..end - start)
            .map(|t| rewards[t] + self.gamma * values[t + 1] - values[t])
            .collect();
        let advantages = discount_cumsum(&deltas, self.gamma * self.lambda);
        // Rewards-to-go, bootstrapped with last_value: the critic's targets.
        let returns = discount_cumsum(&rewards, self.gamma);
        self.advantages[start..end].copy_from_slice(&advantages);
        self.returns[start..end].copy_from_slice(&returns[..end - start]);
        self.path_start = end;
    }

    /// Takes the stored epoch as a batch, normalising the advantages (mean 0, population
    /// standard deviation 1, as Spinning Up does), and empties the buffer.
    pub(crate) fn take(&mut self) -> RolloutBatch {
        let n = self.len();
        let advantages = &self.advantages[..n];
        let mean = advantages.iter().sum::<f64>() / n.max(1) as f64;
        let var = advantages.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / n.max(1) as f64;
        let std = var.sqrt();
        let scale = if std > 0.0 { 1.0 / std } else { 1.0 };
        let batch = RolloutBatch {
            obs_len: self.obs_len,
            obs: std::mem::take(&mut self.obs),
            actions: std::mem::take(&mut self.actions),
            advantages: advantages
                .iter()
                .map(|a| ((a - mean) * scale) as f32)
                .collect(),
            returns: self.returns[..n].iter().map(|&r| r as f32).collect(),
            log_probs: std::mem::take(&mut self.log_probs),
        };
        self.rewards.clear();
        self.values.clear();
        self.path_start = 0;
        batch
    }
}

/// A batch of transitions sampled from a [`ReplayBuffer`].
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionBatch {
    /// Values per observation.
    pub obs_len: usize,
    /// Observations s, row-major `[len, obs_len]`.
    pub obs: Vec<f32>,
    /// Actions a.
    pub actions: Vec<usize>,
    /// Rewards r.
    pub rewards: Vec<f32>,
    /// Next observations s′ (the final observation where an episode ended).
    pub next_obs: Vec<f32>,
    /// Whether s′ is terminal (no bootstrap); time-limit truncation is not terminal.
    pub terminated: Vec<bool>,
}

impl TransitionBatch {
    /// Number of transitions.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// A ring buffer of transitions, sampled uniformly with replacement (DQN's experience replay).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReplayBuffer {
    obs_len: usize,
    capacity: usize,
    obs: Vec<f32>,
    next_obs: Vec<f32>,
    actions: Vec<usize>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    next: usize,
    len: usize,
}

impl ReplayBuffer {
    /// An empty buffer holding at most `capacity` transitions (`buffer_capacity`); one too
    /// large for memory is an error naming `buffer_capacity`.
    pub(crate) fn new(obs_len: usize, capacity: usize) -> Result<Self, AgentError> {
        let rows = capacity.checked_mul(obs_len);
        let name = "buffer_capacity";
        Ok(Self {
            obs_len,
            capacity,
            obs: allocate(rows, 0.0, name, capacity)?,
            next_obs: allocate(rows, 0.0, name, capacity)?,
            actions: allocate(Some(capacity), 0, name, capacity)?,
            rewards: allocate(Some(capacity), 0.0, name, capacity)?,
            terminated: allocate(Some(capacity), false, name, capacity)?,
            next: 0,
            len: 0,
        })
    }

    /// Transitions stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether `other` has the same observation width, capacity and consistent storage (what
    /// a buffer read from a file must have to replace this one).
    pub(crate) fn same_shape(&self, other: &ReplayBuffer) -> bool {
        let rows = |b: &ReplayBuffer| {
            b.obs.len() == b.capacity * b.obs_len
                && b.next_obs.len() == b.obs.len()
                && [b.actions.len(), b.rewards.len(), b.terminated.len()] == [b.capacity; 3]
                && b.next < b.capacity
                && b.len <= b.capacity
        };
        self.obs_len == other.obs_len && self.capacity == other.capacity && rows(other)
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores a transition, overwriting the oldest once full.
    pub(crate) fn push(
        &mut self,
        obs: &[f32],
        action: usize,
        reward: f32,
        next_obs: &[f32],
        terminated: bool,
    ) {
        let i = self.next;
        let row = i * self.obs_len..(i + 1) * self.obs_len;
        self.obs[row.clone()].copy_from_slice(obs);
        self.next_obs[row].copy_from_slice(next_obs);
        self.actions[i] = action;
        self.rewards[i] = reward;
        self.terminated[i] = terminated;
        self.next = (self.next + 1) % self.capacity;
        self.len = (self.len + 1).min(self.capacity);
    }

    /// Samples `batch_size` transitions uniformly with replacement.
    pub fn sample(&self, batch_size: usize, rng: &mut impl Rng) -> TransitionBatch {
        let indices: Vec<usize> = (0..batch_size)
            .map(|_| rng.random_range(0..self.len))
            .collect();
        self.gather(&indices)
    }

    /// The transitions at `indices`.
    pub fn gather(&self, indices: &[usize]) -> TransitionBatch {
        let d = self.obs_len;
        let mut batch = TransitionBatch {
            obs_len: d,
            obs: Vec::with_capacity(indices.len() * d),
            actions: Vec::with_capacity(indices.len()),
            rewards: Vec::with_capacity(indices.len()),
            next_obs: Vec::with_capacity(indices.len() * d),
            terminated: Vec::with_capacity(indices.len()),
        };
        for &i in indices {
            batch.obs.extend_from_slice(&self.obs[i * d..(i + 1) * d]);
            batch
                .next_obs
                .extend_from_slice(&self.next_obs[i * d..(i + 1) * d]);
            batch.actions.push(self.actions[i]);
            batch.rewards.push(self.rewards[i]);
            batch.terminated.push(self.terminated[i]);
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn discount_cumsum_by_hand() {
        // [1, 2, 3] with γ = 0.5: 3; 2 + 1.5 = 3.5; 1 + 1.75 = 2.75.
        assert_eq!(discount_cumsum(&[1.0, 2.0, 3.0], 0.5), vec![2.75, 3.5, 3.0]);
    }

    #[test]
    fn gae_matches_a_hand_computation() {
        // Two steps, rewards 1 and 1, values 0.5 and 0.25, cut off with V(s_2) = 2.
        // γ = 0.9, λ = 0.8:
        //   δ_1 = 1 + 0.9·2 − 0.25 = 2.55
        //   δ_0 = 1 + 0.9·0.25 − 0.5 = 0.725
        //   A_1 = 2.55, A_0 = 0.725 + 0.72·2.55 = 2.561
        //   returns: R_1 = 1 + 0.9·2 = 2.8, R_0 = 1 + 0.9·2.8 = 3.52
        let mut buffer = RolloutBuffer::new(1, 2, 0.9, 0.8).unwrap();
        buffer.store(&[0.0], 0, 1.0, 0.5, -0.1);
        buffer.store(&[1.0], 1, 1.0, 0.25, -0.2);
        buffer.finish_path(2.0);
        let raw = buffer.advantages.clone();
        assert!(
            (raw[0] - 2.561).abs() < 1e-12 && (raw[1] - 2.55).abs() < 1e-12,
            "{raw:?}"
        );
        let batch = buffer.take();
        assert!((batch.returns[0] - 3.52).abs() < 1e-6 && (batch.returns[1] - 2.8).abs() < 1e-6);
        // Normalised: two values → ±1.
        assert!(
            (batch.advantages[0] - 1.0).abs() < 1e-6 && (batch.advantages[1] + 1.0).abs() < 1e-6
        );
        assert!(buffer.is_empty());
    }

    #[test]
    fn replay_buffer_wraps_and_samples_stored_rows() {
        let mut replay = ReplayBuffer::new(2, 3).unwrap();
        for i in 0..5 {
            let x = i as f32;
            replay.push(&[x, x], i, x, &[x + 1.0, x + 1.0], i == 4);
        }
        assert_eq!(replay.len(), 3);
        let all = replay.gather(&[0, 1, 2]);
        // Slots 0 and 1 were overwritten by transitions 3 and 4.
        assert_eq!(all.actions, vec![3, 4, 2]);
        assert_eq!(all.next_obs[2..4], [5.0, 5.0]);
        assert_eq!(all.terminated, vec![false, true, false]);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let batch = replay.sample(16, &mut rng);
        assert!(batch.actions.iter().all(|a| (2..5).contains(a)));
    }
}
