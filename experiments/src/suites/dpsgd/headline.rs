//! The suite's headline: DP-SGD buys a finite ε at a cost in reward, judged on DP-SGD
//! REINFORCE.

use super::mean;
use super::plan::Method;
use super::point::Point;
use crate::report::format_number;
use crate::summary::Headline;

/// The average reward of a uniformly random policy on CartPole-v1 (about 22): a run learns
/// when its average reward is at least twice this.
const RANDOM_POLICY_RETURN: f64 = 22.0;

/// The slides' headline: DP-SGD buys a finite ε at a cost in reward. Judged on DP-SGD
/// REINFORCE, the method that learns within the quick budget: at its smallest σ it learns
/// (average reward at least twice a random policy's), and at its largest σ it spends a finite
/// ε and earns a lower average reward (means over seeds). DP-SGD DQN is reported beside it
/// but not judged: at these step budgets it does not learn even without noise, so a drop in
/// its reward would be noise.
pub(super) fn headline(points: &[Point]) -> Headline {
    let extremes = |method: Method| {
        let of_method: Vec<&Point> = points.iter().filter(|p| p.method == method).collect();
        let lowest = of_method
            .iter()
            .min_by(|a, b| a.noise.total_cmp(&b.noise))?;
        let highest = of_method
            .iter()
            .max_by(|a, b| a.noise.total_cmp(&b.noise))?;
        (lowest.noise < highest.noise).then_some((*lowest, *highest))
    };
    let describe = |method: Method, (lowest, highest): (&Point, &Point)| {
        format!(
            "{}: average reward {} at σ = {} (ε = {}) against {} at σ = {}",
            method.name(),
            format_number(mean(&highest.mean_returns())),
            format_number(highest.noise),
            highest.epsilon_with_unit(),
            format_number(mean(&lowest.mean_returns())),
            format_number(lowest.noise)
        )
    };
    let judged = extremes(Method::DpSgdReinforce);
    let visible = judged.is_some_and(|(lowest, highest)| {
        let (low, high) = (mean(&lowest.mean_returns()), mean(&highest.mean_returns()));
        low >= 2.0 * RANDOM_POLICY_RETURN && high < low && highest.epsilon().is_finite()
    });
    let mut measured = vec![judged.map_or_else(
        || "DP-SGD REINFORCE did not run at two noise levels".to_string(),
        |p| describe(Method::DpSgdReinforce, p),
    )];
    if let Some(p) = extremes(Method::DpSgdDqn) {
        measured.push(format!("not judged: {}", describe(Method::DpSgdDqn, p)));
    }
    Headline {
        effect: format!(
            "DP-SGD buys a finite ε at a cost in reward: DP-SGD REINFORCE learns at the smallest \
             σ (average reward ≥ {}, twice a random policy's) and earns less at the largest σ, \
             which spends a finite ε.",
            2.0 * RANDOM_POLICY_RETURN
        ),
        measured: measured.join("; "),
        visible,
    }
}
