//! The suite's headline: one shared DQN gradient gives the state away (QGI, S1).

use privrl_attacks::InversionRow;

use crate::report::format_number;
use crate::report::plot::median;
use crate::summary::Headline;

/// The paper's headline (Li, Ding, Zhao, Table II): from one shared DQN gradient QGI recovers
/// the action and the target's bounding box. Judged on QGI, S1: every action right and the
/// median bounding-box IoU at least 0.5 (a box guessed at random overlaps by about 0).
pub(super) fn headline(qgi_s1: &[InversionRow]) -> Headline {
    let accuracy =
        qgi_s1.iter().filter(|r| r.action_correct).count() as f64 / qgi_s1.len().max(1) as f64;
    // A failed attack (no IoU, or NaN) counts as IoU 0: failures are counted, never dropped.
    let ious: Vec<f64> = qgi_s1
        .iter()
        .map(|r| r.vector_iou.filter(|v| v.is_finite()).unwrap_or(0.0))
        .collect();
    let median_iou = median(&ious);
    Headline {
        effect: "one shared DQN gradient gives the state away: QGI on S1 recovers every \
                 sample's action, and the median bounding-box IoU is at least 0.5."
            .into(),
        measured: if qgi_s1.is_empty() {
            "not measured: QGI on S1 did not run (--settings, --victims)".into()
        } else {
            format!(
                "action accuracy {:.0}% and median IoU {} over {} samples",
                100.0 * accuracy,
                format_number(median_iou),
                qgi_s1.len()
            )
        },
        visible: !qgi_s1.is_empty() && accuracy == 1.0 && median_iou >= 0.5,
    }
}
