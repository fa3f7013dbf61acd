//! `--seeds`: a list of seeds, from numbers, ranges and comma-separated mixes of them.

use anyhow::{anyhow, ensure, Context, Result};
use std::collections::HashSet;
use std::str::FromStr;

/// Largest number of seeds one `--seeds` value may expand to.
const MAX_SEEDS: u64 = 1_000_000;

/// Parses `--seeds`: `3`, `0..5` (half-open), `0..=4`, `0,2,7`, or a mix such as `0..3,10`.
///
/// Order is kept; an empty range or a repeated seed is an error.
pub fn parse_seeds(spec: &str) -> Result<Vec<u64>> {
    let expected = "expected N, A..B (half-open), A..=B, or a comma-separated list of those";
    let number = |text: &str| -> Result<u64> {
        text.trim()
            .parse::<u64>()
            .map_err(|_| anyhow!("invalid seed {text:?} in --seeds {spec:?}: {expected}"))
    };
    let mut seeds = Vec::new();
    let mut seen = HashSet::new();
    for token in spec.split(',') {
        let token = token.trim();
        ensure!(
            !token.is_empty(),
            "empty item in --seeds {spec:?}: {expected}"
        );
        let (start, end) = if let Some((a, b)) = token.split_once("..=") {
            let end = number(b)?
                .checked_add(1)
                .with_context(|| format!("seed range {token:?} overflows u64"))?;
            (number(a)?, end)
        } else if let Some((a, b)) = token.split_once("..") {
            (number(a)?, number(b)?)
        } else {
            let seed = number(token)?;
            (seed, seed + 1)
        };
        ensure!(
            start < end,
            "seed range {token:?} in --seeds {spec:?} is empty (ranges are half-open: 0..5 is 0,1,2,3,4)"
        );
        ensure!(
            (seeds.len() as u64).saturating_add(end - start) <= MAX_SEEDS,
            "--seeds {spec:?} expands to more than {MAX_SEEDS} seeds"
        );
        for seed in start..end {
            ensure!(
                seen.insert(seed),
                "seed {seed} appears twice in --seeds {spec:?}"
            );
            seeds.push(seed);
        }
    }
    Ok(seeds)
}

/// A parsed `--seeds` value, usable directly as a clap argument type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

impl FromStr for Seeds {
    type Err = anyhow::Error;
    fn from_str(spec: &str) -> Result<Self> {
        parse_seeds(spec).map(Seeds)
    }
}

impl std::ops::Deref for Seeds {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seed_specs() {
        assert_eq!(parse_seeds("0..5").unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!(parse_seeds("3").unwrap(), [3]);
        assert_eq!(parse_seeds("0,2,7").unwrap(), [0, 2, 7]);
        assert_eq!(parse_seeds("1..=3, 10").unwrap(), [1, 2, 3, 10]);
        for bad in [
            "", "5..5", "5..2", "a", "0..x", "1,,2", "1,1", "0..3,2", "-1",
        ] {
            assert!(parse_seeds(bad).is_err(), "{bad:?} should be rejected");
        }
        let err = parse_seeds("5..5").unwrap_err().to_string();
        assert!(err.contains("empty"), "{err}");
        assert!(parse_seeds("0..2000000").is_err());
    }
}
