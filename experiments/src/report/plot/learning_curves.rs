//! [`LearningCurves`]: per named series, the median over seeds with a shaded percentile band.

use super::output::{save_figure, Figure, PlotFiles};
use super::stats::{aggregate_seeds, BandPoint};
use super::style::{
    build_chart, color, draw_legend, draw_mesh, ordinal, padded, DEFAULT_SIZE, FAMILY,
};
use super::SeriesLabelPosition;
use anyhow::{ensure, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One `(x, y)` curve per seed, e.g. `(step, return)` read from each run's `metrics.csv`.
pub type SeedCurves = Vec<Vec<(f64, f64)>>;

/// Learning curves: for each named series (an algorithm or setting), the median over its
/// seeds as a line and a shaded percentile band (10th–90th by default).
#[derive(Clone, Debug)]
pub struct LearningCurves {
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<(String, SeedCurves)>,
    band: (f64, f64),
    grid_points: usize,
    show_seeds: bool,
    legend: SeriesLabelPosition,
    size: (u32, u32),
    references: Vec<(String, f64)>,
}

impl LearningCurves {
    /// An empty plot titled `title`, with axes "environment steps" and "episode return".
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: "environment steps".to_owned(),
            y_label: "episode return".to_owned(),
            series: Vec::new(),
            band: (10.0, 90.0),
            grid_points: 200,
            show_seeds: false,
            legend: SeriesLabelPosition::LowerRight,
            size: DEFAULT_SIZE,
            references: Vec::new(),
        }
    }

    /// Sets the x-axis label.
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    /// Sets the y-axis label.
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    /// Adds a series: one `(x, y)` curve per seed.
    pub fn series(mut self, name: impl Into<String>, seed_curves: SeedCurves) -> Self {
        self.series.push((name.into(), seed_curves));
        self
    }

    /// Adds a dashed horizontal reference line at `y` (e.g. a success threshold), in the legend
    /// as `name` and always inside the y range.
    pub fn reference(mut self, name: impl Into<String>, y: f64) -> Self {
        self.references.push((name.into(), y));
        self
    }

    /// Sets the shaded band's percentiles, `0 ≤ lower < upper ≤ 100` (default 10, 90).
    pub fn band(mut self, lower: f64, upper: f64) -> Self {
        self.band = (lower, upper);
        self
    }

    /// Sets how many x positions the seeds are interpolated onto (default 200).
    pub fn grid_points(mut self, grid_points: usize) -> Self {
        self.grid_points = grid_points;
        self
    }

    /// Also draws every seed's raw curve, faintly (default off).
    pub fn show_seeds(mut self, show: bool) -> Self {
        self.show_seeds = show;
        self
    }

    /// Sets where the legend goes (default lower right).
    pub fn legend(mut self, position: SeriesLabelPosition) -> Self {
        self.legend = position;
        self
    }

    /// Sets the image size in pixels (default 960×600).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    /// Writes `<stem>.svg` and `<stem>.png`.
    pub fn save(&self, stem: &Path) -> Result<PlotFiles> {
        let figure = self.aggregate()?;
        save_figure(&figure, stem).with_context(|| format!("plotting {:?}", self.title))
    }

    fn aggregate(&self) -> Result<AggregatedCurves<'_>> {
        ensure!(
            !self.series.is_empty(),
            "learning curves {:?} have no series",
            self.title
        );
        let mut bands = Vec::with_capacity(self.series.len());
        for (name, curves) in &self.series {
            let band = aggregate_seeds(curves, self.grid_points, self.band)
                .with_context(|| format!("learning curves {:?}, series {name:?}", self.title))?;
            bands.push(band);
        }
        Ok(AggregatedCurves { spec: self, bands })
    }
}

struct AggregatedCurves<'a> {
    spec: &'a LearningCurves,
    bands: Vec<Vec<BandPoint>>,
}

impl Figure for AggregatedCurves<'_> {
    fn size(&self) -> (u32, u32) {
        self.spec.size
    }

    fn draw<DB>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
    {
        let spec = self.spec;
        let raw_points = || {
            spec.series
                .iter()
                .flat_map(|(_, curves)| curves.iter().flatten())
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        let band_points = || self.bands.iter().flatten();
        let (mut x_min, mut x_max) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y_min, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY);
        for p in band_points() {
            (x_min, x_max) = (x_min.min(p.x), x_max.max(p.x));
            (y_min, y_max) = (y_min.min(p.lower), y_max.max(p.upper));
        }
        if spec.show_seeds {
            for &(_, y) in raw_points() {
                (y_min, y_max) = (y_min.min(y), y_max.max(y));
            }
        }
        for &(_, y) in spec.references.iter().filter(|(_, y)| y.is_finite()) {
            (y_min, y_max) = (y_min.min(y), y_max.max(y));
        }
        let (x_min, x_max) = if x_max > x_min {
            (x_min, x_max)
        } else {
            padded(x_min, x_max, 0.0)
        };
        let (y_min, y_max) = padded(y_min, y_max, 0.05);

        let (width, height) = root.dim_in_pixel();
        let (plot_area, footnote) = root.split_vertically(height.saturating_sub(26));
        let mut chart = build_chart(&plot_area, &spec.title, x_min..x_max, y_min..y_max)?;
        draw_mesh(&mut chart, &spec.x_label, &spec.y_label)?;

        for (i, ((name, curves), band)) in spec.series.iter().zip(&self.bands).enumerate() {
            let c = color(i);
            if spec.show_seeds {
                for curve in curves {
                    let mut curve: Vec<(f64, f64)> = curve
                        .iter()
                        .copied()
                        .filter(|(x, y)| x.is_finite() && y.is_finite())
                        .collect();
                    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
                    chart.draw_series(LineSeries::new(curve, c.mix(0.3).stroke_width(1)))?;
                }
            }
            let outline: Vec<(f64, f64)> = band
                .iter()
                .map(|p| (p.x, p.upper))
                .chain(band.iter().rev().map(|p| (p.x, p.lower)))
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(outline, c.mix(0.2).filled())))?;
            let seeds = curves.len();
            chart
                .draw_series(LineSeries::new(
                    band.iter().map(|p| (p.x, p.median)),
                    c.stroke_width(2),
                ))?
                .label(format!(
                    "{name} ({seeds} seed{})",
                    if seeds == 1 { "" } else { "s" }
                ))
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + Rectangle::new([(0, -6), (24, 6)], c.mix(0.2).filled())
                        + PathElement::new(vec![(0, 0), (24, 0)], c.stroke_width(2))
                });
        }
        for (name, y) in spec.references.iter().filter(|(_, y)| y.is_finite()) {
            let grey = BLACK.mix(0.7);
            chart
                .draw_series(DashedLineSeries::new(
                    [(x_min, *y), (x_max, *y)],
                    8,
                    6,
                    grey.stroke_width(2),
                ))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], grey.stroke_width(2))
                });
        }
        draw_legend(&mut chart, spec.legend.clone())?;

        let note = format!(
            "Lines: median over seeds. Bands: {}–{} percentile.",
            ordinal(spec.band.0),
            ordinal(spec.band.1)
        );
        let grey = BLACK.mix(0.6);
        let style = TextStyle::from((FAMILY, 14).into_font()).color(&grey);
        let (note_width, _) = footnote.estimate_text_size(&note, &style)?;
        let x = (width as i32 - note_width as i32 - 16).max(0);
        footnote.draw_text(&note, &style, (x, 4))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::{assert_png, assert_svg_has};
    use crate::run::tests::temp_dir;

    #[test]
    fn draws_learning_curves_as_svg_and_png() {
        let dir = temp_dir("plot-curves");
        let curve = |slope: f64, noise: f64| -> Vec<(f64, f64)> {
            (0..=50)
                .map(|k| {
                    let x = k as f64 * 2000.0;
                    (
                        x,
                        500.0 * (1.0 - (-slope * x / 1e5).exp()) + noise * (k as f64).sin(),
                    )
                })
                .collect()
        };
        let files = LearningCurves::new("CartPole-v1: PPO vs private PPO (ε = 1)")
            .reference("threshold 475", 475.0)
            .series(
                "PPO",
                (0..5).map(|s| curve(3.0, 10.0 + 8.0 * s as f64)).collect(),
            )
            .series(
                "PPO + PRS",
                (0..5).map(|s| curve(1.5, 30.0 - 5.0 * s as f64)).collect(),
            )
            .save(&dir.join("curves.eps1"))
            .unwrap();
        assert_eq!(files.png, dir.join("curves.eps1.png"));
        assert_png(&files.png);
        assert_svg_has(
            &files.svg,
            &[
                "PPO + PRS (5 seeds)",
                "environment steps",
                "percentile",
                "threshold 475",
            ],
        );

        let err = LearningCurves::new("t")
            .band(50.0, 50.0)
            .series("a", vec![curve(1.0, 0.0)]);
        assert!(err.save(&dir.join("bad")).is_err());
        assert!(LearningCurves::new("t").save(&dir.join("empty")).is_err());
    }
}
