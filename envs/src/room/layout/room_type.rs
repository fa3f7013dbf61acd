//! The four room types and their names.

use serde::{Deserialize, Serialize};

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
}
