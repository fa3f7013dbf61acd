//! The active-perception room task of Li, Ding & Zhao, "Your Room is not Private" (Sections III
//! and V), as a pure-Rust stand-in for AI2THOR with the same interface and real image
//! structure.
//!
//! - **Rooms**: 4 [`RoomType`]s × 30 layouts = 120 seeded [`Layout`]s: walls, floor and ceiling
//!   with textures typical of the type (tiles in bathrooms and kitchens, wood or carpet in
//!   bedrooms, wood in living rooms), furniture as axis-aligned boxes, windows, doors, pictures,
//!   and one target object (a small box of a saturated colour, usually on a table, counter or
//!   nightstand).
//! - **Observation** ([`Obs::Multimodal`]): an RGB image (`3 × H × W`, values in `[0, 1]`,
//!   channel-major) in setting S1 only; a depth image (`1 × H × W`): the distance along the
//!   optical axis in metres divided by [`RoomConfig::max_depth_m`] (default 10 m) and clipped
//!   to `[0, 1]`; and the vector state: the target's visible bounding box
//!   `(x_min, y_min, x_max, y_max)` in `[−1, 1]` (all zeros when it is not visible; see
//!   [`bbox_vector`]). Images are 150 × 150 as in the paper by default
//!   ([`RoomConfig::image_size`]). Flattened (as `step_into` writes it): RGB, depth, vector.
//! - **Actions** ([`RoomAction`], 7): move ahead / back / left / right by
//!   [`RoomConfig::move_step_m`] (0.25 m, AI2THOR's grid size), rotate left / right by
//!   [`RoomConfig::rotate_step_degrees`] (30°), stay. A move that would bring the agent's
//!   0.2 m disc into a wall or a solid box is refused (the agent stays put, as in AI2THOR).
//! - **Reward**: a detection-confidence proxy in `[0, 1]`, the product of the target's visible
//!   fraction, apparent size and centring ([`detection_confidence`] documents the formula).
//! - **Episodes** never terminate; they are truncated after
//!   [`RoomConfig::max_episode_steps`] (100). `reset(seed)` draws the layout (unless the config
//!   fixes it) and a free start pose from the seed.
//! - **Settings**: [`RoomSetting::S1`] (RGB + depth) and [`RoomSetting::S2`] (depth only),
//!   registered as `room-s1` and `room-s2`.
//!
//! [`sample_observations`] collects a deterministic data set of observations over all room
//! types for the gradient-inversion attacks.
//!
//! # Geometry and camera
//!
//! A room occupies `[0, width] × [0, length] × [0, height]` metres, `x` east, `y` north, `z` up;
//! furniture and the target are axis-aligned boxes ([`Object`]). The agent is a disc of radius
//! [`AGENT_RADIUS_M`] at `(x, y)` with heading `θ` (radians, anticlockwise from `+x`); its
//! camera is at height [`RoomConfig::camera_height_m`] and looks horizontally. The camera's
//! forward axis is `f = (cos θ, sin θ, 0)`, its right axis `r = (sin θ, −cos θ, 0)`, its up axis
//! `+z`, and its focal length in pixels `F = (W / 2) / tan(fov / 2)` (square pixels). Pixel
//! (row `i`, column `j`) looks along `d = f + ((j + 0.5 − W/2) / F) r + ((H/2 − i − 0.5) / F) z`,
//! so a point `p` with `q = p − camera` appears at column `W/2 + F (q·r)/(q·f)` and row
//! `H/2 − F q_z/(q·f)`. Because `d·f = 1`, the ray parameter of a hit is its depth along the
//! optical axis (planar depth, as AI2THOR reports), which the depth image stores.
//!
//! Rendering is a per-pixel ray cast against the room's planes and every box, with Lambert
//! shading from a point light under the ceiling, hard shadows, contact darkening in corners, and
//! procedural textures (plank seams and grain, tile grout, wallpaper stripes, book spines,
//! cabinet doors, window panes), so images have the structure real rooms have. Release builds
//! render setting S1 at roughly 1 500 frames/s at 64 × 64 and 300 at 150 × 150 on one core;
//! depth alone (S2) is over ten times faster.
//!
//! ```
//! use privrl_envs::room::{RoomAction, RoomConfig, RoomEnv, RoomSetting, RoomType};
//! use privrl_envs::{Env, EnvError, Obs};
//!
//! # fn main() -> Result<(), EnvError> {
//! let mut env = RoomConfig::s1()
//!     .with_image_size(32)
//!     .with_room_type(Some(RoomType::Kitchen))
//!     .build()?;
//! let Obs::Multimodal(obs) = env.reset(Some(0)) else { unreachable!() };
//! assert_eq!(obs.rgb.as_ref().map(|i| i.data.len()), Some(3 * 32 * 32));
//! assert_eq!(obs.vector.len(), 4);
//! let step = env.step(RoomAction::RotateLeft.index())?;
//! assert!((0.0..=1.0).contains(&step.reward));
//! # Ok(())
//! # }
//! ```

mod config;
mod layout;
mod render;
mod reward;
mod sample;

use std::f64::consts::TAU;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::env::{check_obs_len, EpisodeClock};
use crate::{Env, EnvError, Image, MultimodalObs, Obs, Space, Step, StepInfo};

pub use config::{RoomConfig, RoomSetting};
pub use layout::{
    Face, Layout, Material, Object, ObjectKind, Rgb, RoomType, Wall, AGENT_RADIUS_M,
    DEFAULT_CAMERA_HEIGHT_M, FREE_GRID_M, LAYOUTS_PER_TYPE, MIN_FREE_AREA_M2, MIN_VIEWPOINTS,
};
pub use render::TargetView;
pub use reward::{bbox_vector, detection_confidence, DetectionConfidence};
pub use sample::{sample_observations, RoomSample};

use render::{Camera, Renderer};

/// Number of actions.
pub const NUM_ACTIONS: usize = 7;
/// Length of the vector state (the bounding box).
pub const VECTOR_LEN: usize = 4;
/// Moves are checked for collisions in sub-steps of at most this length (m), so that no step
/// size lets the agent pass through a thin object.
const COLLISION_SUBSTEP_M: f64 = 0.1;

/// The seven discrete actions, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomAction {
    /// 0: move `move_step_m` forward.
    MoveAhead,
    /// 1: move `move_step_m` backward.
    MoveBack,
    /// 2: move `move_step_m` to the left, keeping the heading.
    MoveLeft,
    /// 3: move `move_step_m` to the right, keeping the heading.
    MoveRight,
    /// 4: turn anticlockwise (seen from above) by `rotate_step_degrees`.
    RotateLeft,
    /// 5: turn clockwise by `rotate_step_degrees`.
    RotateRight,
    /// 6: do nothing.
    Stay,
}

impl RoomAction {
    /// All seven, in index order.
    pub const ALL: [RoomAction; NUM_ACTIONS] = [
        RoomAction::MoveAhead,
        RoomAction::MoveBack,
        RoomAction::MoveLeft,
        RoomAction::MoveRight,
        RoomAction::RotateLeft,
        RoomAction::RotateRight,
        RoomAction::Stay,
    ];

    /// The action's index in the action space.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The action with index `index`, if `index < 7`.
    pub fn from_index(index: usize) -> Option<Self> {
        Self::ALL.get(index).copied()
    }
}

/// Where the agent stands: position in metres in the room's frame (see [`Layout`]) and heading
/// in radians, anticlockwise from `+x`, in `[0, 2π)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pose {
    /// `x` in metres.
    pub x: f64,
    /// `y` in metres.
    pub y: f64,
    /// Heading in radians.
    pub heading: f64,
}

/// The active-perception room environment (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct RoomEnv {
    config: RoomConfig,
    id: &'static str,
    /// A fixed custom layout, if the environment was built with [`RoomEnv::with_layout`].
    custom_layout: Option<Arc<Layout>>,
    layout: Arc<Layout>,
    pose: Pose,
    clock: EpisodeClock,
    rng: ChaCha8Rng,
    renderer: Renderer,
    view: TargetView,
    last_move_blocked: bool,
}

impl RoomEnv {
    /// Builds the environment from a config, checking every value (see [`RoomConfig::build`]).
    /// The id is `room-s1` or `room-s2` when the config is exactly that registration's and
    /// `room-custom` otherwise.
    pub fn new(config: RoomConfig) -> Result<Self, EnvError> {
        config.validate()?;
        let id = if config == RoomConfig::s1() {
            "room-s1"
        } else if config == RoomConfig::s2() {
            "room-s2"
        } else {
            "room-custom"
        };
        let layout = generated(
            config.room_type.unwrap_or(RoomType::Bathroom),
            config.layout_index.unwrap_or(0),
        );
        Ok(Self::from_parts(config, id, None, layout))
    }

    /// Setting S1 at 150 × 150 (`room-s1`).
    pub fn s1() -> Self {
        Self::new(RoomConfig::s1()).expect("the default config is valid")
    }

    /// Setting S2 at 150 × 150 (`room-s2`).
    pub fn s2() -> Self {
        Self::new(RoomConfig::s2()).expect("the default config is valid")
    }

    /// An environment in a fixed custom room (for tests and new tasks); the config's
    /// `room_type` and `layout_index` are ignored. The room must leave the agent somewhere to
    /// stand and be taller than the camera (else [`EnvError::InvalidParameter`]).
    pub fn with_layout(config: RoomConfig, layout: Layout) -> Result<Self, EnvError> {
        config.validate()?;
        if layout.free_cells().is_empty() {
            return Err(EnvError::invalid_parameter(
                "layout",
                0.0,
                "a room with at least one free cell for the agent",
            ));
        }
        if f64::from(layout.height_m()) <= config.camera_height_m {
            return Err(EnvError::invalid_parameter(
                "camera_height_m",
                config.camera_height_m,
                "below the custom room's ceiling",
            ));
        }
        let layout = Arc::new(layout);
        Ok(Self::from_parts(
            config,
            "room-custom",
            Some(Arc::clone(&layout)),
            layout,
        ))
    }

    fn from_parts(
        config: RoomConfig,
        id: &'static str,
        custom_layout: Option<Arc<Layout>>,
        layout: Arc<Layout>,
    ) -> Self {
        let cell = layout.free_cells().first().copied().unwrap_or([0.0, 0.0]);
        Self {
            clock: EpisodeClock::new(config.max_episode_steps),
            config,
            id,
            custom_layout,
            layout,
            pose: Pose {
                x: f64::from(cell[0]),
                y: f64::from(cell[1]),
                heading: 0.0,
            },
            rng: ChaCha8Rng::seed_from_u64(0),
            renderer: Renderer::default(),
            view: TargetView::default(),
            last_move_blocked: false,
        }
    }

    /// The configuration this environment was built from.
    pub fn config(&self) -> &RoomConfig {
        &self.config
    }

    /// The current room.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The agent's pose.
    pub fn pose(&self) -> Pose {
        self.pose
    }

    /// What the camera saw of the target in the latest observation.
    pub fn target_view(&self) -> &TargetView {
        &self.view
    }

    /// The reward's factors for the latest observation.
    pub fn detection(&self) -> DetectionConfidence {
        detection_confidence(&self.view, self.config.reference_area)
    }

    /// Whether the latest move was refused because of a collision.
    pub fn last_move_blocked(&self) -> bool {
        self.last_move_blocked
    }

    /// `[3, H, W]` in S1, `None` in S2.
    pub fn rgb_shape(&self) -> Option<[usize; 3]> {
        let s = self.config.image_size;
        self.config.setting.has_rgb().then_some([3, s, s])
    }

    /// `[1, H, W]`.
    pub fn depth_shape(&self) -> [usize; 3] {
        let s = self.config.image_size;
        [1, s, s]
    }

    /// Length of the vector state (4).
    pub fn vector_len(&self) -> usize {
        VECTOR_LEN
    }

    /// Length of a flattened observation: RGB (S1) + depth + vector.
    pub fn obs_len(&self) -> usize {
        let pixels = self.config.image_size * self.config.image_size;
        let rgb = if self.config.setting.has_rgb() {
            3 * pixels
        } else {
            0
        };
        rgb + pixels + VECTOR_LEN
    }

    /// Moves the agent to `pose` in the current room and returns the observation; shorthand
    /// for `set_state(&[x, y, heading])`.
    pub fn set_pose(&mut self, pose: Pose) -> Result<Obs, EnvError> {
        self.set_state(&[pose.x, pose.y, pose.heading])
    }

    fn camera(&self) -> Camera {
        Camera {
            position: [
                self.pose.x as f32,
                self.pose.y as f32,
                self.config.camera_height_m as f32,
            ],
            heading: self.pose.heading as f32,
            fov_rad: self.config.field_of_view_degrees.to_radians() as f32,
            width: self.config.image_size,
            height: self.config.image_size,
        }
    }

    /// The layout for a new episode: the custom one, or drawn from the generator for whatever
    /// the config leaves open.
    fn choose_layout(&mut self) -> Arc<Layout> {
        if let Some(layout) = &self.custom_layout {
            return Arc::clone(layout);
        }
        let room_type = match self.config.room_type {
            Some(t) => t,
            None => RoomType::ALL[self.rng.random_range(0..RoomType::ALL.len())],
        };
        let index = match self.config.layout_index {
            Some(i) => i,
            None => self.rng.random_range(0..LAYOUTS_PER_TYPE),
        };
        generated(room_type, index)
    }

    /// A free start pose: a random free cell, jittered within the cell where that stays free,
    /// and a uniform heading.
    fn random_pose(&mut self) -> Pose {
        let (x, y) = random_position(&self.layout, &mut self.rng);
        let heading = self.rng.random_range(0.0..TAU);
        Pose { x, y, heading }
    }

    /// Applies an action that has been checked.
    fn apply(&mut self, action: RoomAction) {
        let step = self.config.move_step_m;
        let (sin, cos) = self.pose.heading.sin_cos();
        let rotate = self.config.rotate_step_degrees.to_radians();
        let (dx, dy) = match action {
            RoomAction::MoveAhead => (step * cos, step * sin),
            RoomAction::MoveBack => (-step * cos, -step * sin),
            RoomAction::MoveLeft => (-step * sin, step * cos),
            RoomAction::MoveRight => (step * sin, -step * cos),
            RoomAction::RotateLeft | RoomAction::RotateRight | RoomAction::Stay => {
                let turn = match action {
                    RoomAction::RotateLeft => rotate,
                    RoomAction::RotateRight => -rotate,
                    _ => 0.0,
                };
                self.pose.heading = (self.pose.heading + turn).rem_euclid(TAU);
                self.last_move_blocked = false;
                return;
            }
        };
        let substeps = (step / COLLISION_SUBSTEP_M).ceil().max(1.0) as usize;
        let clear = (1..=substeps).all(|k| {
            let f = k as f64 / substeps as f64;
            self.layout
                .is_free((self.pose.x + f * dx) as f32, (self.pose.y + f * dy) as f32)
        });
        if clear {
            self.pose.x += dx;
            self.pose.y += dy;
        }
        self.last_move_blocked = !clear;
    }

    /// Checks that a step is allowed and applies the action.
    fn transition(&mut self, action: usize) -> Result<(), EnvError> {
        self.clock.check_step(self.id, action, NUM_ACTIONS)?;
        let action = RoomAction::from_index(action).expect("checked against NUM_ACTIONS");
        self.apply(action);
        Ok(())
    }

    /// Renders the current pose into `rgb` (S1), `depth` and `vector`, and records the view.
    fn render_into(&mut self, rgb: Option<&mut [f32]>, depth: &mut [f32], vector: &mut [f32]) {
        let camera = self.camera();
        self.view = self.renderer.render(
            &self.layout,
            &camera,
            self.config.max_depth_m as f32,
            rgb,
            depth,
        );
        vector.copy_from_slice(&bbox_vector(&self.view));
    }

    /// Renders into a flat buffer of [`RoomEnv::obs_len`] values.
    fn render_flat(&mut self, obs: &mut [f32]) {
        let pixels = self.config.image_size * self.config.image_size;
        let rgb_len = if self.config.setting.has_rgb() {
            3 * pixels
        } else {
            0
        };
        let (rgb, rest) = obs.split_at_mut(rgb_len);
        let (depth, vector) = rest.split_at_mut(pixels);
        let rgb = (rgb_len > 0).then_some(rgb);
        self.render_into(rgb, depth, vector);
    }

    /// Renders the current pose as a new observation.
    fn observe(&mut self) -> MultimodalObs {
        let s = self.config.image_size;
        let mut rgb = self.config.setting.has_rgb().then(|| vec![0.0; 3 * s * s]);
        let mut depth = vec![0.0; s * s];
        let mut vector = vec![0.0; VECTOR_LEN];
        self.render_into(rgb.as_deref_mut(), &mut depth, &mut vector);
        MultimodalObs {
            rgb: rgb.map(|data| Image {
                channels: 3,
                height: s,
                width: s,
                data,
            }),
            depth: Some(Image {
                channels: 1,
                height: s,
                width: s,
                data: depth,
            }),
            vector,
        }
    }

    fn start_episode(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = ChaCha8Rng::seed_from_u64(seed);
        }
        self.layout = self.choose_layout();
        self.pose = self.random_pose();
        self.last_move_blocked = false;
        self.clock.restart();
    }

    fn reward(&self) -> f64 {
        self.detection().confidence
    }

    fn invalid_state(&self, state: &[f64], why: &str) -> EnvError {
        EnvError::InvalidState {
            env: self.id.to_string(),
            state: state.to_vec(),
            expected: format!(
                "[x, y, heading] or [x, y, heading, room_type_index (0-3), layout_index (0-29)], \
                 finite, {why}"
            ),
        }
    }
}

/// A generated layout whose indices have been checked.
fn generated(room_type: RoomType, index: usize) -> Arc<Layout> {
    Layout::generated(room_type, index).expect("layout index checked against LAYOUTS_PER_TYPE")
}

/// A random free position: a free cell of the layout's main region, jittered within the cell
/// where that stays free.
fn random_position(layout: &Layout, rng: &mut ChaCha8Rng) -> (f64, f64) {
    let cells = layout.free_cells();
    let [cx, cy] = cells[rng.random_range(0..cells.len())];
    let half = 0.5 * FREE_GRID_M;
    let (x, y) = (
        cx + rng.random_range(-half..half),
        cy + rng.random_range(-half..half),
    );
    if layout.is_free(x, y) {
        (f64::from(x), f64::from(y))
    } else {
        (f64::from(cx), f64::from(cy))
    }
}

impl Env for RoomEnv {
    fn id(&self) -> &str {
        self.id
    }

    /// A `Box` over the flattened observation: RGB values (S1) and depth in `[0, 1]`, then the
    /// 4 box coordinates in `[−1, 1]`. Use [`RoomEnv::rgb_shape`] and
    /// [`RoomEnv::depth_shape`] for the image shapes.
    fn observation_space(&self) -> Space {
        let images = self.obs_len() - VECTOR_LEN;
        let mut low = vec![0.0; images];
        let mut high = vec![1.0; images];
        low.extend([-1.0; VECTOR_LEN]);
        high.extend([1.0; VECTOR_LEN]);
        Space::Box { low, high }
    }

    fn action_space(&self) -> Space {
        Space::Discrete { n: NUM_ACTIONS }
    }

    /// Draws the layout (where the config leaves it open) and a free start pose with a
    /// uniform heading.
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        self.start_episode(seed);
        Obs::Multimodal(self.observe())
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        self.transition(action)?;
        let obs = Obs::Multimodal(self.observe());
        let truncated = self.clock.advance(false);
        Ok(Step {
            obs,
            reward: self.reward(),
            terminated: false,
            truncated,
        })
    }

    /// `state` is `[x, y, heading]` (a pose in the current room) or
    /// `[x, y, heading, room_type_index, layout_index]` (a pose in generated layout
    /// `layout_index` of `RoomType::ALL[room_type_index]`). The position must be free (the
    /// agent's disc inside the walls and clear of solid boxes); the heading is any finite
    /// angle in radians.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        self.set_state_multimodal(state).map(Obs::Multimodal)
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.clock.max_episode_steps()
    }

    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        check_obs_len(obs, self.obs_len())?;
        self.transition(action)?;
        self.render_flat(obs);
        let truncated = self.clock.advance(false);
        Ok(StepInfo {
            reward: self.reward(),
            terminated: false,
            truncated,
        })
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        check_obs_len(obs, self.obs_len())?;
        self.start_episode(seed);
        self.render_flat(obs);
        Ok(())
    }
}

impl RoomEnv {
    /// [`Env::set_state`], returning the observation's parts.
    fn set_state_multimodal(&mut self, state: &[f64]) -> Result<MultimodalObs, EnvError> {
        if !(state.len() == 3 || state.len() == 5) || state.iter().any(|v| !v.is_finite()) {
            return Err(
                self.invalid_state(state, "got the wrong number of values or a non-finite one")
            );
        }
        let layout = if state.len() == 5 {
            let is_index = |v: f64, n: usize| v >= 0.0 && v.fract() == 0.0 && (v as usize) < n;
            if !is_index(state[3], RoomType::ALL.len()) || !is_index(state[4], LAYOUTS_PER_TYPE) {
                return Err(self.invalid_state(state, "with integer layout indices in range"));
            }
            generated(RoomType::ALL[state[3] as usize], state[4] as usize)
        } else {
            Arc::clone(&self.layout)
        };
        if !layout.is_free(state[0] as f32, state[1] as f32) {
            return Err(self.invalid_state(
                state,
                "where the agent's 0.2 m disc is inside the walls and clear of solid furniture",
            ));
        }
        self.layout = layout;
        self.pose = Pose {
            x: state[0],
            y: state[1],
            heading: state[2].rem_euclid(TAU),
        };
        self.last_move_blocked = false;
        self.clock.restart();
        Ok(self.observe())
    }
}
