//! What the two resumable controls protocols (`--dqn-controls`, `--reinforce-controls`) share:
//! one unit per setting × seed under `<dir>/units/<slug>-seed<k>/`, finished once its
//! `summary.json` exists (written last, atomically, so a unit cut short is rerun whole), and
//! the slides' three claims, each judged by a criterion fixed in the code before any run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use privrl_privacy::AccountantKind;
use serde::Serialize;

use super::controls::CurveColumn;
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
    /// Mean training return over the whole run (the secondary metric).
    fn mean_return(&self) -> f64;
    /// Mean return of the last [`FINAL_WINDOW`] episodes (the primary metric).
    fn final_return(&self) -> f64;
    /// The unit's seed.
    fn seed(&self) -> u64;
    /// The commit the unit ran at, where it records one ([`crate::run::source_commit`]).
    fn commit(&self) -> Option<&str>;

    /// Whether the claims judge this unit: a seed from [`JUDGED_SEEDS_FROM`] on (none of
    /// them fixed a budget) and a recorded commit (so that it provably ran after the
    /// criterion that judges it).
    fn judged(&self) -> bool {
        self.seed() >= JUDGED_SEEDS_FROM && self.commit().is_some()
    }
}

/// Episodes the primary metric averages at the end of a run: the final reward.
pub const FINAL_WINDOW: usize = 50;

/// Seeds a point needs before a claim is judged on it.
pub const MIN_SEEDS: usize = 5;

/// The first seed the controls' claims are judged on. The DQN budget was fixed from plain
/// DQN's solves on seeds 0, 1, 2 and the REINFORCE budget from seed 0's, and seeds 0–9 ran
/// before this criterion (under one that judged the mean training return on the budget's own
/// seeds, a check that could not fail): those units stay in the tables, unjudged.
pub const JUDGED_SEEDS_FROM: u64 = 10;

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

/// The primary metric of a unit written before it was recorded, from its `curve.csv` (the
/// returns are its [`CurveColumn::Return`] column): the mean of the last [`FINAL_WINDOW`]
/// returns, `None` for a shorter run.
pub(super) fn final_return_from_curve(summary: &Path) -> Result<Option<f64>> {
    let curve = summary.with_file_name("curve.csv");
    let text =
        std::fs::read_to_string(&curve).with_context(|| format!("reading {}", curve.display()))?;
    let returns: Vec<f64> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(CurveColumn::Return.index())?.parse().ok())
        .collect();
    let last = &returns[returns.len().saturating_sub(FINAL_WINDOW)..];
    Ok((last.len() == FINAL_WINDOW).then(|| mean(last)))
}

/// Every unit under `dir/units`, in path order; a unit written before the primary metric was
/// recorded gets it (at `final_return`, its field) from its curve: the same returns.
pub(super) fn read_units<U: Unit>(
    dir: &Path,
    final_return: fn(&mut U) -> &mut Option<f64>,
) -> Result<Vec<(PathBuf, U)>> {
    let mut units: Vec<(PathBuf, U)> = store(dir).read_all()?;
    for (path, unit) in &mut units {
        let recorded = final_return(unit);
        if recorded.is_none() {
            *recorded = final_return_from_curve(path)?;
        }
    }
    Ok(units)
}

/// The "every setting" tables: one of the units the claims judge, then (where there are any)
/// one of the earlier units, headed by `earlier_note`, each drawn by `table`.
pub(super) fn settings_tables<U: UnitOutcome + Clone>(
    report: &mut Report,
    units: &[(PathBuf, U)],
    earlier_note: &str,
    mut table: impl FnMut(&mut Report, &[(PathBuf, U)]),
) {
    let (judged, earlier): (Vec<_>, Vec<_>) = units.iter().cloned().partition(|(_, u)| u.judged());
    report.heading("Every setting, judged seeds");
    report.paragraph(&format!(
        "Units of seed {JUDGED_SEEDS_FROM} and up that record the commit they ran at: the \
         claims below are judged on these. Mean over seeds; final reward is the mean of the \
         last {FINAL_WINDOW} episodes (the primary metric), mean return the mean training \
         return (the secondary)."
    ));
    table(report, &judged);
    if !earlier.is_empty() {
        report.heading("Earlier units, not judged");
        report.paragraph(earlier_note);
        table(report, &earlier);
    }
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

/// Claims 1–2: solved in ≥ 2/3 of ≥ [`MIN_SEEDS`] seeds ([`solved_seeds_verdict`]), each
/// seed's (solved, failed).
pub(super) fn converges_verdict(
    seeds: impl IntoIterator<Item = (bool, bool)>,
) -> (Verdict, String) {
    let seeds: Vec<(bool, bool)> = seeds.into_iter().collect();
    let (verdict, measured) = solved_seeds_verdict(seeds.iter().copied());
    if seeds.len() < MIN_SEEDS {
        return (
            Verdict::Inconclusive,
            format!("{measured}; fewer than {MIN_SEEDS} seeds"),
        );
    }
    (verdict, measured)
}

/// Inconclusive, with `measured`, when fewer than two noise levels or fewer than
/// [`MIN_SEEDS`] seeds at some level are there to judge.
pub(super) fn too_few_seeds<T>(
    points: &[(f64, Vec<T>)],
    measured: &str,
) -> Option<(Verdict, String)> {
    (points.len() < 2 || points.iter().any(|(_, v)| v.len() < MIN_SEEDS)).then(|| {
        (
            Verdict::Inconclusive,
            format!("{measured}; fewer than {MIN_SEEDS} seeds"),
        )
    })
}

/// The standard error of the mean of `values` (0 for fewer than 2).
pub(super) fn standard_error(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(values);
    let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    (var / n as f64).sqrt()
}

/// Twice the standard error of the difference of the means of `a` and `b`.
pub(super) fn two_standard_errors(a: &[f64], b: &[f64]) -> f64 {
    2.0 * (standard_error(a).powi(2) + standard_error(b).powi(2)).sqrt()
}

/// `mean ± standard error (n seeds)` of one point.
pub(super) fn mean_se(values: &[f64]) -> String {
    match values.len() {
        0 => "– (0 seeds)".into(),
        n => format!(
            "{} ± {} ({n} seeds)",
            format_number(mean(values)),
            format_number(standard_error(values)),
        ),
    }
}

/// Claim 3's rule on one metric: `points` are (σ, one value per seed), σ ascending from 0.
/// Agrees if the largest σ's mean is below σ = 0's by more than twice the standard error of
/// the difference and no step up in σ raises it by more than twice its standard error;
/// Disagrees if the largest σ's ≥ σ = 0's; else Inconclusive.
pub(super) fn falls_verdict(points: &[(f64, Vec<f64>)]) -> (Verdict, String) {
    let measured = points
        .iter()
        .map(|(s, v)| format!("σ = {s}: {}", mean_se(v)))
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(inconclusive) = too_few_seeds(points, &measured) {
        return inconclusive;
    }
    let (first, last) = (&points[0].1, &points[points.len() - 1].1);
    let rises = points
        .windows(2)
        .any(|w| mean(&w[1].1) - mean(&w[0].1) > two_standard_errors(&w[0].1, &w[1].1));
    let verdict = if mean(last) >= mean(first) {
        Verdict::Disagrees
    } else if mean(first) - mean(last) > two_standard_errors(first, last) && !rises {
        Verdict::Agrees
    } else {
        Verdict::Inconclusive
    };
    (verdict, measured)
}

/// Claim 3: [`falls_verdict`] on the primary and the secondary metric; Inconclusive where they
/// differ, with both.
pub(super) fn trade_off_verdict(
    primary: &[(f64, Vec<f64>)],
    secondary: &[(f64, Vec<f64>)],
) -> (Verdict, String) {
    let (p, pm) = falls_verdict(primary);
    let (s, sm) = falls_verdict(secondary);
    let verdict = if p == s { p } else { Verdict::Inconclusive };
    (
        verdict,
        format!(
            "mean ± standard error over seeds; primary, final reward (mean of last \
             {FINAL_WINDOW}): {pm} → {}; secondary, mean training return: {sm} → {}",
            p.name(),
            s.name()
        ),
    )
}

/// The slides' three claims judged on a protocol's [`UnitOutcome::judged`] units: (1) the
/// plain agent solves, (2) DP-SGD at the smallest σ > 0 of the sweep solves, (3) the final
/// reward (and the mean training return beside it) falls along σ = 0 (clip only), then the σ
/// sweep. `units(slug)` gives a setting's finished units (one per seed);
/// `sigma_slug(σ)` names the sweep's settings.
pub(super) fn judge_claims<'u, U: UnitOutcome + 'u>(
    args: &DpsgdArgs,
    plain_slug: &str,
    clip_only_slug: &str,
    sigma_slug: impl Fn(f64) -> String,
    units: impl Fn(&str) -> Vec<&'u U>,
) -> [(Verdict, String); 3] {
    let judged =
        |slug: &str| -> Vec<&'u U> { units(slug).into_iter().filter(|u| u.judged()).collect() };
    let solved = |slug: &str| -> Vec<(bool, bool)> {
        judged(slug)
            .iter()
            .map(|u| (u.solved(), u.failed()))
            .collect()
    };
    let metric =
        |slug: &str, f: fn(&U) -> f64| -> Vec<f64> { judged(slug).into_iter().map(f).collect() };
    let mut sweep: Vec<f64> = args
        .sigma_sweep
        .iter()
        .copied()
        .filter(|&s| s > 0.0)
        .collect();
    sweep.sort_by(f64::total_cmp);
    let smallest = match sweep.first() {
        Some(&s) => {
            let (v, m) = converges_verdict(solved(&sigma_slug(s)));
            (v, format!("σ = {s}: {m}"))
        }
        None => (Verdict::Inconclusive, "no σ > 0 in the sweep".into()),
    };
    let along = |f: fn(&U) -> f64| -> Vec<(f64, Vec<f64>)> {
        std::iter::once((0.0, metric(clip_only_slug, f)))
            .chain(sweep.iter().map(|&s| (s, metric(&sigma_slug(s), f))))
            .collect()
    };
    [
        converges_verdict(solved(plain_slug)),
        smallest,
        trade_off_verdict(&along(U::final_return), &along(U::mean_return)),
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
        assert_eq!(
            converges_verdict([solved; 4]).0,
            Verdict::Inconclusive,
            "four seeds"
        );
        assert_eq!(converges_verdict([solved; 5]).0, Verdict::Agrees);
    }

    fn points(rows: &[(f64, [f64; 5])]) -> Vec<(f64, Vec<f64>)> {
        rows.iter().map(|(s, v)| (*s, v.to_vec())).collect()
    }

    /// Claim 3 on hand-worked numbers: a clear fall agrees, a rise disagrees, a fall within
    /// twice the standard error of the difference and a metric flip are Inconclusive.
    #[test]
    fn the_trade_off_criterion_follows_its_written_rule() {
        let falling = points(&[
            (0.0, [500.0, 490.0, 480.0, 470.0, 460.0]),
            (0.1, [300.0, 310.0, 320.0, 330.0, 340.0]),
            (1.0, [20.0, 22.0, 24.0, 26.0, 28.0]),
        ]);
        assert_eq!(falls_verdict(&falling).0, Verdict::Agrees);
        let rising = points(&[
            (0.0, [100.0; 5]),
            (1.0, [140.0, 150.0, 160.0, 150.0, 150.0]),
        ]);
        assert_eq!(falls_verdict(&rising).0, Verdict::Disagrees);
        // Means 14 and 12, each with standard error √10/√5 = √2: the difference 2 is below
        // 2·√(2 + 2) = 4, so the fall is within the noise.
        let within = points(&[
            (0.0, [10.0, 12.0, 14.0, 16.0, 18.0]),
            (1.0, [8.0, 10.0, 12.0, 14.0, 16.0]),
        ]);
        let (v, measured) = falls_verdict(&within);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(measured.contains("σ = 0: 14 ± 1.414"), "{measured}");
        // A significant rise in the middle (0 → 0.1) is not a trade-off either.
        let bump = points(&[
            (0.0, [100.0, 101.0, 102.0, 103.0, 104.0]),
            (0.1, [300.0, 301.0, 302.0, 303.0, 304.0]),
            (1.0, [10.0, 11.0, 12.0, 13.0, 14.0]),
        ]);
        assert_eq!(falls_verdict(&bump).0, Verdict::Inconclusive);
        // Primary and secondary agree: that verdict; they differ: Inconclusive with both.
        assert_eq!(trade_off_verdict(&falling, &falling).0, Verdict::Agrees);
        assert_eq!(trade_off_verdict(&rising, &rising).0, Verdict::Disagrees);
        let (v, measured) = trade_off_verdict(&falling, &rising);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(
            measured.contains("→ Agrees") && measured.contains("→ Disagrees"),
            "{measured}"
        );
        // Four seeds at a point: never judged.
        let few = vec![(0.0, vec![500.0; 4]), (1.0, vec![0.0; 4])];
        assert_eq!(falls_verdict(&few).0, Verdict::Inconclusive);
    }

    struct Fake {
        seed: u64,
        commit: Option<&'static str>,
        solved: bool,
    }

    impl UnitOutcome for Fake {
        fn solved(&self) -> bool {
            self.solved
        }
        fn failed(&self) -> bool {
            false
        }
        fn mean_return(&self) -> f64 {
            0.0
        }
        fn final_return(&self) -> f64 {
            0.0
        }
        fn seed(&self) -> u64 {
            self.seed
        }
        fn commit(&self) -> Option<&str> {
            self.commit
        }
    }

    /// Only seeds from 10 on that record a commit are judged: five solved seeds 0–4 (the
    /// kind that fixed a budget) or five without a commit leave claim 1 Inconclusive.
    #[test]
    fn claims_judge_only_fresh_seeds_with_a_recorded_commit() {
        let args = DpsgdArgs::quick(0, crate::backend::BackendChoice::default(), 1);
        let judge = |units: &[Fake]| {
            let refs: Vec<&Fake> = units.iter().collect();
            judge_claims(
                &args,
                "plain",
                "clip",
                |s| format!("{s}"),
                |slug| {
                    if slug == "plain" {
                        refs.clone()
                    } else {
                        Vec::new()
                    }
                },
            )[0]
            .0
        };
        let fresh: Vec<Fake> = (10..15)
            .map(|seed| Fake {
                seed,
                commit: Some("abc"),
                solved: true,
            })
            .collect();
        assert_eq!(judge(&fresh), Verdict::Agrees);
        let budget_seeds: Vec<Fake> = (0..5)
            .map(|seed| Fake {
                seed,
                commit: Some("abc"),
                solved: true,
            })
            .collect();
        assert_eq!(judge(&budget_seeds), Verdict::Inconclusive);
        let no_commit: Vec<Fake> = (10..15)
            .map(|seed| Fake {
                seed,
                commit: None,
                solved: true,
            })
            .collect();
        assert_eq!(judge(&no_commit), Verdict::Inconclusive);
    }
}
