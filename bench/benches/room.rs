//! Criterion benches of the room task's renderer: frames per second (one frame per
//! `step_into`) at the paper's 150 × 150 and the quick-run 64 × 64, in settings S1 (RGB +
//! depth) and S2 (depth only).
//!
//! `cargo bench -p privrl-bench --bench room`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use privrl_envs::room::{RoomConfig, RoomSetting, NUM_ACTIONS};
use privrl_envs::throughput::{run_random_steps, RandomActions};
use privrl_envs::Env;

/// Frames per measured iteration.
const FRAMES: u64 = 100;

fn room_render(c: &mut Criterion) {
    let mut group = c.benchmark_group("room_frames");
    group.throughput(Throughput::Elements(FRAMES));
    for (setting, name) in [(RoomSetting::S1, "s1"), (RoomSetting::S2, "s2")] {
        for size in [64, 150] {
            let mut env = RoomConfig::s1()
                .with_setting(setting)
                .with_image_size(size)
                .build()
                .expect("valid config");
            let mut obs = vec![0.0; env.obs_len()];
            env.reset_into(Some(0), &mut obs).expect("buffer fits");
            let mut actions = RandomActions::new(NUM_ACTIONS, 0);
            group.bench_function(BenchmarkId::new(name, size), |b| {
                b.iter(|| run_random_steps(&mut env, &mut actions, &mut obs, FRAMES))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, room_render);
criterion_main!(benches);
