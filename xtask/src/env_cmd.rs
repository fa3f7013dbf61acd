//! `cargo xtask env ...`: inspect the environments and replay their dynamics.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use privrl_envs::{make, registry};
use serde::Serialize;

/// Environment commands.
#[derive(Subcommand, Debug)]
pub enum EnvCommand {
    /// List the environments with their observation and action spaces.
    List,
    /// Replay actions from a given physical state and print every step as JSON, so the
    /// dynamics can be compared with another implementation (e.g. Gymnasium).
    Replay(ReplayArgs),
    /// Write a PNG sample sheet of the active-perception room layouts (RGB, depth, target box).
    Rooms(privrl_experiments::room_sheet::RoomSheetArgs),
}

/// Arguments of `env replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Environment name, e.g. `cartpole-v1` (see `cargo xtask env list`).
    #[arg(long)]
    pub env: String,
    /// Physical start state as a comma list, in Gymnasium's `env.unwrapped.state` order
    /// (CartPole: x,x_dot,theta,theta_dot).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        required = true
    )]
    pub state: Vec<f64>,
    /// Discrete actions to apply, as a comma list, e.g. `0,1,1,0`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub actions: Vec<usize>,
}

#[derive(Serialize)]
struct ReplayStep {
    obs: Vec<f32>,
    reward: f64,
    terminated: bool,
    truncated: bool,
}

/// Runs an environment command.
pub fn run(cmd: EnvCommand) -> Result<()> {
    match cmd {
        EnvCommand::List => {
            println!(
                "{:<16} {:<16} {:<34} {:<14} {:>9}",
                "name", "gymnasium id", "observation space", "action space", "max steps"
            );
            for spec in registry() {
                println!(
                    "{:<16} {:<16} {:<34} {:<14} {:>9}",
                    spec.name,
                    spec.gymnasium_id,
                    spec.observation_space.to_string(),
                    spec.action_space.to_string(),
                    spec.max_episode_steps
                        .map_or("-".to_string(), |s| s.to_string())
                );
            }
            Ok(())
        }
        EnvCommand::Rooms(args) => privrl_experiments::room_sheet::run(args),
        EnvCommand::Replay(args) => {
            let steps = replay(&args)?;
            println!("{}", serde_json::to_string_pretty(&steps)?);
            Ok(())
        }
    }
}

fn replay(args: &ReplayArgs) -> Result<Vec<ReplayStep>> {
    let mut env = make(&args.env)?;
    env.set_state(&args.state)
        .with_context(|| format!("--state for {}", args.env))?;
    args.actions
        .iter()
        .enumerate()
        .map(|(t, &action)| {
            let step = env
                .step(action)
                .with_context(|| format!("--actions: step {t} (action {action})"))?;
            Ok(ReplayStep {
                obs: step.obs.to_flat(),
                reward: step.reward,
                terminated: step.terminated,
                truncated: step.truncated,
            })
        })
        .collect()
}
