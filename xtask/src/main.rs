//! `cargo xtask`: the command line over `privrl-experiments`. Parsing and dispatch live here;
//! the suites, sweeps, reports and plots are in the library.

mod check;
mod env_cmd;
mod pgc_cmd;
mod privacy_cli;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use privrl_experiments::backend::{self, BackendChoice};
use privrl_experiments::suites::{audit, dp_ppo, dpsgd, inversion, kickstart, leakage, pgc};
use privrl_experiments::{bench, doctor, quickstart, sweep, train};

/// privrl experiment runner.
///
/// Every command that draws random numbers takes `--seed`; results go to `runs/<suite>/`
/// (override the root with the PRIVRL_RUNS_DIR environment variable).
#[derive(Parser, Debug)]
#[command(name = "cargo xtask", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run every quick experiment that exists and write runs/quickstart/report.md
    /// (the README's main command; under 15 minutes on 2 cores).
    Quickstart(quickstart::QuickstartArgs),
    /// Measure throughput and write a markdown table to runs/bench/.
    Bench(bench::BenchArgs),
    /// Train PPO, DQN, REINFORCE or A3C and write run directories with learning curves.
    Train(train::TrainArgs),
    /// Run one gradient inversion attack (QGI, RGI, DLG, IG) on room samples and write
    /// `runs/attack/<method>-<setting>-seed<S>/` with a reconstruction sheet.
    Attack(inversion::AttackArgs),
    /// Reproduce a paper's experiments.
    #[command(subcommand)]
    Suite(SuiteCommand),
    /// Privacy auditing: an empirical ε lower bound (with its confidence) beside each
    /// mechanism's stated or accounted ε, for PGC's local mechanisms and white-box DP-SGD;
    /// writes results/audit/report.md (runs/audit/ with --quick).
    Audit(audit::AuditArgs),
    /// Inspect environments and replay their dynamics.
    #[command(subcommand)]
    Env(env_cmd::EnvCommand),
    /// Privacy accounting: Dirichlet mechanism (Theorem 1) and DP-SGD (RDP accountant).
    #[command(subcommand)]
    Privacy(privacy_cli::PrivacyCommand),
    /// Join the shards of a sweep that ran with `--shard i/n` on several machines.
    Merge {
        /// The suite's directory, e.g. runs/quickstart.
        suite_dir: PathBuf,
    },
    /// PGC-A3C across processes over Redis Streams: aggregator, agents, throughput.
    #[command(subcommand)]
    Pgc(pgc_cmd::PgcCommand),
    /// Check this build: `check determinism` runs seeded work twice in fresh processes and
    /// compares the files.
    #[command(subcommand)]
    Check(check::CheckCommand),
    /// Check that the chosen backend runs and computes second-order gradients.
    Doctor {
        /// Backend to check.
        #[arg(long, value_enum, default_value_t = BackendChoice::default())]
        backend: BackendChoice,
    },
}

/// The experiment suites.
#[derive(Subcommand, Debug)]
enum SuiteCommand {
    /// Gradient inversion (QGI, RGI) on the active-perception rooms: Table I and Section V-A
    /// of Li, Ding, Zhao; writes runs/inversion/report.md.
    Inversion(inversion::InversionArgs),
    /// DP-SGD and local DP for REINFORCE and DQN on CartPole-v1 (Doulazmi & Odonnat's slides):
    /// reward and convergence against the noise level, with the ε spent; writes
    /// runs/dpsgd/report.md.
    Dpsgd(dpsgd::DpsgdArgs),
    /// Privacy-preserving kickstarting (Dirichlet teacher, privacy-aware PPO students): Fig. 2
    /// of Gohari et al. with a privacy ledger; writes runs/kickstart/report.md.
    Kickstart(kickstart::KickstartArgs),
    /// Locally private distributed A3C (PGC-A3C): Tables 1–3 and Figs. 2–3 of Ono &
    /// Takahashi; writes runs/pgc/report.md.
    Pgc(pgc::PgcSuiteArgs),
    /// Gradient inversion against privatised gradients: QGI and RGI reconstruction quality
    /// under DP-SGD (σ sweep), Laplace and projected random sign (ε sweep), beside the ε and
    /// the utility of the DP-SGD and PGC suites; writes runs/leakage/report.md.
    Leakage(leakage::LeakageArgs),
    /// DP-PPO on CartPole-v1 with one episode as the unit of privacy: the privacy–utility
    /// frontier over ε per episode ∈ {0.5, 1, 2, 4, 8, ∞}, ≥ 5 seeds, resumable units;
    /// writes results/dp-ppo/report.md (runs/dp-ppo/ with --quick).
    #[command(name = "dp-ppo")]
    DpPpo(dp_ppo::DpPpoSuiteArgs),
}

/// Keeps freed buffers of up to 32 MiB for reuse instead of handing them back to the OS.
///
/// Burn's NdArray backend allocates a fresh buffer for every op. The attacks' gradients at
/// 150 × 150 px run to about 24 MB per tensor, around glibc's (dynamic) mmap threshold, and the
/// top of the heap was trimmed after each free, so op after op paid for fresh pages and their
/// faults. Fixing the mmap threshold at its maximum and trimming only past 1 GiB took a QGI
/// attack at 150 px from 4.3–4.5 to 5.8–6.5 iterations/s (`cargo xtask bench`, idle machine).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_buffers_for_reuse() {
    // SAFETY: mallopt only sets allocator tunables; it runs before any other thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// burn-ndarray's matmul is matrixmultiply's, which splits every product over
/// `MATMUL_NUM_THREADS` threads (default: all cores) and spins while they finish. At privrl's
/// sizes the hand-off costs more than it gains: on 2 cores one thread took PPO from 4756 to
/// 5511 environment steps/s and DQN from 1614 to 1789 updates/s, and left QGI at 150 px level
/// (11.28 and 11.22 iterations/s; `cargo xtask bench`). A value the user set is kept.
fn single_threaded_matmul_unless_set() {
    if std::env::var_os("MATMUL_NUM_THREADS").is_none() {
        // matrixmultiply reads the variable once, at its first product, which comes later.
        std::env::set_var("MATMUL_NUM_THREADS", "1");
    }
}

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    keep_freed_buffers_for_reuse();
    single_threaded_matmul_unless_set();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour only on a terminal: logs redirected to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Err(error) = run(Cli::parse()) {
        eprintln!("error: {error:#}");
        std::process::exit(1);
    }
}

/// A suite's headline on the terminal, after its report's path.
fn print_headline(outcome: privrl_experiments::summary::SuiteOutcome) {
    let headline = outcome.headline;
    println!(
        "headline: {}: {}\n  measured: {}",
        headline.verdict(),
        headline.effect,
        headline.measured
    );
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Quickstart(args) => quickstart::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Train(args) => train::run(args),
        Command::Attack(args) => inversion::run_attack(args).map(|_| ()),
        Command::Env(cmd) => env_cmd::run(cmd),
        Command::Audit(args) => audit::run(args).map(print_headline),
        Command::Suite(SuiteCommand::Inversion(args)) => inversion::run(args).map(print_headline),
        Command::Suite(SuiteCommand::Dpsgd(args)) => dpsgd::run(args).map(print_headline),
        Command::Suite(SuiteCommand::Kickstart(args)) => kickstart::run(args).map(print_headline),
        Command::Suite(SuiteCommand::Pgc(args)) => pgc::run(args).map(print_headline),
        Command::Suite(SuiteCommand::Leakage(args)) => leakage::run(args).map(print_headline),
        Command::Suite(SuiteCommand::DpPpo(args)) => dp_ppo::run(args).map(print_headline),
        Command::Pgc(cmd) => pgc_cmd::run(cmd),
        Command::Check(cmd) => check::run(cmd),
        Command::Privacy(cmd) => privacy_cli::run(cmd),
        Command::Merge { suite_dir } => {
            let merged = sweep::merge_shards(&suite_dir)?;
            println!("merged {}", merged.display());
            Ok(())
        }
        Command::Doctor { backend } => {
            println!("{}", backend::dispatch(backend, doctor::Doctor)?);
            Ok(())
        }
    }
}
