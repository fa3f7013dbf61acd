//! Kitchens: counter runs with a fridge, stove and sink, upper cabinets, a dining table with
//! chairs.

use rand::Rng;

use super::palette::{lerp3, scale3};
use super::Builder;
use crate::room::layout::{Material, Object, ObjectKind, Wall};

impl Builder {
    pub(super) fn kitchen(&mut self) {
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
}
