//! The metrics of Section 4 over trials: the success ratio (eq. 27), the area under its curve
//! (Fig. 3, Table 3) and the median first success time (Table 1).

/// success_ratio(n) = |{k : FST_k ≤ n}| / K (eq. 27); `None` entries are FST = ∞.
pub fn success_ratio(first_success_times: &[Option<u64>], n: u64) -> f64 {
    if first_success_times.is_empty() {
        return 0.0;
    }
    let successes = first_success_times
        .iter()
        .filter(|f| f.is_some_and(|f| f <= n))
        .count();
    successes as f64 / first_success_times.len() as f64
}

/// Area under the success-ratio curve over n ∈ [0, `horizon`] (Fig. 3): the curve is a step
/// function, so the area is (1/K) Σ_k max(0, horizon − FST_k).
pub fn success_ratio_area(first_success_times: &[Option<u64>], horizon: u64) -> f64 {
    if first_success_times.is_empty() {
        return 0.0;
    }
    let total: u64 = first_success_times
        .iter()
        .flatten()
        .map(|&f| horizon.saturating_sub(f))
        .sum();
    total as f64 / first_success_times.len() as f64
}

/// Table 3: the area of `trials` over that of the non-private `baseline`; `None` when the
/// baseline never succeeded (area 0), where the ratio is undefined.
pub fn relative_area(
    trials: &[Option<u64>],
    baseline: &[Option<u64>],
    horizon: u64,
) -> Option<f64> {
    let base = success_ratio_area(baseline, horizon);
    (base > 0.0).then(|| success_ratio_area(trials, horizon) / base)
}

/// Table 1: the median FST, with FST = ∞ for failures (`f64::INFINITY` when the middle
/// element is a failure; the mean of the two middle elements for an even count).
pub fn median_first_success(first_success_times: &[Option<u64>]) -> Option<f64> {
    if first_success_times.is_empty() {
        return None;
    }
    let mut values: Vec<f64> = first_success_times
        .iter()
        .map(|f| f.map_or(f64::INFINITY, |f| f as f64))
        .collect();
    values.sort_by(f64::total_cmp);
    let k = values.len();
    Some(if k % 2 == 1 {
        values[k / 2]
    } else {
        0.5 * (values[k / 2 - 1] + values[k / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_metrics_by_hand() {
        let fst = [Some(10), None, Some(30), Some(20)];
        assert_eq!(success_ratio(&fst, 9), 0.0);
        assert_eq!(success_ratio(&fst, 20), 0.5);
        assert_eq!(success_ratio(&fst, 1000), 0.75);
        // (100 − 10) + (100 − 30) + (100 − 20) = 240, over K = 4.
        assert_eq!(success_ratio_area(&fst, 100), 60.0);
        let baseline = [Some(0), Some(0)];
        assert!((relative_area(&fst, &baseline, 100).unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(relative_area(&fst, &[None], 100), None);
        // sorted: 10, 20, 30, ∞ → (20 + 30) / 2
        assert_eq!(median_first_success(&fst), Some(25.0));
        assert_eq!(
            median_first_success(&[None, None, Some(3)]),
            Some(f64::INFINITY)
        );
        assert_eq!(median_first_success(&[]), None);
    }
}
