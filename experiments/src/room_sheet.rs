//! `cargo xtask env rooms`: a PNG sample sheet of the active-perception room task, so a person
//! can see what the agent (and the gradient-inversion attacker) sees.
//!
//! One row per room type (bathroom, bedroom, kitchen, living room), one cell per layout: the
//! RGB image with the target's bounding box (the vector state) drawn in green, and the depth
//! image beside it (setting S2: depth only). Each cell is labelled with the layout and the
//! reward. The pose of each cell is the one, among a few seeded candidates that see the
//! target, that sees the most of the room (largest mean depth).

use std::path::PathBuf;

use crate::report::plot::register_fonts;
use anyhow::{ensure, Context, Result};
use clap::Args;
use plotters::prelude::*;
use privrl_envs::room::{bbox_vector, Layout, RoomConfig, RoomSetting, RoomType, LAYOUTS_PER_TYPE};
use privrl_envs::{Env, MultimodalObs, Obs};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const FAMILY: &str = "sans-serif";
/// Candidate poses tried per cell.
const CANDIDATES: usize = 24;
/// Depth shown as white at 0 m and black at this distance and beyond.
const DEPTH_SHOWN_M: f32 = 7.0;
/// Gaps and label heights in the sheet, in pixels.
const GAP: u32 = 8;
const LABEL_H: u32 = 18;
const TITLE_H: u32 = 34;
const LEGEND_H: u32 = 26;
const ROW_LABEL_W: u32 = 96;

/// Arguments of `env rooms`.
#[derive(Args, Debug, Clone)]
pub struct RoomSheetArgs {
    /// Where to write the PNG (default: `<runs>/env/rooms.png`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Side of each image in pixels (the paper's 150 by default).
    #[arg(long, default_value_t = 150)]
    pub size: usize,
    /// Layouts shown per room type (1 to 30), spread evenly over the 30 layout indices.
    #[arg(long, default_value_t = 6)]
    pub per_type: usize,
    /// Show setting S2 (depth only) instead of S1 (RGB + depth).
    #[arg(long)]
    pub depth_only: bool,
    /// Seed of the candidate poses.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// One cell of an image sheet: a labelled observation (RGB and/or depth) with an optional
/// bounding box `[col_min, row_min, col_max, row_max]` outlined on each image.
pub struct SheetCell {
    /// Text above the images.
    pub label: String,
    /// The images (its vector is not drawn).
    pub obs: MultimodalObs,
    /// Pixel box outlined in green.
    pub bbox: Option<[usize; 4]>,
}

/// The pixel box `[col_min, row_min, col_max, row_max]` of a `[−1, 1]` bounding-box vector on a
/// `size × size` image (the inverse of `bbox_vector`, rounded and clamped to the image); `None`
/// for the all-zero "no detection" vector or a box of no area.
pub fn bbox_pixels(vector: &[f32], size: usize) -> Option<[usize; 4]> {
    if vector.len() != 4 || vector.iter().all(|&v| v == 0.0) {
        return None;
    }
    let n = size as f32;
    let edge = |v: f32| ((v.clamp(-1.0, 1.0) + 1.0) * 0.5 * n).round() as usize;
    let (c0, r0, c1, r1) = (
        edge(vector[0]),
        edge(vector[1]),
        edge(vector[2]),
        edge(vector[3]),
    );
    (c1 > c0 && r1 > r0).then(|| [c0, r0, (c1 - 1).min(size - 1), (r1 - 1).min(size - 1)])
}

/// Writes the sample sheet and prints its path.
pub fn run(args: RoomSheetArgs) -> Result<()> {
    ensure!(
        (1..=LAYOUTS_PER_TYPE).contains(&args.per_type),
        "--per-type must be between 1 and {LAYOUTS_PER_TYPE}, got {}",
        args.per_type
    );
    ensure!(
        (16..=512).contains(&args.size),
        "--size must be between 16 and 512 pixels, got {}",
        args.size
    );
    let setting = if args.depth_only {
        RoomSetting::S2
    } else {
        RoomSetting::S1
    };
    let config = RoomConfig::s1()
        .with_setting(setting)
        .with_image_size(args.size);
    let out = match &args.out {
        Some(out) => out.clone(),
        None => crate::run::suite_dir("env")?.join("rooms.png"),
    };
    let mut rows = Vec::new();
    for room_type in RoomType::ALL {
        let cells = (0..args.per_type)
            .map(|col| {
                let index = col * LAYOUTS_PER_TYPE / args.per_type;
                let seed = args.seed ^ ((room_type.index() * LAYOUTS_PER_TYPE + index) as u64);
                render_cell(&config, room_type, index, seed)
            })
            .collect::<Result<Vec<_>>>()?;
        rows.push((room_type.name().replace('_', " "), cells));
    }
    let title = format!(
        "privrl room task ({}): {} of {} generated layouts, {} × {}",
        if setting == RoomSetting::S1 {
            "S1, RGB + depth"
        } else {
            "S2, depth only"
        },
        rows.len() * args.per_type,
        RoomType::ALL.len() * LAYOUTS_PER_TYPE,
        args.size,
        args.size
    );
    let legend = format!(
        "{}depth: white = 0 m, black ≥ {DEPTH_SHOWN_M} m; green: the target's bounding box (the \
         vector state); r: reward (detection-confidence proxy)",
        if setting == RoomSetting::S1 {
            "left: RGB; right: "
        } else {
            ""
        }
    );
    draw_sheet(&out, &title, &rows, args.size as u32, 1, &legend)?;
    println!("wrote {}", out.display());
    Ok(())
}

/// Renders layout `index` of `room_type` from the candidate pose that sees the target and the
/// most of the room.
fn render_cell(
    config: &RoomConfig,
    room_type: RoomType,
    index: usize,
    seed: u64,
) -> Result<SheetCell> {
    let layout = Layout::generated(room_type, index).context("layout index in range")?;
    let mut env = config.clone().build()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let target = layout.target().map(|t| t.center());
    let half_fov = 0.5 * config.field_of_view_degrees.to_radians();
    let mut best: Option<(f64, SheetCell)> = None;
    for _ in 0..CANDIDATES {
        let cells = layout.free_cells();
        let [x, y] = cells[rng.random_range(0..cells.len())];
        let (x, y) = (f64::from(x), f64::from(y));
        let heading = match target {
            Some([tx, ty, _]) => {
                (f64::from(ty) - y).atan2(f64::from(tx) - x)
                    + rng.random_range(-0.6 * half_fov..0.6 * half_fov)
            }
            None => rng.random_range(0.0..std::f64::consts::TAU),
        };
        let state = [x, y, heading, room_type.index() as f64, index as f64];
        let Obs::Multimodal(obs) = env.set_state(&state)? else {
            anyhow::bail!("room observations are multimodal");
        };
        let detection = env.detection();
        let depth = obs.depth.as_ref().map_or(0.0, |d| {
            d.data.iter().map(|&v| f64::from(v)).sum::<f64>() / d.data.len() as f64
        });
        // Prefer poses that see the target, then a wide view of the room.
        let seen = if detection.confidence > 0.0 {
            10.0
        } else {
            0.0
        };
        let score = seen + depth;
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            // The row is labelled with the room type; the cell with the layout and reward.
            let label = format!("layout {index}  r = {:.2}", detection.confidence);
            let bbox = env.target_view().visible_bbox;
            debug_assert_eq!(bbox.is_some(), bbox_vector(env.target_view()) != [0.0; 4]);
            best = Some((score, SheetCell { label, obs, bbox }));
        }
    }
    Ok(best.context("at least one candidate pose")?.1)
}

/// Draws a sheet of labelled rows of [`SheetCell`]s (every image `image_size × image_size`,
/// shown `zoom` times larger by pixel replication) to a PNG.
pub fn draw_sheet(
    out: &std::path::Path,
    title: &str,
    rows: &[(String, Vec<SheetCell>)],
    image_size: u32,
    zoom: u32,
    legend: &str,
) -> Result<()> {
    register_fonts()?;
    let zoom = zoom.max(1);
    let size = image_size * zoom;
    let first = rows.first().and_then(|(_, cells)| cells.first());
    let images_per_cell: u32 = first.map_or(1, |c| {
        u32::from(c.obs.rgb.is_some()) + u32::from(c.obs.depth.is_some())
    });
    let images_per_cell = images_per_cell.max(1);
    let cell_w = images_per_cell * size + (images_per_cell - 1) * 2;
    let cell_h = LABEL_H + size;
    let columns = rows.iter().map(|(_, cells)| cells.len()).max().unwrap_or(0) as u32;
    let width = ROW_LABEL_W + columns * (cell_w + GAP) + GAP;
    let height = TITLE_H + rows.len() as u32 * (cell_h + GAP) + LEGEND_H;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let root = BitMapBackend::new(out, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        title.to_string(),
        (GAP as i32, 8),
        (FAMILY, 18).into_font().color(&BLACK),
    ))?;
    let label_style = (FAMILY, 13).into_font().color(&RGBColor(40, 40, 40));
    for (r, (row_label, cells)) in rows.iter().enumerate() {
        let y0 = TITLE_H + r as u32 * (cell_h + GAP);
        root.draw(&Text::new(
            row_label.clone(),
            (GAP as i32, (y0 + LABEL_H + size / 2) as i32 - 8),
            (FAMILY, 15).into_font().color(&BLACK),
        ))?;
        for (c, cell) in cells.iter().enumerate() {
            let x0 = ROW_LABEL_W + c as u32 * (cell_w + GAP);
            root.draw(&Text::new(
                cell.label.clone(),
                (x0 as i32, y0 as i32 + 2),
                label_style.clone(),
            ))?;
            let top = y0 + LABEL_H;
            let mut x = x0;
            if let Some(rgb) = &cell.obs.rgb {
                let n = rgb.height * rgb.width;
                draw_image(&root, x, top, rgb.width, rgb.height, zoom, |p| {
                    [rgb.data[p], rgb.data[n + p], rgb.data[2 * n + p]].map(to_byte)
                })?;
                draw_bbox(&root, x, top, zoom, image_size, cell.bbox)?;
                x += size + 2;
            }
            if let Some(depth) = &cell.obs.depth {
                // Depth values are metres / max_depth_m (10 m); show 0 m white, 7 m black.
                let scale = 10.0 / DEPTH_SHOWN_M;
                draw_image(&root, x, top, depth.width, depth.height, zoom, |p| {
                    let v = to_byte(1.0 - (depth.data[p] * scale).min(1.0));
                    [v, v, v]
                })?;
                draw_bbox(&root, x, top, zoom, image_size, cell.bbox)?;
            }
        }
    }
    root.draw(&Text::new(
        legend.to_string(),
        (GAP as i32, (height - LEGEND_H + 6) as i32),
        label_style,
    ))?;
    root.present()
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

fn to_byte(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// Draws a `width × height` image at `(x0, y0)`, each pixel as a `zoom × zoom` square;
/// `color(p)` gives pixel `p = row · width + col`.
fn draw_image<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    x0: u32,
    y0: u32,
    width: usize,
    height: usize,
    zoom: u32,
    color: impl Fn(usize) -> [u8; 3],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let zoom = zoom as usize;
    for row in 0..height * zoom {
        for col in 0..width * zoom {
            let [r, g, b] = color((row / zoom) * width + col / zoom);
            root.draw_pixel(
                ((x0 as usize + col) as i32, (y0 as usize + row) as i32),
                &RGBColor(r, g, b),
            )?;
        }
    }
    Ok(())
}

/// Outlines the visible bounding box `[col_min, row_min, col_max, row_max]` (image pixels) in
/// green on an image of `image_size × image_size` pixels drawn `zoom` times larger at `(x0, y0)`.
fn draw_bbox<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    x0: u32,
    y0: u32,
    zoom: u32,
    image_size: u32,
    bbox: Option<[usize; 4]>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let size = image_size * zoom;
    if let Some([c0, r0, c1, r1]) = bbox {
        let z = zoom as usize;
        let (c0, r0, c1, r1) = (c0 * z, r0 * z, c1 * z + z - 1, r1 * z + z - 1);
        // One pixel outside the box, so the outline does not hide the target's edge.
        let corner = |c: i32, r: i32| (x0 as i32 + c, y0 as i32 + r);
        let last = size as i32 - 1;
        root.draw(&Rectangle::new(
            [
                corner((c0 as i32 - 1).max(0), (r0 as i32 - 1).max(0)),
                corner((c1 as i32 + 1).min(last), (r1 as i32 + 1).min(last)),
            ],
            RGBColor(0, 230, 60).stroke_width(1),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bbox_pixels_inverts_the_bbox_vector() {
        // Columns 40..=59 and rows 10..=29 of 100: edges at (2·40 − 100)/100 = −0.2,
        // (2·10 − 100)/100 = −0.8, (2·60 − 100)/100 = 0.2, (2·30 − 100)/100 = −0.4.
        let vector = [-0.2, -0.8, 0.2, -0.4];
        assert_eq!(bbox_pixels(&vector, 100), Some([40, 10, 59, 29]));
        assert_eq!(bbox_pixels(&[0.0; 4], 100), None);
        // Out-of-range reconstructions are clamped to the image; an inverted box has no area.
        assert_eq!(bbox_pixels(&[-3.0, -1.0, 3.0, 1.0], 10), Some([0, 0, 9, 9]));
        assert_eq!(bbox_pixels(&[0.5, 0.5, -0.5, 0.9], 10), None);
    }

    #[test]
    fn writes_a_sheet_of_every_room_type() {
        let dir = std::env::temp_dir().join(format!("privrl-rooms-{}", std::process::id()));
        let out = dir.join("rooms.png");
        run(RoomSheetArgs {
            out: Some(out.clone()),
            size: 24,
            per_type: 2,
            depth_only: false,
            seed: 0,
        })
        .unwrap();
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        // PNG header: width and height, big-endian, at bytes 16..24.
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!(width, ROW_LABEL_W + 2 * (2 * 24 + 2 + GAP) + GAP);
        assert_eq!(height, TITLE_H + 4 * (LABEL_H + 24 + GAP) + LEGEND_H);
        std::fs::remove_dir_all(dir).unwrap();
        assert!(run(RoomSheetArgs {
            out: None,
            size: 24,
            per_type: 31,
            depth_only: true,
            seed: 0,
        })
        .is_err());
    }
}
