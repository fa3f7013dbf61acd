//! The settings of Fig. 2: one curve each, a network size and, for students, how they are
//! kickstarted.

use serde::{Deserialize, Serialize};

use super::plan::KickstartPlan;

/// How a student is kickstarted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct Kick {
    /// Dirichlet mechanism on (else the exact teacher policy).
    pub(super) mechanism: bool,
    /// Vanishing coefficient of k.
    pub(super) vanishing: f64,
    /// λ of eq. 15.
    pub(super) lambda: f64,
}

/// One curve of Fig. 2: a network size and, for students, how they are kickstarted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Setting {
    /// Run-name prefix, e.g. `aware-c0.3-l0.5`.
    pub(super) name: String,
    /// Legend label.
    pub(super) label: String,
    /// Panels of Fig. 2 it appears in (`a`, `b`, `c`, `d`, `sweep-c`, `sweep-l`).
    pub(super) panels: Vec<String>,
    /// Hidden widths.
    pub(super) hidden: Vec<usize>,
    /// Kickstarting, if any.
    pub(super) kick: Option<Kick>,
}

pub(super) fn settings(plan: &KickstartPlan) -> Vec<Setting> {
    let panels = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out = vec![
        Setting {
            name: "ppo-64".into(),
            label: "PPO (64, 64), no kickstarting".into(),
            panels: panels(&["a", "b", "c", "d"]),
            hidden: plan.teacher_hidden.clone(),
            kick: None,
        },
        Setting {
            name: "ppo-32".into(),
            label: "PPO (32, 32), no kickstarting".into(),
            panels: panels(&["a", "b", "c", "d"]),
            hidden: plan.student_hidden.clone(),
            kick: None,
        },
        Setting {
            name: "kickstart".into(),
            label: "kickstarting, no privacy (λ = 0)".into(),
            panels: panels(&["b"]),
            hidden: plan.student_hidden.clone(),
            kick: Some(Kick {
                mechanism: false,
                vanishing: 1.0,
                lambda: 0.0,
            }),
        },
    ];
    let aware = |c: f64, lambda: f64, panels: Vec<String>| Setting {
        name: format!("aware-c{c}-l{lambda}"),
        label: format!("privacy-aware, c = {c}, λ = {lambda}"),
        panels,
        hidden: plan.student_hidden.clone(),
        kick: Some(Kick {
            mechanism: true,
            vanishing: c,
            lambda,
        }),
    };
    for c in [0.1, 0.3] {
        out.push(aware(c, plan.lambda, panels(&["c"])));
    }
    for c in [0.3, 0.9] {
        out.push(Setting {
            name: format!("unaware-c{c}"),
            label: format!("privacy-unaware, c = {c}, λ = 0"),
            panels: panels(&["d"]),
            hidden: plan.student_hidden.clone(),
            kick: Some(Kick {
                mechanism: true,
                vanishing: c,
                lambda: 0.0,
            }),
        });
    }
    if plan.sweep {
        for i in 1..=9 {
            let c = f64::from(i) / 10.0;
            match out
                .iter_mut()
                .find(|s| s.name == format!("aware-c{c}-l{}", plan.lambda))
            {
                Some(s) => s.panels.push("sweep-c".into()),
                None => out.push(aware(c, plan.lambda, panels(&["sweep-c"]))),
            }
        }
        for lambda in [0.1, 0.5, 1.0, 2.0] {
            match out
                .iter_mut()
                .find(|s| s.name == format!("aware-c0.3-l{lambda}"))
            {
                Some(s) => s.panels.push("sweep-l".into()),
                None => out.push(aware(0.3, lambda, panels(&["sweep-l"]))),
            }
        }
    }
    out
}
