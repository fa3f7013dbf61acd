//! An attack cell's run directory, the suite's unit: `config.json` (the plan, the victim, the
//! normalisation and the commit it ran at), `metrics.csv` and `summary.json` of its rows, and
//! the Fig. 3-style reconstruction sheet. A cell whose directory holds a `summary.json` of the
//! same configuration is read back instead of attacked again, so an interrupted suite resumes.

use std::path::Path;

use anyhow::{Context, Result};
use privrl_attacks::{AttackConfig, ImageScores, InversionRow, Sample};
use privrl_envs::room::RoomSetting;
use privrl_envs::{Image, MultimodalObs};
use serde::Serialize;

use super::method::Method;
use super::plan::{InversionPlan, NormalisationArg, VictimWidth};
use crate::room_sheet::{bbox_pixels, draw_sheet, SheetCell};
use crate::run::{read_json, source_commit, RunDir, RunName};

/// One attack cell of the suite: an attack on one setting's samples against one victim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttackCell {
    pub(crate) method: Method,
    pub(crate) setting: RoomSetting,
    pub(crate) width: VictimWidth,
}

/// What a cell's `config.json` records.
#[derive(Debug, Clone, Serialize)]
struct CellConfig<'a> {
    method: Method,
    setting: String,
    plan: &'a InversionPlan,
    victim: VictimWidth,
    normalisation: NormalisationArg,
    /// The attack exactly as it ran (matching loss, prior, stages, optimiser).
    attack: AttackConfig,
    /// The commit the cell ran at (`None` outside a git checkout): criteria must predate it.
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    /// Samples attacked in one optimisation (`--attack-batch`), absent for 1 (one at a time,
    /// as every cell before the flag ran). Like the commit, not compared when a finished cell
    /// is read back: it changes the rows by float rounding only.
    #[serde(skip_serializing_if = "is_one")]
    attack_batch: usize,
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

impl AttackCell {
    /// The cell's run directory under `dir`, e.g. `qgi-s1-wide-seed0` (created).
    pub(crate) fn run_dir(&self, dir: &Path, seed: u64) -> Result<RunDir> {
        let name = RunName::new(self.method.slug())
            .part(format!("{:?}", self.setting))
            .part(match self.width {
                VictimWidth::Paper => "",
                VictimWidth::Wide => "wide",
            })
            .seed(seed);
        let (root, suite) = match (dir.parent(), dir.file_name().and_then(|n| n.to_str())) {
            (Some(root), Some(suite)) => (root, suite),
            _ => anyhow::bail!("{} is not a directory inside another", dir.display()),
        };
        RunDir::create_in(root, suite, name)
    }

    fn config<'a>(
        &self,
        plan: &'a InversionPlan,
        normalisation: NormalisationArg,
    ) -> CellConfig<'a> {
        CellConfig {
            method: self.method,
            setting: format!("{:?}", self.setting),
            plan,
            victim: self.width,
            normalisation,
            attack: self
                .method
                .attack_config(plan.iterations, plan.seed, plan.tv_weight),
            commit: None,
            attack_batch: 1,
        }
    }

    /// The rows of this cell if its run directory holds a finished run of the same plan,
    /// victim and normalisation (at whatever commit it ran).
    pub(crate) fn finished_rows(
        &self,
        run: &RunDir,
        plan: &InversionPlan,
        normalisation: NormalisationArg,
    ) -> Result<Option<Vec<InversionRow>>> {
        let drop_commit = |mut recorded: serde_json::Value| {
            if let Some(map) = recorded.as_object_mut() {
                map.remove("commit");
                map.remove("attack_batch");
            }
            recorded
        };
        if !run.completed_with_recorded(&self.config(plan, normalisation), drop_commit)? {
            return Ok(None);
        }
        let path = run.file("summary.json");
        read_json(&path)
            .map(Some)
            .with_context(|| format!("reading the rows of {}", path.display()))
    }

    /// Writes the cell's run directory (config with the commit, rows, reconstruction sheet)
    /// as soon as its attack finishes.
    pub(crate) fn write(
        &self,
        run: &RunDir,
        plan: &InversionPlan,
        normalisation: NormalisationArg,
        truth: &[Sample],
        rows: &[InversionRow],
        attack_batch: usize,
    ) -> Result<()> {
        run.write_config(&CellConfig {
            commit: source_commit(),
            attack_batch,
            ..self.config(plan, normalisation)
        })?;
        reconstruction_sheet(
            &run.file("reconstructions.png"),
            self.method,
            self.setting,
            truth,
            rows,
            plan.image_size,
        )?;
        // Last: `summary.json` marks the cell finished.
        write_rows(run, rows)
    }
}

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
    use crate::suites::inversion::{tests::tiny_plan, InversionJob, VictimWidth};

    #[test]
    fn every_method_attacks_and_draws_its_reconstruction_sheet() {
        let plan = tiny_plan(1);
        let (truth, _) = plan.room_samples(RoomSetting::S1).unwrap();
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
                    attack_batch: 1,
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
