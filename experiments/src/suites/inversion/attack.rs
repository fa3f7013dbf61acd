//! `cargo xtask attack`: one attack on one setting, outside the suite.

use anyhow::Result;
use clap::{Args, ValueEnum};
use privrl_envs::room::RoomSetting;
use serde::Serialize;

use super::{
    paper_normalisation, reconstruction_sheet, room_samples, write_rows, InversionJob,
    InversionPlan, Method, VictimWidth,
};
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
            width: args.victim,
            normalisation: paper_normalisation(setting),
        },
    )?;
    let run = RunDir::create(
        "attack",
        RunName::new(args.method.slug())
            .part(format!("{setting:?}"))
            .part(match args.victim {
                VictimWidth::Paper => "",
                VictimWidth::Wide => "wide",
            })
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
    println!("wrote {}", run.path().display());
    Ok(run.path().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_outside_the_batch_attack_are_refused() {
        let args = |method, batch_size| AttackArgs {
            method,
            setting: SettingArg::S2,
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
