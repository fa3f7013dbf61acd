//! The optimisation loop shared by every stage: Adam on θ against the iteration's loss, from
//! `restarts` Gaussian initialisations, keeping the lowest final loss.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff;
use privrl_agents::tensor::vector;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Stage};
use super::supervision::FreeSupervision;
use super::variables::{Layout, Values};
use crate::model::InvertibleModel;
use crate::parts::gaussian_noise;
use crate::victim::{host, Inner, Outer};

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// Runs a stage `restarts` times, each from fresh Gaussian values for the blocks of
    /// `layout` followed by the carried free supervision, and keeps the run with the lowest
    /// final loss (whose supervision values it carries on); returns that loss and the values.
    pub(super) fn run_restarts(
        &self,
        stage: Stage,
        mut layout: Layout,
        supervision: &mut FreeSupervision,
        fixed_vector: Option<Tensor<Inner<B>, 2>>,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Values) {
        let free = layout.len;
        layout.append(&supervision.layout);
        let mut best: Option<(f64, Vec<f32>)> = None;
        for restart in 0..self.config.restarts {
            let mut theta = gaussian_noise(free, self.config.init_std, rng);
            theta.extend_from_slice(&supervision.values);
            let (loss, theta) = self.run_stage(
                stage,
                restart,
                &layout,
                theta,
                fixed_vector.as_ref(),
                history,
            );
            // A NaN loss never wins.
            if best.as_ref().is_none_or(|(b, _)| loss < *b || b.is_nan()) {
                best = Some((loss, theta));
            }
        }
        let (loss, theta) = best.expect("at least one restart");
        let values = Values { layout, theta };
        supervision.values = values.layout.read_all(&supervision.layout, &values.theta);
        (loss, values)
    }

    /// Runs one stage from the initial values `theta` and returns the loss at the final values
    /// together with them.
    fn run_stage(
        &self,
        stage: Stage,
        restart: usize,
        layout: &Layout,
        theta: Vec<f32>,
        fixed_vector: Option<&Tensor<Inner<B>, 2>>,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Vec<f32>) {
        let device = self.victim.device();
        let iterations = self.config.iterations_per_stage;
        let mut theta = vector::<B>(&theta, device);
        let mut adam = self.config.optimizer.init::<B>(layout.len, device);
        for iteration in 0..=iterations {
            let tracked = Tensor::<Inner<B>, 1>::from_inner(theta.clone()).require_grad();
            let vars = self.split(layout, &tracked);
            let loss = self.loss(stage, vars, fixed_vector);
            if iteration == iterations {
                // The loss at the final values, without a step: what restarts compare.
                let loss = f64::from(host(loss.inner())[0]);
                history.push(LossRecord {
                    stage,
                    restart,
                    iteration,
                    loss,
                });
                return (loss, host(theta));
            }
            if iteration % self.config.log_every == 0 {
                history.push(LossRecord {
                    stage,
                    restart,
                    iteration,
                    loss: f64::from(host(loss.clone().inner())[0]),
                });
            }
            let gradient = tracked
                .grad(&autodiff::backward(&loss))
                .unwrap_or_else(|| Tensor::zeros([layout.len], device));
            let lr = self
                .config
                .schedule
                .lr(self.config.optimizer.lr, iteration, iterations);
            theta = adam.step(theta, gradient, lr);
        }
        unreachable!("the loop returns at iteration == iterations")
    }
}
