//! `--shard i/n`: one round-robin slice of a sweep, and the name of its manifest file.

use anyhow::{anyhow, ensure, Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt::{self, Display};
use std::str::FromStr;

/// One of `count` slices of a sweep, parsed from `--shard i/n` with `0 ≤ i < n`.
///
/// Items are dealt round-robin: shard `i` takes items `i, i+n, i+2n, …`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ShardFields")]
pub struct Shard {
    index: usize,
    count: usize,
}

#[derive(Deserialize)]
struct ShardFields {
    index: usize,
    count: usize,
}

impl TryFrom<ShardFields> for Shard {
    type Error = anyhow::Error;
    fn try_from(fields: ShardFields) -> Result<Self> {
        Shard::new(fields.index, fields.count)
    }
}

impl Shard {
    /// The whole sweep as a single shard, `0/1`.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; requires `count ≥ 1` and `0 ≤ index < count`.
    pub fn new(index: usize, count: usize) -> Result<Self> {
        ensure!(
            count >= 1,
            "shard count n = {count} is out of range: expected n ≥ 1"
        );
        ensure!(
            index < count,
            "shard index i = {index} is out of range for n = {count}: expected 0 ≤ i < {count} \
             (shards are numbered from 0)"
        );
        Ok(Self { index, count })
    }

    /// This shard's index `i`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of shards `n`.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether the item at position `position` of the sweep belongs to this shard.
    pub fn contains(&self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// This shard's items, dealt round-robin; pass `&items` to select references.
    pub fn select<T>(&self, items: impl IntoIterator<Item = T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(position, _)| self.contains(*position))
            .map(|(_, item)| item)
            .collect()
    }

    /// File name of this shard's manifest: `shard-<i>-of-<n>.json`.
    pub fn manifest_file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }

    /// Parses a manifest file name back into its shard.
    pub(super) fn from_manifest_file_name(name: &str) -> Option<Result<Self>> {
        let rest = name.strip_prefix("shard-")?.strip_suffix(".json")?;
        let (i, n) = rest.split_once("-of-")?;
        Some(Shard::new(i.parse().ok()?, n.parse().ok()?))
    }
}

// Order shards by (count, index) so manifests group by n.
impl PartialOrd for Shard {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Shard {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.count, self.index).cmp(&(other.count, other.index))
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self::ALL
    }
}

impl Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = anyhow::Error;
    fn from_str(text: &str) -> Result<Self> {
        let (i, n) = text
            .split_once('/')
            .with_context(|| format!("invalid --shard {text:?}: expected i/n, e.g. 0/4"))?;
        let parse = |part: &str, what: &str| {
            part.trim().parse::<usize>().with_context(|| {
                format!("invalid --shard {text:?}: {what} {part:?} is not a non-negative integer")
            })
        };
        // One flat message: clap shows only the outermost layer of an error.
        Shard::new(parse(i, "i")?, parse(n, "n")?)
            .map_err(|e| anyhow!("invalid --shard {text:?}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Seeds;
    use clap::Parser;

    #[test]
    fn seeds_and_shard_work_as_clap_arguments() {
        #[derive(Parser)]
        struct Args {
            #[arg(long, default_value = "0..3")]
            seeds: Seeds,
            #[arg(long, default_value = "0/1")]
            shard: Shard,
        }
        let args = Args::try_parse_from(["x", "--seeds", "0,4", "--shard", "1/2"]).unwrap();
        assert_eq!(*args.seeds, [0, 4]);
        assert_eq!(args.shard, Shard::new(1, 2).unwrap());
        let args = Args::try_parse_from(["x"]).unwrap();
        assert_eq!(args.seeds.0, [0, 1, 2]);
        assert_eq!(args.shard, Shard::ALL);
        let err = Args::try_parse_from(["x", "--shard", "4/4"])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("0 ≤ i < 4"), "{err}");
    }

    #[test]
    fn parses_and_validates_shards() {
        assert_eq!("2/4".parse::<Shard>().unwrap(), Shard::new(2, 4).unwrap());
        assert_eq!("2/4".parse::<Shard>().unwrap().to_string(), "2/4");
        for bad in ["4/4", "0/0", "-1/3", "1", "a/2", "1/b", "5/3"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(format!("{err:#}").contains(bad), "{bad}: {err:#}");
        }
        // Manifest names round-trip.
        let shard = Shard::new(3, 8).unwrap();
        let name = shard.manifest_file_name();
        assert_eq!(name, "shard-3-of-8.json");
        assert_eq!(
            Shard::from_manifest_file_name(&name).unwrap().unwrap(),
            shard
        );
        assert!(Shard::from_manifest_file_name("merged.json").is_none());
        // Deserialisation validates too.
        assert!(serde_json::from_str::<Shard>(r#"{"index":2,"count":2}"#).is_err());
    }

    #[test]
    fn shards_partition_items_round_robin() {
        let items: Vec<u32> = (0..10).collect();
        let parts: Vec<Vec<u32>> = (0..3)
            .map(|i| Shard::new(i, 3).unwrap().select(items.iter().copied()))
            .collect();
        assert_eq!(parts, [vec![0, 3, 6, 9], vec![1, 4, 7], vec![2, 5, 8]]);
        assert_eq!(Shard::ALL.select(&items).len(), 10);
    }
}
