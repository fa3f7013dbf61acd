//! Exact samplers on the integers, by integer arithmetic only (Canonne, Kamath & Steinke 2020,
//! "The Discrete Gaussian for Differential Privacy", Algorithms 1–3): a Bernoulli with
//! probability exp(−γ) for rational γ, the discrete Laplace and the discrete Gaussian.
//!
//! Why: the textbook samplers (`randomness`'s inverse-CDF Laplace, the ziggurat normal) turn
//! uniform doubles into noise, and in floating point the set of outputs reachable from one
//! input is not the one reachable from its neighbour: an adversary who sees the exact bits can
//! tell them apart (Mironov 2012). Here every draw is a uniform *integer* (`Rng::random_range`,
//! unbiased by rejection), a Bernoulli(n/d) decided by comparing uniform bits with the binary
//! expansion of the integer fraction n/d, or a comparison between integers, so the
//! probabilities are exactly
//! the ones the privacy proof assumes and every integer is reachable from every input. A
//! mechanism built on them works on a grid: it rounds its input to multiples of a grid step
//! and adds integer noise in grid units.
//!
//! The one approximation: in the discrete Gaussian, a proposal so far in the tail that its
//! acceptance exponent γ exceeds 2⁴⁵ is rejected without drawing (its acceptance probability
//! is below e^{−2⁴⁵}); the pmf it leaves differs from the exact one by less than that, a δ of
//! at most e^{−2⁴⁵} ≈ 10^{−1.5·10¹³} per draw.

use rand::Rng;

use crate::PrivacyError;

/// Random bits from a generator, one 64-bit word at a time, handed out one by one: the
/// samplers below consume about two bits per Bernoulli draw, and a word per draw would make
/// the generator their main cost. Leftover bits are dropped with the value (independent
/// uniform bits, so nothing depends on which ones are used).
struct Bits<'a, R: ?Sized> {
    rng: &'a mut R,
    word: u64,
    left: u32,
}

impl<'a, R: Rng + ?Sized> Bits<'a, R> {
    fn new(rng: &'a mut R) -> Self {
        Self {
            rng,
            word: 0,
            left: 0,
        }
    }

    #[inline]
    fn bit(&mut self) -> bool {
        if self.left == 0 {
            self.word = self.rng.next_u64();
            self.left = 64;
        }
        self.left -= 1;
        let bit = self.word & 1 == 1;
        self.word >>= 1;
        bit
    }

    /// A uniform integer in [0, n), from the generator (unbiased, by rejection).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        self.rng.random_range(0..n)
    }
}

/// A Bernoulli draw with probability `numerator`/`denominator` (clamped to 1), exactly, by
/// comparing a uniform U ∈ [0, 1) with the fraction bit by bit: the fraction's binary
/// expansion comes from long division (r ← 2r, a bit 1 where 2r ≥ d), U's bits from the
/// generator, and the first bit in which they differ decides U < n/d. Two bits are needed on
/// average, and no 128-bit multiplication or division (what a uniform integer below a u128
/// `denominator` costs by rejection): this is on the discrete Gaussian's hot path, a few calls
/// per coordinate of every DP-SGD step in secure mode. U = n/d exactly has probability 0, so a
/// terminating expansion (r = 0) means U ≥ n/d.
#[inline]
fn bernoulli_ratio<R: Rng + ?Sized>(
    bits: &mut Bits<'_, R>,
    numerator: u128,
    denominator: u128,
) -> bool {
    if numerator >= denominator {
        return true;
    }
    if numerator == 0 {
        return false;
    }
    // Invariant: 0 < r < d, and the bits still to compare are those of r/d.
    let mut r = numerator;
    loop {
        // 2r ≥ d without overflow: r ≥ d − r (d − r > 0).
        let p_bit = r >= denominator - r;
        if bits.bit() != p_bit {
            // The first difference: U < n/d iff its bit is 0 where the fraction's is 1.
            return p_bit;
        }
        r = if p_bit { r - (denominator - r) } else { r + r };
        if r == 0 {
            return false;
        }
    }
}

/// A Bernoulli draw with probability exp(−γ), γ = `numerator`/`denominator` ≥ 0, exactly
/// (Canonne, Kamath & Steinke 2020, Algorithm 1): for γ ≤ 1 the parity of the first failure
/// in a run of Bernoulli(γ/k) draws, k = 1, 2, …; above 1, ⌊γ⌋ draws at γ = 1 and one at the
/// fractional part, all of which must succeed.
///
/// # Panics
///
/// If `denominator` is 0 (callers build it from validated parameters).
pub fn bernoulli_exp_minus<R: Rng + ?Sized>(
    rng: &mut R,
    numerator: u128,
    denominator: u128,
) -> bool {
    assert!(denominator > 0, "bernoulli_exp_minus: zero denominator");
    exp_minus(&mut Bits::new(rng), numerator, denominator)
}

/// [`bernoulli_exp_minus`] on a bit source (no division where γ < 1, the common case).
#[inline]
fn exp_minus<R: Rng + ?Sized>(bits: &mut Bits<'_, R>, numerator: u128, denominator: u128) -> bool {
    if numerator < denominator {
        return exp_minus_unit(bits, numerator, denominator);
    }
    let whole = numerator / denominator;
    for _ in 0..whole {
        if !exp_minus_unit(bits, 1, 1) {
            return false;
        }
    }
    exp_minus_unit(bits, numerator % denominator, denominator)
}

/// Algorithm 1 for γ = n/d ∈ [0, 1].
#[inline]
fn exp_minus_unit<R: Rng + ?Sized>(bits: &mut Bits<'_, R>, n: u128, d: u128) -> bool {
    let mut k: u128 = 1;
    loop {
        // Bernoulli(γ/k) = Bernoulli(n/(d·k)); d·k cannot overflow in any run that ends (the
        // loop stops with probability 1 − γ/k at every k).
        if !bernoulli_ratio(bits, n, d.saturating_mul(k)) {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// A Bernoulli draw with probability `p` ∈ [0, 1] given as a double, exactly: a double is a
/// dyadic rational M·2^{−(j + 53)} (M < 2⁵³), so U < p for a uniform U ∈ [0, 1) is decided
/// by U's first j bits being 0 and its next 53 bits, as an integer, being below M. No
/// rounding: the probability is `p` itself, whatever `p` is. NaN counts as 0.
pub fn bernoulli_double<R: Rng + ?Sized>(rng: &mut R, p: f64) -> bool {
    if p.is_nan() || p <= 0.0 {
        return false;
    }
    if p >= 1.0 {
        return true;
    }
    let bits = p.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1u64 << 52) - 1);
    // p = M·2^{−(j + 53)}: for a normal p = 1.f·2^{E}, M = 2⁵² + f and j = −E − 1; for a
    // subnormal p = f·2^{−1074}, M = f and j = 1021.
    let (mantissa, mut zeros) = if exponent == 0 {
        (fraction, 1021u64)
    } else {
        ((1u64 << 52) | fraction, (1022 - exponent) as u64)
    };
    while zeros > 0 {
        let take = zeros.min(64);
        let word = rng.next_u64();
        let word = if take == 64 {
            word
        } else {
            word >> (64 - take)
        };
        if word != 0 {
            return false;
        }
        zeros -= take;
    }
    (rng.next_u64() >> 11) < mantissa
}

/// Randomised response with keep probability e^γ/(1 + e^γ), γ = `numerator`/`denominator`:
/// `true` (flip) with probability 1/(1 + e^γ), exactly — a fair proposal, a flip accepted with
/// probability e^{−γ}, a keep always, until one is accepted.
pub fn flip_with_odds_exp_minus<R: Rng + ?Sized>(
    rng: &mut R,
    numerator: u128,
    denominator: u128,
) -> bool {
    assert!(
        denominator > 0,
        "flip_with_odds_exp_minus: zero denominator"
    );
    let mut bits = Bits::new(rng);
    loop {
        if !bits.bit() {
            return false;
        }
        if exp_minus(&mut bits, numerator, denominator) {
            return true;
        }
    }
}

/// The discrete Laplace distribution on the integers, P[X = x] ∝ exp(−|x|/t) for an integer
/// scale t ≥ 1: a mechanism that adds it to an integer-valued query of L1 sensitivity Δ is
/// exactly (Δ/t)-DP, with no floating-point caveat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteLaplace {
    scale: u64,
}

impl DiscreteLaplace {
    /// The distribution with scale t ≥ 1 (in grid units).
    pub fn new(scale: u64) -> Result<Self, PrivacyError> {
        if scale == 0 {
            return Err(PrivacyError::OutOfRange {
                name: "discrete Laplace scale",
                value: 0.0,
                expected: "an integer >= 1",
            });
        }
        Ok(Self { scale })
    }

    /// The scale t.
    pub fn scale(&self) -> u64 {
        self.scale
    }

    /// One exact draw (Canonne, Kamath & Steinke 2020, Algorithm 2 with s = 1): a geometric
    /// magnitude built from a uniform remainder U < t accepted with probability e^{−U/t} and a
    /// count V of successive Bernoulli(e^{−1}) successes, |X| = U + t·V, and a fair sign, with
    /// −0 rejected so that 0 is not counted twice.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.sample_bits(&mut Bits::new(rng))
    }

    fn sample_bits<R: Rng + ?Sized>(&self, bits: &mut Bits<'_, R>) -> i64 {
        let t = self.scale as u128;
        loop {
            let u = u128::from(bits.below(self.scale));
            if !exp_minus(bits, u, t) {
                continue;
            }
            let mut v: u128 = 0;
            while exp_minus_unit(bits, 1, 1) {
                v += 1;
            }
            let magnitude = u + t * v;
            let negative = bits.bit();
            if negative && magnitude == 0 {
                continue;
            }
            let magnitude = i64::try_from(magnitude).unwrap_or(i64::MAX);
            return if negative { -magnitude } else { magnitude };
        }
    }

    /// P[X = x] = (1 − e^{−1/t})/(1 + e^{−1/t}) · e^{−|x|/t}, in floating point (for tests
    /// and reports, not for sampling).
    pub fn pmf(&self, x: i64) -> f64 {
        let r = (-1.0 / self.scale as f64).exp();
        (1.0 - r) / (1.0 + r) * r.powf(x.unsigned_abs() as f64)
    }
}

/// The discrete Gaussian on the integers, P[X = x] ∝ exp(−x²/(2σ²)) for an integer variance
/// parameter σ² ∈ [1, 2⁴⁰] (in grid units). Added to an integer-valued query of L2
/// sensitivity Δ it satisfies (Δ²/(2σ²))-concentrated DP, like the continuous Gaussian
/// (Canonne, Kamath & Steinke 2020, Theorem 4), with no floating-point caveat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteGaussian {
    variance: u64,
    /// ⌊σ⌋ + 1, the discrete Laplace proposal's scale.
    proposal: DiscreteLaplace,
}

/// The largest variance parameter the sampler takes: every intermediate then fits in u128.
const MAX_VARIANCE: u64 = 1 << 40;

impl DiscreteGaussian {
    /// The distribution with variance parameter σ² (an integer in [1, 2⁴⁰]).
    pub fn new(variance: u64) -> Result<Self, PrivacyError> {
        if !(1..=MAX_VARIANCE).contains(&variance) {
            return Err(PrivacyError::OutOfRange {
                name: "discrete Gaussian variance",
                value: variance as f64,
                expected: "an integer in [1, 2^40] (grid units: choose the grid so)",
            });
        }
        // ⌊σ⌋ exactly: the largest k with k² ≤ σ².
        let mut floor_sigma = (variance as f64).sqrt() as u64;
        while floor_sigma * floor_sigma > variance {
            floor_sigma -= 1;
        }
        while (floor_sigma + 1) * (floor_sigma + 1) <= variance {
            floor_sigma += 1;
        }
        Ok(Self {
            variance,
            proposal: DiscreteLaplace::new(floor_sigma + 1)?,
        })
    }

    /// The variance parameter σ².
    pub fn variance(&self) -> u64 {
        self.variance
    }

    /// One draw (Canonne, Kamath & Steinke 2020, Algorithm 3): a discrete Laplace proposal Y
    /// of scale t = ⌊σ⌋ + 1, accepted with probability exp(−(|Y| − σ²/t)²/(2σ²)).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.sample_bits(&mut Bits::new(rng))
    }

    /// `n` draws, [`DiscreteGaussian::sample`] one after the other on one bit source (no bits
    /// dropped between draws).
    pub fn sample_n<R: Rng + ?Sized>(&self, rng: &mut R, n: usize) -> Vec<i64> {
        let mut bits = Bits::new(rng);
        (0..n).map(|_| self.sample_bits(&mut bits)).collect()
    }

    fn sample_bits<R: Rng + ?Sized>(&self, bits: &mut Bits<'_, R>) -> i64 {
        let t = self.proposal.scale() as u128;
        let s2 = self.variance as u128;
        // γ = (|Y|·t − σ²)² / (2σ²t²).
        let denominator = 2 * s2 * t * t;
        let cutoff = denominator.saturating_mul(1 << 45);
        loop {
            let y = self.proposal.sample_bits(bits);
            let gap = (y.unsigned_abs() as u128)
                .checked_mul(t)
                .map(|yt| yt.abs_diff(s2));
            let Some(numerator) = gap.and_then(|g| g.checked_mul(g)) else {
                continue; // γ > 2⁴⁵ (module docs)
            };
            if numerator > cutoff {
                continue;
            }
            if exp_minus(bits, numerator, denominator) {
                return y;
            }
        }
    }

    /// P[X = x], normalised by summing the unnormalised mass over |x| ≤ 40σ + 10 (the rest is
    /// below 1e-300), in floating point (for tests and reports, not for sampling).
    pub fn pmf(&self, x: i64) -> f64 {
        let s2 = self.variance as f64;
        let reach = (40.0 * s2.sqrt()) as i64 + 10;
        let weight = |k: i64| (-((k * k) as f64) / (2.0 * s2)).exp();
        let total: f64 = (-reach..=reach).map(weight).sum();
        weight(x) / total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Pearson's χ² of `counts` (by value) against `pmf` over the values with expected count
    /// ≥ 5, the rest pooled; returns (statistic, degrees of freedom).
    fn chi_square(
        counts: &std::collections::BTreeMap<i64, u64>,
        n: u64,
        pmf: impl Fn(i64) -> f64,
        range: i64,
    ) -> (f64, usize) {
        let (mut stat, mut cells) = (0.0, 0usize);
        let (mut pooled_observed, mut pooled_expected) = (0.0, 0.0);
        for x in -range..=range {
            let expected = n as f64 * pmf(x);
            let observed = *counts.get(&x).unwrap_or(&0) as f64;
            if expected >= 5.0 {
                stat += (observed - expected).powi(2) / expected;
                cells += 1;
            } else {
                pooled_observed += observed;
                pooled_expected += expected;
            }
        }
        let outside: u64 = counts
            .iter()
            .filter(|(x, _)| x.abs() > range)
            .map(|(_, c)| c)
            .sum();
        pooled_observed += outside as f64;
        pooled_expected += n as f64 - (-range..=range).map(|x| n as f64 * pmf(x)).sum::<f64>();
        if pooled_expected >= 5.0 {
            stat += (pooled_observed - pooled_expected).powi(2) / pooled_expected;
            cells += 1;
        }
        (stat, cells - 1)
    }

    /// The χ² statistic's 1 − 1e-6 quantile, by the Wilson–Hilferty approximation (accurate to
    /// a few percent for ≥ 3 degrees of freedom): a correct sampler fails one seed in a million.
    fn chi_square_bound(df: usize) -> f64 {
        let k = df as f64;
        let z = 4.753; // Φ⁻¹(1 − 1e-6)
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    #[test]
    fn bernoulli_exp_minus_has_its_probability() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 200_000u32;
        for (num, den) in [(0u128, 1u128), (1, 2), (1, 1), (5, 2), (7, 3)] {
            let p = (-(num as f64) / den as f64).exp();
            let hits = (0..n)
                .filter(|_| bernoulli_exp_minus(&mut rng, num, den))
                .count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            assert!(
                ((hits / n as f64) - p).abs() < 5.0 * se,
                "γ = {num}/{den}: {} vs {p}",
                hits / n as f64
            );
        }
    }

    #[test]
    fn bernoulli_double_and_randomised_response_have_their_probabilities() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let n = 200_000u32;
        for p in [0.0, 1e-300, 0.1, 0.5, 0.7, 1.0 - 1e-12, 1.0] {
            let hits = (0..n).filter(|_| bernoulli_double(&mut rng, p)).count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            assert!(
                ((hits / n as f64) - p).abs() < 5.0 * se,
                "p = {p}: {}",
                hits / n as f64
            );
        }
        // Its bits by hand: p = 0.75 = 0.11₂ is U < 0.75; with a source whose first word is
        // 0b10… (U = 0.5) it is true, 0b11… (U = 0.75) false.
        struct Word(u64);
        impl rand::RngCore for Word {
            fn next_u32(&mut self) -> u32 {
                (self.0 >> 32) as u32
            }
            fn next_u64(&mut self) -> u64 {
                self.0
            }
            fn fill_bytes(&mut self, _: &mut [u8]) {}
        }
        assert!(bernoulli_double(&mut Word(0b10 << 62), 0.75));
        assert!(!bernoulli_double(&mut Word(0b11 << 62), 0.75));
        for (num, den) in [(0u128, 1u128), (1, 1), (7, 2), (40, 1)] {
            let gamma = num as f64 / den as f64;
            let p = 1.0 / (1.0 + gamma.exp());
            let hits = (0..n)
                .filter(|_| flip_with_odds_exp_minus(&mut rng, num, den))
                .count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            assert!(
                ((hits / n as f64) - p).abs() < 5.0 * se,
                "γ = {gamma}: {}",
                hits / n as f64
            );
        }
    }

    /// Bernoulli(n/d) by bits, by hand: 1/3 = 0.0101…₂, and U's bits are taken lowest first
    /// from each word: U = 0.0100…₂ = 0.25 < 1/3, U = 0.0110…₂ = 0.375 > 1/3.
    #[test]
    fn bernoulli_ratio_compares_bits_with_the_fraction() {
        struct Word(u64);
        impl rand::RngCore for Word {
            fn next_u32(&mut self) -> u32 {
                self.0 as u32
            }
            fn next_u64(&mut self) -> u64 {
                self.0
            }
            fn fill_bytes(&mut self, _: &mut [u8]) {}
        }
        let draw =
            |word: u64, n: u128, d: u128| bernoulli_ratio(&mut Bits::new(&mut Word(word)), n, d);
        assert!(draw(0b10, 1, 3));
        assert!(!draw(0b110, 1, 3));
        assert!(draw(0, 1, 3));
        // 1/2 = 0.1₂ terminates: U < ½ iff U's first bit is 0.
        assert!(draw(0b0, 1, 2) && !draw(0b1, 1, 2));
        assert!(draw(u64::MAX, 5, 5) && !draw(0, 0, 5));
        // A denominator near u128::MAX does not overflow: (2¹²⁷ + 1)/(2¹²⁸ − 1) ≈ ½ + 2⁻¹²⁸.
        assert!(draw(0, (1 << 127) + 1, u128::MAX) && !draw(0b1, (1 << 127) + 1, u128::MAX));
    }

    #[test]
    fn discrete_laplace_matches_its_pmf() {
        // P[X = 0] = (1 − e^{−1/t})/(1 + e^{−1/t}); t = 1: (1 − 1/e)/(1 + 1/e) = 0.4621172.
        assert!((DiscreteLaplace::new(1).unwrap().pmf(0) - 0.462_117_2).abs() < 1e-7);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for scale in [1u64, 3, 20] {
            let dist = DiscreteLaplace::new(scale).unwrap();
            let total: f64 = (-2000..=2000).map(|x| dist.pmf(x)).sum();
            assert!((total - 1.0).abs() < 1e-9, "{total}");
            let n = 200_000u64;
            let mut counts = std::collections::BTreeMap::new();
            for _ in 0..n {
                *counts.entry(dist.sample(&mut rng)).or_insert(0u64) += 1;
            }
            let (stat, df) = chi_square(&counts, n, |x| dist.pmf(x), 30 * scale as i64);
            assert!(
                stat < chi_square_bound(df),
                "t = {scale}: χ² = {stat} on {df} df"
            );
        }
        assert!(DiscreteLaplace::new(0).is_err());
    }

    #[test]
    fn discrete_gaussian_matches_its_pmf() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for variance in [1u64, 4, 50, 1000] {
            let dist = DiscreteGaussian::new(variance).unwrap();
            let n = 200_000u64;
            let mut counts = std::collections::BTreeMap::new();
            for _ in 0..n {
                *counts.entry(dist.sample(&mut rng)).or_insert(0u64) += 1;
            }
            let range = (8.0 * (variance as f64).sqrt()) as i64 + 2;
            let (stat, df) = chi_square(&counts, n, |x| dist.pmf(x), range);
            assert!(
                stat < chi_square_bound(df),
                "σ² = {variance}: χ² = {stat} on {df} df"
            );
        }
        assert!(DiscreteGaussian::new(0).is_err());
        assert!(DiscreteGaussian::new(MAX_VARIANCE + 1).is_err());
        // The largest variance draws without overflow.
        let big = DiscreteGaussian::new(MAX_VARIANCE).unwrap();
        for _ in 0..1000 {
            assert!(big.sample(&mut rng).unsigned_abs() < 64 << 20);
        }
    }
}
