//! Living rooms: a sofa with a coffee table and rug, a TV opposite, a bookshelf, an
//! armchair, plants and a floor lamp.

use rand::Rng;

use super::Builder;
use crate::room::layout::{Material, Object, ObjectKind, Wall};

impl Builder {
    pub(super) fn living_room(&mut self) {
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
}
