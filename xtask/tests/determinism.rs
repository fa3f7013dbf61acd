//! `cargo xtask check determinism` at small sizes: seeded training (PPO, DQN, REINFORCE with
//! checkpoints), a seed sweep on one thread against two, and a QGI attack, each run twice in
//! fresh processes, must write the same files (wall-clock fields aside).

use std::process::Command;

#[test]
fn seeded_runs_write_the_same_files_in_two_processes() {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "check",
            "determinism",
            "--steps",
            "800",
            "--res",
            "16",
            "--iters",
            "10",
        ])
        .output()
        .expect("running xtask");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for check in [
        "train ppo",
        "train dqn",
        "train reinforce",
        "sweep --threads 1 vs 2",
        "inversion attack (QGI)",
    ] {
        assert!(
            stdout.contains(&format!("same   {check}")),
            "{check}:\n{stdout}"
        );
    }
}
