//! `cargo xtask suite kickstart`: privacy-preserving kickstarting, Fig. 2 of Gohari et al.
//! (paper 000), with the teacher's privacy ledger.
//!
//! 1. A teacher-size PPO agent ((64, 64)) is trained for `teacher_epochs` and checkpointed in
//!    `runs/kickstart/teacher/` (reused on a rerun with the same configuration); its Lipschitz
//!    bound is computed once ([`privrl_agents::Teacher::from_actor`]).
//! 2. Students ((32, 32) PPO) and baselines train for `epochs` epochs per seed:
//!    (a) teacher-size and student-size PPO from scratch; (b) conventional kickstarting (exact
//!    teacher, λ = 0); (c) privacy-aware students (Dirichlet teacher, vanishing coefficients
//!    0.1 and 0.3, λ = 0.5; `--sweep` adds 0.1…0.9 and λ ∈ {0.1, 0.5, 1, 2}); (d)
//!    privacy-unaware students (λ = 0) with coefficients 0.3 and 0.9.
//! 3. The report (`report.rs`): per setting, on the mean return of the last 100 episodes
//!    (the criterion fixed before the runs it judges: `report::CRITERION_METRICS`), the
//!    environment steps until it reaches 90% of the way from a random policy's return to the
//!    teacher's, and the final mean over the last 100 episodes; the paper's own metric (first
//!    epoch whose epoch return crosses; mean of the last 3 epochs) beside it; the (ε, δ) of
//!    every release of the teacher's schedule, and the totals by basic and advanced
//!    composition. The settings with the paper's names run its objective as written
//!    (uniformly random releases penalised); privrl's φ ≡ 0 on them runs as `<name>-ignore`.
//!
//! Curves are the median over seeds with a 25–75% band of the smoothed (last-100-episode)
//! return. The paper's clouds are "the 85th percentile" of 30 seeds; with 5–10 seeds an
//! interquartile band is what the seeds can support.

mod plan;
mod report;
mod settings;
mod sitting;
mod smoothed;
mod students;
mod teacher;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

use self::plan::suite_dir_name;
use self::report::{write_ablation_report, write_report};
use self::students::SuiteTask;
use crate::backend::dispatch;
use crate::run::{runs_root, write_json};
use crate::summary::SuiteOutcome;

pub use self::plan::{Exhausted, KickstartArgs, KickstartError, MapOnto, VanishingPer};

const SUITE: &str = "kickstart";

/// Runs the suite under the run root `root` and writes its report; returns the report's path.
fn run_in(root: &Path, args: &KickstartArgs) -> Result<SuiteOutcome> {
    let plan = args.plan();
    ensure!(plan.seeds >= 1, "--seeds must be at least 1");
    ensure!(plan.epochs >= 1, "--epochs must be at least 1");
    ensure!(
        plan.teacher_epochs >= 1,
        "--teacher-epochs must be at least 1"
    );
    if let Some(minutes) = args.time_limit {
        ensure!(
            minutes.is_finite() && minutes >= 0.0,
            "--time-limit must be a number of minutes ≥ 0, got {minutes}"
        );
        ensure!(
            plan.checkpoint_every > 0,
            "--time-limit needs --checkpoint-every: without checkpoints a stopped run would \
             lose its epochs"
        );
    }
    let deadline = args
        .time_limit
        .map(|minutes| Instant::now() + Duration::from_secs_f64(minutes * 60.0));
    let dir = root.join(suite_dir_name(&plan));
    std::fs::create_dir_all(&dir)?;
    write_json(&dir.join("config.json"), &plan)?;
    let results = dispatch(
        plan.backend,
        SuiteTask {
            plan: plan.clone(),
            root: root.to_path_buf(),
            threads: args.threads,
            report_only: args.report_only,
            deadline,
        },
    )?;
    if results.stopped > 0 {
        println!(
            "time limit reached: {} of {} runs stopped and were checkpointed; the report covers \
             the {} finished runs. Rerun the same command to continue.",
            results.stopped,
            results.planned,
            results.runs.len()
        );
    }
    if plan.ablation {
        write_ablation_report(&plan, &results, &dir)
    } else {
        write_report(&plan, &results, &dir)
    }
}

/// Runs `suite kickstart` and prints where the report went.
pub fn run(args: KickstartArgs) -> Result<SuiteOutcome> {
    let root = match (&args.out, args.ablation) {
        (Some(out), _) => out.clone(),
        (None, true) => "results".into(),
        (None, false) => runs_root(),
    };
    let outcome = run_in(&root, &args)?;
    println!("wrote {}", outcome.report.display());
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::students::StudentSummary;
    use super::*;
    use crate::run::{read_json, read_metrics};
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: KickstartArgs,
    }

    fn random_teacher() -> students::TeacherShape {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let actor = privrl_agents::MlpConfig::new(4, vec![8], 2)
            .init::<burn::backend::NdArray>(&Default::default(), &mut rng);
        students::TeacherShape::of(&privrl_agents::Teacher::from_actor(&actor).unwrap())
    }

    #[test]
    fn weak_privacy_is_refused_by_name_unless_allowed() {
        let teacher = random_teacher();
        let plan_of = |extra: &[&str]| {
            let mut argv = vec!["kickstart", "--quick"];
            argv.extend_from_slice(extra);
            Cli::parse_from(argv).args.plan()
        };
        let aware = |plan: &plan::KickstartPlan| {
            settings::settings(plan)
                .unwrap()
                .into_iter()
                .find(|s| s.name.starts_with("aware-"))
                .unwrap()
        };
        // τ = 0.4 at k₀ = 5, η = 0.2: δ = 1 − 0.6⁴ + 0.4⁴ ≈ 0.896.
        let weak = plan_of(&["--tau", "0.4"]);
        let err = students::check_privacy(&weak, &aware(&weak), teacher).unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<KickstartError>(),
                Some(KickstartError::WeakPrivacy { delta, .. }) if (delta - 0.896).abs() < 1e-3
            ),
            "{err}"
        );
        assert!(err.to_string().contains("--allow-weak-privacy"));
        let allowed = plan_of(&["--tau", "0.4", "--allow-weak-privacy"]);
        let schedule = students::check_privacy(&allowed, &aware(&allowed), teacher)
            .unwrap()
            .unwrap();
        let cost = schedule[0].cost.unwrap();
        assert!((cost.delta - 0.896).abs() < 1e-3, "{cost:?}");
        // The default τ is solved for δ = 0.05 at k₀ (exact for m = 2), and no later release
        // has δ ≥ 0.5: the teacher is exhausted before the first such k.
        let default = plan_of(&[]);
        let schedule = students::check_privacy(&default, &aware(&default), teacher)
            .unwrap()
            .unwrap();
        let cost = schedule[0].cost.unwrap();
        assert!(cost.delta <= 0.05 && cost.delta > 0.0499, "{cost:?}");
        let (released, rest): (Vec<&students::ScheduledRelease>, Vec<_>) =
            schedule.iter().partition(|r| r.released);
        assert!(released
            .iter()
            .all(|r| r.cost.unwrap().delta < students::WEAK_DELTA));
        assert_eq!(rest.len(), 1, "{schedule:?}");
        // With c = 0.3 the next k, 1.5, has δ ≥ 0.5 for m = 2 at this τ: the floor stops it.
        let weak_next = rest[0];
        assert_eq!(weak_next.step, released.len() + 1);
        assert!(weak_next
            .cost
            .is_none_or(|c| c.delta >= students::WEAK_DELTA));
        // Allowed weak privacy keeps releasing down to the floor 0.01 (until δ's bound is 1).
        let loose = plan_of(&["--allow-weak-privacy"]);
        let long = students::check_privacy(&loose, &aware(&loose), teacher)
            .unwrap()
            .unwrap();
        assert!(long.iter().filter(|r| r.released).count() > released.len());
        // Settings without the mechanism have no release cost.
        let scratch = settings::settings(&default).unwrap().remove(0);
        assert!(students::check_privacy(&default, &scratch, teacher)
            .unwrap()
            .is_none());
    }

    /// `--settings` keeps the named settings in the mode's order (the reduced AirRaid
    /// protocol's six), refuses a name the mode lacks, and `--out` names the directory after
    /// the env alone.
    #[test]
    fn settings_can_be_restricted_by_name_and_unknown_names_are_refused() {
        let plan = |extra: &[&str]| {
            let mut argv = vec!["kickstart", "--sweep"];
            argv.extend_from_slice(extra);
            Cli::parse_from(argv).args.plan()
        };
        let reduced = plan(&[
            "--settings",
            "unaware-c0.3,ppo-64,ppo-32,kickstart,aware-c0.3-l0.5,aware-c0.3-l1",
            "--env",
            "gymnasium:ALE/AirRaid-v5?obs_type=ram#obs_scale=1/255",
            "--out",
            "results",
        ]);
        let names: Vec<String> = settings::settings(&reduced)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(
            names,
            [
                "ppo-64",
                "ppo-32",
                "kickstart",
                "aware-c0.3-l0.5",
                "unaware-c0.3",
                "aware-c0.3-l1"
            ]
        );
        assert_eq!(plan::suite_dir_name(&reduced), "kickstart-airraid");
        let err = settings::settings(&plan(&["--settings", "ppo-16"])).unwrap_err();
        assert!(
            err.to_string().contains("unknown setting `ppo-16`"),
            "{err}"
        );
        assert!(err.to_string().contains("aware-c0.3-l1"), "{err}");
        // Fig. 2: 7; the c sweep adds 7 (0.1 and 0.3 are there), the λ sweep 3 (0.5 is there);
        // each of the 4 + 7 + 3 private students has its `-ignore` twin.
        let all = settings::settings(&plan(&[])).unwrap();
        assert_eq!(all.len(), 7 + 7 + 3 + 14);
        // The paper's names run the objective as written; only the twins drop uniform releases.
        for s in all.iter().filter(|s| s.kick.is_some_and(|k| k.mechanism)) {
            let ignore = s.kick.unwrap().ignore_uninformative;
            assert_eq!(
                ignore,
                s.name.ends_with(settings::IGNORE_SUFFIX),
                "{}",
                s.name
            );
            assert_eq!(ignore, s.panels == ["ignore"], "{}", s.name);
        }
        assert!(all.iter().any(|s| s.name == "unaware-c0.9-ignore"));
    }

    #[test]
    fn the_ablation_varies_one_factor_at_a_time_from_the_pre_fix_setting() {
        let plan = Cli::parse_from(["kickstart", "--ablation"]).args.plan();
        assert_eq!(plan.tau, Some(0.0127));
        assert!(!plan.epoch_reset);
        let all = settings::settings(&plan).unwrap();
        let mut names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        let base = all.iter().find(|s| s.name == "base").unwrap();
        let b = base.kick.unwrap();
        assert!(!base.epoch_reset && !b.ignore_uninformative && b.map_onto == MapOnto::Mix);
        assert_eq!((b.vanishing, b.lambda, b.k0), (0.3, 0.5, 5.0));
        let varied: Vec<_> = all
            .iter()
            .filter(|s| s.factor.is_some() && s.name != "base")
            .collect();
        assert_eq!(varied.len(), 3 + 8 + 4 + 3);
        for s in varied {
            let k = s.kick.unwrap();
            let changed = [
                k.vanishing != b.vanishing,
                k.lambda != b.lambda,
                k.k0 != b.k0,
                k.map_onto != b.map_onto,
                k.ignore_uninformative != b.ignore_uninformative,
                k.mechanism != b.mechanism,
                s.epoch_reset != base.epoch_reset,
                s.hidden != base.hidden,
            ];
            assert_eq!(changed.iter().filter(|&&c| c).count(), 1, "{}", s.name);
        }
    }

    /// The report's reproduce line, parsed back as the command line it is, gives the plan that
    /// wrote the units: the committed AirRaid protocol's, and one with every optional flag.
    #[test]
    fn the_reproduce_line_parses_back_to_the_plan_that_wrote_the_units() {
        let cases: [&[&str]; 4] = [
            &[
                "--env",
                "gymnasium:ALE/AirRaid-v5?obs_type=ram#obs_scale=1/255",
                "--out",
                "results",
                "--sweep",
                "--settings",
                "ppo-64,ppo-32,kickstart,aware-c0.3-l0.5-ignore,unaware-c0.3-ignore,aware-c0.3-l1-ignore",
                "--seeds",
                "5",
                "--epochs",
                "1500",
                "--teacher-epochs",
                "4000",
                "--checkpoint-every",
                "25",
                "--delta-confidence",
                "0.95",
                "--allow-weak-privacy",
                "--backend",
                "ndarray",
            ],
            &["--quick"],
            &["--ablation", "--seeds", "10", "--threads", "1", "--out", "results"],
            &[
                "--k0", "2", "--lambda", "1", "--beta", "0.1", "--balance", "0.5", "--eta",
                "0.05", "--tau", "0.001", "--target-delta", "0.1", "--adjacency", "0.02",
                "--concentration-floor", "0.1", "--budget-epsilon", "100", "--map-onto",
                "project", "--exhausted", "stop", "--vanishing-per", "trajectory", "--grid-release", "500",
                "--no-epoch-reset", "--seed", "3", "--noise-rng", "secure", "--steps-per-epoch",
                "500",
            ],
        ];
        for extra in cases {
            let mut argv = vec!["kickstart"];
            argv.extend_from_slice(extra);
            let plan = Cli::parse_from(argv).args.plan();
            let dir = Path::new("results").join(plan::suite_dir_name(&plan));
            let line = report::reproduce_command(&plan, &dir);
            let rest = line
                .strip_prefix("cargo xtask suite kickstart ")
                .unwrap_or_else(|| panic!("{line}"));
            // Shell words: single quotes only protect the env id here.
            let words = rest.split_whitespace().map(|w| w.trim_matches('\''));
            let parsed = Cli::try_parse_from(std::iter::once("kickstart").chain(words))
                .unwrap_or_else(|e| panic!("{line}: {e}"))
                .args
                .plan();
            assert_eq!(parsed, plan, "{line}");
        }
    }

    #[test]
    fn epochs_to_the_own_plateau() {
        let curve: Vec<(f64, f64)> = [20.0, 100.0, 180.0, 200.0, 200.0]
            .iter()
            .enumerate()
            .map(|(i, &y)| (i as f64 + 1.0, y))
            .collect();
        // 90% of the way from 20 to 200 is 182: first reached at epoch 4.
        assert_eq!(students::epochs_to_plateau(&curve, 20.0, 200.0), Some(4));
        // From 20 to 180 it is 164: epoch 3.
        assert_eq!(students::epochs_to_plateau(&curve, 20.0, 180.0), Some(3));
        // A run that ends no better than random has no plateau to reach.
        assert_eq!(students::epochs_to_plateau(&curve, 20.0, 20.0), None);
    }

    #[test]
    fn a_tiny_suite_writes_runs_and_a_report() {
        let root = crate::run::tests::temp_dir("kickstart-suite");
        let mut args = Cli::parse_from([
            "kickstart",
            "--quick",
            "--seeds",
            "1",
            "--epochs",
            "2",
            "--teacher-epochs",
            "2",
            "--steps-per-epoch",
            "200",
            "--threads",
            "1",
        ])
        .args;
        let outcome = run_in(&root, &args).unwrap();
        let text = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(
            outcome.headline.measured.contains("kickstarted against"),
            "{text}"
        );
        assert!(text.contains("privacy-aware, c = 0.3"), "{text}");
        // Each claim prints its criterion and a verdict (1 seed: Inconclusive by rule).
        for criterion in [
            report::CRITERION_SPEED,
            report::CRITERION_LEVEL,
            report::CRITERION_UNAWARE,
        ] {
            assert!(text.contains(criterion), "{text}");
        }
        assert_eq!(text.matches("**Inconclusive**").count(), 3, "{text}");
        assert!(text.contains("fig2c.png"));
        let run = root.join(SUITE).join("aware-c0.3-l0.5-seed0");
        for file in ["config.json", "metrics.csv", "summary.json", "curve.png"] {
            assert!(run.join(file).is_file(), "{file} missing");
        }
        let summary: StudentSummary = read_json(&run.join("summary.json")).unwrap();
        let privacy = summary.privacy.unwrap();
        assert_eq!(
            privacy.dirichlet_releases + privacy.uniform_releases,
            2 * 200
        );
        assert!(privacy.basic.epsilon > 0.0);
        // The teacher is reused on a rerun with the same configuration.
        args.epochs = Some(1);
        run_in(&root, &args).unwrap();
        assert!(root.join(SUITE).join("teacher/checkpoint").exists());
    }

    /// Every file of every run under `dir` whose name is in `names`, by path.
    fn unit_files(dir: &Path, names: &[&str]) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        for run in std::fs::read_dir(dir).unwrap() {
            let run = run.unwrap();
            for name in names {
                if let Ok(bytes) = std::fs::read(run.path().join(name)) {
                    let unit = run.file_name().to_string_lossy().into_owned();
                    files.push((format!("{unit}/{name}"), bytes));
                }
            }
        }
        files.sort();
        files
    }

    /// `--time-limit 0` stops every run at its first epoch boundary (the teacher first, which
    /// the suite reports as an error naming the time limit); reruns continue them from their
    /// checkpoints. The interrupted suite ends with the same metrics and summaries, byte for
    /// byte, as one run straight through, and leaves no checkpoint behind.
    #[test]
    fn a_suite_stopped_at_its_time_limit_resumes_to_the_same_bytes() {
        let argv = |extra: &[&str]| {
            let mut argv = vec![
                "kickstart",
                "--quick",
                "--seeds",
                "1",
                "--epochs",
                "3",
                "--teacher-epochs",
                "2",
                "--steps-per-epoch",
                "100",
                "--threads",
                "1",
                "--checkpoint-every",
                "1",
            ];
            argv.extend_from_slice(extra);
            Cli::parse_from(argv).args
        };
        let straight = crate::run::tests::temp_dir("kickstart-straight");
        run_in(&straight, &argv(&[])).unwrap();

        let sittings = crate::run::tests::temp_dir("kickstart-sittings");
        let limited = argv(&["--time-limit", "0"]);
        let err = run_in(&sittings, &limited).unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<KickstartError>(),
                Some(KickstartError::TimeLimit { epoch: 1, .. })
            ),
            "{err:#}"
        );
        // Teacher finished; every student stops after 1 of 3 epochs, then after 2.
        for done in [1, 2] {
            let outcome = run_in(&sittings, &limited).unwrap();
            let text = std::fs::read_to_string(&outcome.report).unwrap();
            assert!(text.contains("Runs finished: 0 of"), "{text}");
            let unit = sittings.join(SUITE).join("ppo-32-seed0");
            assert_eq!(read_metrics(&unit.join("metrics.csv")).unwrap().len(), done);
            assert!(unit.join("partial").is_dir());
        }
        run_in(&sittings, &argv(&[])).unwrap();

        let names = ["metrics.csv", "summary.json", "config.json"];
        let dir = |root: &Path| root.join(SUITE);
        let expected = unit_files(&dir(&straight), &names);
        assert!(expected.len() > 10);
        assert_eq!(unit_files(&dir(&sittings), &names), expected);
        assert!(unit_files(&dir(&sittings), &["partial/progress.json"]).is_empty());
        // The straight and the checkpointed runs differ from a run without checkpoints only
        // by the seeded epoch resets, which their configuration records.
        let config = std::fs::read_to_string(dir(&straight).join("ppo-32-seed0/config.json"));
        assert!(config.unwrap().contains("\"reseed_at_epoch_end\": true"));
    }
}
