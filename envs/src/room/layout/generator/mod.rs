//! The procedural generator of the 120 rooms: a `Builder` per attempt draws the room's size,
//! surfaces and furniture from a seed, and `generate` retries with the next seed until the
//! layout passes the free-area and target-visibility checks.
//!
//! The builder's parts: random draws and the build order (here), furniture placement
//! (`placement`), colour and material draws (`palette`), the door, windows, wall decorations,
//! rugs and ceiling light (`decor`), one module per room type, and the target (`target`).

mod bathroom;
mod bedroom;
mod decor;
mod kitchen;
mod living_room;
mod palette;
mod placement;
mod target;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{
    Layout, Rgb, RoomType, Wall, DEFAULT_CAMERA_HEIGHT_M, FREE_GRID_M, MIN_FREE_AREA_M2,
    MIN_VIEWPOINTS,
};

/// Attempts at generating a layout before the last one is kept with only essential furniture.
const GENERATION_ATTEMPTS: u64 = 64;

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

pub(super) fn generate(room_type: RoomType, index: usize) -> Layout {
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
}
