//! The metrics of Section 4: the average score μ_n (eq. 25) and the first success time (eq. 26)
//! of one run's score log; over trials the success ratio (eq. 27), the area under its curve
//! (Fig. 3, Table 3) and the median first success time (Table 1).

/// μ_n = (1/m) Σ_{n'=n}^{n+m−1} ζ_{n'} (eq. 25) for n = 1 … N − m + 1, where `scores` holds
/// ζ_1 … ζ_N in the order the aggregator applied them; element i is μ_{i+1}. The window starts
/// at n and looks *forward*, so μ_n is known only once ζ_{n+m−1} has arrived, and a log
/// shorter than m has no μ at all.
pub fn average_scores(scores: &[f64], window: usize) -> Vec<f64> {
    if window == 0 {
        return Vec::new();
    }
    scores
        .windows(window)
        .map(|w| w.iter().sum::<f64>() / window as f64)
        .collect()
}

/// FST = min{n : μ_n ≥ Θ} (eq. 26) over the log ζ_1 … ζ_N, 1-based; `None` is FST = ∞.
/// Because μ_n looks forward (eq. 25), FST is the *first* submission of the first successful
/// window, m − 1 submissions before the one that completes it.
pub fn first_success_time(scores: &[f64], window: usize, target: f64) -> Option<u64> {
    average_scores(scores, window)
        .iter()
        .position(|&mu| mu >= target)
        .map(|i| i as u64 + 1)
}

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
    fn first_success_time_follows_eq_25_and_26_by_hand() {
        // m = 3, Θ = 10. μ_1 = (0 + 10 + 20)/3 = 10 ≥ 10: FST = 1, not 3 (the submission that
        // completes the window).
        assert_eq!(
            average_scores(&[0.0, 10.0, 20.0, 5.0], 3),
            vec![10.0, 35.0 / 3.0]
        );
        assert_eq!(
            first_success_time(&[0.0, 10.0, 20.0, 5.0], 3, 10.0),
            Some(1)
        );
        // μ_1 = 4, μ_2 = 23/3, μ_3 = 29/3, μ_4 = 10: FST = 4 (the window ζ_4 … ζ_6).
        let log = [1.0, 2.0, 9.0, 12.0, 8.0, 10.0];
        assert_eq!(
            average_scores(&log, 3),
            vec![4.0, 23.0 / 3.0, 29.0 / 3.0, 10.0]
        );
        assert_eq!(first_success_time(&log, 3, 10.0), Some(4));
        // The paper's m = 10, Θ = 195: nine scores of 20, then ten of 200. μ_9 = (20 + 9·200)/10
        // = 182 < 195 and μ_10 = 200: FST = 10, although the window completes at the 19th.
        let mut paper = vec![20.0; 9];
        paper.extend([200.0; 10]);
        assert_eq!(first_success_time(&paper, 10, 195.0), Some(10));
        // Fewer than m scores, or none reaching Θ: ∞.
        assert_eq!(first_success_time(&[200.0; 9], 10, 195.0), None);
        assert_eq!(first_success_time(&[194.0; 50], 10, 195.0), None);
        assert!(average_scores(&[1.0], 0).is_empty());
    }

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
