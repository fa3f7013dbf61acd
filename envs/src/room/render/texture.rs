//! Procedural textures: the albedo of every [`Material`] at a point of a face (plank seams and
//! grain, tile grout, wallpaper stripes, book spines, cabinet doors, window panes), from hashed
//! value noise.

use crate::room::layout::{Face, Material, Rgb};

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
pub(super) fn albedo(
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
