//! A per-pixel ray caster for [`Layout`]s: a pinhole camera looking horizontally, rays
//! intersected with the room's six planes and with every box, Lambert shading from the room's
//! point light with hard shadows, a little contact darkening in corners, and procedural
//! textures.
//!
//! Camera model (the one `tests/room.rs` checks bounding boxes against): the camera sits at
//! `(x, y, z)` with heading `θ` (radians, anticlockwise from `+x`). Its forward axis is
//! `f = (cos θ, sin θ, 0)`, its right axis `r = (sin θ, −cos θ, 0)` and its up axis `+z`. The
//! focal length in pixels is `F = (W / 2) / tan(fov / 2)` (the field of view is horizontal;
//! pixels are square). Pixel `(row i, column j)` looks along
//! `d = f + ((j + 0.5 − W/2) / F) r + ((H/2 − (i + 0.5)) / F) z`, so a world point `p` with
//! `q = p − camera` projects to column `W/2 + F (q·r)/(q·f)` and row `H/2 − F q_z/(q·f)`.
//!
//! Because `d·f = 1`, the ray parameter at a hit is the hit's distance along the optical axis
//! (planar z-depth, as AI2THOR's depth frames report), which is what the depth image holds.
//!
//! Rays are cast column by column: the horizontal part of every ray in a column is the same, so
//! the `x`/`y` slab intervals of all boxes are computed once per column, sorted by entry
//! distance, and each pixel only intersects the `z` slab and stops at the first box that starts
//! beyond its nearest hit.

mod texture;

use serde::Serialize;

use super::layout::{Face, Layout, Object, Rgb, Wall};
use texture::albedo;

/// Light that reaches every surface regardless of the lamp.
const AMBIENT: f32 = 0.42;
/// Extra light on the ceiling (indirect light from the lit floor and walls).
const CEILING_BOUNCE: f32 = 0.35;
/// Strength of the point light.
const DIFFUSE: f32 = 0.85;
/// Inverse-square falloff of the point light: `1 / (1 + FALLOFF · d²)`.
const FALLOFF: f32 = 0.035;
/// Ray hits closer than this (m) are ignored, so a ray never hits the surface it leaves.
const EPSILON_M: f32 = 1e-4;

/// A pinhole camera looking horizontally (see the module docs for the model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Camera {
    /// Position `(x, y, z)` in metres.
    pub(crate) position: [f32; 3],
    /// Heading in radians, anticlockwise from `+x`.
    pub(crate) heading: f32,
    /// Horizontal field of view in radians.
    pub(crate) fov_rad: f32,
    /// Image width in pixels.
    pub(crate) width: usize,
    /// Image height in pixels.
    pub(crate) height: usize,
}

impl Camera {
    fn focal_px(&self) -> f32 {
        0.5 * self.width as f32 / (0.5 * self.fov_rad).tan()
    }
}

/// What the camera saw of the target in one frame: the input of the reward and of the vector
/// state.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct TargetView {
    /// Image width in pixels.
    pub image_width: usize,
    /// Image height in pixels.
    pub image_height: usize,
    /// Pixels whose nearest hit is the target.
    pub visible_pixels: usize,
    /// Pixels whose ray hits the target at all, whether or not something is in front of it:
    /// the target's silhouette without occluders (clipped to the image).
    pub unoccluded_pixels: usize,
    /// Bounding box of the visible pixels, `[col_min, row_min, col_max, row_max]`, inclusive;
    /// `None` when no pixel of the target is visible.
    pub visible_bbox: Option<[usize; 4]>,
    /// Centre of the unoccluded silhouette in pixel coordinates `(column, row)`, pixel `j`
    /// spanning `[j, j + 1)`; `None` when the target is outside the view.
    pub unoccluded_center: Option<[f32; 2]>,
}

/// The surface a ray ended on.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Surface {
    Floor,
    Ceiling,
    Wall(Wall),
    Object(usize, Face),
}

/// A box that a column's rays may hit: its `x`/`y` slab interval and the side they enter by.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    object: usize,
    t0: f32,
    t1: f32,
    side: Face,
}

/// Scratch space reused between frames, so rendering allocates nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Renderer {
    candidates: Vec<Candidate>,
}

impl Renderer {
    /// Renders one frame. `rgb` (if given) receives `3 × H × W` values in `[0, 1]`,
    /// channel-major; `depth` receives `H × W` planar depths divided by `max_depth_m` and
    /// clipped to `[0, 1]`. Both lengths are the caller's invariant.
    pub(crate) fn render(
        &mut self,
        layout: &Layout,
        camera: &Camera,
        max_depth_m: f32,
        mut rgb: Option<&mut [f32]>,
        depth: &mut [f32],
    ) -> TargetView {
        let (w, h) = (camera.width, camera.height);
        debug_assert_eq!(depth.len(), w * h);
        debug_assert!(rgb.as_ref().is_none_or(|rgb| rgb.len() == 3 * w * h));
        let focal = camera.focal_px();
        let (sin, cos) = camera.heading.sin_cos();
        let forward = [cos, sin];
        let right = [sin, -cos];
        let [ox, oy, oz] = camera.position;
        let (room_w, room_l, room_h) = (layout.width_m(), layout.length_m(), layout.height_m());
        let objects = layout.objects();
        let target = layout.target_index();
        let inv_depth = 1.0 / max_depth_m;

        let mut view = TargetView {
            image_width: w,
            image_height: h,
            ..TargetView::default()
        };
        let mut bbox = [usize::MAX, usize::MAX, 0, 0];
        let mut center_sum = [0.0f64; 2];

        for j in 0..w {
            let sx = (j as f32 + 0.5 - 0.5 * w as f32) / focal;
            let dx = forward[0] + sx * right[0];
            let dy = forward[1] + sx * right[1];

            // The wall this column ends on.
            let (tx, wall_x) = if dx > 0.0 {
                ((room_w - ox) / dx, Wall::East)
            } else if dx < 0.0 {
                (-ox / dx, Wall::West)
            } else {
                (f32::INFINITY, Wall::East)
            };
            let (ty, wall_y) = if dy > 0.0 {
                ((room_l - oy) / dy, Wall::North)
            } else if dy < 0.0 {
                (-oy / dy, Wall::South)
            } else {
                (f32::INFINITY, Wall::North)
            };
            let (t_wall, wall) = if tx < ty { (tx, wall_x) } else { (ty, wall_y) };

            // Boxes this column's rays can hit, nearest first.
            self.candidates.clear();
            for (k, o) in objects.iter().enumerate() {
                let Some((tx0, tx1)) = slab(ox, dx, o.min[0], o.max[0]) else {
                    continue;
                };
                let Some((ty0, ty1)) = slab(oy, dy, o.min[1], o.max[1]) else {
                    continue;
                };
                let t0 = tx0.max(ty0);
                let t1 = tx1.min(ty1);
                if t1 < t0 || t1 <= EPSILON_M || t0 >= t_wall {
                    continue;
                }
                let side = if tx0 > ty0 {
                    if dx > 0.0 {
                        Face::NegX
                    } else {
                        Face::PosX
                    }
                } else if dy > 0.0 {
                    Face::NegY
                } else {
                    Face::PosY
                };
                self.candidates.push(Candidate {
                    object: k,
                    t0,
                    t1,
                    side,
                });
            }
            self.candidates
                .sort_unstable_by(|a, b| a.t0.total_cmp(&b.t0));
            let target_candidate = target
                .and_then(|t| self.candidates.iter().find(|c| c.object == t))
                .copied();

            for i in 0..h {
                let dz = (0.5 * h as f32 - (i as f32 + 0.5)) / focal;
                let mut best = t_wall;
                let mut surface = Surface::Wall(wall);
                if dz < 0.0 {
                    let t = -oz / dz;
                    if t < best {
                        best = t;
                        surface = Surface::Floor;
                    }
                } else if dz > 0.0 {
                    let t = (room_h - oz) / dz;
                    if t < best {
                        best = t;
                        surface = Surface::Ceiling;
                    }
                }
                for c in &self.candidates {
                    if c.t0 >= best {
                        break;
                    }
                    let o = &objects[c.object];
                    if let Some((enter, from_z)) = enter_box(c, o, oz, dz) {
                        if enter < best {
                            best = enter;
                            let face = if from_z {
                                if dz < 0.0 {
                                    Face::PosZ
                                } else {
                                    Face::NegZ
                                }
                            } else {
                                c.side
                            };
                            surface = Surface::Object(c.object, face);
                        }
                    }
                }

                if let Some(tc) = &target_candidate {
                    if enter_box(tc, &objects[tc.object], oz, dz).is_some() {
                        view.unoccluded_pixels += 1;
                        center_sum[0] += j as f64 + 0.5;
                        center_sum[1] += i as f64 + 0.5;
                        if matches!(surface, Surface::Object(k, _) if Some(k) == target) {
                            view.visible_pixels += 1;
                            bbox = [
                                bbox[0].min(j),
                                bbox[1].min(i),
                                bbox[2].max(j),
                                bbox[3].max(i),
                            ];
                        }
                    }
                }

                let pixel = i * w + j;
                depth[pixel] = (best * inv_depth).min(1.0);
                if let Some(rgb) = rgb.as_deref_mut() {
                    let p = [ox + best * dx, oy + best * dy, oz + best * dz];
                    let color = shade(layout, surface, p);
                    rgb[pixel] = color[0];
                    rgb[w * h + pixel] = color[1];
                    rgb[2 * w * h + pixel] = color[2];
                }
            }
        }
        if view.visible_pixels > 0 {
            view.visible_bbox = Some(bbox);
        }
        if view.unoccluded_pixels > 0 {
            let n = view.unoccluded_pixels as f64;
            view.unoccluded_center = Some([(center_sum[0] / n) as f32, (center_sum[1] / n) as f32]);
        }
        view
    }
}

/// The interval of `t` where `origin + t · dir` lies in `[lo, hi]`, or `None` if never.
#[inline]
fn slab(origin: f32, dir: f32, lo: f32, hi: f32) -> Option<(f32, f32)> {
    if dir != 0.0 {
        let inv = 1.0 / dir;
        let a = (lo - origin) * inv;
        let b = (hi - origin) * inv;
        Some(if a < b { (a, b) } else { (b, a) })
    } else if lo <= origin && origin <= hi {
        Some((f32::NEG_INFINITY, f32::INFINITY))
    } else {
        None
    }
}

/// Where a ray with vertical slope `dz` enters box `o`, given its horizontal interval `c`:
/// `(t, entered through a top or bottom face)`, or `None` if it misses or starts inside.
#[inline]
fn enter_box(c: &Candidate, o: &Object, oz: f32, dz: f32) -> Option<(f32, bool)> {
    let (tz0, tz1) = slab(oz, dz, o.min[2], o.max[2])?;
    let enter = c.t0.max(tz0);
    let exit = c.t1.min(tz1);
    (enter <= exit && enter > EPSILON_M).then_some((enter, tz0 > c.t0))
}

/// Whether the segment from `p` to the light passes through no solid box.
#[inline]
fn lit(layout: &Layout, p: [f32; 3], to_light: [f32; 3]) -> bool {
    layout.objects().iter().all(|o| {
        if !o.solid {
            return true;
        }
        let (mut t0, mut t1) = (EPSILON_M, 1.0f32);
        for a in 0..3 {
            match slab(p[a], to_light[a], o.min[a], o.max[a]) {
                Some((lo, hi)) => {
                    t0 = t0.max(lo);
                    t1 = t1.min(hi);
                }
                None => return true,
            }
        }
        t0 > t1
    })
}

/// Colour of the surface at `p`: albedo × (ambient + shadowed Lambert from the point light),
/// with contact darkening; light sources (windows, lamps) are drawn unlit.
fn shade(layout: &Layout, surface: Surface, p: [f32; 3]) -> Rgb {
    let (w, l, h) = (layout.width_m(), layout.length_m(), layout.height_m());
    let (albedo, emissive, face, occlusion) = match surface {
        Surface::Floor => {
            let wall_distance = p[0].min(w - p[0]).min(p[1]).min(l - p[1]);
            let mut occlusion = 1.0 - 0.35 * (-wall_distance / 0.12).exp();
            for o in layout.objects() {
                if o.solid && o.min[2] < 0.02 {
                    let dx = (o.min[0] - p[0]).max(p[0] - o.max[0]).max(0.0);
                    let dy = (o.min[1] - p[1]).max(p[1] - o.max[1]).max(0.0);
                    let d = dx.max(dy);
                    if d < 0.3 {
                        occlusion *= 1.0 - 0.4 * (-d / 0.06).exp();
                    }
                }
            }
            let (a, e) = albedo(layout.floor(), Face::PosZ, false, [p[0], p[1]], [w, l]);
            (a, e, Face::PosZ, occlusion)
        }
        Surface::Ceiling => {
            let (a, e) = albedo(layout.ceiling(), Face::NegZ, false, [p[0], p[1]], [w, l]);
            let wall_distance = p[0].min(w - p[0]).min(p[1]).min(l - p[1]);
            (a, e, Face::NegZ, 1.0 - 0.25 * (-wall_distance / 0.15).exp())
        }
        Surface::Wall(wall) => {
            let (along, len) = match wall {
                Wall::South | Wall::North => (p[0], w),
                Wall::East | Wall::West => (p[1], l),
            };
            let corner = along.min(len - along);
            let occlusion = (1.0 - 0.3 * (-p[2] / 0.1).exp())
                * (1.0 - 0.22 * (-(h - p[2]) / 0.12).exp())
                * (1.0 - 0.25 * (-corner / 0.12).exp());
            let face = wall.inward_face();
            let (a, e) = albedo(
                &layout.walls()[wall as usize],
                face,
                false,
                [along, p[2]],
                [len, h],
            );
            (a, e, face, occlusion)
        }
        Surface::Object(k, face) => {
            let o = &layout.objects()[k];
            let (uv, size) = match face {
                Face::NegX | Face::PosX => (
                    [p[1] - o.min[1], p[2] - o.min[2]],
                    [o.max[1] - o.min[1], o.max[2] - o.min[2]],
                ),
                Face::NegY | Face::PosY => (
                    [p[0] - o.min[0], p[2] - o.min[2]],
                    [o.max[0] - o.min[0], o.max[2] - o.min[2]],
                ),
                Face::NegZ | Face::PosZ => (
                    [p[0] - o.min[0], p[1] - o.min[1]],
                    [o.max[0] - o.min[0], o.max[1] - o.min[1]],
                ),
            };
            let (a, e) = albedo(&o.material, face, o.front == Some(face), uv, size);
            (a, e, face, 1.0)
        }
    };
    if emissive {
        return albedo;
    }
    let n = face.normal();
    let light = layout.light();
    let to_light = [light[0] - p[0], light[1] - p[1], light[2] - p[2]];
    let d2 = to_light[0] * to_light[0] + to_light[1] * to_light[1] + to_light[2] * to_light[2];
    let n_dot = n[0] * to_light[0] + n[1] * to_light[1] + n[2] * to_light[2];
    // Light bounced off the floor and walls brightens the ceiling, which the lamp (hanging just
    // below it) barely reaches.
    let mut intensity = if face == Face::NegZ && matches!(surface, Surface::Ceiling) {
        AMBIENT + CEILING_BOUNCE
    } else {
        AMBIENT
    };
    if n_dot > 0.0 {
        let start = [0, 1, 2].map(|a| p[a] + n[a] * 1e-3);
        if lit(layout, start, to_light) {
            intensity += DIFFUSE * n_dot / d2.sqrt() / (1.0 + FALLOFF * d2);
        }
    }
    let s = intensity * occlusion;
    albedo.map(|c| (c * s).clamp(0.0, 1.0))
}
