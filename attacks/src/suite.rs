//! Per-sample evaluation of an attack: the rows behind Table I (PSNR and SSIM of the images)
//! and Table II (IoU, ε(Q̂), ε(Q)), plus action accuracy and the reward's absolute error.
//! The lead's `cargo xtask suite inversion` aggregates these rows into the tables.

use std::time::Instant;

use burn::tensor::backend::Backend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::attack::{attack_batch, attack_each, AttackConfig, Reconstruction};
use crate::defence::Defence;
use crate::error::AttackError;
use crate::metrics::{
    absolute_error, bbox_iou, percentage_error, score_rgb, score_single_channel,
    ImageNormalisation, ImageScores,
};
use crate::model::InvertibleModel;
use crate::victim::{Outer, Sample, Victim, VictimKind};
use privrl_agents::autodiff;
use privrl_privacy::GradientMechanismConfig;

/// The scores of one attacked sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InversionRow {
    /// Index of the sample in the evaluated list.
    pub sample: usize,
    /// PSNR/SSIM of the RGB image (luma), if the state has one.
    pub rgb: Option<ImageScores>,
    /// PSNR/SSIM of the depth image, if the state has one.
    pub depth: Option<ImageScores>,
    /// IoU of the bounding-box vector (`None` unless the vector has 4 entries).
    pub vector_iou: Option<f64>,
    /// Whether the action was recovered.
    pub action_correct: bool,
    /// ε(Q̂) in % (DQN).
    pub predicted_q_error_pct: Option<f64>,
    /// ε(Q) in % (DQN).
    pub target_q_error_pct: Option<f64>,
    /// |r_rec − r| (REINFORCE).
    pub reward_abs_error: Option<f64>,
    /// The attack's last recorded loss.
    pub final_loss: Option<f64>,
    /// Whether the attack failed on this sample: its optimisation diverged, leaving a
    /// non-finite loss, reconstruction or recovered signal, or a score came out NaN. A failed
    /// row still counts: tables report the failure rate beside means over the other rows.
    #[serde(default)]
    pub failed: bool,
    /// Wall-clock time of the attack per sample: its batch's attack time inside the attack's
    /// autodiff section (without waiting for other threads' sections) divided by the
    /// samples of the batch; with single-sample gradients, the sample's own attack.
    pub attack_ms: f64,
    /// The reconstructed state as it was scored (images normalised), for figures; not
    /// serialised.
    #[serde(skip)]
    pub reconstructed: ReconstructedState,
}

/// A reconstructed state after [`ImageNormalisation`]: what the scores compare with the truth.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReconstructedState {
    /// RGB image, `3 × H × W`, in `[0, 1]`.
    pub rgb: Option<Vec<f32>>,
    /// Depth image, `1 × H × W`, in `[0, 1]`.
    pub depth: Option<Vec<f32>>,
    /// Vector state.
    pub vector: Vec<f32>,
}

/// Attacks the single-sample gradient of every sample and scores each reconstruction.
pub fn evaluate_inversion<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    samples: &[Sample],
    config: &AttackConfig,
    normalisation: ImageNormalisation,
) -> Result<Vec<InversionRow>, AttackError> {
    // `None` draws nothing from the generator, so its seed does not matter.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    evaluate_defended_inversion(
        victim,
        samples,
        config,
        normalisation,
        &GradientMechanismConfig::None,
        &mut rng,
    )
}

/// [`evaluate_inversion`] with every single-sample gradient passed through `defence` before
/// the attack sees it; with [`GradientMechanismConfig::None`] the two are the same computation.
pub fn evaluate_defended_inversion<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    samples: &[Sample],
    config: &AttackConfig,
    normalisation: ImageNormalisation,
    defence: &GradientMechanismConfig,
    rng: &mut impl Rng,
) -> Result<Vec<InversionRow>, AttackError> {
    evaluate_defended_batch_inversion(victim, samples, config, normalisation, defence, rng, 1)
}

/// Attacks the gradient of each consecutive batch of `batch_size` samples (the last batch may
/// be smaller), passed through `defence`, with [`attack_batch`], and scores every sample
/// against the reconstruction it matches best.
///
/// A batch gradient does not say which reconstruction is which sample, so, as Yin et al.
/// (2021) evaluate batch recovery, the rows pair samples and reconstructions by the
/// permutation that maximises the summed RGB SSIM + depth SSIM + bounding-box IoU.
///
/// The attacker knows the defence: under a noisy one it drops the magnitude term of the
/// matching loss ([`Defence::adapt_attack`]).
pub fn evaluate_defended_batch_inversion<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    samples: &[Sample],
    config: &AttackConfig,
    normalisation: ImageNormalisation,
    defence: &GradientMechanismConfig,
    rng: &mut impl Rng,
    batch_size: usize,
) -> Result<Vec<InversionRow>, AttackError> {
    evaluate_timed(
        victim,
        samples,
        config,
        normalisation,
        defence,
        rng,
        Batching::Gradient(batch_size),
        &mut Instant::now,
    )
}

/// [`evaluate_defended_inversion`] with the single-sample gradients of each consecutive
/// `attack_batch` samples (the last group may be smaller) attacked in one optimisation by
/// [`attack_each`]: the same rows to float rounding (each reconstruction depends on its own
/// gradient only), in a fraction of the time. `attack_batch` 1 is
/// [`evaluate_defended_inversion`].
pub fn evaluate_defended_inversion_batched<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    samples: &[Sample],
    config: &AttackConfig,
    normalisation: ImageNormalisation,
    defence: &GradientMechanismConfig,
    rng: &mut impl Rng,
    attack_batch: usize,
) -> Result<Vec<InversionRow>, AttackError> {
    evaluate_timed(
        victim,
        samples,
        config,
        normalisation,
        defence,
        rng,
        Batching::Optimisation(attack_batch),
        &mut Instant::now,
    )
}

/// How [`evaluate_timed`] groups the samples.
#[derive(Debug, Clone, Copy)]
enum Batching {
    /// This many samples behind each shared gradient ([`attack_batch`]).
    Gradient(usize),
    /// Single-sample gradients, this many attacked in one optimisation ([`attack_each`]).
    Optimisation(usize),
}

/// [`evaluate_defended_batch_inversion`] reading the time from `clock`.
///
/// A row's `attack_ms` is its share of its batch's attack: the time the attack ran inside its
/// autodiff section, divided by the samples of the batch. The clock is read inside the
/// section, so time spent waiting for another thread's section (parallel suite jobs) is not
/// counted, and dividing by the batch size makes rows of batched and single-sample gradients
/// comparable per sample.
#[allow(clippy::too_many_arguments)]
fn evaluate_timed<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    samples: &[Sample],
    config: &AttackConfig,
    normalisation: ImageNormalisation,
    defence: &GradientMechanismConfig,
    rng: &mut impl Rng,
    batching: Batching,
    clock: &mut (dyn FnMut() -> Instant + Send),
) -> Result<Vec<InversionRow>, AttackError> {
    let config = defence.adapt_attack(config.clone());
    let mut rows = Vec::with_capacity(samples.len());
    let batch_size = match batching {
        Batching::Gradient(batch_size) => batch_size,
        Batching::Optimisation(attack_batch) => {
            for (group_index, group) in samples.chunks(attack_batch.max(1)).enumerate() {
                let records = group
                    .iter()
                    .map(|sample| {
                        defence.shared_gradient(victim, std::slice::from_ref(sample), rng)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let (reconstructions, group_ms) = autodiff::exclusive(|| {
                    let start = clock();
                    let reconstructions = attack_each(victim, &records, &config);
                    let elapsed = clock().saturating_duration_since(start);
                    (reconstructions, elapsed.as_secs_f64() * 1e3)
                });
                let attack_ms = group_ms / group.len() as f64;
                let first = group_index * attack_batch.max(1);
                for (i, (sample, rec)) in group.iter().zip(&reconstructions?).enumerate() {
                    rows.push(score_reconstruction(
                        victim,
                        sample,
                        rec,
                        normalisation,
                        first + i,
                        attack_ms,
                    )?);
                }
            }
            return Ok(rows);
        }
    };
    for (batch_index, batch) in samples.chunks(batch_size.max(1)).enumerate() {
        let record = defence.shared_gradient(victim, batch, rng)?;
        let (reconstructions, batch_ms) = autodiff::exclusive(|| {
            let start = clock();
            let reconstructions = attack_batch(victim, &record, &config, batch.len());
            let elapsed = clock().saturating_duration_since(start);
            (reconstructions, elapsed.as_secs_f64() * 1e3)
        });
        let reconstructions = reconstructions?;
        let attack_ms = batch_ms / batch.len() as f64;
        let first = batch_index * batch_size.max(1);
        let scored: Vec<Vec<InversionRow>> = batch
            .iter()
            .enumerate()
            .map(|(i, sample)| {
                reconstructions
                    .iter()
                    .map(|rec| {
                        score_reconstruction(
                            victim,
                            sample,
                            rec,
                            normalisation,
                            first + i,
                            attack_ms,
                        )
                    })
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        let similarity: Vec<Vec<f64>> = scored
            .iter()
            .map(|row| row.iter().map(match_score).collect())
            .collect();
        for (i, j) in best_matching(&similarity).into_iter().enumerate() {
            rows.push(scored[i][j].clone());
        }
    }
    Ok(rows)
}

/// How well a reconstruction matches a sample: RGB SSIM + depth SSIM + bounding-box IoU.
fn match_score(row: &InversionRow) -> f64 {
    row.rgb.map_or(0.0, |s| s.ssim)
        + row.depth.map_or(0.0, |s| s.ssim)
        + row.vector_iou.unwrap_or(0.0)
}

/// The permutation (sample i → reconstruction `p[i]`) that maximises the summed similarity,
/// by exhaustive search (batches are at most [`crate::attack::MAX_BATCH`]).
pub fn best_matching(similarity: &[Vec<f64>]) -> Vec<usize> {
    fn search(
        similarity: &[Vec<f64>],
        used: &mut Vec<bool>,
        current: &mut Vec<usize>,
        score: f64,
        best: &mut (f64, Vec<usize>),
    ) {
        let i = current.len();
        if i == similarity.len() {
            if score > best.0 {
                *best = (score, current.clone());
            }
            return;
        }
        for j in 0..similarity.len() {
            if !used[j] {
                used[j] = true;
                current.push(j);
                search(similarity, used, current, score + similarity[i][j], best);
                current.pop();
                used[j] = false;
            }
        }
    }
    let mut best = (f64::NEG_INFINITY, (0..similarity.len()).collect());
    search(
        similarity,
        &mut vec![false; similarity.len()],
        &mut Vec::new(),
        0.0,
        &mut best,
    );
    best.1
}

/// Scores one reconstruction against its sample.
pub fn score_reconstruction<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    sample: &Sample,
    reconstruction: &Reconstruction,
    normalisation: ImageNormalisation,
    index: usize,
    attack_ms: f64,
) -> Result<InversionRow, AttackError> {
    let parts = victim.observation_parts();
    let (rgb, depth) = normalisation.apply(
        reconstruction.rgb.as_deref(),
        reconstruction.depth.as_deref(),
    );
    let reconstructed = ReconstructedState {
        rgb,
        depth,
        vector: reconstruction.vector.clone(),
    };
    let rgb = match (&sample.rgb, &reconstructed.rgb, parts.rgb) {
        (Some(truth), Some(rec), Some(shape)) => Some(score_rgb(truth, rec, shape.size)?),
        _ => None,
    };
    let depth = match (&sample.depth, &reconstructed.depth, parts.depth) {
        (Some(truth), Some(rec), Some(shape)) => {
            Some(score_single_channel(truth, rec, shape.size)?)
        }
        _ => None,
    };
    let vector_iou = (sample.vector.len() == 4)
        .then(|| bbox_iou(&sample.vector, &reconstruction.vector))
        .transpose()?;
    let final_loss = reconstruction.loss_history.last().map(|r| r.loss);
    let (mut predicted_q_error_pct, mut target_q_error_pct, mut reward_abs_error) =
        (None, None, None);
    match victim.kind() {
        VictimKind::Dqn => {
            let predicted = f64::from(victim.output(sample)?[sample.action]);
            predicted_q_error_pct = reconstruction
                .predicted_q
                .map(|q| percentage_error(q, predicted));
            target_q_error_pct = Some(percentage_error(reconstruction.signal, sample.signal));
        }
        VictimKind::Reinforce { .. } => {
            reward_abs_error = Some(absolute_error(reconstruction.signal, sample.signal));
        }
    }
    // PSNR is +∞ for a perfect image, so only NaN marks a failed score.
    let scores = [rgb, depth]
        .into_iter()
        .flatten()
        .flat_map(|s| [s.psnr, s.ssim])
        .chain(vector_iou)
        .chain(predicted_q_error_pct)
        .chain(target_q_error_pct)
        .chain(reward_abs_error);
    let failed = !reconstruction_is_finite(reconstruction)
        || final_loss.is_some_and(|l| !l.is_finite())
        || scores.into_iter().any(f64::is_nan);
    Ok(InversionRow {
        sample: index,
        rgb,
        depth,
        vector_iou,
        action_correct: reconstruction.action == sample.action,
        predicted_q_error_pct,
        target_q_error_pct,
        reward_abs_error,
        final_loss,
        failed,
        attack_ms,
        reconstructed,
    })
}

/// Whether every reconstructed value is finite: a diverged optimisation leaves NaN or ±∞ in
/// the raw reconstruction, which clamping before scoring would partly hide (±∞ clamps to a
/// valid pixel).
fn reconstruction_is_finite(reconstruction: &Reconstruction) -> bool {
    let images = [&reconstruction.rgb, &reconstruction.depth]
        .into_iter()
        .flatten()
        .flatten();
    images.chain(&reconstruction.vector).all(|v| v.is_finite())
        && reconstruction.signal.is_finite()
        && reconstruction.predicted_q.is_none_or(f64::is_finite)
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use privrl_agents::MultimodalNetConfig;

    use super::*;
    use crate::victim::LinearPartInput;

    fn victim() -> Victim<NdArray> {
        let network = MultimodalNetConfig::new(4, 3).with_head_hidden(vec![8]);
        Victim::from_seed(&network, VictimKind::Dqn, 1, &Default::default()).unwrap()
    }

    fn sample() -> Sample {
        Sample {
            rgb: None,
            depth: None,
            vector: vec![-0.5, -0.2, 0.3, 0.6],
            action: 1,
            signal: 1.5,
        }
    }

    /// The truth itself, as an attack that succeeded exactly would return it.
    fn exact(sample: &Sample) -> Reconstruction {
        Reconstruction {
            rgb: None,
            depth: None,
            vector: sample.vector.clone(),
            action: sample.action,
            signal: sample.signal,
            predicted_q: Some(0.5),
            probabilities: None,
            linear_part: LinearPartInput {
                rgb_features: None,
                depth_features: None,
                vector: sample.vector.clone(),
            },
            loss_history: Vec::new(),
        }
    }

    #[test]
    fn a_diverged_reconstruction_is_marked_failed_and_an_exact_one_is_not() {
        let (victim, sample) = (victim(), sample());
        let score = |rec: &Reconstruction| {
            score_reconstruction(&victim, &sample, rec, ImageNormalisation::Clamp, 0, 0.0).unwrap()
        };
        let ok = score(&exact(&sample));
        assert!(!ok.failed, "{ok:?}");
        assert_eq!(ok.vector_iou, Some(1.0));

        let mut nan_vector = exact(&sample);
        nan_vector.vector[2] = f32::NAN;
        let mut infinite_signal = exact(&sample);
        infinite_signal.signal = f64::INFINITY;
        let mut nan_loss = exact(&sample);
        nan_loss.loss_history.push(crate::attack::LossRecord {
            stage: crate::attack::Stage::LinearPart,
            restart: 0,
            iteration: 3,
            loss: f64::NAN,
        });
        for (what, rec) in [
            ("NaN vector", nan_vector),
            ("infinite signal", infinite_signal),
            ("NaN loss", nan_loss),
        ] {
            assert!(score(&rec).failed, "{what}");
        }
    }

    #[test]
    fn each_row_times_its_own_share_of_its_batch() {
        let victim = victim();
        let mut samples: Vec<Sample> = (0..3).map(|_| sample()).collect();
        // Distinct actions in the batch of two, as the batch attack reads them from ∇b_last.
        samples[1].action = 2;
        let mut config = AttackConfig::qgi();
        config.iterations_per_stage = 2;
        // A clock at k² ms on its k-th reading: the first batch's attack reads 0 and 1 ms, the
        // second's 4 and 9 ms.
        let base = Instant::now();
        let mut readings = 0u64;
        let mut clock = move || {
            let t = base + std::time::Duration::from_millis(readings * readings);
            readings += 1;
            t
        };
        let rows = evaluate_timed(
            &victim,
            &samples,
            &config,
            ImageNormalisation::Clamp,
            &GradientMechanismConfig::None,
            &mut ChaCha8Rng::seed_from_u64(0),
            Batching::Gradient(2),
            &mut clock,
        )
        .unwrap();
        let times: Vec<f64> = rows.iter().map(|r| r.attack_ms).collect();
        // 1 ms shared by two samples, then 5 ms for the last sample alone.
        assert_eq!(times, [0.5, 0.5, 5.0]);
    }

    #[test]
    fn batched_optimisations_score_each_sample_as_its_own_attack_does() {
        let victim = victim();
        let mut samples: Vec<Sample> = (0..3).map(|_| sample()).collect();
        samples[1].vector = vec![0.1, 0.4, -0.3, 0.2];
        samples[2].action = 0;
        let config = AttackConfig::qgi().with_iterations_per_stage(20);
        let base = Instant::now();
        let mut readings = 0u64;
        let mut clock = move || {
            let t = base + std::time::Duration::from_millis(readings * readings);
            readings += 1;
            t
        };
        let rows = evaluate_timed(
            &victim,
            &samples,
            &config,
            ImageNormalisation::Clamp,
            &GradientMechanismConfig::None,
            &mut ChaCha8Rng::seed_from_u64(0),
            Batching::Optimisation(2),
            &mut clock,
        )
        .unwrap();
        // Two samples in the first optimisation, the third alone; each row is its sample's.
        let times: Vec<f64> = rows.iter().map(|r| r.attack_ms).collect();
        assert_eq!(times, [0.5, 0.5, 5.0]);
        let alone =
            evaluate_inversion(&victim, &samples, &config, ImageNormalisation::Clamp).unwrap();
        for (got, want) in rows.iter().zip(&alone) {
            assert_eq!(got.sample, want.sample);
            assert_eq!(got.action_correct, want.action_correct);
            let (a, b) = (got.vector_iou.unwrap(), want.vector_iou.unwrap());
            assert!((a - b).abs() < 1e-4, "IoU {a} against {b} alone");
            let (a, b) = (got.final_loss.unwrap(), want.final_loss.unwrap());
            assert!(
                (a - b).abs() < 1e-4 * b.abs().max(1e-3),
                "loss {a} against {b}"
            );
        }
        assert_ne!(rows[0].vector_iou, rows[1].vector_iou);
    }
}
