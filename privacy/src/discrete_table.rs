//! A fast sampler for the discrete Gaussian N_ℤ(0, V) whose distribution is within a computed,
//! tiny total-variation distance β of the exact one: what DP-SGD's secure mode draws
//! ([`crate::GridGaussianSum`]). The exact sampler ([`crate::DiscreteGaussian`], Canonne, Kamath
//! & Steinke 2020, Algorithm 3) costs about 0.14–0.19 µs a coordinate, twenty times the
//! ziggurat, and a DP-SGD release draws one per parameter; this one costs one 64-bit word and a
//! table look-up or two, about 0.013 µs (`exact_noise_bench`;
//! bench/results/2026-11-29-noise-tables.md).
//!
//! Why a module of its own: `discrete` holds samplers whose distribution is *exactly* the one
//! the proof assumes; this one's is only within β of it, and β enters the guarantee (below).
//!
//! # Construction
//!
//! **Tables.** For a variance v ≤ 2¹⁸ one cumulative table of |X| over 0..=m, with a fair sign:
//! the weights u(0) = ρ(0)/2, u(x) = ρ(x) for x ≥ 1, ρ(x) = exp(−x²/(2v)), quantised to
//! integers a(x) that sum to exactly 2²⁵⁵. A draw reads 32 random bits (one for the sign, 31 for
//! the top of a uniform U < 2²⁵⁵), finds the first cumulative sum C(x) above U through a guide
//! table, and reads U's other 224 bits only where its top 31 tie with an entry's (probability
//! below (m + 1)·2⁻³¹). Every step is an integer comparison, so the draw's distribution is
//! exactly a/2²⁵⁵ (halved between ±x).
//!
//! The weights are computed in 256-bit fixed point (2⁻²⁵⁵ units) with *directed rounding*: for
//! every x a lower and an upper bound, lo(x) ≤ ρ(x)·2²⁵⁵ ≤ hi(x), from exp(−n) (n = ⌊x²/(2v)⌋,
//! repeated products of bounds on e⁻¹) times exp(−j/64)·exp(−g) (g < 1/64, alternating Taylor
//! series whose partial sums bracket the value; each product and quotient rounded down for lo
//! and up for hi). So the distance of the table from the truncated distribution is *computed*,
//! not estimated:
//!
//! β_table ≤ E/L + 3(m + 1)/2²⁵⁵ + τ_m,
//!
//! where L = Σ l(x) over the weights l = ⌊u_lo/2¹⁶⌋ the table is normalised from (u_lo, u_hi the
//! bounds on u·2²⁵⁵), E = Σ (⌊(u_hi − u_lo)/2¹⁶⌋ + 2) bounds Σ(ũ − l) for the true weights
//! ũ = u·2²³⁹ (two nonnegative vectors l ≤ ũ with Σ(ũ − l) ≤ E are within E/L in total variation
//! once normalised: Σ|lŨ − ũL| ≤ 2LE), 3(m + 1)/2²⁵⁵ bounds the normalisation to 2²⁵⁵ (each a(x)
//! within 3 units of l(x)·2²⁵⁵/L, the remainder, under 3(m + 1), given to x = 0), and τ_m bounds
//! the mass beyond |x| > m (the table's distance from the untruncated distribution), in closed
//! form:
//!
//! P[|X| > m] = 2 Σ_{x>m} ρ(x)/Σ_ℤ ρ ≤ 2 (v/m) e^{−m²/(2v)} / max(1, √(2πv) − 1),
//!
//! since Σ_{x>m} ρ(x) ≤ ∫_m^∞ ρ ≤ (v/m) e^{−m²/(2v)} (ρ decreasing; Mills' ratio) and
//! Σ_ℤ ρ ≥ ∫ρ − ρ(0) = √(2πv) − 1. m is the smallest support with τ_m ≤ 10⁻⁷⁵.
//!
//! **Convolution, for v > 2¹⁸.** One table would be too large for the cache, so
//! X = X₁ + w·X₂ with X₁ ~ N_ℤ(0, v₁), X₂ ~ N_ℤ(0, v₂) from two tables and integers with
//! v₁ + w²v₂ = V exactly, v₁, v₂ ≈ 3.15√V. Completing the square,
//!
//! (z − wy)²/v₁ + y²/v₂ = z²/V + (y − c)²/t²,   t² = v₁v₂/V,   c = zwv₂/V,
//!
//! so P[X = z] ∝ ρ_V(z)·Θ(z) with Θ(z) = Σ_{y∈ℤ} exp(−(y − c)²/(2t²)), and by Poisson summation
//! Θ(z) = √(2π)t Σ_{k∈ℤ} e^{−2π²t²k²} cos(2πkc) ∈ √(2π)t [1 − ε, 1 + ε] with
//! ε = 2 Σ_{k≥1} e^{−2π²t²k²} ≤ 2e^{−2π²t²}/(1 − e^{−6π²t²}). Hence P[X = z]/N_ℤ(0, V)(z) lies in
//! [(1 − ε)/(1 + ε), (1 + ε)/(1 − ε)] for every z and the total variation is at most
//! ε/(1 − ε) (the convolution theorem of Peikert 2010, Theorem 3.1, in one dimension, with its
//! smoothing-parameter bound made explicit). The parameters keep t ≥ 3: ε ≤ 1.6·10⁻⁷⁷. With
//! the two tables' own β₁, β₂ (post-processing of independent draws), the sampler's total
//! variation from N_ℤ(0, V) is at most β = β₁ + β₂ + ε/(1 − ε):
//! [`DiscreteGaussianTable::total_variation`]. Its value: 3.4·10⁻⁷¹ for one table (V ≤ 2¹⁸),
//! 6.7·10⁻⁷¹ to 7.0·10⁻⁷¹ for two (V up to 2⁴⁰; 6.8·10⁻⁷¹ at the DP-SGD suite's DQN,
//! V = 17,448,361,414); the tests check β < 10⁻⁷⁰ at every variance they build, V = 1 to 2⁴⁰.
//!
//! # What β does to the guarantee
//!
//! A mechanism whose output distribution is within total variation β of an (ε, δ)-DP one's on
//! every input is (ε, δ + (1 + e^ε)β)-DP:
//!
//! P[M̂(D) ∈ S] ≤ P[M(D) ∈ S] + β ≤ e^ε P[M(D′) ∈ S] + δ + β ≤ e^ε P[M̂(D′) ∈ S] + δ + (1 + e^ε)β.
//!
//! Total variation adds over independent coordinates
//! and, by the hybrid argument, over the adaptively chosen releases of a run, so a run of T
//! releases of d coordinates each is within d·T·β of the run with exact noise, and its printed
//! (ε, δ) holds with δ + (1 + e^ε)·d·T·β.
//!
//! privrl does not add that term to the printed δ: it is below 10⁻³³ for every run with
//! d·T ≤ 10¹⁵ coordinates and ε ≤ 50 (β < 10⁻⁷⁰, e⁵⁰ < 5.2·10²¹), and below 3·10⁻¹² at ε ≤ 100.
//! The DP-SGD suite's DQN (d = 17,410, about 1.1·10⁵ releases, ε ≈ 36.5) adds 10⁻⁴⁵.
//! [`crate::GridGaussianSum::sampler_delta`] gives the term for a run at hand.

use std::cmp::Ordering;
use std::fmt;

use rand::RngCore;

use crate::PrivacyError;

/// The largest variance drawn from one table; above it, the convolution of two.
const SINGLE_TABLE_MAX_VARIANCE: u64 = 1 << 18;

/// The largest variance accepted (as [`crate::DiscreteGaussian`]'s).
const MAX_VARIANCE: u64 = 1 << 40;

/// The tail mass each table leaves out, at most.
const TAIL_MASS: f64 = 1e-75;

/// t² = v₁v₂/V ≥ 9: the convolution's smoothing width t ≥ 3.
const MIN_SMOOTHING_SQUARED: u128 = 9;

/// The bits the weights lose before normalising (room for 2¹⁶ entries in a 256-bit sum).
const WEIGHT_SHIFT: u32 = 16;

// ---------------------------------------------------------------------------------------------
// 256-bit fixed point: an unsigned integer of four 64-bit limbs (least significant first); as a
// number in [0, 2), the integer over 2²⁵⁵.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct U256([u64; 4]);

impl Ord for U256 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.iter().rev().cmp(other.0.iter().rev())
    }
}

impl PartialOrd for U256 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// 1 in fixed point: 2²⁵⁵.
const ONE: U256 = U256([0, 0, 0, 1 << 63]);

impl U256 {
    const ZERO: Self = Self([0; 4]);

    fn from_u64(x: u64) -> Self {
        Self([x, 0, 0, 0])
    }

    /// self + other; panics on overflow (a bug: every sum here is bounded in the docs).
    fn add(self, other: Self) -> Self {
        let mut out = [0u64; 4];
        let mut carry = false;
        for (i, slot) in out.iter_mut().enumerate() {
            let (s, c1) = self.0[i].overflowing_add(other.0[i]);
            let (s, c2) = s.overflowing_add(u64::from(carry));
            *slot = s;
            carry = c1 || c2;
        }
        assert!(!carry, "U256 overflow");
        Self(out)
    }

    /// self − other, or 0 where other > self.
    fn saturating_sub(self, other: Self) -> Self {
        if other >= self {
            return Self::ZERO;
        }
        let mut out = [0u64; 4];
        let mut borrow = false;
        for (i, slot) in out.iter_mut().enumerate() {
            let (d, b1) = self.0[i].overflowing_sub(other.0[i]);
            let (d, b2) = d.overflowing_sub(u64::from(borrow));
            *slot = d;
            borrow = b1 || b2;
        }
        Self(out)
    }

    /// Bit `i` (0 = least significant).
    fn bit(&self, i: u32) -> bool {
        (self.0[(i / 64) as usize] >> (i % 64)) & 1 == 1
    }

    fn set_bit(&mut self, i: u32) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// ⌊self/2^k⌋ and whether any bit was dropped.
    fn shr(self, k: u32) -> (Self, bool) {
        let (out, dropped) = shift_right(&self.0, k);
        (Self([out[0], out[1], out[2], out[3]]), dropped)
    }

    /// self·2 (panics on overflow).
    fn shl1(self) -> Self {
        assert!(!self.bit(255), "U256 overflow");
        let mut out = [0u64; 4];
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = (self.0[i] << 1) | if i > 0 { self.0[i - 1] >> 63 } else { 0 };
        }
        Self(out)
    }

    /// ⌊self·other/2^k⌋ (or ⌈·⌉ when `up`), from the full 512-bit product; panics where the
    /// result does not fit 256 bits.
    fn mul_shr(self, other: Self, k: u32, up: bool) -> Self {
        let mut product = [0u64; 8];
        for i in 0..4 {
            let mut carry: u128 = 0;
            for j in 0..4 {
                let cur = u128::from(self.0[i]) * u128::from(other.0[j])
                    + u128::from(product[i + j])
                    + carry;
                product[i + j] = cur as u64;
                carry = cur >> 64;
            }
            product[i + 4] = carry as u64;
        }
        let (shifted, dropped) = shift_right(&product, k);
        assert!(
            shifted[4..].iter().all(|&l| l == 0),
            "U256 product overflow"
        );
        let out = Self([shifted[0], shifted[1], shifted[2], shifted[3]]);
        if up && dropped {
            out.add(Self::from_u64(1))
        } else {
            out
        }
    }

    /// ⌊self/k⌋ (or ⌈·⌉ when `up`) for k ≥ 1.
    fn div_u64(self, k: u64, up: bool) -> Self {
        let mut out = [0u64; 4];
        let mut remainder: u128 = 0;
        for i in (0..4).rev() {
            let cur = (remainder << 64) | u128::from(self.0[i]);
            out[i] = (cur / u128::from(k)) as u64;
            remainder = cur % u128::from(k);
        }
        let out = Self(out);
        if up && remainder != 0 {
            out.add(Self::from_u64(1))
        } else {
            out
        }
    }

    /// ⌊numerator·2²⁵⁵/denominator⌋ (or ⌈·⌉ when `up`) for numerator ≤ denominator, the
    /// fixed-point value of a fraction in [0, 1].
    fn fraction(numerator: u64, denominator: u64, up: bool) -> Self {
        debug_assert!(numerator <= denominator && denominator > 0);
        // numerator·2²⁵⁵ as five limbs, divided limb by limb from the top.
        let shifted = [0u64, 0, 0, numerator << 63, numerator >> 1];
        let mut quotient = [0u64; 5];
        let mut remainder: u128 = 0;
        for i in (0..5).rev() {
            let cur = (remainder << 64) | u128::from(shifted[i]);
            quotient[i] = (cur / u128::from(denominator)) as u64;
            remainder = cur % u128::from(denominator);
        }
        // numerator ≤ denominator: the quotient is at most 2²⁵⁵, four limbs.
        assert_eq!(quotient[4], 0);
        let out = Self([quotient[0], quotient[1], quotient[2], quotient[3]]);
        if up && remainder != 0 {
            out.add(Self::from_u64(1))
        } else {
            out
        }
    }

    /// ⌊2^k/self⌋ by long division, for self > 2^(k − 256) (so the quotient fits).
    fn reciprocal(self, k: u32) -> Self {
        let mut remainder = Self::ZERO;
        let mut quotient = Self::ZERO;
        for i in (0..=k).rev() {
            // remainder < self < 2²⁵⁵, so doubling it fits.
            remainder = remainder.shl1();
            if i == k {
                remainder = remainder.add(Self::from_u64(1));
            }
            if remainder >= self {
                remainder = remainder.saturating_sub(self);
                assert!(i < 256, "reciprocal overflow");
                quotient.set_bit(i);
            }
        }
        quotient
    }

    /// self as a double (rounded; for bounds that are then widened).
    fn to_f64(self) -> f64 {
        self.0
            .iter()
            .enumerate()
            .map(|(i, &limb)| limb as f64 * 2f64.powi(64 * i as i32))
            .sum()
    }
}

/// ⌊limbs/2^k⌋ (as many limbs, least significant first) and whether any bit was dropped.
fn shift_right<const N: usize>(limbs: &[u64; N], k: u32) -> ([u64; N], bool) {
    let whole = (k / 64) as usize;
    let bits = k % 64;
    let mut out = [0u64; N];
    for (i, slot) in out.iter_mut().enumerate() {
        let src = i + whole;
        if src < N {
            let high = if bits > 0 && src + 1 < N {
                limbs[src + 1] << (64 - bits)
            } else {
                0
            };
            *slot = (limbs[src] >> bits) | high;
        }
    }
    let dropped = limbs[..whole.min(N)].iter().any(|&l| l != 0)
        || (whole < N && bits > 0 && limbs[whole] & ((1u64 << bits) - 1) != 0);
    (out, dropped)
}

/// A lower and an upper bound of one fixed-point quantity.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    lo: U256,
    hi: U256,
}

impl Bounds {
    fn exact(x: U256) -> Self {
        Self { lo: x, hi: x }
    }

    /// Bounds on the product of two nonnegative quantities (fixed point).
    fn mul(self, other: Self) -> Self {
        Self {
            lo: self.lo.mul_shr(other.lo, 255, false),
            hi: self.hi.mul_shr(other.hi, 255, true),
        }
    }
}

/// Bounds on exp(−f) for f ∈ [0, 1] given by bounds on f, by the alternating Taylor series
/// Σ_{k≤K} (−f)^k/k!: the terms T_k = T_{k−1}·f/k bounded from below (products and quotients
/// rounded down, at f's lower bound) and above (rounded up, at f's upper bound); the even
/// terms' sum minus the odd terms' is bracketed by (Σ_even lo − Σ_odd hi, Σ_even hi − Σ_odd lo),
/// widened by one unit for the remainder, |R_K| ≤ f^{K+1}/(K+1)!, below 2⁻²⁵⁵ for the K used
/// (`terms` = 64 for f ≤ 1: 1/65! < 2⁻²⁹⁷; 30 for f < 1/64: 2⁻¹⁸⁶/31! < 2⁻²⁹⁸).
fn exp_minus_series(f: Bounds, terms: u64) -> Bounds {
    let mut term = Bounds::exact(ONE);
    let (mut even_lo, mut even_hi) = (ONE, ONE);
    let (mut odd_lo, mut odd_hi) = (U256::ZERO, U256::ZERO);
    for k in 1..=terms {
        term = Bounds {
            lo: term.lo.mul_shr(f.lo, 255, false).div_u64(k, false),
            hi: term.hi.mul_shr(f.hi, 255, true).div_u64(k, true),
        };
        if k % 2 == 0 {
            even_lo = even_lo.add(term.lo);
            even_hi = even_hi.add(term.hi);
        } else {
            odd_lo = odd_lo.add(term.lo);
            odd_hi = odd_hi.add(term.hi);
        }
    }
    let unit = U256::from_u64(1);
    Bounds {
        lo: even_lo.saturating_sub(odd_hi).saturating_sub(unit),
        hi: even_hi.saturating_sub(odd_lo).add(unit),
    }
}

/// Bounds on ρ(x) = exp(−x²/(2v)) for 0 ≤ x ≤ `max`, in fixed point (module docs).
fn gaussian_weights(variance: u64, max: u64) -> Vec<Bounds> {
    let two_v = 2 * variance;
    let largest_exponent = (max * max) / two_v;
    // e⁻¹ and e^{−n}, n ≤ largest_exponent, by products of bounds.
    let e_minus_one = exp_minus_series(Bounds::exact(ONE), 64);
    let mut e_minus_n = vec![Bounds::exact(ONE)];
    for n in 1..=largest_exponent as usize {
        let next = e_minus_n[n - 1].mul(e_minus_one);
        e_minus_n.push(next);
    }
    // exp(−j/64), j < 64.
    let sixty_fourths: Vec<Bounds> = (0..64u64)
        .map(|j| exp_minus_series(Bounds::exact(U256::fraction(j, 64, false)), 64))
        .collect();
    (0..=max)
        .map(|x| {
            let square = x * x;
            let n = square / two_v;
            // x²/(2v) − n = r/(2v) = j/64 + r′/(128v), r′ = 64r − j·2v < 2v.
            let r = square % two_v;
            let j = (64 * r) / two_v;
            let r_fine = 64 * r - j * two_v;
            let g = Bounds {
                lo: U256::fraction(r_fine, 64 * two_v, false),
                hi: U256::fraction(r_fine, 64 * two_v, true),
            };
            e_minus_n[n as usize]
                .mul(sixty_fourths[j as usize])
                .mul(exp_minus_series(g, 30))
        })
        .collect()
}

/// P[|X| > m] for X ~ N_ℤ(0, v), bounded above in closed form (module docs), as a double.
fn tail_bound(variance: u64, m: u64) -> f64 {
    let v = variance as f64;
    let m = m as f64;
    let normaliser = ((2.0 * std::f64::consts::PI * v).sqrt() - 1.0).max(1.0);
    (2.0f64.ln() + (v / m).ln() - m * m / (2.0 * v) - normaliser.ln()).exp()
}

/// One cumulative table of |X| for X ~ N_ℤ(0, v) with a fair sign (module docs).
#[derive(Clone, PartialEq)]
struct CdfTable {
    variance: u64,
    /// The cumulative sums' top bits, ⌊C(x)/2²²⁴⌋ for C(x) = Σ_{y≤x} a(y), x = 0..=m
    /// (C(m) = 2²⁵⁵: 2³¹).
    top: Vec<u32>,
    /// C(x) in full, read only where a draw's top 31 bits tie with an entry's.
    full: Vec<U256>,
    /// guide[j]: the first x with top[x] ≥ j·2^(31 − g).
    guide: Vec<u16>,
    /// 31 − g.
    guide_shift: u32,
    /// β_table: total variation from N_ℤ(0, v), at most.
    total_variation: f64,
}

impl CdfTable {
    fn new(variance: u64) -> Self {
        // The support: the smallest m with τ_m ≤ TAIL_MASS (τ_m falls in m beyond √v).
        let sigma = (variance as f64).sqrt();
        let mut m = (sigma * (2.0 * (1.0 / TAIL_MASS).ln()).sqrt())
            .floor()
            .max(1.0) as u64;
        while m > 1 && tail_bound(variance, m - 1) <= TAIL_MASS {
            m -= 1;
        }
        while tail_bound(variance, m) > TAIL_MASS {
            m += 1;
        }
        let tail = tail_bound(variance, m);
        let entries = (m + 1) as usize;
        assert!(entries < 1 << WEIGHT_SHIFT, "table too long");
        let rho = gaussian_weights(variance, m);
        // u(0) = ρ(0)/2, u(x) = ρ(x); l = ⌊u_lo/2¹⁶⌋; e ≥ ũ − l (module docs).
        let mut weights = Vec::with_capacity(entries);
        let mut errors = U256::ZERO;
        let mut total = U256::ZERO;
        for (x, bounds) in rho.iter().enumerate() {
            let (lo, hi) = if x == 0 {
                let (lo, _) = bounds.lo.shr(1);
                let (hi, dropped) = bounds.hi.shr(1);
                (
                    lo,
                    if dropped {
                        hi.add(U256::from_u64(1))
                    } else {
                        hi
                    },
                )
            } else {
                (bounds.lo, bounds.hi)
            };
            let (l, _) = lo.shr(WEIGHT_SHIFT);
            let (gap, _) = hi.saturating_sub(lo).shr(WEIGHT_SHIFT);
            errors = errors.add(gap).add(U256::from_u64(2));
            total = total.add(l);
            weights.push(l);
        }
        // a(x) = ⌊l(x)·R/2²³⁸⌋ with R = ⌊2⁴⁹³/L⌋ (L ≥ l(0) ≈ 2²³⁸, so R < 2²⁵⁶): each within
        // 3 units of l(x)·2²⁵⁵/L, and the remainder to 2²⁵⁵ (under 3(m + 1)) given to x = 0.
        let reciprocal = total.reciprocal(493);
        let mut quantised: Vec<U256> = weights
            .iter()
            .map(|&l| l.mul_shr(reciprocal, 238, false))
            .collect();
        let sum = quantised.iter().fold(U256::ZERO, |acc, &a| acc.add(a));
        assert!(sum <= ONE, "normalised weights above 1");
        let remainder = ONE.saturating_sub(sum);
        assert!(remainder <= U256::from_u64(3 * entries as u64));
        quantised[0] = quantised[0].add(remainder);
        let mut cumulative = U256::ZERO;
        let mut top = Vec::with_capacity(entries);
        let mut full = Vec::with_capacity(entries);
        for a in quantised {
            cumulative = cumulative.add(a);
            top.push((cumulative.0[3] >> 32) as u32);
            full.push(cumulative);
        }
        assert_eq!(cumulative, ONE, "the table's total is not 2^255");
        // A guide of 2^g ≥ entries slots: about one entry scanned a draw.
        let guide_bits = (usize::BITS - (entries - 1).leading_zeros()).clamp(4, 16);
        let guide_shift = 31 - guide_bits;
        let mut guide = Vec::with_capacity(1 << guide_bits);
        let mut x = 0usize;
        for j in 0..1u32 << guide_bits {
            let start = j << guide_shift;
            while top[x] < start {
                x += 1;
            }
            guide.push(x as u16);
        }
        // β_table ≤ E/L + 3(m + 1)/2²⁵⁵ + τ_m, each widened for the doubles' rounding.
        let total_variation = (errors.to_f64() / total.to_f64()) * (1.0 + 1e-9)
            + 3.0 * entries as f64 * 2f64.powi(-255) * (1.0 + 1e-9)
            + tail * (1.0 + 1e-6);
        Self {
            variance,
            top,
            full,
            guide,
            guide_shift,
            total_variation,
        }
    }

    /// The largest |X| drawn.
    fn support(&self) -> u64 {
        self.top.len() as u64 - 1
    }

    /// One draw from 32 random bits `word` (the sign and the top 31 bits of U < 2²⁵⁵), and
    /// U's other 224 bits from `rng` only on a tie (probability below (m + 1)·2⁻³¹).
    #[inline]
    fn sample_from<R: RngCore + ?Sized>(&self, word: u32, rng: &mut R) -> i64 {
        let negative = word >> 31 == 1;
        let high = word & (u32::MAX >> 1);
        // The first x with C(x) > U, U = high·2²²⁴ + (224 more bits).
        let mut x = self.guide[(high >> self.guide_shift) as usize] as usize;
        while self.top[x] < high {
            x += 1;
        }
        if self.top[x] == high {
            let low = [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ];
            let u = U256([
                low[0],
                low[1],
                low[2],
                (u64::from(high) << 32) | (low[3] & u64::from(u32::MAX)),
            ]);
            while self.top[x] == high && u >= self.full[x] {
                x += 1;
            }
        }
        let magnitude = x as i64;
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    #[cfg(test)]
    /// The table's own probability of X = x (for tests): a(|x|)/2²⁵⁵, halved for x ≠ 0.
    fn probability(&self, x: i64) -> f64 {
        let i = x.unsigned_abs() as usize;
        if i >= self.top.len() {
            return 0.0;
        }
        let previous = if i == 0 { U256::ZERO } else { self.full[i - 1] };
        let mass = self.full[i].saturating_sub(previous).to_f64() * 2f64.powi(-255);
        if i == 0 {
            mass
        } else {
            mass / 2.0
        }
    }
}

impl fmt::Debug for CdfTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CdfTable")
            .field("variance", &self.variance)
            .field("support", &self.support())
            .field("total_variation", &self.total_variation)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Layout {
    /// V ≤ 2¹⁸: one table.
    Single(CdfTable),
    /// X₁ + w·X₂.
    Convolution {
        fine: CdfTable,
        coarse: CdfTable,
        stride: u64,
    },
}

/// The discrete Gaussian N_ℤ(0, V), P[X = x] ∝ exp(−x²/(2V)) for an integer variance parameter
/// V ∈ [1, 2⁴⁰], drawn from cumulative tables: one 64-bit word and a table look-up (two for
/// V > 2¹⁸), within total variation [`DiscreteGaussianTable::total_variation`] (about 10⁻⁷⁰)
/// of the exact distribution (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct DiscreteGaussianTable {
    variance: u64,
    layout: Layout,
    total_variation: f64,
}

impl DiscreteGaussianTable {
    /// The tables for variance V (an integer in [1, 2⁴⁰]). Building them computes every
    /// weight in 256-bit arithmetic: tens of milliseconds for the largest V.
    pub fn new(variance: u64) -> Result<Self, PrivacyError> {
        if !(1..=MAX_VARIANCE).contains(&variance) {
            return Err(PrivacyError::OutOfRange {
                name: "discrete Gaussian variance",
                value: variance as f64,
                expected: "an integer in [1, 2^40] (grid units: choose the grid so)",
            });
        }
        if variance <= SINGLE_TABLE_MAX_VARIANCE {
            let table = CdfTable::new(variance);
            return Ok(Self {
                variance,
                total_variation: table.total_variation,
                layout: Layout::Single(table),
            });
        }
        let (fine, coarse, stride) = convolution_parameters(variance);
        let (fine, coarse) = (CdfTable::new(fine), CdfTable::new(coarse));
        let smoothing = smoothing_error(fine.variance, coarse.variance, variance);
        Ok(Self {
            variance,
            total_variation: fine.total_variation
                + coarse.total_variation
                + smoothing / (1.0 - smoothing) * (1.0 + 1e-6),
            layout: Layout::Convolution {
                fine,
                coarse,
                stride,
            },
        })
    }

    /// The variance parameter V.
    pub fn variance(&self) -> u64 {
        self.variance
    }

    /// β: an upper bound on the total-variation distance between one draw's distribution and
    /// N_ℤ(0, V) (module docs: the tables' computed rounding bounds, their tails, and for
    /// V > 2¹⁸ the convolution's smoothing error).
    pub fn total_variation(&self) -> f64 {
        self.total_variation
    }

    /// One draw: one 64-bit word of `rng` (more only on a tie).
    #[inline]
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> i64 {
        let word = rng.next_u64();
        match &self.layout {
            Layout::Single(table) => table.sample_from(word as u32, rng),
            Layout::Convolution {
                fine,
                coarse,
                stride,
            } => {
                fine.sample_from(word as u32, rng)
                    + *stride as i64 * coarse.sample_from((word >> 32) as u32, rng)
            }
        }
    }

    /// `n` independent draws, one after the other (from one table, two draws a 64-bit word).
    pub fn sample_n<R: RngCore + ?Sized>(&self, rng: &mut R, n: usize) -> Vec<i64> {
        match &self.layout {
            Layout::Single(table) => {
                let mut out = Vec::with_capacity(n);
                while out.len() < n {
                    let word = rng.next_u64();
                    out.push(table.sample_from(word as u32, rng));
                    if out.len() < n {
                        out.push(table.sample_from((word >> 32) as u32, rng));
                    }
                }
                out
            }
            Layout::Convolution { .. } => (0..n).map(|_| self.sample(rng)).collect(),
        }
    }

    /// The exact N_ℤ(0, V) probability of x, in floating point (for tests and reports).
    pub fn pmf(&self, x: i64) -> f64 {
        let s2 = self.variance as f64;
        let reach = (40.0 * s2.sqrt()) as i64 + 10;
        let weight = |k: i64| (-((k as f64) * (k as f64)) / (2.0 * s2)).exp();
        let total: f64 = (-reach..=reach).map(weight).sum();
        weight(x) / total
    }
}

/// (v₁, v₂, w) with v₁ + w²v₂ = V and v₁v₂ ≥ 9V (t ≥ 3), v₁ ≈ v₂ ≈ 3.15√V (module docs).
fn convolution_parameters(variance: u64) -> (u64, u64, u64) {
    let mut k = (3.15 * (variance as f64).sqrt()).ceil() as u64;
    loop {
        let mut stride = ((variance / k) as f64).sqrt() as u64;
        while stride * stride > variance / k {
            stride -= 1;
        }
        while (stride + 1) * (stride + 1) <= variance / k {
            stride += 1;
        }
        let stride = stride.max(1);
        let coarse = (variance - k) / (stride * stride);
        let fine = variance - stride * stride * coarse;
        if coarse >= 1
            && u128::from(fine) * u128::from(coarse) >= MIN_SMOOTHING_SQUARED * u128::from(variance)
        {
            return (fine, coarse, stride);
        }
        k += k / 16 + 1;
    }
}

/// ε = 2Σ_{k≥1} e^{−2π²t²k²} ≤ 2e^{−2π²t²}/(1 − e^{−6π²t²}), t² = v₁v₂/V (module docs).
fn smoothing_error(fine: u64, coarse: u64, variance: u64) -> f64 {
    let t2 = fine as f64 * coarse as f64 / variance as f64;
    let a = 2.0 * std::f64::consts::PI * std::f64::consts::PI * t2;
    2.0 * (-a).exp() / (1.0 - (-3.0 * a).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// ⌊2²⁵⁵/e⌋, by 120-digit decimal arithmetic (Python's `decimal`), least significant limb
    /// first: 0x2f16ac6c59de6f8d_5d6f63c1482a7c86_ed4c02d55ab63b99_98125ce85283ed76.
    const E_MINUS_ONE: U256 = U256([
        0x9812_5ce8_5283_ed76,
        0xed4c_02d5_5ab6_3b99,
        0x5d6f_63c1_482a_7c86,
        0x2f16_ac6c_59de_6f8d,
    ]);

    #[test]
    fn fixed_point_arithmetic_matches_u128_and_brackets_e() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            let k = (rng.next_u64() % 100) as u32;
            let exact = u128::from(a) * u128::from(b);
            let down = U256::from_u64(a).mul_shr(U256::from_u64(b), k, false);
            let up = U256::from_u64(a).mul_shr(U256::from_u64(b), k, true);
            let floor = exact >> k;
            let ceil = floor + u128::from(floor << k != exact);
            assert_eq!(down.0[0] as u128 | (down.0[1] as u128) << 64, floor);
            assert_eq!(up.0[0] as u128 | (up.0[1] as u128) << 64, ceil);
            let divisor = rng.next_u64() % 1000 + 1;
            let q = U256::from_u64(a).div_u64(divisor, true);
            assert_eq!(q.0[0], a / divisor + u64::from(a % divisor != 0));
            // 2^k/d by long division, against u128.
            let d = (rng.next_u64() >> 1) | 1;
            assert_eq!(
                U256::from_u64(d).reciprocal(120).0[0] as u128
                    | (U256::from_u64(d).reciprocal(120).0[1] as u128) << 64,
                (1u128 << 120) / u128::from(d)
            );
        }
        // 1/3 in fixed point: ⌊2²⁵⁵/3⌋ = 0x2aaa…a, and three of its ceiling exceed 1.
        let third = U256::fraction(1, 3, false);
        assert_eq!(
            third.0,
            [
                0xaaaa_aaaa_aaaa_aaaa,
                0xaaaa_aaaa_aaaa_aaaa,
                0xaaaa_aaaa_aaaa_aaaa,
                0x2aaa_aaaa_aaaa_aaaa
            ]
        );
        let third_up = U256::fraction(1, 3, true);
        assert!(third_up.add(third_up).add(third_up) > ONE && third.add(third).add(third) < ONE);
        assert_eq!(U256::fraction(5, 5, false), ONE);
        // e⁻¹ is bracketed, within 4 units of 2⁻²⁵⁵, by the series' bounds.
        let e = exp_minus_series(Bounds::exact(ONE), 64);
        assert!(e.lo <= E_MINUS_ONE && E_MINUS_ONE < e.hi, "{e:?}");
        assert!(e.hi.saturating_sub(e.lo) <= U256::from_u64(4 * 64), "{e:?}");
        // And exp(−50) = (e⁻¹)⁵⁰ by products: the bounds bracket the double and stay tight.
        let weights = gaussian_weights(1, 10);
        for (x, w) in weights.iter().enumerate() {
            let exact = (-((x * x) as f64) / 2.0).exp();
            let (lo, hi) = (
                w.lo.to_f64() * 2f64.powi(-255),
                w.hi.to_f64() * 2f64.powi(-255),
            );
            assert!(
                lo <= exact * (1.0 + 1e-15) && exact <= hi * (1.0 + 1e-15),
                "x = {x}"
            );
            assert!(
                w.hi.saturating_sub(w.lo) <= U256::from_u64(1 << 12),
                "x = {x}: {w:?}"
            );
        }
    }

    /// P[X = x] for X ~ N_ℤ(0, v), normalised once (|x| ≤ 40√v + 10; the rest is below
    /// 10⁻³⁰⁰), in floating point.
    fn exact_pmf(variance: u64) -> impl Fn(i64) -> f64 {
        let s2 = variance as f64;
        let reach = (40.0 * s2.sqrt()) as i64 + 10;
        let weight = move |k: i64| (-((k as f64) * (k as f64)) / (2.0 * s2)).exp();
        let total: f64 = (-reach..=reach).map(weight).sum();
        move |x| weight(x) / total
    }

    /// The χ² statistic's 1 − 1e-6 quantile, by the Wilson–Hilferty approximation (accurate to
    /// a few percent for ≥ 3 degrees of freedom): a correct sampler fails one seed in a million.
    fn chi_square_bound(df: usize) -> f64 {
        let k = df as f64;
        let z = 4.753; // Φ⁻¹(1 − 1e-6)
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    /// The table's total is exactly 2²⁵⁵ (asserted when built; here its probabilities sum to 1
    /// in doubles), each entry is the exact pmf's to 1e-13 relatively wherever that is above
    /// 1e-40 (below, the 2⁻²³⁹ units of the weights show; β accounts for them), and the
    /// closed-form tail bound τ_m is above the brute-force tail and within a
    /// factor 3 of it from m = 3σ on (v ≥ 50).
    #[test]
    fn tables_match_the_pmf_and_the_tail_bound_holds() {
        for variance in [1u64, 2, 7, 50, 1000, 1 << 18] {
            let table = CdfTable::new(variance);
            let pmf = exact_pmf(variance);
            let m = table.support() as i64;
            let total: f64 = (-m..=m).map(|x| table.probability(x)).sum();
            assert!((total - 1.0).abs() < 1e-12, "v = {variance}: {total}");
            for x in 0..=m {
                let (own, exact) = (table.probability(x), pmf(x));
                if exact > 1e-40 {
                    assert!(
                        (own / exact - 1.0).abs() < 1e-13,
                        "v = {variance}, x = {x}: {own} vs {exact}"
                    );
                }
            }
            assert_eq!(table.probability(m + 1), 0.0);
            assert!(tail_bound(variance, table.support()) <= TAIL_MASS);
            assert!(
                table.total_variation < 1e-70,
                "v = {variance}: {}",
                table.total_variation
            );
            let sigma = (variance as f64).sqrt();
            for multiple in [1.0, 2.0, 3.0, 5.0, 8.0] {
                let cut = (multiple * sigma).ceil() as i64;
                let reach = (40.0 * sigma) as i64 + 10;
                let brute: f64 = 2.0 * (cut + 1..=reach).map(&pmf).sum::<f64>();
                let bound = tail_bound(variance, cut as u64);
                assert!(
                    brute <= bound,
                    "v = {variance}, m = {cut}: {brute} > {bound}"
                );
                if multiple >= 3.0 && variance >= 50 {
                    assert!(
                        bound < 3.0 * brute,
                        "v = {variance}, m = {cut}: {bound} vs {brute}"
                    );
                }
            }
        }
    }

    /// The convolution theorem (module docs) by brute force, at widths t where its error ε is
    /// large enough to see in doubles: the exact pmf of X₁ + wX₂ is within the ratios
    /// [(1 − ε)/(1 + ε), (1 + ε)/(1 − ε)] of N_ℤ(0, v₁ + w²v₂) everywhere, and the bound is tight
    /// to a factor 4.
    #[test]
    fn a_convolution_is_within_its_smoothing_error() {
        for (fine, coarse, stride) in [(3u64, 2u64, 2u64), (5, 4, 3), (10, 10, 3), (8, 3, 5)] {
            let variance = fine + stride * stride * coarse;
            let (p1, p2, target) = (exact_pmf(fine), exact_pmf(coarse), exact_pmf(variance));
            let epsilon = smoothing_error(fine, coarse, variance);
            let reach = (30.0 * (variance as f64).sqrt()) as i64;
            let inner = (30.0 * (coarse as f64).sqrt()) as i64 + 5;
            let mut largest = 0.0f64;
            for z in -reach..=reach {
                let p: f64 = (-inner..=inner)
                    .map(|y| p1(z - stride as i64 * y) * p2(y))
                    .sum();
                let ratio = p / target(z);
                if target(z) > 1e-250 {
                    largest = largest.max((ratio - 1.0).abs());
                }
            }
            let bound = 2.0 * epsilon / (1.0 - epsilon);
            assert!(
                largest <= bound * (1.0 + 1e-6) + 1e-12,
                "{fine}, {coarse}, {stride}: {largest} > {bound}"
            );
            assert!(
                largest >= bound / 4.0,
                "{fine}, {coarse}, {stride}: {largest} ≪ {bound}"
            );
        }
        // The parameters the sampler uses: v₁ + w²v₂ = V exactly, t ≥ 3, and tables near 3.15√V.
        let mut variance = SINGLE_TABLE_MAX_VARIANCE + 1;
        while variance <= MAX_VARIANCE {
            let (fine, coarse, stride) = convolution_parameters(variance);
            assert_eq!(fine + stride * stride * coarse, variance);
            assert!(u128::from(fine) * u128::from(coarse) >= 9 * u128::from(variance));
            let root = (variance as f64).sqrt();
            assert!(
                fine as f64 <= 4.0 * root && coarse as f64 <= 4.0 * root,
                "V = {variance}"
            );
            assert!(smoothing_error(fine, coarse, variance) < 1e-76);
            variance = variance * 21 / 16 + 1;
        }
    }

    /// Pearson's χ² of draws against the exact pmf, over bins of width ⌈σ/8⌉ on |x| ≤ 6σ with
    /// expected count ≥ 5 (the rest pooled), at a fixed seed and a false-alarm rate of 1e-6 per
    /// variance: single tables (V ≤ 2¹⁸) and convolutions, up to the DQN grid's V.
    #[test]
    fn draws_match_the_exact_pmf() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for variance in [
            1u64,
            4,
            50,
            1000,
            1 << 18,
            (1 << 18) + 1,
            1_000_000,
            17_444_872_283,
        ] {
            let sampler = DiscreteGaussianTable::new(variance).unwrap();
            assert!(
                sampler.total_variation() < 1e-70,
                "{}",
                sampler.total_variation()
            );
            let pmf = exact_pmf(variance);
            let sigma = (variance as f64).sqrt();
            let width = ((sigma / 8.0).ceil() as i64).max(1);
            let reach = (6.0 * sigma).ceil() as i64 + 1;
            // Bins 0..bins over |x| ≤ reach; slot `bins` pools everything beyond.
            let bins = 2 * reach / width + 1;
            let bin = |x: i64| (x + reach) / width;
            let n = 200_000usize;
            let mut counts = vec![0u64; bins as usize + 1];
            for _ in 0..n {
                let x = sampler.sample(&mut rng);
                if x.abs() <= reach {
                    counts[bin(x) as usize] += 1;
                } else {
                    counts[bins as usize] += 1; // outside: pooled
                }
            }
            let mut expected = vec![0.0f64; bins as usize + 1];
            for x in -reach..=reach {
                expected[bin(x) as usize] += n as f64 * pmf(x);
            }
            let inside: f64 = expected.iter().sum();
            expected[bins as usize] += n as f64 - inside;
            let (mut stat, mut cells, mut pooled_o, mut pooled_e) = (0.0, 0usize, 0.0, 0.0);
            for (&o, &e) in counts.iter().zip(&expected) {
                if e >= 5.0 {
                    stat += (o as f64 - e).powi(2) / e;
                    cells += 1;
                } else {
                    pooled_o += o as f64;
                    pooled_e += e;
                }
            }
            if pooled_e >= 5.0 {
                stat += (pooled_o - pooled_e).powi(2) / pooled_e;
                cells += 1;
            }
            let df = cells - 1;
            assert!(
                stat < chi_square_bound(df),
                "V = {variance}: χ² = {stat} on {df} df"
            );
        }
        assert!(DiscreteGaussianTable::new(0).is_err());
        assert!(DiscreteGaussianTable::new(MAX_VARIANCE + 1).is_err());
        let largest = DiscreteGaussianTable::new(MAX_VARIANCE).unwrap();
        assert!(
            largest.total_variation() < 1e-70,
            "{}",
            largest.total_variation()
        );
    }

    /// A draw ties a table entry's top 31 bits only with probability below (m + 1)·2⁻³¹; a
    /// source that forces ties exercises the full 255-bit comparison: the draw is still the
    /// first x with C(x) > U.
    #[test]
    fn ties_are_decided_by_the_low_bits() {
        let table = CdfTable::new(50);
        struct Words(Vec<u64>);
        impl RngCore for Words {
            fn next_u32(&mut self) -> u32 {
                self.next_u64() as u32
            }
            fn next_u64(&mut self) -> u64 {
                self.0.remove(0)
            }
            fn fill_bytes(&mut self, _: &mut [u8]) {}
        }
        // U = C(x) + offset: the 32-bit word (sign, top 31 bits) and the 224 bits after it.
        let draw = |x: usize, offset: i64, negative: bool| {
            let u = if offset >= 0 {
                table.full[x].add(U256::from_u64(offset as u64))
            } else {
                table.full[x].saturating_sub(U256::from_u64(offset.unsigned_abs()))
            };
            let word = (u.0[3] >> 32) as u32 | if negative { 1 << 31 } else { 0 };
            let low = vec![u.0[0], u.0[1], u.0[2], u.0[3] & u64::from(u32::MAX)];
            table.sample_from(word, &mut Words(low))
        };
        for x in [0usize, 1, 5, 20] {
            assert_eq!(
                draw(x, 0, false),
                x as i64 + 1,
                "U = C({x}) is not below C({x})"
            );
            assert_eq!(draw(x, -1, false), x as i64, "U = C({x}) − 1");
            assert_eq!(draw(x, 1, false), x as i64 + 1);
            assert_eq!(draw(x + 1, -1, true), -(x as i64 + 1));
        }
    }
}
