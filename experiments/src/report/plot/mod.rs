//! Plots for run directories and reports, drawn with plotters. Every plot is written twice
//! with the same stem: `<stem>.svg` and `<stem>.png`.
//!
//! PNG text is rasterised with the DejaVu Sans font embedded from `experiments/assets/` (plotters'
//! `ab_glyph` feature), so no system fontconfig is needed.
//!
//! - [`LearningCurves`]: median over seeds with a shaded percentile band, per named series;
//! - [`LineChart`]: several `(x, y)` series with optional per-point text (e.g. ε);
//! - [`BarChart`]: category → value with optional error bars.

mod bars;
mod learning_curves;
mod lines;
mod output;
mod stats;
mod style;

pub use self::bars::BarChart;
pub use self::learning_curves::{LearningCurves, SeedCurves};
pub use self::lines::{DualAxisChart, Line, LineChart};
pub(crate) use self::output::register_fonts;
pub use self::output::PlotFiles;
pub use self::stats::{aggregate_seeds, interpolate, mean, median, percentile, BandPoint};
pub use plotters::chart::SeriesLabelPosition;

/// Checks on the files the charts write, shared by the chart modules' tests.
#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The file is a PNG of plausible size (the text itself is checked in `output`'s tests).
    pub(super) fn assert_png(path: &Path) {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is not a PNG",
            path.display()
        );
        assert!(
            bytes.len() > 5_000,
            "{} is suspiciously small",
            path.display()
        );
    }

    pub(super) fn assert_svg_has(path: &Path, texts: &[&str]) {
        let svg = std::fs::read_to_string(path).unwrap();
        for text in texts {
            assert!(svg.contains(text), "{} lacks {text:?}", path.display());
        }
    }
}
