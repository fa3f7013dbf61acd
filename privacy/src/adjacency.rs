//! Which datasets are neighbours in a DP-SGD guarantee: the adjacency relation that an ε is
//! stated under, and the per-step RDP of the Poisson-subsampled Gaussian under each.
//!
//! - **Add/remove** (Opacus' and dp-accounting's default): D′ = D with one record added or
//!   removed. The per-step RDP is Mironov, Talwar & Zhang (2019), [`rdp_subsampled_gaussian`]:
//!   exact for this relation.
//! - **Substitution** (replace one): D′ = D with one record replaced by another, |D′| = |D|.
//!   Conditioned on the other records, one step releases (1 − q)N(0, σ²C²I) + qN(u, σ²C²I)
//!   against the same with v, where u and v are the two records' clipped gradients
//!   (‖u‖, ‖v‖ ≤ C, so ‖u − v‖ ≤ 2C). dp-accounting's RDP accountant refuses this pair under
//!   Poisson sampling, and no closed form is known; [`rdp_subsampled_gaussian_under`] bounds
//!   it **conservatively** by the smaller of two valid bounds, order by order:
//!   1. no amplification: the mixture pair is at most as far apart as N(u) and N(v)
//!      (joint quasi-convexity of the Rényi divergence), i.e. the Gaussian mechanism with
//!      sensitivity 2C, RDP α·(2C)²/(2σ²C²) = 2α/σ²; **exact at q = 1**, where the pair is that
//!      Gaussian pair;
//!   2. group privacy: a substitution is a removal followed by an addition, two add/remove
//!      steps apart, so by Mironov (2017, Proposition 2, c = 1) an (2α, ε₂ₐ)-RDP mechanism
//!      under add/remove is (α, 3ε₂ₐ)-RDP under substitution, for α ≥ 2; below order 2 the
//!      order-2 bound holds too, since RDP grows with the order.
//!
//!   Neither bound can understate ε. The tight value lies below; the tests check the bound
//!   against the exact Rényi divergence of the worst-case pair u = −v, ‖u‖ = C (by quadrature)
//!   and against the tight ε of that pair from the FFT accountant of Koskela, Jälkö & Honkela
//!   (2020), which it must not undercut. How conservative, measured there: 1.4× the tight ε at
//!   q = 0.01, σ = 4 (0.79 against 0.56 over 1000 steps), 2.0× at q = 0.01, σ = 1, and up to
//!   7.9× where σ is small and q large (q = 0.2, σ = 0.8: 167 against 21), where the
//!   group-privacy bound at order 2α meets the subsampled Gaussian's large-order blow-up. The
//!   PLD accountant (`pld`) accounts that pair tightly (as dp-accounting's
//!   `REPLACE_ONE`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::rdp_step::rdp_subsampled_gaussian;
use crate::PrivacyError;

/// The neighbouring relation an ε holds under (module docs). The default is add/remove, as in
/// Opacus; substitution's ε is larger (about twice, for the same run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Adjacency {
    /// One record added or removed.
    #[default]
    AddRemove,
    /// One record replaced by another.
    Substitution,
}

impl Adjacency {
    /// Every relation.
    pub const ALL: [Adjacency; 2] = [Adjacency::AddRemove, Adjacency::Substitution];

    /// The name printed beside an ε (`add/remove`, `substitution`).
    pub fn name(self) -> &'static str {
        match self {
            Adjacency::AddRemove => "add/remove",
            Adjacency::Substitution => "substitution",
        }
    }

    /// The name on a command line and in a file (`add-remove`, `substitution`).
    pub fn slug(self) -> &'static str {
        match self {
            Adjacency::AddRemove => "add-remove",
            Adjacency::Substitution => "substitution",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Adjacency::AddRemove => &["add/remove", "add-or-remove", "add-or-remove-one"],
            Adjacency::Substitution => &["substitute", "replace", "replace-one"],
        }
    }
}

impl fmt::Display for Adjacency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.slug())
    }
}

impl FromStr for Adjacency {
    type Err = PrivacyError;
    fn from_str(text: &str) -> Result<Self, PrivacyError> {
        let text = text.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|a| a.slug() == text || a.aliases().contains(&text.as_str()))
            .ok_or(PrivacyError::Parse {
                what: "adjacency",
                text,
                expected: "add-remove (add/remove, add-or-remove) or substitution (substitute, \
                           replace-one)",
            })
    }
}

/// RDP ε_α of one step of the Poisson-subsampled Gaussian mechanism (sampling rate q, noise
/// multiplier σ) under `adjacency`: exact for add/remove, a conservative bound for
/// substitution that is exact at q = 1 (module docs).
pub fn rdp_subsampled_gaussian_under(
    adjacency: Adjacency,
    q: f64,
    sigma: f64,
    order: f64,
) -> Result<f64, PrivacyError> {
    let add_remove = rdp_subsampled_gaussian(q, sigma, order)?;
    match adjacency {
        Adjacency::AddRemove => Ok(add_remove),
        Adjacency::Substitution => {
            if q == 0.0 {
                return Ok(0.0);
            }
            let no_amplification = 2.0 * order / (sigma * sigma);
            let group = 3.0 * rdp_subsampled_gaussian(q, sigma, (2.0 * order).max(4.0))?;
            Ok(no_amplification.min(group))
        }
    }
}
