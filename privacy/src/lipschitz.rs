//! An upper bound on the Lipschitz constant (in ‖·‖₂) of an MLP policy
//! x ↦ out(W_n φ(… φ(W_1 x + b_1) …) + b_n), the L of Theorem 1 (paper 000).
//!
//! L ≤ Π_l ‖W_l‖₂ · Π (activation constants) · (output constant), because the Lipschitz
//! constant of a composition is at most the product of the constants, a linear map's is its
//! spectral norm, and biases do not matter.
//!
//! # Spectral norms that are upper bounds
//!
//! Plain power iteration returns a *lower* bound of σ_max (a Rayleigh quotient), so a product of
//! power-iteration estimates can under-state L and with it ε. Here each layer gets
//!
//! * `power_iteration`: the usual estimate (a lower bound), reported for comparison;
//! * `upper_bound`: a certified bound from the Schatten norm, σ_max ≤ ‖W‖_{S_{2p}} =
//!   tr((WᵀW)^p)^{1/(2p)}. With G the smaller Gram matrix (WᵀW or WWᵀ) squared S times with
//!   rescaling (power iteration on the whole matrix), p = 2^{S+1} and tr(G^p) = ‖G^{p/2}‖²_F.
//!   It over-states σ_max by at most rank^{1/(2p)}: with S = 8 squarings,
//!   rank^{1/1024}, i.e. < 0.7 % for rank ≤ 1000. A relative margin of 1e-9 covers f64
//!   rounding in the squarings. Cost O(S·n³) with n = min(rows, cols), fine for RL-sized layers.
//!
//! # Activation and output constants
//!
//! tanh, ReLU and the identity are 1-Lipschitz; the logistic sigmoid is 1/4-Lipschitz.
//! Softmax is **1/2**-Lipschitz in ‖·‖₂: its Jacobian J = diag(p) − ppᵀ is symmetric positive
//! semi-definite and uᵀJu = Var_{i∼p}(u_i) ≤ (max u − min u)²/4 ≤ 1/2 for a unit vector u
//! (Popoviciu's inequality and (u_i − u_j)² ≤ 2(u_i² + u_j²) ≤ 2). The value is attained as
//! p → (½, ½, 0, …), so 1/2 is tight. Gao & Pavel (2017, *On the properties of the softmax
//! function*, Prop. 4) prove the looser constant 1 (inverse temperature λ = 1).

use serde::{Deserialize, Serialize};

use crate::error::all_finite;
use crate::PrivacyError;

/// Number of Gram-matrix squarings in [`spectral_norm`].
const GRAM_SQUARINGS: u32 = 8;

/// Relative margin added to the Schatten bound for floating-point rounding.
const ROUNDING_MARGIN: f64 = 1e-9;

/// A dense row-major matrix of a linear layer, y = W x: `rows` outputs, `cols` inputs.
///
/// Burn's `Linear` stores its weight as [d_input, d_output] (y = x W); pass it through
/// [`Matrix::transposed`] (the spectral norm is the same, only the chaining check differs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// Output dimension.
    pub rows: usize,
    /// Input dimension.
    pub cols: usize,
    /// Row-major entries, length rows · cols.
    pub data: Vec<f64>,
}

impl Matrix {
    /// Checks the shape (non-empty, data length rows · cols) and that every entry is finite.
    pub fn new(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self, PrivacyError> {
        if rows == 0 || cols == 0 {
            return Err(PrivacyError::Empty { name: "matrix" });
        }
        let size = rows.checked_mul(cols).ok_or(PrivacyError::OutOfRange {
            name: "matrix rows * cols",
            value: rows as f64 * cols as f64,
            expected: "<= usize::MAX",
        })?;
        if data.len() != size {
            return Err(PrivacyError::DimensionMismatch {
                name: "matrix data",
                expected: size,
                found: data.len(),
            });
        }
        all_finite("matrix data", &data)?;
        Ok(Self { rows, cols, data })
    }

    /// From f32 weights (as a burn tensor's `to_data()` gives them).
    pub fn from_f32(rows: usize, cols: usize, data: &[f32]) -> Result<Self, PrivacyError> {
        Self::new(rows, cols, data.iter().map(|&x| f64::from(x)).collect())
    }

    /// Wᵀ.
    pub fn transposed(&self) -> Self {
        let mut data = vec![0.0; self.data.len()];
        for r in 0..self.rows {
            for c in 0..self.cols {
                data[c * self.rows + r] = self.data[r * self.cols + c];
            }
        }
        Self {
            rows: self.cols,
            cols: self.rows,
            data,
        }
    }

    /// W x.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        self.data
            .chunks_exact(self.cols)
            .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// ‖W‖_F.
    pub fn frobenius_norm(&self) -> f64 {
        self.data.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    /// The smaller Gram matrix, WWᵀ (rows ≤ cols) or WᵀW, as an n×n row-major vector.
    fn small_gram(&self) -> (usize, Vec<f64>) {
        let w = if self.rows <= self.cols {
            self.clone()
        } else {
            self.transposed()
        };
        // G = w wᵀ, w is n × k with n ≤ k.
        let (n, k) = (w.rows, w.cols);
        let mut g = vec![0.0; n * n];
        for i in 0..n {
            let ri = &w.data[i * k..(i + 1) * k];
            for j in i..n {
                let rj = &w.data[j * k..(j + 1) * k];
                let v: f64 = ri.iter().zip(rj).map(|(a, b)| a * b).sum();
                g[i * n + j] = v;
                g[j * n + i] = v;
            }
        }
        (n, g)
    }
}

/// Lipschitz constant of an element-wise hidden activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// 1.
    Identity,
    /// 1.
    Relu,
    /// 1 (tanh' ≤ 1).
    Tanh,
    /// 1/4 (σ' ≤ 1/4).
    Sigmoid,
}

impl Activation {
    /// The activation's Lipschitz constant.
    pub fn lipschitz(self) -> f64 {
        match self {
            Self::Identity | Self::Relu | Self::Tanh => 1.0,
            Self::Sigmoid => 0.25,
        }
    }
}

/// What the last layer's output goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputMap {
    /// Logits / values: 1.
    Identity,
    /// A policy: 1/2 (see the module docs).
    Softmax,
}

impl OutputMap {
    /// The output map's Lipschitz constant.
    pub fn lipschitz(self) -> f64 {
        match self {
            Self::Identity => 1.0,
            Self::Softmax => 0.5,
        }
    }
}

/// Spectral norm of one layer: the power-iteration estimate and a certified upper bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpectralNorm {
    /// Power-iteration estimate, ≤ σ_max up to rounding.
    pub power_iteration: f64,
    /// Certified σ_max ≤ upper_bound.
    pub upper_bound: f64,
}

/// σ_max(W): a power-iteration estimate and the certified Schatten bound of the module docs.
///
/// W is first divided by its largest |w_ij| (and the norms multiplied back), so that the Gram
/// matrix cannot overflow.
pub fn spectral_norm(w: &Matrix) -> SpectralNorm {
    let max_abs = w.data.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if max_abs == 0.0 {
        return SpectralNorm {
            power_iteration: 0.0,
            upper_bound: 0.0,
        };
    }
    let scaled = Matrix {
        rows: w.rows,
        cols: w.cols,
        data: w.data.iter().map(|x| x / max_abs).collect(),
    };
    let unit = spectral_norm_scaled(&scaled);
    SpectralNorm {
        power_iteration: unit.power_iteration * max_abs,
        upper_bound: unit.upper_bound * max_abs,
    }
}

fn spectral_norm_scaled(w: &Matrix) -> SpectralNorm {
    let (n, g) = w.small_gram();
    let power = power_iteration(n, &g).sqrt();
    let fro2: f64 = g.iter().map(|x| x * x).sum::<f64>().sqrt(); // ‖G‖_F
    if fro2 == 0.0 {
        return SpectralNorm {
            power_iteration: 0.0,
            upper_bound: 0.0,
        };
    }
    // H = G / ‖G‖_F, log_scale = ln ‖G‖_F; invariant G^{2^j} = H · e^{log_scale}.
    let mut h: Vec<f64> = g.iter().map(|x| x / fro2).collect();
    let mut log_scale = fro2.ln();
    let mut next = vec![0.0; n * n];
    let mut squarings = 0;
    for _ in 0..GRAM_SQUARINGS {
        square_symmetric(n, &h, &mut next);
        std::mem::swap(&mut h, &mut next);
        let f = h.iter().map(|x| x * x).sum::<f64>().sqrt();
        if f == 0.0 || !f.is_finite() {
            break;
        }
        for x in h.iter_mut() {
            *x /= f;
        }
        log_scale = 2.0 * log_scale + f.ln();
        squarings += 1;
    }
    // Invariant: G^{2^S} = H e^{log_scale} with ‖H‖_F = 1, so tr(G^{2^{S+1}}) = e^{2 log_scale}
    // and σ_max = λ_max(G)^{1/2} ≤ tr(G^{2^{S+1}})^{1/2^{S+2}} = e^{log_scale / 2^{S+1}}.
    let p = 2f64.powi(squarings + 1);
    let schatten = (log_scale / p).exp();
    let upper = schatten.min(w.frobenius_norm()).max(power) * (1.0 + ROUNDING_MARGIN);
    SpectralNorm {
        power_iteration: power,
        upper_bound: upper,
    }
}

/// out = h·h for a symmetric n×n h.
fn square_symmetric(n: usize, h: &[f64], out: &mut [f64]) {
    for i in 0..n {
        let ri = &h[i * n..(i + 1) * n];
        for j in i..n {
            // h symmetric: column j = row j.
            let rj = &h[j * n..(j + 1) * n];
            let v: f64 = ri.iter().zip(rj).map(|(a, b)| a * b).sum();
            out[i * n + j] = v;
            out[j * n + i] = v;
        }
    }
}

/// λ_max of a symmetric PSD n×n matrix by power iteration (Rayleigh quotient, a lower bound).
fn power_iteration(n: usize, g: &[f64]) -> f64 {
    // A fixed, non-degenerate start: the result must not depend on a caller's RNG.
    let mut v: Vec<f64> = (0..n)
        .map(|i| 1.0 + ((i as f64 + 1.0) * 0.618_033_988_75).fract())
        .collect();
    let mut lambda = 0.0;
    for _ in 0..500 {
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            return 0.0;
        }
        for x in v.iter_mut() {
            *x /= norm;
        }
        let gv: Vec<f64> = g
            .chunks_exact(n)
            .map(|row| row.iter().zip(&v).map(|(a, b)| a * b).sum())
            .collect();
        let next: f64 = gv.iter().zip(&v).map(|(a, b)| a * b).sum();
        v = gv;
        if (next - lambda).abs() <= 1e-14 * next.abs() {
            return next;
        }
        lambda = next;
    }
    lambda
}

/// An upper bound on an MLP's Lipschitz constant, with the per-layer norms behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LipschitzBound {
    /// Certified: Π upper bounds · activation constants · output constant.
    pub upper_bound: f64,
    /// The same product with power-iteration estimates (not certified; shows the slack).
    pub power_iteration_estimate: f64,
    /// Per layer.
    pub layers: Vec<SpectralNorm>,
}

/// Bounds the Lipschitz constant of x ↦ out(W_n φ(… φ(W_1 x + b_1) …) + b_n).
///
/// `layers` are the weight matrices in forward order, each `rows` = outputs and `cols` = inputs,
/// so `layers[l + 1].cols == layers[l].rows`; `hidden` is applied after every layer but the last.
pub fn mlp_lipschitz_bound(
    layers: &[Matrix],
    hidden: Activation,
    output: OutputMap,
) -> Result<LipschitzBound, PrivacyError> {
    if layers.is_empty() {
        return Err(PrivacyError::Empty { name: "layers" });
    }
    for pair in layers.windows(2) {
        if pair[1].cols != pair[0].rows {
            return Err(PrivacyError::DimensionMismatch {
                name: "layer input (cols) against the previous layer's output (rows)",
                expected: pair[0].rows,
                found: pair[1].cols,
            });
        }
    }
    let norms: Vec<SpectralNorm> = layers.iter().map(spectral_norm).collect();
    let constants = hidden.lipschitz().powi(layers.len() as i32 - 1) * output.lipschitz();
    Ok(LipschitzBound {
        upper_bound: norms.iter().map(|n| n.upper_bound).product::<f64>() * constants,
        power_iteration_estimate: norms.iter().map(|n| n.power_iteration).product::<f64>()
            * constants,
        layers: norms,
    })
}
