//! The one unit template of the long suites: plan → units on disk → resume → report.
//!
//! A long suite plans its work as units, one setting × seed each, in seed-major order
//! ([`seed_major`]: every setting at the first seed before any at the second, so that a run cut
//! short still has each setting). A finished unit is one file under the suite's results
//! directory, written atomically as it finishes ([`UnitStore::write`]), so a file on disk is
//! always a whole unit. A rerun runs only the units that are not on disk
//! ([`UnitStore::missing`], or [`UnitStore::unsettled`] where a unit on disk can still be
//! superseded), and the report is regenerated from whatever units exist
//! ([`UnitStore::read_all`]), saying how many.
//!
//! | suite | unit ([`Unit`]) | file |
//! |---|---|---|
//! | `dpsgd --dqn-controls` | `controls::UnitSummary` | `<dir>/units/<slug>-seed<k>/summary.json` |
//! | `dpsgd --reinforce-controls` | `ReinforceUnit` | `<dir>/reinforce/units/<slug>-seed<k>/summary.json` |
//! | `dpsgd --ldp-controls` | `LdpUnit` | `<dir>/ldp/units/<slug>-seed<k>/summary.json` |
//! | `pgc --ablation`, `--tables` | `pgc::units::Unit` | `<results>/<kind>/<setting>/seed<k>.json` |
//! | `kickstart` | `StudentSummary` | `<out>/kickstart[-<env>]/<setting>-seed<k>/summary.json` |
//! | `dp-ppo` | `DpPpoUnit` | `<dir>/units/eps<ε>-seed<k>/summary.json` |
//!
//! Where a unit is a whole run directory (`config.json`, `metrics.csv`, `summary.json`: the
//! kickstart suite's students and teacher, the DP-SGD σ sweep, the inversion suite's attack
//! cells), the run is reused only if it ran the same configuration:
//! [`crate::run::RunDir::completed_with`].

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::run::{json_text, read_json, write_atomic};

/// What a finished unit (one setting at one seed) writes, and where.
pub trait Unit: Serialize + DeserializeOwned {
    /// What the unit is one seed of.
    type Setting;

    /// The unit's file under its store's `root`: `<root>/<directory>/<file>.json`, one
    /// directory per setting (or per setting × seed) holding no other JSON file, so that
    /// [`UnitStore::read_all`] finds every unit by walking the directories.
    fn path(root: &Path, setting: &Self::Setting, seed: u64) -> PathBuf;

    /// The file's text: pretty JSON ending in a newline (as [`crate::run::write_json`]), unless
    /// a suite's committed units were written otherwise and new ones must match them byte for
    /// byte.
    fn text(&self) -> Result<String> {
        json_text(self)
    }
}

/// The finished units of one kind under `root`.
#[derive(Debug, Clone)]
pub struct UnitStore<U> {
    root: PathBuf,
    unit: PhantomData<fn() -> U>,
}

impl<U: Unit> UnitStore<U> {
    /// The units under `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            unit: PhantomData,
        }
    }

    /// Where the units live.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of the unit of `setting` at `seed`.
    pub fn path(&self, setting: &U::Setting, seed: u64) -> PathBuf {
        U::path(&self.root, setting, seed)
    }

    /// Whether the unit of `setting` at `seed` has finished.
    pub fn exists(&self, setting: &U::Setting, seed: u64) -> bool {
        self.path(setting, seed).is_file()
    }

    /// The unit of `setting` at `seed`, if it has finished.
    pub fn read(&self, setting: &U::Setting, seed: u64) -> Result<Option<U>> {
        let path = self.path(setting, seed);
        if path.is_file() {
            read_json(&path).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Writes a finished unit through a temporary file beside it, so that the unit's file is
    /// either absent or whole; returns its path. Anything else the unit keeps (a curve) is
    /// written before, into [`Self::dir`].
    pub fn write(&self, setting: &U::Setting, seed: u64, unit: &U) -> Result<PathBuf> {
        let path = self.path(setting, seed);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        write_atomic(&path, &unit.text()?)?;
        Ok(path)
    }

    /// The directory of the unit of `setting` at `seed` (created), for the files it keeps
    /// beside its unit file.
    pub fn dir(&self, setting: &U::Setting, seed: u64) -> Result<PathBuf> {
        let path = self.path(setting, seed);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// The units of `plan` not on disk yet, in plan order.
    pub fn missing(&self, plan: &[(U::Setting, u64)]) -> Vec<(U::Setting, u64)>
    where
        U::Setting: Clone,
    {
        plan.iter()
            .filter(|(setting, seed)| !self.exists(setting, *seed))
            .cloned()
            .collect()
    }

    /// The units of `plan` not on disk yet or whose unit on disk is not `settled` (a PGC trial
    /// that failed within a shorter cutoff than the one asked for now), in plan order.
    pub fn unsettled(
        &self,
        plan: &[(U::Setting, u64)],
        settled: impl Fn(&U) -> bool,
    ) -> Result<Vec<(U::Setting, u64)>>
    where
        U::Setting: Clone,
    {
        let mut out = Vec::new();
        for (setting, seed) in plan {
            if !self
                .read(setting, *seed)?
                .is_some_and(|unit| settled(&unit))
            {
                out.push((setting.clone(), *seed));
            }
        }
        Ok(out)
    }

    /// Every unit on disk, planned now or not, with its file, in path order: each directory
    /// under the root (sorted), then each `.json` file in it (sorted). A missing root is no
    /// units; a file that does not parse is an error that names it, never a gap in a table.
    pub fn read_all(&self) -> Result<Vec<(PathBuf, U)>> {
        let mut units = Vec::new();
        for dir in sorted_entries(&self.root)? {
            if !dir.is_dir() {
                continue;
            }
            for file in sorted_entries(&dir)? {
                if file.extension().is_some_and(|x| x == "json") && file.is_file() {
                    let unit = read_json(&file)?;
                    units.push((file, unit));
                }
            }
        }
        Ok(units)
    }
}

/// The entries of `dir`, sorted; none if it does not exist.
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut paths = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    paths.sort();
    Ok(paths)
}

/// The plan of `settings` × `seeds`, seed-major: every setting at the first seed, in the
/// settings' order, then every setting at the next.
pub fn seed_major<S: Clone>(settings: &[S], seeds: impl IntoIterator<Item = u64>) -> Vec<(S, u64)> {
    seeds
        .into_iter()
        .flat_map(|seed| settings.iter().map(move |s| (s.clone(), seed)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Trial {
        setting: String,
        seed: u64,
        score: f64,
    }

    impl Unit for Trial {
        type Setting = String;
        fn path(root: &Path, setting: &String, seed: u64) -> PathBuf {
            root.join(setting).join(format!("seed{seed}.json"))
        }
    }

    #[test]
    fn the_plan_is_seed_major() {
        let plan = seed_major(&["a", "b"], [3, 4]);
        assert_eq!(plan, [("a", 3), ("b", 3), ("a", 4), ("b", 4)]);
    }

    #[test]
    fn written_units_are_skipped_read_back_and_listed_in_path_order() {
        let root = crate::run::tests::temp_dir("unit-store");
        let store = UnitStore::<Trial>::new(root.join("units"));
        let plan = seed_major(&["b".to_string(), "a".to_string()], 0..2);
        assert_eq!(store.missing(&plan).len(), 4);
        assert!(store.read_all().unwrap().is_empty(), "no root: no units");
        let unit = |setting: &str, seed, score| Trial {
            setting: setting.into(),
            seed,
            score,
        };
        store.write(&"b".into(), 1, &unit("b", 1, 0.5)).unwrap();
        store.write(&"a".into(), 0, &unit("a", 0, 2.0)).unwrap();
        assert_eq!(
            store.missing(&plan),
            [("b".to_string(), 0), ("a".to_string(), 1)]
        );
        // A unit on disk that is not settled runs again.
        let unsettled = store.unsettled(&plan, |t| t.score > 1.0).unwrap();
        assert_eq!(unsettled.len(), 3);
        assert_eq!(store.read(&"a".into(), 0).unwrap(), Some(unit("a", 0, 2.0)));
        assert_eq!(store.read(&"a".into(), 1).unwrap(), None);
        let all: Vec<(String, u64)> = store
            .read_all()
            .unwrap()
            .into_iter()
            .map(|(_, t)| (t.setting, t.seed))
            .collect();
        assert_eq!(all, [("a".to_string(), 0), ("b".to_string(), 1)]);
        // Pretty JSON with a final newline; no temporary file left behind.
        let text = std::fs::read_to_string(store.path(&"b".into(), 1)).unwrap();
        assert!(text.ends_with("}\n") && text.contains("\n  \"score\": 0.5"));
        assert!(!root.join("units/b/seed1.json.tmp").exists());
    }
}
