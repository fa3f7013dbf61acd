//! The suite's headline: privacy defeats the inversion, judged on QGI.

use privrl_privacy::MechanismKind;

use super::cell::CellResult;
use super::{IOU_THRESHOLD, SSIM_THRESHOLD};
use crate::report::format_number;
use crate::suites::inversion::Method;
use crate::summary::Headline;

/// The headline: privacy defeats the inversion. Judged on QGI: undefended, its reconstruction
/// is recognisable (an image at SSIM ≥ [`SSIM_THRESHOLD`] or the box at IoU ≥
/// [`IOU_THRESHOLD`]), and under DP-SGD at the largest σ and Laplace at the smallest ε it is
/// not.
pub(super) fn headline(cells: &[CellResult]) -> Headline {
    let qgi = |kind: MechanismKind| {
        cells
            .iter()
            .filter(move |c| c.method == Method::Qgi && c.defence.kind() == kind)
    };
    let undefended = qgi(MechanismKind::None).next();
    // The strongest defence of a family has the smallest ε (for DP-SGD, the largest σ).
    let strongest =
        |kind| qgi(kind).min_by(|a: &&CellResult, b: &&CellResult| a.epsilon.total_cmp(&b.epsilon));
    let cells = [
        ("no defence", undefended),
        ("DP-SGD at the largest σ", strongest(MechanismKind::DpSgd)),
        (
            "Laplace at the smallest ε",
            strongest(MechanismKind::Laplace),
        ),
    ];
    let measured: Vec<String> = cells
        .iter()
        .map(|(what, cell)| match cell {
            Some(c) => format!(
                "{what} ({}): RGB / depth SSIM {} / {}, IoU {}",
                c.defence,
                format_number(c.scores.rgb_ssim),
                format_number(c.scores.depth_ssim),
                format_number(c.scores.iou)
            ),
            None => format!("{what}: not run"),
        })
        .collect();
    let visible = match cells.map(|(_, c)| c) {
        [Some(none), Some(dp_sgd), Some(laplace)] => {
            !none.scores.unrecognisable()
                && dp_sgd.scores.unrecognisable()
                && laplace.scores.unrecognisable()
        }
        _ => false,
    };
    Headline {
        effect: format!(
            "privacy defeats the inversion: undefended, QGI's reconstruction is recognisable (an \
             image at SSIM ≥ {SSIM_THRESHOLD} or the box at IoU ≥ {IOU_THRESHOLD}); under DP-SGD \
             at the largest σ and Laplace at the smallest ε it is not."
        ),
        measured: measured.join("; "),
        visible,
    }
}
