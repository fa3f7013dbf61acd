//! `suite inversion`'s command-line arguments and the plan they resolve to (what each run's
//! `config.json` records).

use clap::Args;
use serde::Serialize;

use privrl_attacks::ImageNormalisation;
use privrl_envs::room::RoomSetting;

use super::attack::SettingArg;
use crate::backend::BackendChoice;

/// Arguments of `suite inversion`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct InversionArgs {
    /// Quick mode: 16×16 images, 4 samples, 300 iterations per stage, TV weight 0.01.
    #[arg(long)]
    pub quick: bool,
    /// Samples per (attack, setting); the paper uses 240 (every layout twice). Default 4
    /// quick, 40 otherwise.
    #[arg(long)]
    pub samples: Option<usize>,
    /// Image size in pixels (the paper: 150). Default 16 quick, 32 otherwise.
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Optimisation iterations per stage (the paper: 2×10⁴). Default 300 quick, 2000 otherwise.
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Weight λ of the TV prior (the paper: 0.1). Default 0.01 quick (TV over-smooths tiny
    /// images), 0.1 otherwise.
    #[arg(long)]
    pub tv_weight: Option<f64>,
    /// Seed of the samples, the victims' initialisation and the attacks' Gaussian init.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Skip Table II's baselines (DLG, Inverting Gradients) and Fig. 4's joint ablation.
    #[arg(long)]
    pub skip_ablations: bool,
    /// Victim encoder widths, comma-separated; the first is the main victim (Table II's
    /// ablation, the headline). `paper`: the feature-to-pixel ratios of the paper's DQN
    /// encoder at 150 px; `wide`: 16 and 32 channels (an extra row: its features
    /// over-determine the depth image). Default `paper` quick, `paper,wide` otherwise.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub victims: Option<Vec<VictimWidth>>,
    /// How reconstructions are mapped to [0, 1] before scoring. `paper`: S1 scales the RGB
    /// image so its brightest pixel is 1 and depth by the same factor (Section V, "Metric"),
    /// S2 only clamps (the paper states no rescaling without RGB); `clamp`: clamp both.
    #[arg(long, value_enum, default_value_t = NormalisationArg::Paper)]
    pub normalisation: NormalisationArg,
    /// Worker threads (0: one per core); each runs one (attack, setting).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Room settings to attack, comma-separated (`s1`: RGB + depth, `s2`: depth only); Table
    /// II's ablation runs with S1. Default both.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub settings: Option<Vec<SettingArg>>,
    /// Convergence study: run the plan once per iteration budget (comma-separated, e.g.
    /// `1000,4000,20000`), each in `<results-dir>/iterations-<N>/`, and write
    /// `convergence.md` with the scores against the budget. Choose the budget of a table
    /// from other samples (`--seed`) than the ones the table judges.
    #[arg(long, value_delimiter = ',')]
    pub convergence: Option<Vec<usize>>,
    /// Directory of the attack cells' run directories and the report (e.g.
    /// `results/inversion`). A cell whose directory already holds a finished run of the same
    /// plan is read back, not attacked again, so an interrupted run resumes. Default
    /// `runs/inversion`.
    #[arg(long)]
    pub results_dir: Option<std::path::PathBuf>,
    /// Which of the sampled views are attacked. `balanced`: the same number of each room type
    /// (10 of each of the four at 40 samples; the paper attacks every layout twice, so its
    /// types are balanced too); `first`: the first views that show the target, whatever their
    /// type (how the runs before the balanced rule chose, kept so that they reproduce).
    #[arg(long, value_enum, default_value_t = RoomSelection::Balanced)]
    pub rooms: RoomSelection,
    /// Samples attacked in one optimisation: the single-sample gradients of each consecutive
    /// N samples of a cell are attacked together, stacked on a batch axis, each matched
    /// against its own gradient (`privrl_attacks::attack_each`; QGI, RGI and the ablations
    /// that use eq. 6; DLG and Inverting Gradients always attack one at a time). Each
    /// sample's result equals its attack alone to float rounding, so a cell finished at
    /// another N (the cells committed before this flag ran one at a time) is read back, and
    /// its config.json records the N it ran with (absent: 1). Same seed, same bytes for the
    /// same N. 1 attacks one sample at a time.
    #[arg(long, default_value_t = DEFAULT_ATTACK_BATCH, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub attack_batch: usize,
}

/// `--attack-batch`'s default: samples attacked in one optimisation.
pub const DEFAULT_ATTACK_BATCH: usize = 16;

/// `--rooms`: how the attacked views are chosen among the sampled ones that show the target.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RoomSelection {
    /// Round robin over the room types: their counts differ by at most one.
    #[default]
    Balanced,
    /// The first views in sampling order (the rule of the runs made before `balanced`).
    First,
}

impl RoomSelection {
    /// The rule of the runs that predate the field: their `config.json` has none, and a plan
    /// with this rule writes none, so they are read back as finished.
    pub(crate) fn is_first(&self) -> bool {
        *self == RoomSelection::First
    }
}

/// `--normalisation`: how reconstructions are mapped to [0, 1] before scoring.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NormalisationArg {
    /// The paper's rule in S1 (brightest RGB pixel to 1, depth by the same factor); clamp in S2.
    Paper,
    /// Clamp every value to [0, 1].
    Clamp,
}

impl NormalisationArg {
    /// The normalisation of one setting.
    pub(crate) fn of(self, setting: RoomSetting) -> ImageNormalisation {
        match self {
            NormalisationArg::Paper => paper_normalisation(setting),
            NormalisationArg::Clamp => ImageNormalisation::Clamp,
        }
    }
}

/// Entropy weight α of the REINFORCE victim (eq. 4); the paper does not state it.
pub(crate) const ENTROPY_WEIGHT: f64 = 0.01;

/// Resolved parameters of one suite run (what `config.json` records).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InversionPlan {
    pub(crate) samples: usize,
    pub(crate) image_size: usize,
    pub(crate) iterations: usize,
    pub(crate) tv_weight: f64,
    pub(crate) seed: u64,
    pub(crate) backend: BackendChoice,
    /// Entropy weight α of the REINFORCE victim (eq. 4); the paper does not state it.
    pub(crate) entropy_weight: f64,
    /// How the attacked views were chosen (absent from the configs of the runs that predate it,
    /// which chose the first views).
    #[serde(skip_serializing_if = "RoomSelection::is_first")]
    pub(crate) rooms: RoomSelection,
}

impl InversionArgs {
    /// `--victims`, checked: at least one, none twice.
    pub(super) fn victim_widths(&self) -> anyhow::Result<Vec<VictimWidth>> {
        let victims = self.victims.clone().unwrap_or(if self.quick {
            vec![VictimWidth::Paper]
        } else {
            vec![VictimWidth::Paper, VictimWidth::Wide]
        });
        anyhow::ensure!(!victims.is_empty(), "--victims needs at least one width");
        let mut seen = victims.clone();
        seen.sort_by_key(|w| *w as u8);
        seen.dedup();
        anyhow::ensure!(
            seen.len() == victims.len(),
            "--victims names a width twice: {victims:?}"
        );
        Ok(victims)
    }

    /// `--settings`, checked: at least one, none twice, in the order S1, S2.
    pub(super) fn room_settings(&self) -> anyhow::Result<Vec<RoomSetting>> {
        let Some(settings) = &self.settings else {
            return Ok(vec![RoomSetting::S1, RoomSetting::S2]);
        };
        anyhow::ensure!(
            !settings.is_empty(),
            "--settings needs at least one setting"
        );
        let chosen: Vec<RoomSetting> = [RoomSetting::S1, RoomSetting::S2]
            .into_iter()
            .filter(|s| settings.iter().any(|a| RoomSetting::from(*a) == *s))
            .collect();
        anyhow::ensure!(
            chosen.len() == settings.len(),
            "--settings names a setting twice: {settings:?}"
        );
        Ok(chosen)
    }

    pub(super) fn plan(&self) -> InversionPlan {
        let pick =
            |v: Option<usize>, quick, full| v.unwrap_or(if self.quick { quick } else { full });
        InversionPlan {
            samples: pick(self.samples, 4, 40),
            image_size: pick(self.image_size, 16, 32),
            iterations: pick(self.iterations, 300, 2000),
            tv_weight: self
                .tv_weight
                .unwrap_or(if self.quick { 0.01 } else { 0.1 }),
            seed: self.seed,
            backend: self.backend,
            entropy_weight: ENTROPY_WEIGHT,
            rooms: self.rooms,
        }
    }
}

/// How wide the victim's image encoders are.
///
/// The paper gives no layer widths (Section III: convolutions over each image, Dense layers
/// over the box, concatenation, Dense layers), only that its DQN is Mnih et al.'s (its
/// reference 18). That encoder (32 8×8/4, 64 4×4/2, 64 3×3/1) on the paper's 150×150 images
/// keeps 64·15·15 = 14,400 features per image: 0.64 of the depth image's pixels and 0.21 of the RGB image's
/// values, and its first layer has 1.8 (depth) and 0.6 (RGB) outputs per input value. Stage 1
/// reconstructs those features; stage 2 must then find an image behind them, which is
/// under-determined there.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum VictimWidth {
    /// Two 3×3 stride-2 convolutions of 8 channels: the DQN encoder's ratios at the paper's
    /// resolution (first layer 2.0 / 0.67 outputs per input value, 0.5 / 0.17 features per
    /// depth / RGB value), at any image size divisible by 4.
    Paper,
    /// Two 3×3 stride-2 convolutions of 16 and 32 channels (privrl's earlier victim): 2
    /// features per depth pixel and 0.67 per RGB value, so the features stage 1 recovers
    /// over-determine the depth image. An extra row of Table I, labelled.
    Wide,
}

impl VictimWidth {
    /// Output channels of the encoder's convolutions.
    pub fn channels(self) -> Vec<usize> {
        match self {
            VictimWidth::Paper => vec![8, 8],
            VictimWidth::Wide => vec![16, 32],
        }
    }

    /// The label of its rows in the tables.
    pub fn label(self) -> &'static str {
        match self {
            VictimWidth::Paper => "paper width",
            VictimWidth::Wide => "wide (extra)",
        }
    }
}

/// The paper's image normalisation (Section V, "Metric"): in S1 the RGB reconstruction is
/// scaled so that its brightest pixel is 1 and depth by the same factor; S2 has no RGB image
/// and the paper states no rescaling for it, so S2's depth is only clamped to `[0, 1]`.
pub(crate) fn paper_normalisation(setting: RoomSetting) -> ImageNormalisation {
    match setting {
        RoomSetting::S1 => ImageNormalisation::BrightestPixel,
        RoomSetting::S2 => ImageNormalisation::Clamp,
    }
}
