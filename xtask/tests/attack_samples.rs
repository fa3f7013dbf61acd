//! `cargo xtask attack --samples-dir DIR` on a tiny generated directory: each of the three
//! victim networks attacks it and writes metrics and reconstructed images; bad input is a
//! named error with a non-zero exit, never a panic. `--gradients FILE --weights FILE` on files
//! written here attacks to the same reconstruction as the library in memory.

mod common;

use std::path::{Path, PathBuf};

use image::{ImageBuffer, Luma};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privrl-attack-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A smooth 16-bit `size × size` depth image.
fn write_depth(path: &Path, size: u32, phase: f32) {
    let image = ImageBuffer::<Luma<u16>, Vec<u16>>::from_fn(size, size, |x, y| {
        let v = 0.5 + 0.4 * ((x as f32 * 0.7 + phase).sin() * (y as f32 * 0.5).cos());
        Luma([(v * 65535.0) as u16])
    });
    image.save(path).unwrap();
}

/// Two samples, each an 8 × 8 depth image with a 2-value vector.
fn sample_dir(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    for (i, stem) in ["a", "b"].iter().enumerate() {
        write_depth(&dir.join(format!("{stem}_depth.png")), 8, i as f32);
        let json = format!(
            r#"{{"depth": "{stem}_depth.png", "vector": [0.{i}5, -0.3], "action": {i}, "signal": 1.{i}}}"#
        );
        std::fs::write(dir.join(format!("{stem}.json")), json).unwrap();
    }
    dir
}

fn attack(samples: &Path, runs: &Path, extra: &[&str]) -> (i32, String, String) {
    common::run(
        common::xtask()
            .env("PRIVRL_RUNS_DIR", runs)
            .args(["attack", "--samples-dir"])
            .arg(samples)
            .args(["--actions", "3", "--iters", "20"])
            .args(extra),
    )
}

#[test]
fn every_victim_network_attacks_a_samples_directory() {
    let samples = sample_dir("ok");
    let runs = temp_dir("ok-runs");
    for (model, run, depth_png) in [
        ("multimodal", "qgi-samples-multimodal-seed0", true),
        ("cnn", "qgi-samples-cnn-seed0", true),
        ("mlp", "qgi-samples-mlp-seed0", false),
    ] {
        let (code, stdout, stderr) = attack(&samples, &runs, &["--model", model]);
        assert_eq!(code, 0, "{model}: {stdout}\n{stderr}");
        let dir = runs.join("attack").join(run);
        let metrics = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
        assert_eq!(
            metrics.lines().count(),
            3,
            "{model}: a header and two rows\n{metrics}"
        );
        for stem in ["a", "b"] {
            let rec = dir.join("reconstructions");
            assert!(rec.join(format!("{stem}.json")).is_file(), "{model}");
            let png = rec.join(format!("{stem}.depth.png"));
            assert_eq!(png.is_file(), depth_png, "{model}: {}", png.display());
            if depth_png {
                let image = image::open(&png).unwrap();
                assert_eq!((image.width(), image.height()), (8, 8));
                assert_eq!(image.color(), image::ColorType::L16);
            }
        }
    }
}

/// A plain folder of photographs: no JSON, not square, colour. `--model cnn` attacks it at
/// `--res` px with each image's action and signal drawn from `--seed`, recorded in config.json.
#[test]
fn a_plain_folder_of_images_is_attacked_with_labels_drawn_from_the_seed() {
    use image::Rgb;
    let photos = temp_dir("plain");
    for (stem, phase) in [("cat", 0.0f32), ("dog", 1.0)] {
        let image = ImageBuffer::<Rgb<u8>, Vec<u8>>::from_fn(12, 9, |x, y| {
            let v = |k: f32| (127.0 + 100.0 * (x as f32 * k + y as f32 * 0.3 + phase).sin()) as u8;
            Rgb([v(0.5), v(0.7), v(0.9)])
        });
        image.save(photos.join(format!("{stem}.png"))).unwrap();
    }
    let runs = temp_dir("plain-runs");
    let (code, stdout, stderr) = attack(
        &photos,
        &runs,
        &["--model", "cnn", "--res", "8", "--seed", "3"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = runs.join("attack").join("qgi-samples-cnn-seed3");
    let metrics = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    assert_eq!(
        metrics.lines().count(),
        3,
        "a header and two rows\n{metrics}"
    );
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let labels = config["drawn_labels"]
        .as_array()
        .expect("drawn_labels in config.json");
    assert_eq!(labels.len(), 2, "{config}");
    for (label, image) in labels.iter().zip(["cat.png", "dog.png"]) {
        assert_eq!(label["image"], image);
        assert!(label["action"].as_u64().unwrap() < 3, "{label}");
        let signal = label["signal"].as_f64().unwrap();
        assert!((0.5..1.5).contains(&signal), "{label}");
    }
    assert_eq!(config["seed"], 3, "the arguments are still there: {config}");
    let rgb = image::open(dir.join("reconstructions").join("cat.rgb.png")).unwrap();
    assert_eq!((rgb.width(), rgb.height()), (8, 8));
}

#[test]
fn bad_sample_directories_are_named_errors() {
    let runs = temp_dir("bad-runs");
    let missing = sample_dir("missing");
    std::fs::remove_file(missing.join("b_depth.png")).unwrap();
    let sizes = sample_dir("sizes");
    write_depth(&sizes.join("b_depth.png"), 6, 0.0);
    let empty = temp_dir("empty");
    let cnn_without_image = temp_dir("vector-only");
    std::fs::write(
        cnn_without_image.join("a.json"),
        r#"{"vector": [0.1], "action": 0, "signal": 1}"#,
    )
    .unwrap();
    for (dir, extra, named) in [
        (&missing, vec![], "b_depth.png does not exist"),
        (&sizes, vec![], "the depth image is 6 px"),
        (&empty, vec![], "no sample description"),
        (
            &cnn_without_image,
            vec!["--model", "cnn"],
            "--model cnn needs an image",
        ),
        (&runs.join("nowhere"), vec![], "nowhere"),
    ] {
        let (code, stdout, stderr) = attack(dir, &runs, &extra);
        assert_ne!(code, 0, "{}: {stdout}", dir.display());
        assert!(stderr.contains(named), "{}: {stderr}", dir.display());
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_gradient_file_attacks_to_the_in_memory_reconstruction() {
    use burn::backend::NdArray;
    use privrl_agents::{Activation, MlpConfig};
    use privrl_attacks::{
        attack, AttackConfig, GradientMatchingLoss, ImagePrior, Outer, Sample, Victim, VictimKind,
    };
    use rand::SeedableRng;

    type B = NdArray;
    let dir = temp_dir("gradients");
    let runs = temp_dir("gradients-runs");
    let device = Default::default();
    let config = MlpConfig::new(4, vec![12], 3).with_activation(Activation::Relu);
    let net = config.init::<Outer<B>>(&device, &mut rand_chacha::ChaCha8Rng::seed_from_u64(5));
    let victim = Victim::<B, _>::new(net, VictimKind::Dqn, &device).unwrap();
    let sample = Sample {
        rgb: None,
        depth: None,
        vector: vec![0.4, -0.1, 0.6, -0.8],
        action: 0,
        signal: 2.0,
    };
    let shared = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let (weights, gradients) = (dir.join("w.safetensors"), dir.join("g.safetensors"));
    let metadata = privrl_experiments::suites::inversion::model_metadata(
        privrl_experiments::suites::inversion::ModelArg::Mlp,
        &config,
    );
    victim.save_weights(&weights, &metadata).unwrap();
    victim.save_gradient(&shared, &gradients).unwrap();
    // `--method qgi --iters 500 --seed 0 --tv-weight 0.1` as the library spells it: the
    // paper's QGI, cosine matching (eq. 5) without privrl's magnitude term.
    let in_memory = attack(
        &victim,
        &shared,
        &AttackConfig::qgi()
            .with_matching(GradientMatchingLoss::Cosine)
            .with_iterations_per_stage(500)
            .with_seed(0)
            .with_prior(Some(ImagePrior::TotalVariation { weight: 0.1 })),
    )
    .unwrap();

    let (code, _, stderr) = common::run(
        common::xtask()
            .env("PRIVRL_RUNS_DIR", &runs)
            .args(["attack", "--iters", "500", "--gradients"])
            .arg(&gradients)
            .arg("--weights")
            .arg(&weights),
    );
    assert_eq!(code, 0, "{stderr}");
    let file = runs.join("attack/qgi-gradients-mlp-seed0/reconstruction.json");
    let read: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let vector: Vec<f32> = serde_json::from_value(read["vector"].clone()).unwrap();
    assert_eq!(vector, in_memory.vector);
    assert_eq!(read["action"], in_memory.action);
    for (got, truth) in vector.iter().zip(&sample.vector) {
        assert!((got - truth).abs() < 1e-2, "{vector:?}");
    }

    // The gradient alone, or weights without an architecture in the header: named errors.
    let gradients_only = || {
        let mut command = common::xtask();
        command
            .env("PRIVRL_RUNS_DIR", &runs)
            .args(["attack", "--gradients"])
            .arg(&gradients);
        command
    };
    let (code, _, _) = common::run(&mut gradients_only());
    assert_ne!(code, 0);
    let (code, _, stderr) = common::run(gradients_only().arg("--weights").arg(&gradients));
    assert!(code != 0 && stderr.contains("privrl.model"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
