//! Line charts of [`Line`] series: on one pair of axes ([`LineChart`]), or with a log x axis
//! and two y axes ([`DualAxisChart`]).

use super::output::{save_figure, Figure, PlotFiles};
use super::style::{
    build_chart, color, draw_legend, draw_mesh, padded, tick_label, DEFAULT_SIZE, FAMILY,
};
use super::SeriesLabelPosition;
use anyhow::{ensure, Context, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One series of a [`LineChart`]: `(x, y)` points joined by a line, with optional text at
/// each point.
#[derive(Clone, Debug)]
pub struct Line {
    name: String,
    points: Vec<(f64, f64)>,
    annotations: Vec<String>,
}

impl Line {
    /// A series called `name` through `points` (drawn in the given order).
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            annotations: Vec::new(),
        }
    }

    /// Text beside each point, one per point in order (`""` for none), e.g. `"ε=0.5"`.
    pub fn annotations<S: Into<String>>(mut self, labels: impl IntoIterator<Item = S>) -> Self {
        self.annotations = labels.into_iter().map(Into::into).collect();
        self
    }
}

/// A line chart of several series, with optional logarithmic axes.
#[derive(Clone, Debug)]
pub struct LineChart {
    title: String,
    x_label: String,
    y_label: String,
    lines: Vec<Line>,
    log_x: bool,
    log_y: bool,
    legend: SeriesLabelPosition,
    size: (u32, u32),
}

impl LineChart {
    /// An empty chart titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            lines: Vec::new(),
            log_x: false,
            log_y: false,
            legend: SeriesLabelPosition::UpperRight,
            size: DEFAULT_SIZE,
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

    /// Adds a series.
    pub fn line(mut self, line: Line) -> Self {
        self.lines.push(line);
        self
    }

    /// Uses a logarithmic x axis (all x must be > 0).
    pub fn log_x(mut self) -> Self {
        self.log_x = true;
        self
    }

    /// Uses a logarithmic y axis (all y must be > 0).
    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    /// Sets where the legend goes (default upper right).
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
        self.validate()
            .and_then(|()| save_figure(self, stem))
            .with_context(|| format!("plotting {:?}", self.title))
    }

    fn validate(&self) -> Result<()> {
        ensure!(!self.lines.is_empty(), "the line chart has no series");
        for line in &self.lines {
            ensure!(
                !line.points.is_empty(),
                "series {:?} has no points",
                line.name
            );
            ensure!(
                line.annotations.is_empty() || line.annotations.len() == line.points.len(),
                "series {:?} has {} annotations for {} points",
                line.name,
                line.annotations.len(),
                line.points.len()
            );
            for &(x, y) in &line.points {
                ensure!(
                    x.is_finite() && y.is_finite(),
                    "series {:?} has a non-finite point ({x}, {y})",
                    line.name
                );
                ensure!(
                    !self.log_x || x > 0.0,
                    "series {:?}: x = {x} on a log axis",
                    line.name
                );
                ensure!(
                    !self.log_y || y > 0.0,
                    "series {:?}: y = {y} on a log axis",
                    line.name
                );
            }
        }
        Ok(())
    }

    fn range(&self, axis: impl Fn(&(f64, f64)) -> f64, log: bool) -> (f64, f64) {
        axis_range(self.lines.iter(), axis, log)
    }

    fn draw_on<DB, X, Y>(&self, root: &DrawingArea<DB, Shift>, x: X, y: Y) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = build_chart(root, &self.title, x, y)?;
        draw_mesh(&mut chart, &self.x_label, &self.y_label)?;
        let dark_grey = BLACK.mix(0.75);
        let text = TextStyle::from((FAMILY, 13).into_font()).color(&dark_grey);
        for (i, line) in self.lines.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    c.stroke_width(2),
                ))?
                .label(line.name.clone())
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (24, 0)], c.stroke_width(2))
                        + Circle::new((12, 0), 3, c.filled())
                });
            chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            let labelled = line
                .points
                .iter()
                .zip(&line.annotations)
                .filter(|(_, label)| !label.is_empty());
            chart.draw_series(labelled.map(|(&p, label)| {
                EmptyElement::at(p) + Text::new(label.clone(), (6, -18), text.clone())
            }))?;
        }
        draw_legend(&mut chart, self.legend.clone())
    }
}

impl Figure for LineChart {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
    {
        let (x0, x1) = self.range(|p| p.0, self.log_x);
        let (y0, y1) = self.range(|p| p.1, self.log_y);
        match (self.log_x, self.log_y) {
            (false, false) => self.draw_on(root, x0..x1, y0..y1),
            (true, false) => self.draw_on(root, (x0..x1).log_scale(), y0..y1),
            (false, true) => self.draw_on(root, x0..x1, (y0..y1).log_scale()),
            (true, true) => self.draw_on(root, (x0..x1).log_scale(), (y0..y1).log_scale()),
        }
    }
}

/// A line chart with a logarithmic x axis and two y axes: [`DualAxisChart::line`] series on
/// the left axis, [`DualAxisChart::secondary_line`] series on the right (e.g. utility and
/// leakage against ε).
#[derive(Clone, Debug)]
pub struct DualAxisChart {
    title: String,
    x_label: String,
    y_label: String,
    y2_label: String,
    lines: Vec<Line>,
    secondary: Vec<Line>,
    size: (u32, u32),
}

impl DualAxisChart {
    /// An empty chart titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            y2_label: String::new(),
            lines: Vec::new(),
            secondary: Vec::new(),
            size: DEFAULT_SIZE,
        }
    }

    /// Sets the x-axis label.
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    /// Sets the left y-axis label.
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    /// Sets the right y-axis label.
    pub fn y2_label(mut self, label: impl Into<String>) -> Self {
        self.y2_label = label.into();
        self
    }

    /// Adds a series on the left axis.
    pub fn line(mut self, line: Line) -> Self {
        self.lines.push(line);
        self
    }

    /// Adds a series on the right axis (drawn dashed).
    pub fn secondary_line(mut self, line: Line) -> Self {
        self.secondary.push(line);
        self
    }

    /// Writes `<stem>.svg` and `<stem>.png`.
    pub fn save(&self, stem: &Path) -> Result<PlotFiles> {
        self.validate()
            .and_then(|()| save_figure(self, stem))
            .with_context(|| format!("plotting {:?}", self.title))
    }

    fn validate(&self) -> Result<()> {
        ensure!(
            !self.lines.is_empty() && !self.secondary.is_empty(),
            "a dual-axis chart needs a series on each axis"
        );
        for line in self.lines.iter().chain(&self.secondary) {
            ensure!(
                !line.points.is_empty(),
                "series {:?} has no points",
                line.name
            );
            for &(x, y) in &line.points {
                ensure!(
                    x.is_finite() && x > 0.0 && y.is_finite(),
                    "series {:?} has a point ({x}, {y}) off a log x axis",
                    line.name
                );
            }
        }
        Ok(())
    }
}

/// The plotted range of `axis` over `lines`: padded by 6% of its width, or on a log axis by
/// 5% of its decades.
fn axis_range<'a>(
    lines: impl Iterator<Item = &'a Line>,
    axis: impl Fn(&(f64, f64)) -> f64,
    log: bool,
) -> (f64, f64) {
    let values = lines.flat_map(|l| l.points.iter().map(&axis));
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if log {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            (lo / 2.0, hi * 2.0)
        };
        let factor = (hi / lo).powf(0.05);
        (lo / factor, hi * factor)
    } else {
        padded(lo, hi, 0.06)
    }
}

impl Figure for DualAxisChart {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
    {
        let (x0, x1) = axis_range(self.lines.iter().chain(&self.secondary), |p| p.0, true);
        let (y0, y1) = axis_range(self.lines.iter(), |p| p.1, false);
        let (z0, z1) = axis_range(self.secondary.iter(), |p| p.1, false);
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FAMILY, 24))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(76)
            .right_y_label_area_size(76)
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)?
            .set_secondary_coord((x0..x1).log_scale(), z0..z1);
        draw_mesh(&mut chart, &self.x_label, &self.y_label)?;
        chart
            .configure_secondary_axes()
            .y_desc(self.y2_label.as_str())
            .label_style((FAMILY, 15))
            .axis_desc_style((FAMILY, 17))
            .y_label_formatter(&|v| tick_label(*v))
            .draw()?;
        for (i, line) in self.lines.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    c.stroke_width(3),
                ))?
                .label(format!("{} (left)", line.name))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3))
                });
            chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 5, c.filled())))?;
        }
        for (i, line) in self.secondary.iter().enumerate() {
            let c = color(self.lines.len() + i);
            chart
                .draw_secondary_series(DashedLineSeries::new(
                    line.points.iter().copied(),
                    8,
                    5,
                    c.stroke_width(2),
                ))?
                .label(format!("{} (right)", line.name))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(2))
                });
            chart.draw_secondary_series(
                line.points
                    .iter()
                    .map(|&p| TriangleMarker::new(p, 5, c.filled())),
            )?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::{assert_png, assert_svg_has};
    use crate::run::tests::temp_dir;

    #[test]
    fn draws_annotated_line_chart() {
        let dir = temp_dir("plot-lines");
        let eps = [0.1, 0.5, 1.0, 5.0];
        let files = LineChart::new("Attack success vs privacy")
            .x_label("noise multiplier σ")
            .y_label("reconstruction PSNR (dB)")
            .line(
                Line::new(
                    "QGI",
                    eps.iter().map(|&e| (1.0 / e, 10.0 + 3.0 * e)).collect(),
                )
                .annotations(eps.iter().map(|e| format!("ε={e}"))),
            )
            .line(Line::new("DLG", vec![(0.2, 9.0), (1.0, 8.0), (10.0, 7.5)]))
            .save(&dir.join("lines"))
            .unwrap();
        assert_png(&files.png);
        assert_svg_has(&files.svg, &["ε=0.5", "QGI", "DLG", "noise multiplier σ"]);

        let log = LineChart::new("log axes")
            .log_x()
            .log_y()
            .line(Line::new("a", vec![(0.1, 1.0), (10.0, 1000.0)]))
            .save(&dir.join("log"))
            .unwrap();
        assert_png(&log.png);
        let bad = LineChart::new("bad")
            .log_x()
            .line(Line::new("a", vec![(0.0, 1.0)]));
        assert!(bad.save(&dir.join("bad")).is_err());
        let bad =
            LineChart::new("bad").line(Line::new("a", vec![(0.0, 1.0)]).annotations(["x", "y"]));
        assert!(bad.save(&dir.join("bad")).is_err());
    }
}
