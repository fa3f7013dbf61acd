//! The history of a DP-SGD run's releases and the ε it adds up to, by either accountant.
//!
//! [`ReleaseSchedule`] is the one record of what a run released (the role of Opacus'
//! `IAccountant.history`): run-length blocks of (q, σ, steps), each q exactly as used. The RDP
//! and PLD accountants ([`AccountantKind`]) read it; the `PrivacyEngine` of privrl-agents, its
//! DP agents and their checkpoints keep it. It implements [`Accountant`], so it reports a
//! [`PrivacyCost`] like every other accountant of this crate.

use serde::{Deserialize, Serialize};

use crate::composition::Accountant;
use crate::mechanism::PrivacyCost;
use crate::pld::{self, AccountantKind, PldConfig};
use crate::rdp::{compute_rdp_under, default_orders, rdp_to_dp, SubsampledGaussianSteps};
use crate::{Adjacency, PrivacyError};

/// The releases of a DP-SGD run, in order, as run-length blocks of identical steps (q, σ,
/// count), each q exactly as used (a replay buffer that grows gives every step its own q),
/// and the ε they add up to at δ, under an [`Adjacency`], by an [`AccountantKind`]: the RDP
/// accountant (Mironov, Talwar & Zhang 2019; the default) or the PLD accountant
/// (`pld`, tighter). The one accounting of privrl-agents' `PrivacyEngine` and of the
/// DP agents built on it; plain data, so a checkpoint holds it exactly (a schedule saved
/// before the accountant was recorded reads as RDP, the only one then).
///
/// [`ReleaseSchedule::epsilon`] keeps, under RDP, the RDP of the blocks before the last one,
/// so that asking for ε after every episode costs one block's RDP, not the whole run's; under
/// PLD, the last ε and the schedule it was computed for, so that asking again without new
/// releases costs nothing (each new ε composes the whole schedule: up to seconds).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReleaseSchedule {
    adjacency: Adjacency,
    delta: f64,
    blocks: Vec<SubsampledGaussianSteps>,
    #[serde(default)]
    accountant: AccountantKind,
    #[serde(skip)]
    cache: RdpCache,
    #[serde(skip)]
    pld_cache: PldCache,
}

impl PartialEq for ReleaseSchedule {
    fn eq(&self, other: &Self) -> bool {
        (self.adjacency, self.delta, &self.blocks, self.accountant)
            == (
                other.adjacency,
                other.delta,
                &other.blocks,
                other.accountant,
            )
    }
}

/// The PLD ε last computed and what it was computed for (adjacency, δ, blocks).
#[derive(Debug, Default)]
struct PldCache(std::sync::Mutex<Option<PldKey>>);

/// (adjacency, δ, blocks, ε).
type PldKey = (Adjacency, f64, Vec<SubsampledGaussianSteps>, f64);

impl Clone for PldCache {
    fn clone(&self) -> Self {
        Self(std::sync::Mutex::new(
            self.0.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        ))
    }
}

/// RDP, at [`default_orders`], of the first `blocks` blocks of a schedule.
#[derive(Debug, Default)]
struct RdpCache(std::sync::Mutex<Option<(usize, Vec<f64>)>>);

impl Clone for RdpCache {
    fn clone(&self) -> Self {
        Self(std::sync::Mutex::new(self.lock().clone()))
    }
}

impl RdpCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(usize, Vec<f64>)>> {
        // A panic while holding it leaves a consistent (older) prefix: keep using it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ReleaseSchedule {
    /// No release yet; ε at `delta`, under `adjacency`, by the RDP accountant
    /// ([`ReleaseSchedule::with_accountant`] for PLD).
    pub fn new(adjacency: Adjacency, delta: f64) -> Self {
        Self {
            adjacency,
            delta,
            blocks: Vec::new(),
            accountant: AccountantKind::Rdp,
            cache: RdpCache::default(),
            pld_cache: PldCache::default(),
        }
    }

    /// The same schedule with ε by `accountant` (the releases do not depend on it).
    pub fn with_accountant(mut self, accountant: AccountantKind) -> Self {
        self.accountant = accountant;
        self
    }

    /// Which accountant gives ε.
    pub fn accountant_kind(&self) -> AccountantKind {
        self.accountant
    }

    /// Counts `count` releases at sampling rate q and noise multiplier σ (σ = 0: no noise,
    /// ε = ∞), merged into the last block when both are the same.
    pub fn record(&mut self, sample_rate: f64, noise_multiplier: f64, count: u64) {
        if count == 0 {
            return;
        }
        match self.blocks.last_mut() {
            Some(last)
                if last.sample_rate == sample_rate && last.noise_multiplier == noise_multiplier =>
            {
                last.steps += count
            }
            _ => self.blocks.push(SubsampledGaussianSteps {
                sample_rate,
                noise_multiplier,
                steps: count,
            }),
        }
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[SubsampledGaussianSteps] {
        &self.blocks
    }

    /// Releases counted.
    pub fn steps(&self) -> u64 {
        self.blocks.iter().map(|b| b.steps).sum()
    }

    /// The neighbouring relation of ε.
    pub fn adjacency(&self) -> Adjacency {
        self.adjacency
    }

    /// δ of the (ε, δ).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The same schedule under `adjacency` (the releases do not depend on it).
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Self {
        if adjacency != self.adjacency {
            self.cache = RdpCache::default();
        }
        self.adjacency = adjacency;
        self
    }

    fn block_rdp(&self, block: &SubsampledGaussianSteps) -> Result<Vec<f64>, PrivacyError> {
        compute_rdp_under(
            self.adjacency,
            block.sample_rate,
            block.noise_multiplier,
            block.steps,
            &default_orders(),
        )
    }

    /// ε at δ of every release, composed exactly (each block at its own q) by the schedule's
    /// accountant: 0 before any release, ∞ if one had no noise.
    pub fn epsilon(&self) -> Result<f64, PrivacyError> {
        self.epsilon_by(self.accountant)
    }

    /// [`ReleaseSchedule::epsilon`] by `accountant`, whichever the schedule's own is, with the
    /// same caches: e.g. the cheap RDP ε after every episode of a run that reports PLD at the
    /// end.
    pub fn epsilon_by(&self, accountant: AccountantKind) -> Result<f64, PrivacyError> {
        let Some(last) = self.blocks.last() else {
            return Ok(0.0);
        };
        if self.blocks.iter().any(|b| b.noise_multiplier <= 0.0) {
            return Ok(f64::INFINITY);
        }
        match accountant {
            AccountantKind::Rdp => self.rdp_epsilon(last),
            AccountantKind::Pld => self.pld_epsilon(),
        }
    }

    /// ε by the PLD accountant at its default discretisation, recomputed only when the
    /// schedule (or its adjacency or δ) changed since the last call.
    fn pld_epsilon(&self) -> Result<f64, PrivacyError> {
        let mut cache = self.pld_cache.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((adjacency, delta, blocks, epsilon)) = cache.as_ref() {
            if (*adjacency, *delta, blocks.as_slice())
                == (self.adjacency, self.delta, self.blocks.as_slice())
            {
                return Ok(*epsilon);
            }
        }
        let epsilon = pld::schedule_epsilon(
            &self.blocks,
            self.adjacency,
            self.delta,
            &PldConfig::default(),
        )?;
        *cache = Some((self.adjacency, self.delta, self.blocks.clone(), epsilon));
        Ok(epsilon)
    }

    /// ε by the RDP accountant, the closed blocks' RDP cached.
    fn rdp_epsilon(&self, last: &SubsampledGaussianSteps) -> Result<f64, PrivacyError> {
        let closed = self.blocks.len() - 1;
        let mut cache = self.cache.lock();
        let (mut done, mut rdp) = match cache.take() {
            Some((done, rdp)) if done <= closed => (done, rdp),
            _ => (0, vec![0.0; default_orders().len()]),
        };
        while done < closed {
            for (r, a) in rdp.iter_mut().zip(self.block_rdp(&self.blocks[done])?) {
                *r += a;
            }
            done += 1;
        }
        let mut total = rdp.clone();
        *cache = Some((done, rdp));
        drop(cache);
        for (r, a) in total.iter_mut().zip(self.block_rdp(last)?) {
            *r += a;
        }
        Ok(rdp_to_dp(&default_orders(), &total, self.delta)?.0)
    }
}

impl Accountant for ReleaseSchedule {
    fn name(&self) -> &'static str {
        self.accountant.slug()
    }

    /// (ε, δ) of every release so far by the schedule's accountant ([`ReleaseSchedule::epsilon`]).
    fn spent(&self) -> Result<PrivacyCost, PrivacyError> {
        Ok(PrivacyCost {
            epsilon: self.epsilon()?,
            delta: self.delta,
        })
    }
}
