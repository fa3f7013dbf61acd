//! `cargo xtask bench --attack-batches 1,4,16,64`: the QGI attack's throughput, samples ×
//! iterations per second, when many samples' own gradients are attacked in one optimisation
//! ([`privrl_attacks::attack_each`]), against the one-sample attack, side by side in every
//! repeat; writes `<results-dir>/<UTC date>-attack-batches.md`.

use std::time::Instant;

use anyhow::Result;
use burn::tensor::backend::Backend;
use privrl_agents::GradientRecord;
use privrl_attacks::{attack_each, Victim};
use privrl_envs::room::RoomSetting;

use super::compare::{load_average, machine_description, write_dated};
use super::BenchArgs;
use crate::backend::{dispatch, BackendTask};
use crate::report::plot::median;
use crate::report::{comma_list, Cell, Report};
use crate::suites::inversion::{room_samples, victim_config, Method, VictimWidth, ENTROPY_WEIGHT};

/// One repeat: the attack of the first `b` samples for every batch size `b`, in turn.
struct BatchBench {
    image_size: usize,
    iterations: usize,
    batches: Vec<usize>,
}

/// One batch size's measurement.
#[derive(Debug, Clone)]
struct Timing {
    batch: usize,
    load_before: String,
    seconds: f64,
}

impl Timing {
    /// Samples × iterations (both stages) per second.
    fn throughput(&self, iterations: usize) -> f64 {
        (self.batch * 2 * iterations) as f64 / self.seconds
    }
}

impl BackendTask for BatchBench {
    type Output = (String, Vec<Timing>);

    fn run<B: Backend>(self, device: B::Device) -> Result<(String, Vec<Timing>)> {
        let largest = self.batches.iter().copied().max().unwrap_or(1);
        // The QGI bench's setting, victim and attack (`QgiBench`), with as many samples as
        // the largest batch, each with its own single-sample gradient.
        let (samples, _) = room_samples(
            RoomSetting::S1,
            self.image_size,
            largest,
            0,
            crate::suites::inversion::RoomSelection::First,
        )?;
        let victim = Victim::<B>::from_seed(
            &victim_config(RoomSetting::S1, self.image_size, VictimWidth::Wide),
            Method::Qgi.victim_kind(ENTROPY_WEIGHT),
            0,
            &device,
        )?;
        let records = samples
            .iter()
            .map(|s| victim.shared_gradient(std::slice::from_ref(s)))
            .collect::<Result<Vec<GradientRecord>, _>>()?;
        let config = Method::QgiMagnitude.attack_config(self.iterations, 0, 0.1);
        let mut timings = Vec::with_capacity(self.batches.len());
        for &batch in &self.batches {
            let load_before = load_average();
            let start = Instant::now();
            attack_each(&victim, &records[..batch], &config)?;
            let seconds = start.elapsed().as_secs_f64();
            let timing = Timing {
                batch,
                load_before,
                seconds,
            };
            println!(
                "batch {batch:>3}: {seconds:.1} s, {:.2} samples·iterations/s (load {})",
                timing.throughput(self.iterations),
                timing.load_before
            );
            timings.push(timing);
        }
        Ok((B::name(&device), timings))
    }
}

/// The goal of issue 46: the batched attack at least this many times the one-sample
/// attack's throughput.
const GOAL: f64 = 4.0;

/// Runs `--repeats` repeats and writes the results file.
pub fn run(args: &BenchArgs) -> Result<()> {
    anyhow::ensure!(
        !args.attack_batches.is_empty() && args.attack_batches.iter().all(|&b| b >= 1),
        "--attack-batches needs batch sizes of at least 1, got {:?}",
        args.attack_batches
    );
    anyhow::ensure!(
        args.qgi_iterations > 0,
        "--attack-batches times the attack: --qgi-iterations must be at least 1"
    );
    let machine = machine_description();
    let mut repeats = Vec::with_capacity(args.repeats as usize);
    let mut backend = String::new();
    for r in 0..args.repeats as usize {
        println!("repeat {}/{}", r + 1, args.repeats);
        let (name, timings) = dispatch(
            args.backend,
            BatchBench {
                image_size: args.qgi_res,
                iterations: args.qgi_iterations,
                batches: args.attack_batches.clone(),
            },
        )?;
        backend = name;
        repeats.push(timings);
    }
    let report = report(args, &machine, &backend, &repeats);
    write_dated(&args.results_dir(), "-attack-batches", &report)
}

fn report(args: &BenchArgs, machine: &[String], backend: &str, repeats: &[Vec<Timing>]) -> Report {
    let iterations = args.qgi_iterations;
    let mut report = Report::new(args.results_dir(), "The batched QGI attack's throughput");
    report
        .paragraph(&format!(
            "QGI (eq. 6, cosine + magnitude term, TV λ = 0.1, two stages of {iterations} \
             iterations each) on setting S1's wide victim at {} px, backend `{backend}`. Batch \
             b attacks the first b room samples' own single-sample gradients in one \
             optimisation (`attack_each`); batch 1 is the one-sample attack (`attack`). \
             Throughput is samples × iterations (both stages) per second of the attack's wall \
             time (the samples, the victim and the gradients are prepared before the clock \
             starts). Within a repeat the batch sizes run in turn, so they meet the same load.",
            args.qgi_res
        ))
        .bullets(machine);
    let mut rows = Vec::new();
    for (r, timings) in repeats.iter().enumerate() {
        let single = timings
            .iter()
            .find(|t| t.batch == 1)
            .map(|t| t.throughput(iterations));
        for t in timings {
            let throughput = t.throughput(iterations);
            rows.push(vec![
                Cell::from((r + 1) as f64),
                Cell::from(t.batch as f64),
                Cell::from(&t.load_before),
                Cell::from(t.seconds),
                Cell::from(throughput),
                single.map_or(Cell::from("-"), |s| Cell::from(throughput / s)),
            ]);
        }
    }
    report.table(
        &[
            "repeat",
            "batch",
            "load before (1, 5, 15 min)",
            "attack wall time (s)",
            "samples·iterations/s",
            "× batch 1 (same repeat)",
        ],
        rows,
    );
    let mut verdict = Vec::new();
    for &batch in &args.attack_batches {
        let ratios: Vec<f64> = repeats
            .iter()
            .filter_map(|timings| {
                let of = |b: usize| {
                    timings
                        .iter()
                        .find(|t| t.batch == b)
                        .map(|t| t.throughput(iterations))
                };
                Some(of(batch)? / of(1)?)
            })
            .collect();
        let throughputs: Vec<f64> = repeats
            .iter()
            .flat_map(|timings| timings.iter().filter(|t| t.batch == batch))
            .map(|t| t.throughput(iterations))
            .collect();
        verdict.push(vec![
            Cell::from(batch as f64),
            Cell::from(median(&throughputs)),
            match ratios.is_empty() {
                true => Cell::from("-"),
                false => Cell::from(median(&ratios)),
            },
            Cell::from(match ratios.is_empty() {
                _ if batch == 1 => "reference",
                true => "-",
                false if median(&ratios) >= GOAL => "met",
                false => "not met",
            }),
        ]);
    }
    report
        .subheading("Medians over the repeats")
        .table(
            &[
                "batch",
                "samples·iterations/s",
                "× batch 1 (median of the repeats' ratios)",
                "goal ≥ 4×",
            ],
            verdict,
        )
        .reproduce(&[format!(
            "cargo xtask bench --attack-batches {} --qgi-res {} --qgi-iterations {} --repeats {}",
            comma_list(&args.attack_batches),
            args.qgi_res,
            iterations,
            args.repeats
        )]);
    report
}
