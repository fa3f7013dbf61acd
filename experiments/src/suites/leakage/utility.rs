//! The utility column: what the DP-SGD and PGC suites measured at each defence strength, read
//! back from their runs' summaries.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use privrl_privacy::{GradientMechanismConfig, MechanismKind};

use crate::suites::dpsgd::{Method as DpsgdMethod, RunSummary as DpsgdRunSummary};
use crate::suites::inversion::Method;
use crate::suites::pgc::TrialSummary as PgcTrialSummary;
use crate::summary::read_summaries;

/// Utility at one defence strength, from another suite's runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Utility {
    pub(super) value: f64,
    /// ε that suite's accountant reported (DP-SGD), if any.
    pub(super) epsilon: Option<f64>,
}

/// Utility per cell, keyed by (method slug, defence family, strength bits).
#[derive(Debug, Default)]
pub(super) struct UtilityTable {
    cells: BTreeMap<(String, &'static str, u64), Utility>,
    pub(super) sources: Vec<String>,
}

impl UtilityTable {
    /// DP-SGD: mean training return (over seeds) of the DP-SGD suite's DQN (for QGI) and
    /// REINFORCE (for RGI) at the same σ. PGC: the success ratio of the PGC suite's trials (its
    /// Table 2) at the same mechanism and ε, for both attacks (PGC trains one A3C agent).
    pub(super) fn read(dpsgd: &Path, pgc: &Path) -> Result<Self> {
        let mut table = Self::default();
        let mut returns: BTreeMap<(String, u64), (Vec<f64>, Option<f64>)> = BTreeMap::new();
        for (_, s) in read_summaries::<DpsgdRunSummary>(dpsgd)? {
            let slug = match s.method {
                DpsgdMethod::DpSgdDqn => "qgi",
                DpsgdMethod::DpSgdReinforce => "rgi",
                DpsgdMethod::LdpDqn | DpsgdMethod::LdpReinforce => continue,
            };
            let entry = returns
                .entry((slug.to_owned(), s.noise.to_bits()))
                .or_default();
            entry.0.push(s.mean_return);
            entry.1 = match (entry.1, s.epsilon) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        if !returns.is_empty() {
            table.sources.push(format!(
                "DP-SGD: mean training return on CartPole-v1 from {}",
                dpsgd.display()
            ));
        }
        for ((slug, noise), (values, epsilon)) in returns {
            let value = values.iter().sum::<f64>() / values.len() as f64;
            table
                .cells
                .insert((slug, "dp-sgd", noise), Utility { value, epsilon });
        }
        let mut trials: BTreeMap<(&'static str, u64), (usize, usize)> = BTreeMap::new();
        for (_, s) in read_summaries::<PgcTrialSummary>(pgc)? {
            let (Some(epsilon), false) = (s.epsilon.get(), s.fig2) else {
                continue;
            };
            let family = match s.mechanism {
                MechanismKind::Laplace | MechanismKind::Prs => s.mechanism.name(),
                _ => continue,
            };
            let entry = trials.entry((family, epsilon.to_bits())).or_default();
            entry.0 += usize::from(s.first_success.is_some());
            entry.1 += 1;
        }
        if !trials.is_empty() {
            table.sources.push(format!(
                "Laplace and PRS: PGC-A3C success ratio on CartPole (Table 2) from {}",
                pgc.display()
            ));
        }
        for ((family, epsilon), (successes, count)) in trials {
            let utility = Utility {
                value: successes as f64 / count as f64,
                epsilon: Some(f64::from_bits(epsilon)),
            };
            for slug in ["qgi", "rgi"] {
                table
                    .cells
                    .insert((slug.to_owned(), family, epsilon), utility);
            }
        }
        Ok(table)
    }

    pub(super) fn get(&self, method: Method, defence: &GradientMechanismConfig) -> Option<Utility> {
        let strength = match *defence {
            GradientMechanismConfig::DpSgd {
                noise_multiplier, ..
            } => noise_multiplier,
            GradientMechanismConfig::Laplace { epsilon, .. }
            | GradientMechanismConfig::Prs { epsilon, .. } => epsilon.value(),
            _ => return None,
        };
        self.cells
            .get(&(
                method.slug().to_owned(),
                defence.kind().name(),
                strength.to_bits(),
            ))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privrl_privacy::Epsilon;

    /// Serialises either suite's summary through one closure.
    mod erased {
        pub trait Json {
            fn json(&self) -> String;
        }
        impl<T: serde::Serialize> Json for T {
            fn json(&self) -> String {
                serde_json::to_string(self).unwrap()
            }
        }
    }

    #[test]
    fn utility_is_read_from_the_other_suites_summaries() {
        let root = crate::run::tests::temp_dir("leakage-utility");
        let write = |dir: &str, name: &str, summary: &dyn erased::Json| {
            let path = root.join(dir).join(name);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("summary.json"), summary.json()).unwrap();
        };
        let dpsgd = |mean_return: f64, epsilon: f64| DpsgdRunSummary {
            method: DpsgdMethod::DpSgdDqn,
            noise: 0.1,
            seed: 0,
            episodes: 1,
            env_steps: 1,
            mean_return,
            median_return: mean_return,
            solved_at_episode: None,
            epsilon: Some(epsilon),
            unit: Some(privrl_agents::PrivacyUnit::Transition),
            adjacency: privrl_privacy::Adjacency::AddRemove,
            accountant: privrl_privacy::AccountantKind::Rdp,
            epsilon_if_every_episode_one_user: None,
            gradient_steps: 1,
            observation_noise_std: Vec::new(),
            wall_s: 0.0,
        };
        write("dpsgd", "a", &dpsgd(20.0, 5.0));
        write("dpsgd", "b", &dpsgd(40.0, 6.0));
        let pgc = |fig2: bool, first_success: Option<u64>| PgcTrialSummary {
            mechanism: MechanismKind::Laplace,
            epsilon: Epsilon::finite(10.0).unwrap(),
            buffer_size: 1,
            seed: 0,
            fig2,
            first_success,
            applied: 1,
            sent: 1,
            updates: 1,
            wall_s: 0.0,
        };
        for (i, success) in [Some(100), None, None, Some(7)].into_iter().enumerate() {
            write("pgc", &format!("t{i}"), &pgc(false, success));
        }
        write("pgc", "fig2", &pgc(true, None));
        let table = UtilityTable::read(&root.join("dpsgd"), &root.join("pgc")).unwrap();
        let dqn = table
            .get(
                Method::Qgi,
                &GradientMechanismConfig::DpSgd {
                    clip: 1.0,
                    noise_multiplier: 0.1,
                },
            )
            .unwrap();
        assert_eq!((dqn.value, dqn.epsilon), (30.0, Some(6.0)));
        let lap = GradientMechanismConfig::Laplace {
            epsilon: Epsilon::finite(10.0).unwrap(),
            clip: 0.01,
        };
        assert_eq!(table.get(Method::Rgi, &lap).unwrap().value, 0.5);
        assert!(table
            .get(
                Method::Rgi,
                &GradientMechanismConfig::DpSgd {
                    clip: 1.0,
                    noise_multiplier: 0.1
                }
            )
            .is_none());

        // A summary that is not what the suite writes is an error naming its file.
        std::fs::write(root.join("pgc").join("t0").join("summary.json"), "{}").unwrap();
        let error = UtilityTable::read(&root.join("dpsgd"), &root.join("pgc")).unwrap_err();
        assert!(
            format!("{error:#}").contains("t0/summary.json"),
            "{error:#}"
        );
    }
}
