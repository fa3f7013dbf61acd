//! Surface materials: what floors, walls, ceilings and boxes look like.

use serde::{Deserialize, Serialize};

/// An RGB colour, each channel in `[0, 1]`.
pub type Rgb = [f32; 3];

/// What a surface looks like. Colours are albedos in `[0, 1]`; lengths are in metres. The
/// patterns are evaluated procedurally per pixel (see `render/texture.rs`), so images have real
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
