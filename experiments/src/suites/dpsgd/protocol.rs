//! What the two resumable controls protocols (`--dqn-controls`, `--reinforce-controls`) share:
//! one unit per setting × seed under `<dir>/units/<slug>-seed<k>/`, finished once its
//! `summary.json` exists (written last, atomically, so a unit cut short is rerun whole), and
//! the slides' three claims, each judged by a criterion fixed in the code before any run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use privrl_privacy::AccountantKind;
use serde::Serialize;

use super::mean;
use super::plan::DpsgdArgs;
use crate::backend::{dispatch, BackendTask};
use crate::report::{format_number, Cell, Report};
use crate::summary::{Headline, SuiteOutcome};
use crate::sweep::{run_parallel, Job, JobProgress};
use crate::unit::{seed_major, Unit, UnitStore};

/// A setting of a protocol: what names its units, and the unit it writes.
pub(super) trait UnitSetting: Clone + Send + Sync {
    /// What a finished unit of this setting writes (its `summary.json`).
    type Unit: Unit<Setting = Self>;
    /// Unit-directory prefix, unique per setting.
    fn slug(&self) -> &str;
}

/// What the slides' claims read from a finished unit.
pub(super) trait UnitOutcome {
    /// Whether the run reached the solving criterion within its budget.
    fn solved(&self) -> bool;
    /// Whether the run stopped early on an error (counted as unsolved, never dropped).
    fn failed(&self) -> bool;
    /// Mean training return over the whole run.
    fn mean_return(&self) -> f64;
}

/// One unit to run: `setting` at `seed`, written under `dir`.
pub(super) struct UnitTask<'a, S> {
    pub dir: &'a Path,
    pub args: &'a DpsgdArgs,
    pub setting: S,
    pub seed: u64,
    pub progress: &'a JobProgress,
}

/// The seeds `args` asks for (default 0, 1, 2).
pub(super) fn seeds(args: &DpsgdArgs) -> Result<Vec<u64>> {
    let seeds = args
        .seeds
        .as_ref()
        .map_or_else(|| vec![0, 1, 2], |s| s.0.clone());
    anyhow::ensure!(!seeds.is_empty(), "--seeds is empty");
    Ok(seeds)
}

/// The directory of one unit (the tests look inside).
#[cfg(test)]
pub(super) fn unit_dir(dir: &Path, slug: &str, seed: u64) -> PathBuf {
    dir.join("units").join(unit_name(slug, seed))
}

fn unit_name(slug: &str, seed: u64) -> String {
    format!("{slug}-seed{seed}")
}

/// The file of a protocol's unit under its store's root `<dir>/units`:
/// `<slug>-seed<k>/summary.json` (the [`Unit::path`] of both protocols).
pub(super) fn unit_path(root: &Path, slug: &str, seed: u64) -> PathBuf {
    root.join(unit_name(slug, seed)).join("summary.json")
}

/// A unit's `summary.json` as the committed units have it: pretty JSON without a final newline
/// (the [`Unit::text`] of both protocols).
pub(super) fn unit_text(unit: &impl Serialize) -> Result<String> {
    Ok(serde_json::to_string_pretty(unit)?)
}

/// The units of a protocol whose units and report live in `dir`.
pub(super) fn store<U: Unit>(dir: &Path) -> UnitStore<U> {
    UnitStore::new(dir.join("units"))
}

/// Runs every unit of `settings` × `seeds` that has no `summary.json` under `dir` yet,
/// seed-major (every setting of the first seed first, so a run cut short still has each
/// setting), `args.threads` at a time.
pub(super) fn run_missing_units<S>(
    dir: &Path,
    args: &DpsgdArgs,
    settings: &[S],
    seeds: &[u64],
) -> Result<()>
where
    S: UnitSetting,
    for<'a> UnitTask<'a, S>: BackendTask<Output = ()>,
{
    let plan = seed_major(settings, seeds.iter().copied());
    let jobs = store::<S::Unit>(dir)
        .missing(&plan)
        .into_iter()
        .map(|(setting, seed)| Job::new(format!("{} seed {seed}", setting.slug()), (setting, seed)))
        .collect();
    let backend = args.backend;
    run_parallel(jobs, args.threads, |(setting, seed), progress| {
        dispatch(
            backend,
            UnitTask {
                dir,
                args,
                setting,
                seed,
                progress,
            },
        )
    })?
    .into_ok()?;
    Ok(())
}

/// Writes a finished unit: its curve first, its summary last (atomically), so that a unit
/// without its summary is known to be unfinished and is rerun.
pub(super) fn write_unit<S: UnitSetting>(
    dir: &Path,
    setting: &S,
    seed: u64,
    curve: &str,
    summary: &S::Unit,
) -> Result<()> {
    let store = store::<S::Unit>(dir);
    let unit = store.dir(setting, seed)?;
    std::fs::write(unit.join("curve.csv"), curve)
        .with_context(|| format!("writing {}", unit.join("curve.csv").display()))?;
    store.write(setting, seed, summary)?;
    Ok(())
}

/// The mean ε of the units that have one, per accountant, each named: `36.49 (RDP)`, or
/// `30.2 (PLD); 36.49 (RDP)` where units of both are present (the two are never averaged).
pub(super) fn epsilon_by_accountant(
    units: impl IntoIterator<Item = (Option<f64>, AccountantKind)> + Clone,
) -> String {
    AccountantKind::ALL
        .iter()
        .filter_map(|&kind| {
            let eps: Vec<f64> = units
                .clone()
                .into_iter()
                .filter(|&(_, k)| k == kind)
                .filter_map(|(e, _)| e)
                .collect();
            (!eps.is_empty()).then(|| {
                let short = kind.slug().to_uppercase();
                format!("{} ({short})", format_number(mean(&eps)))
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A slide's claim and the rule that judges it (fixed before any run).
#[derive(Debug, Clone, Copy)]
pub(super) struct Claim {
    pub figure: &'static str,
    pub claim: &'static str,
    pub criterion: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Agrees,
    Disagrees,
    Inconclusive,
}

impl Verdict {
    pub(super) fn name(self) -> &'static str {
        match self {
            Verdict::Agrees => "Agrees",
            Verdict::Disagrees => "Disagrees",
            Verdict::Inconclusive => "Inconclusive",
        }
    }
}

/// Solved in ≥ 2/3 of ≥ 2 seeds: Agrees; in none of ≥ 2: Disagrees; else Inconclusive, from
/// each seed's (solved, failed).
pub(super) fn solved_seeds_verdict(
    seeds: impl IntoIterator<Item = (bool, bool)>,
) -> (Verdict, String) {
    let (mut n, mut solved, mut failed) = (0, 0, 0);
    for (s, f) in seeds {
        n += 1;
        solved += usize::from(s);
        failed += usize::from(f);
    }
    let verdict = if n < 2 {
        Verdict::Inconclusive
    } else if 3 * solved >= 2 * n {
        Verdict::Agrees
    } else if solved == 0 {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    };
    (
        verdict,
        format!("solved {solved}/{n} seeds ({failed} failed runs counted as unsolved)"),
    )
}

/// Claim 3 on the points (σ, mean returns of its seeds), σ ascending, σ = 0 first.
pub(super) fn trade_off_verdict(points: &[(f64, Vec<f64>)]) -> (Verdict, String) {
    let measured = points
        .iter()
        .map(|(s, r)| format!("σ = {s}: {} ({} seeds)", format_number(mean(r)), r.len()))
        .collect::<Vec<_>>()
        .join("; ");
    if points.len() < 2 || points.iter().any(|(_, r)| r.len() < 2) {
        return (Verdict::Inconclusive, measured);
    }
    let means: Vec<f64> = points.iter().map(|(_, r)| mean(r)).collect();
    let verdict = if means.windows(2).all(|w| w[1] < w[0]) {
        Verdict::Agrees
    } else if means[means.len() - 1] >= means[0] {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    };
    (verdict, measured)
}

/// The slides' three claims judged on a protocol's units: (1) the plain agent solves, (2) DP-SGD
/// at the smallest σ > 0 of the sweep solves, (3) the mean return falls along σ = 0 (clip
/// only), then the σ sweep. `units(slug)` gives a setting's finished units (one per seed);
/// `sigma_slug(σ)` names the sweep's settings.
pub(super) fn judge_claims<'u, U: UnitOutcome + 'u>(
    args: &DpsgdArgs,
    plain_slug: &str,
    clip_only_slug: &str,
    sigma_slug: impl Fn(f64) -> String,
    units: impl Fn(&str) -> Vec<&'u U>,
) -> [(Verdict, String); 3] {
    let solved = |slug: &str| -> Vec<(bool, bool)> {
        units(slug)
            .iter()
            .map(|u| (u.solved(), u.failed()))
            .collect()
    };
    let returns =
        |slug: &str| -> Vec<f64> { units(slug).iter().map(|u| u.mean_return()).collect() };
    let mut sweep: Vec<f64> = args
        .sigma_sweep
        .iter()
        .copied()
        .filter(|&s| s > 0.0)
        .collect();
    sweep.sort_by(f64::total_cmp);
    let smallest = match sweep.first() {
        Some(&s) => {
            let (v, m) = solved_seeds_verdict(solved(&sigma_slug(s)));
            (v, format!("σ = {s}: {m}"))
        }
        None => (Verdict::Inconclusive, "no σ > 0 in the sweep".into()),
    };
    let trade: Vec<(f64, Vec<f64>)> = std::iter::once((0.0, returns(clip_only_slug)))
        .chain(sweep.iter().map(|&s| (s, returns(&sigma_slug(s)))))
        .collect();
    [
        solved_seeds_verdict(solved(plain_slug)),
        smallest,
        trade_off_verdict(&trade),
    ]
}

/// The "Against the slides" section (headed `title`): `intro`, then one row per claim with its
/// criterion, what was measured and the verdict.
pub(super) fn claims_section(
    report: &mut Report,
    title: &str,
    intro: &str,
    claims: &[Claim],
    verdicts: &[(Verdict, String)],
) {
    let rows = claims
        .iter()
        .zip(verdicts)
        .map(|(claim, (verdict, measured))| {
            vec![
                Cell::Text(claim.figure.into()),
                Cell::Text(claim.claim.into()),
                Cell::Text(claim.criterion.into()),
                Cell::Text(measured.clone()),
                Cell::Text(verdict.name().into()),
            ]
        })
        .collect();
    report.heading(title);
    report.paragraph(intro);
    report.table(
        &["slides", "claim", "criterion", "measured", "verdict"],
        rows,
    );
}

/// Writes `report` and makes the protocol's headline of its second claim (the private agent
/// converges at a reasonable noise level), visible when it agrees.
pub(super) fn finish(
    report: Report,
    claims: &[Claim],
    verdicts: &[(Verdict, String)],
) -> Result<SuiteOutcome> {
    let path = report.write()?;
    let (v, m) = &verdicts[1];
    Ok(SuiteOutcome {
        report: path,
        headline: Headline {
            effect: claims[1].claim.to_owned(),
            measured: m.clone(),
            visible: *v == Verdict::Agrees,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_written_criteria() {
        let (solved, unsolved, failed) = ((true, false), (false, false), (false, true));
        assert_eq!(
            solved_seeds_verdict([solved, solved, failed]).0,
            Verdict::Agrees
        );
        assert_eq!(
            solved_seeds_verdict([solved, failed, failed]).0,
            Verdict::Inconclusive
        );
        assert_eq!(
            solved_seeds_verdict([unsolved, failed]).0,
            Verdict::Disagrees
        );
        assert_eq!(
            solved_seeds_verdict([solved]).0,
            Verdict::Inconclusive,
            "one seed"
        );
        assert!(solved_seeds_verdict([solved, failed])
            .1
            .contains("1 failed"));
        let falling = [
            (0.0, vec![90.0, 80.0]),
            (1.0, vec![50.0, 60.0]),
            (3.0, vec![20.0, 30.0]),
        ];
        assert_eq!(trade_off_verdict(&falling).0, Verdict::Agrees);
        let rising = [(0.0, vec![20.0, 30.0]), (1.0, vec![50.0, 60.0])];
        assert_eq!(trade_off_verdict(&rising).0, Verdict::Disagrees);
        let bumpy = [
            (0.0, vec![90.0, 80.0]),
            (1.0, vec![20.0, 30.0]),
            (3.0, vec![50.0, 60.0]),
        ];
        assert_eq!(trade_off_verdict(&bumpy).0, Verdict::Inconclusive);
        assert_eq!(
            trade_off_verdict(&[(0.0, vec![1.0]), (1.0, vec![0.0])]).0,
            Verdict::Inconclusive,
            "one seed per point"
        );
    }
}
