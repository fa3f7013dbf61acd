//! A ledger of every release a run makes: mechanism, parameters, (ε, δ). It answers what has
//! been spent so far under basic or advanced composition, and whether one more release fits a
//! budget. Serializable, so a run can write it next to its `summary.json`.

use std::collections::BTreeMap;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::composition::Composition;
use crate::error::{delta_half_open, non_negative};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::PrivacyError;

/// One recorded release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Mechanism name (`"dirichlet"`, `"laplace"`, `"dp_sgd"`, ...).
    pub mechanism: String,
    /// The parameters that determined the cost.
    pub parameters: BTreeMap<String, f64>,
    /// ε of this release.
    pub epsilon: f64,
    /// δ of this release.
    pub delta: f64,
}

/// A total privacy budget (E, Δ).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// E ≥ 0.
    pub epsilon: f64,
    /// Δ ∈ [0, 1).
    pub delta: f64,
}

impl Budget {
    /// Validates E ≥ 0 (finite) and Δ ∈ [0, 1).
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, PrivacyError> {
        Ok(Self {
            epsilon: non_negative("budget_epsilon", epsilon)?,
            delta: delta_half_open("budget_delta", delta)?,
        })
    }

    /// Whether `spent` stays within the budget.
    pub fn covers(&self, spent: PrivacyCost) -> bool {
        spent.epsilon <= self.epsilon && spent.delta <= self.delta
    }
}

/// `count` equal consecutive releases of a [`Ledger`] (see [`Ledger::runs`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRun {
    /// The release.
    pub entry: LedgerEntry,
    /// How many times in a row it was made.
    pub count: u64,
}

/// Every release of a run, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    entries: Vec<LedgerEntry>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a release by hand (for costs computed elsewhere, e.g. a whole DP-SGD run's ε
    /// from the RDP accountant). Validates the cost.
    pub fn record(
        &mut self,
        mechanism: impl Into<String>,
        parameters: impl IntoIterator<Item = (String, f64)>,
        cost: PrivacyCost,
    ) -> Result<(), PrivacyError> {
        let cost = PrivacyCost::new(cost.epsilon, cost.delta)?;
        self.entries.push(LedgerEntry {
            mechanism: mechanism.into(),
            parameters: parameters.into_iter().collect(),
            epsilon: cost.epsilon,
            delta: cost.delta,
        });
        Ok(())
    }

    /// Records one release of `mechanism` (its name, parameters and cost).
    pub fn record_release<M: Mechanism>(&mut self, mechanism: &M) -> Result<(), PrivacyError> {
        self.record(mechanism.name(), mechanism.parameters(), mechanism.cost())
    }

    /// Releases `input` through `mechanism` and records it (only if the release succeeds).
    pub fn release<M: Mechanism>(
        &mut self,
        mechanism: &M,
        input: &M::Input,
        rng: &mut impl Rng,
    ) -> Result<M::Output, PrivacyError> {
        let cost = PrivacyCost::new(mechanism.cost().epsilon, mechanism.cost().delta)?;
        let out = mechanism.release(input, rng)?;
        self.record(mechanism.name(), mechanism.parameters(), cost)?;
        Ok(out)
    }

    /// Releases only if the release keeps the total within `budget` under `composition`;
    /// otherwise [`PrivacyError::Unreachable`] and nothing is released or recorded.
    pub fn release_within<M: Mechanism>(
        &mut self,
        mechanism: &M,
        input: &M::Input,
        budget: Budget,
        composition: Composition,
        rng: &mut impl Rng,
    ) -> Result<M::Output, PrivacyError> {
        if !self.can_afford(mechanism.cost(), budget, composition)? {
            return Err(PrivacyError::Unreachable {
                name: "budget_epsilon",
                target: budget.epsilon,
                reason: format!(
                    "one more {} release would exceed the budget",
                    mechanism.name()
                ),
            });
        }
        self.release(mechanism, input, rng)
    }

    /// The recorded releases.
    pub fn entries(&self) -> &[LedgerEntry] {
        &self.entries
    }

    /// Number of releases.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No release yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn costs(&self) -> Vec<PrivacyCost> {
        self.entries
            .iter()
            .map(|e| PrivacyCost {
                epsilon: e.epsilon,
                delta: e.delta,
            })
            .collect()
    }

    /// Spent so far under `composition`.
    pub fn spent(&self, composition: Composition) -> Result<PrivacyCost, PrivacyError> {
        composition.compose(&self.costs())
    }

    /// Spent so far under basic composition: (Σε, Σδ).
    pub fn spent_basic(&self) -> PrivacyCost {
        crate::composition::basic_composition(&self.costs())
    }

    /// Spent so far under advanced composition with slack δ'.
    pub fn spent_advanced(&self, slack: f64) -> Result<PrivacyCost, PrivacyError> {
        crate::composition::advanced_composition(&self.costs(), slack)
    }

    /// The ledger as runs of equal consecutive entries, in order: the compact form a checkpoint
    /// stores. A kickstarting teacher makes one release per visited state, mostly at a few
    /// distinct concentrations, so a million-entry ledger is a few hundred runs.
    pub fn runs(&self) -> Vec<LedgerRun> {
        let mut runs: Vec<LedgerRun> = Vec::new();
        for entry in &self.entries {
            match runs.last_mut() {
                Some(run) if run.entry == *entry => run.count += 1,
                _ => runs.push(LedgerRun {
                    entry: entry.clone(),
                    count: 1,
                }),
            }
        }
        runs
    }

    /// The ledger whose [`Ledger::runs`] are `runs`; every cost is validated as
    /// [`Ledger::record`] does, so a corrupted checkpoint cannot smuggle in a negative ε.
    pub fn from_runs(runs: impl IntoIterator<Item = LedgerRun>) -> Result<Self, PrivacyError> {
        let mut ledger = Self::new();
        for run in runs {
            PrivacyCost::new(run.entry.epsilon, run.entry.delta)?;
            let count = usize::try_from(run.count).map_err(|_| PrivacyError::OutOfRange {
                name: "count",
                value: run.count as f64,
                expected: "a run length that fits in memory",
            })?;
            ledger.entries.extend(std::iter::repeat_n(run.entry, count));
        }
        Ok(ledger)
    }

    /// Whether one more release of `cost` keeps the total within `budget` under `composition`.
    pub fn can_afford(
        &self,
        cost: PrivacyCost,
        budget: Budget,
        composition: Composition,
    ) -> Result<bool, PrivacyError> {
        let cost = PrivacyCost::new(cost.epsilon, cost.delta)?;
        let mut costs = self.costs();
        costs.push(cost);
        Ok(budget.covers(composition.compose(&costs)?))
    }
}
