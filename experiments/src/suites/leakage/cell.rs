//! One cell of the suite: an attack (QGI or RGI) against a victim whose gradients pass through
//! a defence ([`LeakageJob`]), its run directory's name, its mean scores and its result.

use anyhow::Result;
use burn::tensor::backend::Backend;
use privrl_attacks::{
    evaluate_defended_batch_inversion, ImageNormalisation, InversionRow, Sample, Victim,
};
use privrl_envs::room::RoomSetting;
use privrl_privacy::{GradientMechanismConfig, MechanismRng, RandomnessSource};
use serde::Serialize;

use super::{IOU_THRESHOLD, SSIM_THRESHOLD};
use crate::backend::BackendTask;
use crate::suites::inversion::{victim_config, Method, VictimWidth, ENTROPY_WEIGHT};

/// Minibatch size of the victims' training (`--victim-train-steps`).
pub(super) const VICTIM_BATCH: usize = 16;
/// Adam learning rate of the victims' training.
pub(super) const VICTIM_LR: f64 = 1e-3;
/// Room samples the victims are trained on.
pub(super) const VICTIM_TRAINING_SAMPLES: usize = 64;

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
            &victim_config(RoomSetting::S1, self.image_size, VictimWidth::Wide),
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

/// Mean reconstruction quality of one cell. The image and box means are over the rows whose
/// attack did not fail ([`InversionRow::failed`]), so a failure never dilutes the leakage
/// that the other samples show (the conservative side for privacy); the failed rows are
/// counted in `failure_rate`. The action accuracy is over every row.
#[derive(Debug, Clone, Serialize)]
pub(super) struct CellScores {
    pub(super) rgb_psnr: f64,
    pub(super) rgb_ssim: f64,
    pub(super) depth_psnr: f64,
    pub(super) depth_ssim: f64,
    pub(super) iou: f64,
    pub(super) action_accuracy: f64,
    /// Fraction of the rows whose attack failed.
    pub(super) failure_rate: f64,
}

impl CellScores {
    pub(super) fn of(rows: &[InversionRow]) -> Self {
        let mean = |f: &dyn Fn(&InversionRow) -> Option<f64>| {
            let values: Vec<f64> = rows.iter().filter(|r| !r.failed).filter_map(f).collect();
            if values.is_empty() {
                f64::NAN
            } else {
                values.iter().sum::<f64>() / values.len() as f64
            }
        };
        let failed = rows.iter().filter(|r| r.failed).count();
        Self {
            failure_rate: failed as f64 / rows.len().max(1) as f64,
            rgb_psnr: mean(&|r| r.rgb.map(|s| s.psnr)),
            rgb_ssim: mean(&|r| r.rgb.map(|s| s.ssim)),
            depth_psnr: mean(&|r| r.depth.map(|s| s.psnr)),
            depth_ssim: mean(&|r| r.depth.map(|s| s.ssim)),
            iou: mean(&|r| r.vector_iou),
            action_accuracy: rows.iter().filter(|r| r.action_correct).count() as f64
                / rows.len().max(1) as f64,
        }
    }

    /// Neither image reaches [`SSIM_THRESHOLD`] and the box misses [`IOU_THRESHOLD`].
    pub(super) fn unrecognisable(&self) -> bool {
        let below = |v: f64| v.is_nan() || v < SSIM_THRESHOLD;
        let below_iou = |v: f64| v.is_nan() || v < IOU_THRESHOLD;
        below(self.rgb_ssim) && below(self.depth_ssim) && below_iou(self.iou)
    }
}

/// One finished cell.
pub(super) struct CellResult {
    pub(super) method: Method,
    pub(super) defence: GradientMechanismConfig,
    pub(super) epsilon: f64,
    pub(super) scores: CellScores,
    pub(super) rows: Vec<InversionRow>,
}

/// `qgi-none`, `rgi-dp-sgd-sigma0.1`, `qgi-laplace-eps10`: one run directory per cell.
pub(super) fn cell_name(method: Method, defence: &GradientMechanismConfig) -> String {
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

/// The cells of one attack and defence family, by increasing ε.
pub(super) fn cells_of<'a>(
    cells: &'a [CellResult],
    method: Method,
    family: &str,
) -> Vec<&'a CellResult> {
    let mut of_family: Vec<&CellResult> = cells
        .iter()
        .filter(|c| c.method == method && c.defence.kind().name() == family)
        .collect();
    of_family.sort_by(|a, b| a.epsilon.total_cmp(&b.epsilon));
    of_family
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::dispatch;
    use crate::suites::inversion::{room_samples, InversionJob, InversionPlan};
    use crate::suites::leakage::{tests::tiny_args, METHODS};
    use privrl_envs::room::NUM_ACTIONS;
    use privrl_privacy::Epsilon;

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
        let (samples, _) = room_samples(
            RoomSetting::S1,
            plan.image_size,
            plan.samples,
            plan.seed,
            crate::suites::inversion::RoomSelection::First,
        )
        .unwrap();
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
                        rooms: crate::suites::inversion::RoomSelection::First,
                    },
                    method,
                    setting: RoomSetting::S1,
                    samples: samples.clone(),
                    batch_size: 1,
                    attack_batch: 1,
                    width: VictimWidth::Wide,
                    normalisation: ImageNormalisation::Clamp,
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
    fn a_failed_attack_is_counted_not_averaged_in() {
        use crate::suites::inversion::tests::row;
        let mut failed = row(1, 0.0, true);
        failed.action_correct = false;
        let rows = [row(0, 30.0, false), failed, row(2, 40.0, false)];
        let scores = CellScores::of(&rows);
        assert!((scores.failure_rate - 1.0 / 3.0).abs() < 1e-12);
        // The other rows' mean, undiluted by the failure: the conservative side for privacy.
        assert_eq!(scores.depth_psnr, 35.0);
        assert_eq!(scores.depth_ssim, 0.35);
        assert_eq!(scores.iou, 0.5);
        // The action is scored on every row.
        assert!((scores.action_accuracy - 2.0 / 3.0).abs() < 1e-12);
        assert!(!scores.unrecognisable());
        // Every attack failed: nothing was reconstructed, and the count says why.
        let all_failed = CellScores::of(&[row(0, 0.0, true), row(1, 0.0, true)]);
        assert_eq!(all_failed.failure_rate, 1.0);
        assert!(all_failed.depth_ssim.is_nan() && all_failed.unrecognisable());
    }

    #[test]
    fn infinite_noise_leaves_the_action_at_chance() {
        let args = tiny_args();
        let plan = args.plan().unwrap();
        let samples = 70;
        let (samples, _) = room_samples(
            RoomSetting::S1,
            plan.image_size,
            samples,
            plan.seed,
            crate::suites::inversion::RoomSelection::First,
        )
        .unwrap();
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
}
