//! Bedrooms: paint or wallpaper, wood or carpet, a bed with nightstands, a wardrobe, a desk
//! with a chair, a dresser.

use rand::Rng;

use super::palette::scale3;
use super::{Builder, Frame};
use crate::room::layout::{Material, ObjectKind, Wall};

impl Builder {
    pub(super) fn bedroom(&mut self) {
        let walls = if self.rng.random_bool(0.3) {
            let base = self.pick(&[[0.9, 0.86, 0.78], [0.8, 0.85, 0.9], [0.9, 0.82, 0.84]]);
            let stripe = self.jitter(scale3(base, 0.85), 0.03);
            Material::Wallpaper {
                base,
                stripe,
                stripe_m: self.pick(&[0.1, 0.15, 0.25]),
            }
        } else {
            let color = self.pick(&[
                [0.85, 0.88, 0.92],
                [0.93, 0.9, 0.82],
                [0.8, 0.85, 0.78],
                [0.92, 0.85, 0.85],
                [0.88, 0.88, 0.86],
                [0.75, 0.8, 0.88],
            ]);
            Material::Paint {
                color: self.jitter(color, 0.03),
            }
        };
        self.layout.walls = [walls; 4];
        if self.rng.random_bool(0.3) {
            // Accent wall behind the bed is chosen below; colour one wall now.
            let accent = self.pick(&[[0.35, 0.45, 0.6], [0.55, 0.65, 0.55], [0.7, 0.5, 0.45]]);
            let wall = self.rng.random_range(0..4);
            self.layout.walls[wall] = Material::Paint { color: accent };
        }
        self.layout.floor = if self.rng.random_bool(0.6) {
            self.wood(0.16)
        } else {
            let color = self.pick(&[
                [0.75, 0.7, 0.62],
                [0.5, 0.52, 0.58],
                [0.6, 0.5, 0.45],
                [0.4, 0.45, 0.55],
            ]);
            Material::Carpet { color }
        };
        self.door();

        // Bed: headboard against the wall, frame, mattress, blanket, pillows.
        let double = self.rng.random_bool(0.7);
        let bed_w = if double {
            self.range(1.4, 1.8)
        } else {
            self.range(0.9, 1.05)
        };
        let bed_l = self.range(1.95, 2.1);
        let frame_wood = self.wood(0.0);
        if let Some(f) = self.place_on_wall(&Wall::ALL, bed_w, bed_l, 0.1) {
            let headboard_h = self.range(0.9, 1.2);
            let headboard = if self.rng.random_bool(0.5) {
                frame_wood
            } else {
                self.fabric(&[[0.35, 0.35, 0.4], [0.75, 0.7, 0.62], [0.3, 0.4, 0.55]])
            };
            self.part(
                f,
                ObjectKind::Headboard,
                (0.0, f.width),
                (0.0, 0.08),
                (0.0, headboard_h),
                headboard,
                false,
            );
            self.part(
                f,
                ObjectKind::Bed,
                (0.0, f.width),
                (0.08, f.depth),
                (0.0, 0.3),
                frame_wood,
                false,
            );
            self.part(
                f,
                ObjectKind::Mattress,
                (0.03, f.width - 0.03),
                (0.1, f.depth - 0.03),
                (0.3, 0.52),
                Material::Fabric {
                    color: [0.95, 0.95, 0.93],
                },
                false,
            );
            let blanket = self.pick(&[
                [0.3, 0.4, 0.6],
                [0.7, 0.3, 0.3],
                [0.85, 0.8, 0.65],
                [0.35, 0.55, 0.45],
                [0.55, 0.5, 0.65],
                [0.9, 0.9, 0.9],
            ]);
            let stripe = self.jitter(scale3(blanket, 0.75), 0.05);
            self.part(
                f,
                ObjectKind::Blanket,
                (0.0, f.width),
                (0.65, f.depth),
                (0.3, 0.56),
                Material::Blanket {
                    color: blanket,
                    stripe,
                },
                false,
            );
            let pillow = Material::Fabric {
                color: [0.97, 0.96, 0.93],
            };
            if double {
                let half = 0.5 * f.width;
                self.part(
                    f,
                    ObjectKind::Pillow,
                    (0.08, half - 0.05),
                    (0.15, 0.5),
                    (0.52, 0.64),
                    pillow,
                    false,
                );
                self.part(
                    f,
                    ObjectKind::Pillow,
                    (half + 0.05, f.width - 0.08),
                    (0.15, 0.5),
                    (0.52, 0.64),
                    pillow,
                    false,
                );
            } else {
                self.part(
                    f,
                    ObjectKind::Pillow,
                    (0.08, f.width - 0.08),
                    (0.15, 0.5),
                    (0.52, 0.64),
                    pillow,
                    false,
                );
            }
            let top = self.wall_rect(f.wall, f.a0 + 0.1, f.a0 + f.width - 0.1, 0.7, f.depth - 0.1);
            self.supports.push((top, 0.56));
            // Nightstands on either side.
            let stand_wood = self.wood(0.0);
            for side in [-1.0f32, 1.0] {
                let a0 = if side < 0.0 {
                    f.a0 - 0.5
                } else {
                    f.a0 + f.width + 0.05
                };
                if self.chance(0.8) {
                    if let Some(n) = self.place_at(f.wall, a0, 0.45, 0.4, 0.02) {
                        self.part(
                            n,
                            ObjectKind::Nightstand,
                            (0.0, 0.45),
                            (0.0, 0.4),
                            (0.0, 0.55),
                            stand_wood,
                            false,
                        );
                        let top = self.wall_rect(n.wall, n.a0, n.a0 + 0.45, 0.0, 0.4);
                        if self.chance(0.5) {
                            // Lamp at the back of the nightstand.
                            self.part(
                                n,
                                ObjectKind::Lamp,
                                (0.2, 0.25),
                                (0.1, 0.15),
                                (0.55, 0.8),
                                Material::Metal {
                                    color: [0.7, 0.68, 0.6],
                                },
                                false,
                            );
                            let shade = self.pick(&[[0.95, 0.9, 0.75], [0.9, 0.9, 0.9]]);
                            self.part(
                                n,
                                ObjectKind::Lamp,
                                (0.1, 0.35),
                                (0.02, 0.24),
                                (0.8, 1.02),
                                Material::Lamp { color: shade },
                                false,
                            );
                        }
                        self.supports.push((top, 0.55));
                    }
                }
            }
            if self.wall_span_clear(f.wall, f.a0, f.a0 + f.width, 1.25) && self.chance(0.7) {
                let width = (f.width * 0.6).min(1.1);
                let a0 = f.a0 + 0.5 * (f.width - width);
                let sky = self.pick(&[[0.55, 0.7, 0.9], [0.95, 0.75, 0.45], [0.85, 0.85, 0.8]]);
                let ground = self.pick(&[[0.3, 0.5, 0.25], [0.2, 0.3, 0.45], [0.6, 0.25, 0.2]]);
                self.decoration(
                    f.wall,
                    (a0, a0 + width),
                    (1.35, 1.85),
                    0.03,
                    ObjectKind::Painting,
                    Material::Painting {
                        frame: [0.15, 0.12, 0.1],
                        sky,
                        ground,
                    },
                );
            }
            // Rug at the foot or side of the bed.
            if self.chance(0.6) {
                let rug = self.wall_rect(
                    f.wall,
                    f.a0 - 0.4,
                    f.a0 + f.width + 0.4,
                    f.depth - 0.6,
                    f.depth + 0.8,
                );
                self.rug(rug);
            }
        }

        let wardrobe_w = self.range(1.0, 1.8);
        if let Some(f) = self.place_on_wall(&Wall::ALL, wardrobe_w, 0.6, 0.1) {
            let wood = self.wood(0.0);
            let color = match wood {
                Material::Wood { light, .. } => light,
                _ => [0.8, 0.7, 0.55],
            };
            let color = if self.rng.random_bool(0.4) {
                [0.93, 0.93, 0.92]
            } else {
                color
            };
            let height = self.range(1.9, 2.2);
            self.part(
                f,
                ObjectKind::Wardrobe,
                (0.0, f.width),
                (0.0, 0.6),
                (0.0, height),
                Material::Cabinets {
                    color,
                    door_m: f.width / 2.0,
                },
                true,
            );
        }

        if self.chance(0.7) {
            let desk_w = self.range(1.0, 1.4);
            if let Some(f) = self.place_on_wall(&Wall::ALL, desk_w, 1.15, 0.1) {
                let wood = self.wood(0.0);
                self.part(
                    f,
                    ObjectKind::Desk,
                    (0.0, f.width),
                    (0.0, 0.6),
                    (0.72, 0.76),
                    wood,
                    false,
                );
                self.part(
                    f,
                    ObjectKind::Desk,
                    (0.0, 0.45),
                    (0.02, 0.58),
                    (0.0, 0.72),
                    Material::Cabinets {
                        color: match wood {
                            Material::Wood { light, .. } => light,
                            _ => [0.7, 0.6, 0.5],
                        },
                        door_m: 0.45,
                    },
                    true,
                );
                self.part(
                    f,
                    ObjectKind::Desk,
                    (f.width - 0.04, f.width),
                    (0.02, 0.58),
                    (0.0, 0.72),
                    wood,
                    false,
                );
                let top = self.wall_rect(f.wall, f.a0, f.a0 + f.width, 0.0, 0.6);
                self.supports.push((top, 0.76));
                self.chair(f, 0.5 * (f.width + 0.45) - 0.22, 0.65);
            }
        }
        if self.chance(0.5) {
            let w = self.range(0.8, 1.2);
            if let Some(f) = self.place_on_wall(&Wall::ALL, w, 0.5, 0.1) {
                let color = self.pick(&[[0.93, 0.93, 0.92], [0.6, 0.42, 0.28], [0.75, 0.65, 0.5]]);
                self.part(
                    f,
                    ObjectKind::Dresser,
                    (0.0, f.width),
                    (0.0, 0.5),
                    (0.0, 0.85),
                    Material::Cabinets {
                        color,
                        door_m: f.width / 3.0,
                    },
                    true,
                );
                let top = self.wall_rect(f.wall, f.a0, f.a0 + f.width, 0.0, 0.5);
                self.supports.push((top, 0.85));
            }
        }
        let n = if self.chance(0.5) { 2 } else { 1 };
        self.windows(n, (0.9, 2.1));
        if self.chance(0.5) {
            self.painting(&Wall::ALL);
        }
    }

    /// A chair in front of a table or desk frame: seat block and backrest, `d0` out from the
    /// wall, `a0` along it.
    fn chair(&mut self, f: Frame, a0: f32, d0: f32) {
        let color = self.pick(&[
            [0.3, 0.3, 0.32],
            [0.55, 0.38, 0.25],
            [0.8, 0.2, 0.2],
            [0.85, 0.85, 0.85],
        ]);
        let m = Material::Fabric { color };
        self.part(
            f,
            ObjectKind::Chair,
            (a0, a0 + 0.44),
            (d0, d0 + 0.44),
            (0.0, 0.46),
            m,
            false,
        );
        self.part(
            f,
            ObjectKind::Chair,
            (a0, a0 + 0.44),
            (d0 + 0.38, d0 + 0.44),
            (0.46, 0.9),
            m,
            false,
        );
    }
}
