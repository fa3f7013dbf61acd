//! QGI (Li, Ding & Zhao) on the user's own network: the gradient comes from the user's own
//! training loop, and the attack reconstructs the private transition behind it.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::{autodiff, GradientRecord};
use privrl_attacks::{
    attack, AttackConfig, InvertibleModel, ObservationParts, Outer, Victim, VictimKind,
};
use rand::SeedableRng;

use crate::my_mlp::MyMlp;

// docs: begin qgi (docs/first-hour.md)
/// What the attacks need from `MyMlp` as a Q-network: the parts of the observation it reads
/// (a 4-value state, no images), its outputs (one Q-value per action) and its output bias.
impl<B: Backend> InvertibleModel<B> for MyMlp<B> {
    fn observation_parts(&self) -> ObservationParts {
        ObservationParts {
            rgb: None,
            depth: None,
            vector: self.hidden.dims().0,
        }
    }
    fn num_outputs(&self) -> usize {
        self.out.dims().1
    }
    fn forward_parts(
        &self,
        _rgb: Option<Tensor<B, 4>>,
        _depth: Option<Tensor<B, 4>>,
        state: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        self.forward(state.expect("observation_parts names a vector state"))
    }
    fn output_bias_name(&self) -> Option<String> {
        Some("out.bias".into())
    }
}

/// The private transition the learner trains on: state s, action a, TD target Q.
pub const STATE: [f32; 4] = [0.1, -0.4, 0.7, 0.2];
pub const ACTION: usize = 1;
pub const TARGET_Q: f32 = 0.5;

/// A DQN learner's loop shares the gradient of its TD loss on one transition; an honest but
/// curious server that knows the network (white box) reconstructs the transition from it.
pub fn steal_a_transition(
    seed: u64,
) -> Result<privrl_attacks::Reconstruction, Box<dyn std::error::Error>> {
    let device = Default::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);

    // The learner: the user's network and loss on the ordinary autodiff backend. Graphs of
    // one's own go inside an autodiff section (Burn 0.21's graph registry is process-wide).
    let learner = MyMlp::<Autodiff<NdArray>>::new(4, 16, 3, &device, &mut rng);
    let shared: GradientRecord = autodiff::exclusive(|| {
        let q = learner.forward(Tensor::from_floats([STATE], &device));
        let mut one_hot = [0.0_f32; 3];
        one_hot[ACTION] = 1.0;
        let q_of_action = (q * Tensor::from_floats([one_hot], &device)).sum_dim(1);
        // J = mean (Q̂(s, a) − Q)²: DQN's TD loss, the objective `VictimKind::Dqn` names.
        let loss = (q_of_action - Tensor::from_floats([[TARGET_Q]], &device))
            .powi_scalar(2)
            .mean();
        GradientRecord::from_grads(&learner, &loss.backward())
    });

    // The attacker: the same architecture on the nested autodiff backend `Outer` (it
    // differentiates the gradient again), holding the learner's weights.
    let victim = Victim::<NdArray, MyMlp<Outer<NdArray>>>::new(
        MyMlp::new(4, 16, 3, &device, &mut rng),
        VictimKind::Dqn,
        &device,
    )?
    .with_parameters_of(&learner)?;
    Ok(attack(
        &victim,
        &shared,
        &AttackConfig::qgi().with_iterations_per_stage(800),
    )?)
}
// docs: end qgi
