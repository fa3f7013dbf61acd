//! The Dirichlet mechanism (paper 000, eq. 5): release a policy π ∈ Δ_{m,η} as one draw of
//! Dir(kπ), and the maps that put any probability vector into Δ_{m,η}.
//!
//! Its (ε, δ) comes from Theorem 1, in `dirichlet_accounting`, for the real-valued mechanism.
//! The draws are f64 (Gamma variates in log space, `randomness::LogGammaSampler`), in secure
//! mode too; the outputs that the f64 sampler reaches from one policy and not from another are
//! estimated by [`crate::DirichletPrivacy::floating_point_gap`] (outside Δ_{m,τ}, inside δ, at
//! privrl's parameters; docs/kickstarting.md, "Floating point"). For two actions,
//! [`GridDirichletMechanism`] is a floating-point-safe variant on a grid of Δ_{2,τ}, pure ε-DP
//! by its own accounting.

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

/// The Dirichlet mechanism's floating-point-safe variant for two actions (secure mode): the
/// teacher's policy p = π₁ released as one point y_j = j/n of a grid inside [τ, 1 − τ], with
/// probability P_π(j) ∝ w_π(j) = y_j^{a−1}(1 − y_j)^{b−1}, a = kp, b = k − a: the
/// Dir(kπ) = Beta(a, b) density at the grid points, truncated to Δ_{2,τ} and normalised over
/// them. Built by [`DirichletPrivacy::grid_mechanism`].
///
/// **Accounting** (its own, not Theorem 1's): for neighbours with |p − p′| ≤ Δ, w_π(j) =
/// w_π′(j)·e^{(a−a′)·logit(y_j)}, so ln P_π(j) − ln P_π′(j) = (a − a′)·logit(y_j) − ln E_{P_π′}
/// [e^{(a−a′)·logit(Y)}], at most 2|a − a′|·G in absolute value, G = max_j |logit(y_j)| ≤
/// ln((1 − τ)/τ): pure DP with ε = 2kΔG and δ = 0 (the support is Δ_{2,τ} itself, so there is
/// no tail event). Δ = min(L·b/√2, 1 − 2η): two policies of Δ_{2,η} at L2 distance L·b differ
/// by L·b/√2 in their first coordinate, and by at most 1 − 2η.
///
/// **Floating point.** ln y_j and ln(1 − y_j) are computed once (`libm`, within one unit in the
/// last place), the log-weights (a − 1)·ln y_j + (b − 1)·ln(1 − y_j) and their exponentials
/// per release in f64, and the weights quantised to 128-bit integers, from which j is drawn by
/// an exact uniform integer and a comparison: every grid point is reachable from every policy,
/// and each implemented probability is within a factor e^{±2μ} of the exact P_π(j), with μ an
/// explicit bound on the accumulated rounding (dominated by the quantisation of the smallest
/// weight: 4μ = 1.6·10⁻¹¹ at k = 5, η = 0.2, τ = 0.0127, n = 1000), so the printed ε is 2kΔG + 4μ
/// ([`GridDirichletMechanism::rounding_slack`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GridDirichletMechanism {
    concentration: f64,
    eta: f64,
    /// The grid's denominator n.
    grid: u32,
    /// The first released coordinates y_j = j/n, j/n ∈ [τ, 1 − τ].
    points: Vec<f64>,
    ln_y: Vec<f64>,
    ln_one_minus_y: Vec<f64>,
    /// The quantisation's fixed-point scale: weights × 2^scale_bits fit a u128 sum.
    scale_bits: i32,
    /// μ: a bound on |ln(implemented weight) − ln(exact weight)| for every policy and point.
    slack: f64,
    cost: PrivacyCost,
    parameters: Vec<(String, f64)>,
}

impl DirichletPrivacy {
    /// The floating-point-safe grid variant of the mechanism for two actions, on the grid
    /// {j/n} ∩ [τ, 1 − τ] with n = `grid` ≥ 2 ([`GridDirichletMechanism`]): pure ε-DP by its own
    /// accounting, with Theorem 1's k, η, τ, L and b. Refuses m ≠ 2, k = 0, a grid with no point
    /// in [τ, 1 − τ], and a k so large that the weights span more than e^{−69} (the quantisation's
    /// relative error would pass 2⁻¹³).
    pub fn grid_mechanism(&self, grid: u32) -> Result<GridDirichletMechanism, PrivacyError> {
        let c = self.config();
        if c.actions != 2 {
            return Err(PrivacyError::OutOfRange {
                name: "actions",
                value: c.actions as f64,
                expected: "2 for the grid mechanism",
            });
        }
        let k = crate::error::positive("concentration", c.concentration)?;
        if grid < 2 {
            return Err(PrivacyError::OutOfRange {
                name: "grid",
                value: f64::from(grid),
                expected: ">= 2",
            });
        }
        let n = f64::from(grid);
        let numerators: Vec<u32> = (1..grid)
            .filter(|&j| {
                let y = f64::from(j) / n;
                y >= c.tau && y <= 1.0 - c.tau
            })
            .collect();
        if numerators.is_empty() {
            return Err(PrivacyError::OutOfRange {
                name: "grid",
                value: n,
                expected: "fine enough to have a point j/n in [tau, 1 - tau]",
            });
        }
        let points: Vec<f64> = numerators.iter().map(|&j| f64::from(j) / n).collect();
        let ln_y: Vec<f64> = numerators
            .iter()
            .map(|&j| libm::log(f64::from(j) / n))
            .collect();
        let ln_one_minus_y: Vec<f64> = numerators
            .iter()
            .map(|&j| libm::log(f64::from(grid - j) / n))
            .collect();
        // G = max |logit(y_j)|, widened for the rounding of the logarithms.
        let logit = ln_y
            .iter()
            .zip(&ln_one_minus_y)
            .map(|(&l, &m)| (l - m).abs())
            .fold(0.0, f64::max)
            * (1.0 + 1e-12)
            + 1e-15;
        // Δ: the first coordinates of two neighbouring policies of Δ_{2,η} (the tolerated
        // rounding of the simplex check widens 1 − 2η a little).
        let eta_floor = c.eta * (1.0 - 2.0 * SIMPLEX_TOLERANCE);
        let shift =
            (c.lipschitz * c.adjacency / std::f64::consts::SQRT_2).min(1.0 - 2.0 * eta_floor);
        let log_range = ln_y
            .iter()
            .chain(&ln_one_minus_y)
            .map(|l| l.abs())
            .fold(0.0, f64::max);
        // a = k·p and b = k − a are computed: |a − a′| ≤ kΔ + 8k·2⁻⁵², and a + b misses k by at
        // most 2k·2⁻⁵², which moves the log-ratio by that times |ln(1 − y)| per weight.
        let epsilon_exact = 2.0
            * ((k * shift + 8.0 * k * f64::EPSILON) * logit + 4.0 * k * f64::EPSILON * log_range)
            * (1.0 + 1e-12);
        // μ: the shapes' |a − 1|, |b − 1| are at most A; the logarithms at most Λ in magnitude.
        let largest_shape = (k * (1.0 - eta_floor)).max(1.0);
        let shape_bound = largest_shape + 1.0;
        let log_bound = log_range + 1.0;
        // The weights' log-spread, at most (|a − 1| + |b − 1|)·(the logarithms' range).
        let spread = 2.0 * shape_bound * log_bound;
        if spread > 69.0 {
            return Err(PrivacyError::OutOfRange {
                name: "concentration",
                value: k,
                expected:
                    "small enough that the grid's weights span at most e^69 (k ln(1/tau) < ~30)",
            });
        }
        let unit = f64::EPSILON; // 2⁻⁵²
        let scale_bits = 127 - (usize::BITS - points.len().leading_zeros()) as i32 - 1;
        let slack = (
            // each logarithm within 2⁻⁵¹(|ln| + 1), times |a − 1| + 1, twice
            2.0 * shape_bound * log_bound * 2.0 * unit
            // the products' and the sum's roundings, the subtraction of the maximum
            + 4.0 * spread * unit
            // exp, one unit
            + unit
            // quantisation: 2^−scale_bits over the smallest weight, e^{−spread}
            + (spread - f64::from(scale_bits) * std::f64::consts::LN_2).exp()
        ) * 2.0;
        let epsilon = epsilon_exact + 4.0 * slack;
        Ok(GridDirichletMechanism {
            concentration: k,
            eta: c.eta,
            grid,
            points,
            ln_y,
            ln_one_minus_y,
            scale_bits,
            slack,
            cost: PrivacyCost::pure(epsilon)?,
            parameters: vec![
                ("actions".into(), 2.0),
                ("concentration".into(), k),
                ("eta".into(), c.eta),
                ("tau".into(), c.tau),
                ("lipschitz".into(), c.lipschitz),
                ("adjacency".into(), c.adjacency),
                ("grid".into(), n),
            ],
        })
    }
}

impl GridDirichletMechanism {
    /// The grid's first coordinates y_j.
    pub fn points(&self) -> &[f64] {
        &self.points
    }

    /// 4μ: what the implementation's rounding adds to the exact grid mechanism's ε.
    pub fn rounding_slack(&self) -> f64 {
        4.0 * self.slack
    }

    /// The quantised weights for `policy` (the implemented distribution is weight/Σ weights).
    fn weights(&self, policy: &[f64]) -> Result<Vec<u128>, PrivacyError> {
        check_restricted_simplex("policy", policy, 2, self.eta)?;
        let p = policy[0] / (policy[0] + policy[1]);
        let a = self.concentration * p;
        let b = self.concentration - a;
        let logs: Vec<f64> = self
            .ln_y
            .iter()
            .zip(&self.ln_one_minus_y)
            .map(|(&l, &m)| (a - 1.0) * l + (b - 1.0) * m)
            .collect();
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let scale = 2f64.powi(self.scale_bits);
        Ok(logs
            .iter()
            .map(|&l| (libm::exp(l - top) * scale) as u128)
            .collect())
    }

    /// The implemented probability of each grid point for `policy` (for tests and reports).
    pub fn probabilities(&self, policy: &[f64]) -> Result<Vec<f64>, PrivacyError> {
        let weights = self.weights(policy)?;
        let total: u128 = weights.iter().sum();
        Ok(weights.iter().map(|&w| w as f64 / total as f64).collect())
    }

    /// The grid's denominator n.
    pub fn grid(&self) -> u32 {
        self.grid
    }
}

impl Mechanism for GridDirichletMechanism {
    type Input = [f64];
    type Output = Vec<f64>;

    fn name(&self) -> &'static str {
        "dirichlet-grid"
    }

    fn parameters(&self) -> Vec<(String, f64)> {
        self.parameters.clone()
    }

    fn cost(&self) -> PrivacyCost {
        self.cost
    }

    /// One grid point (y_j, 1 − y_j), drawn by an exact uniform integer below the weights' sum.
    fn release(&self, policy: &[f64], rng: &mut impl Rng) -> Result<Vec<f64>, PrivacyError> {
        let weights = self.weights(policy)?;
        let total: u128 = weights.iter().sum();
        let mut u = rng.random_range(0..total);
        let mut chosen = weights.len() - 1;
        for (j, &w) in weights.iter().enumerate() {
            if u < w {
                chosen = j;
                break;
            }
            u -= w;
        }
        let y = self.points[chosen];
        Ok(vec![y, 1.0 - y])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DirichletConfig;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn privacy(
        concentration: f64,
        eta: f64,
        tau: f64,
        lipschitz_adjacency: f64,
    ) -> DirichletPrivacy {
        DirichletConfig {
            actions: 2,
            concentration,
            eta,
            tau,
            lipschitz: lipschitz_adjacency,
            adjacency: 1.0,
        }
        .build()
        .unwrap()
    }

    /// The grid mechanism's implemented probabilities are the truncated Beta(kp, k(1 − p))
    /// density at the grid points, normalised (to 1e-9 relatively, the quantisation of the
    /// smallest weight included), its draws match them (χ² at a fixed seed, false-alarm rate
    /// 1e-6), and its privacy loss between neighbouring policies, computed from the implemented
    /// probabilities over every grid point, stays within the printed ε and reaches at least a
    /// third of it at the extreme pair.
    #[test]
    fn the_grid_dirichlet_mechanism_is_within_its_epsilon() {
        // The kickstarting suite on CartPole: m = 2, k = 5, η = 0.4/m, τ = 0.0127, L·b = 2.67.
        let accounting = privacy(5.0, 0.2, 0.0127, 2.67);
        let mechanism = accounting.grid_mechanism(1000).unwrap();
        let cost = mechanism.cost();
        assert_eq!(cost.delta, 0.0);
        // Δ = min(2.67/√2, 1 − 2η) = 0.6 (0.6 + 8e-6 with the simplex check's tolerance on η),
        // G = ln(0.987/0.013), the logit at j = 13 of 1000: ε = 2kΔG = 25.9787.
        let g = (987.0f64 / 13.0).ln();
        let shift = 1.0 - 2.0 * 0.2 * (1.0 - 2e-5);
        assert!(
            (cost.epsilon - 2.0 * 5.0 * shift * g).abs() < 1e-6,
            "{}",
            cost.epsilon
        );
        assert!(
            mechanism.rounding_slack() < 1e-8,
            "{}",
            mechanism.rounding_slack()
        );
        let points = mechanism.points();
        assert_eq!(points.len(), 975);
        assert!(points.iter().all(|&y| (0.0127..=1.0 - 0.0127).contains(&y)));
        for p in [0.2, 0.35, 0.5, 0.8] {
            let policy = [p, 1.0 - p];
            let implemented = mechanism.probabilities(&policy).unwrap();
            let (a, b) = (5.0 * p, 5.0 * (1.0 - p));
            let density: Vec<f64> = points
                .iter()
                .map(|&y| ((a - 1.0) * y.ln() + (b - 1.0) * (1.0 - y).ln()).exp())
                .collect();
            let total: f64 = density.iter().sum();
            for (own, exact) in implemented.iter().zip(&density) {
                assert!((own / (exact / total) - 1.0).abs() < 1e-9, "p = {p}");
            }
        }
        // χ² of 100,000 releases at p = 0.35 over bins of 25 grid points.
        let policy = [0.35, 0.65];
        let implemented = mechanism.probabilities(&policy).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let n = 100_000;
        let bins = implemented.len().div_ceil(25);
        let mut counts = vec![0.0f64; bins];
        for _ in 0..n {
            let out = mechanism.release(&policy, &mut rng).unwrap();
            let j = points
                .iter()
                .position(|&y| y == out[0])
                .expect("on the grid");
            assert_eq!(out[1], 1.0 - out[0]);
            counts[j / 25] += 1.0;
        }
        let mut expected = vec![0.0f64; bins];
        for (j, &pr) in implemented.iter().enumerate() {
            expected[j / 25] += pr * n as f64;
        }
        let (mut stat, mut df) = (0.0, 0usize);
        for (o, e) in counts.iter().zip(&expected) {
            if *e >= 5.0 {
                stat += (o - e).powi(2) / e;
                df += 1;
            }
        }
        let k = (df - 1) as f64;
        let bound = k * (1.0 - 2.0 / (9.0 * k) + 4.753 * (2.0 / (9.0 * k)).sqrt()).powi(3);
        assert!(stat < bound, "χ² = {stat} on {} df", df - 1);
        // Privacy loss over every grid point, neighbouring pairs of policies (|p − p′| ≤ 0.6).
        let mut largest: f64 = 0.0;
        for (p, q) in [(0.2, 0.8), (0.8, 0.2), (0.3, 0.5), (0.5, 0.5), (0.2, 0.21)] {
            let one = mechanism.probabilities(&[p, 1.0 - p]).unwrap();
            let other = mechanism.probabilities(&[q, 1.0 - q]).unwrap();
            for (x, y) in one.iter().zip(&other) {
                let loss = (x.ln() - y.ln()).abs();
                assert!(
                    loss <= cost.epsilon,
                    "p = {p}, p′ = {q}: {loss} > {}",
                    cost.epsilon
                );
                largest = largest.max(loss);
            }
        }
        assert!(
            largest > cost.epsilon / 3.0,
            "{largest} vs {}",
            cost.epsilon
        );
        // Theorem 1 at the same parameters: a larger ε, and δ > 0.
        assert!(accounting.epsilon() > 3.0 * cost.epsilon);
        // Refused: three actions, a grid with no point in [τ, 1 − τ], a huge k.
        let three = DirichletConfig {
            actions: 3,
            concentration: 5.0,
            eta: 0.1,
            tau: 0.01,
            lipschitz: 1.0,
            adjacency: 1.0,
        }
        .build()
        .unwrap();
        assert!(three.grid_mechanism(100).is_err());
        assert!(privacy(5.0, 0.2, 0.4, 1.0).grid_mechanism(3).is_err());
        assert!(privacy(500.0, 0.2, 0.0127, 1.0)
            .grid_mechanism(1000)
            .is_err());
    }
}
