//! Statistics over seeds: median, percentiles, interpolation, and seed curves aggregated onto
//! a common grid as a median with a percentile band.

use anyhow::{ensure, Result};

/// One x position of an aggregated set of seed curves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandPoint {
    /// Grid position (e.g. environment steps).
    pub x: f64,
    /// Median over the seeds that cover `x`.
    pub median: f64,
    /// Lower percentile over those seeds.
    pub lower: f64,
    /// Upper percentile over those seeds.
    pub upper: f64,
    /// How many seeds cover `x`.
    pub seeds: usize,
}

/// Percentile `p` ∈ [0, 100] of sorted, non-empty `sorted`, interpolating linearly between
/// order statistics (numpy's default): the 50th of `[1, 2, 3, 4]` is 2.5.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    let fraction = rank - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// Arithmetic mean of `values` (NaN if empty).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Median of `values` without NaNs (NaN if nothing is left). Infinities count, so that a run
/// that never succeeded can take part as ∞.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
    }
}

/// `y` at `x` on a curve sorted by x, linearly interpolated; `None` outside its x range.
pub fn interpolate(curve: &[(f64, f64)], x: f64) -> Option<f64> {
    let (first, last) = (curve.first()?, curve.last()?);
    if x < first.0 || x > last.0 {
        return None;
    }
    let after = curve.partition_point(|p| p.0 < x);
    let (x1, y1) = curve[after];
    if x1 == x || after == 0 {
        return Some(y1);
    }
    let (x0, y0) = curve[after - 1];
    Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
}

/// Interpolates seed curves onto `grid_points` evenly spaced x positions spanning all of
/// them, and takes the median and the `band` percentiles `(lower, upper)` over the seeds that
/// cover each position (a seed whose run stopped early drops out after its last point).
/// Non-finite points are ignored; curves need not share x positions.
pub fn aggregate_seeds(
    curves: &[Vec<(f64, f64)>],
    grid_points: usize,
    band: (f64, f64),
) -> Result<Vec<BandPoint>> {
    check_band(band)?;
    ensure!(
        grid_points >= 2,
        "grid_points = {grid_points} is out of range: expected ≥ 2"
    );
    let curves: Vec<Vec<(f64, f64)>> = curves
        .iter()
        .map(|curve| {
            let mut clean: Vec<(f64, f64)> = curve
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            clean.sort_by(|a, b| a.0.total_cmp(&b.0));
            clean
        })
        .filter(|curve| !curve.is_empty())
        .collect();
    ensure!(!curves.is_empty(), "no seed curve has a finite point");
    let x_min = curves.iter().map(|c| c[0].0).fold(f64::INFINITY, f64::min);
    let x_max = curves
        .iter()
        .map(|c| c[c.len() - 1].0)
        .fold(f64::NEG_INFINITY, f64::max);
    let grid_points = if x_max > x_min { grid_points } else { 1 };
    let mut points = Vec::with_capacity(grid_points);
    let mut values = Vec::with_capacity(curves.len());
    for k in 0..grid_points {
        let x = if k + 1 == grid_points {
            x_max // exact, free of rounding
        } else {
            x_min + (x_max - x_min) * k as f64 / (grid_points - 1) as f64
        };
        values.clear();
        values.extend(curves.iter().filter_map(|c| interpolate(c, x)));
        if values.is_empty() {
            continue;
        }
        values.sort_by(f64::total_cmp);
        points.push(BandPoint {
            x,
            median: percentile(&values, 50.0),
            lower: percentile(&values, band.0),
            upper: percentile(&values, band.1),
            seeds: values.len(),
        });
    }
    Ok(points)
}

fn check_band((lower, upper): (f64, f64)) -> Result<()> {
    ensure!(
        (0.0..=100.0).contains(&lower) && (0.0..=100.0).contains(&upper) && lower < upper,
        "percentile band ({lower}, {upper}) is out of range: expected 0 ≤ lower < upper ≤ 100"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_skips_nan_and_keeps_infinity() {
        assert_eq!(median(&[3.0, f64::NAN, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[1.0, f64::INFINITY, f64::INFINITY]), f64::INFINITY);
        assert!(median(&[f64::NAN]).is_nan());
    }

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], [0, 10, 50, 90, 100]) = [1, 1.3, 2.5, 3.7, 4]
        let sorted = [1.0, 2.0, 3.0, 4.0];
        for (p, expected) in [
            (0.0, 1.0),
            (10.0, 1.3),
            (50.0, 2.5),
            (90.0, 3.7),
            (100.0, 4.0),
        ] {
            assert!((percentile(&sorted, p) - expected).abs() < 1e-12, "p{p}");
        }
        assert_eq!(percentile(&[7.0], 10.0), 7.0);
    }

    #[test]
    fn interpolation_is_linear_and_bounded() {
        let curve = [(0.0, 0.0), (10.0, 100.0), (20.0, 0.0)];
        assert_eq!(interpolate(&curve, 0.0), Some(0.0));
        assert_eq!(interpolate(&curve, 2.5), Some(25.0));
        assert_eq!(interpolate(&curve, 10.0), Some(100.0));
        assert_eq!(interpolate(&curve, 15.0), Some(50.0));
        assert_eq!(interpolate(&curve, 20.0), Some(0.0));
        assert_eq!(interpolate(&curve, 20.5), None);
        assert_eq!(interpolate(&curve, -1.0), None);
        assert_eq!(interpolate(&[], 0.0), None);
    }

    #[test]
    fn aggregates_seeds_on_a_common_grid() {
        // Three seeds logged at different steps; y = seed · x / 10 on [0, 10] for all of them,
        // except that seed 2 stops at x = 5.
        let seed = |k: f64, xs: &[f64]| xs.iter().map(|&x| (x, k * x / 10.0)).collect::<Vec<_>>();
        let curves = vec![
            seed(1.0, &[0.0, 4.0, 10.0]),
            seed(2.0, &[0.0, 3.0, 7.0, 10.0]),
            seed(3.0, &[0.0, 5.0]),
        ];
        let band = aggregate_seeds(&curves, 11, (10.0, 90.0)).unwrap();
        assert_eq!(band.len(), 11);
        assert_eq!(band[0].x, 0.0);
        assert_eq!(band[10].x, 10.0);
        // At x = 5 all three seeds: values 0.5, 1.0, 1.5.
        let p = band[5];
        assert_eq!(p.seeds, 3);
        assert!((p.median - 1.0).abs() < 1e-12);
        assert!((p.lower - 0.6).abs() < 1e-12); // 0.5 + 0.2·(1.0 − 0.5)
        assert!((p.upper - 1.4).abs() < 1e-12);
        // At x = 10 seed 3 has dropped out: values 1, 2.
        assert_eq!(band[10].seeds, 2);
        assert!((band[10].median - 1.5).abs() < 1e-12);

        assert!(aggregate_seeds(&curves, 11, (90.0, 10.0)).is_err());
        assert!(aggregate_seeds(&curves, 1, (10.0, 90.0)).is_err());
        assert!(aggregate_seeds(&[vec![(0.0, f64::NAN)]], 11, (10.0, 90.0)).is_err());
        // One point in total still gives a (single-point) band.
        assert_eq!(
            aggregate_seeds(&[vec![(3.0, 1.0)]], 11, (10.0, 90.0))
                .unwrap()
                .len(),
            1
        );
    }
}
