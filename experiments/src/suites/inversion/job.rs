//! One attack job: the room samples it attacks, the freshly initialised victim network and the
//! attack on every sample's shared gradient.

use anyhow::Result;
use burn::tensor::backend::Backend;
use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};
use privrl_attacks::{
    evaluate_defended_batch_inversion, ImageNormalisation, InversionRow, Sample, Victim,
};
use privrl_envs::room::{sample_observations, RoomConfig, RoomSetting};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::method::Method;
use super::plan::{InversionPlan, VictimWidth};
use crate::backend::BackendTask;

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
pub(crate) fn victim_config(
    setting: RoomSetting,
    image_size: usize,
    width: VictimWidth,
) -> MultimodalNetConfig {
    let encoder =
        |channels| ConvEncoderConfig::new(channels, image_size).with_channels(width.channels());
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
    /// The victim's encoder width.
    pub(crate) width: VictimWidth,
    /// How reconstructions are mapped to `[0, 1]` before scoring.
    pub(crate) normalisation: ImageNormalisation,
}

impl BackendTask for InversionJob {
    type Output = Vec<InversionRow>;

    fn run<B: Backend>(self, device: B::Device) -> Result<Vec<InversionRow>> {
        let kind = self.method.victim_kind(self.plan.entropy_weight);
        let config =
            self.method
                .attack_config(self.plan.iterations, self.plan.seed, self.plan.tv_weight);
        let victim = Victim::<B>::from_seed(
            &victim_config(self.setting, self.plan.image_size, self.width),
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
            self.normalisation,
            &privrl_privacy::GradientMechanismConfig::None,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(0),
            self.batch_size,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::dispatch;
    use crate::suites::inversion::tests::tiny_plan;

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
                width: VictimWidth::Paper,
                normalisation: ImageNormalisation::Clamp,
            },
        )
        .unwrap();
        // A batch of 2, then the remaining sample alone.
        assert_eq!(rows.iter().map(|r| r.sample).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(rows
            .iter()
            .all(|r| r.depth.is_some() && r.vector_iou.is_some()));
    }
}
