//! `cargo xtask quickstart`: the README's main command. It runs a quick version of everything
//! that exists and writes `runs/quickstart/report.md`; every suite adds its quick mode here.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use privrl_envs::throughput::RandomActions;
use privrl_envs::{make, registry};
use serde::Serialize;

use crate::backend::{dispatch, BackendChoice};
use crate::bench::{env_throughput, env_throughput_table};
use crate::doctor::Doctor;
use crate::report::plot::LearningCurves;
use crate::report::{format_mean_std, Cell, Report};
use crate::run::{suite_dir, RunDir, RunName};
use crate::summary::SuiteOutcome;
use crate::sweep::{run_parallel, Job, Seeds};

/// Arguments of `quickstart`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct QuickstartArgs {
    /// Seeds of the random-policy baselines, e.g. `0..5` or `0,3,7`.
    #[arg(long, default_value = "0..5")]
    #[serde(skip)]
    pub seeds: Seeds,
    /// Episodes per seed in the random-policy baselines.
    #[arg(long, default_value_t = 100)]
    pub episodes: usize,
    /// Environment steps per throughput measurement.
    #[arg(long, default_value_t = 2_000_000)]
    pub env_steps: u64,
    /// Environment steps per seed of the short PPO run (3 seeds).
    #[arg(long, default_value_t = 30_000)]
    pub ppo_steps: u64,
    /// Backend of the backend check.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Worker threads for seed sweeps (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// Episode returns of a uniformly random policy.
#[derive(Debug, Serialize)]
struct RandomBaselineSummary {
    env: String,
    seed: u64,
    episodes: usize,
    mean_return: f64,
    mean_length: f64,
}

#[derive(Debug, Serialize)]
struct RandomBaselineConfig<'a> {
    env: &'a str,
    seed: u64,
    episodes: usize,
    policy: &'static str,
}

/// Runs `episodes` episodes of a uniformly random policy and records each one's return.
/// Returns the learning-curve points (cumulative steps, episode return).
fn random_baseline(env_name: &str, seed: u64, episodes: usize) -> Result<Vec<(f64, f64)>> {
    let run = RunDir::create(
        "quickstart",
        RunName::new("random").part(env_name).seed(seed),
    )?;
    run.write_config(&RandomBaselineConfig {
        env: env_name,
        seed,
        episodes,
        policy: "uniform random",
    })?;
    let mut metrics = run.metrics()?;
    let mut env = make(env_name)?;
    let n = env
        .action_space()
        .discrete_n()
        .expect("registered envs have discrete actions");
    let mut actions = RandomActions::new(n, seed);
    let mut curve = Vec::with_capacity(episodes);
    let mut total_steps = 0u64;
    let mut lengths = 0u64;
    env.reset(Some(seed));
    for episode in 0..episodes {
        let (mut episode_return, mut length) = (0.0, 0u64);
        loop {
            let step = env.step(actions.sample())?;
            episode_return += step.reward;
            length += 1;
            if step.done() {
                break;
            }
        }
        env.reset(None);
        total_steps += length;
        lengths += length;
        metrics.write_row(&[
            ("episode", episode as f64),
            ("steps", total_steps as f64),
            ("return", episode_return),
            ("length", length as f64),
        ])?;
        curve.push((total_steps as f64, episode_return));
    }
    let mean_return = curve.iter().map(|p| p.1).sum::<f64>() / episodes.max(1) as f64;
    run.write_summary(&RandomBaselineSummary {
        env: env_name.to_string(),
        seed,
        episodes,
        mean_return,
        mean_length: lengths as f64 / episodes.max(1) as f64,
    })?;
    Ok(curve)
}

/// Runs the quickstart and writes its report.
pub fn run(args: QuickstartArgs) -> Result<()> {
    let start = Instant::now();
    let dir = suite_dir("quickstart")?;
    let mut report = Report::new(&dir, "privrl quickstart");
    report.paragraph(
        "A quick run of everything privrl has so far, on the default CPU backend. \
         Each section links to its run directories under `runs/quickstart/`.",
    );

    // The quick suites run on the first seed.
    let seed = args.seeds.first().copied().unwrap_or(0);

    backend_section(&mut report, &args)?;
    environment_section(&mut report, &args)?;
    random_baselines_section(&mut report, &args, &dir)?;
    let inversion = inversion_section(&mut report, &args, seed, &dir)?;
    ppo_section(&mut report, &args)?;
    let dpsgd = dpsgd_section(&mut report, &args, seed, &dir)?;
    let pgc = pgc_section(&mut report, &args, seed, &dir)?;
    let leakage = leakage_section(&mut report, &args, seed, &dir)?;
    let kickstart = kickstart_section(&mut report, &args, seed, &dir)?;
    let audit = audit_section(&mut report, &args, seed, &dir)?;
    let dp_ppo = dp_ppo_section(&mut report, &args, seed, &dir)?;
    let headlines: Vec<(&str, SuiteOutcome)> = vec![
        ("Gradient inversion (QGI, RGI)", inversion),
        ("DP-SGD and local DP", dpsgd),
        ("PGC-A3C", pgc),
        ("Leakage", leakage),
        ("Privacy-preserving kickstarting", kickstart),
        ("Privacy audit", audit),
        ("DP-PPO (episode-level DP)", dp_ppo),
    ];
    headlines_section(&mut report, &headlines);

    report.paragraph(&format!(
        "Quickstart took {:.0} s.",
        start.elapsed().as_secs_f64()
    ));
    report.reproduce(["cargo xtask quickstart"]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Section 1: Backend: first- and second-order gradients on the chosen backend.
fn backend_section(report: &mut Report, args: &QuickstartArgs) -> Result<()> {
    let doctor = dispatch(args.backend, Doctor)?;
    report
        .heading("Backend check")
        .paragraph(&format!(
            "Backend `{}` (`--backend {}`). Second-order autodiff (`Autodiff<Autodiff<B>>`), which the \
             gradient inversion attacks need, returned a finite input gradient.",
            doctor.backend, args.backend
        ))
        .table(
            &["measurement", "ms"],
            vec![
                vec![
                    Cell::from("(64,64) MLP forward + backward, batch 32"),
                    Cell::from(doctor.first_order_ms),
                ],
                vec![
                    Cell::from("second-order gradient w.r.t. the input"),
                    Cell::from(doctor.second_order_ms),
                ],
            ],
        );
    Ok(())
}

/// Section 2: Environment throughput.
fn environment_section(report: &mut Report, args: &QuickstartArgs) -> Result<()> {
    let envs = env_throughput(args.env_steps, 16)?;
    report.heading("Environment throughput").paragraph(&format!(
        "Single thread, random actions, {} steps each (`cargo xtask bench` for more).",
        args.env_steps
    ));
    env_throughput_table(report, &envs, 16);
    Ok(())
}

/// Section 3: Random-policy baselines: the floor every learning curve is read against.
fn random_baselines_section(report: &mut Report, args: &QuickstartArgs, dir: &Path) -> Result<()> {
    let names: Vec<&'static str> = registry().iter().map(|spec| spec.name).collect();
    let jobs = names
        .iter()
        .flat_map(|&env| {
            args.seeds
                .iter()
                .map(move |&seed| Job::new(format!("random {env} seed {seed}"), (env, seed)))
        })
        .collect();
    let outcomes = run_parallel(jobs, args.threads, |(env, seed), _| {
        Ok((env, random_baseline(env, seed, args.episodes)?))
    })?
    .into_ok()?;

    report
        .heading("Random-policy baselines")
        .paragraph(&format!(
            "A uniformly random policy, {} episodes per seed, seeds {:?}. Mean episode return \
         per seed, then mean ± standard deviation over seeds.",
            args.episodes, args.seeds.0
        ));
    let mut rows = Vec::new();
    let mut plots = Vec::new();
    for &env in &names {
        let curves: Vec<Vec<(f64, f64)>> = outcomes
            .iter()
            .filter(|(_, (e, _))| *e == env)
            .map(|(_, (_, curve))| curve.clone())
            .collect();
        let means: Vec<f64> = curves
            .iter()
            .map(|c| c.iter().map(|p| p.1).sum::<f64>() / c.len().max(1) as f64)
            .collect();
        let threshold = registry()
            .into_iter()
            .find(|s| s.name == env)
            .and_then(|s| s.reward_threshold);
        rows.push(vec![
            Cell::from(env),
            Cell::from(format_mean_std(&means)),
            Cell::from(threshold.map_or("-".to_string(), |t| t.to_string())),
        ]);
        let files = LearningCurves::new(format!("{env}: uniformly random policy"))
            .series("random", curves)
            .save(&dir.join(format!("random-{env}")))?;
        plots.push((format!("{env}: episode return of a random policy"), files));
    }
    report.table(&["environment", "mean return", "solved at"], rows);
    for (caption, files) in &plots {
        report.plot(caption, files);
    }
    Ok(())
}

/// Section 4: Gradient inversion (QGI, RGI) on the rooms, quick mode.
fn inversion_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let inversion = crate::suites::inversion::run(crate::suites::inversion::InversionArgs {
        quick: true,
        samples: None,
        image_size: None,
        iterations: None,
        tv_weight: None,
        seed,
        backend: args.backend,
        skip_ablations: false,
        victims: None,
        normalisation: crate::suites::inversion::NormalisationArg::Paper,
        threads: args.threads,
        settings: None,
        convergence: None,
        results_dir: None,
        rooms: crate::suites::inversion::RoomSelection::Balanced,
        attack_batch: crate::suites::inversion::DEFAULT_ATTACK_BATCH,
    })?;
    report.heading("Gradient inversion").paragraph(&format!(
        "QGI and RGI on the active-perception rooms in quick mode (16×16 images, 4 samples, \
         300 iterations per stage): see [{}]({}). `cargo xtask suite inversion` runs larger \
         settings.",
        inversion.report.display(),
        pathdiff(&inversion.report, dir)
    ));
    Ok(inversion)
}

/// Section 5: A short PPO run on CartPole-v1.
fn ppo_section(report: &mut Report, args: &QuickstartArgs) -> Result<()> {
    let ppo_seeds: Vec<u64> = args.seeds.iter().copied().take(3).collect();
    let (summaries, ppo_plot) =
        crate::train::quick_ppo("quickstart", &ppo_seeds, args.ppo_steps, args.threads)?;
    let finals: Vec<f64> = summaries.iter().map(|s| s.final_mean_return_100).collect();
    report
        .heading("PPO on CartPole-v1")
        .paragraph(&format!(
            "PPO with Spinning Up's defaults and the kickstarting paper's 1000 steps per epoch, \
             {} environment steps per seed, seeds {:?}. Mean return of the last 100 episodes at \
             the end: {} (random policy: about 22). `cargo xtask train --algo ppo --seeds 0..5` \
             trains to the solved threshold.",
            args.ppo_steps,
            ppo_seeds,
            format_mean_std(&finals)
        ))
        .plot(
            "PPO on CartPole-v1: mean return of the last 100 episodes",
            &ppo_plot,
        );
    Ok(())
}

/// Section 6: DP-SGD and local DP for REINFORCE and DQN on CartPole-v1, quick mode.
fn dpsgd_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let dpsgd = crate::suites::dpsgd::run(crate::suites::dpsgd::DpsgdArgs::quick(
        seed,
        args.backend,
        args.threads,
    ))?;
    report.heading("DP-SGD and local DP").paragraph(&format!(
        "DP-SGD and observation-noise (LDP) REINFORCE and DQN on CartPole-v1 in quick mode (two \
         noise levels each, one seed, 150 episodes), with the ε each DP-SGD run spends: see \
         [{}]({}). `cargo xtask suite dpsgd` runs the full sweep.",
        dpsgd.report.display(),
        pathdiff(&dpsgd.report, dir)
    ));
    Ok(dpsgd)
}

/// Section 7: PGC-A3C (locally private distributed A3C), quick mode, in-process, in the setting
/// that learns at ε = ∞ (at the paper's setting as written no run learns: docs/pgc.md).
fn pgc_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let mut pgc_args = crate::suites::pgc::PgcSuiteArgs::quick(seed, args.backend, args.threads);
    pgc_args.optimizer = vec![crate::suites::pgc::PerMechanism {
        mechanism: None,
        value: crate::suites::pgc::OptimizerChoice::Adam,
    }];
    pgc_args.learner.actions = crate::suites::pgc::ActionsArg::Policy;
    pgc_args.learner.bias = true;
    let pgc = crate::suites::pgc::run(pgc_args)?;
    report
        .heading("Locally private distributed RL (PGC-A3C)")
        .paragraph(&format!(
            "Laplace and PRS at ε ∈ {{2, ∞}}, 3 trials, at most 2500 updates, in-process, \
             with Adam, sampled actions and biases (at the paper's setting as written no run \
             learns even at ε = ∞, so the effect of ε could not show): see [{}]({}). `cargo \
             xtask suite pgc` runs Tables 1–3 at scale.",
            pgc.report.display(),
            pathdiff(&pgc.report, dir)
        ));
    Ok(pgc)
}

/// Section 8: Leakage: the attacks against the defences, beside the utility the DP-SGD and PGC
/// suites just measured (it reads their runs).
/// `--quick` attacks 38 cells × 20 samples (about 15 min on 2 cores); two strengths per
/// family and 6 samples keep the headline's three cells (none, the largest σ, the smallest
/// ε) at an eighth of the time.
fn leakage_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let mut leakage_args =
        crate::suites::leakage::LeakageArgs::quick(seed, args.backend, args.threads);
    leakage_args.samples = Some(6);
    leakage_args.dp_sgd_noise = vec![0.01, 1.0];
    leakage_args.ldp_epsilon = [1.0, 1e4]
        .into_iter()
        .map(privrl_privacy::Epsilon::finite)
        .collect::<Result<_, _>>()?;
    let leakage = crate::suites::leakage::run(leakage_args)?;
    report
        .heading("Leakage: inversion against privatised gradients")
        .paragraph(&format!(
            "QGI and RGI against DP-SGD (σ ∈ {{0.01, 1}}), Laplace and PRS (ε ∈ {{1, 10⁴}}) at \
             16×16 px, 6 samples per cell, with the utility of the two suites above: see \
             [{}]({}). `cargo xtask suite leakage --quick` sweeps 5 σ and 6 ε on 20 samples.",
            leakage.report.display(),
            pathdiff(&leakage.report, dir)
        ));
    Ok(leakage)
}

/// Section 9: Privacy-preserving kickstarting, quick mode.
fn kickstart_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let kickstart = crate::suites::kickstart::run(crate::suites::kickstart::KickstartArgs::quick(
        seed,
        args.backend,
        args.threads,
    ))?;
    report
        .heading("Privacy-preserving kickstarting")
        .paragraph(&format!(
            "Dirichlet-privatised (64, 64) PPO teacher, (32, 32) PPO students, Fig. 2 of Gohari \
             et al. in quick mode (2 seeds, 15 epochs of 1000 steps): see [{}]({}). `cargo xtask \
             suite kickstart` runs the 10-seed version.",
            kickstart.report.display(),
            pathdiff(&kickstart.report, dir)
        ));
    Ok(kickstart)
}

/// Section 10: the privacy audit at CI size (seconds): an ε lower bound beside each audited
/// mechanism's stated or accounted ε.
fn audit_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let audit = crate::suites::audit::run(crate::suites::audit::AuditArgs {
        quick: true,
        out: None,
        seed,
        confidence: 0.95,
        delta: 1e-5,
        report_only: false,
        backend: args.backend,
    })?;
    report.heading("Privacy audit").paragraph(&format!(
        "Empirical ε lower bounds at 95% confidence for PGC's Laplace and PRS (per release) \
             and white-box DP-SGD with gradient canaries, each beside its stated or accounted ε, \
             at CI size: see [{}]({}). `cargo xtask audit` runs the full size.",
        audit.report.display(),
        pathdiff(&audit.report, dir)
    ));
    Ok(audit)
}

/// Section 11: DP-PPO, quick mode: ε ∈ {1, ∞} per episode, one seed, 200,000 CartPole steps.
fn dp_ppo_section(
    report: &mut Report,
    args: &QuickstartArgs,
    seed: u64,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let dp_ppo = crate::suites::dp_ppo::run(crate::suites::dp_ppo::DpPpoSuiteArgs::quick(
        seed,
        args.backend,
        args.threads,
    ))?;
    report.heading("DP-PPO").paragraph(&format!(
        "PPO with one episode as the unit of privacy on CartPole-v1, σ calibrated to ε = 1 per \
         episode (δ = 1e-5) and ε = ∞ (clipping only), one seed, 200,000 steps (64 episodes per \
         rollout, an expected 16 per step): see [{}]({}). It shows whether the private policy \
         learns, not the frontier: `cargo xtask suite dp-ppo` runs ε ∈ {{0.5, 1, 2, 4, 8, ∞}} \
         at 5 seeds and 2,000,000 steps, and `--leakage` the closed loop.",
        dp_ppo.report.display(),
        pathdiff(&dp_ppo.report, dir)
    ));
    Ok(dp_ppo)
}

/// What each quick mode is sized to show, judged by the criterion in its suite's code.
fn headlines_section(report: &mut Report, headlines: &[(&str, SuiteOutcome)]) {
    let rows = headlines
        .iter()
        .map(|(suite, outcome)| {
            vec![
                Cell::from(*suite),
                Cell::from(outcome.headline.effect.as_str()),
                Cell::from(outcome.headline.measured.as_str()),
                Cell::from(outcome.headline.verdict()),
            ]
        })
        .collect();
    report
        .heading("Headlines")
        .paragraph(
            "Each quick mode is sized so that its paper's headline effect can show; the \
             criterion is fixed in the suite's code before the run. \"not visible\" is a \
             result, not an error: the suite's report says why.",
        )
        .table(
            &["suite", "effect and criterion", "measured", "verdict"],
            rows,
        );
}

/// `target` relative to the directory `from`, for links inside runs/ (both under the runs root).
fn pathdiff(target: &std::path::Path, from: &std::path::Path) -> String {
    match (
        from.parent(),
        target.strip_prefix(from.parent().unwrap_or(from)),
    ) {
        (Some(_), Ok(rest)) => format!("../{}", rest.display()),
        _ => target.display().to_string(),
    }
}
