//! The suite's report: Table I (images), the vector, action and signal results, Table II and
//! Fig. 4 (baselines and ablation), the reconstruction sheets and the command that reproduces
//! it; every attack's run directory is written on the way.

use std::path::PathBuf;

use anyhow::Result;
use privrl_attacks::{InversionRow, Sample};
use privrl_envs::room::{RoomSetting, RoomType};

use super::headline::headline;
use super::{reconstruction_sheet, write_rows, InversionArgs, InversionPlan, Method};
use crate::report::{format_mean_std, Cell, Report};
use crate::run::{RunDir, RunName};
use crate::summary::SuiteOutcome;

/// Mean ± std of `f` over the rows where it is defined.
pub(crate) fn summary(rows: &[InversionRow], f: impl Fn(&InversionRow) -> Option<f64>) -> String {
    let values: Vec<f64> = rows
        .iter()
        .filter_map(f)
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        "-".into()
    } else {
        format_mean_std(&values)
    }
}

/// The paper's Table I averages (PSNR, SSIM), for comparison.
fn paper_table_one(method: Method, setting: RoomSetting, depth: bool) -> &'static str {
    match (method, setting, depth) {
        (Method::Qgi, RoomSetting::S1, false) => "21.02 / 0.729",
        (Method::Qgi, RoomSetting::S1, true) => "23.18 / 0.807",
        (Method::Qgi, RoomSetting::S2, true) => "26.46 / 0.910",
        (Method::Rgi, RoomSetting::S1, false) => "17.12 / 0.544",
        (Method::Rgi, RoomSetting::S1, true) => "18.58 / 0.581",
        (Method::Rgi, RoomSetting::S2, true) => "37.21 / 0.964",
        _ => "-",
    }
}

/// One attack's outcome: the method, the setting and one row per attacked sample.
type AttackOutcome = (Method, RoomSetting, Vec<InversionRow>);

/// Writes every attack's run directory and `report.md` in `dir`.
pub(super) fn write_report(
    dir: PathBuf,
    args: &InversionArgs,
    plan: InversionPlan,
    outcomes: Vec<(String, AttackOutcome)>,
    truths: Vec<(RoomSetting, Vec<Sample>)>,
    room_types: Vec<String>,
) -> Result<SuiteOutcome> {
    let mut report = Report::new(&dir, "Gradient inversion on RL: QGI and RGI");
    report.paragraph(&format!(
        "Li, Ding, Zhao, *Your Room is not Private*. One shared single-sample gradient of a \
         freshly initialised multimodal victim (strided convolutions over RGB and depth, Dense \
         layers over the target's bounding box, 7 actions) is inverted: action by eq. 7 (QGI) or \
         eq. 8 (RGI), the linear part's inputs (stage 1) then the images (stage 2) by cosine \
         gradient matching (eq. 5) plus a magnitude term μ(‖g_rec‖/‖g‖ − 1)², μ = 0.1 (ours: \
         eq. 5 alone leaves the scale of the linear part's input free; see \"QGI, eq. 5 alone\" \
         in Table II), through the error-direction surrogate (eq. 6) with a TV prior, then Q \
         (§IV-C2) or the reward (eq. 9). {} samples per cell from the pure-Rust rooms at \
         {}×{} px (the paper: 240 AI2THOR samples at 150×150), {} iterations per stage (the \
         paper: 2×10⁴), λ = {}, backend `{}`. Images are clamped to [0, 1]; PSNR and SSIM on \
         the Y channel (RGB) and on depth.",
        plan.samples,
        plan.image_size,
        plan.image_size,
        plan.iterations,
        plan.tv_weight,
        plan.backend
    ));
    let mut table_one = Vec::new();
    let mut table_two = Vec::new();
    let mut ablation = Vec::new();
    let mut sheets = Vec::new();
    for (_, (method, setting, rows)) in &outcomes {
        let run = RunDir::create(
            "inversion",
            RunName::new(method.slug())
                .part(format!("{setting:?}"))
                .seed(plan.seed),
        )?;
        run.write_config(&plan)?;
        write_rows(&run, rows)?;
        if let Some((_, truth)) = truths.iter().find(|(s, _)| s == setting) {
            let path = run.path().join("reconstructions.png");
            reconstruction_sheet(&path, *method, *setting, truth, rows, plan.image_size)?;
            if *method != Method::Rgi {
                sheets.push((
                    format!(
                        "{} {setting:?}: originals beside reconstructions",
                        method.name()
                    ),
                    path,
                ));
            }
        }
        if Method::ABLATIONS.contains(method)
            || (*method == Method::Qgi && *setting == RoomSetting::S1)
        {
            let [gradient, action, target, loss] = method.table_two_design();
            ablation.push(vec![
                Cell::from(method.name()),
                Cell::from(gradient),
                Cell::from(action),
                Cell::from(target),
                Cell::from(loss),
                Cell::from(summary(rows, |r| r.vector_iou)),
                Cell::from(summary(rows, |r| r.predicted_q_error_pct)),
                Cell::from(summary(rows, |r| r.target_q_error_pct)),
                Cell::from(format!(
                    "{} / {}",
                    summary(rows, |r| r.rgb.map(|s| s.psnr)),
                    summary(rows, |r| r.rgb.map(|s| s.ssim))
                )),
                Cell::from(format!(
                    "{} / {}",
                    summary(rows, |r| r.depth.map(|s| s.psnr)),
                    summary(rows, |r| r.depth.map(|s| s.ssim))
                )),
                Cell::from(method.paper_table_two()),
            ]);
        }
        if Method::ABLATIONS.contains(method) {
            continue;
        }
        for (modality, depth) in [("RGB", false), ("depth", true)] {
            let scores = |r: &InversionRow| if depth { r.depth } else { r.rgb };
            if rows.iter().all(|r| scores(r).is_none()) {
                continue;
            }
            let mut cells = vec![
                Cell::from(method.name()),
                Cell::from(format!("{setting:?}")),
                Cell::from(modality),
            ];
            for room in RoomType::ALL.map(|t| t.to_string()) {
                let of_type: Vec<InversionRow> = rows
                    .iter()
                    .filter(|r| room_types.get(r.sample).is_some_and(|t| *t == room))
                    .cloned()
                    .collect();
                cells.push(Cell::from(format!(
                    "{} / {}",
                    summary(&of_type, |r| scores(r).map(|s| s.psnr)),
                    summary(&of_type, |r| scores(r).map(|s| s.ssim))
                )));
            }
            cells.push(Cell::from(format!(
                "{} / {}",
                summary(rows, |r| scores(r).map(|s| s.psnr)),
                summary(rows, |r| scores(r).map(|s| s.ssim))
            )));
            cells.push(Cell::from(paper_table_one(*method, *setting, depth)));
            table_one.push(cells);
        }
        let accuracy =
            rows.iter().filter(|r| r.action_correct).count() as f64 / rows.len().max(1) as f64;
        table_two.push(vec![
            Cell::from(method.name()),
            Cell::from(format!("{setting:?}")),
            Cell::from(summary(rows, |r| r.vector_iou)),
            Cell::from(format!("{:.0}%", 100.0 * accuracy)),
            Cell::from(summary(rows, |r| r.predicted_q_error_pct)),
            Cell::from(summary(rows, |r| r.target_q_error_pct)),
            Cell::from(summary(rows, |r| r.reward_abs_error)),
            Cell::from(summary(rows, |r| Some(r.attack_ms / 1e3))),
        ]);
    }
    report
        .heading("Images (Table I): PSNR / SSIM, mean ± std over samples")
        .table(
            &[
                "method",
                "setting",
                "state",
                "bathroom",
                "bedroom",
                "kitchen",
                "living room",
                "average",
                "paper's average",
            ],
            table_one,
        )
        .heading("Vector state, action and supervision signal")
        .paragraph(
            "The paper reports mean IoU > 0.9, 100% action accuracy, Q errors < 1.1% and reward \
             errors < 1e-6.",
        )
        .table(
            &[
                "method",
                "setting",
                "bbox IoU",
                "action accuracy",
                "ε(Q̂) %",
                "ε(Q) %",
                "|r − r_rec|",
                "seconds / sample",
            ],
            table_two,
        );
    if !ablation.is_empty() {
        report
            .heading("Table II and Fig. 4: baselines and ablation (DQN victim, S1)")
            .paragraph(
                "The same samples and victim as QGI S1. DLG and Inverting Gradients match the \
                 objective's gradient, so they need the action and the target Q first (rule) or \
                 optimise them with the input (opt); QGI matches the error direction (eq. 6). \
                 \"QGI, joint state\" optimises images and vector together (Fig. 4); \
                 \"QGI, eq. 5 alone\" drops our magnitude term from the matching loss.",
            )
            .table(
                &[
                    "method",
                    "gradient",
                    "action",
                    "target Q",
                    "loss",
                    "bbox IoU",
                    "ε(Q̂) %",
                    "ε(Q) %",
                    "RGB PSNR / SSIM",
                    "depth PSNR / SSIM",
                    "paper: IoU / ε(Q̂) / ε(Q)",
                ],
                ablation,
            );
    }
    let headline = headline(
        outcomes
            .iter()
            .find(|(_, (m, s, _))| *m == Method::Qgi && *s == RoomSetting::S1)
            .map_or(&[][..], |(_, (_, _, rows))| rows.as_slice()),
    );
    headline.add_to(&mut report);
    report.heading("Reconstructions");
    for (caption, path) in &sheets {
        report.image(caption, path, None);
    }
    let mut command = format!(
        "cargo xtask suite inversion --samples {} --image-size {} --iterations {} --tv-weight {} --seed {}",
        plan.samples, plan.image_size, plan.iterations, plan.tv_weight, plan.seed
    );
    if args.quick {
        command = "cargo xtask suite inversion --quick".into();
    }
    if args.skip_ablations {
        command.push_str(" --skip-ablations");
    }
    report.reproduce([command]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}
