//! `--noise-rng`: where the privacy mechanisms of a suite draw their noise
//! ([`privrl_privacy::NoiseMode`]).

use clap::ValueEnum;
use privrl_privacy::NoiseMode;
use serde::{Deserialize, Serialize};

/// The `--noise-rng` choice.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseRng {
    /// ChaCha20 from the run's seed: the run repeats bit for bit, and the seed predicts the
    /// noise (research).
    #[default]
    Seeded,
    /// The operating system's CSPRNG: nothing predicts the noise, the run does not repeat,
    /// and no noise seed is written (deployment).
    Secure,
}

impl From<NoiseRng> for NoiseMode {
    fn from(choice: NoiseRng) -> Self {
        match choice {
            NoiseRng::Seeded => NoiseMode::Seeded,
            NoiseRng::Secure => NoiseMode::Secure,
        }
    }
}

impl NoiseRng {
    /// The library's mode.
    pub fn mode(self) -> NoiseMode {
        self.into()
    }

    /// What the report's reproduce command appends: nothing for the default.
    pub fn reproduce_flag(self) -> &'static str {
        match self {
            NoiseRng::Seeded => "",
            NoiseRng::Secure => " --noise-rng secure",
        }
    }

    /// The report's line on it.
    pub fn report_line(self) -> String {
        format!("Noise randomness: {}.", self.mode().describe())
    }
}
