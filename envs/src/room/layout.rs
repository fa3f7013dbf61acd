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

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::EnvError;

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
/// Attempts at generating a layout before the last one is kept with only essential furniture.
const GENERATION_ATTEMPTS: u64 = 64;

/// An RGB colour, each channel in `[0, 1]`.
pub type Rgb = [f32; 3];

/// The four room types of the paper's evaluation (Table I order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomType {
    /// Tiled floor and walls, bathtub, toilet, vanity with mirror.
    Bathroom,
    /// Wood or carpet floor, bed, nightstands, wardrobe, desk.
    Bedroom,
    /// Large floor tiles, counters with upper cabinets, fridge, stove, sink, dining table.
    Kitchen,
    /// Wood floor, sofa, coffee table and rug, TV, bookshelf, armchair, plants.
    LivingRoom,
}

impl RoomType {
    /// All four, in the paper's order.
    pub const ALL: [RoomType; 4] = [
        RoomType::Bathroom,
        RoomType::Bedroom,
        RoomType::Kitchen,
        RoomType::LivingRoom,
    ];

    /// Position in [`RoomType::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The room type at `index` in [`RoomType::ALL`], if `index < 4`.
    pub fn from_index(index: usize) -> Option<Self> {
        Self::ALL.get(index).copied()
    }

    /// Lower-case name: `bathroom`, `bedroom`, `kitchen`, `living_room`.
    pub fn name(self) -> &'static str {
        match self {
            RoomType::Bathroom => "bathroom",
            RoomType::Bedroom => "bedroom",
            RoomType::Kitchen => "kitchen",
            RoomType::LivingRoom => "living_room",
        }
    }

    /// Parses [`RoomType::name`] (case-insensitive; `-`, `_` and spaces are interchangeable).
    pub fn from_name(name: &str) -> Option<Self> {
        let wanted: String = name
            .trim()
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '-' || c == ' ' { '_' } else { c })
            .collect();
        Self::ALL
            .into_iter()
            .find(|t| t.name() == wanted || t.name().replace('_', "") == wanted)
    }
}

impl std::fmt::Display for RoomType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The side of a box a ray hit, named by the surface's outward normal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Face {
    /// Normal −x.
    NegX,
    /// Normal +x.
    PosX,
    /// Normal −y.
    NegY,
    /// Normal +y.
    PosY,
    /// Normal −z (an underside, or the ceiling).
    NegZ,
    /// Normal +z (a top, or the floor).
    PosZ,
}

impl Face {
    /// The unit normal.
    pub fn normal(self) -> [f32; 3] {
        match self {
            Face::NegX => [-1.0, 0.0, 0.0],
            Face::PosX => [1.0, 0.0, 0.0],
            Face::NegY => [0.0, -1.0, 0.0],
            Face::PosY => [0.0, 1.0, 0.0],
            Face::NegZ => [0.0, 0.0, -1.0],
            Face::PosZ => [0.0, 0.0, 1.0],
        }
    }

    /// Whether the face is vertical (a side rather than a top or bottom).
    pub fn is_vertical(self) -> bool {
        !matches!(self, Face::NegZ | Face::PosZ)
    }
}

/// One of the room's four walls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Wall {
    /// `y = 0`.
    South,
    /// `x = width`.
    East,
    /// `y = length`.
    North,
    /// `x = 0`.
    West,
}

impl Wall {
    /// All four, indexed as [`Layout::walls`] is.
    pub const ALL: [Wall; 4] = [Wall::South, Wall::East, Wall::North, Wall::West];

    /// The face of a box standing against this wall that looks into the room.
    pub fn inward_face(self) -> Face {
        match self {
            Wall::South => Face::PosY,
            Wall::East => Face::NegX,
            Wall::North => Face::NegY,
            Wall::West => Face::PosX,
        }
    }

    fn next(self) -> Wall {
        Wall::ALL[(self as usize + 1) % 4]
    }

    fn opposite(self) -> Wall {
        Wall::ALL[(self as usize + 2) % 4]
    }
}

/// What a surface looks like. Colours are albedos in `[0, 1]`; lengths are in metres. The
/// patterns are evaluated procedurally per pixel (see `render.rs`), so images have real
/// structure (plank seams, grout lines, book spines, window panes) rather than flat colour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Material {
    /// Matte paint with a faint roller texture.
    Paint {
        /// Base colour.
        color: Rgb,
    },
    /// Wood: planks of `plank_m` with seams and grain (no seams when `plank_m` is 0).
    Wood {
        /// Light tone.
        light: Rgb,
        /// Dark tone (grain, knots).
        dark: Rgb,
        /// Plank width; 0 for solid wood without seams.
        plank_m: f32,
        /// On horizontal faces, planks run along `y` instead of `x`.
        along_y: bool,
    },
    /// Square tiles with grout lines; a checkerboard when `alt` differs from `color`.
    Tiles {
        /// Tile colour.
        color: Rgb,
        /// Colour of every other tile.
        alt: Rgb,
        /// Grout colour.
        grout: Rgb,
        /// Tile side.
        tile_m: f32,
    },
    /// Tiles up to `tile_height_m`, paint above (bathroom walls).
    TiledWall {
        /// Tile colour.
        tile: Rgb,
        /// Grout colour.
        grout: Rgb,
        /// Tile side.
        tile_m: f32,
        /// Paint colour above the tiles.
        paint: Rgb,
        /// Height of the tiled band.
        tile_height_m: f32,
    },
    /// Vertical stripes on walls.
    Wallpaper {
        /// Background colour.
        base: Rgb,
        /// Stripe colour.
        stripe: Rgb,
        /// Stripe period.
        stripe_m: f32,
    },
    /// Wall-to-wall carpet: mottled.
    Carpet {
        /// Base colour.
        color: Rgb,
    },
    /// A rug: field with a border band and a diamond pattern.
    Rug {
        /// Field colour.
        field: Rgb,
        /// Border colour.
        border: Rgb,
        /// Pattern colour.
        pattern: Rgb,
    },
    /// Upholstery: fine weave.
    Fabric {
        /// Base colour.
        color: Rgb,
    },
    /// A blanket with stripes across the bed.
    Blanket {
        /// Base colour.
        color: Rgb,
        /// Stripe colour.
        stripe: Rgb,
    },
    /// Glazed ceramic (toilet, bathtub sides, plant pots).
    Ceramic {
        /// Base colour.
        color: Rgb,
    },
    /// Ceramic or steel with an inset basin on its top face (bathtub, sink).
    Basin {
        /// Rim colour.
        color: Rgb,
        /// Basin colour.
        inner: Rgb,
    },
    /// Brushed metal: horizontal streaks.
    Metal {
        /// Base colour.
        color: Rgb,
    },
    /// Speckled stone (countertops).
    Stone {
        /// Base colour.
        color: Rgb,
    },
    /// Cabinet fronts: doors of `door_m` with gaps and handles on the front face.
    Cabinets {
        /// Base colour.
        color: Rgb,
        /// Door width.
        door_m: f32,
    },
    /// A fridge: metal with a freezer split and handles on the front.
    Fridge {
        /// Base colour.
        color: Rgb,
    },
    /// A hob: dark glass with burner rings.
    Stove,
    /// An oven door: dark window in a metal frame.
    OvenDoor,
    /// Shelves of books with coloured spines on the front.
    Books {
        /// Shelf colour.
        wood: Rgb,
    },
    /// A television: dark screen with a faint reflection, thin bezel.
    Screen,
    /// A window: frame, four panes of sky (drawn unlit: it is a light source).
    Window {
        /// Frame colour.
        frame: Rgb,
    },
    /// A framed landscape picture.
    Painting {
        /// Frame colour.
        frame: Rgb,
        /// Upper colour.
        sky: Rgb,
        /// Lower colour.
        ground: Rgb,
    },
    /// A mirror: bright grey-blue with a frame.
    Mirror {
        /// Frame colour.
        frame: Rgb,
    },
    /// A panelled door with a handle.
    Door {
        /// Base colour.
        color: Rgb,
    },
    /// Foliage: dappled greens.
    Plant {
        /// Mean leaf colour.
        color: Rgb,
    },
    /// A lamp shade or ceiling light (drawn unlit: it is a light source).
    Lamp {
        /// Shade colour.
        color: Rgb,
    },
    /// The target object: a saturated colour with a light label band.
    Target {
        /// Base colour.
        color: Rgb,
    },
}

/// What a box is, for descriptions and sample sheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ObjectKind {
    Target,
    Door,
    Window,
    Painting,
    Mirror,
    Towel,
    Rug,
    CeilingLight,
    Bathtub,
    Toilet,
    Vanity,
    Sink,
    Cabinet,
    Basket,
    Stool,
    Bed,
    Headboard,
    Mattress,
    Blanket,
    Pillow,
    Nightstand,
    Lamp,
    Wardrobe,
    Desk,
    Chair,
    Dresser,
    Counter,
    Countertop,
    UpperCabinet,
    Backsplash,
    Fridge,
    Stove,
    Oven,
    Table,
    Sofa,
    Armchair,
    CoffeeTable,
    SideTable,
    TvStand,
    Tv,
    Bookshelf,
    PlantPot,
    Plant,
    FloorLamp,
    /// Anything else (custom layouts).
    Block,
}

/// One axis-aligned box in the room.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Object {
    /// What it is.
    pub kind: ObjectKind,
    /// Lower corner `(x, y, z)` in metres.
    pub min: [f32; 3],
    /// Upper corner `(x, y, z)` in metres.
    pub max: [f32; 3],
    /// Surface appearance.
    pub material: Material,
    /// Whether the agent collides with it (rugs, wall decorations and ceiling lights do not).
    pub solid: bool,
    /// The face that looks into the room, where front-only patterns (cabinet doors, book
    /// spines, screens) are drawn.
    pub front: Option<Face>,
}

impl Object {
    /// A solid box with no front face.
    pub fn new(kind: ObjectKind, min: [f32; 3], max: [f32; 3], material: Material) -> Self {
        Self {
            kind,
            min,
            max,
            material,
            solid: true,
            front: None,
        }
    }

    /// Sets whether the agent collides with it.
    pub fn with_solid(mut self, solid: bool) -> Self {
        self.solid = solid;
        self
    }

    /// Sets the face that looks into the room.
    pub fn with_front(mut self, front: Option<Face>) -> Self {
        self.front = front;
        self
    }

    /// Centre of the box.
    pub fn center(&self) -> [f32; 3] {
        [0, 1, 2].map(|a| 0.5 * (self.min[a] + self.max[a]))
    }

    /// The eight corners.
    pub fn corners(&self) -> [[f32; 3]; 8] {
        std::array::from_fn(|i| {
            [
                if i & 1 == 0 { self.min[0] } else { self.max[0] },
                if i & 2 == 0 { self.min[1] } else { self.max[1] },
                if i & 4 == 0 { self.min[2] } else { self.max[2] },
            ]
        })
    }

    /// Whether the agent's disc of `radius` centred at `(x, y)` overlaps the box's footprint.
    pub fn blocks_disc(&self, x: f32, y: f32, radius: f32) -> bool {
        let dx = (self.min[0] - x).max(x - self.max[0]).max(0.0);
        let dy = (self.min[1] - y).max(y - self.max[1]).max(0.0);
        dx * dx + dy * dy < radius * radius
    }

    fn overlaps_3d(&self, other: &Object) -> bool {
        (0..3).all(|a| self.min[a] < other.max[a] && other.min[a] < self.max[a])
    }
}

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

    /// Whether the agent (disc of [`AGENT_RADIUS_M`]) can stand at `(x, y)`: inside the walls
    /// and clear of every solid box.
    pub fn is_free(&self, x: f32, y: f32) -> bool {
        let r = AGENT_RADIUS_M;
        x.is_finite()
            && y.is_finite()
            && x >= r
            && y >= r
            && x <= self.width_m - r
            && y <= self.length_m - r
            && !self
                .objects
                .iter()
                .any(|o| o.solid && o.blocks_disc(x, y, r))
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

    /// The free grid cells of the largest 4-connected region.
    fn compute_free_cells(&self) -> Vec<[f32; 2]> {
        let nx = (self.width_m / FREE_GRID_M).floor() as usize;
        let ny = (self.length_m / FREE_GRID_M).floor() as usize;
        let center = |i: usize, j: usize| {
            [
                (i as f32 + 0.5) * FREE_GRID_M,
                (j as f32 + 0.5) * FREE_GRID_M,
            ]
        };
        let free: Vec<bool> = (0..ny)
            .flat_map(|j| (0..nx).map(move |i| (i, j)))
            .map(|(i, j)| {
                let [x, y] = center(i, j);
                self.is_free(x, y)
            })
            .collect();
        // Label connected regions with a flood fill; keep the largest.
        let mut label = vec![usize::MAX; free.len()];
        let mut best = (0, usize::MAX);
        let mut stack = Vec::new();
        for start in 0..free.len() {
            if !free[start] || label[start] != usize::MAX {
                continue;
            }
            label[start] = start;
            stack.push(start);
            let mut size = 0;
            while let Some(cell) = stack.pop() {
                size += 1;
                let (i, j) = (cell % nx, cell / nx);
                let neighbours = [
                    (i > 0).then(|| cell - 1),
                    (i + 1 < nx).then(|| cell + 1),
                    (j > 0).then(|| cell - nx),
                    (j + 1 < ny).then(|| cell + nx),
                ];
                for n in neighbours.into_iter().flatten() {
                    if free[n] && label[n] == usize::MAX {
                        label[n] = start;
                        stack.push(n);
                    }
                }
            }
            if size > best.0 {
                best = (size, start);
            }
        }
        if best.0 == 0 {
            return Vec::new();
        }
        (0..free.len())
            .filter(|&cell| label[cell] == best.1)
            .map(|cell| center(cell % nx, cell / nx))
            .collect()
    }

    /// Whether the segment from `from` to `to` passes through no box other than `skip`.
    pub(crate) fn line_of_sight(&self, from: [f32; 3], to: [f32; 3], skip: Option<usize>) -> bool {
        let d = [0, 1, 2].map(|a| to[a] - from[a]);
        self.objects.iter().enumerate().all(|(k, o)| {
            Some(k) == skip || {
                let (mut t0, mut t1) = (1e-4_f32, 1.0 - 1e-4_f32);
                for a in 0..3 {
                    if d[a].abs() < 1e-9 {
                        if from[a] < o.min[a] || from[a] > o.max[a] {
                            return true;
                        }
                    } else {
                        let inv = 1.0 / d[a];
                        let (mut ta, mut tb) =
                            ((o.min[a] - from[a]) * inv, (o.max[a] - from[a]) * inv);
                        if ta > tb {
                            std::mem::swap(&mut ta, &mut tb);
                        }
                        t0 = t0.max(ta);
                        t1 = t1.min(tb);
                    }
                }
                t0 > t1
            }
        })
    }

    /// Free cells from which the target's centre is in line of sight and within 5 m, for a
    /// camera at `camera_height_m`.
    pub fn target_viewpoints(&self, camera_height_m: f32) -> usize {
        let Some(target) = self.target() else {
            return 0;
        };
        let c = target.center();
        self.free_cells
            .iter()
            .filter(|[x, y]| {
                let (dx, dy) = (c[0] - x, c[1] - y);
                dx * dx + dy * dy < 25.0
                    && self.line_of_sight([*x, *y, camera_height_m], c, self.target)
            })
            .count()
    }
}

// ---------------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------------

/// A footprint rectangle `[x0, y0, x1, y1]`.
type Rect = [f32; 4];

/// Where a wall-standing piece of furniture sits: `along` runs along the wall, `out` into the
/// room, measured from the wall.
#[derive(Debug, Clone, Copy)]
struct Frame {
    wall: Wall,
    a0: f32,
    width: f32,
    depth: f32,
}

/// Builds one layout. Items are placed by rejection sampling against the footprints already
/// taken, so nothing overlaps and walls stay walkable.
struct Builder {
    rng: ChaCha8Rng,
    layout: Layout,
    /// Footprints that new furniture must not overlap (solid furniture and door clearances).
    taken: Vec<Rect>,
    /// Spans of walls already used by doors and wall decorations: `(wall, from, to)`.
    decor: Vec<(Wall, f32, f32)>,
    /// Surfaces the target may stand on: `(rect, top z)`.
    supports: Vec<(Rect, f32)>,
    /// Keep only essential furniture (last generation attempt).
    essential_only: bool,
}

fn generate(room_type: RoomType, index: usize) -> Layout {
    let mut last = None;
    for attempt in 0..GENERATION_ATTEMPTS {
        let seed = 0x726f_6f6d_0000_0000
            ^ ((room_type.index() as u64) << 40)
            ^ ((index as u64) << 20)
            ^ attempt;
        let essential_only = attempt + 1 == GENERATION_ATTEMPTS;
        let layout = Builder::new(room_type, index, seed, essential_only).build();
        let free_area = layout.free_cells.len() as f32 * FREE_GRID_M * FREE_GRID_M;
        if free_area >= MIN_FREE_AREA_M2
            && layout.target_viewpoints(DEFAULT_CAMERA_HEIGHT_M) >= MIN_VIEWPOINTS
        {
            return layout;
        }
        last = Some(layout);
    }
    last.expect("GENERATION_ATTEMPTS > 0")
}

fn lerp3(a: Rgb, b: Rgb, t: f32) -> Rgb {
    [0, 1, 2].map(|c| a[c] + (b[c] - a[c]) * t)
}

fn scale3(a: Rgb, s: f32) -> Rgb {
    a.map(|v| (v * s).clamp(0.0, 1.0))
}

impl Builder {
    fn new(room_type: RoomType, index: usize, seed: u64, essential_only: bool) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (w, l, h) = match room_type {
            RoomType::Bathroom => (
                rng.random_range(2.4..3.4),
                rng.random_range(2.8..4.0),
                rng.random_range(2.4..2.7),
            ),
            RoomType::Bedroom => (
                rng.random_range(3.4..4.8),
                rng.random_range(3.6..5.2),
                rng.random_range(2.5..2.9),
            ),
            RoomType::Kitchen => (
                rng.random_range(3.2..4.8),
                rng.random_range(3.4..5.2),
                rng.random_range(2.5..2.9),
            ),
            RoomType::LivingRoom => (
                rng.random_range(4.2..6.2),
                rng.random_range(4.4..6.6),
                rng.random_range(2.6..3.0),
            ),
        };
        let mut layout = Layout::empty(w, l, h).expect("generated sizes are in range");
        layout.room_type = Some(room_type);
        layout.index = Some(index);
        layout.light = [
            w * rng.random_range(0.35..0.65),
            l * rng.random_range(0.35..0.65),
            h - 0.15,
        ];
        Self {
            rng,
            layout,
            taken: Vec::new(),
            decor: Vec::new(),
            supports: Vec::new(),
            essential_only,
        }
    }

    fn build(mut self) -> Layout {
        match self.layout.room_type.expect("set in new") {
            RoomType::Bathroom => self.bathroom(),
            RoomType::Bedroom => self.bedroom(),
            RoomType::Kitchen => self.kitchen(),
            RoomType::LivingRoom => self.living_room(),
        }
        self.ceiling_light();
        self.target();
        self.layout.free_cells = self.layout.compute_free_cells();
        self.layout
    }

    // --- random helpers ----------------------------------------------------------------------

    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        if hi <= lo {
            lo
        } else {
            self.rng.random_range(lo..hi)
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        !self.essential_only && self.rng.random_bool(p)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.random_range(0..items.len())]
    }

    /// A colour near `base`: each channel jittered by up to ±`amount`.
    fn jitter(&mut self, base: Rgb, amount: f32) -> Rgb {
        base.map(|v| (v + self.rng.random_range(-amount..=amount)).clamp(0.0, 1.0))
    }

    fn wall_len(&self, wall: Wall) -> f32 {
        match wall {
            Wall::South | Wall::North => self.layout.width_m,
            Wall::East | Wall::West => self.layout.length_m,
        }
    }

    // --- geometry helpers --------------------------------------------------------------------

    /// The world footprint of `[a0, a1] × [d0, d1]` in a wall's frame.
    fn wall_rect(&self, wall: Wall, a0: f32, a1: f32, d0: f32, d1: f32) -> Rect {
        let (w, l) = (self.layout.width_m, self.layout.length_m);
        match wall {
            Wall::South => [a0, d0, a1, d1],
            Wall::North => [a0, l - d1, a1, l - d0],
            Wall::West => [d0, a0, d1, a1],
            Wall::East => [w - d1, a0, w - d0, a1],
        }
    }

    /// Whether `rect` grown by `margin` stays inside the room and overlaps nothing taken.
    fn fits(&self, rect: Rect, margin: f32) -> bool {
        let inside = rect[0] >= -1e-4
            && rect[1] >= -1e-4
            && rect[2] <= self.layout.width_m + 1e-4
            && rect[3] <= self.layout.length_m + 1e-4;
        inside
            && self.taken.iter().all(|t| {
                rect[0] - margin >= t[2]
                    || t[0] >= rect[2] + margin
                    || rect[1] - margin >= t[3]
                    || t[1] >= rect[3] + margin
            })
    }

    /// Adds a box given in a frame's coordinates: `along` and `out` relative to the frame.
    #[allow(clippy::too_many_arguments)]
    fn part(
        &mut self,
        frame: Frame,
        kind: ObjectKind,
        along: (f32, f32),
        out: (f32, f32),
        z: (f32, f32),
        material: Material,
        front: bool,
    ) {
        let r = self.wall_rect(
            frame.wall,
            frame.a0 + along.0,
            frame.a0 + along.1,
            out.0,
            out.1,
        );
        self.add(Object {
            kind,
            min: [r[0], r[1], z.0],
            max: [r[2], r[3], z.1],
            material,
            solid: true,
            front: front.then(|| frame.wall.inward_face()),
        });
    }

    fn add(&mut self, object: Object) {
        let room = [
            self.layout.width_m,
            self.layout.length_m,
            self.layout.height_m,
        ];
        let mut object = object;
        for (a, &extent) in room.iter().enumerate() {
            object.min[a] = object.min[a].clamp(0.0, extent);
            object.max[a] = object.max[a].clamp(0.0, extent);
        }
        if (0..3).all(|a| object.min[a] < object.max[a]) {
            self.layout.objects.push(object);
        }
    }

    /// Finds a spot of `width × depth` against one of `walls`, at least `margin` from anything
    /// taken, and reserves it.
    fn place_on_wall(
        &mut self,
        walls: &[Wall],
        width: f32,
        depth: f32,
        margin: f32,
    ) -> Option<Frame> {
        for _ in 0..60 {
            let wall = self.pick(walls);
            let len = self.wall_len(wall);
            if width + 0.1 > len {
                continue;
            }
            let a0 = if self.rng.random_bool(0.3) {
                // Snug into a corner.
                if self.rng.random_bool(0.5) {
                    0.02
                } else {
                    len - width - 0.02
                }
            } else {
                self.range(0.05, len - width - 0.05)
            };
            let rect = self.wall_rect(wall, a0, a0 + width, 0.0, depth);
            if self.fits(rect, margin) {
                self.taken.push(rect);
                return Some(Frame {
                    wall,
                    a0,
                    width,
                    depth,
                });
            }
        }
        None
    }

    /// Reserves `width × depth` at a given spot against a wall, if it is free.
    fn place_at(
        &mut self,
        wall: Wall,
        a0: f32,
        width: f32,
        depth: f32,
        margin: f32,
    ) -> Option<Frame> {
        let len = self.wall_len(wall);
        if a0 < 0.0 || a0 + width > len {
            return None;
        }
        let rect = self.wall_rect(wall, a0, a0 + width, 0.0, depth);
        self.fits(rect, margin).then(|| {
            self.taken.push(rect);
            Frame {
                wall,
                a0,
                width,
                depth,
            }
        })
    }

    /// Finds a free-standing spot of `sx × sy` with `margin` of clearance all round.
    fn place_free(&mut self, sx: f32, sy: f32, margin: f32) -> Option<Rect> {
        let (w, l) = (self.layout.width_m, self.layout.length_m);
        for _ in 0..60 {
            let x0 = self.range(margin, w - sx - margin);
            let y0 = self.range(margin, l - sy - margin);
            let rect = [x0, y0, x0 + sx, y0 + sy];
            if rect[2] <= w - margin && rect[3] <= l - margin && self.fits(rect, margin) {
                self.taken.push(rect);
                return Some(rect);
            }
        }
        None
    }

    /// Whether a wall span `[a0, a1]` up to height `z0` is clear of tall furniture, doors and
    /// other decorations.
    fn wall_span_clear(&self, wall: Wall, a0: f32, a1: f32, z0: f32) -> bool {
        let band = self.wall_rect(wall, a0, a1, 0.0, 0.45);
        let furniture_clear = self.layout.objects.iter().all(|o| {
            !o.solid
                || o.max[2] <= z0
                || band[0] >= o.max[0]
                || o.min[0] >= band[2]
                || band[1] >= o.max[1]
                || o.min[1] >= band[3]
        });
        let decor_clear = self
            .decor
            .iter()
            .all(|&(w, b0, b1)| w != wall || a1 + 0.1 <= b0 || b1 + 0.1 <= a0);
        furniture_clear && decor_clear
    }

    /// A thin box against a wall (window, painting, mirror, towel, backsplash): `thickness`
    /// into the room, from `z.0` to `z.1`.
    #[allow(clippy::too_many_arguments)]
    fn decoration(
        &mut self,
        wall: Wall,
        a: (f32, f32),
        z: (f32, f32),
        thickness: f32,
        kind: ObjectKind,
        material: Material,
    ) {
        let r = self.wall_rect(wall, a.0, a.1, 0.0, thickness);
        self.decor.push((wall, a.0, a.1));
        self.add(Object {
            kind,
            min: [r[0], r[1], z.0],
            max: [r[2], r[3], z.1],
            material,
            solid: false,
            front: Some(wall.inward_face()),
        });
    }

    /// Tries to hang a decoration of `width` somewhere on `walls` between heights `z`.
    fn hang(
        &mut self,
        walls: &[Wall],
        width: f32,
        z: (f32, f32),
        kind: ObjectKind,
        material: Material,
    ) -> bool {
        for _ in 0..40 {
            let wall = self.pick(walls);
            let len = self.wall_len(wall);
            if width + 0.3 > len {
                continue;
            }
            let a0 = self.range(0.15, len - width - 0.15);
            if self.wall_span_clear(wall, a0, a0 + width, z.0) {
                self.decoration(wall, (a0, a0 + width), z, 0.03, kind, material);
                return true;
            }
        }
        false
    }

    fn door(&mut self) {
        let colors = [
            [0.55, 0.38, 0.22],
            [0.92, 0.92, 0.9],
            [0.42, 0.28, 0.17],
            [0.75, 0.62, 0.45],
        ];
        let color = self.pick(&colors);
        let wall = self.pick(&Wall::ALL);
        let len = self.wall_len(wall);
        let width = 0.85;
        let a0 = self.range(0.15, len - width - 0.15);
        self.decoration(
            wall,
            (a0, a0 + width),
            (0.0, 2.05),
            0.04,
            ObjectKind::Door,
            Material::Door { color },
        );
        // Keep the swing of the door clear.
        let clearance = self.wall_rect(wall, a0 - 0.05, a0 + width + 0.05, 0.0, 0.8);
        self.taken.push(clearance);
    }

    fn windows(&mut self, count: usize, z: (f32, f32)) {
        let frames = [[0.95, 0.95, 0.93], [0.3, 0.3, 0.32], [0.55, 0.4, 0.26]];
        let frame = self.pick(&frames);
        for _ in 0..count {
            let width = self.range(0.8, 1.5);
            self.hang(
                &Wall::ALL,
                width,
                z,
                ObjectKind::Window,
                Material::Window { frame },
            );
        }
    }

    fn painting(&mut self, walls: &[Wall]) {
        let sky = self.pick(&[
            [0.55, 0.7, 0.9],
            [0.95, 0.75, 0.45],
            [0.85, 0.85, 0.8],
            [0.3, 0.35, 0.6],
        ]);
        let ground = self.pick(&[
            [0.3, 0.5, 0.25],
            [0.75, 0.6, 0.3],
            [0.2, 0.3, 0.45],
            [0.6, 0.25, 0.2],
        ]);
        let frame = self.pick(&[[0.15, 0.12, 0.1], [0.8, 0.65, 0.3], [0.95, 0.95, 0.95]]);
        let width = self.range(0.5, 1.1);
        let height = self.range(0.4, 0.8);
        let z0 = self.range(1.3, 1.5);
        self.hang(
            walls,
            width,
            (z0, z0 + height),
            ObjectKind::Painting,
            Material::Painting { frame, sky, ground },
        );
    }

    fn rug(&mut self, rect: Rect) {
        let field = self.pick(&[
            [0.6, 0.2, 0.18],
            [0.2, 0.3, 0.5],
            [0.75, 0.7, 0.6],
            [0.35, 0.45, 0.35],
            [0.5, 0.5, 0.55],
        ]);
        let border = self.jitter(scale3(field, 0.6), 0.05);
        let pattern = self.pick(&[[0.9, 0.85, 0.7], [0.85, 0.6, 0.3], [0.2, 0.2, 0.25]]);
        let (w, l) = (self.layout.width_m, self.layout.length_m);
        let rect = [
            rect[0].max(0.05),
            rect[1].max(0.05),
            rect[2].min(w - 0.05),
            rect[3].min(l - 0.05),
        ];
        if rect[2] - rect[0] > 0.4 && rect[3] - rect[1] > 0.4 {
            self.add(
                Object::new(
                    ObjectKind::Rug,
                    [rect[0], rect[1], 0.0],
                    [rect[2], rect[3], 0.012],
                    Material::Rug {
                        field,
                        border,
                        pattern,
                    },
                )
                .with_solid(false),
            );
        }
    }

    fn ceiling_light(&mut self) {
        let [x, y, _] = self.layout.light;
        let h = self.layout.height_m;
        let color = self.pick(&[[1.0, 0.97, 0.9], [0.95, 0.95, 1.0]]);
        self.add(
            Object::new(
                ObjectKind::CeilingLight,
                [x - 0.2, y - 0.2, h - 0.08],
                [x + 0.2, y + 0.2, h],
                Material::Lamp { color },
            )
            .with_solid(false),
        );
    }

    fn wood_tone(&mut self) -> (Rgb, Rgb) {
        let tones = [
            ([0.78, 0.6, 0.4], [0.55, 0.38, 0.22]),  // oak
            ([0.55, 0.36, 0.22], [0.33, 0.2, 0.12]), // walnut
            ([0.85, 0.75, 0.6], [0.68, 0.56, 0.42]), // birch
            ([0.6, 0.58, 0.55], [0.42, 0.4, 0.38]),  // grey-washed
            ([0.7, 0.45, 0.3], [0.48, 0.28, 0.18]),  // cherry
        ];
        let (light, dark) = self.pick(&tones);
        (self.jitter(light, 0.04), self.jitter(dark, 0.03))
    }

    fn wood(&mut self, plank_m: f32) -> Material {
        let (light, dark) = self.wood_tone();
        let along_y = self.rng.random_bool(0.5);
        Material::Wood {
            light,
            dark,
            plank_m,
            along_y,
        }
    }

    fn fabric(&mut self, palette: &[Rgb]) -> Material {
        let base = self.pick(palette);
        Material::Fabric {
            color: self.jitter(base, 0.05),
        }
    }

    // --- rooms -------------------------------------------------------------------------------

    fn bathroom(&mut self) {
        let tile = self.pick(&[
            [0.92, 0.92, 0.9],
            [0.75, 0.85, 0.9],
            [0.8, 0.9, 0.82],
            [0.85, 0.82, 0.75],
            [0.6, 0.72, 0.82],
        ]);
        let tile = self.jitter(tile, 0.03);
        let grout = scale3(tile, 0.7);
        let paint = self.jitter([0.93, 0.93, 0.9], 0.04);
        let tile_m = self.pick(&[0.15, 0.2, 0.25]);
        let tile_height_m = self.range(1.2, 2.1);
        self.layout.walls = [Material::TiledWall {
            tile,
            grout,
            tile_m,
            paint,
            tile_height_m,
        }; 4];
        let floor = self.pick(&[
            ([0.85, 0.85, 0.85], [0.3, 0.3, 0.32]),
            ([0.7, 0.7, 0.72], [0.7, 0.7, 0.72]),
            ([0.9, 0.88, 0.82], [0.55, 0.6, 0.7]),
            ([0.45, 0.5, 0.55], [0.45, 0.5, 0.55]),
            ([0.8, 0.72, 0.62], [0.8, 0.72, 0.62]),
        ]);
        self.layout.floor = Material::Tiles {
            color: floor.0,
            alt: floor.1,
            grout: scale3(floor.0, 0.75),
            tile_m: self.pick(&[0.2, 0.3, 0.4]),
        };
        self.door();
        let ceramic = self.pick(&[[0.96, 0.96, 0.95], [0.93, 0.92, 0.88]]);

        // Bathtub along a wall, preferably in a corner.
        let tub_len = self.range(1.5, 1.75);
        if let Some(f) = self.place_on_wall(&Wall::ALL, tub_len, 0.75, 0.05) {
            self.part(
                f,
                ObjectKind::Bathtub,
                (0.0, f.width),
                (0.0, f.depth),
                (0.0, 0.55),
                Material::Basin {
                    color: ceramic,
                    inner: [0.82, 0.86, 0.9],
                },
                false,
            );
            let towel = self.pick(&[
                [0.9, 0.5, 0.4],
                [0.3, 0.5, 0.7],
                [0.95, 0.95, 0.9],
                [0.5, 0.7, 0.5],
            ]);
            // Bath mat in front of the tub.
            let mat = self.wall_rect(f.wall, f.a0 + 0.3, f.a0 + 0.9, 0.8, 1.3);
            self.add(
                Object::new(
                    ObjectKind::Rug,
                    [mat[0], mat[1], 0.0],
                    [mat[2], mat[3], 0.012],
                    Material::Rug {
                        field: towel,
                        border: scale3(towel, 0.75),
                        pattern: scale3(towel, 1.15),
                    },
                )
                .with_solid(false),
            );
            if self.wall_span_clear(f.wall, f.a0 + 0.2, f.a0 + 0.8, 0.9) && self.chance(0.7) {
                self.decoration(
                    f.wall,
                    (f.a0 + 0.3, f.a0 + 0.9),
                    (1.25, 1.9),
                    0.05,
                    ObjectKind::Towel,
                    Material::Fabric { color: towel },
                );
            }
        }

        // Toilet: tank against the wall, bowl in front.
        if let Some(f) = self.place_on_wall(&Wall::ALL, 0.45, 0.7, 0.1) {
            self.part(
                f,
                ObjectKind::Toilet,
                (0.0, 0.45),
                (0.0, 0.2),
                (0.0, 0.8),
                Material::Ceramic { color: ceramic },
                false,
            );
            self.part(
                f,
                ObjectKind::Toilet,
                (0.04, 0.41),
                (0.2, 0.7),
                (0.0, 0.42),
                Material::Ceramic { color: ceramic },
                false,
            );
        }

        // Vanity with a basin and a mirror above.
        let vanity_w = self.range(0.6, 1.2);
        if let Some(f) = self.place_on_wall(&Wall::ALL, vanity_w, 0.5, 0.1) {
            let cabinet = self.pick(&[
                [0.95, 0.95, 0.95],
                [0.55, 0.4, 0.28],
                [0.35, 0.4, 0.5],
                [0.8, 0.75, 0.65],
            ]);
            self.part(
                f,
                ObjectKind::Vanity,
                (0.0, f.width),
                (0.0, 0.5),
                (0.0, 0.82),
                Material::Cabinets {
                    color: cabinet,
                    door_m: f.width / 2.0,
                },
                true,
            );
            self.part(
                f,
                ObjectKind::Vanity,
                (0.0, f.width),
                (0.0, 0.52),
                (0.82, 0.86),
                Material::Stone {
                    color: [0.85, 0.84, 0.82],
                },
                false,
            );
            let basin_w = 0.45f32.min(f.width - 0.1);
            let b0 = 0.5 * (f.width - basin_w);
            self.part(
                f,
                ObjectKind::Sink,
                (b0, b0 + basin_w),
                (0.08, 0.44),
                (0.86, 0.88),
                Material::Basin {
                    color: ceramic,
                    inner: [0.86, 0.88, 0.9],
                },
                false,
            );
            let top = self.wall_rect(f.wall, f.a0, f.a0 + f.width, 0.0, 0.5);
            // Target goes beside the basin, so offer the whole top (the target check avoids the
            // basin).
            self.supports.push((top, 0.86));
            let frame = self.pick(&[[0.2, 0.2, 0.22], [0.8, 0.8, 0.8], [0.7, 0.55, 0.3]]);
            self.decoration(
                f.wall,
                (f.a0 + 0.05, f.a0 + f.width - 0.05),
                (1.1, 1.85),
                0.03,
                ObjectKind::Mirror,
                Material::Mirror { frame },
            );
        }

        if self.chance(0.5) {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.5, 0.35, 0.1) {
                let color = self.pick(&[[0.95, 0.95, 0.95], [0.6, 0.45, 0.3]]);
                self.part(
                    f,
                    ObjectKind::Cabinet,
                    (0.0, 0.5),
                    (0.0, 0.35),
                    (0.0, 1.8),
                    Material::Cabinets { color, door_m: 0.5 },
                    true,
                );
            }
        }
        if self.chance(0.5) {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.4, 0.35, 0.1) {
                let (light, dark) = ([0.75, 0.65, 0.45], [0.55, 0.45, 0.3]);
                self.part(
                    f,
                    ObjectKind::Basket,
                    (0.0, 0.4),
                    (0.02, 0.35),
                    (0.0, 0.5),
                    Material::Wood {
                        light,
                        dark,
                        plank_m: 0.04,
                        along_y: false,
                    },
                    false,
                );
            }
        }
        if self.chance(0.6) {
            if let Some(r) = self.place_free(0.35, 0.35, 0.5) {
                let wood = self.wood(0.0);
                self.add(Object::new(
                    ObjectKind::Stool,
                    [r[0], r[1], 0.0],
                    [r[2], r[3], 0.45],
                    wood,
                ));
                self.supports.push((r, 0.45));
            }
        }
        if self.chance(0.6) {
            let width = self.range(0.5, 0.9);
            self.hang(
                &Wall::ALL,
                width,
                (1.5, 2.1),
                ObjectKind::Window,
                Material::Window {
                    frame: [0.95, 0.95, 0.93],
                },
            );
        }
    }

    fn bedroom(&mut self) {
        let walls = if self.rng.random_bool(0.3) {
            let base = self.pick(&[[0.9, 0.86, 0.78], [0.8, 0.85, 0.9], [0.9, 0.82, 0.84]]);
            let stripe = self.jitter(scale3(base, 0.85), 0.03);
            Material::Wallpaper {
                base,
                stripe,
                stripe_m: self.pick(&[0.1, 0.15, 0.25]),
            }
        } else {
            let color = self.pick(&[
                [0.85, 0.88, 0.92],
                [0.93, 0.9, 0.82],
                [0.8, 0.85, 0.78],
                [0.92, 0.85, 0.85],
                [0.88, 0.88, 0.86],
                [0.75, 0.8, 0.88],
            ]);
            Material::Paint {
                color: self.jitter(color, 0.03),
            }
        };
        self.layout.walls = [walls; 4];
        if self.rng.random_bool(0.3) {
            // Accent wall behind the bed is chosen below; colour one wall now.
            let accent = self.pick(&[[0.35, 0.45, 0.6], [0.55, 0.65, 0.55], [0.7, 0.5, 0.45]]);
            let wall = self.rng.random_range(0..4);
            self.layout.walls[wall] = Material::Paint { color: accent };
        }
        self.layout.floor = if self.rng.random_bool(0.6) {
            self.wood(0.16)
        } else {
            let color = self.pick(&[
                [0.75, 0.7, 0.62],
                [0.5, 0.52, 0.58],
                [0.6, 0.5, 0.45],
                [0.4, 0.45, 0.55],
            ]);
            Material::Carpet { color }
        };
        self.door();

        // Bed: headboard against the wall, frame, mattress, blanket, pillows.
        let double = self.rng.random_bool(0.7);
        let bed_w = if double {
            self.range(1.4, 1.8)
        } else {
            self.range(0.9, 1.05)
        };
        let bed_l = self.range(1.95, 2.1);
        let frame_wood = self.wood(0.0);
        if let Some(f) = self.place_on_wall(&Wall::ALL, bed_w, bed_l, 0.1) {
            let headboard_h = self.range(0.9, 1.2);
            let headboard = if self.rng.random_bool(0.5) {
                frame_wood
            } else {
                self.fabric(&[[0.35, 0.35, 0.4], [0.75, 0.7, 0.62], [0.3, 0.4, 0.55]])
            };
            self.part(
                f,
                ObjectKind::Headboard,
                (0.0, f.width),
                (0.0, 0.08),
                (0.0, headboard_h),
                headboard,
                false,
            );
            self.part(
                f,
                ObjectKind::Bed,
                (0.0, f.width),
                (0.08, f.depth),
                (0.0, 0.3),
                frame_wood,
                false,
            );
            self.part(
                f,
                ObjectKind::Mattress,
                (0.03, f.width - 0.03),
                (0.1, f.depth - 0.03),
                (0.3, 0.52),
                Material::Fabric {
                    color: [0.95, 0.95, 0.93],
                },
                false,
            );
            let blanket = self.pick(&[
                [0.3, 0.4, 0.6],
                [0.7, 0.3, 0.3],
                [0.85, 0.8, 0.65],
                [0.35, 0.55, 0.45],
                [0.55, 0.5, 0.65],
                [0.9, 0.9, 0.9],
            ]);
            let stripe = self.jitter(scale3(blanket, 0.75), 0.05);
            self.part(
                f,
                ObjectKind::Blanket,
                (0.0, f.width),
                (0.65, f.depth),
                (0.3, 0.56),
                Material::Blanket {
                    color: blanket,
                    stripe,
                },
                false,
            );
            let pillow = Material::Fabric {
                color: [0.97, 0.96, 0.93],
            };
            if double {
                let half = 0.5 * f.width;
                self.part(
                    f,
                    ObjectKind::Pillow,
                    (0.08, half - 0.05),
                    (0.15, 0.5),
                    (0.52, 0.64),
                    pillow,
                    false,
                );
                self.part(
                    f,
                    ObjectKind::Pillow,
                    (half + 0.05, f.width - 0.08),
                    (0.15, 0.5),
                    (0.52, 0.64),
                    pillow,
                    false,
                );
            } else {
                self.part(
                    f,
                    ObjectKind::Pillow,
                    (0.08, f.width - 0.08),
                    (0.15, 0.5),
                    (0.52, 0.64),
                    pillow,
                    false,
                );
            }
            let top = self.wall_rect(f.wall, f.a0 + 0.1, f.a0 + f.width - 0.1, 0.7, f.depth - 0.1);
            self.supports.push((top, 0.56));
            // Nightstands on either side.
            let stand_wood = self.wood(0.0);
            for side in [-1.0f32, 1.0] {
                let a0 = if side < 0.0 {
                    f.a0 - 0.5
                } else {
                    f.a0 + f.width + 0.05
                };
                if self.chance(0.8) {
                    if let Some(n) = self.place_at(f.wall, a0, 0.45, 0.4, 0.02) {
                        self.part(
                            n,
                            ObjectKind::Nightstand,
                            (0.0, 0.45),
                            (0.0, 0.4),
                            (0.0, 0.55),
                            stand_wood,
                            false,
                        );
                        let top = self.wall_rect(n.wall, n.a0, n.a0 + 0.45, 0.0, 0.4);
                        if self.chance(0.5) {
                            // Lamp at the back of the nightstand.
                            self.part(
                                n,
                                ObjectKind::Lamp,
                                (0.2, 0.25),
                                (0.1, 0.15),
                                (0.55, 0.8),
                                Material::Metal {
                                    color: [0.7, 0.68, 0.6],
                                },
                                false,
                            );
                            let shade = self.pick(&[[0.95, 0.9, 0.75], [0.9, 0.9, 0.9]]);
                            self.part(
                                n,
                                ObjectKind::Lamp,
                                (0.1, 0.35),
                                (0.02, 0.24),
                                (0.8, 1.02),
                                Material::Lamp { color: shade },
                                false,
                            );
                        }
                        self.supports.push((top, 0.55));
                    }
                }
            }
            if self.wall_span_clear(f.wall, f.a0, f.a0 + f.width, 1.25) && self.chance(0.7) {
                let width = (f.width * 0.6).min(1.1);
                let a0 = f.a0 + 0.5 * (f.width - width);
                let sky = self.pick(&[[0.55, 0.7, 0.9], [0.95, 0.75, 0.45], [0.85, 0.85, 0.8]]);
                let ground = self.pick(&[[0.3, 0.5, 0.25], [0.2, 0.3, 0.45], [0.6, 0.25, 0.2]]);
                self.decoration(
                    f.wall,
                    (a0, a0 + width),
                    (1.35, 1.85),
                    0.03,
                    ObjectKind::Painting,
                    Material::Painting {
                        frame: [0.15, 0.12, 0.1],
                        sky,
                        ground,
                    },
                );
            }
            // Rug at the foot or side of the bed.
            if self.chance(0.6) {
                let rug = self.wall_rect(
                    f.wall,
                    f.a0 - 0.4,
                    f.a0 + f.width + 0.4,
                    f.depth - 0.6,
                    f.depth + 0.8,
                );
                self.rug(rug);
            }
        }

        let wardrobe_w = self.range(1.0, 1.8);
        if let Some(f) = self.place_on_wall(&Wall::ALL, wardrobe_w, 0.6, 0.1) {
            let wood = self.wood(0.0);
            let color = match wood {
                Material::Wood { light, .. } => light,
                _ => [0.8, 0.7, 0.55],
            };
            let color = if self.rng.random_bool(0.4) {
                [0.93, 0.93, 0.92]
            } else {
                color
            };
            let height = self.range(1.9, 2.2);
            self.part(
                f,
                ObjectKind::Wardrobe,
                (0.0, f.width),
                (0.0, 0.6),
                (0.0, height),
                Material::Cabinets {
                    color,
                    door_m: f.width / 2.0,
                },
                true,
            );
        }

        if self.chance(0.7) {
            let desk_w = self.range(1.0, 1.4);
            if let Some(f) = self.place_on_wall(&Wall::ALL, desk_w, 1.15, 0.1) {
                let wood = self.wood(0.0);
                self.part(
                    f,
                    ObjectKind::Desk,
                    (0.0, f.width),
                    (0.0, 0.6),
                    (0.72, 0.76),
                    wood,
                    false,
                );
                self.part(
                    f,
                    ObjectKind::Desk,
                    (0.0, 0.45),
                    (0.02, 0.58),
                    (0.0, 0.72),
                    Material::Cabinets {
                        color: match wood {
                            Material::Wood { light, .. } => light,
                            _ => [0.7, 0.6, 0.5],
                        },
                        door_m: 0.45,
                    },
                    true,
                );
                self.part(
                    f,
                    ObjectKind::Desk,
                    (f.width - 0.04, f.width),
                    (0.02, 0.58),
                    (0.0, 0.72),
                    wood,
                    false,
                );
                let top = self.wall_rect(f.wall, f.a0, f.a0 + f.width, 0.0, 0.6);
                self.supports.push((top, 0.76));
                self.chair(f, 0.5 * (f.width + 0.45) - 0.22, 0.65);
            }
        }
        if self.chance(0.5) {
            let w = self.range(0.8, 1.2);
            if let Some(f) = self.place_on_wall(&Wall::ALL, w, 0.5, 0.1) {
                let color = self.pick(&[[0.93, 0.93, 0.92], [0.6, 0.42, 0.28], [0.75, 0.65, 0.5]]);
                self.part(
                    f,
                    ObjectKind::Dresser,
                    (0.0, f.width),
                    (0.0, 0.5),
                    (0.0, 0.85),
                    Material::Cabinets {
                        color,
                        door_m: f.width / 3.0,
                    },
                    true,
                );
                let top = self.wall_rect(f.wall, f.a0, f.a0 + f.width, 0.0, 0.5);
                self.supports.push((top, 0.85));
            }
        }
        let n = if self.chance(0.5) { 2 } else { 1 };
        self.windows(n, (0.9, 2.1));
        if self.chance(0.5) {
            self.painting(&Wall::ALL);
        }
    }

    /// A chair in front of a table or desk frame: seat block and backrest, `d0` out from the
    /// wall, `a0` along it.
    fn chair(&mut self, f: Frame, a0: f32, d0: f32) {
        let color = self.pick(&[
            [0.3, 0.3, 0.32],
            [0.55, 0.38, 0.25],
            [0.8, 0.2, 0.2],
            [0.85, 0.85, 0.85],
        ]);
        let m = Material::Fabric { color };
        self.part(
            f,
            ObjectKind::Chair,
            (a0, a0 + 0.44),
            (d0, d0 + 0.44),
            (0.0, 0.46),
            m,
            false,
        );
        self.part(
            f,
            ObjectKind::Chair,
            (a0, a0 + 0.44),
            (d0 + 0.38, d0 + 0.44),
            (0.46, 0.9),
            m,
            false,
        );
    }

    fn kitchen(&mut self) {
        let color = self.pick(&[
            [0.95, 0.94, 0.9],
            [0.93, 0.88, 0.7],
            [0.78, 0.85, 0.75],
            [0.85, 0.9, 0.93],
            [0.9, 0.8, 0.7],
        ]);
        self.layout.walls = [Material::Paint {
            color: self.jitter(color, 0.03),
        }; 4];
        let floor = self.pick(&[
            ([0.92, 0.92, 0.9], [0.15, 0.15, 0.17]),
            ([0.75, 0.45, 0.3], [0.85, 0.75, 0.6]),
            ([0.6, 0.6, 0.62], [0.6, 0.6, 0.62]),
            ([0.85, 0.82, 0.75], [0.85, 0.82, 0.75]),
            ([0.5, 0.42, 0.35], [0.6, 0.52, 0.44]),
        ]);
        self.layout.floor = Material::Tiles {
            color: floor.0,
            alt: floor.1,
            grout: scale3(lerp3(floor.0, floor.1, 0.5), 0.7),
            tile_m: self.pick(&[0.3, 0.4, 0.5]),
        };
        self.door();

        let cabinet = self.pick(&[
            [0.95, 0.95, 0.93],
            [0.6, 0.42, 0.28],
            [0.35, 0.45, 0.6],
            [0.45, 0.55, 0.45],
            [0.3, 0.3, 0.32],
            [0.8, 0.7, 0.55],
        ]);
        let stone = self.pick(&[
            [0.2, 0.2, 0.22],
            [0.85, 0.85, 0.83],
            [0.55, 0.5, 0.45],
            [0.7, 0.68, 0.65],
        ]);
        let splash = self.pick(&[
            [0.95, 0.95, 0.95],
            [0.6, 0.75, 0.85],
            [0.85, 0.7, 0.5],
            [0.4, 0.55, 0.5],
        ]);
        let metal = [0.78, 0.79, 0.8];

        // Counter runs: one wall, or two adjacent walls (L shape).
        let first = self.pick(&Wall::ALL);
        let walls = if self.chance(0.5) {
            vec![first, first.next()]
        } else {
            vec![first]
        };
        let mut fridge_done = false;
        for (run, &wall) in walls.iter().enumerate() {
            let len = self.wall_len(wall);
            // The second run of an L starts past the first run's depth.
            let start = if run == 1 { 0.62 } else { 0.0 };
            let max_len = len - start - 0.3;
            if max_len < 1.2 {
                continue;
            }
            let run_len = self.range(1.2f32.max(max_len * 0.5), max_len);
            let at_start = self.rng.random_bool(0.5) || run == 1;
            let a0 = if at_start { start } else { len - run_len };
            let Some(f) = self.place_at(wall, a0, run_len, 0.62, 0.0) else {
                continue;
            };
            let mut c0 = 0.0;
            let mut c1 = f.width;
            if !fridge_done && f.width > 2.0 {
                // Fridge at the end of the run away from the corner the run starts in.
                let (fa, fb) = if at_start || run == 1 {
                    (f.width - 0.72, f.width)
                } else {
                    (0.0, 0.72)
                };
                let fh = self.range(1.75, 2.0);
                let fridge_color = self.pick(&[metal, [0.95, 0.95, 0.95], [0.25, 0.25, 0.27]]);
                self.part(
                    f,
                    ObjectKind::Fridge,
                    (fa, fb),
                    (0.0, 0.68),
                    (0.0, fh),
                    Material::Fridge {
                        color: fridge_color,
                    },
                    true,
                );
                if fa == 0.0 {
                    c0 = 0.74
                } else {
                    c1 = fa - 0.02
                }
                fridge_done = true;
            }
            self.part(
                f,
                ObjectKind::Counter,
                (c0, c1),
                (0.0, 0.6),
                (0.0, 0.86),
                Material::Cabinets {
                    color: cabinet,
                    door_m: 0.6,
                },
                true,
            );
            self.part(
                f,
                ObjectKind::Countertop,
                (c0, c1),
                (0.0, 0.63),
                (0.86, 0.9),
                Material::Stone { color: stone },
                false,
            );
            let top = self.wall_rect(f.wall, f.a0 + c0, f.a0 + c1, 0.0, 0.6);
            self.supports.push((top, 0.9));
            // Stove and sink on the countertop.
            let span = c1 - c0;
            if run == 0 && span > 1.3 {
                let s0 = c0 + self.range(0.05, span - 0.65);
                self.part(
                    f,
                    ObjectKind::Stove,
                    (s0, s0 + 0.6),
                    (0.02, 0.58),
                    (0.9, 0.915),
                    Material::Stove,
                    false,
                );
                self.part(
                    f,
                    ObjectKind::Oven,
                    (s0 + 0.02, s0 + 0.58),
                    (0.6, 0.62),
                    (0.12, 0.78),
                    Material::OvenDoor,
                    false,
                );
            }
            if span > 1.0 && (run == 1 || walls.len() == 1) {
                let sink_w = 0.7f32.min(span - 0.2);
                let s0 = c0 + self.range(0.05, span - sink_w - 0.05);
                let sink = Object::new(
                    ObjectKind::Sink,
                    [0.0; 3],
                    [0.0; 3],
                    Material::Basin {
                        color: metal,
                        inner: [0.6, 0.62, 0.64],
                    },
                );
                let r = self.wall_rect(f.wall, f.a0 + s0, f.a0 + s0 + sink_w, 0.06, 0.52);
                let overlaps = self.layout.objects.iter().any(|o| {
                    o.kind == ObjectKind::Stove
                        && r[0] < o.max[0]
                        && o.min[0] < r[2]
                        && r[1] < o.max[1]
                        && o.min[1] < r[3]
                });
                if !overlaps {
                    self.add(Object {
                        min: [r[0], r[1], 0.9],
                        max: [r[2], r[3], 0.905],
                        ..sink
                    });
                }
            }
            // Backsplash tiles and upper cabinets.
            self.decoration(
                f.wall,
                (f.a0 + c0, f.a0 + c1),
                (0.9, 1.45),
                0.015,
                ObjectKind::Backsplash,
                Material::Tiles {
                    color: splash,
                    alt: splash,
                    grout: scale3(splash, 0.75),
                    tile_m: 0.1,
                },
            );
            if self.chance(0.75) {
                let upper = self.wall_rect(f.wall, f.a0 + c0, f.a0 + c1, 0.0, 0.35);
                self.add(Object {
                    kind: ObjectKind::UpperCabinet,
                    min: [upper[0], upper[1], 1.45],
                    max: [upper[2], upper[3], 2.15],
                    material: Material::Cabinets {
                        color: cabinet,
                        door_m: 0.5,
                    },
                    solid: true,
                    front: Some(f.wall.inward_face()),
                });
            }
        }

        // Dining table with chairs.
        if self.chance(0.8) || self.supports.is_empty() {
            let (tw, tl) = (self.range(0.8, 1.4), self.range(0.75, 0.9));
            if let Some(r) = self.place_free(tw + 1.0, tl, 0.45) {
                let t = [r[0] + 0.5, r[1], r[2] - 0.5, r[3]];
                let wood = self.wood(0.0);
                self.add(Object::new(
                    ObjectKind::Table,
                    [t[0], t[1], 0.72],
                    [t[2], t[3], 0.76],
                    wood,
                ));
                let (cx, cy) = (0.5 * (t[0] + t[2]), 0.5 * (t[1] + t[3]));
                self.add(Object::new(
                    ObjectKind::Table,
                    [cx - 0.07, cy - 0.07, 0.0],
                    [cx + 0.07, cy + 0.07, 0.72],
                    wood,
                ));
                self.supports.push((t, 0.76));
                // Chairs at both ends (in the margin reserved above).
                let color = self.pick(&[
                    [0.55, 0.38, 0.25],
                    [0.3, 0.3, 0.32],
                    [0.85, 0.85, 0.85],
                    [0.7, 0.25, 0.2],
                ]);
                let m = Material::Fabric { color };
                for (x0, back) in [(t[0] - 0.48, t[0] - 0.48), (t[2] + 0.04, t[2] + 0.42)] {
                    self.add(Object::new(
                        ObjectKind::Chair,
                        [x0, cy - 0.22, 0.0],
                        [x0 + 0.44, cy + 0.22, 0.46],
                        m,
                    ));
                    self.add(Object::new(
                        ObjectKind::Chair,
                        [back, cy - 0.22, 0.46],
                        [back + 0.06, cy + 0.22, 0.92],
                        m,
                    ));
                }
            }
        }
        let window = self.chance(0.8);
        if window {
            self.windows(1, (1.0, 2.05));
        }
        if self.chance(0.3) {
            self.painting(&Wall::ALL);
        }
        if self.chance(0.3) {
            if let Some(r) = self.place_free(1.2, 0.7, 0.3) {
                self.taken.pop();
                self.rug(r);
            }
        }
    }

    fn living_room(&mut self) {
        let color = self.pick(&[
            [0.9, 0.88, 0.82],
            [0.82, 0.82, 0.8],
            [0.88, 0.84, 0.76],
            [0.78, 0.82, 0.85],
            [0.85, 0.8, 0.75],
        ]);
        self.layout.walls = [Material::Paint {
            color: self.jitter(color, 0.03),
        }; 4];
        self.layout.floor = if self.rng.random_bool(0.8) {
            let plank_m = self.pick_plank();
            self.wood(plank_m)
        } else {
            Material::Tiles {
                color: [0.82, 0.8, 0.76],
                alt: [0.78, 0.76, 0.72],
                grout: [0.6, 0.58, 0.55],
                tile_m: 0.6,
            }
        };
        if self.rng.random_bool(0.4) {
            let accent = self.pick(&[
                [0.3, 0.4, 0.5],
                [0.55, 0.6, 0.5],
                [0.65, 0.45, 0.4],
                [0.4, 0.35, 0.45],
            ]);
            let wall = self.rng.random_range(0..4);
            self.layout.walls[wall] = Material::Paint { color: accent };
        }
        self.door();

        // Sofa against a wall, coffee table and rug in front of it.
        let sofa_w = self.range(1.8, 2.5);
        let sofa = self.fabric(&[
            [0.45, 0.45, 0.5],
            [0.25, 0.3, 0.45],
            [0.6, 0.5, 0.4],
            [0.3, 0.45, 0.4],
            [0.7, 0.68, 0.62],
            [0.55, 0.25, 0.22],
        ]);
        if let Some(f) = self.place_on_wall(&Wall::ALL, sofa_w, 0.9, 0.1) {
            self.part(
                f,
                ObjectKind::Sofa,
                (0.2, f.width - 0.2),
                (0.0, 0.9),
                (0.0, 0.42),
                sofa,
                false,
            );
            self.part(
                f,
                ObjectKind::Sofa,
                (0.2, f.width - 0.2),
                (0.0, 0.22),
                (0.42, 0.85),
                sofa,
                false,
            );
            self.part(
                f,
                ObjectKind::Sofa,
                (0.0, 0.2),
                (0.0, 0.9),
                (0.0, 0.62),
                sofa,
                false,
            );
            self.part(
                f,
                ObjectKind::Sofa,
                (f.width - 0.2, f.width),
                (0.0, 0.9),
                (0.0, 0.62),
                sofa,
                false,
            );
            let table_w = self.range(0.9, 1.3).min(f.width - 0.4);
            let table_d = self.range(0.5, 0.65);
            let a0 = f.a0 + 0.5 * (f.width - table_w);
            let rect = self.wall_rect(f.wall, a0, a0 + table_w, 1.35, 1.35 + table_d);
            if self.fits(rect, 0.3) {
                self.taken.push(rect);
                let wood = self.wood(0.0);
                self.add(Object::new(
                    ObjectKind::CoffeeTable,
                    [rect[0], rect[1], 0.0],
                    [rect[2], rect[3], 0.42],
                    wood,
                ));
                self.supports.push((rect, 0.42));
            }
            if self.chance(0.8) {
                let rug = self.wall_rect(f.wall, f.a0 - 0.1, f.a0 + f.width + 0.1, 0.95, 2.4);
                self.rug(rug);
            }
            if self.wall_span_clear(f.wall, f.a0, f.a0 + f.width, 1.25) && self.chance(0.7) {
                let width = (f.width * 0.5).min(1.2);
                let a0 = f.a0 + 0.5 * (f.width - width);
                let sky = self.pick(&[[0.55, 0.7, 0.9], [0.95, 0.75, 0.45], [0.3, 0.35, 0.6]]);
                let ground = self.pick(&[[0.3, 0.5, 0.25], [0.75, 0.6, 0.3], [0.2, 0.3, 0.45]]);
                self.decoration(
                    f.wall,
                    (a0, a0 + width),
                    (1.3, 1.9),
                    0.03,
                    ObjectKind::Painting,
                    Material::Painting {
                        frame: [0.8, 0.65, 0.3],
                        sky,
                        ground,
                    },
                );
            }
            // Side table beside the sofa.
            if self.chance(0.5) {
                let a0 = f.a0 + f.width + 0.05;
                if let Some(s) = self.place_at(f.wall, a0, 0.45, 0.45, 0.02) {
                    let wood = self.wood(0.0);
                    self.part(
                        s,
                        ObjectKind::SideTable,
                        (0.0, 0.45),
                        (0.0, 0.45),
                        (0.0, 0.55),
                        wood,
                        false,
                    );
                    let top = self.wall_rect(s.wall, s.a0, s.a0 + 0.45, 0.0, 0.45);
                    self.supports.push((top, 0.55));
                }
            }
            // TV on the opposite wall.
            let tv_w = self.range(1.2, 1.8);
            let opposite = f.wall.opposite();
            if let Some(t) = self.place_on_wall(&[opposite], tv_w, 0.45, 0.1) {
                let color = self.pick(&[[0.2, 0.2, 0.22], [0.93, 0.93, 0.92], [0.55, 0.4, 0.28]]);
                self.part(
                    t,
                    ObjectKind::TvStand,
                    (0.0, t.width),
                    (0.0, 0.45),
                    (0.0, 0.5),
                    Material::Cabinets {
                        color,
                        door_m: t.width / 3.0,
                    },
                    true,
                );
                let screen_w = (t.width - 0.2).min(1.4);
                let s0 = 0.5 * (t.width - screen_w);
                self.part(
                    t,
                    ObjectKind::Tv,
                    (s0, s0 + screen_w),
                    (0.05, 0.1),
                    (0.75, 0.75 + screen_w * 0.56),
                    Material::Screen,
                    true,
                );
                let top = self.wall_rect(t.wall, t.a0, t.a0 + t.width, 0.1, 0.45);
                self.supports.push((top, 0.5));
            }
        }

        if self.chance(0.7) {
            let w = self.range(0.8, 1.2);
            if let Some(f) = self.place_on_wall(&Wall::ALL, w, 0.35, 0.1) {
                let wood = self.pick(&[[0.55, 0.38, 0.22], [0.9, 0.9, 0.88], [0.3, 0.25, 0.2]]);
                let height = self.range(1.7, 2.0);
                self.part(
                    f,
                    ObjectKind::Bookshelf,
                    (0.0, f.width),
                    (0.0, 0.35),
                    (0.0, height),
                    Material::Books { wood },
                    true,
                );
            }
        }
        if self.chance(0.6) {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.85, 0.85, 0.15) {
                let m = self.fabric(&[
                    [0.6, 0.45, 0.3],
                    [0.3, 0.35, 0.5],
                    [0.75, 0.72, 0.65],
                    [0.5, 0.2, 0.2],
                ]);
                self.part(
                    f,
                    ObjectKind::Armchair,
                    (0.0, 0.85),
                    (0.0, 0.85),
                    (0.0, 0.42),
                    m,
                    false,
                );
                self.part(
                    f,
                    ObjectKind::Armchair,
                    (0.0, 0.85),
                    (0.0, 0.2),
                    (0.42, 0.95),
                    m,
                    false,
                );
            }
        }
        let plants = if self.chance(0.5) { 2 } else { 1 };
        for _ in 0..plants {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.5, 0.5, 0.1) {
                let pot = self.pick(&[[0.7, 0.4, 0.28], [0.9, 0.9, 0.88], [0.25, 0.25, 0.28]]);
                self.part(
                    f,
                    ObjectKind::PlantPot,
                    (0.08, 0.42),
                    (0.08, 0.42),
                    (0.0, 0.4),
                    Material::Ceramic { color: pot },
                    false,
                );
                let leaf = self.pick(&[[0.25, 0.5, 0.2], [0.3, 0.45, 0.25], [0.2, 0.4, 0.3]]);
                let h = self.range(0.9, 1.4);
                self.part(
                    f,
                    ObjectKind::Plant,
                    (0.0, 0.5),
                    (0.0, 0.5),
                    (0.4, h),
                    Material::Plant { color: leaf },
                    false,
                );
            }
        }
        if self.chance(0.4) {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.4, 0.4, 0.1) {
                self.part(
                    f,
                    ObjectKind::FloorLamp,
                    (0.17, 0.23),
                    (0.17, 0.23),
                    (0.0, 1.45),
                    Material::Metal {
                        color: [0.25, 0.25, 0.27],
                    },
                    false,
                );
                self.part(
                    f,
                    ObjectKind::FloorLamp,
                    (0.02, 0.38),
                    (0.02, 0.38),
                    (1.45, 1.75),
                    Material::Lamp {
                        color: [0.95, 0.9, 0.75],
                    },
                    false,
                );
            }
        }
        let n = if self.chance(0.6) { 2 } else { 1 };
        self.windows(n, (0.8, 2.2));
        if self.chance(0.5) {
            self.painting(&Wall::ALL);
        }
    }

    fn pick_plank(&mut self) -> f32 {
        self.pick(&[0.12, 0.16, 0.2])
    }

    // --- target ------------------------------------------------------------------------------

    /// Puts a small box of a saturated colour on a support surface (or, failing that, on the
    /// floor), clear of every other object.
    fn target(&mut self) {
        let color = self.pick(&[
            [0.9, 0.1, 0.1],
            [0.95, 0.5, 0.05],
            [0.95, 0.85, 0.1],
            [0.85, 0.1, 0.75],
            [0.1, 0.8, 0.85],
            [0.4, 0.85, 0.1],
            [0.15, 0.3, 0.95],
        ]);
        let sx = self.range(0.16, 0.3);
        let sy = self.range(0.16, 0.3);
        let sz = self.range(0.14, 0.3);
        let material = Material::Target { color };
        let on_floor = self.supports.is_empty() || self.chance(0.15);
        for attempt in 0..200 {
            let (rect, z) = if on_floor || attempt >= 150 {
                let (w, l) = (self.layout.width_m, self.layout.length_m);
                ([0.3, 0.3, w - 0.3, l - 0.3], 0.0)
            } else {
                let supports = self.supports.clone();
                self.pick(&supports)
            };
            if rect[2] - rect[0] < sx + 0.06 || rect[3] - rect[1] < sy + 0.06 {
                continue;
            }
            let x0 = self.range(rect[0] + 0.03, rect[2] - sx - 0.03);
            let y0 = self.range(rect[1] + 0.03, rect[3] - sy - 0.03);
            let candidate = Object::new(
                ObjectKind::Target,
                [x0, y0, z],
                [x0 + sx, y0 + sy, z + sz],
                material,
            );
            // Clear of everything (a box touching the support's top at z does not overlap it);
            // on the floor, also leave room to walk around.
            let clear = self
                .layout
                .objects
                .iter()
                .all(|o| !o.overlaps_3d(&candidate))
                && (z > 0.0 || self.fits([x0, y0, x0 + sx, y0 + sy], 0.45));
            if clear {
                self.layout.target = Some(self.layout.objects.len());
                self.layout.objects.push(candidate);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_type_names_round_trip() {
        for t in RoomType::ALL {
            assert_eq!(RoomType::from_name(t.name()), Some(t));
            assert_eq!(RoomType::from_index(t.index()), Some(t));
        }
        assert_eq!(
            RoomType::from_name("Living Room"),
            Some(RoomType::LivingRoom)
        );
        assert_eq!(
            RoomType::from_name("livingroom"),
            Some(RoomType::LivingRoom)
        );
        assert_eq!(RoomType::from_name("garage"), None);
    }

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

    #[test]
    fn line_of_sight_is_blocked_by_a_box() {
        let room = Layout::empty(4.0, 4.0, 2.5)
            .unwrap()
            .with_object(Object::new(
                ObjectKind::Block,
                [1.5, 1.5, 0.0],
                [2.5, 2.5, 2.0],
                Material::Paint { color: [0.5; 3] },
            ))
            .unwrap();
        assert!(!room.line_of_sight([1.0, 2.0, 1.0], [3.0, 2.0, 1.0], None));
        assert!(room.line_of_sight([1.0, 2.0, 2.2], [3.0, 2.0, 2.2], None));
        assert!(room.line_of_sight([1.0, 2.0, 1.0], [3.0, 2.0, 1.0], Some(0)));
    }
}
