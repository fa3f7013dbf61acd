//! Directions in the room's frame: the six faces of a box and the four walls.

use serde::{Deserialize, Serialize};

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
    pub(crate) fn normal(self) -> [f32; 3] {
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
    pub(crate) fn is_vertical(self) -> bool {
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
    /// All four, indexed as [`Layout::walls`](super::Layout::walls) is.
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

    pub(super) fn next(self) -> Wall {
        Wall::ALL[(self as usize + 1) % 4]
    }

    pub(super) fn opposite(self) -> Wall {
        Wall::ALL[(self as usize + 2) % 4]
    }
}
