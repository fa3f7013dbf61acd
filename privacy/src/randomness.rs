//! Randomness for the mechanisms: a seeded or an operating-system source, and the samplers the
//! mechanisms are built from.
//!
//! Every mechanism takes `&mut impl Rng`, so tests and reproducible runs pass a seeded
//! [`ChaCha20Rng`] and a deployment that must resist an adversary who knows the seed passes
//! [`SecureRng`] (ChaCha20 keyed once from the operating system's CSPRNG) or
//! [`MechanismRng::new`]`(`[`RandomnessSource::Secure`]`)`.
//!
//! # Floating-point caveat (Mironov 2012)
//!
//! The Laplace and Gaussian samplers here are the textbook ones: they transform uniform doubles
//! (inverse CDF for Laplace, the ziggurat of `rand_distr` for the normal). The privacy proofs
//! assume real-valued noise. With IEEE doubles the set of reachable outputs depends on the
//! secret input, and Mironov (*On significance of the least significant bits for differential
//! privacy*, CCS 2012) showed that an attacker who sees the exact bits of the output can
//! distinguish neighbouring inputs, breaking the guarantee outright. Measured for privrl's own
//! samplers: beyond ~22 noise scales the Laplace sampler's f64 lattice is coarser than f32's,
//! so outputs reachable from one input are unreachable from its neighbour (≈ 1e-10 per
//! coordinate at ε = 1); the PRS flip compares a uniform double (smallest 2⁻⁵⁴) with its
//! probability, so every per-coordinate ε ≥ 37.4 is an ε of ∞.
//!
//! The fix is exact sampling on a grid (Canonne, Kamath & Steinke 2020), which the `discrete`
//! module implements by integer arithmetic: [`crate::DiscreteLaplace`],
//! [`crate::DiscreteGaussian`], exact Bernoulli draws; the Laplace gradient mechanism on a grid
//! ([`crate::LaplaceGradient::on_grid`]) and the exact PRS flip
//! ([`crate::ProjectedRandomSign::exact`]) are built on them. They are opt-in: the default
//! samplers keep seeded runs' bytes, and their guarantees are those of the idealised
//! real-valued mechanisms, the standard of the RL-privacy literature privrl reproduces (and of
//! Opacus). Where an adversary sees the raw output bits of a single release, use the exact
//! ones: [`crate::GradientMechanismConfig::build_for`] does under [`NoiseMode::Secure`], which
//! is what PGC's `--noise-rng secure` runs use, and DP-SGD's Gaussian on a grid
//! ([`crate::GridGaussianSum`]), what the DP-SGD engine releases under the OS source; its
//! noise comes from integer tables ([`crate::DiscreteGaussianTable`]) within a computed total
//! variation β < 10⁻⁷⁰ a coordinate of the exact discrete Gaussian, a δ of at most
//! (1 + e^ε)·d·T·β that the printed δ leaves out (below 10⁻³³ for d·T ≤ 10¹⁵, ε ≤ 50). Secure
//! mode is not reproducible by construction: the same seed gives different noise.

use rand::{CryptoRng, Rng, RngCore, SeedableRng, TryRngCore};
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::PrivacyError;

/// The operating system's CSPRNG (`getrandom`) keying a ChaCha20 stream, once, at
/// construction: 32 bytes from the OS, then every draw from the stream, as rand's own
/// `ThreadRng` does (ChaCha with a key from the OS). Reading the OS on every draw cost a
/// system call per 64 bits, which made secure DP-SGD's Poisson sampling (one uniform per
/// stored record) and its exact noise (a few draws per coordinate) slow; ChaCha20 is a
/// cryptographically secure generator, so nothing predicts the stream without the key, and
/// the key lives only in this value's memory: it is never saved
/// ([`MechanismRng::state`] is `None`) nor printed (`Debug` shows no state).
///
/// Construct with [`SecureRng::new`], which fails by name if the OS source cannot be read. A
/// clone is keyed afresh from the OS (it must not repeat the original's noise: noise repeated
/// across two releases cancels in their difference); a clone whose OS read fails panics,
/// failing closed rather than releasing predictable noise.
pub struct SecureRng(Box<ChaCha20Rng>);

impl SecureRng {
    /// Keys a stream from the operating system's random source.
    pub fn new() -> Result<Self, PrivacyError> {
        let mut key = [0u8; 32];
        rand::rngs::OsRng
            .try_fill_bytes(&mut key)
            .map_err(|e| PrivacyError::Randomness(e.to_string()))?;
        Ok(Self(Box::new(ChaCha20Rng::from_seed(key))))
    }
}

impl Clone for SecureRng {
    fn clone(&self) -> Self {
        Self::new().expect("operating-system randomness failed")
    }
}

impl std::fmt::Debug for SecureRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecureRng(ChaCha20 keyed from the OS)")
    }
}

impl RngCore for SecureRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.0.fill_bytes(dst)
    }
}

impl CryptoRng for SecureRng {}

/// Where a run's mechanism noise comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RandomnessSource {
    /// ChaCha20 seeded from the run's seed: reproducible, for experiments and tests.
    Seeded(u64),
    /// The operating system's CSPRNG: for deployments.
    Secure,
}

/// How a run draws its mechanism noise, without the seed: what a configuration records.
///
/// `Seeded` (the default) derives the noise generator from the run's seed, so that a run can be
/// repeated bit for bit; anyone who knows the seed can then predict the noise, which is fine for
/// research and wrong for a deployment. `Secure` reads the operating system's CSPRNG instead:
/// the run cannot be repeated, and no noise seed is written anywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseMode {
    /// ChaCha20 from a seed derived from the run's seed.
    #[default]
    Seeded,
    /// The operating system's CSPRNG.
    Secure,
}

impl NoiseMode {
    /// The source for a component whose seeded stream starts from `seed` (ignored when
    /// secure).
    pub fn source(self, seed: u64) -> RandomnessSource {
        match self {
            Self::Seeded => RandomnessSource::Seeded(seed),
            Self::Secure => RandomnessSource::Secure,
        }
    }

    /// Opens the generator for `seed` (fails only if the OS source is unavailable).
    pub fn rng(self, seed: u64) -> Result<MechanismRng, PrivacyError> {
        MechanismRng::new(self.source(seed))
    }

    /// One sentence for reports: where the noise came from and whether the run repeats.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Seeded => {
                "seeded: ChaCha20 from the run's seed, so the run repeats bit for bit and the \
                 seed predicts the noise (research mode)"
            }
            Self::Secure => {
                "secure: the operating system's CSPRNG, so no seed predicts the noise and the \
                 run does not repeat"
            }
        }
    }
}

/// A generator built from a [`RandomnessSource`].
#[derive(Debug, Clone)]
pub enum MechanismRng {
    /// Reproducible ChaCha20 stream (boxed: it is 320 bytes).
    Seeded(Box<ChaCha20Rng>),
    /// ChaCha20 keyed from the operating system's CSPRNG ([`SecureRng`]).
    Secure(SecureRng),
}

impl MechanismRng {
    /// Opens the source (fails only if the OS source is unavailable).
    pub fn new(source: RandomnessSource) -> Result<Self, PrivacyError> {
        Ok(match source {
            RandomnessSource::Seeded(seed) => {
                Self::Seeded(Box::new(ChaCha20Rng::seed_from_u64(seed)))
            }
            RandomnessSource::Secure => Self::Secure(SecureRng::new()?),
        })
    }

    /// Where a seeded stream stands, for a checkpoint; `None` for the operating system's
    /// source, which has no state to save. A resumed run must continue the stream: restarting
    /// it would draw the same noise again for new releases, and noise repeated across two
    /// releases cancels in their difference.
    pub fn state(&self) -> Option<MechanismRngState> {
        match self {
            Self::Seeded(r) => Some(MechanismRngState {
                seed: r.get_seed(),
                stream: r.get_stream(),
                word_pos: r.get_word_pos(),
            }),
            Self::Secure(_) => None,
        }
    }

    /// Puts a seeded stream where [`MechanismRng::state`] found it. The state must come from
    /// the same kind of source: a seeded state cannot resume a secure generator, nor the
    /// reverse.
    pub fn restore(&mut self, state: Option<&MechanismRngState>) -> Result<(), PrivacyError> {
        match (self, state) {
            (Self::Seeded(r), Some(s)) => {
                let mut restored = ChaCha20Rng::from_seed(s.seed);
                restored.set_stream(s.stream);
                restored.set_word_pos(s.word_pos);
                **r = restored;
                Ok(())
            }
            (Self::Secure(_), None) => Ok(()),
            _ => Err(PrivacyError::Inconsistent(
                "a noise generator's saved state and its source (seeded or secure)",
            )),
        }
    }
}

/// The position of a seeded [`MechanismRng`] (ChaCha20 seed, stream, word position).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MechanismRngState {
    seed: [u8; 32],
    stream: u64,
    word_pos: u128,
}

impl RngCore for MechanismRng {
    fn next_u32(&mut self) -> u32 {
        match self {
            Self::Seeded(r) => r.next_u32(),
            Self::Secure(r) => r.next_u32(),
        }
    }
    fn next_u64(&mut self) -> u64 {
        match self {
            Self::Seeded(r) => r.next_u64(),
            Self::Secure(r) => r.next_u64(),
        }
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        match self {
            Self::Seeded(r) => r.fill_bytes(dst),
            Self::Secure(r) => r.fill_bytes(dst),
        }
    }
}

/// A uniform double in the open interval (0, 1): 53 random bits, offset by half a step, so that
/// `ln` of it is always finite.
///
/// The top value, (2⁵³ − ½)·2⁻⁵³ = 1 − 2⁻⁵⁴, lies halfway between 1 − 2⁻⁵³ and 1 and rounds
/// to even, i.e. to exactly 1.0 (probability 2⁻⁵³; a Laplace draw then was +∞). It is returned
/// as the largest double below 1 instead; every other value is unchanged, so seeded runs keep
/// their bytes.
#[inline]
pub(crate) fn open01<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u = ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
    u.min(1.0 - f64::EPSILON / 2.0)
}

/// A standard normal draw.
#[inline]
pub(crate) fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// A Laplace(0, scale) draw by the inverse CDF: −scale · sgn(u) · ln(1 − 2|u|), u ∈ (−½, ½).
/// See the module's floating-point caveat.
#[inline]
pub(crate) fn laplace<R: Rng + ?Sized>(rng: &mut R, scale: f64) -> f64 {
    let u = open01(rng) - 0.5;
    // 1 − 2|u| ∈ (0, 1]: finite logarithm.
    -scale * u.signum() * (1.0 - 2.0 * u.abs()).ln()
}

/// Draws ln G for G ~ Gamma(shape, 1), in log space so that tiny shapes do not underflow.
///
/// Marsaglia & Tsang (2000) for shape ≥ 1, returning ln(d·v) instead of d·v. For shape a < 1 the
/// boost Gamma(a) = Gamma(a + 1) · U^{1/a} becomes, in logs, ln G = ln G' + ln(U)/a, which is
/// finite for every a ≥ 1e-300 and keeps the ratios of tiny Gamma variates exact, where the
/// linear-space sampler of `rand_distr` returns 0 (and a Dirichlet built on it 0/0 = NaN).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogGammaSampler {
    /// Marsaglia–Tsang d = a' − 1/3 with a' = max(a, a + 1 if a < 1).
    d: f64,
    /// c = 1/√(9d).
    c: f64,
    /// ln d.
    ln_d: f64,
    /// 1/a when the boost is used, else 0.
    inv_shape_boost: Option<f64>,
}

impl LogGammaSampler {
    /// Prepares a sampler for `shape` > 0 (callers validate).
    #[inline]
    pub(crate) fn new(shape: f64) -> Self {
        let (base, boost) = if shape < 1.0 {
            (shape + 1.0, Some(1.0 / shape))
        } else {
            (shape, None)
        };
        let d = base - 1.0 / 3.0;
        Self {
            d,
            c: 1.0 / (9.0 * d).sqrt(),
            ln_d: d.ln(),
            inv_shape_boost: boost,
        }
    }

    /// One draw of ln G.
    #[inline]
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.sample_with_magnitude(rng).0
    }

    /// One draw of ln G together with ln(−ln U) − ln a, the log-magnitude of the boost term
    /// ln(U)/a (−∞ when no boost is used). When ln G itself overflows to −∞ for a vanishing
    /// shape, the magnitude still orders the draws: a smaller magnitude means a larger G.
    #[inline]
    pub(crate) fn sample_with_magnitude<R: Rng + ?Sized>(&self, rng: &mut R) -> (f64, f64) {
        let base = loop {
            let x = standard_normal(rng);
            let t = 1.0 + self.c * x;
            if t <= 0.0 {
                continue;
            }
            let v = t * t * t;
            let u = open01(rng);
            let x2 = x * x;
            // Squeeze, then the exact test; both from Marsaglia & Tsang (2000).
            if u < 1.0 - 0.0331 * x2 * x2 {
                break self.ln_d + v.ln();
            }
            let ln_v = v.ln();
            if u.ln() < 0.5 * x2 + self.d * (1.0 - v + ln_v) {
                break self.ln_d + ln_v;
            }
        };
        match self.inv_shape_boost {
            Some(inv) => {
                let ln_u = open01(rng).ln();
                (base + ln_u * inv, (-ln_u).ln() + inv.ln())
            }
            None => (base, f64::NEG_INFINITY),
        }
    }
}

impl LogGammaSampler {
    /// The interval that every draw of ln G lies in, in floating point: a proposal x is accepted
    /// only if ln u < x²/2 + d(1 − v + ln v), v = (1 + cx)³ (the squeeze implies it), and u is at
    /// least [`open01`]'s least value 2⁻⁵⁴, so x lies between the two roots of
    /// x²/2 + d(1 − v + ln v) = ln 2⁻⁵⁴ (found by bisection), and ln G = ln d + ln v (plus
    /// ln(u)/a ∈ [ln(2⁻⁵⁴)/a, 0) under the boost) lies between the images of those roots. An
    /// analysis of the reachable outputs (the Dirichlet mechanism's floating-point gap, docs/
    /// kickstarting.md), exact up to a few units in the last place of the bounds.
    pub(crate) fn reach(&self) -> (f64, f64) {
        let least_ln_u = (0.5f64 / (1u64 << 53) as f64).ln();
        let margin = |x: f64| {
            let t = 1.0 + self.c * x;
            if t <= 0.0 {
                return f64::NEG_INFINITY;
            }
            let v = t * t * t;
            0.5 * x * x + self.d * (1.0 - v + v.ln()) - least_ln_u
        };
        // margin(0) = −ln 2⁻⁵⁴ > 0; it falls to −∞ at t → 0 and as x → ∞.
        let root = |mut inside: f64, mut outside: f64| {
            for _ in 0..200 {
                let mid = 0.5 * (inside + outside);
                if margin(mid) > 0.0 {
                    inside = mid;
                } else {
                    outside = mid;
                }
            }
            outside
        };
        let low = root(0.0, -1.0 / self.c);
        let mut far = 1.0;
        while margin(far) > 0.0 {
            far *= 2.0;
        }
        let high = root(0.0, far);
        let ln_v = |x: f64| 3.0 * (1.0 + self.c * x).ln();
        let (mut lo, hi) = (self.ln_d + ln_v(low), self.ln_d + ln_v(high));
        if let Some(inv) = self.inv_shape_boost {
            lo += least_ln_u * inv;
        }
        (lo, hi)
    }
}

/// Fills `out` with x_i = exp(ln g_i − logsumexp(ln g)), given `max` = max_i ln g_i, which must
/// be finite. The result is on the simplex (entries ≥ 0, sum 1 up to rounding), never NaN.
#[inline]
pub(crate) fn normalize_log_weights(log_g: &[f64], max: f64, out: &mut [f64]) {
    let mut sum = 0.0;
    for (o, &l) in out.iter_mut().zip(log_g) {
        *o = (l - max).exp();
        sum += *o;
    }
    // sum ≥ 1 because the maximum contributes exp(0) = 1.
    let inv = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open01_is_open() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for _ in 0..10_000 {
            let u = open01(&mut rng);
            assert!(u > 0.0 && u < 1.0);
        }
        struct Zeros;
        impl RngCore for Zeros {
            fn next_u32(&mut self) -> u32 {
                0
            }
            fn next_u64(&mut self) -> u64 {
                0
            }
            fn fill_bytes(&mut self, d: &mut [u8]) {
                d.fill(0)
            }
        }
        assert!(open01(&mut Zeros) > 0.0);
        assert!(open01(&mut Zeros).ln().is_finite());
        // The top draw: (2⁵³ − ½)·2⁻⁵³ rounds to 1.0 unless clamped.
        struct Ones;
        impl RngCore for Ones {
            fn next_u32(&mut self) -> u32 {
                u32::MAX
            }
            fn next_u64(&mut self) -> u64 {
                u64::MAX
            }
            fn fill_bytes(&mut self, d: &mut [u8]) {
                d.fill(u8::MAX)
            }
        }
        let top = open01(&mut Ones);
        assert!(top < 1.0, "{top}");
        assert_eq!(top, 1.0 - f64::EPSILON / 2.0);
        assert!((1.0 - top).ln().is_finite());
        assert!(laplace(&mut Ones, 1.0).is_finite());
        // Every other value is what it was.
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for _ in 0..10_000 {
            let bits = rng.next_u64();
            let before = ((bits >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
            struct Fixed(u64);
            impl RngCore for Fixed {
                fn next_u32(&mut self) -> u32 {
                    self.0 as u32
                }
                fn next_u64(&mut self) -> u64 {
                    self.0
                }
                fn fill_bytes(&mut self, d: &mut [u8]) {
                    d.fill(0)
                }
            }
            assert_eq!(open01(&mut Fixed(bits)).to_bits(), before.to_bits());
        }
    }

    #[test]
    fn log_gamma_sampler_moments() {
        // E[G] = a and Var[G] = a for G ~ Gamma(a, 1).
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for &a in &[0.3, 1.0, 4.5] {
            let s = LogGammaSampler::new(a);
            let n = 200_000;
            let (mut m1, mut m2) = (0.0, 0.0);
            for _ in 0..n {
                let g = s.sample(&mut rng).exp();
                m1 += g;
                m2 += g * g;
            }
            let mean = m1 / n as f64;
            let var = m2 / n as f64 - mean * mean;
            assert!(
                (mean - a).abs() < 5.0 * (a / n as f64).sqrt(),
                "a = {a}: mean {mean}"
            );
            assert!((var - a).abs() < 0.05 * a, "a = {a}: var {var}");
        }
    }

    #[test]
    fn log_gamma_sampler_tiny_shape_is_finite() {
        // E[ln G] = ψ(a) ≈ −1/a for tiny a: the log stays finite where G itself underflows.
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let s = LogGammaSampler::new(1e-6);
        let n = 20_000;
        let mut mean = 0.0;
        for _ in 0..n {
            let l = s.sample(&mut rng);
            assert!(l.is_finite());
            mean += l / n as f64;
        }
        assert!((mean + 1e6).abs() < 0.05e6, "mean ln G = {mean}");
    }

    #[test]
    fn laplace_scale() {
        // E|Z| = scale.
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| laplace(&mut rng, 2.0).abs()).sum::<f64>() / n as f64;
        assert!((m - 2.0).abs() < 0.02, "{m}");
    }

    #[test]
    fn secure_rng_draws() {
        let mut rng = MechanismRng::new(RandomnessSource::Secure).unwrap();
        let a = rng.next_u64();
        let b = rng.next_u64();
        assert_ne!(a, b);
        assert_ne!(
            NoiseMode::Secure.rng(5).unwrap().next_u64(),
            NoiseMode::Secure.rng(5).unwrap().next_u64()
        );
        assert_eq!(
            NoiseMode::Seeded.rng(5).unwrap().next_u64(),
            NoiseMode::Seeded.rng(5).unwrap().next_u64()
        );
        // A clone of a secure generator is keyed afresh: it does not repeat the original.
        let mut original = SecureRng::new().unwrap();
        let mut copy = original.clone();
        assert_ne!(original.next_u64(), copy.next_u64());
        assert!(!format!("{original:?}").contains('['));
        let mut s1 = MechanismRng::new(RandomnessSource::Seeded(5)).unwrap();
        let mut s2 = MechanismRng::new(RandomnessSource::Seeded(5)).unwrap();
        assert_eq!(s1.next_u64(), s2.next_u64());
    }
}
