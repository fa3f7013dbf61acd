//! What an attack returns: the reconstruction of a sample and the loss recorded per stage.

use serde::{Deserialize, Serialize};

use crate::victim::LinearPartInput;

/// Which optimisation a loss record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// Stage 1: the input of the linear part (vector state and conv features).
    LinearPart,
    /// Stage 2: the images, with the vector fixed.
    Images,
    /// The joint ablation: images and vector together.
    Joint,
}

/// One recorded value of the attack's loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossRecord {
    /// The stage.
    pub stage: Stage,
    /// Which restart of the stage (0-based).
    pub restart: usize,
    /// Iteration within the stage (before its Adam step).
    pub iteration: usize,
    /// Total loss: matching loss plus prior.
    pub loss: f64,
}

/// What an attack reconstructs from one shared gradient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction {
    /// RGB image, `3 × H × W`, unclamped.
    pub rgb: Option<Vec<f32>>,
    /// Depth image, `1 × H × W`, unclamped.
    pub depth: Option<Vec<f32>>,
    /// Vector state s_c.
    pub vector: Vec<f32>,
    /// Action a_rec.
    pub action: usize,
    /// Supervision signal: Q_rec (DQN) or r_rec (REINFORCE).
    pub signal: f64,
    /// Q̂_rec(s, a_rec), DQN victims only.
    pub predicted_q: Option<f64>,
    /// p_rec = π(·|s_rec), REINFORCE victims only.
    pub probabilities: Option<Vec<f32>>,
    /// The reconstructed input of the linear part from which Q̂_rec, p_rec and the signal are
    /// computed (stage 1's result; for the joint ablation, the encoders applied to the images).
    pub linear_part: LinearPartInput,
    /// The loss every `log_every` iterations.
    pub loss_history: Vec<LossRecord>,
}
