//! The task's configuration: cameras, image size, room choice, time limit, motion, camera and
//! reward parameters, each checked before an environment is built.

use serde::{Deserialize, Serialize};

use super::{RoomEnv, RoomType, DEFAULT_CAMERA_HEIGHT_M, LAYOUTS_PER_TYPE};
use crate::EnvError;

/// Which cameras the agent has (the paper's two settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RoomSetting {
    /// RGB and depth cameras.
    S1,
    /// Depth camera only (`rgb` is `None`).
    S2,
}

impl RoomSetting {
    /// Whether observations include the RGB image.
    pub fn has_rgb(self) -> bool {
        self == RoomSetting::S1
    }
}

/// Configuration of the room task. Defaults follow the paper and AI2THOR; build a validated
/// environment with [`RoomConfig::build`]:
/// `RoomConfig::s2().with_image_size(64).build()?`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoomConfig {
    /// Cameras: S1 (RGB + depth) or S2 (depth only).
    pub setting: RoomSetting,
    /// Side of the square images in pixels (150, as in the paper); 8 to 1024.
    pub image_size: usize,
    /// Room type of every episode, or `None` to draw one per reset (uniformly).
    pub room_type: Option<RoomType>,
    /// Layout index (0–29) of every episode, or `None` to draw one per reset (uniformly).
    pub layout_index: Option<usize>,
    /// Truncation time limit (100); `None` for no limit.
    pub max_episode_steps: Option<usize>,
    /// Length of a move in metres (0.25, AI2THOR's grid size); in `(0, 1]`.
    pub move_step_m: f64,
    /// Angle of a rotation in degrees (30); in `(0, 180]`.
    pub rotate_step_degrees: f64,
    /// Horizontal (= vertical) field of view in degrees (90, AI2THOR's default); in
    /// `[10, 170]`.
    pub field_of_view_degrees: f64,
    /// Camera height above the floor in metres (1.5); in `(0, 2.3]`, below every generated
    /// ceiling.
    pub camera_height_m: f64,
    /// Depth that maps to 1 in the depth image, in metres (10, more than any generated room's
    /// diagonal); in `(0, 100]`.
    pub max_depth_m: f64,
    /// `A_ref` of the reward's size term: the image fraction at which a target counts as full
    /// size (0.02); in `(0, 1]`.
    pub reference_area: f64,
}

impl Default for RoomConfig {
    fn default() -> Self {
        Self::s1()
    }
}

impl RoomConfig {
    /// Setting S1 (RGB + depth), 150 × 150, every room type and layout: `room-s1`.
    pub fn s1() -> Self {
        Self {
            setting: RoomSetting::S1,
            image_size: 150,
            room_type: None,
            layout_index: None,
            max_episode_steps: Some(100),
            move_step_m: 0.25,
            rotate_step_degrees: 30.0,
            field_of_view_degrees: 90.0,
            camera_height_m: f64::from(DEFAULT_CAMERA_HEIGHT_M),
            max_depth_m: 10.0,
            reference_area: 0.02,
        }
    }

    /// Setting S2 (depth only), otherwise as [`RoomConfig::s1`]: `room-s2`.
    pub fn s2() -> Self {
        Self {
            setting: RoomSetting::S2,
            ..Self::s1()
        }
    }

    /// Sets the cameras.
    pub fn with_setting(mut self, setting: RoomSetting) -> Self {
        self.setting = setting;
        self
    }

    /// Sets the image side in pixels.
    pub fn with_image_size(mut self, image_size: usize) -> Self {
        self.image_size = image_size;
        self
    }

    /// Fixes the room type (`None`: drawn per reset).
    pub fn with_room_type(mut self, room_type: Option<RoomType>) -> Self {
        self.room_type = room_type;
        self
    }

    /// Fixes the layout index (`None`: drawn per reset).
    pub fn with_layout_index(mut self, layout_index: Option<usize>) -> Self {
        self.layout_index = layout_index;
        self
    }

    /// Sets the time limit; `None` removes it.
    pub fn with_max_episode_steps(mut self, max_episode_steps: Option<usize>) -> Self {
        self.max_episode_steps = max_episode_steps;
        self
    }

    /// Sets the move length (m).
    pub fn with_move_step_m(mut self, move_step_m: f64) -> Self {
        self.move_step_m = move_step_m;
        self
    }

    /// Sets the rotation angle (degrees).
    pub fn with_rotate_step_degrees(mut self, rotate_step_degrees: f64) -> Self {
        self.rotate_step_degrees = rotate_step_degrees;
        self
    }

    /// Sets the field of view (degrees).
    pub fn with_field_of_view_degrees(mut self, field_of_view_degrees: f64) -> Self {
        self.field_of_view_degrees = field_of_view_degrees;
        self
    }

    /// Sets the camera height (m).
    pub fn with_camera_height_m(mut self, camera_height_m: f64) -> Self {
        self.camera_height_m = camera_height_m;
        self
    }

    /// Sets the depth that maps to 1 (m).
    pub fn with_max_depth_m(mut self, max_depth_m: f64) -> Self {
        self.max_depth_m = max_depth_m;
        self
    }

    /// Sets the reward's reference area (image fraction).
    pub fn with_reference_area(mut self, reference_area: f64) -> Self {
        self.reference_area = reference_area;
        self
    }

    /// Checks every value (ranges on each field) and builds the environment.
    pub fn build(self) -> Result<RoomEnv, EnvError> {
        RoomEnv::new(self)
    }

    pub(super) fn validate(&self) -> Result<(), EnvError> {
        if !(8..=1024).contains(&self.image_size) {
            return Err(EnvError::invalid_parameter(
                "image_size",
                self.image_size as f64,
                "an integer from 8 to 1024",
            ));
        }
        if let Some(index) = self.layout_index.filter(|&i| i >= LAYOUTS_PER_TYPE) {
            return Err(EnvError::invalid_parameter(
                "layout_index",
                index as f64,
                "an integer from 0 to 29, or None to draw one per reset",
            ));
        }
        if self.max_episode_steps == Some(0) {
            return Err(EnvError::invalid_parameter(
                "max_episode_steps",
                0.0,
                ">= 1, or None for no time limit",
            ));
        }
        check_range("move_step_m", self.move_step_m, 0.0, 1.0, false)?;
        check_range(
            "rotate_step_degrees",
            self.rotate_step_degrees,
            0.0,
            180.0,
            false,
        )?;
        check_range(
            "field_of_view_degrees",
            self.field_of_view_degrees,
            10.0,
            170.0,
            true,
        )?;
        check_range("camera_height_m", self.camera_height_m, 0.0, 2.3, false)?;
        check_range("max_depth_m", self.max_depth_m, 0.0, 100.0, false)?;
        check_range("reference_area", self.reference_area, 0.0, 1.0, false)?;
        Ok(())
    }
}

/// Errors unless `value` is finite, `> low` (`>= low` when `low_inclusive`) and `<= high`.
fn check_range(
    name: &str,
    value: f64,
    low: f64,
    high: f64,
    low_inclusive: bool,
) -> Result<(), EnvError> {
    let above = if low_inclusive {
        value >= low
    } else {
        value > low
    };
    if value.is_finite() && above && value <= high {
        Ok(())
    } else {
        let op = if low_inclusive { ">=" } else { ">" };
        Err(EnvError::invalid_parameter(
            name,
            value,
            &format!("{op} {low} and <= {high}"),
        ))
    }
}
