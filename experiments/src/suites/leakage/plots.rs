//! The plots: per defence family, the utility another suite measured and the reconstruction
//! quality of both attacks against ε.

use std::path::Path;

use anyhow::Result;

use super::cell::{cells_of, CellResult, CellScores};
use super::utility::UtilityTable;
use crate::report::plot::{DualAxisChart, Line, LineChart};
use crate::suites::inversion::Method;

/// One defence family: ε on a log x axis; left, the utility the other suite measured; right,
/// depth SSIM and bbox IoU of both attacks. Without utility data, a plain chart of the right
/// axis' series. `None` if the family has no finite ε.
pub(super) fn family_plot(
    dir: &Path,
    family: &str,
    methods: &[Method],
    cells: &[CellResult],
    utility: &UtilityTable,
    x_label: &str,
) -> Result<Option<crate::report::plot::PlotFiles>> {
    let mut leakage = Vec::new();
    let mut utility_lines = Vec::new();
    for &method in methods {
        let mut of_family = cells_of(cells, method, family);
        of_family.retain(|c| c.epsilon.is_finite());
        if of_family.is_empty() {
            continue;
        }
        let series = |f: &dyn Fn(&CellScores) -> f64| -> Vec<(f64, f64)> {
            of_family
                .iter()
                .map(|c| (c.epsilon, f(&c.scores)))
                .filter(|p| p.1.is_finite())
                .collect()
        };
        for (what, points) in [
            ("depth SSIM", series(&|s| s.depth_ssim)),
            ("RGB SSIM", series(&|s| s.rgb_ssim)),
            ("bbox IoU", series(&|s| s.iou)),
        ] {
            if !points.is_empty() {
                leakage.push(Line::new(format!("{} {what}", method.name()), points));
            }
        }
        let util: Vec<(f64, f64)> = of_family
            .iter()
            .filter_map(|c| {
                utility
                    .get(method, &c.defence)
                    .map(|u| (c.epsilon, u.value))
            })
            .collect();
        // PGC's utility is the same for both attacks: draw it once.
        let drawn_already = family != "dp-sgd" && method != methods[0];
        if !util.is_empty() && !drawn_already {
            let name = match family {
                "dp-sgd" => format!("return ({} training)", method.victim_algorithm()),
                _ => "PGC-A3C success ratio".to_owned(),
            };
            utility_lines.push(Line::new(name, util));
        }
    }
    if leakage.is_empty() {
        return Ok(None);
    }
    let (title, stem) = match methods {
        [only] => (
            format!("{family}, {}: privacy, utility and leakage", only.name()),
            dir.join(format!("leakage-{family}-{}", only.slug())),
        ),
        _ => (
            format!("{family}: privacy, utility and leakage"),
            dir.join(format!("leakage-{family}")),
        ),
    };
    let files = if utility_lines.is_empty() {
        let mut chart = LineChart::new(title)
            .x_label(x_label)
            .y_label("SSIM / IoU")
            .log_x();
        for line in leakage {
            chart = chart.line(line);
        }
        chart.save(&stem)?
    } else {
        let y_label = match family {
            "dp-sgd" => "mean training return",
            _ => "success ratio",
        };
        let mut chart = DualAxisChart::new(title)
            .x_label(x_label)
            .y_label(y_label)
            .y2_label("reconstruction SSIM / IoU");
        for line in utility_lines {
            chart = chart.line(line);
        }
        for line in leakage {
            chart = chart.secondary_line(line);
        }
        chart.save(&stem)?
    };
    Ok(Some(files))
}

impl Method {
    /// The learner whose gradient the attack inverts.
    fn victim_algorithm(self) -> &'static str {
        match self {
            Method::Rgi => "REINFORCE",
            _ => "DQN",
        }
    }
}
