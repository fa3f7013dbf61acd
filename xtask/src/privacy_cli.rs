//! `cargo xtask privacy ...`: privacy accounting from the command line.
//!
//! * `privacy dirichlet`: ε (eq. 12) and δ (eq. 6, Monte Carlo as eq. 13, exact for m = 2) of the
//!   Dirichlet mechanism composed with an L-Lipschitz policy (Theorem 1 of Gohari et al.), and
//!   the concentration k that meets a target ε.
//! * `privacy dpsgd`: ε of DP-SGD (Poisson-subsampled Gaussian) under add/remove or
//!   substitution adjacency, by the RDP accountant (Opacus' orders and the Balle et al. 2020
//!   conversion; the default) or the PLD accountant (`--accountant pld`: tighter, an upper bound
//!   as tight as its grid), or the noise multiplier for a target ε (RDP).

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use privrl_privacy::{
    dp_sgd_epsilon_under, noise_multiplier_for_under, AccountantKind, Adjacency, DeltaMethod,
    DirichletConfig, MechanismRng, RandomnessSource,
};
use privrl_privacy::{PldConfig, PrivacyLossDistribution};

/// Privacy accounting commands.
#[derive(Debug, Subcommand)]
pub enum PrivacyCommand {
    /// (ε, δ) of the Dirichlet mechanism on an L-Lipschitz policy (Theorem 1), or the k for a
    /// target ε.
    Dirichlet(DirichletArgs),
    /// ε of DP-SGD under the RDP (default) or PLD accountant, or the noise multiplier for a
    /// target ε.
    Dpsgd(DpsgdArgs),
}

/// Arguments of `privacy dirichlet`.
#[derive(Debug, Args)]
pub struct DirichletArgs {
    /// Number of actions m (>= 2): the policy is a probability vector over m actions.
    #[arg(long)]
    pub m: usize,
    /// Lipschitz constant L (> 0) of the policy network in the 2-norm, e.g. from
    /// privrl_privacy::mlp_lipschitz_bound.
    #[arg(long)]
    pub lipschitz: f64,
    /// Adjacency radius b (> 0): observations within 2-norm distance b are neighbours.
    #[arg(long)]
    pub b: f64,
    /// Concentration k (>= 0) of Dir(k·π); larger k is more accurate and less private; 0 shares
    /// a uniformly random policy. Optional when --target-eps is given.
    #[arg(long)]
    pub k: Option<f64>,
    /// τ in (0, 1/m): outputs with an entry below τ count towards δ (eq. 6).
    #[arg(long)]
    pub tau: f64,
    /// η in (0, 1/m): every entry of the policy is at least η (the restricted simplex).
    #[arg(long)]
    pub eta: f64,
    /// Monte Carlo draws for δ when m > 2 (eq. 13).
    #[arg(long, default_value_t = 1_000_000)]
    pub samples: usize,
    /// Confidence level in (0, 1) of the one-sided (Clopper–Pearson) upper bound on a Monte
    /// Carlo δ; the default 1 − 1e-9 makes the accounted δ fail to cover the truth with
    /// probability at most 1e-9.
    #[arg(long, default_value_t = privrl_privacy::DELTA_CONFIDENCE)]
    pub confidence: f64,
    /// Solve for the largest k whose ε (eq. 12) is at most this value (> 0), and report δ there.
    #[arg(long)]
    pub target_eps: Option<f64>,
    /// Seed of the Monte Carlo draws (ignored with --secure).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Draw the Monte Carlo samples from the operating system's CSPRNG instead of the seed.
    #[arg(long)]
    pub secure: bool,
}

/// Arguments of `privacy dpsgd`.
#[derive(Debug, Args)]
pub struct DpsgdArgs {
    /// Poisson sampling rate q in (0, 1]: batch size / dataset size.
    #[arg(long)]
    pub q: f64,
    /// Noise multiplier σ (> 0): noise std / clipping norm. Optional when --target-eps is given.
    #[arg(long)]
    pub sigma: Option<f64>,
    /// Number of noisy gradient steps (>= 1).
    #[arg(long)]
    pub steps: u64,
    /// δ in (0, 1) of the reported (ε, δ) guarantee, typically below 1/dataset size.
    #[arg(long)]
    pub delta: f64,
    /// Report the smallest noise multiplier σ whose ε after --steps steps at --q and --delta
    /// is at most this value (> 0), as Opacus' `make_private_with_epsilon` calibrates it
    /// (bisection over σ with the same RDP accountant, to a relative 1e-6, rounded up).
    #[arg(long, visible_alias = "target-epsilon")]
    pub target_eps: Option<f64>,
    /// Neighbouring datasets: `add-remove` (one record added or removed; Opacus' default) or
    /// `substitution` (one record replaced: a conservative bound, exact at q = 1, and larger).
    #[arg(long, default_value_t = Adjacency::AddRemove)]
    pub adjacency: Adjacency,
    /// Which accountant gives ε: `rdp` or `pld`. `rdp` (default): Rényi DP with Opacus' orders, as Opacus
    /// reports it. `pld`: the privacy loss distribution accountant (as Google's dp-accounting),
    /// a pessimistic discretisation composed by FFT: an upper bound on the true ε, tighter than
    /// RDP (by a few % to tens of %), slower (up to seconds). --target-eps always calibrates σ
    /// with RDP.
    #[arg(long, default_value_t = AccountantKind::Rdp)]
    pub accountant: AccountantKind,
    /// Grid interval of the privacy loss for `--accountant pld`, in nats (> 0): smaller is
    /// tighter and slower; it is widened automatically when the distribution would not fit 2^21
    /// points (the interval used is printed).
    #[arg(long, default_value_t = PldConfig::default().value_discretization_interval)]
    pub pld_interval: f64,
}

/// Runs a privacy command and prints its result.
pub fn run(cmd: PrivacyCommand) -> anyhow::Result<()> {
    match cmd {
        PrivacyCommand::Dirichlet(args) => dirichlet(args),
        PrivacyCommand::Dpsgd(args) => dpsgd(args),
    }
}

fn dirichlet(args: DirichletArgs) -> anyhow::Result<()> {
    if args.k.is_none() && args.target_eps.is_none() {
        bail!("give --k, --target-eps, or both");
    }
    let base = DirichletConfig {
        actions: args.m,
        concentration: args.k.unwrap_or(1.0),
        eta: args.eta,
        tau: args.tau,
        lipschitz: args.lipschitz,
        adjacency: args.b,
    }
    .build()
    .context("invalid Dirichlet mechanism parameters")?;
    let source = if args.secure {
        RandomnessSource::Secure
    } else {
        RandomnessSource::Seeded(args.seed)
    };
    let mut rng = MechanismRng::new(source)?;

    let mut ks = Vec::new();
    if let Some(k) = args.k {
        ks.push(("k", k));
    }
    if let Some(target) = args.target_eps {
        let k = base
            .solve_concentration(target)
            .context("solving eq. 12 for k")?;
        // k rounded down (less accurate, more private): the printed k, used again, stays
        // within the target, and δ below is computed at it.
        let k = floor6(k);
        println!("target epsilon {target}: largest k = {k:.6}");
        ks.push(("solved k", k));
    }
    for (label, k) in ks {
        let privacy = base.with_concentration(k)?;
        let delta = privacy.delta(args.samples, args.confidence, &mut rng)?;
        let how = match delta.method {
            DeltaMethod::Exact => "exact".to_string(),
            DeltaMethod::MonteCarlo => {
                format!(
                    "Monte Carlo, {} draws, one-sided Clopper-Pearson bound, miss probability {:.0e}",
                    delta.samples,
                    1.0 - delta.confidence
                )
            }
        };
        let shown = format!("{k:.6}");
        println!(
            "{label} = {shown}: epsilon = {} (eq. 12)",
            up6(privacy.epsilon())
        );
        println!(
            "{label} = {shown}: delta = {:.6} + {:.6} ({how}); account with delta <= {}",
            delta.delta,
            delta.margin,
            up6(delta.upper())
        );
        if delta.upper() >= 1.0 {
            println!("{label} = {shown}: delta >= 1 means no guarantee: raise k or lower tau");
        }
    }
    Ok(())
}

fn dpsgd(args: DpsgdArgs) -> anyhow::Result<()> {
    if args.sigma.is_none() && args.target_eps.is_none() {
        bail!("give --sigma, --target-eps, or both");
    }
    let adjacency = args.adjacency;
    let mut sigmas: Vec<f64> = args.sigma.into_iter().collect();
    if let Some(target) = args.target_eps {
        let sigma = noise_multiplier_for_under(adjacency, target, args.delta, args.q, args.steps)
            .context("solving for the noise multiplier")?;
        // σ rounded up (more noise), ε up: the printed σ, used again, stays within the target.
        let sigma = ceil6(sigma);
        let eps = dp_sgd_epsilon_under(adjacency, args.q, sigma, args.steps, args.delta)?;
        println!(
            "target epsilon {target}: noise multiplier sigma = {sigma:.6} (epsilon = {} at \
             delta = {}, {} adjacency, RDP accountant)",
            up6(eps),
            args.delta,
            adjacency.name()
        );
        // The PLD's ε at that σ, which is lower: what the run spends by the tighter account.
        if args.accountant == AccountantKind::Pld {
            sigmas.push(sigma);
        }
    }
    for sigma in sigmas {
        let (eps, accountant) = match args.accountant {
            AccountantKind::Rdp => (
                dp_sgd_epsilon_under(adjacency, args.q, sigma, args.steps, args.delta)
                    .context("RDP accounting")?,
                "RDP accountant".to_string(),
            ),
            AccountantKind::Pld => pld_epsilon(&args, sigma)?,
        };
        println!(
            "q = {}, sigma = {sigma}, steps = {}: epsilon = {} at delta = {}, {} \
             adjacency ({accountant})",
            args.q,
            args.steps,
            up6(eps),
            args.delta,
            adjacency.name()
        );
    }
    Ok(())
}

/// Printed figures lean the conservative way (six decimals): ε and δ up, a noise multiplier
/// up, a concentration k down, so that a printed value is a guarantee and reusing it never
/// overshoots the target it was solved for. (Rounding to nearest printed σ and k that, used
/// again, exceeded their target ε.)
fn ceil6(x: f64) -> f64 {
    to_six_decimals(x, f64::ceil)
}

fn up6(x: f64) -> String {
    format!("{:.6}", ceil6(x))
}

fn floor6(x: f64) -> f64 {
    to_six_decimals(x, f64::floor)
}

/// `x` rounded to six decimals by `round` (ceil or floor); ±∞ and NaN as they are.
fn to_six_decimals(x: f64, round: fn(f64) -> f64) -> f64 {
    if x.is_finite() {
        round(x * 1e6) / 1e6
    } else {
        x
    }
}

/// ε by the PLD accountant, and the words that say so (with the grid interval used).
fn pld_epsilon(args: &DpsgdArgs, sigma: f64) -> anyhow::Result<(f64, String)> {
    let config = PldConfig::default().with_interval(args.pld_interval);
    let pld = PrivacyLossDistribution::dp_sgd(args.adjacency, args.q, sigma, args.steps, &config)
        .context("PLD accounting")?;
    let eps = pld.epsilon(args.delta).context("PLD accounting")?;
    Ok((
        eps,
        format!(
            "PLD accountant, grid interval {:e}",
            pld.discretization_interval()
        ),
    ))
}
