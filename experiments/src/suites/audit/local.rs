//! Audits of PGC's local mechanisms (Ono & Takahashi, Algorithms 2 and 3), per release: the
//! aggregator sees every release, so each release must be ε-LDP on its own (Lemmas 2 and 3),
//! and an audit from two adjacent inputs and many releases should find almost exactly ε.
//!
//! Adjacent inputs: in local DP any two gradients are neighbours, so the auditor picks the
//! pair that the mechanism separates most: ±10·e₁ for Laplace (clipped to ±(C/2)·e₁, the
//! largest L1 distance C), and g, −g for PRS with every coordinate of Mg at least C, so that
//! every flip runs at its full ε/d̂. The test statistic is the likelihood ratio's sufficient
//! one, and the thresholds are fixed from the mechanism's parameters before any release:
//! - Laplace: the release's first coordinate x; the privacy loss is ε exactly for x ≥ C/2,
//!   so the test "x ≥ C/2" has TPR/FPR = e^ε.
//! - PRS with M known: the number of +C coordinates of ũ (decoded from Mᵀũ); "all d̂ are +C"
//!   has TPR/FPR = (e^{ε/d̂})^{d̂} = e^ε. Every count 1..=d̂ is tried, with a union bound.
//! - PRS with M secret (privrl's PGC aggregator): the sign of ⟨Mᵀũ, g⟩.

use anyhow::{bail, Result};
use privrl_privacy::{
    counting_audit, CanaryScores, Epsilon, GradientMechanismConfig, ProjectionMatrix, PrsConfig,
    ThresholdAudit, ThresholdChoice,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Gradient length of the audited releases: small, so that many releases are cheap; the
/// guarantees do not depend on it.
const DIMENSION: usize = 8;

/// n releases of `input` through `release`, each scored by `score`.
fn scores_of(
    releases: u64,
    input: &[f32],
    rng: &mut ChaCha8Rng,
    mut release: impl FnMut(&[f32], &mut ChaCha8Rng) -> Result<f64>,
) -> Result<Vec<f64>> {
    (0..releases).map(|_| release(input, rng)).collect()
}

/// The counting audit at δ = 0 of releases of `held_in` against `held_out`.
fn audit(
    releases: u64,
    held_in: &[f32],
    held_out: &[f32],
    seed: u64,
    confidence: f64,
    thresholds: Vec<f64>,
    mut score: impl FnMut(&[f32], &mut ChaCha8Rng) -> Result<f64>,
) -> Result<ThresholdAudit> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let scores = CanaryScores::new(
        scores_of(releases, held_in, &mut rng, &mut score)?,
        scores_of(releases, held_out, &mut rng, &mut score)?,
    )?;
    Ok(counting_audit(
        &scores,
        0.0,
        confidence,
        &ThresholdChoice::Fixed(thresholds),
    )?)
}

/// PGC's Laplace mechanism at ε per release, as PGC builds it (C = 0.01, T = 1).
pub(super) fn laplace(
    epsilon: f64,
    releases: u64,
    seed: u64,
    confidence: f64,
) -> Result<ThresholdAudit> {
    let config = GradientMechanismConfig::laplace(Epsilon::finite(epsilon)?);
    let GradientMechanismConfig::Laplace { clip, .. } = config else {
        bail!("GradientMechanismConfig::laplace built another mechanism");
    };
    let mechanism = config.build(DIMENSION, 1)?;
    let mut g = vec![0.0f32; DIMENSION];
    g[0] = 10.0;
    let neighbour: Vec<f32> = g.iter().map(|x| -x).collect();
    audit(
        releases,
        &g,
        &neighbour,
        seed,
        confidence,
        vec![0.5 * clip],
        |input, rng| Ok(f64::from(mechanism.release(input, rng)?[0])),
    )
}

/// PGC's projected random sign at ε per release (C = 1, T = 1, d̂ by the paper's rule), with
/// the projection known to the auditor (`hidden_projection = false`) or drawn fresh and secret
/// for every release, as privrl's PGC releases it.
pub(super) fn prs(
    epsilon: f64,
    releases: u64,
    hidden_projection: bool,
    seed: u64,
    confidence: f64,
) -> Result<ThresholdAudit> {
    let config = GradientMechanismConfig::prs(Epsilon::finite(epsilon)?);
    let GradientMechanismConfig::Prs { clip, .. } = config else {
        bail!("GradientMechanismConfig::prs built another mechanism");
    };
    if hidden_projection {
        let mechanism = config.build(DIMENSION, 1)?;
        let g = vec![10.0f32; DIMENSION];
        let neighbour: Vec<f32> = g.iter().map(|x| -x).collect();
        let direction = g.clone();
        // ⟨Mᵀũ, g⟩ is 0 when the row of M is orthogonal to g, else ±(at least 10√3·C).
        return audit(
            releases,
            &g,
            &neighbour,
            seed,
            confidence,
            vec![1e-3],
            |input, rng| {
                let released = mechanism.release(input, rng)?;
                Ok(released
                    .iter()
                    .zip(&direction)
                    .map(|(&r, &d)| f64::from(r) * f64::from(d))
                    .sum())
            },
        );
    }
    // The same parameters as `GradientMechanismConfig::Prs::build`, kept as the typed
    // mechanism for its `release_with_projection`.
    let mechanism = PrsConfig {
        epsilon,
        clip,
        rounds: 1,
        dimension: DIMENSION,
        reduced_dimension: None,
        unbiased: false,
    }
    .build()?;
    let reduced = mechanism.reduced_dimension();
    let (projection, g) = auditor_projection(reduced, clip)?;
    let patterns = sign_patterns(&projection, clip);
    let neighbour: Vec<f32> = g.iter().map(|x| -x).collect();
    audit(
        releases,
        &g,
        &neighbour,
        seed,
        confidence,
        (1..=reduced).map(|k| k as f64).collect(),
        |input, rng| {
            let released = mechanism.release_with_projection(input, &projection, rng)?;
            Ok(decode_plus_count(&patterns, &released) as f64)
        },
    )
}

/// The auditor's public projection: the first Achlioptas matrix (seeds 0, 1, ...) whose
/// canary g = 10·Mᵀ1 has every coordinate of Mg at least C and whose 2^d̂ sign patterns ũ
/// have distinct images Mᵀũ (so that ũ can be read off the release).
fn auditor_projection(reduced: usize, clip: f64) -> Result<(ProjectionMatrix, Vec<f32>)> {
    for seed in 0..10_000u64 {
        let projection = ProjectionMatrix::achlioptas(reduced, DIMENSION, seed)?;
        let g: Vec<f32> = projection
            .back_project(&vec![10.0; reduced])
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let saturated = projection.project(&g).iter().all(|&u| u >= clip);
        let patterns = sign_patterns(&projection, clip);
        let separated = patterns.iter().enumerate().all(|(i, (_, a))| {
            patterns[i + 1..]
                .iter()
                .all(|(_, b)| distance(a, b) > 1e-2 * clip)
        });
        if saturated && separated {
            return Ok((projection, g));
        }
    }
    bail!("no Achlioptas projection of {reduced} rows among 10000 seeds separates the signs")
}

/// Every ũ ∈ {−C, +C}^{d̂} as (number of +C, Mᵀũ).
fn sign_patterns(projection: &ProjectionMatrix, clip: f64) -> Vec<(usize, Vec<f64>)> {
    let reduced = projection.rows();
    (0..1usize << reduced)
        .map(|bits| {
            let u: Vec<f64> = (0..reduced)
                .map(|i| if bits >> i & 1 == 1 { clip } else { -clip })
                .collect();
            (bits.count_ones() as usize, projection.back_project(&u))
        })
        .collect()
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// The number of +C coordinates of the pattern whose image is nearest the release.
fn decode_plus_count(patterns: &[(usize, Vec<f64>)], released: &[f32]) -> usize {
    let released: Vec<f64> = released.iter().map(|&x| f64::from(x)).collect();
    patterns
        .iter()
        .map(|(plus, image)| (distance(image, &released), *plus))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(0, |(_, plus)| plus)
}
