//! The backend switch: library crates stay generic, and only here is a concrete backend named.

use anyhow::Result;
use burn::tensor::backend::Backend;
use clap::ValueEnum;
use serde::Serialize;

/// Which Burn backend a command runs on.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CPU through burn-ndarray (multi-threaded; SIMD off, see docs/determinism.md).
    Ndarray,
    /// GPU through burn-wgpu (Vulkan, Metal or DX12; Mesa's lavapipe gives a CPU Vulkan).
    Wgpu,
}

impl Default for BackendChoice {
    fn default() -> Self {
        if cfg!(feature = "ndarray") {
            BackendChoice::Ndarray
        } else {
            BackendChoice::Wgpu
        }
    }
}

impl std::fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendChoice::Ndarray => "ndarray",
            BackendChoice::Wgpu => "wgpu",
        })
    }
}

/// Work that is written once, generic over the backend, and run on the one chosen at run time.
pub trait BackendTask {
    /// What the work returns.
    type Output;
    /// Runs the work on the plain backend `B`; the task wraps it in `Autodiff<B>` (training) or
    /// `Autodiff<Autodiff<B>>` (second-order attacks) as it needs.
    fn run<B: Backend>(self, device: B::Device) -> Result<Self::Output>;
}

/// Runs `task` on the chosen backend, or explains which cargo feature is missing.
pub fn dispatch<T: BackendTask>(choice: BackendChoice, task: T) -> Result<T::Output> {
    match choice {
        BackendChoice::Ndarray => {
            #[cfg(feature = "ndarray")]
            return task.run::<burn::backend::NdArray>(Default::default());
            #[cfg(not(feature = "ndarray"))]
            {
                let _ = task;
                anyhow::bail!("--backend ndarray: this build lacks the `ndarray` feature; rebuild with `--features ndarray`")
            }
        }
        BackendChoice::Wgpu => {
            #[cfg(feature = "wgpu")]
            return task
                .run::<privrl_agents::WgpuBackend>(burn::backend::wgpu::WgpuDevice::default());
            #[cfg(not(feature = "wgpu"))]
            {
                let _ = task;
                anyhow::bail!("--backend wgpu: this build lacks the `wgpu` feature; use `cargo xtask-wgpu ...` (see README)")
            }
        }
    }
}
