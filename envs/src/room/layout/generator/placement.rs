//! Furniture placement: footprints in a wall's frame, boxes added in that frame, and
//! rejection sampling of free spots against the footprints already taken.

use rand::Rng;

use super::{Builder, Frame, Rect};
use crate::room::layout::{Material, Object, ObjectKind, Wall};

impl Builder {
    /// The world footprint of `[a0, a1] × [d0, d1]` in a wall's frame.
    pub(super) fn wall_rect(&self, wall: Wall, a0: f32, a1: f32, d0: f32, d1: f32) -> Rect {
        let (w, l) = (self.layout.width_m, self.layout.length_m);
        match wall {
            Wall::South => [a0, d0, a1, d1],
            Wall::North => [a0, l - d1, a1, l - d0],
            Wall::West => [d0, a0, d1, a1],
            Wall::East => [w - d1, a0, w - d0, a1],
        }
    }

    /// Whether `rect` grown by `margin` stays inside the room and overlaps nothing taken.
    pub(super) fn fits(&self, rect: Rect, margin: f32) -> bool {
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
    pub(super) fn part(
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

    pub(super) fn add(&mut self, object: Object) {
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
    pub(super) fn place_on_wall(
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
    pub(super) fn place_at(
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
    pub(super) fn place_free(&mut self, sx: f32, sy: f32, margin: f32) -> Option<Rect> {
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
}
