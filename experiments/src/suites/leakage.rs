//! `cargo xtask suite leakage`: how much QGI and RGI reconstruct when the shared gradient is
//! privatised, set beside the ε the defence buys and the utility the DP-SGD and PGC suites
//! measured at that strength.
//!
//! Every cell attacks the same room samples as `suite inversion`, on the same freshly
//! initialised victims (the DQN Q-network for QGI, the REINFORCE policy for RGI, setting S1),
//! with each single-sample gradient passed through a [`GradientMechanismConfig`] first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use burn::tensor::backend::Backend;
use clap::Args;
use privrl_attacks::{
    evaluate_defended_batch_inversion, ImageNormalisation, InversionRow, Sample, Victim,
};
use privrl_envs::room::{RoomSetting, NUM_ACTIONS};
use serde::Serialize;

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::noise_rng::NoiseRng;
use crate::report::plot::{DualAxisChart, Line, LineChart};
use crate::report::{format_number, Cell, Report};
use crate::run::{runs_root, suite_dir, RunDir};
use crate::suites::dpsgd::Method as DpsgdMethod;
use crate::suites::inversion::ENTROPY_WEIGHT;
use crate::suites::inversion::{
    reconstruction_sheet, room_samples, summary, victim_config, write_rows, Method,
};
use crate::summary::{read_summaries, DpsgdRunSummary, Headline, PgcTrialSummary, SuiteOutcome};
use crate::sweep::{run_parallel, Job};
use privrl_privacy::{
    Epsilon, GradientMechanismConfig, MechanismKind, MechanismRng, RandomnessSource,
};

/// "Recognisable" means mean SSIM ≥ this on some image or mean bbox IoU ≥ [`IOU_THRESHOLD`].
pub const SSIM_THRESHOLD: f64 = 0.3;
/// See [`SSIM_THRESHOLD`].
pub const IOU_THRESHOLD: f64 = 0.5;

/// Arguments of `suite leakage`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct LeakageArgs {
    /// Quick mode: 16×16 images, 20 samples per cell, 300 iterations per stage (as `suite
    /// inversion --quick`).
    #[arg(long)]
    pub quick: bool,
    /// Samples per cell (attack × defence). Default 20 quick, 40 otherwise.
    #[arg(long)]
    pub samples: Option<usize>,
    /// Image size in pixels. Default 16 quick, 32 otherwise.
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Optimisation iterations per attack stage. Default 300 quick, 1000 otherwise.
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Weight λ of the attack's TV prior. Default 0.01 quick, 0.1 otherwise (as `suite
    /// inversion`).
    #[arg(long)]
    pub tv_weight: Option<f64>,
    /// DP-SGD noise multipliers σ to sweep (comma-separated, each > 0).
    #[arg(long, value_delimiter = ',', default_values_t = [0.001, 0.01, 0.1, 0.3, 1.0])]
    pub dp_sgd_noise: Vec<f64>,
    /// DP-SGD clipping norm C (the DP-SGD suite's default).
    #[arg(long, default_value_t = 1.0)]
    pub dp_sgd_clip: f64,
    /// ε of the Laplace and projected-random-sign releases to sweep (comma-separated, > 0, or
    /// `inf` for the mechanisms' noise-free limits). The PGC paper runs 1–10; larger values
    /// find where reconstruction comes back.
    #[arg(
        long,
        value_delimiter = ',',
        default_values = ["1", "10", "100", "1e3", "1e4", "1e5"]
    )]
    pub ldp_epsilon: Vec<Epsilon>,
    /// Laplace clipping C (L1 norm ≤ C/2; the PGC paper's 0.01). Whenever C/2 is below the
    /// gradient's L1 norm, the signal-to-noise ratio does not depend on C.
    #[arg(long, default_value_t = 0.01)]
    pub laplace_clip: f64,
    /// Projected-random-sign element-wise clip C (the PGC paper's 1).
    #[arg(long, default_value_t = 1.0)]
    pub prs_clip: f64,
    /// Poisson sampling rate q of the DP-SGD training run that σ is accounted over (the DP-SGD
    /// suite's DQN: |B| = 128 from a 10k buffer).
    #[arg(long, default_value_t = 0.0128)]
    pub train_sample_rate: f64,
    /// Gradient steps of that training run (the DP-SGD suite's DQN: 20k env steps, one step
    /// every second).
    #[arg(long, default_value_t = 10_000)]
    pub train_steps: u64,
    /// δ of the DP-SGD accounting.
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// The DP-SGD suite's runs, for the utility column (skipped if absent).
    #[arg(long)]
    pub dpsgd_runs: Option<PathBuf>,
    /// The PGC suite's runs, for the utility column (skipped if absent).
    #[arg(long)]
    pub pgc_runs: Option<PathBuf>,
    /// Seed of the samples, the victims, the attacks and the defences' noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Adam steps (lr 1e-3, minibatches of 16) that train each victim on its own objective
    /// before it is attacked, on 64 room samples apart from the attacked ones; 0 attacks
    /// freshly initialised victims, as the paper does.
    #[arg(long, default_value_t = 0)]
    pub victim_train_steps: usize,
    /// Batch sizes of the shared gradient for QGI without a defence (comma-separated, each in
    /// 1..=8): every size above 1 adds a cell `qgi-none-batch<B>`, attacked by the batch
    /// extension of QGI (actions enumerated from ∇b_last, Section IV-C1).
    #[arg(long, value_delimiter = ',', default_values_t = [1])]
    pub batch_sizes: Vec<usize>,
    /// Worker threads (0: one per core); each runs one (attack, defence) cell.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Where the defences' noise comes from: `seeded` (from --seed, reproducible) or `secure`
    /// (the OS CSPRNG: the attacker faces noise that no seed predicts).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
}

impl LeakageArgs {
    /// `--quick` with everything else at its default (the quickstart's leakage part).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            samples: None,
            image_size: None,
            iterations: None,
            tv_weight: None,
            dp_sgd_noise: vec![0.001, 0.01, 0.1, 0.3, 1.0],
            dp_sgd_clip: 1.0,
            ldp_epsilon: [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
                .map(|e| Epsilon::finite(e).unwrap())
                .to_vec(),
            laplace_clip: 0.01,
            prs_clip: 1.0,
            train_sample_rate: 0.0128,
            train_steps: 10_000,
            delta: 1e-5,
            dpsgd_runs: None,
            pgc_runs: None,
            victim_train_steps: 0,
            batch_sizes: vec![1],
            seed,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
        }
    }

    fn plan(&self) -> Result<LeakagePlan> {
        let pick =
            |v: Option<usize>, quick, full| v.unwrap_or(if self.quick { quick } else { full });
        let plan = LeakagePlan {
            samples: pick(self.samples, 20, 40),
            image_size: pick(self.image_size, 16, 32),
            iterations: pick(self.iterations, 300, 1000),
            tv_weight: self
                .tv_weight
                .unwrap_or(if self.quick { 0.01 } else { 0.1 }),
            seed: self.seed,
            backend: self.backend,
            train_sample_rate: self.train_sample_rate,
            train_steps: self.train_steps,
            delta: self.delta,
            defences: self.defences(),
            victim_train_steps: self.victim_train_steps,
            batch_sizes: self.batch_sizes.clone(),
            noise_rng: self.noise_rng,
        };
        for &b in &plan.batch_sizes {
            anyhow::ensure!(
                (1..=privrl_attacks::MAX_BATCH).contains(&b),
                "--batch-sizes must each be in 1..={}, got {b}",
                privrl_attacks::MAX_BATCH
            );
        }
        anyhow::ensure!(plan.samples >= 1, "--samples must be at least 1");
        anyhow::ensure!(
            (8..=512).contains(&plan.image_size),
            "--image-size must be in 8..=512, got {}",
            plan.image_size
        );
        anyhow::ensure!(
            self.train_sample_rate > 0.0 && self.train_sample_rate <= 1.0,
            "--train-sample-rate must be in (0, 1], got {}",
            self.train_sample_rate
        );
        anyhow::ensure!(
            self.delta > 0.0 && self.delta < 1.0,
            "--delta must be in (0, 1), got {}",
            self.delta
        );
        for defence in &plan.defences {
            defence
                .build(1, 1)
                .with_context(|| format!("defence {defence}"))?;
        }
        Ok(plan)
    }

    /// No defence, clipping alone, DP-SGD over σ, Laplace and PRS over ε.
    fn defences(&self) -> Vec<GradientMechanismConfig> {
        let mut defences = vec![
            GradientMechanismConfig::None,
            GradientMechanismConfig::Clip {
                clip: self.dp_sgd_clip,
            },
        ];
        defences.extend(self.dp_sgd_noise.iter().map(|&noise_multiplier| {
            GradientMechanismConfig::DpSgd {
                clip: self.dp_sgd_clip,
                noise_multiplier,
            }
        }));
        defences.extend(
            self.ldp_epsilon
                .iter()
                .map(|&epsilon| GradientMechanismConfig::Laplace {
                    epsilon,
                    clip: self.laplace_clip,
                }),
        );
        defences.extend(
            self.ldp_epsilon
                .iter()
                .map(|&epsilon| GradientMechanismConfig::Prs {
                    epsilon,
                    clip: self.prs_clip,
                }),
        );
        defences
    }
}

/// Resolved parameters (what `config.json` records).
#[derive(Debug, Clone, Serialize)]
struct LeakagePlan {
    samples: usize,
    image_size: usize,
    iterations: usize,
    tv_weight: f64,
    seed: u64,
    backend: BackendChoice,
    train_sample_rate: f64,
    train_steps: u64,
    delta: f64,
    defences: Vec<GradientMechanismConfig>,
    victim_train_steps: usize,
    batch_sizes: Vec<usize>,
    noise_rng: NoiseRng,
}

impl LeakagePlan {
    /// ε of a DP-SGD training run at noise σ (RDP accountant, Poisson rate q, T steps, δ).
    fn training_epsilon(&self, noise_multiplier: f64) -> f64 {
        privrl_privacy::dp_sgd_epsilon(
            self.train_sample_rate,
            noise_multiplier,
            self.train_steps,
            self.delta,
        )
        .unwrap_or(f64::INFINITY)
    }

    /// The ε a cell is plotted at: per release for Laplace and PRS, over the training run
    /// for DP-SGD, ∞ without a guarantee.
    fn epsilon(&self, defence: &GradientMechanismConfig) -> f64 {
        match *defence {
            GradientMechanismConfig::DpSgd {
                noise_multiplier, ..
            } => self.training_epsilon(noise_multiplier),
            _ => defence.epsilon().map_or(f64::INFINITY, Epsilon::value),
        }
    }
}

/// Minibatch size of the victims' training (`--victim-train-steps`).
const VICTIM_BATCH: usize = 16;
/// Adam learning rate of the victims' training.
const VICTIM_LR: f64 = 1e-3;
/// Room samples the victims are trained on.
const VICTIM_TRAINING_SAMPLES: usize = 64;

/// One cell: an attack against a victim whose gradients pass through a defence.
pub(crate) struct LeakageJob {
    pub(crate) method: Method,
    pub(crate) defence: GradientMechanismConfig,
    pub(crate) samples: Vec<Sample>,
    pub(crate) image_size: usize,
    pub(crate) iterations: usize,
    pub(crate) tv_weight: f64,
    pub(crate) seed: u64,
    /// Where the defence's noise comes from.
    pub(crate) noise: RandomnessSource,
    /// Samples and Adam steps that train the victim before the attack (none: fresh victim).
    pub(crate) victim_training: Option<(Vec<Sample>, usize)>,
    /// Samples per shared gradient (1: the paper's single-sample gradients).
    pub(crate) batch_size: usize,
    pub(crate) progress: Option<indicatif::ProgressBar>,
}

impl BackendTask for LeakageJob {
    type Output = Vec<InversionRow>;

    fn run<B: Backend>(self, device: B::Device) -> Result<Vec<InversionRow>> {
        let config = self
            .method
            .attack_config(self.iterations, self.seed, self.tv_weight);
        let mut victim = Victim::<B>::from_seed(
            &victim_config(RoomSetting::S1, self.image_size),
            self.method.victim_kind(ENTROPY_WEIGHT),
            self.seed,
            &device,
        )?;
        if let Some((training, steps)) = &self.victim_training {
            victim.train(training, *steps, VICTIM_BATCH, VICTIM_LR, self.seed)?;
        }
        let mut rng = MechanismRng::new(self.noise)?;
        let mut rows = Vec::with_capacity(self.samples.len());
        for (index, batch) in self.samples.chunks(self.batch_size).enumerate() {
            let first = index * self.batch_size;
            let batch_rows = evaluate_defended_batch_inversion(
                &victim,
                batch,
                &config,
                ImageNormalisation::Clamp,
                &self.defence,
                &mut rng,
                self.batch_size,
            )?;
            rows.extend(batch_rows.into_iter().map(|mut row| {
                row.sample += first;
                row
            }));
            if let Some(bar) = &self.progress {
                bar.inc(batch.len() as u64);
            }
        }
        Ok(rows)
    }
}

/// Mean reconstruction quality of one cell.
#[derive(Debug, Clone, Serialize)]
struct CellScores {
    rgb_psnr: f64,
    rgb_ssim: f64,
    depth_psnr: f64,
    depth_ssim: f64,
    iou: f64,
    action_accuracy: f64,
}

impl CellScores {
    fn of(rows: &[InversionRow]) -> Self {
        let mean = |f: &dyn Fn(&InversionRow) -> Option<f64>| {
            let values: Vec<f64> = rows
                .iter()
                .filter_map(f)
                .filter(|v| v.is_finite())
                .collect();
            if values.is_empty() {
                f64::NAN
            } else {
                values.iter().sum::<f64>() / values.len() as f64
            }
        };
        Self {
            rgb_psnr: mean(&|r| r.rgb.map(|s| s.psnr)),
            rgb_ssim: mean(&|r| r.rgb.map(|s| s.ssim)),
            depth_psnr: mean(&|r| r.depth.map(|s| s.psnr)),
            depth_ssim: mean(&|r| r.depth.map(|s| s.ssim)),
            iou: mean(&|r| r.vector_iou),
            action_accuracy: mean(&|r| Some(f64::from(u8::from(r.action_correct)))),
        }
    }

    /// Neither image reaches [`SSIM_THRESHOLD`] and the box misses [`IOU_THRESHOLD`].
    fn unrecognisable(&self) -> bool {
        let below = |v: f64| v.is_nan() || v < SSIM_THRESHOLD;
        let below_iou = |v: f64| v.is_nan() || v < IOU_THRESHOLD;
        below(self.rgb_ssim) && below(self.depth_ssim) && below_iou(self.iou)
    }
}

/// Utility at one defence strength, from another suite's runs.
#[derive(Debug, Clone, Copy)]
struct Utility {
    value: f64,
    /// ε that suite's accountant reported (DP-SGD), if any.
    epsilon: Option<f64>,
}

/// Utility per cell, keyed by (method slug, defence family, strength bits).
#[derive(Debug, Default)]
struct UtilityTable {
    cells: BTreeMap<(String, &'static str, u64), Utility>,
    sources: Vec<String>,
}

impl UtilityTable {
    /// DP-SGD: mean training return (over seeds) of the DP-SGD suite's DQN (for QGI) and
    /// REINFORCE (for RGI) at the same σ. PGC: the success ratio of the PGC suite's trials (its
    /// Table 2) at the same mechanism and ε, for both attacks (PGC trains one A3C agent).
    fn read(dpsgd: &Path, pgc: &Path) -> Result<Self> {
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

    fn get(&self, method: Method, defence: &GradientMechanismConfig) -> Option<Utility> {
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

/// One finished cell.
struct CellResult {
    method: Method,
    defence: GradientMechanismConfig,
    epsilon: f64,
    scores: CellScores,
    rows: Vec<InversionRow>,
}

const METHODS: [Method; 2] = [Method::Qgi, Method::Rgi];

/// Runs the suite and writes `runs/leakage/report.md`; returns the report's path.
pub fn run(args: LeakageArgs) -> Result<SuiteOutcome> {
    suite_dir("leakage")?;
    run_in(&runs_root(), args)
}

/// [`run`] under the runs root `root`.
fn run_in(root: &Path, args: LeakageArgs) -> Result<SuiteOutcome> {
    let plan = args.plan()?;
    let dir = root.join("leakage");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (samples, _) = room_samples(RoomSetting::S1, plan.image_size, plan.samples, plan.seed)?;
    let victim_training = if plan.victim_train_steps > 0 {
        // Another seed: rooms apart from the attacked samples.
        let seed = plan.seed.wrapping_add(1);
        let (training, _) = room_samples(
            RoomSetting::S1,
            plan.image_size,
            VICTIM_TRAINING_SAMPLES,
            seed,
        )?;
        Some((training, plan.victim_train_steps))
    } else {
        None
    };
    let mut jobs = Vec::new();
    for method in METHODS {
        for (index, defence) in plan.defences.iter().enumerate() {
            jobs.push(Job::new(
                cell_name(method, defence),
                LeakageJob {
                    method,
                    defence: *defence,
                    samples: samples.clone(),
                    image_size: plan.image_size,
                    iterations: plan.iterations,
                    tv_weight: plan.tv_weight,
                    seed: plan.seed,
                    noise: plan
                        .noise_rng
                        .mode()
                        .source(plan.seed ^ (0x1eaf << 16) ^ index as u64),
                    victim_training: victim_training.clone(),
                    batch_size: 1,
                    progress: None,
                },
            ));
        }
    }
    for &batch_size in plan.batch_sizes.iter().filter(|&&b| b > 1) {
        jobs.push(Job::new(
            format!("qgi-none-batch{batch_size}"),
            LeakageJob {
                method: Method::Qgi,
                defence: GradientMechanismConfig::None,
                samples: samples.clone(),
                image_size: plan.image_size,
                iterations: plan.iterations,
                tv_weight: plan.tv_weight,
                seed: plan.seed,
                noise: plan.noise_rng.mode().source(plan.seed),
                victim_training: victim_training.clone(),
                batch_size,
                progress: None,
            },
        ));
    }
    let outcomes = run_parallel(jobs, args.threads, |mut job, progress| {
        job.progress = Some(progress.bar(job.samples.len() as u64));
        let (method, defence, batch_size) = (job.method, job.defence, job.batch_size);
        Ok((method, defence, batch_size, dispatch(plan.backend, job)?))
    })?
    .into_ok()?;

    let (mut cells, mut batch_cells) = (Vec::new(), Vec::new());
    for (name, (method, defence, batch_size, rows)) in outcomes {
        let run = RunDir::create_in(root, "leakage", &name)?;
        run.write_config(&(&plan, &defence))?;
        write_rows(&run, &rows)?;
        reconstruction_sheet(
            &run.path().join("reconstructions.png"),
            method,
            RoomSetting::S1,
            &samples,
            &rows,
            plan.image_size,
        )?;
        let cell = CellResult {
            method,
            epsilon: plan.epsilon(&defence),
            scores: CellScores::of(&rows),
            defence,
            rows,
        };
        if batch_size > 1 {
            batch_cells.push((batch_size, cell));
        } else {
            cells.push(cell);
        }
    }
    let utility = UtilityTable::read(
        &args
            .dpsgd_runs
            .clone()
            .unwrap_or_else(|| root.join("dpsgd")),
        &args.pgc_runs.clone().unwrap_or_else(|| root.join("pgc")),
    )?;
    let headline = headline(&cells);
    let report = write_report(
        &dir,
        &args,
        &plan,
        &cells,
        &batch_cells,
        &utility,
        &headline,
    )?;
    println!("wrote {}", report.display());
    Ok(SuiteOutcome { report, headline })
}

/// The headline: privacy defeats the inversion. Judged on QGI: undefended, its reconstruction
/// is recognisable (an image at SSIM ≥ [`SSIM_THRESHOLD`] or the box at IoU ≥
/// [`IOU_THRESHOLD`]), and under DP-SGD at the largest σ and Laplace at the smallest ε it is
/// not.
fn headline(cells: &[CellResult]) -> Headline {
    let qgi = |kind: MechanismKind| {
        cells
            .iter()
            .filter(move |c| c.method == Method::Qgi && c.defence.kind() == kind)
    };
    let undefended = qgi(MechanismKind::None).next();
    // The strongest defence of a family has the smallest ε (for DP-SGD, the largest σ).
    let strongest =
        |kind| qgi(kind).min_by(|a: &&CellResult, b: &&CellResult| a.epsilon.total_cmp(&b.epsilon));
    let cells = [
        ("no defence", undefended),
        ("DP-SGD at the largest σ", strongest(MechanismKind::DpSgd)),
        (
            "Laplace at the smallest ε",
            strongest(MechanismKind::Laplace),
        ),
    ];
    let measured: Vec<String> = cells
        .iter()
        .map(|(what, cell)| match cell {
            Some(c) => format!(
                "{what} ({}): RGB / depth SSIM {} / {}, IoU {}",
                c.defence,
                format_number(c.scores.rgb_ssim),
                format_number(c.scores.depth_ssim),
                format_number(c.scores.iou)
            ),
            None => format!("{what}: not run"),
        })
        .collect();
    let visible = match cells.map(|(_, c)| c) {
        [Some(none), Some(dp_sgd), Some(laplace)] => {
            !none.scores.unrecognisable()
                && dp_sgd.scores.unrecognisable()
                && laplace.scores.unrecognisable()
        }
        _ => false,
    };
    Headline {
        effect: format!(
            "privacy defeats the inversion: undefended, QGI's reconstruction is recognisable (an \
             image at SSIM ≥ {SSIM_THRESHOLD} or the box at IoU ≥ {IOU_THRESHOLD}); under DP-SGD \
             at the largest σ and Laplace at the smallest ε it is not."
        ),
        measured: measured.join("; "),
        visible,
    }
}

/// `qgi-none`, `rgi-dp-sgd-sigma0.1`, `qgi-laplace-eps10`: one run directory per cell.
fn cell_name(method: Method, defence: &GradientMechanismConfig) -> String {
    let strength = match *defence {
        GradientMechanismConfig::None => String::new(),
        GradientMechanismConfig::Clip { clip } => format!("-c{clip}"),
        GradientMechanismConfig::DpSgd {
            noise_multiplier, ..
        } => format!("-sigma{noise_multiplier}"),
        GradientMechanismConfig::Laplace { epsilon, .. }
        | GradientMechanismConfig::Prs { epsilon, .. } => format!("-eps{}", epsilon.slug()),
    };
    format!("{}-{}{strength}", method.slug(), defence.kind().name())
}

fn write_report(
    dir: &Path,
    args: &LeakageArgs,
    plan: &LeakagePlan,
    cells: &[CellResult],
    batch_cells: &[(usize, CellResult)],
    utility: &UtilityTable,
    headline: &Headline,
) -> Result<PathBuf> {
    let mut report = Report::new(
        dir,
        "Leakage: gradient inversion against privatised gradients",
    );
    report.paragraph(&plan.noise_rng.report_line());
    report.paragraph(&format!(
        "QGI (DQN victim) and RGI (REINFORCE victim) in setting S1 (RGB + depth + bounding box) \
         attack one single-sample gradient per sample after it passes through a defence: DP-SGD \
         clipping alone (C = {clip}), DP-SGD clipping + Gaussian noise σC (ε: the RDP \
         accountant over a training run of {steps} steps at Poisson rate q = {q}, δ = {delta}), \
         and the PGC mechanisms Laplace (C = {lap}) and projected random sign (C = {prs}) at \
         their per-release ε. The attacker knows the defence; cosine matching ignores the \
         scale that clipping and the mechanisms introduce, and all noise is zero-mean, so it \
         matches the released gradient directly; under noise it drops the magnitude term, \
         since the released norm includes the noise's. {n} samples per cell from the rooms at \
         {size}×{size} px, {iters} iterations per stage, λ = {tv}, backend `{backend}`, the \
         same samples (and, untrained, the same victims) as `suite inversion` with the same \
         settings. Victims: \
         {victims}. Chance action accuracy is 1/{actions} = {chance:.2}.",
        clip = args.dp_sgd_clip,
        steps = plan.train_steps,
        q = plan.train_sample_rate,
        delta = plan.delta,
        lap = args.laplace_clip,
        prs = args.prs_clip,
        n = plan.samples,
        size = plan.image_size,
        iters = plan.iterations,
        tv = plan.tv_weight,
        backend = plan.backend,
        victims = if plan.victim_train_steps == 0 {
            "freshly initialised (the paper)".to_string()
        } else {
            format!(
                "trained on their own objective first ({} Adam steps, lr {VICTIM_LR}, \
                 minibatches of {VICTIM_BATCH} from {VICTIM_TRAINING_SAMPLES} other room samples)",
                plan.victim_train_steps
            )
        },
        actions = NUM_ACTIONS,
        chance = 1.0 / NUM_ACTIONS as f64,
    ));
    report.paragraph(&format!(
        "A reconstruction counts as **unrecognisable** when the mean SSIM of both images is \
         below {SSIM_THRESHOLD} and the mean bounding-box IoU is below {IOU_THRESHOLD}."
    ));
    if utility.sources.is_empty() {
        report.paragraph(
            "No DP-SGD or PGC suite runs were found, so the utility column is empty: run \
             `cargo xtask suite dpsgd` and `cargo xtask suite pgc` first (or pass \
             `--dpsgd-runs` / `--pgc-runs`).",
        );
    } else {
        report.bullets(utility.sources.iter().map(|s| format!("Utility: {s}")));
    }
    let mut rows = Vec::new();
    for cell in cells {
        let util = utility.get(cell.method, &cell.defence);
        rows.push(vec![
            Cell::from(cell.method.name()),
            Cell::from(cell.defence.to_string()),
            Cell::from(format_number(cell.epsilon)),
            Cell::from(util.map_or("-".into(), |u| {
                let eps = u
                    .epsilon
                    .map_or(String::new(), |e| format!(" (ε {})", format_number(e)));
                format!("{}{eps}", format_number(u.value))
            })),
        ]);
        rows.last_mut().expect("pushed").extend(score_columns(cell));
    }
    report
        .heading("Privacy, utility and leakage")
        .paragraph(
            "Mean ± std over samples. Utility: DP-SGD rows, the DP-SGD suite's mean training \
             return at the same σ (its own ε in brackets: its run length differs from the one \
             assumed here); Laplace and PRS rows, the PGC suite's success ratio at the same ε.",
        )
        .table(
            &[
                "attack",
                "defence",
                "ε",
                "utility",
                "RGB PSNR / SSIM",
                "depth PSNR / SSIM",
                "bbox IoU",
                "action accuracy",
                "ε(Q) % or |r − r_rec|",
                "recognisable",
            ],
            rows,
        );

    if !batch_cells.is_empty() {
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        let single = cells
            .iter()
            .find(|c| c.method == Method::Qgi && c.defence == GradientMechanismConfig::None);
        for (batch_size, cell) in single
            .map(|c| (1, c))
            .into_iter()
            .chain(batch_cells.iter().map(|(b, c)| (*b, c)))
        {
            let mut row = vec![Cell::from(batch_size as f64)];
            row.extend(score_columns(cell));
            rows.push(row);
        }
        report
            .heading("Batch size (QGI, no defence)")
            .paragraph(
                "The shared gradient is the DQN victim's over a batch of consecutive samples \
                 (J is the batch mean). The batch attack reads the batch's actions off \
                 ∇b_last, tries every assignment of them to the samples in stage 1 and keeps \
                 the best, then reconstructs all images at once. Each sample is scored \
                 against the reconstruction it matches best (the permutation maximising RGB \
                 SSIM + depth SSIM + IoU), as Yin et al. (2021) score batch recovery.",
            )
            .table(
                &[
                    "batch size",
                    "RGB PSNR / SSIM",
                    "depth PSNR / SSIM",
                    "bbox IoU",
                    "action accuracy",
                    "ε(Q) %",
                    "recognisable",
                ],
                rows,
            );
    }

    report.heading("Where reconstruction stops being recognisable");
    let mut thresholds = Vec::new();
    for method in METHODS {
        for family in ["dp-sgd", "laplace", "prs"] {
            let of_family = cells_of(cells, method, family);
            if of_family.is_empty() {
                continue;
            }
            let undefended = cells
                .iter()
                .find(|c| c.method == method && c.defence == GradientMechanismConfig::None);
            if undefended.is_some_and(|c| c.scores.unrecognisable()) {
                thresholds.push(format!(
                    "{} against {family}: no threshold, the attack does not reconstruct a \
                     recognisable state even without a defence at this scale",
                    method.name()
                ));
                continue;
            }
            // The largest ε below which every tested strength is unrecognisable.
            let safe = of_family
                .iter()
                .take_while(|c| c.scores.unrecognisable())
                .last();
            thresholds.push(match safe {
                Some(c) => format!(
                    "{} against {family}: unrecognisable at every tested ε ≤ {} ({})",
                    method.name(),
                    format_number(c.epsilon),
                    c.defence
                ),
                None => format!(
                    "{} against {family}: recognisable already at the smallest tested ε {}",
                    method.name(),
                    format_number(of_family[0].epsilon)
                ),
            });
        }
    }
    report.bullets(thresholds);

    report.heading("Plots");
    for family in ["dp-sgd", "laplace", "prs"] {
        if let Some(files) = family_plot(dir, family, cells, utility)? {
            report.image(
                &format!("{family}: utility and reconstruction quality against ε"),
                &files.png,
                Some(&files.svg),
            );
        }
    }
    // Every setting that changes a number in this report, so that the command reproduces it.
    let list = |values: &[f64]| {
        values
            .iter()
            .map(f64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let command = format!(
        "cargo xtask suite leakage --samples {} --image-size {} --iterations {} --tv-weight {} \\\n    \
         --dp-sgd-noise {} --dp-sgd-clip {} --ldp-epsilon {} --laplace-clip {} --prs-clip {} \\\n    \
         --train-sample-rate {} --train-steps {} --delta {} --victim-train-steps {} --seed {} \\\n    \
         --batch-sizes {} --backend {}",
        plan.samples,
        plan.image_size,
        plan.iterations,
        plan.tv_weight,
        list(&args.dp_sgd_noise),
        args.dp_sgd_clip,
        args.ldp_epsilon
            .iter()
            .map(|e| e.slug())
            .collect::<Vec<_>>()
            .join(","),
        args.laplace_clip,
        args.prs_clip,
        plan.train_sample_rate,
        plan.train_steps,
        plan.delta,
        plan.victim_train_steps,
        plan.seed,
        plan
            .batch_sizes
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        plan.backend,
    ) + plan.noise_rng.reproduce_flag();
    headline.add_to(&mut report);
    report.reproduce([command]);
    report.write()
}

/// The score columns of a cell: both images' PSNR / SSIM, IoU, action accuracy, the signal's
/// error and whether it is recognisable.
fn score_columns(cell: &CellResult) -> Vec<Cell> {
    vec![
        Cell::from(format!(
            "{} / {}",
            summary(&cell.rows, |r| r.rgb.map(|s| s.psnr)),
            summary(&cell.rows, |r| r.rgb.map(|s| s.ssim))
        )),
        Cell::from(format!(
            "{} / {}",
            summary(&cell.rows, |r| r.depth.map(|s| s.psnr)),
            summary(&cell.rows, |r| r.depth.map(|s| s.ssim))
        )),
        Cell::from(summary(&cell.rows, |r| r.vector_iou)),
        Cell::from(format!("{:.0}%", 100.0 * cell.scores.action_accuracy)),
        Cell::from(match cell.method {
            Method::Rgi => summary(&cell.rows, |r| r.reward_abs_error),
            _ => summary(&cell.rows, |r| r.target_q_error_pct),
        }),
        Cell::from(if cell.scores.unrecognisable() {
            "no"
        } else {
            "yes"
        }),
    ]
}

/// The cells of one attack and defence family, by increasing ε.
fn cells_of<'a>(cells: &'a [CellResult], method: Method, family: &str) -> Vec<&'a CellResult> {
    let mut of_family: Vec<&CellResult> = cells
        .iter()
        .filter(|c| c.method == method && c.defence.kind().name() == family)
        .collect();
    of_family.sort_by(|a, b| a.epsilon.total_cmp(&b.epsilon));
    of_family
}

/// One defence family: ε on a log x axis; left, the utility the other suite measured; right,
/// depth SSIM and bbox IoU of both attacks. Without utility data, a plain chart of the right
/// axis' series. `None` if the family has no finite ε.
fn family_plot(
    dir: &Path,
    family: &str,
    cells: &[CellResult],
    utility: &UtilityTable,
) -> Result<Option<crate::report::plot::PlotFiles>> {
    let mut leakage = Vec::new();
    let mut utility_lines = Vec::new();
    for method in METHODS {
        let mut of_family = cells_of(cells, method, family);
        of_family.retain(|c| c.epsilon.is_finite());
        if of_family.is_empty() {
            continue;
        }
        let series = |f: &dyn Fn(&CellScores) -> f64| -> Vec<(f64, f64)> {
            of_family
                .iter()
                .map(|c| (c.epsilon, f(&c.scores)))
                .filter(|p| p.1.is_finite())
                .collect()
        };
        for (what, points) in [
            ("depth SSIM", series(&|s| s.depth_ssim)),
            ("RGB SSIM", series(&|s| s.rgb_ssim)),
            ("bbox IoU", series(&|s| s.iou)),
        ] {
            if !points.is_empty() {
                leakage.push(Line::new(format!("{} {what}", method.name()), points));
            }
        }
        let util: Vec<(f64, f64)> = of_family
            .iter()
            .filter_map(|c| {
                utility
                    .get(method, &c.defence)
                    .map(|u| (c.epsilon, u.value))
            })
            .collect();
        // PGC's utility is the same for both attacks: draw it once.
        let drawn_already = family != "dp-sgd" && method == Method::Rgi;
        if !util.is_empty() && !drawn_already {
            let name = match family {
                "dp-sgd" => format!("return ({} training)", method.victim_algorithm()),
                _ => "PGC-A3C success ratio".to_owned(),
            };
            utility_lines.push(Line::new(name, util));
        }
    }
    if leakage.is_empty() {
        return Ok(None);
    }
    let title = format!("{family}: privacy, utility and leakage");
    let x_label = match family {
        "dp-sgd" => "ε (DP-SGD training run, RDP)",
        _ => "ε per release",
    };
    let stem = dir.join(format!("leakage-{family}"));
    let files = if utility_lines.is_empty() {
        let mut chart = LineChart::new(title)
            .x_label(x_label)
            .y_label("SSIM / IoU")
            .log_x();
        for line in leakage {
            chart = chart.line(line);
        }
        chart.save(&stem)?
    } else {
        let y_label = match family {
            "dp-sgd" => "mean training return",
            _ => "success ratio",
        };
        let mut chart = DualAxisChart::new(title)
            .x_label(x_label)
            .y_label(y_label)
            .y2_label("reconstruction SSIM / IoU");
        for line in utility_lines {
            chart = chart.line(line);
        }
        for line in leakage {
            chart = chart.secondary_line(line);
        }
        chart.save(&stem)?
    };
    Ok(Some(files))
}

impl Method {
    /// The learner whose gradient the attack inverts.
    fn victim_algorithm(self) -> &'static str {
        match self {
            Method::Rgi => "REINFORCE",
            _ => "DQN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::inversion::{InversionJob, InversionPlan};

    #[test]
    fn quick_matches_what_clap_parses() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: LeakageArgs,
        }
        let parsed = <Cli as clap::Parser>::parse_from(["leakage", "--quick", "--seed", "3"]).args;
        let built = LeakageArgs::quick(3, BackendChoice::default(), 0);
        assert_eq!(format!("{parsed:?}"), format!("{built:?}"));
    }

    fn tiny_args() -> LeakageArgs {
        // Two cells at a time: autodiff sections make concurrent cells safe, and each cell's
        // numbers must not depend on what runs beside it.
        let mut args = LeakageArgs::quick(3, BackendChoice::default(), 2);
        args.samples = Some(2);
        args.image_size = Some(8);
        args.iterations = Some(4);
        args.dp_sgd_noise = vec![0.1];
        args.ldp_epsilon = vec![Epsilon::finite(10.0).unwrap()];
        args
    }

    /// Scores and reconstructions, without the wall-clock time and the optimiser's last
    /// recorded loss, which differed between two runs in one test process (0.38474 vs 0.38004)
    /// while reconstructions and scores were bit-identical; not yet explained.
    fn comparable(rows: &[InversionRow]) -> Vec<InversionRow> {
        rows.iter()
            .map(|r| InversionRow {
                attack_ms: 0.0,
                final_loss: None,
                ..r.clone()
            })
            .collect()
    }

    #[test]
    fn without_a_defence_the_numbers_are_the_inversion_suites() {
        let args = tiny_args();
        let plan = args.plan().unwrap();
        let (samples, _) =
            room_samples(RoomSetting::S1, plan.image_size, plan.samples, plan.seed).unwrap();
        for method in METHODS {
            let inversion = dispatch(
                plan.backend,
                InversionJob {
                    plan: InversionPlan {
                        samples: plan.samples,
                        image_size: plan.image_size,
                        iterations: plan.iterations,
                        tv_weight: plan.tv_weight,
                        seed: plan.seed,
                        backend: plan.backend,
                        entropy_weight: ENTROPY_WEIGHT,
                    },
                    method,
                    setting: RoomSetting::S1,
                    samples: samples.clone(),
                    batch_size: 1,
                },
            )
            .unwrap();
            let leakage = dispatch(
                plan.backend,
                LeakageJob {
                    method,
                    defence: GradientMechanismConfig::None,
                    samples: samples.clone(),
                    image_size: plan.image_size,
                    iterations: plan.iterations,
                    tv_weight: plan.tv_weight,
                    seed: plan.seed,
                    noise: RandomnessSource::Seeded(99),
                    victim_training: None,
                    batch_size: 1,
                    progress: None,
                },
            )
            .unwrap();
            assert_eq!(comparable(&inversion), comparable(&leakage), "{method:?}");
        }
    }

    #[test]
    fn infinite_noise_leaves_the_action_at_chance() {
        let args = tiny_args();
        let plan = args.plan().unwrap();
        let samples = 70;
        let (samples, _) =
            room_samples(RoomSetting::S1, plan.image_size, samples, plan.seed).unwrap();
        let chance = 1.0 / NUM_ACTIONS as f64;
        for (defence, method) in [
            (
                GradientMechanismConfig::DpSgd {
                    clip: 1.0,
                    noise_multiplier: 1e6,
                },
                Method::Qgi,
            ),
            (
                GradientMechanismConfig::Laplace {
                    epsilon: Epsilon::finite(1e-6).unwrap(),
                    clip: 0.01,
                },
                Method::Rgi,
            ),
        ] {
            let rows = dispatch(
                plan.backend,
                LeakageJob {
                    method,
                    defence,
                    samples: samples.clone(),
                    image_size: plan.image_size,
                    iterations: 1,
                    tv_weight: plan.tv_weight,
                    seed: plan.seed,
                    noise: RandomnessSource::Seeded(5),
                    victim_training: None,
                    batch_size: 1,
                    progress: None,
                },
            )
            .unwrap();
            let accuracy = CellScores::of(&rows).action_accuracy;
            // Binomial(70, 1/7): standard deviation 0.042; 3.5 of them either side.
            assert!(
                (accuracy - chance).abs() < 0.15,
                "{defence}: action accuracy {accuracy} vs chance {chance}"
            );
            assert!(CellScores::of(&rows).unrecognisable(), "{defence}");
        }
    }

    #[test]
    fn a_tiny_suite_writes_every_cell_a_table_and_plots() {
        let root = crate::run::tests::temp_dir("leakage-suite");
        let mut args = tiny_args();
        args.batch_sizes = vec![1, 2];
        let outcome = run_in(&root, args).unwrap();
        let markdown = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(markdown.contains("## Headline"), "{markdown}");
        assert!(
            outcome
                .headline
                .measured
                .contains("DP-SGD at the largest σ (DP-SGD C=1 σ=0.1)"),
            "{}",
            outcome.headline.measured
        );
        // 2 attacks × (none, clip, 1 σ, Laplace and PRS at 1 ε).
        let rows = markdown
            .lines()
            .filter(|l| l.starts_with("| QGI") || l.starts_with("| RGI"))
            .count();
        assert_eq!(rows, 10, "{markdown}");
        for name in [
            "qgi-none",
            "rgi-dp-sgd-sigma0.1",
            "qgi-laplace-eps10",
            "rgi-prs-eps10",
            "qgi-none-batch2",
        ] {
            crate::run::tests::assert_run_files(
                &root.join("leakage").join(name),
                &["reconstructions.png"],
            );
        }
        for family in ["dp-sgd", "laplace", "prs"] {
            assert!(
                root.join("leakage")
                    .join(format!("leakage-{family}.png"))
                    .is_file(),
                "{family}"
            );
        }
        assert!(markdown.contains("unrecognisable"), "{markdown}");
        // The batch table: batch sizes 1 and 2, each with the score columns.
        assert!(
            markdown.contains("## Batch size (QGI, no defence)"),
            "{markdown}"
        );
        assert!(markdown.contains("--batch-sizes 1,2"), "{markdown}");
    }

    #[test]
    fn bad_input_is_refused_with_the_allowed_range() {
        let mut args = tiny_args();
        args.dp_sgd_noise = vec![-1.0];
        let error = format!("{:#}", args.plan().unwrap_err());
        assert!(error.contains("noise_multiplier"), "{error}");
        let mut args = tiny_args();
        args.train_sample_rate = 2.0;
        assert!(args.plan().is_err());
        let mut args = tiny_args();
        args.batch_sizes = vec![16];
        let error = format!("{:#}", args.plan().unwrap_err());
        assert!(error.contains("1..=8"), "{error}");
    }

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
