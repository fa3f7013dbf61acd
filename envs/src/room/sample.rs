//! A deterministic data set of observations over every room type and layout, for the
//! gradient-inversion attacks.

use std::f64::consts::TAU;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::{
    generated, random_position, DetectionConfidence, Pose, RoomConfig, RoomType, LAYOUTS_PER_TYPE,
};
use crate::{EnvError, MultimodalObs};

/// One observation collected for the attack suites.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoomSample {
    /// Room type of the layout.
    pub room_type: RoomType,
    /// Layout index (0–29).
    pub layout_index: usize,
    /// Where the agent stood.
    pub pose: Pose,
    /// What it observed.
    pub obs: MultimodalObs,
    /// The reward for that observation (`detection.confidence`).
    pub reward: f64,
    /// The reward's factors.
    pub detection: DetectionConfidence,
}

/// Collects `n` observations deterministically from `seed`, rendered with `config`'s setting,
/// image size and camera.
///
/// Layouts cycle so that every type and layout appears: sample `i` uses room type
/// `RoomType::ALL[i % 4]` and layout `(i / 4) % 30` (when the config fixes the type: layout
/// `i % 30`; a fixed type or index in the config is always kept), so `n = 240` covers all 120
/// layouts twice, like the paper's 240 pre-collected samples. The position is a random free
/// one; the heading points at the target (± half the field of view) for half of the samples and
/// is uniform for the others, so that most samples see the target but not all.
pub fn sample_observations(
    config: &RoomConfig,
    n: usize,
    seed: u64,
) -> Result<Vec<RoomSample>, EnvError> {
    let mut env = config.clone().build()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let half_fov = 0.5 * config.field_of_view_degrees.to_radians();
    (0..n)
        .map(|i| {
            let room_type = config
                .room_type
                .unwrap_or(RoomType::ALL[i % RoomType::ALL.len()]);
            let layout_index = config
                .layout_index
                .unwrap_or(if config.room_type.is_some() {
                    i % LAYOUTS_PER_TYPE
                } else {
                    (i / RoomType::ALL.len()) % LAYOUTS_PER_TYPE
                });
            let layout = generated(room_type, layout_index);
            let (x, y) = random_position(&layout, &mut rng);
            let aim = rng.random_bool(0.5);
            let heading = match layout.target().filter(|_| aim) {
                Some(target) => {
                    let [tx, ty, _] = target.center();
                    (f64::from(ty) - y).atan2(f64::from(tx) - x)
                        + rng.random_range(-half_fov..half_fov)
                }
                None => rng.random_range(0.0..TAU),
            };
            let state = [x, y, heading, room_type.index() as f64, layout_index as f64];
            let obs = env.set_state_multimodal(&state)?;
            let detection = env.detection();
            Ok(RoomSample {
                room_type,
                layout_index,
                pose: env.pose(),
                obs,
                reward: detection.confidence,
                detection,
            })
        })
        .collect()
}
