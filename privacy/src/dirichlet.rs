//! The Dirichlet mechanism (paper 000, eq. 5): release a policy π ∈ Δ_{m,η} as one draw of
//! Dir(kπ), and the maps that put any probability vector into Δ_{m,η}.
//!
//! Its (ε, δ) comes from Theorem 1, in `dirichlet_accounting`, for the real-valued mechanism.
//! The draws are f64 (Gamma variates in log space, `randomness::LogGammaSampler`), in secure
//! mode too; the outputs that the f64 sampler reaches from one policy and not from another are
//! estimated by [`crate::DirichletPrivacy::floating_point_gap`] (outside Δ_{m,τ}, inside δ, at
//! privrl's parameters; docs/kickstarting.md, "Floating point").

use rand::Rng;

use crate::dirichlet_accounting::{DeltaEstimate, DirichletPrivacy};
use crate::error::{all_finite, open_unit};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::randomness::{normalize_log_weights, LogGammaSampler};
use crate::PrivacyError;

/// Accepted |Σπ − 1| for a policy, and accepted relative shortfall of its smallest entry below η.
///
/// Policies usually come out of an f32 softmax, whose sum is off by ~1e-7 · m; 1e-5 accepts those
/// and still rejects a vector that is not a distribution.
pub(crate) const SIMPLEX_TOLERANCE: f64 = 1e-5;

/// Checks `p` ∈ Δ_{m,η} (paper 000, eq. 1): length m, finite, Σ p_i = 1 and p_i ≥ η, up to
/// 1e-5 (on the sum, and relative to η on the entries).
pub fn check_restricted_simplex(
    name: &'static str,
    p: &[f64],
    actions: usize,
    eta: f64,
) -> Result<(), PrivacyError> {
    if p.is_empty() {
        return Err(PrivacyError::Empty { name });
    }
    if p.len() != actions {
        return Err(PrivacyError::DimensionMismatch {
            name,
            expected: actions,
            found: p.len(),
        });
    }
    all_finite(name, p)?;
    let sum: f64 = p.iter().sum();
    let min = p.iter().copied().fold(f64::INFINITY, f64::min);
    let min_ok = min >= eta * (1.0 - SIMPLEX_TOLERANCE) && min >= 0.0;
    if (sum - 1.0).abs() > SIMPLEX_TOLERANCE || !min_ok {
        return Err(PrivacyError::NotOnSimplex {
            name,
            sum,
            min,
            eta,
            tolerance: SIMPLEX_TOLERANCE,
        });
    }
    Ok(())
}

/// How [`restrict_to_simplex`] maps a vector into Δ_{m,η}.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SimplexMap {
    /// π' = (1 − mη) p + η·1: mix the probability vector with the uniform one.
    ///
    /// Smooth and (1 − mη)-Lipschitz in ‖·‖₂, so a network f that is L-Lipschitz gives a policy
    /// map that is (1 − mη)·L-Lipschitz: Theorem 1 may use that smaller constant. It moves every
    /// input, also those already in Δ_{m,η}. Needs a probability vector.
    MixWithUniform,
    /// The Euclidean projection onto Δ_{m,η}: π' = η + Π_{(1−mη)Δ_m}(p − η), by the sort-based
    /// algorithm of Duchi, Shalev-Shwartz, Singer & Chandra (ICML 2008).
    ///
    /// 1-Lipschitz (projection onto a convex set), leaves points of Δ_{m,η} where they are, and
    /// accepts any finite real vector.
    EuclideanProjection,
}

/// Maps `p` into Δ_{m,η} with `map` (m = `p.len()`, η ∈ (0, 1/m)).
pub fn restrict_to_simplex(p: &[f64], eta: f64, map: SimplexMap) -> Result<Vec<f64>, PrivacyError> {
    let m = p.len();
    if m == 0 {
        return Err(PrivacyError::Empty { name: "policy" });
    }
    all_finite("policy", p)?;
    if !(eta > 0.0 && eta * m as f64 <= 1.0 - f64::EPSILON) {
        return Err(PrivacyError::OutOfRange {
            name: "eta",
            value: eta,
            expected: "in (0, 1/m)",
        });
    }
    let mass = 1.0 - m as f64 * eta;
    match map {
        SimplexMap::MixWithUniform => {
            check_restricted_simplex("policy", p, m, 0.0)?;
            let sum: f64 = p.iter().sum();
            Ok(p.iter().map(|&x| mass * x / sum + eta).collect())
        }
        SimplexMap::EuclideanProjection => {
            // Project v = p − η onto {w ≥ 0, Σw = mass}.
            let mut sorted: Vec<f64> = p.iter().map(|&x| x - eta).collect();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let mut cumulative = 0.0;
            let mut theta = 0.0;
            for (j, &u) in sorted.iter().enumerate() {
                cumulative += u;
                let candidate = (cumulative - mass) / (j + 1) as f64;
                if u - candidate > 0.0 {
                    theta = candidate;
                }
            }
            Ok(p.iter()
                .map(|&x| (x - eta - theta).max(0.0) + eta)
                .collect())
        }
    }
}

/// One draw of Dirichlet(α) into `out`, for any α with α_i > 0 (validated).
///
/// Gamma variates are drawn in log space (Marsaglia–Tsang, with the shape boost taken in logs),
/// so tiny shapes (kπ_i ≪ 1) still give a point of the simplex, never NaN. When every shape is
/// so small that even the logs overflow, the draw is the shapes' vanishing limit: a vertex of
/// the simplex.
pub fn sample_dirichlet(
    alpha: &[f64],
    rng: &mut impl Rng,
    out: &mut [f64],
) -> Result<(), PrivacyError> {
    if alpha.is_empty() {
        return Err(PrivacyError::Empty { name: "alpha" });
    }
    if out.len() != alpha.len() {
        return Err(PrivacyError::DimensionMismatch {
            name: "out",
            expected: alpha.len(),
            found: out.len(),
        });
    }
    if let Some(&a) = alpha
        .iter()
        .find(|&&a| !(a.is_finite() && a >= f64::MIN_POSITIVE))
    {
        return Err(PrivacyError::OutOfRange {
            name: "alpha",
            value: a,
            expected: ">= 2.2e-308 (a normal f64) and finite",
        });
    }
    let samplers: Vec<LogGammaSampler> = alpha.iter().map(|&a| LogGammaSampler::new(a)).collect();
    draw_dirichlet(&samplers, rng, out);
    Ok(())
}

/// The unchecked core of [`sample_dirichlet`], reused by the mechanism.
pub(crate) fn draw_dirichlet(samplers: &[LogGammaSampler], rng: &mut impl Rng, out: &mut [f64]) {
    let m = samplers.len();
    let mut log_g = vec![0.0; m];
    let mut magnitude = vec![0.0; m];
    for ((l, mag), s) in log_g.iter_mut().zip(magnitude.iter_mut()).zip(samplers) {
        (*l, *mag) = s.sample_with_magnitude(rng);
    }
    let max = log_g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max.is_finite() {
        normalize_log_weights(&log_g, max, out);
    } else {
        // Every ln G_i = ln G'_i + ln(U_i)/α_i overflowed to −∞; the largest G_i is the one with
        // the smallest |ln U_i|/α_i, and it carries all the mass up to e^{−10^308}.
        let winner = (0..m)
            .min_by(|&a, &b| magnitude[a].total_cmp(&magnitude[b]))
            .unwrap_or(0);
        out.fill(0.0);
        out[winner] = 1.0;
    }
}

/// Draws Dir(kπ) for policies π ∈ Δ_{m,η} (paper 000, eq. 5), without privacy accounting.
///
/// This is the sampler inside [`DirichletMechanism`]; use it directly where the (ε, δ) of
/// Theorem 1 is vacuous (δ ≈ 1 for small k) but the perturbation is still wanted, as in the
/// paper's vanishing-k experiments, and account for the releases yourself.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DirichletSampler {
    actions: usize,
    concentration: f64,
    eta: f64,
}

impl DirichletSampler {
    /// m ≥ 2 actions, concentration k ≥ 0 (finite), η ∈ [0, 1/m).
    ///
    /// k = 0 draws a uniformly random policy, Dir(1, …, 1), whatever π is (paper 000, remark at
    /// the end of Section 4). Dir(kπ) itself has no such limit: as k → 0 it puts its mass on the
    /// vertices with probabilities π, which reveals π.
    pub fn new(actions: usize, concentration: f64, eta: f64) -> Result<Self, PrivacyError> {
        if actions < 2 {
            return Err(PrivacyError::OutOfRange {
                name: "actions",
                value: actions as f64,
                expected: ">= 2",
            });
        }
        crate::error::non_negative("concentration", concentration)?;
        if !(eta >= 0.0 && eta * (actions as f64) < 1.0) {
            return Err(PrivacyError::OutOfRange {
                name: "eta",
                value: eta,
                expected: "in [0, 1/m)",
            });
        }
        Ok(Self {
            actions,
            concentration,
            eta,
        })
    }

    /// The concentration k.
    pub fn concentration(&self) -> f64 {
        self.concentration
    }

    /// The number of actions m.
    pub fn actions(&self) -> usize {
        self.actions
    }

    /// One draw of Dir(kπ) (or of Dir(1, …, 1) for k = 0) into `out` (length m), for
    /// `policy` ∈ Δ_{m,η}. Shapes kπ_i that vanish or underflow give x_i = 0, never NaN.
    pub fn sample_into(
        &self,
        policy: &[f64],
        rng: &mut impl Rng,
        out: &mut [f64],
    ) -> Result<(), PrivacyError> {
        check_restricted_simplex("policy", policy, self.actions, self.eta)?;
        if out.len() != self.actions {
            return Err(PrivacyError::DimensionMismatch {
                name: "out",
                expected: self.actions,
                found: out.len(),
            });
        }
        let samplers: Vec<LogGammaSampler> = if self.concentration == 0.0 {
            vec![LogGammaSampler::new(1.0); self.actions]
        } else {
            // Renormalise the tolerated rounding of Σπ so that E[output] = π exactly.
            let scale = self.concentration / policy.iter().sum::<f64>();
            policy
                .iter()
                .map(|&p| LogGammaSampler::new(scale * p))
                .collect()
        };
        draw_dirichlet(&samplers, rng, out);
        Ok(())
    }

    /// One draw as a new vector.
    pub fn sample(&self, policy: &[f64], rng: &mut impl Rng) -> Result<Vec<f64>, PrivacyError> {
        let mut out = vec![0.0; self.actions];
        self.sample_into(policy, rng, &mut out)?;
        Ok(out)
    }
}

// The accounting (Theorem 1) knows nothing of the mechanism; the mechanism is built from it
// here, so the two modules depend one way.
impl DirichletPrivacy {
    /// The mechanism with cost (ε, δ̂ + half-width): δ is accounted at its upper confidence
    /// bound. `delta` must have been computed for these parameters
    /// ([`PrivacyError::Inconsistent`] otherwise), and its upper bound must be below 1.
    pub fn mechanism(&self, delta: &DeltaEstimate) -> Result<DirichletMechanism, PrivacyError> {
        if delta.config != self.config() {
            return Err(PrivacyError::Inconsistent(
                "the delta estimate was computed for other parameters",
            ));
        }
        DirichletMechanism::from_accounting(self, delta)
    }
}

/// The Dirichlet mechanism Dir_k of paper 000, eq. 5, with the (ε, δ) of Theorem 1.
///
/// Built by [`DirichletPrivacy::mechanism`] (which refuses a vacuous δ) or
/// [`DirichletMechanism::uniform`] (k = 0).
#[derive(Debug, Clone, PartialEq)]
pub struct DirichletMechanism {
    sampler: DirichletSampler,
    cost: PrivacyCost,
    parameters: Vec<(String, f64)>,
}

impl DirichletMechanism {
    /// k = 0: the teacher shares a uniformly random policy, independent of π: (0, 0)-DP
    /// (paper 000, remark at the end of Section 4).
    pub fn uniform(actions: usize, eta: f64) -> Result<Self, PrivacyError> {
        Ok(Self {
            sampler: DirichletSampler::new(actions, 0.0, eta)?,
            cost: PrivacyCost::FREE,
            parameters: vec![
                ("actions".into(), actions as f64),
                ("concentration".into(), 0.0),
            ],
        })
    }

    pub(crate) fn from_accounting(
        privacy: &DirichletPrivacy,
        delta: &DeltaEstimate,
    ) -> Result<Self, PrivacyError> {
        let p = privacy.config();
        if p.concentration == 0.0 {
            return Self::uniform(p.actions, p.eta);
        }
        let delta_upper = delta.upper();
        if delta_upper >= 1.0 {
            return Err(PrivacyError::OutOfRange {
                name: "delta",
                value: delta_upper,
                expected:
                    "< 1 (the upper confidence bound of delta is vacuous: raise k or lower tau, \
                           or use DirichletSampler without a guarantee)",
            });
        }
        Ok(Self {
            sampler: DirichletSampler::new(p.actions, p.concentration, p.eta)?,
            cost: PrivacyCost {
                epsilon: privacy.epsilon(),
                delta: delta_upper,
            },
            parameters: vec![
                ("actions".into(), p.actions as f64),
                ("concentration".into(), p.concentration),
                ("eta".into(), p.eta),
                ("tau".into(), p.tau),
                ("lipschitz".into(), p.lipschitz),
                ("adjacency".into(), p.adjacency),
                ("delta_estimate".into(), delta.delta),
                ("delta_margin".into(), delta.margin),
                ("delta_confidence".into(), delta.confidence),
                ("delta_samples".into(), delta.samples as f64),
            ],
        })
    }

    /// The sampler (k, m, η).
    pub fn sampler(&self) -> &DirichletSampler {
        &self.sampler
    }

    /// Releases `policy` ∈ Δ_{m,η} into `out` (length m).
    pub fn release_into(
        &self,
        policy: &[f64],
        rng: &mut impl Rng,
        out: &mut [f64],
    ) -> Result<(), PrivacyError> {
        self.sampler.sample_into(policy, rng, out)
    }
}

impl Mechanism for DirichletMechanism {
    type Input = [f64];
    type Output = Vec<f64>;

    fn name(&self) -> &'static str {
        "dirichlet"
    }

    fn parameters(&self) -> Vec<(String, f64)> {
        self.parameters.clone()
    }

    fn cost(&self) -> PrivacyCost {
        self.cost
    }

    fn release(&self, policy: &[f64], rng: &mut impl Rng) -> Result<Vec<f64>, PrivacyError> {
        self.sampler.sample(policy, rng)
    }
}

/// The radius of Lemma 1 (paper 000, eq. 14): √(log(1/β) / (2(k + 1))), for k > 0, β ∈ (0, 1).
///
/// **Caveat.** Eq. 14 states P(‖Dir_k(π) − π‖₂ ≥ radius) ≤ β. That is false in general: for
/// π = (0.05, 0.05, 0.1, 0.3, 0.5), k = 10, β = 0.05 the probability is ≈ 0.086 (numpy and this
/// crate's sampler agree; see the test `lemma1_two_norm_claim_fails_but_directional_bound_holds`).
/// The radius is exactly the tail of a *one-dimensional* projection: Dir_k(π) is sub-Gaussian
/// with variance proxy 1/(4(k + 1)) (Marchal & Arbel 2017), so for every fixed unit vector u,
/// P(⟨u, Dir_k(π) − π⟩ ≥ radius) ≤ exp(−2(k + 1)·radius²) = β. This function returns the
/// paper's radius, which eq. 15 uses as the student's ball (scaled by the hyper-parameter λ);
/// where a 2-norm guarantee is needed use [`certified_l2_radius`].
pub fn concentration_radius(concentration: f64, beta: f64) -> Result<f64, PrivacyError> {
    let k = crate::error::positive("concentration", concentration)?;
    let beta = open_unit("beta", beta)?;
    Ok((-beta.ln() / (2.0 * (k + 1.0))).sqrt())
}

/// A radius r with P(‖Dir_k(π) − π‖₂ ≥ r) ≤ β for every π ∈ Δ_m: r = √((1 − 1/m)/(β(k + 1))).
///
/// Markov's inequality on ‖x − π‖₂², whose mean is Σ_i π_i(1 − π_i)/(k + 1) = (1 − ‖π‖²)/(k + 1)
/// ≤ (1 − 1/m)/(k + 1). Valid but loose (about 3.6× eq. 14's radius at β = 0.05).
pub fn certified_l2_radius(
    actions: usize,
    concentration: f64,
    beta: f64,
) -> Result<f64, PrivacyError> {
    if actions < 2 {
        return Err(PrivacyError::OutOfRange {
            name: "actions",
            value: actions as f64,
            expected: ">= 2",
        });
    }
    let k = crate::error::non_negative("concentration", concentration)?;
    let beta = open_unit("beta", beta)?;
    let r = ((1.0 - 1.0 / actions as f64) / (beta * (k + 1.0))).sqrt();
    if r.is_finite() {
        Ok(r)
    } else {
        Err(PrivacyError::OutOfRange {
            name: "beta",
            value: beta,
            expected: "in (0, 1), large enough for a finite radius",
        })
    }
}

/// α_λ = λ · √(log(1/β) / (2(k + 1))) (paper 000, eq. 15): the radius of the ball around the
/// teacher's released policy inside which the privacy-aware student is not penalised (eq. 16).
/// λ ≥ 0 shrinks (λ < 1) or grows the ball of [`concentration_radius`] (see its caveat).
pub fn penalty_radius(lambda: f64, concentration: f64, beta: f64) -> Result<f64, PrivacyError> {
    let lambda = crate::error::non_negative("lambda", lambda)?;
    let r = lambda * concentration_radius(concentration, beta)?;
    if r.is_finite() {
        Ok(r)
    } else {
        Err(PrivacyError::OutOfRange {
            name: "lambda",
            value: lambda,
            expected: ">= 0, small enough for a finite radius",
        })
    }
}
