use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Distribution, Tensor, TensorData};
type B = Autodiff<NdArray<f32>>;

fn bits(t: Tensor<NdArray<f32>, 2>) -> u64 {
    let v: Vec<f32> = t.into_data().to_vec().unwrap();
    v.iter().fold(0u64, |h, x| {
        h.wrapping_mul(1_000_003).wrapping_add(x.to_bits() as u64)
    })
}

fn main() {
    if let Ok(n) = std::env::var("PERTURB") {
        for k in 0..n.parse::<usize>().unwrap() {
            std::mem::forget(vec![0u8; 4 + k * 4]);
        }
    }
    let dev = Default::default();
    let variant = std::env::args().nth(1).unwrap_or("full".into());
    let n: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1000);
    let mut r = rand::rngs::StdRng::seed_from_u64(1);
    use rand::{Rng, SeedableRng};
    let sv: Vec<f32> = (0..n * 2).map(|_| r.random_range(-1.0..1.0)).collect();
    let wv: Vec<f32> = (0..n * 2).map(|_| r.random_range(-1.0..1.0)).collect();
    let _ = Distribution::Default;
    for _ in 0..8 {
        let s = Tensor::<B, 2>::from_data(TensorData::new(sv.clone(), [n, 2]), &dev).require_grad();
        let w = Tensor::<B, 2>::from_data(TensorData::new(wv.clone(), [n, 2]), &dev);
        let out = match variant.as_str() {
            "full" => s.clone() - s.clone().exp().sum_dim(1).log(),
            "nolog" => s.clone() - s.clone().exp().sum_dim(1),
            "noexp" => s.clone() - s.clone().sum_dim(1).log(),
            "lse" => s.clone().exp().sum_dim(1).log().repeat_dim(1, 2),
            "ppo" => {
                ppo_probe();
                return;
            }
            "ppotime" => {
                ppo_time();
                return;
            }
            "ppoupd" => {
                for _ in 0..3 {
                    ppo_update_probe();
                }
                return;
            }
            "detached" => s.clone() - s.clone().exp().sum_dim(1).log().detach(),
            _ => panic!(),
        };
        let g = (out * w).sum().backward();
        let gs = s.grad(&g).unwrap();
        print!("{:x} ", bits(gs));
    }
    println!();
}

fn ppo_probe() {
    use privrl_agents::ppo::{Ppo, PpoConfig};
    let dev = Default::default();
    let env = privrl_envs::make("CartPole-v1").unwrap();
    let mut ppo = Ppo::<B, _>::new(PpoConfig::new(), env, &dev, 7).unwrap();
    let batch = ppo.collect_rollout().unwrap();
    for _ in 0..8 {
        let r = ppo.gradient(&batch).unwrap();
        let a = r.strip_prefix("actor").flatten();
        let c = r.strip_prefix("critic").flatten();
        let h = |v: &[f32]| {
            v.iter().fold(0u64, |h, x| {
                h.wrapping_mul(1_000_003).wrapping_add(x.to_bits() as u64)
            })
        };
        print!("{:x}/{:x} ", h(&a) & 0xffff, h(&c) & 0xffff);
    }
    println!();
}

fn ppo_update_probe() {
    use privrl_agents::ppo::{Ppo, PpoConfig};
    let dev = Default::default();
    let env = privrl_envs::make("CartPole-v1").unwrap();
    let n: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1000);
    let mut ppo = Ppo::<B, _>::new(PpoConfig::new().with_steps_per_epoch(n), env, &dev, 7).unwrap();
    let batch = ppo.collect_rollout().unwrap();
    let s = ppo.update(&batch).unwrap();
    println!("{:?}", s);
}

fn ppo_time() {
    use privrl_agents::ppo::{Ppo, PpoConfig};
    let dev = Default::default();
    let env = privrl_envs::make("CartPole-v1").unwrap();
    let mut ppo = Ppo::<B, _>::new(PpoConfig::new(), env, &dev, 7).unwrap();
    let (mut tr, mut tu) = (0.0, 0.0);
    for _ in 0..6 {
        let t = std::time::Instant::now();
        let batch = ppo.collect_rollout().unwrap();
        tr += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let s = ppo.update(&batch).unwrap();
        tu += t.elapsed().as_secs_f64();
        println!("stop_iter {}", s.stop_iter);
    }
    println!("rollout {tr:.3}s update {tu:.3}s");
}
