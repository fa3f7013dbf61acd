//! The RDP accountant at chosen orders, as a view of a [`ReleaseSchedule`].

use serde::{Deserialize, Serialize};

use crate::composition::Accountant;
use crate::error::open_unit;
use crate::mechanism::PrivacyCost;
use crate::rdp::{check_order, compute_rdp_under, default_orders, rdp_to_dp};
use crate::{Adjacency, PrivacyError, ReleaseSchedule, SubsampledGaussianSteps};

/// RDP accountant (Mironov, Talwar & Zhang 2019): composes subsampled-Gaussian steps by
/// adding RDP order-wise, under one neighbouring relation (add/remove unless
/// [`RdpAccountant::with_adjacency`]), at orders of one's choosing.
///
/// Its history is a [`ReleaseSchedule`], the one record of releases in privrl (the engine's,
/// the DP agents', checkpoints'): this type only adds the per-order RDP sums at its orders,
/// kept as steps arrive. [`RdpAccountant::schedule`] hands the history back, e.g. to the PLD
/// accountant. Serialised as before the history became a schedule (orders, rdp,
/// target_delta, history, adjacency).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RdpAccountantRecord", into = "RdpAccountantRecord")]
pub struct RdpAccountant {
    orders: Vec<f64>,
    rdp: Vec<f64>,
    schedule: ReleaseSchedule,
}

/// [`RdpAccountant`]'s serialised form.
#[derive(Serialize, Deserialize)]
struct RdpAccountantRecord {
    orders: Vec<f64>,
    rdp: Vec<f64>,
    target_delta: f64,
    history: Vec<SubsampledGaussianSteps>,
    #[serde(default)]
    adjacency: Adjacency,
}

impl From<RdpAccountant> for RdpAccountantRecord {
    fn from(accountant: RdpAccountant) -> Self {
        Self {
            target_delta: accountant.schedule.delta(),
            history: accountant.schedule.blocks().to_vec(),
            adjacency: accountant.schedule.adjacency(),
            orders: accountant.orders,
            rdp: accountant.rdp,
        }
    }
}

impl TryFrom<RdpAccountantRecord> for RdpAccountant {
    type Error = PrivacyError;

    fn try_from(record: RdpAccountantRecord) -> Result<Self, PrivacyError> {
        let mut accountant = Self::with_orders(record.orders, record.target_delta)?
            .with_adjacency(record.adjacency)?;
        if record.rdp.len() != accountant.orders.len() {
            return Err(PrivacyError::DimensionMismatch {
                name: "rdp",
                expected: accountant.orders.len(),
                found: record.rdp.len(),
            });
        }
        for block in &record.history {
            accountant
                .schedule
                .record(block.sample_rate, block.noise_multiplier, block.steps);
        }
        accountant.rdp = record.rdp;
        Ok(accountant)
    }
}

impl RdpAccountant {
    /// An empty accountant over [`default_orders`] that reports ε at `target_delta` ∈ (0, 1).
    pub fn new(target_delta: f64) -> Result<Self, PrivacyError> {
        Self::with_orders(default_orders(), target_delta)
    }

    /// The same with chosen orders (each > 1).
    pub fn with_orders(orders: Vec<f64>, target_delta: f64) -> Result<Self, PrivacyError> {
        if orders.is_empty() {
            return Err(PrivacyError::Empty { name: "orders" });
        }
        for &a in &orders {
            check_order(a)?;
        }
        open_unit("target_delta", target_delta)?;
        let rdp = vec![0.0; orders.len()];
        Ok(Self {
            orders,
            rdp,
            schedule: ReleaseSchedule::new(Adjacency::AddRemove, target_delta),
        })
    }

    /// The RDP accountant of every release of `schedule`, under its adjacency and δ, at the
    /// default orders.
    pub fn of_schedule(schedule: &ReleaseSchedule) -> Result<Self, PrivacyError> {
        let mut accountant = Self::new(schedule.delta())?.with_adjacency(schedule.adjacency())?;
        for block in schedule.blocks() {
            accountant.step(block.sample_rate, block.noise_multiplier, block.steps)?;
        }
        Ok(accountant)
    }

    /// The same accountant under `adjacency`. Refused once steps are recorded: their RDP was
    /// computed under the old relation.
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Result<Self, PrivacyError> {
        if self.schedule.steps() > 0 && adjacency != self.schedule.adjacency() {
            return Err(PrivacyError::Inconsistent(
                "the adjacency of an accountant that has recorded steps",
            ));
        }
        self.schedule = self.schedule.with_adjacency(adjacency);
        Ok(self)
    }

    /// The neighbouring relation its ε holds under.
    pub fn adjacency(&self) -> Adjacency {
        self.schedule.adjacency()
    }

    /// Records `steps` steps with sampling rate q and noise multiplier σ.
    pub fn step(
        &mut self,
        sample_rate: f64,
        noise_multiplier: f64,
        steps: u64,
    ) -> Result<(), PrivacyError> {
        let added = compute_rdp_under(
            self.schedule.adjacency(),
            sample_rate,
            noise_multiplier,
            steps,
            &self.orders,
        )?;
        for (r, a) in self.rdp.iter_mut().zip(added) {
            *r += a;
        }
        self.schedule.record(sample_rate, noise_multiplier, steps);
        Ok(())
    }

    /// (ε, optimal order) at δ.
    pub fn epsilon(&self, delta: f64) -> Result<(f64, f64), PrivacyError> {
        rdp_to_dp(&self.orders, &self.rdp, delta)
    }

    /// What has been recorded, as run-length blocks (consecutive steps at the same q and σ
    /// merged).
    pub fn history(&self) -> &[SubsampledGaussianSteps] {
        self.schedule.blocks()
    }

    /// The history as a [`ReleaseSchedule`] (its δ the accountant's target δ).
    pub fn schedule(&self) -> &ReleaseSchedule {
        &self.schedule
    }
}

impl Accountant for RdpAccountant {
    fn name(&self) -> &'static str {
        "rdp"
    }

    fn spent(&self) -> Result<PrivacyCost, PrivacyError> {
        let (epsilon, _) = self.epsilon(self.schedule.delta())?;
        Ok(PrivacyCost {
            epsilon,
            delta: self.schedule.delta(),
        })
    }
}
