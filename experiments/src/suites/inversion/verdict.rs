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

/// A reconstructed image is **recovered** when its PSNR beats the flat image at the sample's
/// true mean by at least this many dB (its squared error at most half the flat image's): the
/// flat image is what an attacker who learnt nothing but the mean would output, so a PSNR
/// that does not beat it shows no recovery however close it is to the paper's. Fixed before
/// the run.
pub(crate) const RECOVERY_MARGIN_DB: f64 = 3.0;
/// A cell shows recovery when at least this fraction of its samples are recovered; a PSNR
/// that agrees with the paper's on a cell that does not is printed as such, not as agreement.
pub(crate) const RECOVERED_FRACTION: f64 = 0.5;
/// One-sided level of the sign test that decides whether the magnitude term (privrl's
/// addition to eq. 5) changes a paired score.
pub(crate) const SIGN_TEST_LEVEL: f64 = 0.05;

/// The criterion in words, for the report.
pub(crate) fn criterion() -> String {
    format!(
        "A column of a score (PSNR, SSIM, IoU) **agrees** when its mean lies within \
         {AGREEMENT_STDS} of the paper's across-sample standard deviations of the paper's mean \
         (|ours − paper| ≤ {AGREEMENT_STDS} σ_paper), and **disagrees** (higher or lower) \
         otherwise. A column of an error (ε(Q̂), ε(Q), |r − r_rec|) is **at least as good** \
         when its mean is at most the paper's mean + {AGREEMENT_STDS} σ_paper (an error below \
         the paper's is not a disagreement), and **disagrees (higher error)** otherwise. Either \
         is **inconclusive** when more than {:.0}% of its attacks failed or fewer than \
         {MIN_SAMPLES} succeeded. An image is **recovered** when its PSNR is at least \
         {RECOVERY_MARGIN_DB} dB above that of a flat image at the sample's true mean (an \
         oracle that knows nothing but the mean); a Table I cell with fewer than {:.0}% of its \
         samples recovered is printed **no recovery** beside its PSNR verdict, whatever that \
         verdict is. The magnitude term is judged by a one-sided sign test over the paired \
         samples at level {SIGN_TEST_LEVEL}. The criterion was committed before the run that \
         it judges (each run's `config.json` records the commit it ran at).",
        100.0 * MAX_FAILURE_RATE,
        100.0 * RECOVERED_FRACTION,
    )
}

/// The verdict on one column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Agrees,
    Higher,
    Lower,
    /// An error column at or below the paper's band.
    AtLeastAsGood,
    /// An error column above the paper's band.
    HigherError,
    Inconclusive(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Agrees => write!(f, "Agrees"),
            Verdict::Higher => write!(f, "Disagrees (higher)"),
            Verdict::Lower => write!(f, "Disagrees (lower)"),
            Verdict::AtLeastAsGood => write!(f, "At least as good"),
            Verdict::HigherError => write!(f, "Disagrees (higher error)"),
            Verdict::Inconclusive(why) => write!(f, "Inconclusive ({why})"),
        }
    }
}

/// What a column measures: a score, judged two-sided, or an error, judged one-sided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Score,
    Error,
}

/// The verdict on a column whose successful rows gave `values`, out of `rows` rows of which
/// `failed` failed.
pub(crate) fn verdict(
    column: Column,
    values: &[f64],
    failed: usize,
    rows: usize,
    paper: PaperValue,
) -> Verdict {
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
    let band = AGREEMENT_STDS * paper.std;
    match column {
        Column::Error if gap <= band => Verdict::AtLeastAsGood,
        Column::Error => Verdict::HigherError,
        Column::Score if gap.abs() <= band => Verdict::Agrees,
        Column::Score if gap > 0.0 => Verdict::Higher,
        Column::Score => Verdict::Lower,
    }
}

/// Whether a cell's images were recovered: `recovered` of `scored` samples beat the flat
/// baseline by [`RECOVERY_MARGIN_DB`].
pub(crate) fn shows_recovery(recovered: usize, scored: usize) -> bool {
    scored > 0 && recovered as f64 >= RECOVERED_FRACTION * scored as f64
}

/// The one-sided sign test's p-value P(X ≥ wins) for X ~ Binomial(`trials`, ½): how likely
/// `wins` or more of `trials` paired comparisons favour one side when neither is better.
/// Ties are dropped from `trials` before the test.
pub(crate) fn sign_test_p(wins: usize, trials: usize) -> f64 {
    if wins > trials {
        return 0.0;
    }
    // Σ_{k ≥ wins} C(n, k) / 2ⁿ, with C(n, k) built by its recurrence in f64 (exact below
    // 2⁵³, i.e. for every n this suite can have).
    let mut choose = 1.0f64;
    let mut tail = 0.0;
    for k in 0..=trials {
        if k >= wins {
            tail += choose;
        }
        choose = choose * (trials - k) as f64 / (k + 1) as f64;
    }
    tail / 2f64.powi(trials as i32)
}

/// The verdict of a paired comparison of the same samples under two attacks: how many
/// favour each (differences larger than `tie` in either direction), and what the sign test
/// concludes at [`SIGN_TEST_LEVEL`].
pub(crate) fn paired_verdict(differences: &[f64], tie: f64) -> (usize, usize, String) {
    let better = differences.iter().filter(|d| **d > tie).count();
    let worse = differences.iter().filter(|d| **d < -tie).count();
    let trials = better + worse;
    let verdict = if trials > 0 && sign_test_p(better, trials) <= SIGN_TEST_LEVEL {
        format!("helps (p = {:.3})", sign_test_p(better, trials))
    } else if trials > 0 && sign_test_p(worse, trials) <= SIGN_TEST_LEVEL {
        format!("hurts (p = {:.3})", sign_test_p(worse, trials))
    } else {
        "no difference detected".into()
    };
    (better, worse, verdict)
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
        let verdict = |values: &[f64], failed, rows, paper| {
            verdict(Column::Score, values, failed, rows, paper)
        };
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

    #[test]
    fn an_error_below_the_papers_is_never_a_disagreement() {
        // The two cases a review found labelled in opposite ways: QGI S1's ε(Q) and ε(Q̂),
        // both 10⁴× below the paper's, one inside its band and one outside.
        let target = verdict(Column::Error, &[1.8e-5; 12], 0, 12, PAPER_QGI_TABLE_TWO[2]);
        let predicted = verdict(Column::Error, &[4.7e-5; 12], 0, 12, PAPER_QGI_TABLE_TWO[1]);
        assert_eq!(target, Verdict::AtLeastAsGood);
        assert_eq!(predicted, Verdict::AtLeastAsGood);
        // As scores, the second is a disagreement: the rule is what changed.
        assert_eq!(
            verdict(Column::Score, &[4.7e-5; 12], 0, 12, PAPER_QGI_TABLE_TWO[1]),
            Verdict::Lower
        );
        // Worse than the paper's band (1.03 + 0.5 · 1.59 = 1.825) disagrees; the edge does not.
        assert_eq!(
            verdict(Column::Error, &[1.83; 12], 0, 12, PAPER_QGI_TABLE_TWO[1]),
            Verdict::HigherError
        );
        assert_eq!(
            verdict(Column::Error, &[1.825; 12], 0, 12, PAPER_QGI_TABLE_TWO[1]),
            Verdict::AtLeastAsGood
        );
        // Failures still make it inconclusive.
        assert!(matches!(
            verdict(Column::Error, &[0.0; 10], 2, 12, PAPER_QGI_TABLE_TWO[1]),
            Verdict::Inconclusive(_)
        ));
    }

    #[test]
    fn the_sign_test_against_brute_force() {
        // P(X ≥ 10) for n = 12: (66 + 12 + 1) / 4096.
        assert!((sign_test_p(10, 12) - 79.0 / 4096.0).abs() < 1e-15);
        // P(X ≥ 9) = (220 + 79) / 4096 = 0.073: not significant at 0.05.
        assert!((sign_test_p(9, 12) - 299.0 / 4096.0).abs() < 1e-15);
        assert_eq!(sign_test_p(0, 7), 1.0);
        // Brute force over all 2ⁿ outcomes.
        for n in 0..=14usize {
            for wins in 0..=n {
                let count = (0u32..1 << n)
                    .filter(|m| m.count_ones() as usize >= wins)
                    .count();
                let exact = count as f64 / f64::from(1u32 << n);
                assert!((sign_test_p(wins, n) - exact).abs() < 1e-15, "{wins}/{n}");
            }
        }
        // Paired: 10 of 12 better is "helps", 9 better and 3 worse is not; ties drop out.
        let mut d = vec![1.0; 10];
        d.extend([-1.0, -1.0]);
        assert!(paired_verdict(&d, 0.0).2.starts_with("helps"));
        let mut d = vec![1.0; 9];
        d.extend([-1.0; 3]);
        assert_eq!(paired_verdict(&d, 0.0).2, "no difference detected");
        let mut d = vec![-1.0; 10];
        d.extend([0.0, 0.0]);
        let (better, worse, v) = paired_verdict(&d, 0.0);
        assert_eq!((better, worse), (0, 10));
        assert!(v.starts_with("hurts"));
        // Recovery: half the samples is enough, fewer is not.
        assert!(shows_recovery(6, 12));
        assert!(!shows_recovery(5, 12));
        assert!(!shows_recovery(0, 0));
    }
}
