//! `cargo xtask suite inversion`: gradient inversion on the active-perception rooms (QGI and
//! RGI, settings S1 and S2), Table I of Li, Ding, Zhao with the vector, action and
//! supervision-signal results of Section V-A.

use anyhow::Result;
use burn::tensor::backend::Backend;
use clap::{Args, ValueEnum};
use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};
use privrl_attacks::ImageScores;
use privrl_attacks::{
    evaluate_defended_batch_inversion, ActionRule, AttackConfig, GradientMatchingLoss,
    GradientSource, ImageNormalisation, ImagePrior, InversionRow, Sample, SignalRule,
    StateOptimisation, Victim, VictimKind,
};
use privrl_envs::room::{sample_observations, RoomConfig, RoomSetting, RoomType};
use privrl_envs::{Image, MultimodalObs};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::report::plot::median;
use crate::report::{format_mean_std, format_number, Cell, Report};
use crate::room_sheet::{bbox_pixels, draw_sheet, SheetCell};
use crate::run::{suite_dir, RunDir, RunName};
use crate::summary::{Headline, SuiteOutcome};
use crate::sweep::{run_parallel, Job};

/// Arguments of `suite inversion`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct InversionArgs {
    /// Quick mode: 16×16 images, 4 samples, 300 iterations per stage, TV weight 0.01.
    #[arg(long)]
    pub quick: bool,
    /// Samples per (attack, setting); the paper uses 240 (every layout twice). Default 4
    /// quick, 40 otherwise.
    #[arg(long)]
    pub samples: Option<usize>,
    /// Image size in pixels (the paper: 150). Default 16 quick, 32 otherwise.
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Optimisation iterations per stage (the paper: 2×10⁴). Default 300 quick, 2000 otherwise.
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Weight λ of the TV prior (the paper: 0.1). Default 0.01 quick (TV over-smooths tiny
    /// images), 0.1 otherwise.
    #[arg(long)]
    pub tv_weight: Option<f64>,
    /// Seed of the samples, the victims' initialisation and the attacks' Gaussian init.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Skip Table II's baselines (DLG, Inverting Gradients) and Fig. 4's joint ablation.
    #[arg(long)]
    pub skip_ablations: bool,
    /// Worker threads (0: one per core); each runs one (attack, setting).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// Entropy weight α of the REINFORCE victim (eq. 4); the paper does not state it.
pub(crate) const ENTROPY_WEIGHT: f64 = 0.01;

/// Resolved parameters of one suite run (what `config.json` records).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InversionPlan {
    pub(crate) samples: usize,
    pub(crate) image_size: usize,
    pub(crate) iterations: usize,
    pub(crate) tv_weight: f64,
    pub(crate) seed: u64,
    pub(crate) backend: BackendChoice,
    /// Entropy weight α of the REINFORCE victim (eq. 4); the paper does not state it.
    pub(crate) entropy_weight: f64,
}

impl InversionArgs {
    fn plan(&self) -> InversionPlan {
        let pick =
            |v: Option<usize>, quick, full| v.unwrap_or(if self.quick { quick } else { full });
        InversionPlan {
            samples: pick(self.samples, 4, 40),
            image_size: pick(self.image_size, 16, 32),
            iterations: pick(self.iterations, 300, 2000),
            tv_weight: self
                .tv_weight
                .unwrap_or(if self.quick { 0.01 } else { 0.1 }),
            seed: self.seed,
            backend: self.backend,
            entropy_weight: ENTROPY_WEIGHT,
        }
    }
}

/// The attacks of the suite: QGI and RGI (Table I), and on the DQN victim in S1 the baselines
/// of Table II and the joint-optimisation ablation of Fig. 4.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Method {
    /// Q-value gradient inversion (DQN victim).
    Qgi,
    /// Reward gradient inversion (REINFORCE victim).
    Rgi,
    /// DLG: objective gradients, action and target Q optimised jointly, MSE matching.
    #[value(name = "dlg")]
    DlgJoint,
    /// DLG with the action read off ∇b_last (Table II row 2).
    DlgRule,
    /// Inverting Gradients: objective gradients, rule-based action, cosine + TV.
    #[value(name = "ig")]
    InvertingGradients,
    /// QGI with images and vector optimised together (Fig. 4's "joint").
    QgiJoint,
    /// QGI matching by the paper's eq. 5 alone, without the magnitude term.
    #[value(name = "qgi-eq5")]
    QgiEq5,
}

impl Method {
    /// The Table II baselines and the Fig. 4 ablation, all on the DQN victim.
    const ABLATIONS: [Method; 5] = [
        Method::DlgJoint,
        Method::DlgRule,
        Method::InvertingGradients,
        Method::QgiJoint,
        Method::QgiEq5,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Qgi => "QGI",
            Method::Rgi => "RGI",
            Method::DlgJoint => "DLG",
            Method::DlgRule => "DLG, rule action",
            Method::InvertingGradients => "IG",
            Method::QgiJoint => "QGI, joint state",
            Method::QgiEq5 => "QGI, eq. 5 alone",
        }
    }

    pub(crate) fn slug(self) -> &'static str {
        match self {
            Method::Qgi => "qgi",
            Method::Rgi => "rgi",
            Method::DlgJoint => "dlg",
            Method::DlgRule => "dlg-rule",
            Method::InvertingGradients => "ig",
            Method::QgiJoint => "qgi-joint",
            Method::QgiEq5 => "qgi-eq5",
        }
    }

    /// The attack's configuration before the suite's iterations, seed and TV weight.
    fn config(self) -> AttackConfig {
        match self {
            Method::Qgi => AttackConfig::qgi(),
            Method::Rgi => AttackConfig::rgi(),
            Method::DlgJoint => AttackConfig::dlg(),
            Method::DlgRule => AttackConfig::dlg().with_source(GradientSource::Objective {
                action: ActionRule::FromBias,
                signal: SignalRule::Joint,
            }),
            Method::InvertingGradients => AttackConfig::inverting_gradients(),
            Method::QgiJoint => AttackConfig::qgi().with_state(StateOptimisation::Joint),
            Method::QgiEq5 => AttackConfig::qgi().with_matching(GradientMatchingLoss::Cosine),
        }
    }

    /// Table II's columns: gradient calculation, action, target Q, matching loss.
    fn table_two_design(self) -> [&'static str; 4] {
        match self {
            Method::DlgJoint => ["objective J", "opt", "opt", "MSE"],
            Method::DlgRule => ["objective J", "rule", "opt", "MSE"],
            Method::InvertingGradients => ["objective J", "rule", "opt", "cos"],
            Method::Qgi | Method::Rgi => {
                ["error direction ∇b_last", "rule", "rule", "cos + magnitude"]
            }
            Method::QgiJoint => [
                "error direction ∇b_last",
                "rule",
                "rule",
                "cos + magnitude (joint state)",
            ],
            Method::QgiEq5 => ["error direction ∇b_last", "rule", "rule", "cos (eq. 5)"],
        }
    }

    /// The paper's Table II: IoU, ε(Q̂) %, ε(Q) % (Fig. 4 gives the joint ablation only as bars).
    fn paper_table_two(self) -> &'static str {
        match self {
            Method::DlgJoint => "0.649 / 1083.64 / 89.85",
            Method::DlgRule => "0.610 / 1112.33 / 92.44",
            Method::InvertingGradients => "0.216 / 15751.95 / 198.83",
            Method::Qgi | Method::QgiEq5 => "0.912 / 1.03 / 0.67",
            Method::Rgi | Method::QgiJoint => "IoU < 0.1 (Fig. 4)",
        }
    }

    /// The attack as the suites run it: `iterations` per stage, the attack's seed, and the TV
    /// weight where the method has a prior.
    pub(crate) fn attack_config(
        self,
        iterations: usize,
        seed: u64,
        tv_weight: f64,
    ) -> AttackConfig {
        let mut config = self
            .config()
            .with_iterations_per_stage(iterations)
            .with_seed(seed);
        if config.prior.is_some() {
            config.prior = Some(ImagePrior::TotalVariation { weight: tv_weight });
        }
        config
    }

    pub(crate) fn victim_kind(self, entropy_weight: f64) -> VictimKind {
        match self {
            Method::Rgi => VictimKind::Reinforce { entropy_weight },
            _ => VictimKind::Dqn,
        }
    }
}

/// The samples of one setting: room observations in which the target is visible (the paper's
/// bounding box comes from an upstream detector, so its samples contain the target), with a
/// seeded action and the detection reward as supervision signal. For DQN the signal stands for
/// the target Q-value of a one-step target (γ = 0); the paper's pre-collected transitions are
/// not available.
pub(crate) fn room_samples(
    setting: RoomSetting,
    image_size: usize,
    count: usize,
    seed: u64,
) -> Result<(Vec<Sample>, Vec<String>)> {
    let config = RoomConfig::s1()
        .with_setting(setting)
        .with_image_size(image_size);
    let rooms: Vec<_> = sample_observations(&config, 8 * count, seed)?
        .into_iter()
        .filter(|r| r.reward > 0.0 && r.obs.vector.iter().any(|&v| v != 0.0))
        .take(count)
        .collect();
    anyhow::ensure!(
        rooms.len() == count,
        "only {} of {count} sampled views show the target",
        rooms.len(),
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let types = rooms.iter().map(|r| r.room_type.to_string()).collect();
    let samples = rooms
        .into_iter()
        .map(|r| Sample {
            rgb: r.obs.rgb.map(|image| image.data),
            depth: r.obs.depth.map(|image| image.data),
            vector: r.obs.vector,
            action: rng.random_range(0..privrl_envs::room::NUM_ACTIONS),
            signal: r.reward,
        })
        .collect();
    Ok((samples, types))
}

/// The victim network: strided conv encoders per image, a Dense branch over the bounding box,
/// a Dense head over 7 actions (Section III, "Active Perception Task").
pub(crate) fn victim_config(setting: RoomSetting, image_size: usize) -> MultimodalNetConfig {
    let encoder =
        |channels| ConvEncoderConfig::new(channels, image_size).with_channels(vec![16, 32]);
    MultimodalNetConfig::new(4, privrl_envs::room::NUM_ACTIONS)
        .with_rgb((setting == RoomSetting::S1).then(|| encoder(3)))
        .with_depth(Some(encoder(1)))
}

pub(crate) struct InversionJob {
    pub(crate) plan: InversionPlan,
    pub(crate) method: Method,
    pub(crate) setting: RoomSetting,
    pub(crate) samples: Vec<Sample>,
    /// Samples per shared gradient (1: the paper's single-sample gradients).
    pub(crate) batch_size: usize,
}

impl BackendTask for InversionJob {
    type Output = Vec<InversionRow>;

    fn run<B: Backend>(self, device: B::Device) -> Result<Vec<InversionRow>> {
        let kind = self.method.victim_kind(self.plan.entropy_weight);
        let config =
            self.method
                .attack_config(self.plan.iterations, self.plan.seed, self.plan.tv_weight);
        let victim = Victim::<B>::from_seed(
            &victim_config(self.setting, self.plan.image_size),
            kind,
            self.plan.seed,
            &device,
        )?;
        // `None` draws nothing from the generator; with batches of one this is
        // `evaluate_inversion`.
        Ok(evaluate_defended_batch_inversion(
            &victim,
            &self.samples,
            &config,
            ImageNormalisation::Clamp,
            &privrl_privacy::GradientMechanismConfig::None,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(0),
            self.batch_size,
        )?)
    }
}

/// Mean ± std of `f` over the rows where it is defined.
pub(crate) fn summary(rows: &[InversionRow], f: impl Fn(&InversionRow) -> Option<f64>) -> String {
    let values: Vec<f64> = rows
        .iter()
        .filter_map(f)
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        "-".into()
    } else {
        format_mean_std(&values)
    }
}

/// The paper's Table I averages (PSNR, SSIM), for comparison.
fn paper_table_one(method: Method, setting: RoomSetting, depth: bool) -> &'static str {
    match (method, setting, depth) {
        (Method::Qgi, RoomSetting::S1, false) => "21.02 / 0.729",
        (Method::Qgi, RoomSetting::S1, true) => "23.18 / 0.807",
        (Method::Qgi, RoomSetting::S2, true) => "26.46 / 0.910",
        (Method::Rgi, RoomSetting::S1, false) => "17.12 / 0.544",
        (Method::Rgi, RoomSetting::S1, true) => "18.58 / 0.581",
        (Method::Rgi, RoomSetting::S2, true) => "37.21 / 0.964",
        _ => "-",
    }
}

/// Runs the suite and writes `runs/inversion/report.md`; returns the report's path.
pub fn run(args: InversionArgs) -> Result<SuiteOutcome> {
    let plan = args.plan();
    let dir = suite_dir("inversion")?;
    let mut jobs = Vec::new();
    let mut room_types = Vec::new();
    let mut truths = Vec::new();
    for setting in [RoomSetting::S1, RoomSetting::S2] {
        let (samples, types) = room_samples(setting, plan.image_size, plan.samples, plan.seed)?;
        room_types = types;
        truths.push((setting, samples.clone()));
        let mut methods = vec![Method::Qgi, Method::Rgi];
        if setting == RoomSetting::S1 && !args.skip_ablations {
            methods.extend(Method::ABLATIONS);
        }
        for method in methods {
            let name = format!("{} {:?}", method.name(), setting);
            jobs.push(Job::new(
                name,
                InversionJob {
                    plan: plan.clone(),
                    method,
                    setting,
                    samples: samples.clone(),
                    batch_size: 1,
                },
            ));
        }
    }
    let outcomes = run_parallel(jobs, args.threads, |job, _| {
        let (method, setting) = (job.method, job.setting);
        Ok((method, setting, dispatch(plan.backend, job)?))
    })?
    .into_ok()?;

    let mut report = Report::new(&dir, "Gradient inversion on RL: QGI and RGI");
    report.paragraph(&format!(
        "Li, Ding, Zhao, *Your Room is not Private*. One shared single-sample gradient of a \
         freshly initialised multimodal victim (strided convolutions over RGB and depth, Dense \
         layers over the target's bounding box, 7 actions) is inverted: action by eq. 7 (QGI) or \
         eq. 8 (RGI), the linear part's inputs (stage 1) then the images (stage 2) by cosine \
         gradient matching (eq. 5) plus a magnitude term μ(‖g_rec‖/‖g‖ − 1)², μ = 0.1 (ours: \
         eq. 5 alone leaves the scale of the linear part's input free; see \"QGI, eq. 5 alone\" \
         in Table II), through the error-direction surrogate (eq. 6) with a TV prior, then Q \
         (§IV-C2) or the reward (eq. 9). {} samples per cell from the pure-Rust rooms at \
         {}×{} px (the paper: 240 AI2THOR samples at 150×150), {} iterations per stage (the \
         paper: 2×10⁴), λ = {}, backend `{}`. Images are clamped to [0, 1]; PSNR and SSIM on \
         the Y channel (RGB) and on depth.",
        plan.samples,
        plan.image_size,
        plan.image_size,
        plan.iterations,
        plan.tv_weight,
        plan.backend
    ));
    let mut table_one = Vec::new();
    let mut table_two = Vec::new();
    let mut ablation = Vec::new();
    let mut sheets = Vec::new();
    for (_, (method, setting, rows)) in &outcomes {
        let run = RunDir::create(
            "inversion",
            RunName::new(method.slug())
                .part(format!("{setting:?}"))
                .seed(plan.seed),
        )?;
        run.write_config(&plan)?;
        write_rows(&run, rows)?;
        if let Some((_, truth)) = truths.iter().find(|(s, _)| s == setting) {
            let path = run.path().join("reconstructions.png");
            reconstruction_sheet(&path, *method, *setting, truth, rows, plan.image_size)?;
            if *method != Method::Rgi {
                sheets.push((
                    format!(
                        "{} {setting:?}: originals beside reconstructions",
                        method.name()
                    ),
                    path,
                ));
            }
        }
        if Method::ABLATIONS.contains(method)
            || (*method == Method::Qgi && *setting == RoomSetting::S1)
        {
            let [gradient, action, target, loss] = method.table_two_design();
            ablation.push(vec![
                Cell::from(method.name()),
                Cell::from(gradient),
                Cell::from(action),
                Cell::from(target),
                Cell::from(loss),
                Cell::from(summary(rows, |r| r.vector_iou)),
                Cell::from(summary(rows, |r| r.predicted_q_error_pct)),
                Cell::from(summary(rows, |r| r.target_q_error_pct)),
                Cell::from(format!(
                    "{} / {}",
                    summary(rows, |r| r.rgb.map(|s| s.psnr)),
                    summary(rows, |r| r.rgb.map(|s| s.ssim))
                )),
                Cell::from(format!(
                    "{} / {}",
                    summary(rows, |r| r.depth.map(|s| s.psnr)),
                    summary(rows, |r| r.depth.map(|s| s.ssim))
                )),
                Cell::from(method.paper_table_two()),
            ]);
        }
        if Method::ABLATIONS.contains(method) {
            continue;
        }
        for (modality, depth) in [("RGB", false), ("depth", true)] {
            let scores = |r: &InversionRow| if depth { r.depth } else { r.rgb };
            if rows.iter().all(|r| scores(r).is_none()) {
                continue;
            }
            let mut cells = vec![
                Cell::from(method.name()),
                Cell::from(format!("{setting:?}")),
                Cell::from(modality),
            ];
            for room in RoomType::ALL.map(|t| t.to_string()) {
                let of_type: Vec<InversionRow> = rows
                    .iter()
                    .filter(|r| room_types.get(r.sample).is_some_and(|t| *t == room))
                    .cloned()
                    .collect();
                cells.push(Cell::from(format!(
                    "{} / {}",
                    summary(&of_type, |r| scores(r).map(|s| s.psnr)),
                    summary(&of_type, |r| scores(r).map(|s| s.ssim))
                )));
            }
            cells.push(Cell::from(format!(
                "{} / {}",
                summary(rows, |r| scores(r).map(|s| s.psnr)),
                summary(rows, |r| scores(r).map(|s| s.ssim))
            )));
            cells.push(Cell::from(paper_table_one(*method, *setting, depth)));
            table_one.push(cells);
        }
        let accuracy =
            rows.iter().filter(|r| r.action_correct).count() as f64 / rows.len().max(1) as f64;
        table_two.push(vec![
            Cell::from(method.name()),
            Cell::from(format!("{setting:?}")),
            Cell::from(summary(rows, |r| r.vector_iou)),
            Cell::from(format!("{:.0}%", 100.0 * accuracy)),
            Cell::from(summary(rows, |r| r.predicted_q_error_pct)),
            Cell::from(summary(rows, |r| r.target_q_error_pct)),
            Cell::from(summary(rows, |r| r.reward_abs_error)),
            Cell::from(summary(rows, |r| Some(r.attack_ms / 1e3))),
        ]);
    }
    report
        .heading("Images (Table I): PSNR / SSIM, mean ± std over samples")
        .table(
            &[
                "method",
                "setting",
                "state",
                "bathroom",
                "bedroom",
                "kitchen",
                "living room",
                "average",
                "paper's average",
            ],
            table_one,
        )
        .heading("Vector state, action and supervision signal")
        .paragraph(
            "The paper reports mean IoU > 0.9, 100% action accuracy, Q errors < 1.1% and reward \
             errors < 1e-6.",
        )
        .table(
            &[
                "method",
                "setting",
                "bbox IoU",
                "action accuracy",
                "ε(Q̂) %",
                "ε(Q) %",
                "|r − r_rec|",
                "seconds / sample",
            ],
            table_two,
        );
    if !ablation.is_empty() {
        report
            .heading("Table II and Fig. 4: baselines and ablation (DQN victim, S1)")
            .paragraph(
                "The same samples and victim as QGI S1. DLG and Inverting Gradients match the \
                 objective's gradient, so they need the action and the target Q first (rule) or \
                 optimise them with the input (opt); QGI matches the error direction (eq. 6). \
                 \"QGI, joint state\" optimises images and vector together (Fig. 4); \
                 \"QGI, eq. 5 alone\" drops our magnitude term from the matching loss.",
            )
            .table(
                &[
                    "method",
                    "gradient",
                    "action",
                    "target Q",
                    "loss",
                    "bbox IoU",
                    "ε(Q̂) %",
                    "ε(Q) %",
                    "RGB PSNR / SSIM",
                    "depth PSNR / SSIM",
                    "paper: IoU / ε(Q̂) / ε(Q)",
                ],
                ablation,
            );
    }
    let headline = headline(
        outcomes
            .iter()
            .find(|(_, (m, s, _))| *m == Method::Qgi && *s == RoomSetting::S1)
            .map_or(&[][..], |(_, (_, _, rows))| rows.as_slice()),
    );
    headline.add_to(&mut report);
    report.heading("Reconstructions");
    for (caption, path) in &sheets {
        report.image(caption, path, None);
    }
    let mut command = format!(
        "cargo xtask suite inversion --samples {} --image-size {} --iterations {} --tv-weight {} --seed {}",
        plan.samples, plan.image_size, plan.iterations, plan.tv_weight, plan.seed
    );
    if args.quick {
        command = "cargo xtask suite inversion --quick".into();
    }
    if args.skip_ablations {
        command.push_str(" --skip-ablations");
    }
    report.reproduce([command]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The paper's headline (Li, Ding, Zhao, Table II): from one shared DQN gradient QGI recovers
/// the action and the target's bounding box. Judged on QGI, S1: every action right and the
/// median bounding-box IoU at least 0.5 (a box guessed at random overlaps by about 0).
fn headline(qgi_s1: &[InversionRow]) -> Headline {
    let accuracy =
        qgi_s1.iter().filter(|r| r.action_correct).count() as f64 / qgi_s1.len().max(1) as f64;
    // A failed attack (no IoU, or NaN) counts as IoU 0: failures are counted, never dropped.
    let ious: Vec<f64> = qgi_s1
        .iter()
        .map(|r| r.vector_iou.filter(|v| v.is_finite()).unwrap_or(0.0))
        .collect();
    let median_iou = median(&ious);
    Headline {
        effect: "one shared DQN gradient gives the state away: QGI on S1 recovers every \
                 sample's action, and the median bounding-box IoU is at least 0.5."
            .into(),
        measured: format!(
            "action accuracy {:.0}% and median IoU {} over {} samples",
            100.0 * accuracy,
            format_number(median_iou),
            qgi_s1.len()
        ),
        visible: !qgi_s1.is_empty() && accuracy == 1.0 && median_iou >= 0.5,
    }
}

/// A Fig. 3-style sheet: one row per sample (up to 6), the original beside the reconstruction,
/// with the true and the reconstructed bounding boxes.
pub(crate) fn reconstruction_sheet(
    path: &std::path::Path,
    method: Method,
    setting: RoomSetting,
    truth: &[Sample],
    rows: &[InversionRow],
    size: usize,
) -> Result<()> {
    let image = |data: &Option<Vec<f32>>, channels: usize| {
        data.as_ref().map(|d| Image {
            channels,
            height: size,
            width: size,
            data: d.clone(),
        })
    };
    let sheet_rows: Vec<(String, Vec<SheetCell>)> = rows
        .iter()
        .take(6)
        .filter_map(|row| truth.get(row.sample).map(|t| (row, t)))
        .map(|(row, t)| {
            let psnr: Vec<String> = [("RGB", row.rgb), ("depth", row.depth)]
                .into_iter()
                .filter_map(|(name, s): (&str, Option<ImageScores>)| {
                    s.map(|s| format!("{name} {:.1} dB", s.psnr))
                })
                .collect();
            let original = SheetCell {
                label: "original".into(),
                obs: MultimodalObs {
                    rgb: image(&t.rgb, 3),
                    depth: image(&t.depth, 1),
                    vector: t.vector.clone(),
                },
                bbox: bbox_pixels(&t.vector, size),
            };
            let rec = &row.reconstructed;
            let reconstruction = SheetCell {
                label: format!("{}: {}", method.name(), psnr.join(", ")),
                obs: MultimodalObs {
                    rgb: image(&rec.rgb, 3),
                    depth: image(&rec.depth, 1),
                    vector: rec.vector.clone(),
                },
                bbox: bbox_pixels(&rec.vector, size),
            };
            (
                format!("sample {}", row.sample),
                vec![original, reconstruction],
            )
        })
        .collect();
    draw_sheet(
        path,
        &format!("{} {setting:?}, {size} × {size}", method.name()),
        &sheet_rows,
        size as u32,
        (96 / size as u32).max(1),
        "original | reconstruction (PSNR); green: bounding boxes",
    )
}

/// The settings of the rooms, for the command line.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SettingArg {
    /// RGB + depth.
    S1,
    /// Depth only.
    S2,
}

/// Arguments of `attack`: one attack on one setting.
#[derive(Args, Debug, Clone, Serialize)]
pub struct AttackArgs {
    /// The attack (QGI and the baselines attack a DQN victim, RGI a REINFORCE victim).
    #[arg(long, value_enum, default_value_t = Method::Qgi)]
    pub method: Method,
    /// The setting: s1 (RGB + depth) or s2 (depth only).
    #[arg(long, value_enum, default_value_t = SettingArg::S1)]
    pub setting: SettingArg,
    /// Samples to attack.
    #[arg(long, default_value_t = 4)]
    pub samples: usize,
    /// Samples per shared gradient (1..=8; consecutive samples form a batch). Above 1, QGI
    /// only: the batch attack reads the batch's actions off ∇b_last, and each sample is scored
    /// against the reconstruction that matches it best.
    #[arg(long, default_value_t = 1)]
    pub batch_size: usize,
    /// Image size in pixels (the paper: 150).
    #[arg(long, default_value_t = 32)]
    pub res: usize,
    /// Optimisation iterations per stage (the paper: 2×10⁴).
    #[arg(long, default_value_t = 2000)]
    pub iters: usize,
    /// Weight λ of the TV prior (the paper: 0.1).
    #[arg(long, default_value_t = 0.1)]
    pub tv_weight: f64,
    /// Seed of the samples, the victim's initialisation and the attack's Gaussian init.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
}

/// `cargo xtask attack`: one attack, one run directory `runs/attack/<method>-<setting>-seed<S>/`
/// with per-sample metrics, a summary and the reconstruction sheet.
pub fn run_attack(args: AttackArgs) -> Result<std::path::PathBuf> {
    anyhow::ensure!(args.samples >= 1, "--samples must be at least 1");
    anyhow::ensure!(
        (8..=512).contains(&args.res),
        "--res must be between 8 and 512 pixels, got {}",
        args.res
    );
    anyhow::ensure!(args.iters >= 1, "--iters must be at least 1");
    anyhow::ensure!(
        (1..=privrl_attacks::MAX_BATCH).contains(&args.batch_size),
        "--batch-size must be in 1..={}, got {}",
        privrl_attacks::MAX_BATCH,
        args.batch_size
    );
    anyhow::ensure!(
        args.batch_size == 1 || args.method == Method::Qgi,
        "--batch-size above 1 needs --method qgi (the batch attack is QGI's), got {}",
        args.method.slug()
    );
    anyhow::ensure!(
        args.tv_weight >= 0.0 && args.tv_weight.is_finite(),
        "--tv-weight must be finite and >= 0, got {}",
        args.tv_weight
    );
    let plan = InversionPlan {
        samples: args.samples,
        image_size: args.res,
        iterations: args.iters,
        tv_weight: args.tv_weight,
        seed: args.seed,
        backend: args.backend,
        entropy_weight: 0.01,
    };
    let setting = match args.setting {
        SettingArg::S1 => RoomSetting::S1,
        SettingArg::S2 => RoomSetting::S2,
    };
    let (truth, _) = room_samples(setting, plan.image_size, plan.samples, plan.seed)?;
    let rows = dispatch(
        plan.backend,
        InversionJob {
            plan: plan.clone(),
            method: args.method,
            setting,
            samples: truth.clone(),
            batch_size: args.batch_size,
        },
    )?;
    let run = RunDir::create(
        "attack",
        RunName::new(args.method.slug())
            .part(format!("{setting:?}"))
            .part(if args.batch_size > 1 {
                format!("batch{}", args.batch_size)
            } else {
                String::new()
            })
            .seed(plan.seed),
    )?;
    run.write_config(&args)?;
    write_rows(&run, &rows)?;
    let sheet = run.path().join("reconstructions.png");
    reconstruction_sheet(&sheet, args.method, setting, &truth, &rows, plan.image_size)?;
    for row in &rows {
        println!(
            "sample {}: action {}, RGB {}, depth {}, IoU {}, ε(Q) {}, |Δr| {}, {:.1} s",
            row.sample,
            if row.action_correct {
                "recovered"
            } else {
                "wrong"
            },
            row.rgb
                .map_or("-".into(), |s| format!("{:.2} dB / {:.3}", s.psnr, s.ssim)),
            row.depth
                .map_or("-".into(), |s| format!("{:.2} dB / {:.3}", s.psnr, s.ssim)),
            row.vector_iou.map_or("-".into(), |v| format!("{v:.3}")),
            row.target_q_error_pct
                .map_or("-".into(), |v| format!("{v:.3}%")),
            row.reward_abs_error
                .map_or("-".into(), |v| format!("{v:.2e}")),
            row.attack_ms / 1e3
        );
    }
    println!("wrote {}", run.path().display());
    Ok(run.path().to_path_buf())
}

/// `metrics.csv` (one row per attacked sample) and `summary.json` of an attack's run.
pub(crate) fn write_rows(run: &RunDir, rows: &[InversionRow]) -> Result<()> {
    let mut metrics = run.metrics()?;
    let nan = f64::NAN;
    for row in rows {
        metrics.write_row(&[
            ("sample", row.sample as f64),
            ("rgb_psnr", row.rgb.as_ref().map_or(nan, |s| s.psnr)),
            ("rgb_ssim", row.rgb.as_ref().map_or(nan, |s| s.ssim)),
            ("depth_psnr", row.depth.as_ref().map_or(nan, |s| s.psnr)),
            ("depth_ssim", row.depth.as_ref().map_or(nan, |s| s.ssim)),
            ("vector_iou", row.vector_iou.unwrap_or(nan)),
            ("action_correct", f64::from(u8::from(row.action_correct))),
            (
                "predicted_q_error_pct",
                row.predicted_q_error_pct.unwrap_or(nan),
            ),
            ("target_q_error_pct", row.target_q_error_pct.unwrap_or(nan)),
            ("reward_abs_error", row.reward_abs_error.unwrap_or(nan)),
            ("attack_ms", row.attack_ms),
        ])?;
    }
    run.write_summary(&rows)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `samples` samples at 8 px, 3 iterations per stage.
    fn tiny_plan(samples: usize) -> InversionPlan {
        InversionPlan {
            samples,
            image_size: 8,
            iterations: 3,
            tv_weight: 0.1,
            seed: 0,
            backend: BackendChoice::default(),
            entropy_weight: ENTROPY_WEIGHT,
        }
    }

    #[test]
    fn a_batch_attack_scores_every_sample_once() {
        let plan = tiny_plan(3);
        let (truth, _) =
            room_samples(RoomSetting::S2, plan.image_size, plan.samples, plan.seed).unwrap();
        let rows = dispatch(
            plan.backend,
            InversionJob {
                plan,
                method: Method::Qgi,
                setting: RoomSetting::S2,
                samples: truth,
                batch_size: 2,
            },
        )
        .unwrap();
        // A batch of 2, then the remaining sample alone.
        assert_eq!(rows.iter().map(|r| r.sample).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(rows
            .iter()
            .all(|r| r.depth.is_some() && r.vector_iou.is_some()));
    }

    #[test]
    fn batch_sizes_outside_the_batch_attack_are_refused() {
        let args = |method, batch_size| AttackArgs {
            method,
            setting: SettingArg::S2,
            samples: 2,
            res: 8,
            iters: 1,
            batch_size,
            tv_weight: 0.1,
            seed: 0,
            backend: BackendChoice::default(),
        };
        let error = format!("{:#}", run_attack(args(Method::Qgi, 9)).unwrap_err());
        assert!(error.contains("1..=8"), "{error}");
        let error = format!("{:#}", run_attack(args(Method::Rgi, 2)).unwrap_err());
        assert!(error.contains("--method qgi"), "{error}");
    }

    #[test]
    fn every_method_attacks_and_draws_its_reconstruction_sheet() {
        let plan = tiny_plan(1);
        let (truth, _) =
            room_samples(RoomSetting::S1, plan.image_size, plan.samples, plan.seed).unwrap();
        let dir = crate::run::tests::temp_dir("inversion-sheet");
        for method in [Method::Qgi, Method::Rgi]
            .into_iter()
            .chain(Method::ABLATIONS)
        {
            let rows = dispatch(
                plan.backend,
                InversionJob {
                    plan: plan.clone(),
                    method,
                    setting: RoomSetting::S1,
                    samples: truth.clone(),
                    batch_size: 1,
                },
            )
            .unwrap();
            assert_eq!(rows.len(), 1);
            let rec = &rows[0].reconstructed;
            assert_eq!(
                rec.rgb.as_ref().map(Vec::len),
                Some(3 * 8 * 8),
                "{method:?}"
            );
            assert_eq!(rec.depth.as_ref().map(Vec::len), Some(8 * 8), "{method:?}");
            assert_eq!(rec.vector.len(), 4);
            let path = dir.join(format!("{}.png", method.slug()));
            reconstruction_sheet(&path, method, RoomSetting::S1, &truth, &rows, 8).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[1..4], b"PNG");
            // 8 px images zoomed 12× (96 px), RGB and depth side by side, two cells per row.
            let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            assert!(width >= 2 * (2 * 96 + 2), "{width}");
        }
    }
}
