//! The suite's report: Table I (images), the vector, action and signal results, Table II and
//! Fig. 4 (baselines and ablation), the reconstruction sheets and the command that reproduces
//! it; every attack's run directory is written on the way.

use std::path::PathBuf;

use anyhow::Result;
use privrl_attacks::{InversionRow, Sample};
use privrl_envs::room::{RoomSetting, RoomType};

use super::baseline::{
    baseline_rows, flat_scores, initialisation_scores, recovered, BaselineScores,
};
use super::headline::headline;
use super::method::Method;
use super::plan::{InversionArgs, InversionPlan, NormalisationArg, RoomSelection, VictimWidth};
use super::run_files::AttackCell;
use super::verdict::{
    claim_verdict, criterion, fig_four_iou_verdict, format_paper, paired, paper_table_one,
    paper_table_two, shows_recovery, verdict, Column, Paired, PairedOutcome, PaperValue, Verdict,
    RECOVERY_MARGIN_DB,
};
use crate::report::{format_mean_std, format_number, Cell, Report};
use crate::summary::SuiteOutcome;

/// Mean ± std of `f` over the rows whose attack did not fail ([`InversionRow::failed`]) and
/// where `f` is defined (`None`: the state has no such part). Failed rows are left out of the
/// mean and counted by [`failure_rate`], which every table that uses this shows beside it;
/// a non-failed row's value is never skipped, ±∞ included (a PSNR of ∞ is a perfect image).
pub(crate) fn summary(rows: &[InversionRow], f: impl Fn(&InversionRow) -> Option<f64>) -> String {
    let values: Vec<f64> = rows.iter().filter(|r| !r.failed).filter_map(f).collect();
    if values.is_empty() {
        "-".into()
    } else {
        format_mean_std(&values)
    }
}

/// The failed attacks among `rows`, as "k/n (p%)": the failure-rate column of every table
/// whose means [`summary`] takes over the other rows.
pub(crate) fn failure_rate(rows: &[InversionRow]) -> String {
    let failed = rows.iter().filter(|r| r.failed).count();
    let percent = 100.0 * failed as f64 / rows.len().max(1) as f64;
    format!("{failed}/{} ({percent:.0}%)", rows.len())
}

/// How every table of the suite treats failed attacks.
pub(crate) const FAILURE_NOTE: &str =
    "\"failed\": attacks that diverged on a sample (a non-finite loss, reconstruction or \
     recovered signal, or a NaN score). They are counted in that column and left out of the \
     means beside it; no other row is left out.";

/// The verdict on `f` over `rows` against the paper's value: on the values [`summary`]
/// averages, with the failed rows counted against the column.
fn judged(
    column: Column,
    rows: &[InversionRow],
    f: impl Fn(&InversionRow) -> Option<f64>,
    paper: PaperValue,
) -> Verdict {
    let (values, failed) = judged_values(rows, f);
    verdict(column, &values, failed, rows.len(), paper)
}

/// What a verdict is judged on: `f` over the rows whose attack did not fail, and how many
/// failed (counted against the column).
fn judged_values(
    rows: &[InversionRow],
    f: impl Fn(&InversionRow) -> Option<f64>,
) -> (Vec<f64>, usize) {
    let values = rows.iter().filter(|r| !r.failed).filter_map(f).collect();
    (values, rows.iter().filter(|r| r.failed).count())
}

/// The trivial baselines of one setting's samples, scored per sample.
struct Baselines {
    setting: RoomSetting,
    flat: Vec<BaselineScores>,
    initialisation: Vec<BaselineScores>,
}

impl Baselines {
    fn of(
        setting: RoomSetting,
        samples: &[Sample],
        plan: &InversionPlan,
        normalisation: NormalisationArg,
    ) -> Result<Self> {
        let config = Method::Qgi.attack_config(plan.iterations, plan.seed, plan.tv_weight);
        Ok(Self {
            setting,
            flat: samples
                .iter()
                .map(|s| flat_scores(s, plan.image_size))
                .collect::<Result<_>>()?,
            initialisation: samples
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    initialisation_scores(
                        s,
                        i,
                        plan.image_size,
                        &config,
                        normalisation.of(setting),
                        plan.seed,
                    )
                })
                .collect::<Result<_>>()?,
        })
    }
}

/// Writes `report.md` in `dir` from every attack cell's rows (the cells' run directories,
/// with their reconstruction sheets, are already there).
pub(super) fn write_report(
    dir: PathBuf,
    args: &InversionArgs,
    plan: InversionPlan,
    outcomes: Vec<(AttackCell, Vec<InversionRow>)>,
    truths: Vec<(RoomSetting, Vec<Sample>)>,
    room_types: Vec<String>,
) -> Result<SuiteOutcome> {
    let mut report = Report::new(&dir, "Gradient inversion on RL: QGI and RGI");
    method_paragraphs(&mut report, args, &plan);
    let main_width = args.victim_widths()?[0];
    let baselines = truths
        .iter()
        .map(|(setting, samples)| Baselines::of(*setting, samples, &plan, args.normalisation))
        .collect::<Result<Vec<_>>>()?;
    let mut tables = Tables::default();
    for (setting, _) in &truths {
        if let Some(b) = baselines.iter().find(|b| b.setting == *setting) {
            tables.add_baselines(b, &room_types);
        }
    }
    for (cell, rows) in &outcomes {
        if let Some(caption) = sheet_caption(cell) {
            let path = cell.run_dir(&dir, plan.seed)?.file("reconstructions.png");
            if path.is_file() {
                tables.sheets.push((caption, path));
            }
        }
        let flat = baselines
            .iter()
            .find(|b| b.setting == cell.setting)
            .map_or(&[][..], |b| b.flat.as_slice());
        tables.add(*cell, rows, main_width, &room_types, flat);
    }
    if !tables.ablation.is_empty() {
        if let Some(b) = baselines.iter().find(|b| b.setting == RoomSetting::S1) {
            let flat = ablation_row(FLAT_ROW, None, &baseline_rows(&b.flat), &[]);
            tables.ablation.insert(0, flat);
        }
    }
    let (comparisons, claim_verdicts) = claims(&outcomes, main_width);
    tables.verdicts.extend(claim_verdicts);
    images_and_vector_tables(&mut report, &room_types, tables.table_one, tables.table_two);
    verdicts_section(&mut report, tables.verdicts);
    ablation_section(&mut report, tables.ablation, comparisons);
    magnitude_term_section(&mut report, &outcomes, main_width);
    let headline = headline(
        outcomes
            .iter()
            .find(|(c, _)| {
                c.method == Method::Qgi && c.setting == RoomSetting::S1 && c.width == main_width
            })
            .map_or(&[][..], |(_, rows)| rows.as_slice()),
    );
    headline.add_to(&mut report);
    reconstructions_section(&mut report, &tables.sheets);
    report.reproduce([reproduce_command(args, &plan)]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The method paragraph (the attack, the samples, the normalisation) and the victims'.
fn method_paragraphs(report: &mut Report, args: &InversionArgs, plan: &InversionPlan) {
    report.paragraph(&format!(
        "Li, Ding, Zhao, *Your Room is not Private*. One shared single-sample gradient of a \
         freshly initialised multimodal victim (strided convolutions over RGB and depth, Dense \
         layers over the target's bounding box, 7 actions) is inverted: action by eq. 7 (QGI) or \
         eq. 8 (RGI), the linear part's inputs (stage 1) then the images (stage 2) by cosine \
         gradient matching (eq. 5) through the error-direction surrogate (eq. 6) with a TV \
         prior, then Q (§IV-C2) or the reward (eq. 9). privrl's addition to eq. 5, a magnitude \
         term μ(‖g_rec‖/‖g‖ − 1)², μ = 0.1, is the labelled extra row \"QGI + magnitude term \
         (privrl)\"; \"The magnitude term\" below tests whether it matters. {} samples per cell \
         ({}) from the pure-Rust rooms at {}×{} px (the paper: 240 AI2THOR samples at 150×150), {} iterations per stage (the \
         paper: 2×10⁴), λ = {}, backend `{}`. {} PSNR and SSIM on the Y channel (RGB) and on \
         depth, data range 1. Depth is the distance along the optical axis divided by 10 m and \
         clipped to [0, 1]; the paper does not state its depth range.",
        plan.samples,
        match plan.rooms {
            RoomSelection::Balanced => "as many of each room type as the count allows",
            RoomSelection::First => {
                "the first sampled views that show the target, whatever their room type: \
                 `--rooms first`"
            }
        },
        plan.image_size,
        plan.image_size,
        plan.iterations,
        plan.tv_weight,
        plan.backend,
        match args.normalisation {
            NormalisationArg::Paper => {
                "Normalisation as the paper's (Section V, \"Metric\"): in S1 the RGB \
                 reconstruction is scaled so that its brightest pixel is 1 and depth by the same \
                 factor, then both are clamped to [0, 1]; in S2, which has no RGB image, the \
                 paper states no rescaling, so depth is only clamped."
            }
            NormalisationArg::Clamp => {
                "Reconstructions are clamped to [0, 1] (`--normalisation clamp`; the paper \
                 rescales S1 by the brightest RGB pixel)."
            }
        }
    ));
    report.paragraph(
        "Victims: **paper width** has two 3×3 stride-2 convolutions of 8 channels per image, \
         which keeps the ratios of the paper's DQN encoder (Mnih et al., its ref. [18]: 32 \
         8×8/4, 64 4×4/2, 64 3×3/1) at the paper's 150 px: 0.5 features per depth pixel and \
         0.17 per RGB value (DQN: 0.64 and 0.21), so the features that stage 1 recovers \
         under-determine the images. The paper gives no widths of its own. **wide (extra)** \
         is privrl's earlier victim (16 and 32 channels: 2 features per depth pixel), kept as \
         a labelled extra row: its features over-determine the depth image, which makes \
         stage 2 easier than in the paper. Both have a 32-unit Dense layer over the box and a \
         64-unit hidden Dense layer after the concatenation.",
    );
}

/// The caption of a cell's reconstruction sheet where the report shows it (RGI's images are
/// in its run directory, not in the report).
fn sheet_caption(cell: &AttackCell) -> Option<String> {
    (cell.method != Method::Rgi).then(|| {
        format!(
            "{} {:?}, {}: originals beside reconstructions",
            cell.method.name(),
            cell.setting,
            cell.width.label()
        )
    })
}

/// The rows of the report's tables and its verdicts, gathered attack by attack.
#[derive(Default)]
struct Tables {
    /// Table I: images, one row per attack and modality.
    table_one: Vec<Vec<Cell>>,
    /// Vector state, action and supervision signal, one row per attack.
    table_two: Vec<Vec<Cell>>,
    /// Table II and Fig. 4: baselines and ablation.
    ablation: Vec<Vec<Cell>>,
    /// Reconstruction sheets: caption and path.
    sheets: Vec<(String, PathBuf)>,
    /// One line per verdict against the paper.
    verdicts: Vec<String>,
}

impl Tables {
    /// Adds one attack's rows to the tables it belongs in; `flat` is the flat oracle's scores
    /// on the cell's samples, which decide how many images were recovered.
    fn add(
        &mut self,
        cell: AttackCell,
        rows: &[InversionRow],
        main_width: VictimWidth,
        room_types: &[String],
        flat: &[BaselineScores],
    ) {
        let AttackCell {
            method,
            setting,
            width,
        } = cell;
        let main_victim = width == main_width;
        if Method::ABLATIONS.contains(&method)
            || (method == Method::Qgi && setting == RoomSetting::S1 && main_victim)
        {
            self.ablation
                .push(ablation_row(method.name(), Some(method), rows, flat));
        }
        if Method::ABLATIONS.contains(&method) {
            self.verdicts
                .extend(table_two_verdicts(method, width, rows));
            return;
        }
        for (modality, depth) in [("RGB", false), ("depth", true)] {
            let scores = |r: &InversionRow| if depth { r.depth } else { r.rgb };
            if rows.iter().all(|r| scores(r).is_none()) {
                continue;
            }
            let (cells, verdict) = table_one_row(
                (method.name(), setting, width.label()),
                (modality, depth),
                rows,
                room_types,
                Some(flat),
                paper_table_one(method, setting, depth),
            );
            self.verdicts.extend(verdict);
            self.table_one.push(cells);
        }
        if setting == RoomSetting::S1 {
            self.verdicts
                .extend(table_two_verdicts(method, width, rows));
        }
        self.table_two
            .push(table_two_row(method, setting, width, rows));
    }

    /// Table I's baseline rows of one setting: the flat oracle and the initialisation.
    fn add_baselines(&mut self, baselines: &Baselines, room_types: &[String]) {
        for (name, scores) in [
            (FLAT_ROW, &baselines.flat),
            (INITIALISATION_ROW, &baselines.initialisation),
        ] {
            let rows = baseline_rows(scores);
            for (modality, depth) in [("RGB", false), ("depth", true)] {
                let defined = |r: &InversionRow| if depth { r.depth } else { r.rgb };
                if rows.iter().all(|r| defined(r).is_none()) {
                    continue;
                }
                let (cells, _) = table_one_row(
                    (name, baselines.setting, "-"),
                    (modality, depth),
                    &rows,
                    room_types,
                    None,
                    None,
                );
                self.table_one.push(cells);
            }
        }
    }
}

/// Table I's row of the flat-at-the-true-mean oracle.
const FLAT_ROW: &str = "baseline: flat at the true mean (oracle)";
/// Table I's row of the attack's initialisation.
const INITIALISATION_ROW: &str = "baseline: initialisation N(0, 1)";

/// A row of Table II and Fig. 4 (baselines and ablation): an attack's (`method`), or the flat
/// oracle's (`method: None`, no design, no Q errors); `flat` is the flat oracle's scores on
/// the same samples, which decide how many images were recovered.
fn ablation_row(
    name: &str,
    method: Option<Method>,
    rows: &[InversionRow],
    flat: &[BaselineScores],
) -> Vec<Cell> {
    let design = method.map_or(["-"; 4], Method::table_two_design);
    let mut cells = vec![Cell::from(name)];
    cells.extend(design.map(Cell::from));
    cells.extend([
        Cell::from(summary(rows, |r| r.vector_iou)),
        Cell::from(summary(rows, |r| r.predicted_q_error_pct)),
        Cell::from(summary(rows, |r| r.target_q_error_pct)),
    ]);
    for depth in [false, true] {
        let scores = |r: &InversionRow| if depth { r.depth } else { r.rgb };
        cells.push(Cell::from(format!(
            "{} / {}",
            summary(rows, |r| scores(r).map(|s| s.psnr)),
            summary(rows, |r| scores(r).map(|s| s.ssim))
        )));
        cells.push(Cell::from(match method {
            Some(_) if !flat.is_empty() => {
                format!("{}/{}", recovered(rows, flat, depth), rows.len())
            }
            _ => "-".into(),
        }));
    }
    cells.push(Cell::from(failure_rate(rows)));
    cells.push(Cell::from(method.map_or("-", Method::paper_table_two)));
    cells
}

/// A row of Table I for one modality (`depth`: depth, else RGB) — an attack's, or a
/// baseline's (`flat: None`, no recovery column) — and its verdict line where the paper has a
/// value. `(name, setting, victim)` label the row.
fn table_one_row(
    (name, setting, victim): (&str, RoomSetting, &str),
    (modality, depth): (&str, bool),
    rows: &[InversionRow],
    room_types: &[String],
    flat: Option<&[BaselineScores]>,
    paper: Option<(PaperValue, PaperValue)>,
) -> (Vec<Cell>, Option<String>) {
    let scores = |r: &InversionRow| if depth { r.depth } else { r.rgb };
    let mut cells = vec![
        Cell::from(name),
        Cell::from(format!("{setting:?}")),
        Cell::from(victim),
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
    cells.push(Cell::from(failure_rate(rows)));
    let recovery = flat.map(|flat| (recovered(rows, flat, depth), rows.len()));
    cells.push(Cell::from(
        recovery.map_or("-".into(), |(k, n)| format!("{k}/{n}")),
    ));
    let mut verdict_line = None;
    match paper {
        Some((psnr, ssim)) => {
            let psnr_verdict = judged(Column::Score, rows, |r| scores(r).map(|s| s.psnr), psnr);
            let ssim_verdict = judged(Column::Score, rows, |r| scores(r).map(|s| s.ssim), ssim);
            let no_recovery = recovery.is_some_and(|(k, n)| !shows_recovery(k, n));
            let recovery_note = match recovery {
                Some((k, n)) if no_recovery => {
                    format!("; **no recovery** ({k}/{n} images recovered)")
                }
                Some((k, n)) => format!("; {k}/{n} images recovered"),
                None => String::new(),
            };
            cells.push(Cell::from(format!(
                "{} / {}",
                format_paper(psnr),
                format_paper(ssim)
            )));
            cells.push(Cell::from(format!(
                "{psnr_verdict} / {ssim_verdict}{}",
                if no_recovery { "; no recovery" } else { "" }
            )));
            verdict_line = Some(format!(
                "Table I, {name} {setting:?} {modality}, {victim}: PSNR {psnr_verdict}, SSIM \
                 {ssim_verdict}{recovery_note}",
            ));
        }
        None => cells.extend([Cell::from("-"), Cell::from("-")]),
    }
    (cells, verdict_line)
}

/// An S1 attack's verdicts on IoU and both Q errors against its row of the paper's Table II
/// (none when the paper has no row for it).
fn table_two_verdicts(method: Method, width: VictimWidth, rows: &[InversionRow]) -> Vec<String> {
    let Some(paper_row) = paper_table_two(method) else {
        return Vec::new();
    };
    [&IOU, &PREDICTED_Q, &TARGET_Q]
        .into_iter()
        .zip(paper_row)
        .map(|(column, paper)| {
            format!(
                "Table II, {} S1 {}, {}: {} (ours {}, the paper's {})",
                method.name(),
                column
                    .name
                    .trim_end_matches(" %")
                    .trim_start_matches("bbox "),
                width.label(),
                judged(column.column, rows, column.of, paper),
                summary(rows, column.of),
                format_paper(paper)
            )
        })
        .collect()
}

/// An attack's row of the vector state, action and supervision-signal table.
fn table_two_row(
    method: Method,
    setting: RoomSetting,
    width: VictimWidth,
    rows: &[InversionRow],
) -> Vec<Cell> {
    let accuracy =
        rows.iter().filter(|r| r.action_correct).count() as f64 / rows.len().max(1) as f64;
    vec![
        Cell::from(method.name()),
        Cell::from(format!("{setting:?}")),
        Cell::from(width.label()),
        Cell::from(summary(rows, |r| r.vector_iou)),
        Cell::from(format!("{:.0}%", 100.0 * accuracy)),
        Cell::from(summary(rows, |r| r.predicted_q_error_pct)),
        Cell::from(summary(rows, |r| r.target_q_error_pct)),
        Cell::from(summary(rows, |r| r.reward_abs_error)),
        Cell::from(summary(rows, |r| Some(r.attack_ms / 1e3))),
        Cell::from(failure_rate(rows)),
    ]
}

/// Table I (images) and the vector, action and signal table.
fn images_and_vector_tables(
    report: &mut Report,
    room_types: &[String],
    table_one: Vec<Vec<Cell>>,
    table_two: Vec<Vec<Cell>>,
) {
    // Each room type's column header says over how many samples it averages.
    let rooms = RoomType::ALL.map(|t| {
        let name = t.to_string();
        let n = room_types.iter().filter(|r| **r == name).count();
        format!("{} (n = {n})", name.replace('_', " "))
    });
    report
        .heading("Images (Table I): PSNR / SSIM, mean ± std over samples")
        .paragraph(FAILURE_NOTE)
        .paragraph(&format!(
            "Baselines (what an attacker scores who learnt nothing from the gradient): \
             \"{FLAT_ROW}\" replaces each image by a constant at the sample's own mean (per \
             colour channel), scored as it is: it knows the one statistic the gradient need \
             not reveal, so it bounds from above what knowing nothing but the mean scores. \
             \"{INITIALISATION_ROW}\" is a draw from the attack's initial distribution \
             (a fresh draw per sample), normalised as the reconstructions are. An image is \
             **recovered** when its PSNR is at least {RECOVERY_MARGIN_DB} dB above the flat \
             oracle's on the same sample (its squared error at most half the flat image's)."
        ))
        .table(
            &[
                "method",
                "setting",
                "victim",
                "state",
                &rooms[0],
                &rooms[1],
                &rooms[2],
                &rooms[3],
                "average",
                "failed",
                &format!("recovered (≥ flat + {RECOVERY_MARGIN_DB} dB)"),
                "paper's average",
                "verdict (PSNR / SSIM)",
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
                "victim",
                "bbox IoU",
                "action accuracy",
                "ε(Q̂) %",
                "ε(Q) %",
                "|r − r_rec|",
                "seconds / sample",
                "failed",
            ],
            table_two,
        );
}

/// The verdicts against the paper, under their criterion.
fn verdicts_section(report: &mut Report, verdicts: Vec<String>) {
    report
        .heading("Verdicts against the paper")
        .paragraph(&criterion())
        .bullets(verdicts);
}

/// Table II and Fig. 4 (baselines and ablation), where any ran, with the paired comparisons
/// that judge the paper's claims about them.
fn ablation_section(report: &mut Report, ablation: Vec<Vec<Cell>>, comparisons: Vec<Vec<Cell>>) {
    if ablation.is_empty() {
        return;
    }
    report
        .heading("Table II and Fig. 4: baselines and ablation (DQN victim, S1)")
        .paragraph(&format!(
            "The same samples and victim as QGI S1. DLG and Inverting Gradients match the \
             objective's gradient, so they need the action and the target Q first (rule) or \
             optimise them with the input (opt); QGI matches the error direction (eq. 6). \
             \"QGI, joint state\" optimises images and vector together (Fig. 4); \
             \"QGI + magnitude term (privrl)\" adds privrl's magnitude term to eq. 5 (an extra \
             row, not in the paper). \"{FLAT_ROW}\" is Table I's; \"recovered\" counts the \
             images at least {RECOVERY_MARGIN_DB} dB above it."
        ))
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
                "RGB recovered",
                "depth PSNR / SSIM",
                "depth recovered",
                "failed",
                "paper: IoU / ε(Q̂) / ε(Q)",
            ],
            ablation,
        );
    if comparisons.is_empty() {
        return;
    }
    report
        .paragraph(
            "The paper's claims about this table, per sample (paired): QGI against each \
             baseline (Table II) and against its joint ablation (Fig. 4), judged by the sign \
             test of the criterion; the verdicts are under \"Verdicts against the paper\".",
        )
        .table(
            &[
                "comparison",
                "score",
                "first",
                "second",
                "pairs",
                "first better",
                "first worse",
                "outcome",
            ],
            comparisons,
        );
}

/// One score of a row, where the row has it.
type ScoreOf = fn(&InversionRow) -> Option<f64>;

/// One column of a paired comparison: its name, the score, whether it is a score or an
/// error, and the difference under which two samples tie.
struct PairedColumn {
    name: &'static str,
    of: ScoreOf,
    column: Column,
    tie: f64,
}

/// Ties of the paired comparisons: PSNR in dB; IoU, SSIM and ε in percentage points.
const PSNR_TIE: f64 = 0.1;
const UNIT_TIE: f64 = 0.01;

const IOU: PairedColumn = PairedColumn {
    name: "bbox IoU",
    of: |r| r.vector_iou,
    column: Column::Score,
    tie: UNIT_TIE,
};
const RGB_PSNR: PairedColumn = PairedColumn {
    name: "RGB PSNR (dB)",
    of: |r| r.rgb.map(|s| s.psnr),
    column: Column::Score,
    tie: PSNR_TIE,
};
const DEPTH_PSNR: PairedColumn = PairedColumn {
    name: "depth PSNR (dB)",
    of: |r| r.depth.map(|s| s.psnr),
    column: Column::Score,
    tie: PSNR_TIE,
};
const RGB_SSIM: PairedColumn = PairedColumn {
    name: "RGB SSIM",
    of: |r| r.rgb.map(|s| s.ssim),
    column: Column::Score,
    tie: UNIT_TIE,
};
const DEPTH_SSIM: PairedColumn = PairedColumn {
    name: "depth SSIM",
    of: |r| r.depth.map(|s| s.ssim),
    column: Column::Score,
    tie: UNIT_TIE,
};
const PREDICTED_Q: PairedColumn = PairedColumn {
    name: "ε(Q̂) %",
    of: |r| r.predicted_q_error_pct,
    column: Column::Error,
    tie: UNIT_TIE,
};
const TARGET_Q: PairedColumn = PairedColumn {
    name: "ε(Q) %",
    of: |r| r.target_q_error_pct,
    column: Column::Error,
    tie: UNIT_TIE,
};

/// `first` against `second` on the same samples in one column: per sample the difference,
/// oriented so that positive favours `first` (an error's sign flipped; a failed attack scores
/// below any finished one), and the sign test's outcome.
fn compare(first: &[InversionRow], second: &[InversionRow], column: &PairedColumn) -> Paired {
    let value = |r: &InversionRow| {
        if r.failed {
            return Some(f64::NEG_INFINITY);
        }
        (column.of)(r).map(|v| match column.column {
            Column::Score => v,
            Column::Error => -v,
        })
    };
    let differences: Vec<f64> = first
        .iter()
        .filter_map(|a| {
            let b = second.iter().find(|b| b.sample == a.sample)?;
            match (value(a)?, value(b)?) {
                (x, y) if x == y => Some(0.0),
                (x, y) => Some(x - y),
            }
        })
        .collect();
    paired(&differences, column.tie)
}

/// The rows of `method` on S1 against the main victim, where that cell ran.
fn main_rows(
    outcomes: &[(AttackCell, Vec<InversionRow>)],
    method: Method,
    main_width: VictimWidth,
) -> Option<&[InversionRow]> {
    outcomes
        .iter()
        .find(|(c, _)| c.method == method && c.setting == RoomSetting::S1 && c.width == main_width)
        .map(|(_, rows)| rows.as_slice())
}

/// A row of a paired-comparison table: the column, both means, the pairs, the counts, and
/// the outcome in `words` (first better, second better).
fn paired_row(
    column: &PairedColumn,
    (first, second): (&[InversionRow], &[InversionRow]),
    result: Paired,
    words: (&str, &str),
) -> Vec<Cell> {
    let outcome = match result.outcome {
        PairedOutcome::FirstBetter(p) => format!("{} (p = {p:.3})", words.0),
        PairedOutcome::SecondBetter(p) => format!("{} (p = {p:.3})", words.1),
        PairedOutcome::NoDifference => "no difference detected".into(),
    };
    vec![
        Cell::from(column.name),
        Cell::from(summary(first, column.of)),
        Cell::from(summary(second, column.of)),
        Cell::from(format!("{}", result.pairs)),
        Cell::from(format!("{}", result.better)),
        Cell::from(format!("{}", result.worse)),
        Cell::from(outcome),
    ]
}

/// Table II's claim ("our method shows the best results") and Fig. 4's (joint optimisation
/// drops on every metric; joint IoU < 0.1 while QGI's > 0.9), judged by the criterion on the
/// main victim's S1 cells: the paired-comparison rows and the verdict lines.
fn claims(
    outcomes: &[(AttackCell, Vec<InversionRow>)],
    main_width: VictimWidth,
) -> (Vec<Vec<Cell>>, Vec<String>) {
    let (mut table, mut verdicts) = (Vec::new(), Vec::new());
    let Some(qgi) = main_rows(outcomes, Method::Qgi, main_width) else {
        return (table, verdicts);
    };
    let baselines = [
        Method::DlgJoint,
        Method::DlgRule,
        Method::InvertingGradients,
    ];
    let mut comparisons = Vec::new();
    for baseline in baselines {
        let Some(rows) = main_rows(outcomes, baseline, main_width) else {
            continue;
        };
        for column in [&IOU, &PREDICTED_Q, &TARGET_Q] {
            let result = compare(qgi, rows, column);
            comparisons.push(result.outcome);
            let mut cells = vec![Cell::from(format!("QGI vs {}", baseline.name()))];
            cells.extend(paired_row(
                column,
                (qgi, rows),
                result,
                ("QGI better", "baseline better"),
            ));
            table.push(cells);
        }
    }
    if comparisons.len() == 3 * baselines.len() {
        verdicts.push(format!(
            "Table II, \"our method shows the best results\" (QGI against DLG, DLG with the \
             rule action and IG on IoU, ε(Q̂), ε(Q), {}): {}",
            main_width.label(),
            claim_verdict(&comparisons)
        ));
    }
    if let Some(joint) = main_rows(outcomes, Method::QgiJoint, main_width) {
        let mut comparisons = Vec::new();
        for column in [
            &IOU,
            &RGB_PSNR,
            &RGB_SSIM,
            &DEPTH_PSNR,
            &DEPTH_SSIM,
            &PREDICTED_Q,
            &TARGET_Q,
        ] {
            let result = compare(qgi, joint, column);
            comparisons.push(result.outcome);
            let mut cells = vec![Cell::from("QGI vs QGI, joint state")];
            cells.extend(paired_row(
                column,
                (qgi, joint),
                result,
                ("QGI better (joint drops)", "joint better"),
            ));
            table.push(cells);
        }
        verdicts.push(format!(
            "Fig. 4, \"the joint optimization shows performance drops for all metrics\" ({}): {}",
            main_width.label(),
            claim_verdict(&comparisons)
        ));
        let ((j, jf), (q, qf)) = (judged_values(joint, IOU.of), judged_values(qgi, IOU.of));
        let (jn, qn) = (joint.len(), qgi.len());
        verdicts.push(format!(
            "Fig. 4, \"the mean IoU is below 0.1, while QGI achieves over 0.9\" ({}): {} (joint \
             {}, QGI {})",
            main_width.label(),
            fig_four_iou_verdict((&j, jf, jn), (&q, qf, qn)),
            summary(joint, |r| r.vector_iou),
            summary(qgi, |r| r.vector_iou),
        ));
    }
    (table, verdicts)
}

/// Does privrl's magnitude term (its deviation from the paper's eq. 5) help? "QGI + magnitude
/// term" against the paper's QGI (eq. 5 alone) on the same samples and victim (S1, main
/// victim): per sample, which attack scores higher, judged by the sign test of the criterion.
fn magnitude_term_section(
    report: &mut Report,
    outcomes: &[(AttackCell, Vec<InversionRow>)],
    main_width: VictimWidth,
) {
    let (Some(ours), Some(eq5)) = (
        main_rows(outcomes, Method::QgiMagnitude, main_width),
        main_rows(outcomes, Method::Qgi, main_width),
    ) else {
        return;
    };
    let table = [&RGB_PSNR, &DEPTH_PSNR, &IOU]
        .into_iter()
        .map(|column| {
            paired_row(
                column,
                (ours, eq5),
                compare(ours, eq5, column),
                ("helps", "hurts"),
            )
        })
        .collect();
    report
        .heading("The magnitude term: privrl's addition against the paper's eq. 5 (QGI, S1, main victim)")
        .paragraph(&format!(
            "privrl's library default adds μ(‖g_rec‖/‖g‖ − 1)², μ = 0.1, to the paper's cosine \
             matching (eq. 5); the suite's QGI and RGI rows run eq. 5 as the paper writes it. \
             Per sample (the same samples, victim and initialisation), which of the two scores \
             higher; differences under {} dB PSNR or {} IoU are ties and drop out. The \
             magnitude term **helps** (or **hurts**) when the one-sided sign test rejects \
             \"neither is better\" at the criterion's level; otherwise no difference was \
             detected, and the paper's eq. 5 alone does as well on these samples.",
            format_number(PSNR_TIE),
            format_number(UNIT_TIE)
        ))
        .table(
            &[
                "score",
                "QGI + magnitude term (privrl)",
                "QGI (the paper's eq. 5)",
                "pairs",
                "magnitude better",
                "magnitude worse",
                "magnitude term",
            ],
            table,
        );
}

/// The originals beside their reconstructions.
fn reconstructions_section(report: &mut Report, sheets: &[(String, PathBuf)]) {
    report.heading("Reconstructions");
    for (caption, path) in sheets {
        report.image(caption, path, None);
    }
}

/// The command that reproduces the report (with `--convergence`, the per-budget iterations
/// replace `--iterations`).
pub(super) fn reproduce_command(args: &InversionArgs, plan: &InversionPlan) -> String {
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
    if let Some(victims) = &args.victims {
        let names: Vec<&str> = victims
            .iter()
            .map(|w| match w {
                VictimWidth::Paper => "paper",
                VictimWidth::Wide => "wide",
            })
            .collect();
        command.push_str(&format!(" --victims {}", names.join(",")));
    }
    if args.normalisation == NormalisationArg::Clamp {
        command.push_str(" --normalisation clamp");
    }
    if let Some(settings) = &args.settings {
        let names: Vec<String> = settings
            .iter()
            .map(|s| format!("{s:?}").to_lowercase())
            .collect();
        command.push_str(&format!(" --settings {}", names.join(",")));
    }
    if plan.rooms == RoomSelection::First {
        command.push_str(" --rooms first");
    }
    if args.attack_batch != super::plan::DEFAULT_ATTACK_BATCH {
        command.push_str(&format!(" --attack-batch {}", args.attack_batch));
    }
    if let Some(dir) = &args.results_dir {
        command.push_str(&format!(" --results-dir {}", dir.display()));
    }
    command
}

#[cfg(test)]
pub(crate) mod tests {
    use privrl_attacks::ImageScores;

    use super::*;

    /// A row with depth PSNR `psnr` (SSIM `psnr / 100`) and IoU 0.5; `failed` marks a diverged
    /// attack (its scores NaN, as a diverged optimisation leaves them).
    pub(crate) fn row(sample: usize, psnr: f64, failed: bool) -> InversionRow {
        let psnr = if failed { f64::NAN } else { psnr };
        InversionRow {
            sample,
            rgb: None,
            depth: Some(ImageScores {
                psnr,
                ssim: psnr / 100.0,
            }),
            vector_iou: Some(if failed { f64::NAN } else { 0.5 }),
            action_correct: true,
            predicted_q_error_pct: None,
            target_q_error_pct: Some(1.0),
            reward_abs_error: None,
            final_loss: Some(if failed { f64::NAN } else { 0.1 }),
            failed,
            attack_ms: 10.0,
            reconstructed: Default::default(),
        }
    }

    #[test]
    fn a_failed_row_is_counted_and_left_out_of_the_means_only() {
        let rows = [
            row(0, 20.0, false),
            row(1, f64::NAN, true),
            row(2, 22.0, false),
        ];
        assert_eq!(failure_rate(&rows), "1/3 (33%)");
        // Mean and sample std of 20 and 22: the failed row is out of the mean.
        assert_eq!(summary(&rows, |r| r.depth.map(|s| s.psnr)), "21 ± 1.414");
        // Every other row counts, an infinite PSNR (a perfect image) included.
        let perfect = [row(0, f64::INFINITY, false), row(1, 20.0, false)];
        assert_eq!(failure_rate(&perfect), "0/2 (0%)");
        assert!(summary(&perfect, |r| r.depth.map(|s| s.psnr)).starts_with('∞'));
        // Nothing but failures: no mean, and the whole count in the failure column.
        let failed = [row(0, 0.0, true), row(1, 0.0, true)];
        assert_eq!(summary(&failed, |r| r.depth.map(|s| s.psnr)), "-");
        assert_eq!(failure_rate(&failed), "2/2 (100%)");
    }
}
