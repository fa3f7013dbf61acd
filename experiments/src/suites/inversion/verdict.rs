//! Whether a measured column agrees with the paper: the criterion, fixed before the run, and
//! the paper's numbers it is applied to (Table I's average column, Table II's QGI row).

use std::fmt;

use privrl_envs::room::RoomSetting;

use super::method::Method;

/// A value of the paper's tables: mean ± std over its 240 samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PaperValue {
    pub(crate) mean: f64,
    pub(crate) std: f64,
}

const fn paper(mean: f64, std: f64) -> PaperValue {
    PaperValue { mean, std }
}

/// A measured mean agrees with the paper's when it lies within this many of the paper's
/// across-sample standard deviations of the paper's mean: the gap is then small beside how
/// much the paper's own samples differ from one another. Fixed before any run.
pub(crate) const AGREEMENT_STDS: f64 = 0.5;
/// Above this failure rate a column is inconclusive: the means are over too few of its rows.
pub(crate) const MAX_FAILURE_RATE: f64 = 0.1;
/// Below this many successful samples a column is inconclusive.
pub(crate) const MIN_SAMPLES: usize = 8;

/// The criterion in words, for the report.
pub(crate) fn criterion() -> String {
    format!(
        "A column **agrees** when its mean lies within {AGREEMENT_STDS} of the paper's \
         across-sample standard deviations of the paper's mean (|ours − paper| ≤ \
         {AGREEMENT_STDS} σ_paper), and **disagrees** (higher or lower) otherwise. It is \
         **inconclusive** when more than {:.0}% of its attacks failed or fewer than \
         {MIN_SAMPLES} succeeded. The criterion was fixed in code before the run.",
        100.0 * MAX_FAILURE_RATE
    )
}

/// The verdict on one column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Agrees,
    Higher,
    Lower,
    Inconclusive(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Agrees => write!(f, "Agrees"),
            Verdict::Higher => write!(f, "Disagrees (higher)"),
            Verdict::Lower => write!(f, "Disagrees (lower)"),
            Verdict::Inconclusive(why) => write!(f, "Inconclusive ({why})"),
        }
    }
}

/// The verdict on a column whose successful rows gave `values`, out of `rows` rows of which
/// `failed` failed.
pub(crate) fn verdict(values: &[f64], failed: usize, rows: usize, paper: PaperValue) -> Verdict {
    let failure_rate = failed as f64 / rows.max(1) as f64;
    if failure_rate > MAX_FAILURE_RATE {
        return Verdict::Inconclusive(format!("{failed}/{rows} failed"));
    }
    if values.len() < MIN_SAMPLES {
        return Verdict::Inconclusive(format!("{} samples < {MIN_SAMPLES}", values.len()));
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    if mean.is_nan() {
        return Verdict::Inconclusive("mean undefined".into());
    }
    let gap = mean - paper.mean;
    if gap.abs() <= AGREEMENT_STDS * paper.std {
        Verdict::Agrees
    } else if gap > 0.0 {
        Verdict::Higher
    } else {
        Verdict::Lower
    }
}

/// The paper's Table I, average column: (PSNR, SSIM) of one method, setting and image.
pub(crate) fn paper_table_one(
    method: Method,
    setting: RoomSetting,
    depth: bool,
) -> Option<(PaperValue, PaperValue)> {
    Some(match (method, setting, depth) {
        (Method::Qgi, RoomSetting::S1, false) => (paper(21.02, 5.86), paper(0.729, 0.157)),
        (Method::Qgi, RoomSetting::S1, true) => (paper(23.18, 8.17), paper(0.807, 0.195)),
        (Method::Qgi, RoomSetting::S2, true) => (paper(26.46, 7.68), paper(0.910, 0.123)),
        (Method::Rgi, RoomSetting::S1, false) => (paper(17.12, 5.35), paper(0.544, 0.176)),
        (Method::Rgi, RoomSetting::S1, true) => (paper(18.58, 5.94), paper(0.581, 0.166)),
        (Method::Rgi, RoomSetting::S2, true) => (paper(37.21, 4.84), paper(0.964, 0.022)),
        _ => return None,
    })
}

/// The paper's Table II row of QGI: bounding-box IoU, ε(Q̂) % and ε(Q) %.
pub(crate) const PAPER_QGI_TABLE_TWO: [PaperValue; 3] =
    [paper(0.912, 0.192), paper(1.03, 1.59), paper(0.67, 1.47)];

/// `mean ± std` of a paper value.
pub(crate) fn format_paper(value: PaperValue) -> String {
    format!(
        "{} ± {}",
        crate::report::format_number(value.mean),
        crate::report::format_number(value.std)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_criterion_on_hand_worked_columns() {
        let paper = paper(20.0, 4.0);
        let ten = |v: f64| vec![v; 10];
        // Within 0.5 σ = 2 of 20, either side, the edge included.
        assert_eq!(verdict(&ten(21.9), 0, 10, paper), Verdict::Agrees);
        assert_eq!(verdict(&ten(18.0), 0, 10, paper), Verdict::Agrees);
        assert_eq!(verdict(&ten(22.5), 0, 10, paper), Verdict::Higher);
        assert_eq!(verdict(&ten(17.0), 0, 10, paper), Verdict::Lower);
        // One failure in 10 is allowed (10%), two are not; the failures are not in `values`.
        assert_eq!(verdict(&[20.0; 9], 1, 10, paper), Verdict::Agrees);
        assert!(matches!(
            verdict(&[20.0; 8], 2, 10, paper),
            Verdict::Inconclusive(why) if why == "2/10 failed"
        ));
        assert!(matches!(
            verdict(&[20.0; 7], 0, 7, paper),
            Verdict::Inconclusive(_)
        ));
        assert_eq!(Verdict::Lower.to_string(), "Disagrees (lower)");
    }
}
