//! [`BarChart`]: one bar per category, with optional error bars.

use super::output::{save_figure, Figure, PlotFiles};
use super::style::{build_chart, color, tick_label, DEFAULT_SIZE, FAMILY};
use anyhow::{bail, ensure, Context, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// A bar chart: one bar per category, with optional symmetric error bars (e.g. ± std).
#[derive(Clone, Debug)]
pub struct BarChart {
    title: String,
    x_label: String,
    y_label: String,
    bars: Vec<(String, f64, Option<f64>)>,
    size: (u32, u32),
}

impl BarChart {
    /// An empty chart titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            bars: Vec::new(),
            size: DEFAULT_SIZE,
        }
    }

    /// Sets the x-axis (category) label.
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    /// Sets the y-axis (value) label.
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    /// Adds a bar.
    pub fn bar(mut self, category: impl Into<String>, value: f64) -> Self {
        self.bars.push((category.into(), value, None));
        self
    }

    /// Adds a bar with an error bar of half-height `error` (≥ 0).
    pub fn bar_with_error(mut self, category: impl Into<String>, value: f64, error: f64) -> Self {
        self.bars.push((category.into(), value, Some(error)));
        self
    }

    /// Sets the image size in pixels (default 960×600).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    /// Writes `<stem>.svg` and `<stem>.png`.
    pub fn save(&self, stem: &Path) -> Result<PlotFiles> {
        self.validate()
            .and_then(|()| save_figure(self, stem))
            .with_context(|| format!("plotting {:?}", self.title))
    }

    fn validate(&self) -> Result<()> {
        ensure!(!self.bars.is_empty(), "the bar chart has no bars");
        for (category, value, error) in &self.bars {
            ensure!(value.is_finite(), "bar {category:?} has value {value}");
            if let Some(error) = error {
                if !(error.is_finite() && *error >= 0.0) {
                    bail!("bar {category:?} has error {error}: expected finite and ≥ 0");
                }
            }
        }
        Ok(())
    }
}

impl Figure for BarChart {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
    {
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for (_, value, error) in &self.bars {
            let error = error.unwrap_or(0.0);
            (lo, hi) = (lo.min(value - error), hi.max(value + error));
        }
        let (lo, hi) = {
            let span = if hi > lo { hi - lo } else { 1.0 };
            (
                if lo < 0.0 { lo - 0.08 * span } else { 0.0 },
                if hi > 0.0 { hi + 0.08 * span } else { 0.0 },
            )
        };
        let n = self.bars.len();
        // Bar i is centred on x = i, with a tick (and its category name) there.
        let mut chart = build_chart(root, &self.title, CategoryAxis { count: n }, lo..hi)?;
        let category = |x: f64| {
            let i = x.round();
            let on_tick = (x - i).abs() < 1e-6 && i >= 0.0;
            match self.bars.get(i as usize) {
                Some((name, _, _)) if on_tick => name.clone(),
                _ => String::new(),
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style((FAMILY, 15))
            .axis_desc_style((FAMILY, 17))
            .x_label_formatter(&|v| category(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .bold_line_style(BLACK.mix(0.10))
            .light_line_style(BLACK.mix(0.03))
            .draw()?;

        const HALF_WIDTH: f64 = 0.38;
        chart.draw_series(self.bars.iter().enumerate().map(|(i, (_, value, _))| {
            let i = i as f64;
            Rectangle::new(
                [(i - HALF_WIDTH, 0.0), (i + HALF_WIDTH, *value)],
                color(0).mix(0.85).filled(),
            )
        }))?;
        let whisker = BLACK.stroke_width(2);
        for (i, (_, value, error)) in self.bars.iter().enumerate() {
            let Some(error) = *error else { continue };
            let (i, bottom, top) = (i as f64, value - error, value + error);
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(i, bottom), (i, top)],
                whisker,
            )))?;
            chart.draw_series([bottom, top].into_iter().map(|y| {
                EmptyElement::at((i, y)) + PathElement::new(vec![(-8, 0), (8, 0)], whisker)
            }))?;
        }
        Ok(())
    }
}

/// An x axis of `count` categories centred on 0, 1, …, count − 1, with one tick each.
struct CategoryAxis {
    count: usize,
}

impl Ranged for CategoryAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let fraction = (value + 0.5) / self.count as f64;
        limit.0 + ((limit.1 - limit.0) as f64 * fraction).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        let max = hint.max_num_points();
        if max == 0 {
            return Vec::new();
        }
        let stride = self.count.div_ceil(max);
        (0..self.count).step_by(stride).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.count as f64 - 0.5
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::{assert_png, assert_svg_has};
    use crate::run::tests::temp_dir;

    #[test]
    fn draws_bar_chart_with_error_bars() {
        let dir = temp_dir("plot-bars");
        let files = BarChart::new("Final return")
            .x_label("agent")
            .y_label("return")
            .bar_with_error("PPO", 480.0, 20.0)
            .bar_with_error("PPO + PRS", 310.0, 45.0)
            .bar("random", -12.0)
            .save(&dir.join("bars"))
            .unwrap();
        assert_png(&files.png);
        assert_svg_has(&files.svg, &["PPO + PRS", "random", "Final return"]);
        let single = BarChart::new("one")
            .bar("only", 2.0)
            .save(&dir.join("one"))
            .unwrap();
        assert_png(&single.png);
        assert!(BarChart::new("x")
            .bar("a", f64::NAN)
            .save(&dir.join("bad"))
            .is_err());
        assert!(BarChart::new("x")
            .bar_with_error("a", 1.0, -1.0)
            .save(&dir.join("bad"))
            .is_err());
    }
}
