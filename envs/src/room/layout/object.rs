//! The axis-aligned boxes that furnish a room: what each one is, where it stands and how it
//! looks.

use serde::{Deserialize, Serialize};

use super::{Face, Material};

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
    pub(super) fn blocks_disc(&self, x: f32, y: f32, radius: f32) -> bool {
        let dx = (self.min[0] - x).max(x - self.max[0]).max(0.0);
        let dy = (self.min[1] - y).max(y - self.max[1]).max(0.0);
        dx * dx + dy * dy < radius * radius
    }

    pub(super) fn overlaps_3d(&self, other: &Object) -> bool {
        (0..3).all(|a| self.min[a] < other.max[a] && other.min[a] < self.max[a])
    }
}
