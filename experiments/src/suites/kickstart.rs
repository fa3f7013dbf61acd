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
//! 3. The report: epochs until the student's epoch return reaches 90% of the way from a
//!    random policy's return to the teacher's final return, the speed-up against teacher-size
//!    PPO, final return, and the (ε, δ) spent by basic and advanced composition.
//!
//! Curves are the median over seeds with a central 85% band (7.5th–92.5th percentile): the
//! paper's "85th percentile" clouds, read as the band holding 85% of the seeds.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{ensure, Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use clap::{Args, ValueEnum};
use privrl_agents::kickstart::lock;
use privrl_agents::{
    ActMode, Agent, ExhaustedTeacher, Ppo, PpoConfig, PrivacyAwareConfig, PrivacyAwareKickstarting,
    PrivateTeacher, PrivateTeacherConfig, Teacher, TeacherPrivacySummary, VanishingUnit,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::noise_rng::NoiseRng;
use crate::report::plot::{median, percentile, LearningCurves, PlotFiles};
use crate::report::{format_number, Cell, Report};
use crate::run::{read_json, runs_root, write_json, RunDir};
use crate::sweep::{run_parallel, Job, JobProgress};

const SUITE: &str = "kickstart";

/// What an exhausted teacher shares (command-line form of [`ExhaustedTeacher`]).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exhausted {
    /// Uniformly random policies, (0, 0)-DP.
    Uniform,
    /// Nothing.
    Stop,
}

/// Command-line form of [`VanishingUnit`].
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VanishingPer {
    /// Every PPO epoch.
    Rollout,
    /// Every episode.
    Trajectory,
}

/// Arguments of `suite kickstart`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct KickstartArgs {
    /// Quick mode: 2 seeds, 500 steps per epoch, 6 student epochs, 12 teacher epochs.
    #[arg(long)]
    pub quick: bool,
    /// Number of seeds per setting (0, 1, …, K−1). Default 2 quick, 10 otherwise (the
    /// paper: 30).
    #[arg(long)]
    pub seeds: Option<usize>,
    /// Environment id (`cargo xtask env list`, or `gymnasium:<id>` with the gymnasium
    /// feature). CartPole-v1 by measurement: (32, 32) PPO clearly lags (64, 64) there.
    #[arg(long, default_value = "CartPole-v1")]
    pub env: String,
    /// Student and baseline epochs per seed. Default 6 quick, 30 otherwise.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Teacher training epochs. Default 12 quick, 40 otherwise.
    #[arg(long)]
    pub teacher_epochs: Option<usize>,
    /// Environment steps per epoch (the paper: 1000). Default 500 quick, 1000 otherwise.
    #[arg(long)]
    pub steps_per_epoch: Option<usize>,
    /// Initial concentration k₀ of the Dirichlet mechanism (the paper: 5).
    #[arg(long, default_value_t = 5.0)]
    pub k0: f64,
    /// λ of the privacy-aware students in (c) (the paper: 0.5).
    #[arg(long, default_value_t = 0.5)]
    pub lambda: f64,
    /// Confidence level β of Lemma 1 in α_λ (eq. 15).
    #[arg(long, default_value_t = 0.05)]
    pub beta: f64,
    /// Weight of E\[φ_λ\] against the PPO surrogate (the paper's optional balance coefficient).
    #[arg(long, default_value_t = 1.0)]
    pub balance: f64,
    /// η of Δ_{m,η}. Default 0.4/m (0.2 for two actions: with τ = 0.0127 that gives δ ≈ 0.05
    /// at k = 5, the paper's δ).
    #[arg(long)]
    pub eta: Option<f64>,
    /// τ of Theorem 1 (outputs with an entry below τ are the δ event, eq. 6).
    #[arg(long, default_value_t = 0.0127)]
    pub tau: f64,
    /// Adjacency radius b of Definition 1 (the paper does not give its value).
    #[arg(long, default_value_t = 0.01)]
    pub adjacency: f64,
    /// The teacher is exhausted once k falls below this floor.
    #[arg(long, default_value_t = 0.01)]
    pub concentration_floor: f64,
    /// Total ε budget of the teacher under basic composition (none by default: the floor
    /// ends the sharing).
    #[arg(long)]
    pub budget_epsilon: Option<f64>,
    /// What an exhausted teacher shares.
    #[arg(long, value_enum, default_value_t = Exhausted::Uniform)]
    pub exhausted: Exhausted,
    /// When k is multiplied by the vanishing coefficient: every rollout (epoch; the default,
    /// because a paper AirRaid episode lasts about one 1000-step epoch while a CartPole episode
    /// starts at ~20 steps) or every trajectory (episode; the paper's wording).
    #[arg(long, value_enum, default_value_t = VanishingPer::Rollout)]
    pub vanishing_per: VanishingPer,
    /// Also run the full sweeps of (c): vanishing coefficients 0.1…0.9 at λ, and λ ∈ {0.1,
    /// 0.5, 1, 2} at coefficient 0.3.
    #[arg(long)]
    pub sweep: bool,
    /// Seed of the teacher's training (students and baselines use seeds 0..K).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Worker threads (0: one per core); each trains one (setting, seed).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub threads: usize,
    /// Where the teacher's Dirichlet releases draw from: `seeded` (from each run's seed,
    /// reproducible) or `secure` (the OS CSPRNG).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
}

/// Resolved parameters (what the suite's `config.json` records).
#[derive(Debug, Clone, Serialize, PartialEq)]
struct KickstartPlan {
    env: String,
    seeds: usize,
    epochs: usize,
    teacher_epochs: usize,
    steps_per_epoch: usize,
    teacher_hidden: Vec<usize>,
    student_hidden: Vec<usize>,
    k0: f64,
    lambda: f64,
    beta: f64,
    balance: f64,
    eta: Option<f64>,
    tau: f64,
    adjacency: f64,
    concentration_floor: f64,
    budget_epsilon: Option<f64>,
    exhausted: Exhausted,
    vanishing_per: VanishingPer,
    sweep: bool,
    seed: u64,
    backend: BackendChoice,
    band_percentiles: (f64, f64),
    noise_rng: NoiseRng,
}

impl KickstartArgs {
    /// Quick mode with every other flag at its default (for `quickstart`).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            seeds: None,
            env: "CartPole-v1".into(),
            epochs: None,
            teacher_epochs: None,
            steps_per_epoch: None,
            k0: 5.0,
            lambda: 0.5,
            beta: 0.05,
            balance: 1.0,
            eta: None,
            tau: 0.0127,
            adjacency: 0.01,
            concentration_floor: 0.01,
            budget_epsilon: None,
            exhausted: Exhausted::Uniform,
            vanishing_per: VanishingPer::Rollout,
            sweep: false,
            seed,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
        }
    }

    fn plan(&self) -> KickstartPlan {
        let pick =
            |v: Option<usize>, quick, full| v.unwrap_or(if self.quick { quick } else { full });
        KickstartPlan {
            env: self.env.clone(),
            seeds: pick(self.seeds, 2, 10),
            epochs: pick(self.epochs, 6, 30),
            teacher_epochs: pick(self.teacher_epochs, 12, 40),
            steps_per_epoch: pick(self.steps_per_epoch, 500, 1000),
            teacher_hidden: vec![64, 64],
            student_hidden: vec![32, 32],
            k0: self.k0,
            lambda: self.lambda,
            beta: self.beta,
            balance: self.balance,
            eta: self.eta,
            tau: self.tau,
            adjacency: self.adjacency,
            concentration_floor: self.concentration_floor,
            budget_epsilon: self.budget_epsilon,
            exhausted: self.exhausted,
            vanishing_per: self.vanishing_per,
            sweep: self.sweep,
            seed: self.seed,
            backend: self.backend,
            band_percentiles: (7.5, 92.5),
            noise_rng: self.noise_rng,
        }
    }
}

impl KickstartPlan {
    fn ppo(&self, hidden: &[usize]) -> PpoConfig {
        PpoConfig::new()
            .with_steps_per_epoch(self.steps_per_epoch)
            .with_hidden(hidden.to_vec())
    }

    fn teacher_config(
        &self,
        actions: usize,
        mechanism: bool,
        vanishing: f64,
    ) -> PrivateTeacherConfig {
        PrivateTeacherConfig::new()
            .with_mechanism(mechanism)
            .with_initial_concentration(self.k0)
            .with_vanishing_coefficient(vanishing)
            .with_vanishing_unit(match self.vanishing_per {
                VanishingPer::Rollout => VanishingUnit::Rollout,
                VanishingPer::Trajectory => VanishingUnit::Trajectory,
            })
            .with_concentration_floor(self.concentration_floor)
            .with_eta(self.eta.unwrap_or(0.4 / actions as f64))
            .with_tau(self.tau)
            .with_adjacency(self.adjacency)
            .with_budget_epsilon(self.budget_epsilon)
            .with_exhausted(match self.exhausted {
                Exhausted::Uniform => ExhaustedTeacher::Uniform,
                Exhausted::Stop => ExhaustedTeacher::Stop,
            })
            .with_noise_rng(self.noise_rng.mode())
    }
}

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/// How a student is kickstarted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Kick {
    /// Dirichlet mechanism on (else the exact teacher policy).
    mechanism: bool,
    /// Vanishing coefficient of k.
    vanishing: f64,
    /// λ of eq. 15.
    lambda: f64,
}

/// One curve of Fig. 2: a network size and, for students, how they are kickstarted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Setting {
    /// Run-name prefix, e.g. `aware-c0.3-l0.5`.
    name: String,
    /// Legend label.
    label: String,
    /// Panels of Fig. 2 it appears in (`a`, `b`, `c`, `d`, `sweep-c`, `sweep-l`).
    panels: Vec<String>,
    /// Hidden widths.
    hidden: Vec<usize>,
    /// Kickstarting, if any.
    kick: Option<Kick>,
}

fn settings(plan: &KickstartPlan) -> Vec<Setting> {
    let panels = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out = vec![
        Setting {
            name: "ppo-64".into(),
            label: "PPO (64, 64), no kickstarting".into(),
            panels: panels(&["a", "b", "c", "d"]),
            hidden: plan.teacher_hidden.clone(),
            kick: None,
        },
        Setting {
            name: "ppo-32".into(),
            label: "PPO (32, 32), no kickstarting".into(),
            panels: panels(&["a", "b", "c", "d"]),
            hidden: plan.student_hidden.clone(),
            kick: None,
        },
        Setting {
            name: "kickstart".into(),
            label: "kickstarting, no privacy (λ = 0)".into(),
            panels: panels(&["b"]),
            hidden: plan.student_hidden.clone(),
            kick: Some(Kick {
                mechanism: false,
                vanishing: 1.0,
                lambda: 0.0,
            }),
        },
    ];
    let aware = |c: f64, lambda: f64, panels: Vec<String>| Setting {
        name: format!("aware-c{c}-l{lambda}"),
        label: format!("privacy-aware, c = {c}, λ = {lambda}"),
        panels,
        hidden: plan.student_hidden.clone(),
        kick: Some(Kick {
            mechanism: true,
            vanishing: c,
            lambda,
        }),
    };
    for c in [0.1, 0.3] {
        out.push(aware(c, plan.lambda, panels(&["c"])));
    }
    for c in [0.3, 0.9] {
        out.push(Setting {
            name: format!("unaware-c{c}"),
            label: format!("privacy-unaware, c = {c}, λ = 0"),
            panels: panels(&["d"]),
            hidden: plan.student_hidden.clone(),
            kick: Some(Kick {
                mechanism: true,
                vanishing: c,
                lambda: 0.0,
            }),
        });
    }
    if plan.sweep {
        for i in 1..=9 {
            let c = f64::from(i) / 10.0;
            match out
                .iter_mut()
                .find(|s| s.name == format!("aware-c{c}-l{}", plan.lambda))
            {
                Some(s) => s.panels.push("sweep-c".into()),
                None => out.push(aware(c, plan.lambda, panels(&["sweep-c"]))),
            }
        }
        for lambda in [0.1, 0.5, 1.0, 2.0] {
            match out
                .iter_mut()
                .find(|s| s.name == format!("aware-c0.3-l{lambda}"))
            {
                Some(s) => s.panels.push("sweep-l".into()),
                None => out.push(aware(0.3, lambda, panels(&["sweep-l"]))),
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Teacher
// ---------------------------------------------------------------------------------------------

/// `summary.json` of the teacher run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TeacherSummary {
    /// Mean return of `evaluation_episodes` episodes of its stochastic policy.
    final_return: f64,
    evaluation_episodes: usize,
    /// Mean return of a uniformly random policy (the 0% level of the threshold).
    random_return: f64,
    /// Certified Lipschitz bound of softmax ∘ MLP.
    lipschitz: f64,
    /// Epoch returns of its training.
    curve: Vec<(f64, f64)>,
}

/// Mean return of `episodes` episodes of a uniformly random policy.
fn random_return(env: &str, episodes: usize, seed: u64) -> Result<f64> {
    let mut env = privrl_envs::make(env)?;
    let n = env
        .action_space()
        .discrete_n()
        .context("discrete actions")?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut total = 0.0;
    env.reset(Some(seed));
    for _ in 0..episodes {
        loop {
            let step = env.step(rng.random_range(0..n))?;
            total += step.reward;
            if step.done() {
                break;
            }
        }
        env.reset(None);
    }
    Ok(total / episodes as f64)
}

fn flat(obs: &privrl_envs::Obs) -> Result<Vec<f32>> {
    let mut out = vec![0.0; obs.flat_len()];
    obs.write_flat(&mut out)?;
    Ok(out)
}

/// Mean return of `episodes` episodes of `agent`'s stochastic policy on a fresh environment.
fn evaluate(agent: &mut dyn Agent, env: &str, episodes: usize, seed: u64) -> Result<f64> {
    let mut env = privrl_envs::make(env)?;
    let mut total = 0.0;
    let mut obs = flat(&env.reset(Some(seed)))?;
    for _ in 0..episodes {
        for _ in 0..100_000 {
            let step = env.step(agent.act(&obs, ActMode::Stochastic))?;
            total += step.reward;
            if step.done() {
                break;
            }
            obs = flat(&step.obs)?;
        }
        obs = flat(&env.reset(None))?;
    }
    Ok(total / episodes as f64)
}

/// Trains (or reloads) the teacher; returns its policy and summary.
fn teacher<B: Backend>(
    plan: &KickstartPlan,
    root: &Path,
    device: &B::Device,
) -> Result<(Teacher, TeacherSummary)> {
    let run = RunDir::create_in(root, SUITE, "teacher")?;
    let config = (
        &plan.env,
        plan.teacher_epochs,
        plan.ppo(&plan.teacher_hidden),
        plan.seed,
    );
    let config_json = serde_json::to_value(&config)?;
    let checkpoint = run.file("checkpoint");
    let mut ppo = Ppo::<Autodiff<B>>::new(
        plan.ppo(&plan.teacher_hidden),
        privrl_envs::make(&plan.env)?,
        device,
        plan.seed + 10_000,
    )?;
    let reuse = run.is_complete()
        && read_json::<serde_json::Value>(&run.file("config.json")).ok() == Some(config_json);
    if reuse {
        ppo.load_checkpoint(&checkpoint)?;
        let summary: TeacherSummary = read_json(&run.file("summary.json"))?;
        tracing::info!("reusing the teacher in {}", run.path().display());
        return Ok((Teacher::from_actor(ppo.actor())?, summary));
    }
    run.write_config(&config)?;
    let mut metrics = run.metrics()?;
    let bar = crate::sweep::progress_bar(plan.teacher_epochs as u64, "teacher");
    let mut curve = Vec::new();
    for _ in 0..plan.teacher_epochs {
        let stats = ppo.train_epoch()?;
        metrics.write_row(&stats.row())?;
        curve.push((stats.epoch as f64, stats.epoch_return));
        bar.inc(1);
        bar.set_message(format!("return {}", format_number(stats.epoch_return)));
    }
    bar.finish_and_clear();
    ppo.save_checkpoint(&checkpoint)?;
    let teacher = Teacher::from_actor(ppo.actor())?;
    let episodes = 20;
    let summary = TeacherSummary {
        final_return: evaluate(&mut ppo, &plan.env, episodes, plan.seed + 20_000)?,
        evaluation_episodes: episodes,
        random_return: random_return(&plan.env, 100, plan.seed + 30_000)?,
        lipschitz: teacher.lipschitz().upper_bound,
        curve,
    };
    LearningCurves::new(format!("teacher (64, 64) PPO on {}", plan.env))
        .x_label("epoch")
        .y_label("epoch return")
        .series("teacher", vec![summary.curve.clone()])
        .save(&run.file("curve"))?;
    run.write_summary(&summary)?;
    Ok((teacher, summary))
}

// ---------------------------------------------------------------------------------------------
// Students
// ---------------------------------------------------------------------------------------------

/// `summary.json` of one (setting, seed) run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StudentSummary {
    setting: String,
    seed: u64,
    /// Mean epoch return over the last 3 epochs.
    final_return: f64,
    /// First epoch whose epoch return reaches the threshold.
    epochs_to_threshold: Option<usize>,
    threshold: f64,
    /// The teacher's privacy accounting (kickstarted students with the mechanism).
    privacy: Option<TeacherPrivacySummary>,
    /// Epoch at which the teacher was exhausted, if it was.
    exhausted_at_epoch: Option<usize>,
    /// (epoch, epoch return), NaN epochs carried forward.
    curve: Vec<(f64, f64)>,
}

struct StudentJob {
    setting: Setting,
    seed: u64,
}

fn first_at_least(curve: &[(f64, f64)], threshold: f64) -> Option<usize> {
    curve
        .iter()
        .find(|p| p.1 >= threshold)
        .map(|p| p.0 as usize)
}

#[allow(clippy::too_many_arguments)]
fn train_student<B: Backend>(
    plan: &KickstartPlan,
    job: &StudentJob,
    teacher: &Teacher,
    threshold: f64,
    root: &Path,
    device: &B::Device,
    progress: Option<&JobProgress>,
) -> Result<StudentSummary> {
    let Setting {
        name, hidden, kick, ..
    } = &job.setting;
    let run = RunDir::create_in(root, SUITE, format!("{name}-seed{}", job.seed))?;
    let ppo_config = plan.ppo(hidden);
    let mut ppo = Ppo::<Autodiff<B>>::new(
        ppo_config.clone(),
        privrl_envs::make(&plan.env)?,
        device,
        job.seed,
    )?;
    let mut shared = None;
    let mut teacher_config = None;
    let mut student_config = None;
    if let Some(kick) = kick {
        let tc = plan.teacher_config(teacher.actions(), kick.mechanism, kick.vanishing);
        let private = Arc::new(Mutex::new(PrivateTeacher::new(
            teacher.clone(),
            tc.clone(),
            job.seed + 1_000_000,
        )?));
        let sc = PrivacyAwareConfig::new()
            .with_lambda(kick.lambda)
            .with_beta(plan.beta)
            .with_balance(plan.balance);
        ppo.set_auxiliary_loss(Box::new(PrivacyAwareKickstarting::new(
            private.clone(),
            sc.clone(),
        )?));
        shared = Some(private);
        teacher_config = Some(tc);
        student_config = Some(sc);
    }
    let config = serde_json::json!({
        "setting": job.setting,
        "seed": job.seed,
        "env": plan.env,
        "epochs": plan.epochs,
        "threshold": threshold,
        "ppo": ppo_config,
        "teacher": teacher_config,
        "student": student_config,
        "backend": plan.backend,
    });
    // Through text and back, as the file on disk is, so that the comparison is exact.
    let config: serde_json::Value = serde_json::from_str(&config.to_string())?;
    // A finished run with the same configuration is read back instead of retrained.
    if run.is_complete()
        && read_json::<serde_json::Value>(&run.file("config.json")).ok() == Some(config.clone())
    {
        return read_json(&run.file("summary.json"));
    }
    run.write_config(&config)?;
    let mut metrics = run.metrics()?;
    let bar = progress.map(|p| p.bar(plan.epochs as u64));
    let mut curve: Vec<(f64, f64)> = Vec::new();
    let mut exhausted_at_epoch = None;
    for epoch in 1..=plan.epochs {
        let stats = ppo.train_epoch()?;
        let mut row = stats.row();
        if let Some(private) = &shared {
            let teacher = lock(private);
            let spent = teacher.spent_basic();
            row.extend([
                ("concentration", teacher.concentration()),
                ("epsilon_basic", spent.epsilon),
                ("delta_basic", spent.delta),
                ("releases", teacher.ledger().len() as f64),
            ]);
            if teacher.is_exhausted() && exhausted_at_epoch.is_none() {
                exhausted_at_epoch = Some(epoch);
            }
        }
        metrics.write_row(&row)?;
        let previous = curve.last().map_or(f64::NAN, |p| p.1);
        let y = if stats.epoch_return.is_finite() {
            stats.epoch_return
        } else {
            previous
        };
        curve.push((epoch as f64, y));
        if let Some(bar) = &bar {
            bar.inc(1);
            bar.set_message(format!("return {}", format_number(y)));
        }
    }
    let tail: Vec<f64> = curve
        .iter()
        .rev()
        .take(3)
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    let privacy = match &shared {
        Some(private) if lock(private).config().mechanism => Some(lock(private).summary()?),
        _ => None,
    };
    let summary = StudentSummary {
        setting: name.clone(),
        seed: job.seed,
        final_return: tail.iter().sum::<f64>() / tail.len().max(1) as f64,
        epochs_to_threshold: first_at_least(&curve, threshold),
        threshold,
        privacy,
        exhausted_at_epoch,
        curve,
    };
    LearningCurves::new(format!(
        "{} on {}, seed {}",
        job.setting.label, plan.env, job.seed
    ))
    .x_label("epoch")
    .y_label("epoch return")
    .series(name.clone(), vec![summary.curve.clone()])
    .save(&run.file("curve"))?;
    run.write_summary(&summary)?;
    Ok(summary)
}

struct SuiteTask {
    plan: KickstartPlan,
    root: PathBuf,
    threads: usize,
}

/// Everything the report needs.
struct SuiteResults {
    teacher: TeacherSummary,
    threshold: f64,
    settings: Vec<Setting>,
    runs: Vec<StudentSummary>,
}

impl BackendTask for SuiteTask {
    type Output = SuiteResults;

    fn run<B: Backend>(self, device: B::Device) -> Result<SuiteResults> {
        let SuiteTask {
            plan,
            root,
            threads,
        } = self;
        let (teacher, teacher_summary) = teacher::<B>(&plan, &root, &device)?;
        // 90% of the way from a random policy's return to the teacher's.
        let threshold = teacher_summary.random_return
            + 0.9 * (teacher_summary.final_return - teacher_summary.random_return);
        let settings = settings(&plan);
        let mut jobs = Vec::new();
        for setting in &settings {
            for seed in 0..plan.seeds as u64 {
                jobs.push(Job::new(
                    format!("{}-seed{seed}", setting.name),
                    StudentJob {
                        setting: setting.clone(),
                        seed,
                    },
                ));
            }
        }
        let runs = run_parallel(jobs, threads, |job, progress| {
            train_student::<B>(
                &plan,
                &job,
                &teacher,
                threshold,
                &root,
                &device,
                Some(progress),
            )
        })?
        .into_ok()?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
        Ok(SuiteResults {
            teacher: teacher_summary,
            threshold,
            settings,
            runs,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/// Per-setting aggregates.
#[derive(Debug, Clone, Serialize)]
struct SettingRow {
    setting: String,
    label: String,
    panels: Vec<String>,
    seeds: usize,
    /// Seeds that reached the threshold.
    reached: usize,
    /// Median epochs to the threshold, unreached seeds counted as +∞ (`None`: median unreached).
    median_epochs_to_threshold: Option<f64>,
    /// Median epochs of teacher-size PPO divided by this setting's.
    speedup_vs_teacher_size_ppo: Option<f64>,
    median_final_return: f64,
    final_return_band: (f64, f64),
    median_epsilon_basic: Option<f64>,
    median_delta_basic: Option<f64>,
    median_epsilon_advanced: Option<f64>,
    median_delta_advanced: Option<f64>,
    median_epsilon_per_release_k0: Option<f64>,
    median_dirichlet_releases: Option<f64>,
    median_exhausted_at_epoch: Option<f64>,
}

fn aggregate(plan: &KickstartPlan, results: &SuiteResults) -> Vec<SettingRow> {
    let mut rows: Vec<SettingRow> = Vec::new();
    for setting in &results.settings {
        let runs: Vec<&StudentSummary> = results
            .runs
            .iter()
            .filter(|r| r.setting == setting.name)
            .collect();
        let epochs: Vec<f64> = runs
            .iter()
            .map(|r| r.epochs_to_threshold.map_or(f64::INFINITY, |e| e as f64))
            .collect();
        let m = median(&epochs);
        let finals: Vec<f64> = runs.iter().map(|r| r.final_return).collect();
        let mut sorted = finals.clone();
        sorted.sort_by(f64::total_cmp);
        let band = if sorted.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (
                percentile(&sorted, plan.band_percentiles.0),
                percentile(&sorted, plan.band_percentiles.1),
            )
        };
        let privacy: Vec<&TeacherPrivacySummary> =
            runs.iter().filter_map(|r| r.privacy.as_ref()).collect();
        let of = |f: &dyn Fn(&TeacherPrivacySummary) -> f64| {
            (!privacy.is_empty()).then(|| median(&privacy.iter().map(|p| f(p)).collect::<Vec<_>>()))
        };
        let exhausted: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.exhausted_at_epoch.map(|e| e as f64))
            .collect();
        rows.push(SettingRow {
            setting: setting.name.clone(),
            label: setting.label.clone(),
            panels: setting.panels.clone(),
            seeds: runs.len(),
            reached: runs
                .iter()
                .filter(|r| r.epochs_to_threshold.is_some())
                .count(),
            median_epochs_to_threshold: m.is_finite().then_some(m),
            speedup_vs_teacher_size_ppo: None,
            median_final_return: median(&finals),
            final_return_band: band,
            median_epsilon_basic: of(&|p| p.basic.epsilon),
            median_delta_basic: of(&|p| p.basic.delta),
            median_epsilon_advanced: of(&|p| p.advanced.epsilon),
            median_delta_advanced: of(&|p| p.advanced.delta),
            median_epsilon_per_release_k0: of(&|p| {
                p.initial_release.map_or(f64::NAN, |c| c.epsilon)
            }),
            median_dirichlet_releases: of(&|p| p.dirichlet_releases as f64),
            median_exhausted_at_epoch: (!exhausted.is_empty()).then(|| median(&exhausted)),
        });
    }
    let reference = rows
        .iter()
        .find(|r| r.setting == "ppo-64")
        .and_then(|r| r.median_epochs_to_threshold);
    for row in &mut rows {
        row.speedup_vs_teacher_size_ppo = match (reference, row.median_epochs_to_threshold) {
            (Some(t), Some(s)) => Some(t / s),
            _ => None,
        };
    }
    rows
}

fn opt(v: Option<f64>) -> Cell {
    v.map_or(Cell::from("–"), Cell::from)
}

fn panel_plot(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
    panel: &str,
    title: &str,
) -> Result<Option<PlotFiles>> {
    let mut chart = LearningCurves::new(format!(
        "{title} ({}; median, {}–{}th percentile over {} seeds)",
        plan.env, plan.band_percentiles.0, plan.band_percentiles.1, plan.seeds
    ))
    .x_label(format!(
        "epoch ({} environment steps)",
        plan.steps_per_epoch
    ))
    .y_label("epoch return")
    .band(plan.band_percentiles.0, plan.band_percentiles.1);
    let mut any = false;
    for setting in results
        .settings
        .iter()
        .filter(|s| s.panels.iter().any(|p| p == panel))
    {
        let curves: Vec<Vec<(f64, f64)>> = results
            .runs
            .iter()
            .filter(|r| r.setting == setting.name)
            .map(|r| r.curve.clone())
            .collect();
        if !curves.is_empty() {
            chart = chart.series(setting.label.clone(), curves);
            any = true;
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(chart.save(&dir.join(format!("fig2{panel}")))?))
}

fn write_report(plan: &KickstartPlan, results: &SuiteResults, dir: &Path) -> Result<PathBuf> {
    let rows = aggregate(plan, results);
    write_json(&dir.join("summary.json"), &rows)?;
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let mut report = Report::new(dir, "Privacy-preserving kickstarting (Fig. 2)");
    report.paragraph(&plan.noise_rng.report_line());
    let t = &results.teacher;
    report.paragraph(&format!(
        "Gohari et al., *Privacy-Preserving Kickstarting Deep Reinforcement Learning with \
         Privacy-Aware Learners*. Environment `{}`, {} environment steps per epoch, {} epochs per \
         student, {} seeds per setting. Teacher: (64, 64) PPO trained {} epochs; its stochastic \
         policy returns {} over {} episodes (a random policy: {}); certified Lipschitz bound of \
         softmax ∘ MLP L = {}. Students: (32, 32) PPO. The threshold is 90% of the way from the \
         random return to the teacher's: {}. An epoch's return is the mean return of the \
         episodes that ended in it (carried forward when none did); \"final return\" is the mean \
         over the last 3 epochs.",
        plan.env,
        plan.steps_per_epoch,
        plan.epochs,
        plan.seeds,
        plan.teacher_epochs,
        format_number(t.final_return),
        t.evaluation_episodes,
        format_number(t.random_return),
        format_number(t.lipschitz),
        format_number(results.threshold),
    ));
    report.paragraph(&format!(
        "Dirichlet teacher: k₀ = {}, multiplied by the vanishing coefficient c at the start of \
         every {} after the first; the policy is mixed with the uniform one onto Δ_{{m,η}} \
         (η = {}); Theorem 1 with τ = {}, b = {}, L·(1 − mη); δ is the 95% upper confidence bound \
         (exact for m = 2), computed once per distinct k (memoised). The teacher is exhausted when \
         k < {}{}, and then shares {}. Student: α_λ = λ·√(log(1/β)/(2(k+1))) with β = {}, \
         balance {}. Every release is in the teacher's ledger; totals are per student run \
         (basic composition: Σε, Σδ; advanced: Kairouz et al., δ' = 1e-6).",
        plan.k0,
        match plan.vanishing_per {
            VanishingPer::Rollout => "rollout (epoch; `--vanishing-per trajectory` for episodes)",
            VanishingPer::Trajectory => "trajectory (episode)",
        },
        plan.eta.map_or("0.4/m".into(), format_number),
        plan.tau,
        plan.adjacency,
        plan.concentration_floor,
        plan.budget_epsilon
            .map_or(String::new(), |b| format!(" or the ε budget {b} is spent")),
        match plan.exhausted {
            Exhausted::Uniform => "uniformly random policies ((0, 0)-DP)",
            Exhausted::Stop => "nothing",
        },
        plan.beta,
        plan.balance,
    ));
    let headers = [
        "fig.",
        "setting",
        "epochs to 90%",
        "reached",
        "speed-up vs PPO (64, 64)",
        "final return (median)",
        "final return (7.5–92.5%)",
        "ε per release at k₀",
        "ε basic",
        "δ basic",
        "ε advanced",
        "δ advanced",
        "Dirichlet releases",
        "exhausted at epoch",
    ];
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            vec![
                Cell::from(r.panels.join(",")),
                Cell::from(&r.label),
                opt(r.median_epochs_to_threshold),
                Cell::from(format!("{}/{}", r.reached, r.seeds)),
                opt(r.speedup_vs_teacher_size_ppo),
                Cell::from(r.median_final_return),
                Cell::from(format!(
                    "{} – {}",
                    format_number(r.final_return_band.0),
                    format_number(r.final_return_band.1)
                )),
                opt(r.median_epsilon_per_release_k0),
                opt(r.median_epsilon_basic),
                opt(r.median_delta_basic),
                opt(r.median_epsilon_advanced),
                opt(r.median_delta_advanced),
                opt(r.median_dirichlet_releases),
                opt(r.median_exhausted_at_epoch),
            ]
        })
        .collect();
    report.heading("Results");
    report.table(&headers, table);
    report.paragraph(
        "Medians over seeds. \"Epochs to 90%\": median with seeds that never reached the \
         threshold counted as never (– when the median itself never reached it). A δ total \
         above 1 is a vacuous guarantee; it is reported, not clipped.",
    );

    // The paper's three claims, checked against our numbers.
    report.heading("The paper's claims against these numbers");
    let mut claims = Vec::new();
    let aware: Vec<&SettingRow> = rows
        .iter()
        .filter(|r| r.setting.starts_with("aware-"))
        .collect();
    let ppo64 = row("ppo-64");
    let ppo32 = row("ppo-32");
    if let Some(p64) = ppo64 {
        let speedups: Vec<String> = aware
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r.label,
                    r.speedup_vs_teacher_size_ppo
                        .map_or("never reaches 90%".into(), |s| format!(
                            "{}×",
                            format_number(s)
                        ))
                )
            })
            .collect();
        let fast = aware
            .iter()
            .filter(|r| r.speedup_vs_teacher_size_ppo.is_some_and(|s| s >= 3.0))
            .count();
        claims.push(format!(
            "(i) \"privacy-aware students converge roughly 4 times faster than their teachers\": \
             teacher-size PPO needs {} epochs (median); speed-ups: {}. {}",
            p64.median_epochs_to_threshold
                .map_or("more than the run's".into(), format_number),
            speedups.join("; "),
            if aware.is_empty() {
                "No privacy-aware setting ran.".into()
            } else if fast == aware.len() {
                "Agrees: every privacy-aware setting is at least 3× faster.".to_string()
            } else if fast > 0 {
                format!(
                    "Partly agrees: {fast} of {} settings are at least 3× faster.",
                    aware.len()
                )
            } else {
                "Disagrees: no privacy-aware setting is 3× faster.".to_string()
            }
        ));
    }
    if let Some(p32) = ppo32 {
        let better = aware
            .iter()
            .filter(|r| r.median_final_return > p32.median_final_return)
            .count();
        claims.push(format!(
            "(ii) \"the student converges to a performance level that was not possible without \
             the demonstrations\": PPO (32, 32) ends at {} (median); privacy-aware students at {}. \
             {}",
            format_number(p32.median_final_return),
            aware
                .iter()
                .map(|r| format!("{} {}", r.label, format_number(r.median_final_return)))
                .collect::<Vec<_>>()
                .join("; "),
            if !aware.is_empty() && better == aware.len() {
                "Agrees at this budget of epochs.".to_string()
            } else {
                format!(
                    "{better} of {} privacy-aware settings end above it.",
                    aware.len()
                )
            }
        ));
        let unaware: Vec<&SettingRow> = rows
            .iter()
            .filter(|r| r.setting.starts_with("unaware-"))
            .collect();
        let kept = aware
            .iter()
            .filter(|r| r.median_exhausted_at_epoch.is_some())
            .filter(|r| r.median_final_return >= p32.median_final_return)
            .count();
        claims.push(format!(
            "(iii) \"the student maintains its enhanced performance after the teacher stops \
             sharing useful demonstrations\": the Dirichlet teachers were exhausted at epochs {}; \
             {kept} of {} privacy-aware settings still end at or above PPO (32, 32). Fig. 2(d): \
             privacy-unaware students end at {} against {} for PPO (32, 32) without kickstarting \
             ({}).",
            aware
                .iter()
                .map(|r| format!(
                    "{} ({})",
                    r.median_exhausted_at_epoch
                        .map_or("never".into(), format_number),
                    r.setting
                ))
                .collect::<Vec<_>>()
                .join(", "),
            aware.len(),
            unaware
                .iter()
                .map(|r| format!("{} ({})", format_number(r.median_final_return), r.setting))
                .collect::<Vec<_>>()
                .join(", "),
            format_number(p32.median_final_return),
            if unaware
                .iter()
                .all(|r| r.median_final_return < p32.median_final_return)
            {
                "agrees with the paper: worse than no kickstarting"
            } else {
                "disagrees with the paper, which finds them worse than no kickstarting"
            }
        ));
    }
    report.bullets(claims);

    report.heading("Figures");
    for (panel, title) in [
        ("a", "Fig. 2(a): teacher-size vs student-size PPO"),
        ("b", "Fig. 2(b): kickstarting without privacy"),
        ("c", "Fig. 2(c): privacy-aware students"),
        ("d", "Fig. 2(d): privacy-unaware students"),
        ("sweep-c", "Vanishing-coefficient sweep (privacy-aware)"),
        ("sweep-l", "λ sweep (privacy-aware, c = 0.3)"),
    ] {
        if let Some(files) = panel_plot(plan, results, dir, panel, title)? {
            report.plot(title, &files);
        }
    }
    report.reproduce([format!(
        "cargo xtask suite kickstart --env {} --seeds {} --epochs {} --teacher-epochs {} \
         --steps-per-epoch {}{}{}",
        plan.env,
        plan.seeds,
        plan.epochs,
        plan.teacher_epochs,
        plan.steps_per_epoch,
        if plan.sweep { " --sweep" } else { "" },
        plan.noise_rng.reproduce_flag()
    )]);
    report.write()
}

/// Runs the suite under the run root `root` and writes its report; returns the report's path.
fn run_in(root: &Path, args: &KickstartArgs) -> Result<PathBuf> {
    let plan = args.plan();
    ensure!(plan.seeds >= 1, "--seeds must be at least 1");
    ensure!(plan.epochs >= 1, "--epochs must be at least 1");
    ensure!(
        plan.teacher_epochs >= 1,
        "--teacher-epochs must be at least 1"
    );
    let dir = root.join(SUITE);
    std::fs::create_dir_all(&dir)?;
    write_json(&dir.join("config.json"), &plan)?;
    let results = dispatch(
        plan.backend,
        SuiteTask {
            plan: plan.clone(),
            root: root.to_path_buf(),
            threads: args.threads,
        },
    )?;
    write_report(&plan, &results, &dir)
}

/// Runs `suite kickstart` and prints where the report went.
pub fn run(args: KickstartArgs) -> Result<PathBuf> {
    let path = run_in(&runs_root(), &args)?;
    println!("wrote {}", path.display());
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: KickstartArgs,
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
        let report = run_in(&root, &args).unwrap();
        let text = std::fs::read_to_string(&report).unwrap();
        assert!(text.contains("privacy-aware, c = 0.3"), "{text}");
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
}
