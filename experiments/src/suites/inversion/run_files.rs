//! What an attack's run directory holds besides `config.json`: `metrics.csv` and
//! `summary.json` of its rows, and the Fig. 3-style reconstruction sheet.

use anyhow::Result;
use privrl_attacks::{ImageScores, InversionRow, Sample};
use privrl_envs::room::RoomSetting;
use privrl_envs::{Image, MultimodalObs};

use super::method::Method;
use crate::room_sheet::{bbox_pixels, draw_sheet, SheetCell};
use crate::run::RunDir;

/// A Fig. 3-style sheet: one row per sample (up to 6), the original beside the reconstruction,
/// with the true and the reconstructed bounding boxes.
pub(crate) fn reconstruction_sheet(
    path: &std::path::Path,
    method: Method,
    setting: RoomSetting,
    truth: &[Sample],
    rows: &[InversionRow],
    size: usize,
) -> Result<()> {
    let image = |data: &Option<Vec<f32>>, channels: usize| {
        data.as_ref().map(|d| Image {
            channels,
            height: size,
            width: size,
            data: d.clone(),
        })
    };
    let sheet_rows: Vec<(String, Vec<SheetCell>)> = rows
        .iter()
        .take(6)
        .filter_map(|row| truth.get(row.sample).map(|t| (row, t)))
        .map(|(row, t)| {
            let psnr: Vec<String> = [("RGB", row.rgb), ("depth", row.depth)]
                .into_iter()
                .filter_map(|(name, s): (&str, Option<ImageScores>)| {
                    s.map(|s| format!("{name} {:.1} dB", s.psnr))
                })
                .collect();
            let original = SheetCell {
                label: "original".into(),
                obs: MultimodalObs {
                    rgb: image(&t.rgb, 3),
                    depth: image(&t.depth, 1),
                    vector: t.vector.clone(),
                },
                bbox: bbox_pixels(&t.vector, size),
            };
            let rec = &row.reconstructed;
            let reconstruction = SheetCell {
                label: format!("{}: {}", method.name(), psnr.join(", ")),
                obs: MultimodalObs {
                    rgb: image(&rec.rgb, 3),
                    depth: image(&rec.depth, 1),
                    vector: rec.vector.clone(),
                },
                bbox: bbox_pixels(&rec.vector, size),
            };
            (
                format!("sample {}", row.sample),
                vec![original, reconstruction],
            )
        })
        .collect();
    draw_sheet(
        path,
        &format!("{} {setting:?}, {size} × {size}", method.name()),
        &sheet_rows,
        size as u32,
        (96 / size as u32).max(1),
        "original | reconstruction (PSNR); green: bounding boxes",
    )
}

/// `metrics.csv` (one row per attacked sample) and `summary.json` of an attack's run.
pub(crate) fn write_rows(run: &RunDir, rows: &[InversionRow]) -> Result<()> {
    let mut metrics = run.metrics()?;
    let nan = f64::NAN;
    for row in rows {
        metrics.write_row(&[
            ("sample", row.sample as f64),
            ("rgb_psnr", row.rgb.as_ref().map_or(nan, |s| s.psnr)),
            ("rgb_ssim", row.rgb.as_ref().map_or(nan, |s| s.ssim)),
            ("depth_psnr", row.depth.as_ref().map_or(nan, |s| s.psnr)),
            ("depth_ssim", row.depth.as_ref().map_or(nan, |s| s.ssim)),
            ("vector_iou", row.vector_iou.unwrap_or(nan)),
            ("action_correct", f64::from(u8::from(row.action_correct))),
            (
                "predicted_q_error_pct",
                row.predicted_q_error_pct.unwrap_or(nan),
            ),
            ("target_q_error_pct", row.target_q_error_pct.unwrap_or(nan)),
            ("reward_abs_error", row.reward_abs_error.unwrap_or(nan)),
            ("failed", f64::from(u8::from(row.failed))),
            ("attack_ms", row.attack_ms),
        ])?;
    }
    run.write_summary(&rows)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::dispatch;
    use crate::suites::inversion::plan::paper_normalisation;
    use crate::suites::inversion::{room_samples, tests::tiny_plan, InversionJob, VictimWidth};

    #[test]
    fn every_method_attacks_and_draws_its_reconstruction_sheet() {
        let plan = tiny_plan(1);
        let (truth, _) =
            room_samples(RoomSetting::S1, plan.image_size, plan.samples, plan.seed).unwrap();
        let dir = crate::run::tests::temp_dir("inversion-sheet");
        for method in [Method::Qgi, Method::Rgi]
            .into_iter()
            .chain(Method::ABLATIONS)
        {
            let rows = dispatch(
                plan.backend,
                InversionJob {
                    plan: plan.clone(),
                    method,
                    setting: RoomSetting::S1,
                    samples: truth.clone(),
                    batch_size: 1,
                    width: VictimWidth::Paper,
                    normalisation: paper_normalisation(RoomSetting::S1),
                },
            )
            .unwrap();
            assert_eq!(rows.len(), 1);
            let rec = &rows[0].reconstructed;
            assert_eq!(
                rec.rgb.as_ref().map(Vec::len),
                Some(3 * 8 * 8),
                "{method:?}"
            );
            assert_eq!(rec.depth.as_ref().map(Vec::len), Some(8 * 8), "{method:?}");
            assert_eq!(rec.vector.len(), 4);
            let path = dir.join(format!("{}.png", method.slug()));
            reconstruction_sheet(&path, method, RoomSetting::S1, &truth, &rows, 8).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[1..4], b"PNG");
            // 8 px images zoomed 12× (96 px), RGB and depth side by side, two cells per row.
            let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            assert!(width >= 2 * (2 * 96 + 2), "{width}");
        }
    }
}
