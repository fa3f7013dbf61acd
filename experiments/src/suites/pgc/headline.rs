//! The suite's headline: the learner succeeds without noise, and privacy costs success.

use privrl_privacy::{Epsilon, MechanismKind};

use super::plan::Plan;
use super::trial::TrialSummary;
use crate::summary::Headline;

/// The paper's headline (Tables 1–2): the learner succeeds without noise, and privacy costs
/// success. A mechanism *learns* when at least half its trials at ε = ∞ reach the success
/// criterion (eq. 26). Judged on the private mechanisms that ran at ε = ∞ and at a finite ε:
/// at least one learns, and every one that learns succeeds in a smaller share of its trials
/// at the smallest ε. One that does not learn cannot show the effect and is reported as such
/// (at the paper's setting none learns: docs/pgc.md). A failed trial counts as unsuccessful.
pub(super) fn headline(plan: &Plan, results: &[(TrialSummary, Vec<(f64, f64)>)]) -> Headline {
    let ratio = |mech: MechanismKind, epsilon: Epsilon| {
        let trials: Vec<&TrialSummary> = results
            .iter()
            .map(|(s, _)| s)
            .filter(|s| s.mechanism == mech && s.epsilon == epsilon && !s.fig2)
            .collect();
        let successes = trials.iter().filter(|s| s.first_success.is_some()).count();
        (successes, trials.len())
    };
    let smallest = plan
        .epsilons
        .iter()
        .filter_map(|e| e.get())
        .min_by(f64::total_cmp)
        .and_then(|e| Epsilon::finite(e).ok());
    let mut measured = Vec::new();
    let (mut learners, mut visible) = (0, true);
    for &mech in plan
        .mechanisms
        .iter()
        .filter(|&&m| m != MechanismKind::None)
    {
        let Some(smallest) = smallest else { break };
        let (free, free_n) = ratio(mech, Epsilon::INFINITE);
        let (noisy, noisy_n) = ratio(mech, smallest);
        if free_n == 0 || noisy_n == 0 {
            continue;
        }
        let learns = 2 * free >= free_n;
        let line = format!(
            "{}: {free}/{free_n} trials succeed at ε = ∞, {noisy}/{noisy_n} at ε = {smallest}",
            mech.label()
        );
        if learns {
            learners += 1;
            // noisy/noisy_n < free/free_n, in integers.
            visible &= noisy * free_n < free * noisy_n;
            measured.push(line);
        } else {
            measured.push(format!("{line} (does not learn at ε = ∞: not judged)"));
        }
    }
    Headline {
        effect: "without noise the learner succeeds, and privacy costs success: at least one \
                 mechanism learns at ε = ∞ (half its trials succeed), and each that does \
                 succeeds in a smaller share of its trials at the smallest ε."
            .into(),
        measured: if measured.is_empty() {
            "no mechanism ran at both ε = ∞ and a finite ε".into()
        } else {
            measured.join("; ")
        },
        visible: visible && learners > 0,
    }
}
