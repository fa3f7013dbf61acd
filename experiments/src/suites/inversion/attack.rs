//! `cargo xtask attack`: one attack on one setting, outside the suite.

use anyhow::Result;
use clap::{Args, ValueEnum};
use privrl_envs::room::RoomSetting;
use serde::Serialize;

use super::gradients_file::{declared_model, GradientFileJob};
use super::job::InversionJob;
use super::method::Method;
use super::model_job::{room_user_samples, ModelArg, ModelJob};
use super::plan::{paper_normalisation, InversionPlan, VictimWidth};
use super::run_files::{reconstruction_sheet, write_rows};
use super::samples_dir::{read_samples_dir, write_depth_png, write_rgb_png, UserSamples};
use crate::backend::{dispatch, BackendChoice};
use crate::run::{RunDir, RunName};

/// The settings of the rooms, for the command line.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SettingArg {
    /// RGB + depth.
    S1,
    /// Depth only.
    S2,
}

impl From<SettingArg> for RoomSetting {
    fn from(setting: SettingArg) -> Self {
        match setting {
            SettingArg::S1 => RoomSetting::S1,
            SettingArg::S2 => RoomSetting::S2,
        }
    }
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
    /// The victim network: `multimodal` (the paper's), `cnn` (an image-only CNN) or `mlp`
    /// (an MLP on the vector state). On the rooms, `cnn` reads the RGB image in S1 and the
    /// depth image in S2, `mlp` the bounding box.
    #[arg(long, value_enum, default_value_t = ModelArg::Multimodal)]
    pub model: ModelArg,
    /// Attack your own samples instead of the rooms': a directory with one `<name>.json` per
    /// sample, `{"rgb": "<file>", "depth": "<file>", "vector": [..], "action": a, "signal": s}`
    /// (images optional, relative to the directory: PNG or JPEG colour, grayscale PNG depth,
    /// 16-bit for full precision; square, one size per part). Replaces --setting, --samples
    /// and --res. Or a plain folder of PNG/JPEG images with no JSON: each a colour image,
    /// centre-cropped and resized to --res, its action and signal drawn from --seed and
    /// written to the run's config.json (`drawn_labels`). Writes the reconstructions as images
    /// beside the metrics.
    #[arg(long, value_name = "DIR")]
    pub samples_dir: Option<std::path::PathBuf>,
    /// Attack a gradient captured elsewhere: a safetensors file with one float32 tensor per
    /// parameter, named by its Burn path (`layers.0.weight`), in Burn's layout (a Dense weight
    /// is `[d_in, d_out]`). Needs --weights; `bench/pytorch/export_gradient.py` writes both
    /// from a PyTorch model. The reconstruction is written without scores (no truth).
    #[arg(long, value_name = "FILE", requires = "weights")]
    pub gradients: Option<std::path::PathBuf>,
    /// The victim's weights for --gradients: a safetensors file like the gradient's, whose
    /// header names the architecture (`privrl.model`: multimodal, cnn or mlp;
    /// `privrl.config`: the network's config as JSON).
    #[arg(long, value_name = "FILE", requires = "gradients")]
    pub weights: Option<std::path::PathBuf>,
    /// Number of actions of the victim with --samples-dir (the rooms have 7).
    #[arg(long, default_value_t = privrl_envs::room::NUM_ACTIONS)]
    pub actions: usize,
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
    /// The victim's encoder width: `paper` (the feature-to-pixel ratios of the paper's DQN
    /// encoder at 150 px) or `wide` (16 and 32 channels, over-determining depth).
    #[arg(long, value_enum, default_value_t = VictimWidth::Paper)]
    pub victim: VictimWidth,
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
    check_attack_args(&args)?;
    let plan = InversionPlan {
        samples: args.samples,
        image_size: args.res,
        iterations: args.iters,
        tv_weight: args.tv_weight,
        seed: args.seed,
        backend: args.backend,
        entropy_weight: 0.01,
        rooms: super::plan::RoomSelection::First,
    };
    let setting = RoomSetting::from(args.setting);
    if let (Some(gradients), Some(weights)) = (&args.gradients, &args.weights) {
        anyhow::ensure!(
            args.samples_dir.is_none(),
            "--gradients attacks one captured gradient; it does not take --samples-dir"
        );
        anyhow::ensure!(
            args.batch_size == 1,
            "--gradients attacks the gradient of one sample; --batch-size must be 1"
        );
        return attack_gradient_file(&args, plan, gradients, weights);
    }
    if args.samples_dir.is_none() && args.model == ModelArg::Multimodal {
        return attack_rooms(&args, plan, setting);
    }
    let (samples, origin) = attacked_samples(&args, &plan, setting)?;
    let actions = match args.samples_dir {
        Some(_) => args.actions,
        None => privrl_envs::room::NUM_ACTIONS,
    };
    let rows = dispatch(
        plan.backend,
        ModelJob {
            plan: plan.clone(),
            method: args.method,
            model: args.model,
            samples: samples.clone(),
            actions,
            width: args.victim,
            batch_size: args.batch_size,
        },
    )?;
    let run = RunDir::create(
        "attack",
        RunName::new(args.method.slug())
            .part(origin)
            .part(args.model.slug())
            .part(width_part(args.victim))
            .part(batch_part(args.batch_size))
            .seed(plan.seed),
    )?;
    run.write_config(&AttackRunConfig {
        args: &args,
        drawn_labels: &samples.drawn,
    })?;
    write_rows(&run, &rows)?;
    write_reconstructions(run.path(), &samples, &rows)?;
    print_rows(&rows);
    println!("wrote {}", run.path().display());
    Ok(run.path().to_path_buf())
}

/// An attack run's `config.json`: the arguments, and for a plain folder of images the labels
/// drawn for it (absent otherwise, so other runs' configs are unchanged).
#[derive(Serialize)]
struct AttackRunConfig<'a> {
    #[serde(flatten)]
    args: &'a AttackArgs,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    drawn_labels: &'a [super::samples_dir::DrawnLabel],
}

/// The command line's ranges, checked before anything runs.
fn check_attack_args(args: &AttackArgs) -> Result<()> {
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
    anyhow::ensure!(
        args.actions >= 2,
        "--actions must be at least 2, got {}",
        args.actions
    );
    Ok(())
}

/// The samples `--model` attacks (from `--samples-dir`, else the rooms of `setting`), kept to
/// the parts it reads, and where they came from (a run-name part).
fn attacked_samples(
    args: &AttackArgs,
    plan: &InversionPlan,
    setting: RoomSetting,
) -> Result<(UserSamples, String)> {
    let (samples, origin) = match &args.samples_dir {
        Some(dir) => {
            let samples = read_samples_dir(dir, args.actions, plan.seed, plan.image_size)?;
            if !samples.drawn.is_empty() {
                println!(
                    "note: {} holds images without descriptions: {} colour samples at {} px, \
                     actions and signals drawn from --seed {} (config.json: drawn_labels)",
                    dir.display(),
                    samples.samples.len(),
                    plan.image_size,
                    plan.seed
                );
            }
            (samples, "samples".to_string())
        }
        None => {
            let (truth, _) = plan.room_samples(setting)?;
            (
                room_user_samples(truth, plan.image_size),
                format!("{setting:?}"),
            )
        }
    };
    let have = (
        samples.rgb_size.is_some(),
        samples.depth_size.is_some(),
        samples.vector_len > 0,
    );
    let read = args.model.parts_read(have)?;
    if read != have {
        println!(
            "note: --model {} reads {}; the samples' other parts are not attacked",
            args.model.slug(),
            describe_parts(read)
        );
    }
    Ok((samples.keep_parts(read.0, read.1, read.2), origin))
}

/// `--gradients FILE --weights FILE`: one attack, `reconstruction.json` and its images.
fn attack_gradient_file(
    args: &AttackArgs,
    plan: InversionPlan,
    gradients: &std::path::Path,
    weights: &std::path::Path,
) -> Result<std::path::PathBuf> {
    let declared = declared_model(weights)?;
    let model = declared.model;
    let rec = dispatch(
        plan.backend,
        GradientFileJob {
            plan: plan.clone(),
            method: args.method,
            declared,
            weights: weights.to_path_buf(),
            gradients: gradients.to_path_buf(),
        },
    )?;
    let run = RunDir::create(
        "attack",
        RunName::new(args.method.slug())
            .part("gradients")
            .part(model.slug())
            .seed(plan.seed),
    )?;
    run.write_config(args)?;
    crate::run::write_json(&run.file("reconstruction.json"), &rec)?;
    let side = |len: usize, channels: usize| ((len / channels) as f64).sqrt().round() as usize;
    if let Some(rgb) = &rec.rgb {
        let (rgb, _) = privrl_attacks::ImageNormalisation::Clamp.apply(Some(rgb.as_slice()), None);
        let rgb = rgb.unwrap_or_default();
        write_rgb_png(
            &run.file("reconstruction.rgb.png"),
            &rgb,
            side(rgb.len(), 3),
        )?;
    }
    if let Some(depth) = &rec.depth {
        let (_, depth) =
            privrl_attacks::ImageNormalisation::Clamp.apply(None, Some(depth.as_slice()));
        let depth = depth.unwrap_or_default();
        write_depth_png(
            &run.file("reconstruction.depth.png"),
            &depth,
            side(depth.len(), 1),
        )?;
    }
    let final_loss = rec.loss_history.last().map_or(f64::NAN, |r| r.loss);
    println!(
        "reconstructed: vector {:?}, action {}, signal {:.6}, final loss {final_loss:.3e}",
        rec.vector, rec.action, rec.signal
    );
    println!("wrote {}", run.path().display());
    Ok(run.path().to_path_buf())
}

fn describe_parts((rgb, depth, vector): (bool, bool, bool)) -> String {
    let names: Vec<&str> = [
        (rgb, "the RGB image"),
        (depth, "the depth image"),
        (vector, "the vector"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    names.join(" and ")
}

fn width_part(width: VictimWidth) -> &'static str {
    match width {
        VictimWidth::Paper => "",
        VictimWidth::Wide => "wide",
    }
}

fn batch_part(batch_size: usize) -> String {
    if batch_size > 1 {
        format!("batch{batch_size}")
    } else {
        String::new()
    }
}

/// The paper's victim on the rooms: the run of the suite's jobs, with Fig. 3's sheet.
fn attack_rooms(
    args: &AttackArgs,
    plan: InversionPlan,
    setting: RoomSetting,
) -> Result<std::path::PathBuf> {
    let (truth, _) = plan.room_samples(setting)?;
    let rows = dispatch(
        plan.backend,
        InversionJob {
            plan: plan.clone(),
            method: args.method,
            setting,
            samples: truth.clone(),
            batch_size: args.batch_size,
            attack_batch: 1,
            width: args.victim,
            normalisation: paper_normalisation(setting),
        },
    )?;
    let run = RunDir::create(
        "attack",
        RunName::new(args.method.slug())
            .part(format!("{setting:?}"))
            .part(width_part(args.victim))
            .part(batch_part(args.batch_size))
            .seed(plan.seed),
    )?;
    run.write_config(args)?;
    write_rows(&run, &rows)?;
    let sheet = run.path().join("reconstructions.png");
    reconstruction_sheet(&sheet, args.method, setting, &truth, &rows, plan.image_size)?;
    print_rows(&rows);
    println!("wrote {}", run.path().display());
    Ok(run.path().to_path_buf())
}

/// `reconstructions/<name>.json` (vector, action, signal, scores) and the reconstructed
/// images as `<name>.rgb.png` (8-bit) and `<name>.depth.png` (16-bit), after the scoring's
/// normalisation.
fn write_reconstructions(
    run: &std::path::Path,
    samples: &UserSamples,
    rows: &[privrl_attacks::InversionRow],
) -> Result<()> {
    let dir = run.join("reconstructions");
    std::fs::create_dir_all(&dir)?;
    for row in rows {
        let name = &samples.names[row.sample];
        let rec = &row.reconstructed;
        if let (Some(values), Some(size)) = (&rec.rgb, samples.rgb_size) {
            write_rgb_png(&dir.join(format!("{name}.rgb.png")), values, size)?;
        }
        if let (Some(values), Some(size)) = (&rec.depth, samples.depth_size) {
            write_depth_png(&dir.join(format!("{name}.depth.png")), values, size)?;
        }
        crate::run::write_json(
            &dir.join(format!("{name}.json")),
            &serde_json::json!({
                "vector": rec.vector,
                "scores": row,
            }),
        )?;
    }
    Ok(())
}

fn print_rows(rows: &[privrl_attacks::InversionRow]) {
    for row in rows {
        println!(
            "sample {}{}: action {}, RGB {}, depth {}, IoU {}, ε(Q) {}, |Δr| {}, {:.1} s",
            row.sample,
            if row.failed {
                " (FAILED: the attack diverged)"
            } else {
                ""
            },
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_outside_the_batch_attack_are_refused() {
        let args = |method, batch_size| AttackArgs {
            method,
            setting: SettingArg::S2,
            model: ModelArg::Multimodal,
            samples_dir: None,
            gradients: None,
            weights: None,
            actions: 7,
            samples: 2,
            res: 8,
            victim: VictimWidth::Paper,
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
}
