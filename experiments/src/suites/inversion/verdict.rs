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
         samples at level {SIGN_TEST_LEVEL}. Table II's rows (QGI and each baseline) are judged \
         column by column as above against the paper's row; its claim that QGI \"shows the \
         best results\" is judged by paired sign tests of QGI against each baseline on IoU, \
         ε(Q̂) and ε(Q): **agrees** when QGI is significantly better in all nine, \
         **disagrees** when a baseline is significantly better in any, inconclusive \
         otherwise. Fig. 4's claim that joint optimisation \"shows performance drops for all \
         metrics\" is judged the same way, QGI against its joint ablation on IoU, RGB and \
         depth PSNR and SSIM, ε(Q̂) and ε(Q); its statement that the joint mean IoU is below \
         {} while QGI's is above {} agrees when both hold. In every paired test a failed \
         attack scores worse than any finished one, and differences under 0.1 dB PSNR or \
         0.01 in IoU, SSIM or percentage points of ε are ties. The criterion was committed before the run that \
         it judges (each run's `config.json` records the commit it ran at).",
        100.0 * MAX_FAILURE_RATE,
        100.0 * RECOVERED_FRACTION,
        PAPER_FIG_FOUR_IOU.0,
        PAPER_FIG_FOUR_IOU.1,
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
    /// A claim (a ranking or a threshold) that the measurement contradicts.
    Disagrees,
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
            Verdict::Disagrees => write!(f, "Disagrees"),
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

/// The mean of a column whose successful rows gave `values`, out of `rows` rows of which
/// `failed` failed, or the inconclusive verdict when it cannot decide anything: more than
/// [`MAX_FAILURE_RATE`] failed, or fewer than [`MIN_SAMPLES`] succeeded.
fn decidable_mean(values: &[f64], failed: usize, rows: usize) -> Result<f64, Verdict> {
    if failed as f64 / rows.max(1) as f64 > MAX_FAILURE_RATE {
        return Err(Verdict::Inconclusive(format!("{failed}/{rows} failed")));
    }
    if values.len() < MIN_SAMPLES {
        return Err(Verdict::Inconclusive(format!(
            "{} samples < {MIN_SAMPLES}",
            values.len()
        )));
    }
    Ok(values.iter().sum::<f64>() / values.len() as f64)
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
    let mean = match decidable_mean(values, failed, rows) {
        Ok(mean) => mean,
        Err(inconclusive) => return inconclusive,
    };
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

/// What a paired comparison of two attacks on the same samples concludes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PairedOutcome {
    /// The first attack scores better on significantly many samples (p-value attached).
    FirstBetter(f64),
    /// The second does.
    SecondBetter(f64),
    /// Neither rejects "neither is better" at [`SIGN_TEST_LEVEL`].
    NoDifference,
}

/// A paired comparison: on how many samples the first attack scored better, on how many
/// worse (differences larger than the tie in either direction), and the sign test's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Paired {
    /// Samples compared, ties included.
    pub(crate) pairs: usize,
    pub(crate) better: usize,
    pub(crate) worse: usize,
    pub(crate) outcome: PairedOutcome,
}

/// The paired comparison of per-sample `differences` (first minus second, oriented so that
/// positive favours the first), differences within `tie` of zero dropping out, judged by the
/// one-sided sign test at [`SIGN_TEST_LEVEL`] in each direction.
pub(crate) fn paired(differences: &[f64], tie: f64) -> Paired {
    let better = differences.iter().filter(|d| **d > tie).count();
    let worse = differences.iter().filter(|d| **d < -tie).count();
    let trials = better + worse;
    let outcome = if trials > 0 && sign_test_p(better, trials) <= SIGN_TEST_LEVEL {
        PairedOutcome::FirstBetter(sign_test_p(better, trials))
    } else if trials > 0 && sign_test_p(worse, trials) <= SIGN_TEST_LEVEL {
        PairedOutcome::SecondBetter(sign_test_p(worse, trials))
    } else {
        PairedOutcome::NoDifference
    };
    Paired {
        pairs: differences.len(),
        better,
        worse,
        outcome,
    }
}

/// A claim that one attack beats others on several columns (Table II: "our method shows the
/// best results"; Fig. 4: joint optimisation "shows performance drops for all metrics"),
/// from the paired comparisons of the claimed-better attack (first) against the others:
/// **agrees** when it is significantly better in every comparison, **disagrees** when another
/// is significantly better in any, **inconclusive** otherwise (some comparisons detect no
/// difference).
pub(crate) fn claim_verdict(comparisons: &[PairedOutcome]) -> Verdict {
    let undecided = comparisons
        .iter()
        .filter(|c| **c == PairedOutcome::NoDifference)
        .count();
    if comparisons.is_empty() {
        Verdict::Inconclusive("nothing compared".into())
    } else if comparisons
        .iter()
        .any(|c| matches!(c, PairedOutcome::SecondBetter(_)))
    {
        Verdict::Disagrees
    } else if undecided > 0 {
        Verdict::Inconclusive(format!(
            "no difference detected in {undecided} of {} comparisons",
            comparisons.len()
        ))
    } else {
        Verdict::Agrees
    }
}

/// Fig. 4's numbers as the paper's text gives them (Section V-C): "The mean IoU is below 0.1,
/// while QGI achieves over 0.9."
pub(crate) const PAPER_FIG_FOUR_IOU: (f64, f64) = (0.1, 0.9);

/// The verdict on Fig. 4's IoU statement from the mean IoUs of the joint ablation and of QGI
/// (over their successful rows; inconclusive beyond [`MAX_FAILURE_RATE`] failures or under
/// [`MIN_SAMPLES`] samples, as every column): **agrees** when the joint mean is below 0.1 and
/// QGI's above 0.9, **disagrees** otherwise.
pub(crate) fn fig_four_iou_verdict(
    joint: (&[f64], usize, usize),
    qgi: (&[f64], usize, usize),
) -> Verdict {
    let mean_of =
        |(values, failed, rows): (&[f64], usize, usize)| decidable_mean(values, failed, rows);
    let (joint, qgi) = match (mean_of(joint), mean_of(qgi)) {
        (Ok(j), Ok(q)) => (j, q),
        (Err(v), _) | (_, Err(v)) => return v,
    };
    let (below, above) = PAPER_FIG_FOUR_IOU;
    if joint < below && qgi > above {
        Verdict::Agrees
    } else {
        Verdict::Disagrees
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

/// The paper's Table II row of `method` (IoU, ε(Q̂) %, ε(Q) %), where it has one.
pub(crate) fn paper_table_two(method: Method) -> Option<[PaperValue; 3]> {
    Some(match method {
        Method::Qgi => PAPER_QGI_TABLE_TWO,
        Method::DlgJoint => [
            paper(0.649, 0.401),
            paper(1083.64, 6434.83),
            paper(89.85, 12.28),
        ],
        Method::DlgRule => [
            paper(0.610, 0.408),
            paper(1112.33, 6676.23),
            paper(92.44, 8.42),
        ],
        Method::InvertingGradients => [
            paper(0.216, 0.342),
            paper(15751.95, 93392.97),
            paper(198.83, 292.31),
        ],
        _ => return None,
    })
}

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
        // Paired: 10 of 12 better decides for the first, 9 better and 3 worse does not;
        // ties drop out.
        let mut d = vec![1.0; 10];
        d.extend([-1.0, -1.0]);
        assert!(matches!(paired(&d, 0.0).outcome, PairedOutcome::FirstBetter(p) if p < 0.05));
        let mut d = vec![1.0; 9];
        d.extend([-1.0; 3]);
        assert_eq!(paired(&d, 0.0).outcome, PairedOutcome::NoDifference);
        let mut d = vec![-1.0; 10];
        d.extend([0.0, 0.05]);
        let result = paired(&d, 0.1);
        assert_eq!((result.better, result.worse), (0, 10));
        assert!(matches!(result.outcome, PairedOutcome::SecondBetter(_)));
        // Recovery: half the samples is enough, fewer is not.
        assert!(shows_recovery(6, 12));
        assert!(!shows_recovery(5, 12));
        assert!(!shows_recovery(0, 0));
    }

    #[test]
    fn a_claim_needs_every_comparison_and_one_reversal_refutes_it() {
        use PairedOutcome::*;
        assert_eq!(claim_verdict(&[FirstBetter(0.01); 9]), Verdict::Agrees);
        let mut one_open = vec![FirstBetter(0.01); 8];
        one_open.push(NoDifference);
        assert!(matches!(
            claim_verdict(&one_open),
            Verdict::Inconclusive(why) if why.contains("1 of 9")
        ));
        // One reversal refutes, whatever else holds.
        one_open.push(SecondBetter(0.02));
        assert_eq!(claim_verdict(&one_open), Verdict::Disagrees);
        assert!(matches!(claim_verdict(&[]), Verdict::Inconclusive(_)));
    }

    #[test]
    fn fig_four_iou_statement_on_hand_worked_means() {
        let ten = |v: f64| vec![v; 10];
        let (low, high, mid) = (ten(0.05), ten(0.95), ten(0.81));
        assert_eq!(
            fig_four_iou_verdict((&low, 0, 10), (&high, 0, 10)),
            Verdict::Agrees
        );
        // The joint ablation at 0.81 (privrl's 32 px run at seed 0) contradicts it.
        assert_eq!(
            fig_four_iou_verdict((&mid, 0, 10), (&high, 0, 10)),
            Verdict::Disagrees
        );
        // QGI itself must clear 0.9, and the joint ablation stay under 0.1.
        assert_eq!(
            fig_four_iou_verdict((&low, 0, 10), (&ten(0.89), 0, 10)),
            Verdict::Disagrees
        );
        assert_eq!(
            fig_four_iou_verdict((&ten(0.11), 0, 10), (&high, 0, 10)),
            Verdict::Disagrees
        );
        // Two failures in ten make it inconclusive, as every column.
        assert!(matches!(
            fig_four_iou_verdict((&low[..8], 2, 10), (&high, 0, 10)),
            Verdict::Inconclusive(_)
        ));
    }

    #[test]
    fn the_papers_table_two_rows() {
        // IoU means in the order of the paper's rows; QGI's is the best, as it claims.
        let ious: Vec<f64> = [
            Method::DlgJoint,
            Method::DlgRule,
            Method::InvertingGradients,
            Method::Qgi,
        ]
        .map(|m| paper_table_two(m).unwrap()[0].mean)
        .into();
        assert_eq!(ious, [0.649, 0.610, 0.216, 0.912]);
        assert!(paper_table_two(Method::QgiJoint).is_none());
    }
}
