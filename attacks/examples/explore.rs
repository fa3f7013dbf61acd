use burn::backend::NdArray;
use privrl_agents::MultimodalNetConfig;
use privrl_attacks::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    type B = NdArray;
    let device = Default::default();
    let args: Vec<String> = std::env::args().collect();
    let iters: usize = args.get(1).map_or(300, |s| s.parse().unwrap());
    let lr: f64 = args.get(2).map_or(0.1, |s| s.parse().unwrap());
    let std: f64 = args.get(3).map_or(1.0, |s| s.parse().unwrap());
    let sched = if args.get(4).map_or(true, |s| s == "step") { LrSchedule::StepDecay } else { LrSchedule::Constant };
    let tv: f64 = args.get(5).map_or(0.1, |s| s.parse().unwrap());
    let kind = if args.get(6).map_or(false, |s| s == "rgi") { VictimKind::Reinforce { entropy_weight: 0.01 } } else { VictimKind::Dqn };
    let rgb = args.get(7).map_or(false, |s| s == "rgb");
    let restarts: usize = args.get(8).map_or(1, |s| s.parse().unwrap());
    let nsamples: u64 = args.get(9).map_or(3, |s| s.parse().unwrap());
    let size = 16;
    let config = if rgb { common::rgbd_config(size) } else { common::depth_config(size) };
    let _: Option<MultimodalNetConfig> = None;
    let victim = Victim::<B>::from_seed(&config, kind, 3, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for i in 0..nsamples {
        let sample = common::synthetic_sample(rgb.then_some(size), Some(size), 7, 1.0..5.0, &mut rng);
        let record = victim.shared_gradient(std::slice::from_ref(&sample)).unwrap();
        let mut cfg = if kind == VictimKind::Dqn { AttackConfig::qgi() } else { AttackConfig::rgi() };
        cfg = cfg
            .with_iterations_per_stage(iters)
            .with_optimizer(TensorAdamConfig::new().with_lr(lr))
            .with_init_std(std)
            .with_schedule(sched)
            .with_prior(Some(ImagePrior::TotalVariation { weight: tv }))
            .with_seed(i).with_restarts(restarts);
        let t = std::time::Instant::now();
        let rec = attack(&victim, &record, &cfg).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let row = score_reconstruction(&victim, &sample, &rec, ImageNormalisation::Clamp, i as usize, ms).unwrap();
        let noise = gaussian_noise(size * size, std, &mut ChaCha8Rng::seed_from_u64(99));
        let (_, nd) = ImageNormalisation::Clamp.apply(None, Some(&noise));
        let base = psnr(sample.depth.as_ref().unwrap(), &nd.unwrap(), 1.0).unwrap();
        let first = rec.loss_history.iter().filter(|r| r.stage == Stage::LinearPart).last().unwrap().loss;
        let last = rec.loss_history.last().unwrap().loss;
        println!(
            "{i}: iou {:.4} depth {:?} rgb {:?} base {base:.2} act {} sig {:.4}/{:.4} q̂err {:?} qerr {:?} r {:?} s1loss {first:.2e} s2loss {last:.2e} {ms:.0} ms ({:.2} ms/it)",
            row.vector_iou.unwrap(), row.depth, row.rgb, row.action_correct, rec.signal, sample.signal, row.predicted_q_error_pct, row.target_q_error_pct, row.reward_abs_error,
            ms / (2 * iters * restarts) as f64
        );
        let _ = rng.random::<u8>();
    }
}
