//! Bathrooms: tiled walls and floor, a bathtub, a toilet, a vanity with a mirror.

use super::palette::scale3;
use super::Builder;
use crate::room::layout::{Material, Object, ObjectKind, Wall};

impl Builder {
    pub(super) fn bathroom(&mut self) {
        let tile = self.pick(&[
            [0.92, 0.92, 0.9],
            [0.75, 0.85, 0.9],
            [0.8, 0.9, 0.82],
            [0.85, 0.82, 0.75],
            [0.6, 0.72, 0.82],
        ]);
        let tile = self.jitter(tile, 0.03);
        let grout = scale3(tile, 0.7);
        let paint = self.jitter([0.93, 0.93, 0.9], 0.04);
        let tile_m = self.pick(&[0.15, 0.2, 0.25]);
        let tile_height_m = self.range(1.2, 2.1);
        self.layout.walls = [Material::TiledWall {
            tile,
            grout,
            tile_m,
            paint,
            tile_height_m,
        }; 4];
        let floor = self.pick(&[
            ([0.85, 0.85, 0.85], [0.3, 0.3, 0.32]),
            ([0.7, 0.7, 0.72], [0.7, 0.7, 0.72]),
            ([0.9, 0.88, 0.82], [0.55, 0.6, 0.7]),
            ([0.45, 0.5, 0.55], [0.45, 0.5, 0.55]),
            ([0.8, 0.72, 0.62], [0.8, 0.72, 0.62]),
        ]);
        self.layout.floor = Material::Tiles {
            color: floor.0,
            alt: floor.1,
            grout: scale3(floor.0, 0.75),
            tile_m: self.pick(&[0.2, 0.3, 0.4]),
        };
        self.door();
        let ceramic = self.pick(&[[0.96, 0.96, 0.95], [0.93, 0.92, 0.88]]);

        // Bathtub along a wall, preferably in a corner.
        let tub_len = self.range(1.5, 1.75);
        if let Some(f) = self.place_on_wall(&Wall::ALL, tub_len, 0.75, 0.05) {
            self.part(
                f,
                ObjectKind::Bathtub,
                (0.0, f.width),
                (0.0, f.depth),
                (0.0, 0.55),
                Material::Basin {
                    color: ceramic,
                    inner: [0.82, 0.86, 0.9],
                },
                false,
            );
            let towel = self.pick(&[
                [0.9, 0.5, 0.4],
                [0.3, 0.5, 0.7],
                [0.95, 0.95, 0.9],
                [0.5, 0.7, 0.5],
            ]);
            // Bath mat in front of the tub.
            let mat = self.wall_rect(f.wall, f.a0 + 0.3, f.a0 + 0.9, 0.8, 1.3);
            self.add(
                Object::new(
                    ObjectKind::Rug,
                    [mat[0], mat[1], 0.0],
                    [mat[2], mat[3], 0.012],
                    Material::Rug {
                        field: towel,
                        border: scale3(towel, 0.75),
                        pattern: scale3(towel, 1.15),
                    },
                )
                .with_solid(false),
            );
            if self.wall_span_clear(f.wall, f.a0 + 0.2, f.a0 + 0.8, 0.9) && self.chance(0.7) {
                self.decoration(
                    f.wall,
                    (f.a0 + 0.3, f.a0 + 0.9),
                    (1.25, 1.9),
                    0.05,
                    ObjectKind::Towel,
                    Material::Fabric { color: towel },
                );
            }
        }

        // Toilet: tank against the wall, bowl in front.
        if let Some(f) = self.place_on_wall(&Wall::ALL, 0.45, 0.7, 0.1) {
            self.part(
                f,
                ObjectKind::Toilet,
                (0.0, 0.45),
                (0.0, 0.2),
                (0.0, 0.8),
                Material::Ceramic { color: ceramic },
                false,
            );
            self.part(
                f,
                ObjectKind::Toilet,
                (0.04, 0.41),
                (0.2, 0.7),
                (0.0, 0.42),
                Material::Ceramic { color: ceramic },
                false,
            );
        }

        // Vanity with a basin and a mirror above.
        let vanity_w = self.range(0.6, 1.2);
        if let Some(f) = self.place_on_wall(&Wall::ALL, vanity_w, 0.5, 0.1) {
            let cabinet = self.pick(&[
                [0.95, 0.95, 0.95],
                [0.55, 0.4, 0.28],
                [0.35, 0.4, 0.5],
                [0.8, 0.75, 0.65],
            ]);
            self.part(
                f,
                ObjectKind::Vanity,
                (0.0, f.width),
                (0.0, 0.5),
                (0.0, 0.82),
                Material::Cabinets {
                    color: cabinet,
                    door_m: f.width / 2.0,
                },
                true,
            );
            self.part(
                f,
                ObjectKind::Vanity,
                (0.0, f.width),
                (0.0, 0.52),
                (0.82, 0.86),
                Material::Stone {
                    color: [0.85, 0.84, 0.82],
                },
                false,
            );
            let basin_w = 0.45f32.min(f.width - 0.1);
            let b0 = 0.5 * (f.width - basin_w);
            self.part(
                f,
                ObjectKind::Sink,
                (b0, b0 + basin_w),
                (0.08, 0.44),
                (0.86, 0.88),
                Material::Basin {
                    color: ceramic,
                    inner: [0.86, 0.88, 0.9],
                },
                false,
            );
            let top = self.wall_rect(f.wall, f.a0, f.a0 + f.width, 0.0, 0.5);
            // Target goes beside the basin, so offer the whole top (the target check avoids the
            // basin).
            self.supports.push((top, 0.86));
            let frame = self.pick(&[[0.2, 0.2, 0.22], [0.8, 0.8, 0.8], [0.7, 0.55, 0.3]]);
            self.decoration(
                f.wall,
                (f.a0 + 0.05, f.a0 + f.width - 0.05),
                (1.1, 1.85),
                0.03,
                ObjectKind::Mirror,
                Material::Mirror { frame },
            );
        }

        if self.chance(0.5) {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.5, 0.35, 0.1) {
                let color = self.pick(&[[0.95, 0.95, 0.95], [0.6, 0.45, 0.3]]);
                self.part(
                    f,
                    ObjectKind::Cabinet,
                    (0.0, 0.5),
                    (0.0, 0.35),
                    (0.0, 1.8),
                    Material::Cabinets { color, door_m: 0.5 },
                    true,
                );
            }
        }
        if self.chance(0.5) {
            if let Some(f) = self.place_on_wall(&Wall::ALL, 0.4, 0.35, 0.1) {
                let (light, dark) = ([0.75, 0.65, 0.45], [0.55, 0.45, 0.3]);
                self.part(
                    f,
                    ObjectKind::Basket,
                    (0.0, 0.4),
                    (0.02, 0.35),
                    (0.0, 0.5),
                    Material::Wood {
                        light,
                        dark,
                        plank_m: 0.04,
                        along_y: false,
                    },
                    false,
                );
            }
        }
        if self.chance(0.6) {
            if let Some(r) = self.place_free(0.35, 0.35, 0.5) {
                let wood = self.wood(0.0);
                self.add(Object::new(
                    ObjectKind::Stool,
                    [r[0], r[1], 0.0],
                    [r[2], r[3], 0.45],
                    wood,
                ));
                self.supports.push((r, 0.45));
            }
        }
        if self.chance(0.6) {
            let width = self.range(0.5, 0.9);
            self.hang(
                &Wall::ALL,
                width,
                (1.5, 2.1),
                ObjectKind::Window,
                Material::Window {
                    frame: [0.95, 0.95, 0.93],
                },
            );
        }
    }
}
