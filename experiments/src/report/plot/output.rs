//! Writing a figure to `<stem>.svg` and `<stem>.png`, with the embedded font.

use anyhow::{ensure, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// DejaVu Sans (license: `experiments/assets/DejaVuSans-LICENSE`).
static FONT: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

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
pub(super) trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static;
}

pub(super) fn save_figure(figure: &impl Figure, stem: &Path) -> Result<PlotFiles> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::style::FAMILY;

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
}
