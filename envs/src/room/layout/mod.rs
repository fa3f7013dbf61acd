//! Room layouts: a rectangular floor plan with walls, floor, ceiling, furniture as axis-aligned
//! boxes, and one target object.
//!
//! World frame: `x` runs along the room's width (west → east), `y` along its length
//! (south → north), `z` up; the room occupies `[0, width] × [0, length] × [0, height]` in metres.
//! The 120 generated layouts (4 [`RoomType`]s × [`LAYOUTS_PER_TYPE`]) are a deterministic
//! function of `(room_type, index)`, built once per process by [`Layout::generated`]. They stand
//! in for AI2THOR's iTHOR floor plans (kitchens 1–30, living rooms 201–230, bedrooms 301–330,
//! bathrooms 401–430) that the paper uses.
//!
//! Every generated layout passes two checks, retried with the next sub-seed otherwise: the
//! agent (a disc of radius [`AGENT_RADIUS_M`]) has a connected free region of at least
//! [`MIN_FREE_AREA_M2`], and the target is in line of sight (from a camera at
//! [`DEFAULT_CAMERA_HEIGHT_M`]) from at least [`MIN_VIEWPOINTS`] cells of that region.

use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::EnvError;

mod free_space;
mod generator;
mod geometry;
mod material;
mod object;
mod room_type;

pub use geometry::{Face, Wall};
pub use material::{Material, Rgb};
pub use object::{Object, ObjectKind};
pub use room_type::RoomType;

use generator::generate;

/// Layouts per room type, as in the paper (30 AI2THOR floor plans per type).
pub const LAYOUTS_PER_TYPE: usize = 30;
/// Radius of the agent's footprint in metres: a pose is free when this disc touches no wall and
/// no solid object.
pub const AGENT_RADIUS_M: f32 = 0.2;
/// Height of AI2THOR's camera above the floor (about 1.5 m), the default camera height and the
/// one the target-visibility check of generated layouts uses.
pub const DEFAULT_CAMERA_HEIGHT_M: f32 = 1.5;
/// Spacing of the grid of agent positions that [`Layout::free_cells`] lists.
pub const FREE_GRID_M: f32 = 0.1;
/// Smallest connected free area (m²) a generated layout leaves for the agent.
pub const MIN_FREE_AREA_M2: f32 = 2.0;
/// Fewest free cells from which a generated layout's target must be in line of sight.
pub const MIN_VIEWPOINTS: usize = 20;
/// Walls, floor and ceiling are at least this far apart (m); checked by [`Layout::empty`].
const MIN_ROOM_SIZE_M: f32 = 1.0;

/// A room: dimensions, surface materials, boxes, the target and the light.
///
/// Fields are private so that the free-space grid always matches the boxes: build custom rooms
/// (for tests or new tasks) with [`Layout::empty`] and [`Layout::with_object`] /
/// [`Layout::with_target`], or take a generated one from [`Layout::generated`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Layout {
    room_type: Option<RoomType>,
    index: Option<usize>,
    width_m: f32,
    length_m: f32,
    height_m: f32,
    floor: Material,
    walls: [Material; 4],
    ceiling: Material,
    objects: Vec<Object>,
    target: Option<usize>,
    light: [f32; 3],
    #[serde(skip)]
    free_cells: Vec<[f32; 2]>,
}

impl Layout {
    /// An empty room of `width_m × length_m × height_m` with an oak floor, white walls and
    /// ceiling, and a light at the ceiling's centre. Each side must be ≥ 1 m and ≤ 20 m
    /// (else [`EnvError::InvalidParameter`]).
    pub fn empty(width_m: f32, length_m: f32, height_m: f32) -> Result<Self, EnvError> {
        for (name, value) in [
            ("width_m", width_m),
            ("length_m", length_m),
            ("height_m", height_m),
        ] {
            if !(value.is_finite() && (MIN_ROOM_SIZE_M..=20.0).contains(&value)) {
                return Err(EnvError::invalid_parameter(
                    name,
                    f64::from(value),
                    "between 1 and 20 metres",
                ));
            }
        }
        let white = [0.9, 0.9, 0.88];
        let mut layout = Self {
            room_type: None,
            index: None,
            width_m,
            length_m,
            height_m,
            floor: Material::Wood {
                light: [0.72, 0.55, 0.36],
                dark: [0.5, 0.35, 0.2],
                plank_m: 0.18,
                along_y: false,
            },
            walls: [Material::Paint { color: white }; 4],
            ceiling: Material::Paint { color: white },
            objects: Vec::new(),
            target: None,
            light: [0.5 * width_m, 0.5 * length_m, height_m - 0.15],
            free_cells: Vec::new(),
        };
        layout.free_cells = layout.compute_free_cells();
        Ok(layout)
    }

    /// Adds a box. It must lie inside the room with `min < max` on every axis (else
    /// [`EnvError::InvalidParameter`] naming `object`).
    pub fn with_object(mut self, object: Object) -> Result<Self, EnvError> {
        self.check_object(&object)?;
        self.objects.push(object);
        self.free_cells = self.compute_free_cells();
        Ok(self)
    }

    /// Adds the target object (a solid box drawn with `material`), replacing any earlier one.
    pub fn with_target(
        mut self,
        min: [f32; 3],
        max: [f32; 3],
        material: Material,
    ) -> Result<Self, EnvError> {
        let object = Object::new(ObjectKind::Target, min, max, material);
        self.check_object(&object)?;
        match self.target {
            Some(t) => self.objects[t] = object,
            None => {
                self.target = Some(self.objects.len());
                self.objects.push(object);
            }
        }
        self.free_cells = self.compute_free_cells();
        Ok(self)
    }

    /// Replaces the floor material.
    pub fn with_floor(mut self, floor: Material) -> Self {
        self.floor = floor;
        self
    }

    /// Replaces every wall's material.
    pub fn with_walls(mut self, walls: Material) -> Self {
        self.walls = [walls; 4];
        self
    }

    fn check_object(&self, object: &Object) -> Result<(), EnvError> {
        let room = [self.width_m, self.length_m, self.height_m];
        for (axis, &extent) in room.iter().enumerate() {
            let (lo, hi) = (object.min[axis], object.max[axis]);
            if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo < hi && hi <= extent) {
                return Err(EnvError::InvalidParameter {
                    name: "object".into(),
                    value: f64::from(if lo.is_finite() && lo >= 0.0 { hi } else { lo }),
                    expected: format!(
                        "a box with 0 <= min < max <= the room's size ({} × {} × {} m) on every \
                         axis; axis {axis} has [{lo}, {hi}]",
                        self.width_m, self.length_m, self.height_m
                    ),
                });
            }
        }
        Ok(())
    }

    /// Generates layout `index` (0–29) of `room_type` afresh: a deterministic function of the
    /// two. `None` when `index >= 30`. [`Layout::generated`] caches all 120.
    pub fn generate(room_type: RoomType, index: usize) -> Option<Layout> {
        (index < LAYOUTS_PER_TYPE).then(|| generate(room_type, index))
    }

    /// The generated layout `index` (0–29) of `room_type`, built once per process (all 120
    /// together, on first use) and shared. `None` when `index >= 30`.
    pub fn generated(room_type: RoomType, index: usize) -> Option<Arc<Layout>> {
        static LAYOUTS: OnceLock<Vec<Arc<Layout>>> = OnceLock::new();
        if index >= LAYOUTS_PER_TYPE {
            return None;
        }
        let all = LAYOUTS.get_or_init(|| {
            RoomType::ALL
                .iter()
                .flat_map(|&t| (0..LAYOUTS_PER_TYPE).map(move |i| Arc::new(generate(t, i))))
                .collect()
        });
        Some(Arc::clone(
            &all[room_type.index() * LAYOUTS_PER_TYPE + index],
        ))
    }

    /// The room type of a generated layout (`None` for a custom one).
    pub fn room_type(&self) -> Option<RoomType> {
        self.room_type
    }

    /// The index (0–29) of a generated layout (`None` for a custom one).
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// Extent along `x` in metres.
    pub fn width_m(&self) -> f32 {
        self.width_m
    }

    /// Extent along `y` in metres.
    pub fn length_m(&self) -> f32 {
        self.length_m
    }

    /// Floor-to-ceiling height in metres.
    pub fn height_m(&self) -> f32 {
        self.height_m
    }

    /// Floor material.
    pub fn floor(&self) -> &Material {
        &self.floor
    }

    /// Wall materials, indexed like [`Wall::ALL`] (south, east, north, west).
    pub fn walls(&self) -> &[Material; 4] {
        &self.walls
    }

    /// Ceiling material.
    pub fn ceiling(&self) -> &Material {
        &self.ceiling
    }

    /// Every box, the target included.
    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// Index of the target in [`Layout::objects`], if the room has one.
    pub fn target_index(&self) -> Option<usize> {
        self.target
    }

    /// The target box, if the room has one.
    pub fn target(&self) -> Option<&Object> {
        self.target.map(|t| &self.objects[t])
    }

    /// Position of the point light (near the ceiling).
    pub fn light(&self) -> [f32; 3] {
        self.light
    }

    /// Centres of the [`FREE_GRID_M`] grid cells where the agent stands free, restricted to the
    /// largest 4-connected region: where episodes start.
    pub fn free_cells(&self) -> &[[f32; 2]] {
        &self.free_cells
    }

    /// A short description: `kitchen 7: 4.1 × 3.8 m, 17 objects, target on countertop`.
    pub fn describe(&self) -> String {
        let name = match (self.room_type, self.index) {
            (Some(t), Some(i)) => format!("{t} {i}"),
            _ => "custom room".to_string(),
        };
        let support = self.target().map_or("no target".to_string(), |target| {
            let below = self
                .objects
                .iter()
                .filter(|o| o.kind != ObjectKind::Target && o.solid)
                .filter(|o| (o.max[2] - target.min[2]).abs() < 1e-3)
                .find(|o| {
                    let c = target.center();
                    (0..2).all(|a| o.min[a] <= c[a] && c[a] <= o.max[a])
                });
            match below {
                Some(o) => format!("target on {:?}", o.kind).to_lowercase(),
                None => "target on the floor".to_string(),
            }
        });
        format!(
            "{name}: {:.1} × {:.1} × {:.1} m, {} objects, {support}",
            self.width_m,
            self.length_m,
            self.height_m,
            self.objects.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_room_is_all_free_inside_the_margin() {
        let room = Layout::empty(2.0, 3.0, 2.5).unwrap();
        // 20 × 30 cells of 0.1 m; the agent's 0.2 m radius rules out two rings of cells.
        assert_eq!(room.free_cells().len(), 16 * 26);
        assert!(room.is_free(1.0, 1.0));
        assert!(!room.is_free(0.1, 1.0));
        assert!(Layout::empty(0.5, 3.0, 2.5).is_err());
        assert!(room
            .with_object(Object::new(
                ObjectKind::Block,
                [0.0, 0.0, 0.0],
                [3.0, 1.0, 1.0],
                Material::Paint { color: [0.5; 3] }
            ))
            .is_err());
    }
}
