//! The target object: a small box of a saturated colour on a support surface or the floor.

use super::Builder;
use crate::room::layout::{Material, Object, ObjectKind};

impl Builder {
    /// Puts a small box of a saturated colour on a support surface (or, failing that, on the
    /// floor), clear of every other object.
    pub(super) fn target(&mut self) {
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
