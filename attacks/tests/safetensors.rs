//! Weights and a shared gradient through safetensors files (Burn's store): written by Rust,
//! read back into a victim drawn from another seed, the gradient and the attack on it are the
//! same as in memory, to the bit. Bad files are named errors.

use std::collections::HashMap;

use burn::backend::NdArray;
use privrl_agents::{Activation, Mlp, MlpConfig, MultimodalNetConfig};
use privrl_attacks::VictimKind;
use privrl_attacks::{attack, read_metadata, AttackConfig, AttackError, Outer, Sample, Victim};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = NdArray;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("privrl-safetensors-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mlp_victim(seed: u64) -> Victim<B, Mlp<Outer<B>>> {
    let device = Default::default();
    let net = MlpConfig::new(4, vec![12], 3)
        .with_activation(Activation::Relu)
        .init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(seed));
    Victim::new(net, VictimKind::Dqn, &device).unwrap()
}

#[test]
fn a_gradient_round_trips_through_files_and_attacks_the_same() {
    let dir = temp_dir("round-trip");
    let victim = mlp_victim(1);
    let sample = Sample {
        rgb: None,
        depth: None,
        vector: vec![0.2, -0.5, 0.8, 0.1],
        action: 2,
        signal: 0.9,
    };
    let shared = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let config = AttackConfig::qgi().with_iterations_per_stage(200);
    let in_memory = attack(&victim, &shared, &config).unwrap();

    let (weights, gradient) = (
        dir.join("weights.safetensors"),
        dir.join("gradient.safetensors"),
    );
    let metadata = HashMap::from([("privrl.model".to_string(), "mlp".to_string())]);
    victim.save_weights(&weights, &metadata).unwrap();
    victim.save_gradient(&shared, &gradient).unwrap();
    assert_eq!(read_metadata(&weights).unwrap()["privrl.model"], "mlp");

    // Another seed's weights are all replaced by the file's.
    let loaded = mlp_victim(99).with_weights_file(&weights).unwrap();
    let read = loaded.load_gradient(&gradient).unwrap();
    assert_eq!(read, shared);
    assert_eq!(
        loaded
            .shared_gradient(std::slice::from_ref(&sample))
            .unwrap(),
        shared
    );
    let from_files = attack(&loaded, &read, &config).unwrap();
    assert_eq!(from_files, in_memory);
    assert!(
        (in_memory.signal - sample.signal).abs() < 1e-2,
        "{}",
        in_memory.signal
    );
}

#[test]
fn the_multimodal_victims_files_round_trip_and_bad_files_are_named() {
    let dir = temp_dir("multimodal");
    let device = Default::default();
    let config = MultimodalNetConfig::new(4, 3).with_head_hidden(vec![8]);
    let victim = Victim::<B>::from_seed(&config, VictimKind::Dqn, 1, &device).unwrap();
    let sample = Sample {
        rgb: None,
        depth: None,
        vector: vec![-0.5, -0.2, 0.3, 0.6],
        action: 1,
        signal: 1.5,
    };
    let shared = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let path = dir.join("gradient.safetensors");
    victim.save_gradient(&shared, &path).unwrap();
    let other = Victim::<B>::from_seed(&config, VictimKind::Dqn, 2, &device).unwrap();
    assert_eq!(other.load_gradient(&path).unwrap(), shared);

    // The multimodal gradient does not fit the MLP: a named error, no panic.
    let error = mlp_victim(1).load_gradient(&path).unwrap_err();
    assert!(matches!(error, AttackError::Store { .. }), "{error}");
    println!("{error}");
    let error = mlp_victim(1)
        .with_weights_file(&dir.join("missing.safetensors"))
        .unwrap_err();
    assert!(error.to_string().contains("missing.safetensors"), "{error}");
    std::fs::write(dir.join("junk.safetensors"), b"not a safetensors file").unwrap();
    let error = mlp_victim(1)
        .load_gradient(&dir.join("junk.safetensors"))
        .unwrap_err();
    assert!(error.to_string().contains("junk.safetensors"), "{error}");
    // A gradient record that lacks a parameter cannot be written.
    let mut partial = shared.clone();
    partial.params.pop();
    assert!(matches!(
        victim.save_gradient(&partial, &path),
        Err(AttackError::MissingGradient { .. })
    ));
}

/// What `bench/pytorch/export_gradient.py` wrote beside its files.
#[derive(serde::Deserialize)]
struct Truth {
    #[serde(default)]
    vector: Vec<f32>,
    depth: Option<Vec<f32>>,
    action: usize,
    signal: f64,
    /// PyTorch's Q(s).
    q: Vec<f32>,
}

fn torch_files(model: &str) -> (std::path::PathBuf, std::path::PathBuf, Truth) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("torch_{model}"));
    let truth = std::fs::read_to_string(dir.join("truth.json")).unwrap();
    (
        dir.join("weights.safetensors"),
        dir.join("gradient.safetensors"),
        serde_json::from_str(&truth).unwrap(),
    )
}

/// The Burn network reproduces PyTorch's Q(s), and the file's gradient is the one Burn computes
/// for the same transition: the layouts and the loss agree.
fn check_against_torch<M: privrl_attacks::InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    gradient: &privrl_agents::GradientRecord,
    sample: &Sample,
    truth: &Truth,
) {
    let q = victim.output(sample).unwrap();
    for (burn, torch) in q.iter().zip(&truth.q) {
        assert!(
            (burn - torch).abs() < 1e-5,
            "Q {q:?} vs PyTorch {:?}",
            truth.q
        );
    }
    let ours = victim
        .shared_gradient(std::slice::from_ref(sample))
        .unwrap();
    for (mine, theirs) in ours.params.iter().zip(&gradient.params) {
        assert_eq!(mine.name, theirs.name);
        for (a, b) in mine.values.iter().zip(&theirs.values) {
            assert!(
                (a - b).abs() < 1e-5 * (1.0 + b.abs()),
                "{}: {a} vs {b}",
                mine.name
            );
        }
    }
}

#[test]
fn a_pytorch_mlps_gradient_attacks() {
    let (weights, gradient, truth) = torch_files("mlp");
    let config: MlpConfig =
        serde_json::from_str(&read_metadata(&weights).unwrap()["privrl.config"]).unwrap();
    let device = Default::default();
    let net = config.init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(0));
    let victim = Victim::<B, _>::new(net, VictimKind::Dqn, &device)
        .unwrap()
        .with_weights_file(&weights)
        .unwrap();
    let record = victim.load_gradient(&gradient).unwrap();
    let sample = Sample {
        rgb: None,
        depth: None,
        vector: truth.vector.clone(),
        action: truth.action,
        signal: truth.signal,
    };
    check_against_torch(&victim, &record, &sample, &truth);
    let rec = attack(
        &victim,
        &record,
        &AttackConfig::qgi().with_iterations_per_stage(1000),
    )
    .unwrap();
    println!(
        "PyTorch MLP: {:?} {} {}",
        rec.vector, rec.action, rec.signal
    );
    assert_eq!(rec.action, truth.action);
    for (got, want) in rec.vector.iter().zip(&truth.vector) {
        assert!(
            (got - want).abs() < 1e-3,
            "{:?} vs {:?}",
            rec.vector,
            truth.vector
        );
    }
    assert!((rec.signal - truth.signal).abs() < 1e-3, "{}", rec.signal);
}

#[test]
fn a_pytorch_cnns_gradient_attacks() {
    let (weights, gradient, truth) = torch_files("cnn");
    let config: privrl_agents::ConvNetConfig =
        serde_json::from_str(&read_metadata(&weights).unwrap()["privrl.config"]).unwrap();
    let device = Default::default();
    let net = config.init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(0));
    let victim = Victim::<B, _>::new(net, VictimKind::Dqn, &device)
        .unwrap()
        .with_weights_file(&weights)
        .unwrap();
    let record = victim.load_gradient(&gradient).unwrap();
    let sample = Sample {
        rgb: None,
        depth: truth.depth.clone(),
        vector: Vec::new(),
        action: truth.action,
        signal: truth.signal,
    };
    check_against_torch(&victim, &record, &sample, &truth);
    // The command line's defaults: 2000 iterations per stage, TV weight 0.1.
    let config = AttackConfig::qgi()
        .with_iterations_per_stage(2000)
        .with_prior(Some(privrl_attacks::ImagePrior::TotalVariation {
            weight: 0.1,
        }));
    let rec = attack(&victim, &record, &config).unwrap();
    let (_, depth) = privrl_attacks::ImageNormalisation::Clamp.apply(None, rec.depth.as_deref());
    let psnr = privrl_attacks::psnr(truth.depth.as_ref().unwrap(), &depth.unwrap(), 1.0).unwrap();
    println!(
        "PyTorch CNN: action {}, signal {}, depth PSNR {psnr:.2} dB",
        rec.action, rec.signal
    );
    assert_eq!(rec.action, truth.action);
    assert!((rec.signal - truth.signal).abs() < 1e-3, "{}", rec.signal);
    // 20 dB: an RMS error of 10 % of the range; Gaussian noise scores about 5 dB.
    assert!(psnr > 20.0, "depth PSNR {psnr:.2} dB");
}
