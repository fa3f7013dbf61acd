//! PGC-A3C across processes over Redis Streams: an aggregator process and two agent processes
//! (`cargo xtask pgc aggregator|agents`), the aggregator killed mid-run and restarted from its
//! checkpoint; every submission sent must be applied exactly once.
//!
//! Needs a Redis server: set PRIVRL_REDIS_URL (scripts/test.sh starts one on loopback). Without
//! it the test is skipped with a message, unless PRIVRL_REQUIRE_REDIS=1 (CI), which fails it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn redis_url() -> Option<String> {
    match std::env::var("PRIVRL_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("PRIVRL_REQUIRE_REDIS").as_deref() != Ok("1"),
                "PRIVRL_REQUIRE_REDIS=1 but PRIVRL_REDIS_URL is not set"
            );
            eprintln!(
                "skipping: set PRIVRL_REDIS_URL (e.g. redis://127.0.0.1:6390/) to run the Redis \
                 test; scripts/test.sh starts a server"
            );
            None
        }
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn xtask(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    command
}

fn applied_in(checkpoint: &Path) -> u64 {
    std::fs::read(checkpoint)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v["applied"].as_u64())
        .unwrap_or(0)
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn aggregator_restart_over_redis_applies_every_submission_once() {
    let Some(url) = redis_url() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("privrl-pgc-redis-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = format!(
        "privrl-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let checkpoint = dir.join("aggregator.json");
    let summary = dir.join("aggregator-summary.json");
    // Two agent processes of 300 agents each; |B| = 10 so that a kill can land with a
    // partly filled buffer.
    let per_process = 300u64;
    let total = (2 * per_process).to_string();
    let common = [
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--buffer-size",
        "10",
    ];
    let checkpoint_arg = checkpoint.to_str().unwrap();
    let summary_arg = summary.to_str().unwrap();
    let mut aggregator_args = vec!["pgc", "aggregator"];
    aggregator_args.extend(common);
    aggregator_args.extend([
        "--checkpoint",
        checkpoint_arg,
        "--submissions",
        &total,
        "--summary",
        summary_arg,
    ]);

    let first = Killed(xtask(&aggregator_args).spawn().unwrap());
    let count = per_process.to_string();
    let agents: Vec<(Killed, std::path::PathBuf)> = (0..2)
        .map(|i| {
            let out = dir.join(format!("agents-{i}.json"));
            let seed = i.to_string();
            let name = format!("proc{i}");
            let mut args = vec!["pgc", "agents"];
            args.extend(common);
            args.extend([
                "--count",
                &count,
                "--workers",
                "3",
                "--seed",
                &seed,
                "--name",
                &name,
                "--summary",
                out.to_str().unwrap(),
            ]);
            (Killed(xtask(&args).spawn().unwrap()), out)
        })
        .collect();

    // Kill the aggregator once it has applied some but not all submissions.
    let start = Instant::now();
    let mut first = first;
    loop {
        let applied = applied_in(&checkpoint);
        if applied >= 60 {
            assert!(
                applied < 2 * per_process,
                "the aggregator finished before it could be killed"
            );
            break;
        }
        assert!(
            first.0.try_wait().unwrap().is_none(),
            "the aggregator exited early"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no progress in 60 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    let applied_at_kill = applied_in(&checkpoint);

    // Restart from the checkpoint and let it finish.
    let mut second = Killed(xtask(&aggregator_args).spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = second.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted aggregator did not finish"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "restarted aggregator failed: {status}");
    let mut sent = 0;
    for (mut child, out) in agents {
        let status = child.0.wait().unwrap();
        assert!(status.success(), "agents failed: {status}");
        sent += read_json(&out)["sent"].as_u64().unwrap();
    }
    let result = read_json(&summary);
    assert_eq!(sent, 2 * per_process);
    assert_eq!(result["applied"].as_u64().unwrap(), sent, "{result}");
    assert_eq!(result["updates"].as_u64().unwrap(), sent / 10, "{result}");
    assert_eq!(result["rejected"].as_u64().unwrap(), 0, "{result}");
    eprintln!("killed at {applied_at_kill} applied; final {result}");
    std::fs::remove_dir_all(&dir).unwrap();
}
