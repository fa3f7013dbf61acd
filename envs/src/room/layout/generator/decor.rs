//! What every room type shares: the door, windows, pictures and other wall decorations,
//! rugs, and the ceiling light.

use super::palette::scale3;
use super::{Builder, Rect};
use crate::room::layout::{Material, Object, ObjectKind, Wall};

impl Builder {
    /// Whether a wall span `[a0, a1]` up to height `z0` is clear of tall furniture, doors and
    /// other decorations.
    pub(super) fn wall_span_clear(&self, wall: Wall, a0: f32, a1: f32, z0: f32) -> bool {
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
    pub(super) fn decoration(
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
    pub(super) fn hang(
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

    pub(super) fn door(&mut self) {
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

    pub(super) fn windows(&mut self, count: usize, z: (f32, f32)) {
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

    pub(super) fn painting(&mut self, walls: &[Wall]) {
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

    pub(super) fn rug(&mut self, rect: Rect) {
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

    pub(super) fn ceiling_light(&mut self) {
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
}
