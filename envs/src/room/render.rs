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

use serde::Serialize;

use super::layout::{Face, Layout, Material, Object, Rgb, Wall};

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
    pub position: [f32; 3],
    /// Heading in radians, anticlockwise from `+x`.
    pub heading: f32,
    /// Horizontal field of view in radians.
    pub fov_rad: f32,
    /// Image width in pixels.
    pub width: usize,
    /// Image height in pixels.
    pub height: usize,
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

// ---------------------------------------------------------------------------------------------
// Procedural textures
// ---------------------------------------------------------------------------------------------

/// A hash of two lattice coordinates to `[0, 1)`.
#[inline]
fn hash(ix: i32, iy: i32) -> f32 {
    let mut h = (ix as u32).wrapping_mul(0x8da6_b343) ^ (iy as u32).wrapping_mul(0xd816_3841);
    h ^= h >> 13;
    h = h.wrapping_mul(0x5bd1_e995);
    h ^= h >> 15;
    (h & 0x00ff_ffff) as f32 / 16_777_216.0
}

/// Smooth value noise in `[0, 1)`, one lattice point per unit.
#[inline]
fn noise(x: f32, y: f32) -> f32 {
    let (fx, fy) = (x.floor(), y.floor());
    let (ix, iy) = (fx as i32, fy as i32);
    let (tx, ty) = (x - fx, y - fy);
    let (sx, sy) = (tx * tx * (3.0 - 2.0 * tx), ty * ty * (3.0 - 2.0 * ty));
    let a = hash(ix, iy);
    let b = hash(ix + 1, iy);
    let c = hash(ix, iy + 1);
    let d = hash(ix + 1, iy + 1);
    let top = a + (b - a) * sx;
    let bottom = c + (d - c) * sx;
    top + (bottom - top) * sy
}

#[inline]
fn mix(a: Rgb, b: Rgb, t: f32) -> Rgb {
    [
        a[0] + (b[0] - a[0]) * t,
        a[1] + (b[1] - a[1]) * t,
        a[2] + (b[2] - a[2]) * t,
    ]
}

#[inline]
fn scale(a: Rgb, s: f32) -> Rgb {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// Distance from `(u, v)` to the nearest edge of the rectangle `[0, su] × [0, sv]`.
#[inline]
fn edge_distance(uv: [f32; 2], size: [f32; 2]) -> f32 {
    uv[0].min(size[0] - uv[0]).min(uv[1]).min(size[1] - uv[1])
}

/// Colour of a panelled front: gaps between doors of `door_m`, a plinth and handles.
fn cabinet_front(color: Rgb, door_m: f32, uv: [f32; 2], size: [f32; 2]) -> Rgb {
    let [u, v] = uv;
    let doors = (size[0] / door_m).round().max(1.0);
    let door_w = size[0] / doors;
    let k = (u / door_w).floor();
    let fu = u - k * door_w;
    let tall = size[1] > 1.2;
    if v < 0.08 && !tall && size[1] > 0.5 {
        return scale(color, 0.55);
    }
    if fu < 0.006 || fu > door_w - 0.006 || v > size[1] - 0.006 {
        return scale(color, 0.45);
    }
    // Handle: a short bar near the opening edge.
    let handle_u = if (k as i32) % 2 == 0 {
        door_w - 0.06
    } else {
        0.06
    };
    let (h0, h1) = if tall {
        (0.95, 1.15)
    } else {
        (size[1] - 0.16, size[1] - 0.06)
    };
    if (fu - handle_u).abs() < 0.012 && v > h0 && v < h1 {
        return [0.55, 0.55, 0.58];
    }
    // A recessed panel line inside each door.
    let inset = (fu - 0.05).abs().min((door_w - 0.05 - fu).abs());
    let inset_v = (v - 0.12).abs().min((size[1] - 0.05 - v).abs());
    let in_panel = fu > 0.05 && fu < door_w - 0.05 && v > 0.12 && v < size[1] - 0.05;
    if in_panel && (inset < 0.006 || inset_v < 0.006) {
        return scale(color, 0.8);
    }
    scale(color, 0.96 + 0.04 * noise(u * 6.0, v * 6.0))
}

/// A frame of `border` m around a picture-like face: `Some(frame colour)` on the frame.
#[inline]
fn on_frame(uv: [f32; 2], size: [f32; 2], border: f32) -> bool {
    edge_distance(uv, size) < border
}

/// `(albedo, emissive)` of `material` at face coordinates `uv` (metres from the face's corner,
/// `u` horizontal, `v` vertical on side faces) on a face of extent `size`.
fn albedo(
    material: &Material,
    face: Face,
    front: bool,
    uv: [f32; 2],
    size: [f32; 2],
) -> (Rgb, bool) {
    let [u, v] = uv;
    let vertical = face.is_vertical();
    let color = match *material {
        Material::Paint { color } => scale(color, 0.97 + 0.05 * noise(u * 9.0, v * 9.0)),
        Material::Wood {
            light,
            dark,
            plank_m,
            along_y,
        } => {
            // `a` runs along the grain, `b` across it.
            let (a, b) = if !vertical && along_y { (v, u) } else { (u, v) };
            let (tone, seam, k) = if plank_m > 0.0 {
                let k = (b / plank_m).floor();
                let fb = b / plank_m - k;
                let board = 1.3;
                let shifted = a + hash(k as i32, 7) * board;
                let m = (shifted / board).floor();
                let fa = shifted / board - m;
                (hash(k as i32, m as i32), fb < 0.06 || fa < 0.008, k)
            } else {
                (0.5, false, 0.0)
            };
            let grain = noise(a * 1.7, b * 32.0 + k * 3.1);
            let t = (0.2 + 0.45 * tone + 0.35 * grain).clamp(0.0, 1.0);
            let c = mix(dark, light, t);
            if seam {
                scale(c, 0.55)
            } else {
                c
            }
        }
        Material::Tiles {
            color,
            alt,
            grout,
            tile_m,
        } => tile(color, alt, grout, tile_m, u, v),
        Material::TiledWall {
            tile: tile_color,
            grout,
            tile_m,
            paint,
            tile_height_m,
        } => {
            if v < tile_height_m - 0.04 {
                tile(tile_color, tile_color, grout, tile_m, u, v)
            } else if v < tile_height_m {
                scale(tile_color, 0.8)
            } else {
                scale(paint, 0.97 + 0.05 * noise(u * 9.0, v * 9.0))
            }
        }
        Material::Wallpaper {
            base,
            stripe,
            stripe_m,
        } => {
            let f = (u / stripe_m).fract();
            let c = if f < 0.3 {
                stripe
            } else if (f - 0.65).abs() < 0.03 {
                mix(base, stripe, 0.6)
            } else {
                base
            };
            scale(c, 0.97 + 0.05 * noise(u * 7.0, v * 7.0))
        }
        Material::Carpet { color } => scale(
            color,
            0.8 + 0.25 * noise(u * 14.0, v * 14.0)
                + 0.1 * hash((u * 90.0) as i32, (v * 90.0) as i32),
        ),
        Material::Rug {
            field,
            border,
            pattern,
        } => {
            let e = edge_distance(uv, size);
            if !vertical && e < 0.12 {
                if (e - 0.06).abs() < 0.012 {
                    pattern
                } else {
                    border
                }
            } else {
                let du = ((u * 2.5).fract() - 0.5).abs();
                let dv = ((v * 2.5).fract() - 0.5).abs();
                let diamond = du + dv;
                let c = if (diamond - 0.3).abs() < 0.05 {
                    pattern
                } else if diamond < 0.12 {
                    border
                } else {
                    field
                };
                scale(c, 0.9 + 0.15 * noise(u * 30.0, v * 30.0))
            }
        }
        Material::Fabric { color } => {
            let weave = 0.88 + 0.12 * noise(u * 25.0, v * 25.0);
            // Piping along the top edge of side faces.
            if vertical && size[1] - v < 0.02 {
                scale(color, 0.75)
            } else {
                scale(color, weave)
            }
        }
        Material::Blanket { color, stripe } => {
            let across_u = (u / 0.3).fract() < 0.18;
            let across_v = (v / 0.3).fract() < 0.18;
            let c = match (across_u, across_v) {
                (true, true) => scale(stripe, 0.85),
                (true, false) | (false, true) => stripe,
                (false, false) => color,
            };
            scale(c, 0.9 + 0.1 * noise(u * 20.0, v * 20.0))
        }
        Material::Ceramic { color } => scale(color, 0.96 + 0.04 * noise(u * 4.0, v * 4.0)),
        Material::Basin { color, inner } => {
            if face == Face::PosZ {
                let rim = 0.15 * size[0].min(size[1]);
                let e = edge_distance(uv, size);
                if e > rim {
                    let depth = ((e - rim) / (0.5 * size[0].min(size[1]) - rim + 1e-3)).min(1.0);
                    scale(inner, 0.75 + 0.25 * depth)
                } else {
                    color
                }
            } else {
                scale(color, 0.97)
            }
        }
        Material::Metal { color } => scale(color, 0.88 + 0.14 * noise(u * 2.0, v * 70.0)),
        Material::Stone { color } => {
            let speck = hash((u * 70.0) as i32, (v * 70.0) as i32);
            let c = scale(color, 0.9 + 0.15 * noise(u * 8.0, v * 8.0));
            if speck > 0.92 {
                mix(c, [1.0; 3], 0.35)
            } else if speck < 0.08 {
                scale(c, 0.65)
            } else {
                c
            }
        }
        Material::Cabinets { color, door_m } => {
            if front {
                cabinet_front(color, door_m, uv, size)
            } else {
                scale(color, 0.93)
            }
        }
        Material::Fridge { color } => {
            let base = scale(color, 0.9 + 0.1 * noise(u * 2.0, v * 60.0));
            if front {
                let split = 0.68 * size[1];
                let handle = (u - 0.07).abs() < 0.015
                    && ((v > split - 0.45 && v < split - 0.08)
                        || (v > split + 0.08 && v < split + 0.35));
                if (v - split).abs() < 0.008 || edge_distance(uv, size) < 0.006 {
                    scale(color, 0.4)
                } else if handle {
                    scale(color, 0.6)
                } else {
                    base
                }
            } else {
                scale(base, 0.95)
            }
        }
        Material::Stove => {
            if face == Face::PosZ {
                let burners = [(0.27, 0.3), (0.73, 0.3), (0.27, 0.72), (0.73, 0.72)];
                let ring = burners.iter().any(|&(bu, bv)| {
                    let du = u - bu * size[0];
                    let dv = v - bv * size[1];
                    let r = (du * du + dv * dv).sqrt();
                    (r - 0.08).abs() < 0.012 || (r - 0.04).abs() < 0.006
                });
                if ring {
                    [0.4, 0.4, 0.42]
                } else {
                    [0.07, 0.07, 0.08]
                }
            } else {
                [0.6, 0.6, 0.62]
            }
        }
        Material::OvenDoor => {
            let window = u > 0.07 && u < size[0] - 0.07 && v > 0.1 && v < size[1] - 0.2;
            let handle = v > size[1] - 0.11 && v < size[1] - 0.07 && u > 0.08 && u < size[0] - 0.08;
            if handle {
                [0.85, 0.85, 0.87]
            } else if window {
                let sheen = 0.03 * ((u + v) * 6.0).sin();
                [0.08 + sheen, 0.08 + sheen, 0.09 + sheen]
            } else {
                [0.3, 0.3, 0.32]
            }
        }
        Material::Books { wood } => {
            if front && vertical {
                let shelf_h = 0.38;
                let s = (v / shelf_h).floor();
                let fv = v - s * shelf_h;
                if fv < 0.025 || u < 0.025 || u > size[0] - 0.025 || size[1] - v < 0.025 {
                    wood
                } else {
                    let book_w = 0.035;
                    let k = ((u - 0.025) / book_w + hash(s as i32, 3) * 10.0).floor() as i32;
                    let r = hash(k, s as i32);
                    let height = 0.2 + 0.13 * hash(k, s as i32 + 101);
                    if r < 0.12 || fv > height + 0.025 {
                        scale(wood, 0.3)
                    } else {
                        const SPINES: [Rgb; 8] = [
                            [0.6, 0.15, 0.12],
                            [0.15, 0.25, 0.5],
                            [0.85, 0.8, 0.65],
                            [0.2, 0.4, 0.25],
                            [0.9, 0.6, 0.15],
                            [0.15, 0.15, 0.17],
                            [0.55, 0.35, 0.55],
                            [0.4, 0.6, 0.7],
                        ];
                        let c = SPINES[(hash(k, s as i32 + 55) * 8.0) as usize % 8];
                        // A label band on some spines.
                        if r > 0.7 && (fv - 0.6 * height).abs() < 0.015 {
                            mix(c, [0.95, 0.9, 0.7], 0.7)
                        } else {
                            c
                        }
                    }
                }
            } else {
                wood
            }
        }
        Material::Screen => {
            if front {
                if on_frame(uv, size, 0.025) {
                    [0.04, 0.04, 0.045]
                } else {
                    let reflection = if ((u - 0.6 * v) / 0.35).fract() < 0.25 {
                        0.05
                    } else {
                        0.0
                    };
                    [0.08 + reflection, 0.09 + reflection, 0.12 + reflection]
                }
            } else {
                [0.1, 0.1, 0.11]
            }
        }
        Material::Window { frame } => {
            let cross = (u - 0.5 * size[0]).abs() < 0.025 || (v - 0.55 * size[1]).abs() < 0.025;
            if !front || on_frame(uv, size, 0.05) || cross {
                return (scale(frame, 0.95), false);
            }
            let t = v / size[1];
            let sky = mix([0.7, 0.83, 0.95], [0.45, 0.65, 0.92], t);
            let cloud = (noise(u * 2.5, v * 5.0) - 0.55).max(0.0) * 2.2;
            return (mix(sky, [0.98, 0.98, 1.0], cloud.min(1.0)), true);
        }
        Material::Painting { frame, sky, ground } => {
            if !front || on_frame(uv, size, 0.04) {
                frame
            } else {
                let horizon = size[1] * (0.45 + 0.06 * (u * 7.0).sin());
                let (su, sv) = (u - 0.7 * size[0], v - 0.72 * size[1]);
                if su * su + sv * sv < (0.09 * size[1]).powi(2) {
                    [0.98, 0.9, 0.55]
                } else if v > horizon {
                    mix(sky, [1.0; 3], 0.3 * (v - horizon) / size[1])
                } else {
                    scale(ground, 0.8 + 0.3 * noise(u * 12.0, v * 12.0))
                }
            }
        }
        Material::Mirror { frame } => {
            if !front || on_frame(uv, size, 0.03) {
                frame
            } else {
                let streak = if ((u + v) / 0.25).fract() < 0.12 {
                    0.06
                } else {
                    0.0
                };
                [0.74 + streak, 0.8 + streak, 0.84 + streak]
            }
        }
        Material::Door { color } => {
            if !front {
                scale(color, 0.9)
            } else {
                let panel = |v0: f32, v1: f32| u > 0.12 && u < size[0] - 0.12 && v > v0 && v < v1;
                let edge = |v0: f32, v1: f32| {
                    panel(v0, v1)
                        && ((u - 0.12).min(size[0] - 0.12 - u).min(v - v0).min(v1 - v) < 0.015)
                };
                if (u - (size[0] - 0.1)).abs() < 0.02 && (v - 1.0).abs() < 0.03 {
                    [0.75, 0.72, 0.6]
                } else if on_frame(uv, [size[0], size[1] + 1.0], 0.02) {
                    scale(color, 0.7)
                } else if edge(0.15, 0.95) || edge(1.1, 1.9) {
                    scale(color, 0.78)
                } else {
                    scale(color, 0.95 + 0.06 * noise(u * 3.0, v * 20.0))
                }
            }
        }
        Material::Plant { color } => {
            let n = noise(u * 14.0, v * 14.0);
            let c = scale(color, 0.55 + 0.7 * n);
            if hash((u * 40.0) as i32, (v * 40.0) as i32) > 0.85 {
                scale(c, 0.6)
            } else {
                c
            }
        }
        Material::Lamp { color } => return (color, true),
        Material::Target { color } => {
            if vertical && (v / size[1] - 0.5).abs() < 0.14 {
                mix(color, [1.0; 3], 0.6)
            } else if !vertical {
                scale(color, 1.05)
            } else {
                color
            }
        }
    };
    (color, false)
}

#[inline]
fn tile(color: Rgb, alt: Rgb, grout: Rgb, tile_m: f32, u: f32, v: f32) -> Rgb {
    let (fu, fv) = (u / tile_m, v / tile_m);
    let (iu, iv) = (fu.floor(), fv.floor());
    let g = 0.01 / tile_m;
    if fu - iu < g || fv - iv < g {
        return grout;
    }
    let base = if (iu as i32 + iv as i32).rem_euclid(2) == 0 {
        color
    } else {
        alt
    };
    scale(base, 0.93 + 0.09 * hash(iu as i32, iv as i32))
}
