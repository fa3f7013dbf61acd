//! What every chart shares: the font family, default size and palette, compact tick text,
//! padded axis ranges, and the chart frame (caption, mesh and legend).

use super::SeriesLabelPosition;
use anyhow::Result;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

pub(super) const FAMILY: &str = "sans-serif";
pub(super) const DEFAULT_SIZE: (u32, u32) = (960, 600);

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

pub(super) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Compact tick text: `1.5M`, `20k`, `0.25`, `1e-4`.
pub(super) fn tick_label(value: f64) -> String {
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
pub(super) fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if hi > lo {
        let margin = (hi - lo) * pad;
        (lo - margin, hi + margin)
    } else {
        let margin = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - margin, hi + margin)
    }
}

/// Ordinal suffix for band notes: 10 → "10th".
pub(super) fn ordinal(p: f64) -> String {
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

/// A 2-D chart on the coordinate types that the axis specs `X` and `Y` produce.
pub(super) type Chart<'a, DB, X, Y> = ChartContext<
    'a,
    DB,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// Axis and text styling shared by every chart.
pub(super) fn build_chart<'a, DB, X, Y>(
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

pub(super) fn draw_mesh<DB, X, Y>(
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

pub(super) fn draw_legend<'a, DB, CT>(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
