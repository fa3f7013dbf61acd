//! One attack job: the room samples it attacks, the freshly initialised victim network and the
//! attack on every sample's shared gradient.

use anyhow::Result;
use burn::tensor::backend::Backend;
use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};
use privrl_attacks::{
    evaluate_defended_batch_inversion, evaluate_defended_inversion_batched, ImageNormalisation,
    InversionRow, Sample, Victim,
};
use privrl_envs::room::{sample_observations, RoomConfig, RoomSetting, RoomType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::method::Method;
use super::plan::{InversionPlan, RoomSelection, VictimWidth};
use crate::backend::BackendTask;

/// The samples of one setting: room observations in which the target is visible (the paper's
/// bounding box comes from an upstream detector, so its samples contain the target), chosen
/// among `8 · count` sampled views by `rooms` (balanced: up to `64 · count` views when a room
/// type runs short), with a seeded action and the detection reward as
/// supervision signal. For DQN the signal stands for the target Q-value of a one-step target
/// (γ = 0); the paper's pre-collected transitions are not available. Returns the samples and
/// their room types.
pub(crate) fn room_samples(
    setting: RoomSetting,
    image_size: usize,
    count: usize,
    seed: u64,
    rooms: RoomSelection,
) -> Result<(Vec<Sample>, Vec<String>)> {
    let config = RoomConfig::s1()
        .with_setting(setting)
        .with_image_size(image_size);
    // Views are drawn in sequence from one seeded generator, so a larger pool begins with the
    // smaller one: growing it when a room type runs short changes no view already chosen.
    let mut pool = 8 * count;
    let chosen: Vec<_> = loop {
        let showing_target = sample_observations(&config, pool, seed)?
            .into_iter()
            .filter(|r| r.reward > 0.0 && r.obs.vector.iter().any(|&v| v != 0.0));
        let chosen: Vec<_> = match rooms {
            RoomSelection::First => showing_target.take(count).collect(),
            RoomSelection::Balanced => {
                round_robin_by_type(showing_target.collect(), count, |r| r.room_type)
            }
        };
        if chosen.len() == count || rooms == RoomSelection::First || pool >= 64 * count {
            break chosen;
        }
        pool *= 2;
    };
    anyhow::ensure!(
        chosen.len() == count,
        "only {} of {count} sampled views show the target{}",
        chosen.len(),
        match rooms {
            RoomSelection::Balanced => " with each room type as often as --rooms balanced needs",
            RoomSelection::First => "",
        },
    );
    let rooms = chosen;
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

impl InversionPlan {
    /// The samples of `setting` this plan attacks ([`room_samples`] at its size, count, seed
    /// and room selection), with their room types.
    pub(crate) fn room_samples(&self, setting: RoomSetting) -> Result<(Vec<Sample>, Vec<String>)> {
        room_samples(
            setting,
            self.image_size,
            self.samples,
            self.seed,
            self.rooms,
        )
    }
}

/// `count` of `views` taken in turn from each room type ([`RoomType::ALL`]'s order), each
/// type's views in their sampling order, so that the types' counts differ by at most one.
/// Fewer than `count` when a type runs out before its turn.
fn round_robin_by_type<T>(views: Vec<T>, count: usize, type_of: impl Fn(&T) -> RoomType) -> Vec<T> {
    let mut by_type: Vec<std::collections::VecDeque<T>> =
        RoomType::ALL.iter().map(|_| Default::default()).collect();
    for view in views {
        let t = type_of(&view);
        if let Some(i) = RoomType::ALL.iter().position(|&u| u == t) {
            by_type[i].push_back(view);
        }
    }
    let mut chosen = Vec::with_capacity(count);
    for turn in 0..count {
        match by_type[turn % RoomType::ALL.len()].pop_front() {
            Some(view) => chosen.push(view),
            None => break,
        }
    }
    chosen
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
    /// With single-sample gradients, the samples attacked in one optimisation
    /// (`--attack-batch`; 1: one at a time).
    pub(crate) attack_batch: usize,
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
        let defence = privrl_privacy::GradientMechanismConfig::None;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        Ok(match self.batch_size {
            1 => evaluate_defended_inversion_batched(
                &victim,
                &self.samples,
                &config,
                self.normalisation,
                &defence,
                &mut rng,
                self.attack_batch,
            )?,
            batch_size => evaluate_defended_batch_inversion(
                &victim,
                &self.samples,
                &config,
                self.normalisation,
                &defence,
                &mut rng,
                batch_size,
            )?,
        })
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
        let (truth, _) = plan.room_samples(RoomSetting::S2).unwrap();
        let rows = dispatch(
            plan.backend,
            InversionJob {
                plan,
                method: Method::Qgi,
                setting: RoomSetting::S2,
                samples: truth,
                batch_size: 2,
                attack_batch: 1,
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

    #[test]
    fn balanced_rooms_take_each_type_in_turn_and_keep_each_types_order() {
        use RoomType::*;
        // Bathrooms are scarce here, as among the rooms' views that show the target.
        let views = [
            (Kitchen, 0),
            (Kitchen, 1),
            (LivingRoom, 2),
            (Bedroom, 3),
            (Kitchen, 4),
            (Bathroom, 5),
            (Bedroom, 6),
            (LivingRoom, 7),
            (Bathroom, 8),
        ];
        let chosen = round_robin_by_type(views.to_vec(), 8, |v| v.0);
        let ids: Vec<usize> = chosen.iter().map(|v| v.1).collect();
        // ALL's order is bathroom, bedroom, kitchen, living room.
        assert_eq!(RoomType::ALL, [Bathroom, Bedroom, Kitchen, LivingRoom]);
        assert_eq!(ids, [5, 3, 0, 2, 8, 6, 1, 7]);
        // A type that runs out stops the round: fewer than asked, which room_samples refuses.
        assert_eq!(round_robin_by_type(views.to_vec(), 9, |v| v.0).len(), 8);
        // The suite's samples: 8 at 8 px, two of each type.
        let (samples, types) =
            room_samples(RoomSetting::S2, 8, 8, 0, RoomSelection::Balanced).unwrap();
        assert_eq!(samples.len(), 8);
        for t in RoomType::ALL {
            assert_eq!(types.iter().filter(|n| **n == t.to_string()).count(), 2);
        }
    }
}
