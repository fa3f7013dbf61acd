//! `report.md`: a suite's results as Markdown, with tables, embedded plots and the commands
//! that reproduce them.
//!
//! ```ignore
//! let mut report = Report::new(&suite_dir, "PPO on CartPole");
//! report
//!     .paragraph("Median return over 5 seeds.")
//!     .table(&["agent", "return"], vec![vec!["PPO".into(), 487.5.into()]])
//!     .plot("Learning curves", &files)
//!     .reproduce(&["cargo xtask ppo --seeds 0..5"]);
//! report.write()?;
//! ```

pub mod plot;
mod scope;

pub use self::scope::PrivacyScope;

use self::plot::PlotFiles;
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// File name of the report in its directory.
pub const REPORT_FILE: &str = "report.md";

/// One table cell: text, or a number that [`format_number`] formats.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Shown as is.
    Text(String),
    /// Formatted with [`format_number`] and right-aligned when its whole column is numeric.
    Number(f64),
}

impl Cell {
    fn render(&self) -> String {
        match self {
            Cell::Text(text) => escape_cell(text),
            Cell::Number(value) => format_number(*value),
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Cell::Text(text.to_owned())
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell::Text(text)
    }
}

impl From<&String> for Cell {
    fn from(text: &String) -> Self {
        Cell::Text(text.clone())
    }
}

macro_rules! number_cell {
    ($($t:ty),*) => {$(
        impl From<$t> for Cell {
            fn from(value: $t) -> Self {
                Cell::Number(value as f64)
            }
        }
    )*};
}
number_cell!(f64, f32, u64, u32, usize, i64, i32);

/// Formats a number for a table: integers without decimals (`2048`), others with 4
/// significant digits (`0.1235`, `487.5`), scientific outside [1e-3, 1e6) (`1.235e-5`), and
/// `NaN`, `∞`, `−∞` spelled out.
pub fn format_number(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "∞" } else { "−∞" }.to_owned();
    }
    let magnitude = value.abs();
    if value.fract() == 0.0 && magnitude < 1e15 {
        return format!("{value:.0}");
    }
    if !(1e-3..1e6).contains(&magnitude) {
        return format!("{value:.3e}");
    }
    let digits_before_point = magnitude.log10().floor() as i32 + 1;
    let decimals = (4 - digits_before_point).clamp(0, 6) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// `values` as a command line takes a list: `1,2,4` (each by its `Display`), for the
/// "How to reproduce" commands.
pub fn comma_list<T: std::fmt::Display>(values: &[T]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `mean ± std` over `values` (sample standard deviation, n − 1), e.g. `487.5 ± 12.3`;
/// `n/a` when empty, and just the mean for one value.
pub fn format_mean_std(values: &[f64]) -> String {
    let n = values.len();
    if n == 0 {
        return "n/a".to_owned();
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return format_number(mean);
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    format!(
        "{} ± {}",
        format_number(mean),
        format_number(variance.sqrt())
    )
}

fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A Markdown report built section by section and written to `<dir>/report.md`.
#[derive(Clone, Debug)]
pub struct Report {
    dir: PathBuf,
    markdown: String,
}

impl Report {
    /// A report for directory `dir` (where `report.md` goes; image links are made relative to
    /// it), starting with `# title`.
    pub fn new(dir: impl Into<PathBuf>, title: &str) -> Self {
        Self {
            dir: dir.into(),
            markdown: format!("# {}\n", title.trim()),
        }
    }

    fn block(&mut self, text: &str) -> &mut Self {
        self.markdown.push('\n');
        self.markdown.push_str(text);
        if !text.ends_with('\n') {
            self.markdown.push('\n');
        }
        self
    }

    /// A `##` section heading.
    pub fn heading(&mut self, text: &str) -> &mut Self {
        self.block(&format!("## {}", text.trim()))
    }

    /// A `###` subsection heading.
    pub fn subheading(&mut self, text: &str) -> &mut Self {
        self.block(&format!("### {}", text.trim()))
    }

    /// A paragraph of Markdown text.
    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        self.block(text.trim())
    }

    /// A bulleted list.
    pub fn bullets<S: AsRef<str>>(&mut self, items: impl IntoIterator<Item = S>) -> &mut Self {
        let list: String = items
            .into_iter()
            .map(|item| format!("- {}\n", item.as_ref().trim()))
            .collect();
        self.block(&list)
    }

    /// A table. Columns whose (present) cells are all numbers are right-aligned. A short row is padded
    /// with empty cells; a long row extends the header with empty names.
    pub fn table(&mut self, headers: &[&str], rows: Vec<Vec<Cell>>) -> &mut Self {
        let width = rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(headers.len());
        let numeric: Vec<bool> = (0..width)
            .map(|col| {
                let mut present = rows.iter().filter_map(|row| row.get(col)).peekable();
                present.peek().is_some() && present.all(|cell| matches!(cell, Cell::Number(_)))
            })
            .collect();
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut table = line(
            (0..width)
                .map(|col| escape_cell(headers.get(col).copied().unwrap_or("")))
                .collect(),
        );
        table.push_str(&line(
            numeric
                .iter()
                .map(|&right| if right { "---:" } else { "---" }.to_owned())
                .collect(),
        ));
        for row in &rows {
            table.push_str(&line(
                (0..width)
                    .map(|col| row.get(col).map(Cell::render).unwrap_or_default())
                    .collect(),
            ));
        }
        self.block(&table)
    }

    /// Embeds an image (`png`) with an optional link to its vector version (`svg`), both
    /// linked relative to the report's directory.
    pub fn image(&mut self, caption: &str, png: &Path, svg: Option<&Path>) -> &mut Self {
        let mut text = format!("![{}]({})", caption.trim(), self.link(png));
        if let Some(svg) = svg {
            let _ = write!(text, "\n\n*{}* ([SVG]({}))", caption.trim(), self.link(svg));
        }
        self.block(&text)
    }

    /// Embeds a plot written by [`crate::report::plot`]: its PNG, with a link to its SVG.
    pub fn plot(&mut self, caption: &str, files: &PlotFiles) -> &mut Self {
        self.image(caption, &files.png, Some(&files.svg))
    }

    /// A fenced code block; `language` may be empty.
    pub fn code_block(&mut self, language: &str, code: &str) -> &mut Self {
        let fence = if code.contains("```") { "````" } else { "```" };
        self.block(&format!("{fence}{language}\n{}\n{fence}", code.trim_end()))
    }

    /// A "How to reproduce" section with the shell commands that regenerate the results.
    pub fn reproduce<S: AsRef<str>>(&mut self, commands: impl IntoIterator<Item = S>) -> &mut Self {
        let commands: Vec<String> = commands
            .into_iter()
            .map(|c| c.as_ref().to_owned())
            .collect();
        self.heading("How to reproduce")
            .code_block("sh", &commands.join("\n"))
    }

    /// The Markdown so far.
    pub fn markdown(&self) -> &str {
        &self.markdown
    }

    /// Writes `<dir>/report.md` and returns its path.
    pub fn write(&self) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let path = self.dir.join(REPORT_FILE);
        std::fs::write(&path, &self.markdown)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// `path` relative to the report directory when it lies inside it, with `/` separators.
    fn link(&self, path: &Path) -> String {
        let relative = path
            .strip_prefix(&self.dir)
            .map(Path::to_path_buf)
            .or_else(|_| {
                let (dir, path) = (self.dir.canonicalize()?, path.canonicalize()?);
                path.strip_prefix(dir)
                    .map(Path::to_path_buf)
                    .map_err(std::io::Error::other)
            })
            .unwrap_or_else(|_| path.to_path_buf());
        let text = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if text.contains([' ', '(', ')']) {
            format!("<{text}>")
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::tests::temp_dir;

    #[test]
    fn formats_numbers_for_tables() {
        assert_eq!(format_number(2048.0), "2048");
        assert_eq!(format_number(-3.0), "-3");
        assert_eq!(format_number(487.54), "487.5");
        assert_eq!(format_number(0.123456), "0.1235");
        assert_eq!(format_number(0.5), "0.5");
        assert_eq!(format_number(1.23456), "1.235");
        assert_eq!(format_number(12345.67), "12346");
        assert_eq!(format_number(0.0000123456), "1.235e-5");
        assert_eq!(format_number(1.5e7), "15000000");
        assert_eq!(format_number(1.25e20), "1.250e20");
        assert_eq!(format_number(f64::NAN), "NaN");
        assert_eq!(format_number(f64::NEG_INFINITY), "−∞");
        // 1, 2, 3: mean 2, sample std 1.
        assert_eq!(format_mean_std(&[1.0, 2.0, 3.0]), "2 ± 1");
        assert_eq!(format_mean_std(&[4.5]), "4.5");
        assert_eq!(format_mean_std(&[]), "n/a");
    }

    #[test]
    fn writes_markdown_with_tables_images_and_reproduction() {
        let dir = temp_dir("report");
        let files = PlotFiles {
            svg: dir.join("plots").join("curves.svg"),
            png: dir.join("plots").join("curves.png"),
        };
        let mut report = Report::new(&*dir, "PPO on CartPole");
        report
            .paragraph("Median over 5 seeds.")
            .heading("Results")
            .table(
                &["agent", "return", "ε"],
                vec![
                    vec!["PPO".into(), 487.54.into(), "∞".into()],
                    vec!["PPO | PRS".into(), 301.0.into(), 1.0.into()],
                    vec!["short".into()],
                ],
            )
            .plot("Learning curves", &files)
            .reproduce(["cargo xtask ppo --seeds 0..5", "cargo xtask merge ppo"]);
        let path = report.write().unwrap();
        assert_eq!(path, dir.join(REPORT_FILE));
        let markdown = std::fs::read_to_string(&path).unwrap();
        let expected = "# PPO on CartPole

Median over 5 seeds.

## Results

| agent | return | ε |
| --- | ---: | --- |
| PPO | 487.5 | ∞ |
| PPO \\| PRS | 301 | 1 |
| short |  |  |

![Learning curves](plots/curves.png)

*Learning curves* ([SVG](plots/curves.svg))

## How to reproduce

```sh
cargo xtask ppo --seeds 0..5
cargo xtask merge ppo
```
";
        assert_eq!(markdown, expected);
    }

    #[test]
    fn links_outside_the_report_dir_stay_as_given() {
        let report = Report::new("runs/suite", "t");
        assert_eq!(report.link(Path::new("runs/suite/a b.png")), "<a b.png>");
        assert_eq!(report.link(Path::new("elsewhere/x.png")), "elsewhere/x.png");
    }
}
