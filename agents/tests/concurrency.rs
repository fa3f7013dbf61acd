//! Concurrent autodiff is correct: threads that each build and differentiate their own graphs
//! get exactly the gradients they would get alone (see `privrl_agents::autodiff`).
//!
//! Without sections this workload loses or corrupts gradients and can deadlock in Burn 0.21
//! (`cargo run --release -p privrl-agents --example autodiff_race` measures it); with them,
//! every one of 10,000 backwards must be right.

#[path = "support/race.rs"]
mod race;

#[test]
fn ten_thousand_concurrent_backwards_are_all_right() {
    // 4 threads × 3,334 iterations, half of them second-order (two backwards each).
    let tally = race::stress(4, 3_334, true);
    assert!(tally.backwards >= 10_000, "{tally:?}");
    assert_eq!(tally.failures(), 0, "{tally:?}");
}

use burn::backend::{Autodiff, NdArray};
use burn::module::AutodiffModule;
use privrl_agents::autodiff::{backward, exclusive};
use privrl_agents::initial_parameters;
use privrl_agents::losses::episode_loss;
use privrl_agents::trainable_from_inner;
use privrl_agents::ActorCritic;
use privrl_agents::GradientRecord;
use privrl_agents::{A3c, A3cConfig, Parameters, PgcAgent, PgcConfig};
use privrl_privacy::{Epsilon, GradientMechanismConfig};

type B = Autodiff<NdArray>;

fn bits(record: &GradientRecord) -> Vec<u32> {
    record.flatten().iter().map(|v| v.to_bits()).collect()
}

/// A3C is asynchronous, so which θ′ a worker copies varies from run to run; the gradient it
/// submits for that θ′ and episode must not. Four workers, 40 submissions, θ updated after
/// every one: each gradient is recomputed alone and must match bit for bit.
#[test]
fn a3c_workers_submit_the_gradients_they_would_compute_alone() {
    let config = A3cConfig::new()
        .with_workers(4)
        .with_submissions_per_epoch(40);
    let device = Default::default();
    let mut a3c = A3c::<B>::for_env(config.clone(), "CartPole-v1", &device, 9).unwrap();
    a3c.keep_submissions();
    a3c.run_submissions(40).unwrap();
    let kept = a3c.take_kept_submissions();
    assert_eq!(kept.len(), 40);
    let workers: std::collections::BTreeSet<_> = kept.iter().map(|s| s.worker).collect();
    assert!(
        workers.len() > 1,
        "several workers should have submitted: {workers:?}"
    );
    for submission in kept {
        let alone = exclusive(|| {
            let model = trainable_from_inner::<B, ActorCritic<B>>(submission.parameters);
            let (loss, _) = episode_loss(&model, &submission.episode, &config, &device).unwrap();
            GradientRecord::from_grads(&model, &backward(&loss))
        });
        assert_eq!(
            bits(&submission.gradient),
            bits(&alone),
            "worker {} submission {}",
            submission.worker,
            submission.n
        );
    }
}

/// In-process PGC agents are threads too: four agents play and differentiate at once, five
/// submissions each, and every gradient must equal the one computed alone afterwards.
#[test]
fn pgc_agents_compute_alone_what_they_compute_together() {
    let config = PgcConfig::paper(GradientMechanismConfig::laplace(Epsilon::INFINITE));
    let device = Default::default();
    let theta = initial_parameters::<NdArray>(&config, 1, &device).unwrap();
    let parameters = Parameters {
        version: 0,
        submissions: 0,
        env_steps: 0,
        values: theta,
    };
    let together: Vec<Vec<_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (config, parameters, device) = (&config, &parameters, &device);
                scope.spawn(move || {
                    let mut agent =
                        PgcAgent::<B>::new(config, format!("agent-{i}"), i, device).unwrap();
                    (0..5)
                        .map(|_| {
                            let (model, episode) = agent.play(parameters).unwrap();
                            let gradient = agent.gradient_of(&model, &episode).unwrap();
                            (model.valid(), episode, gradient)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let agent = PgcAgent::<B>::new(&config, "alone", 99, &device).unwrap();
    for (i, submissions) in together.into_iter().enumerate() {
        for (model, episode, gradient) in submissions {
            let alone = agent
                .gradient_of(
                    &exclusive(|| trainable_from_inner::<B, ActorCritic<B>>(model)),
                    &episode,
                )
                .unwrap();
            assert_eq!(bits(&gradient), bits(&alone), "agent {i}");
        }
    }
}
