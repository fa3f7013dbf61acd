//! Plots for run directories and reports, drawn with plotters. Every plot is written twice
//! with the same stem: `<stem>.svg` and `<stem>.png`.
//!
//! PNG text is rasterised with the DejaVu Sans font embedded from `experiments/assets/` (plotters'
//! `ab_glyph` feature), so no system fontconfig is needed.
//!
//! - [`LearningCurves`]: median over seeds with a shaded percentile band, per named series;
//! - [`LineChart`]: several `(x, y)` series with optional per-point text (e.g. ε);
//! - [`BarChart`]: category → value with optional error bars.

// Used by suites added in later issues; until then only the tests call some items.
#![allow(dead_code)]

use anyhow::{bail, ensure, Context, Result};
use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use plotters::chart::SeriesLabelPosition;

/// DejaVu Sans (license: `experiments/assets/DejaVuSans-LICENSE`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

const FAMILY: &str = "sans-serif";
const DEFAULT_SIZE: (u32, u32) = (960, 600);

/// Colour-blind-friendly categorical colours (Tableau 10), cycled per series.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Registers the embedded font for plotters' font families, once per process.
pub(crate) fn register_fonts() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        ["sans-serif", "serif", "monospace"]
            .iter()
            .all(|family| register_font(family, FontStyle::Normal, FONT).is_ok())
    });
    ensure!(
        ok,
        "the embedded font experiments/assets/DejaVuSans.ttf could not be loaded"
    );
    Ok(())
}

/// The two files one plot was written to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotFiles {
    /// `<stem>.svg`
    pub svg: PathBuf,
    /// `<stem>.png`
    pub png: PathBuf,
}

/// `<stem>.<ext>`, keeping any dots already in the stem (`eps0.5` stays `eps0.5.svg`).
fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut name = OsString::from(stem.as_os_str());
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

/// A plot that can draw itself on any plotters backend.
trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static;
}

fn save_figure(figure: &impl Figure, stem: &Path) -> Result<PlotFiles> {
    register_fonts()?;
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let files = PlotFiles {
        svg: with_ext(stem, "svg"),
        png: with_ext(stem, "png"),
    };
    let size = figure.size();
    {
        let root = SVGBackend::new(&files.svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        figure.draw(&root)?;
        root.present()
            .with_context(|| format!("writing {}", files.svg.display()))?;
    }
    {
        let root = BitMapBackend::new(&files.png, size).into_drawing_area();
        root.fill(&WHITE)?;
        figure.draw(&root)?;
        root.present()
            .with_context(|| format!("writing {}", files.png.display()))?;
    }
    Ok(files)
}

/// Compact tick text: `1.5M`, `20k`, `0.25`, `1e-4`.
fn tick_label(value: f64) -> String {
    let magnitude = value.abs();
    let trimmed = |text: String| -> String {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text
        }
    };
    if value == 0.0 {
        "0".to_owned()
    } else if magnitude >= 1e6 {
        format!("{}M", trimmed(format!("{:.2}", value / 1e6)))
    } else if magnitude >= 1e4 {
        format!("{}k", trimmed(format!("{:.1}", value / 1e3)))
    } else if magnitude >= 1e-3 {
        trimmed(format!("{value:.3}"))
    } else {
        format!("{value:.0e}")
    }
}

/// `lo..hi` widened by `pad` of its width on both sides, and never empty.
fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if hi > lo {
        let margin = (hi - lo) * pad;
        (lo - margin, hi + margin)
    } else {
        let margin = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - margin, hi + margin)
    }
}

/// A 2-D chart on the coordinate types that the axis specs `X` and `Y` produce.
type Chart<'a, DB, X, Y> = ChartContext<
    'a,
    DB,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// Axis and text styling shared by every chart.
fn build_chart<'a, DB, X, Y>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    x: X,
    y: Y,
) -> Result<Chart<'a, DB, X, Y>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord,
    Y: AsRangedCoord,
{
    area.fill(&WHITE)?;
    let chart = ChartBuilder::on(area)
        .caption(title, (FAMILY, 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(76)
        .build_cartesian_2d(x, y)?;
    Ok(chart)
}

fn draw_mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x_label: &str,
    y_label: &str,
) -> Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .x_label_formatter(&|v| tick_label(*v))
        .y_label_formatter(&|v| tick_label(*v))
        .bold_line_style(BLACK.mix(0.10))
        .light_line_style(BLACK.mix(0.03))
        .draw()?;
    Ok(())
}

fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font((FAMILY, 15))
        .margin(12)
        .draw()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Learning curves

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

/// Ordinal suffix for band notes: 10 → "10th".
fn ordinal(p: f64) -> String {
    let text = tick_label(p);
    let suffix = match (p as u64 % 10, p as u64 % 100) {
        _ if p.fract() != 0.0 => "th",
        (1, n) if n != 11 => "st",
        (2, n) if n != 12 => "nd",
        (3, n) if n != 13 => "rd",
        _ => "th",
    };
    format!("{text}{suffix}")
}

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

// ---------------------------------------------------------------------------------------------
// Line chart

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

// ---------------------------------------------------------------------------------------------
// Dual-axis chart

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

// ---------------------------------------------------------------------------------------------
// Bar chart

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
    use crate::run::tests::temp_dir;

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

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(1_500_000.0), "1.5M");
        assert_eq!(tick_label(20_000.0), "20k");
        assert_eq!(tick_label(2_000.0), "2000");
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(-12.5), "-12.5");
        assert_eq!(tick_label(0.0001), "1e-4");
        assert_eq!(ordinal(10.0), "10th");
        assert_eq!(ordinal(2.5), "2.5th");
        assert_eq!(ordinal(1.0), "1st");
    }

    #[test]
    fn embedded_font_rasterises_text() {
        register_fonts().unwrap();
        let (width, height) = (200u32, 40u32);
        let mut pixels = vec![255u8; (width * height * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
            let style = TextStyle::from((FAMILY, 24).into_font()).color(&BLACK);
            root.draw_text("Return ε", &style, (4, 4)).unwrap();
            root.present().unwrap();
        }
        let inked = pixels
            .chunks(3)
            .filter(|px| px.iter().any(|&v| v < 128))
            .count();
        assert!(inked > 100, "only {inked} dark pixels: text did not render");
    }

    /// The file is a PNG of plausible size (the text itself is checked above).
    fn assert_png(path: &Path) {
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

    fn assert_svg_has(path: &Path, texts: &[&str]) {
        let svg = std::fs::read_to_string(path).unwrap();
        for text in texts {
            assert!(svg.contains(text), "{} lacks {text:?}", path.display());
        }
    }

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
            &["PPO + PRS (5 seeds)", "environment steps", "percentile"],
        );

        let err = LearningCurves::new("t")
            .band(50.0, 50.0)
            .series("a", vec![curve(1.0, 0.0)]);
        assert!(err.save(&dir.join("bad")).is_err());
        assert!(LearningCurves::new("t").save(&dir.join("empty")).is_err());
    }

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
