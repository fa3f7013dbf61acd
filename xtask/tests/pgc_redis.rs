//! PGC-A3C across processes over Redis Streams (`cargo xtask pgc aggregator|agents|cleanup`)
//! under faults: the aggregator killed with SIGKILL and restarted, an agent killed and
//! restarted, malformed entries injected, runs back to back and side by side, the Redis server
//! restarted under a run (and gone for good), a superseded aggregator fenced off.
//!
//! Needs a Redis server: set PRIVRL_REDIS_URL (scripts/test.sh starts one on loopback); the
//! Redis-restart test starts its own `redis-server` (on PATH). Without them the tests skip with
//! a message, unless PRIVRL_REQUIRE_REDIS=1 (CI), which fails them. Every wait has a deadline,
//! so a hang fails the test instead of blocking it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use burn::backend::NdArray;
use privrl_agents::{initial_parameters, Delivery};
use privrl_agents::{
    A3cConfig, Aggregator, InProcess, PgcConfig, PgcError, RedisTransport, Submission, Transport,
};
use privrl_privacy::{Epsilon, GradientMechanismConfig};

fn require_redis() -> bool {
    std::env::var("PRIVRL_REQUIRE_REDIS").as_deref() == Ok("1")
}

fn redis_url() -> Option<String> {
    match std::env::var("PRIVRL_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                !require_redis(),
                "PRIVRL_REQUIRE_REDIS=1 but PRIVRL_REDIS_URL is not set"
            );
            eprintln!(
                "skipping: set PRIVRL_REDIS_URL (e.g. redis://127.0.0.1:6390/) to run the Redis \
                 tests; scripts/test.sh starts a server"
            );
            None
        }
    }
}

/// A child process killed (SIGKILL) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Killed {
    /// Waits for the exit, failing the test after `limit`.
    fn wait(&mut self, limit: Duration, what: &str) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill9(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

fn unique(label: &str) -> String {
    format!(
        "test-{label}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(label));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `xtask pgc <args>`, its stderr to `log` (read back for error messages).
fn xtask(args: &[String], log: &Path) -> Killed {
    xtask_with_env(args, log, &[])
}

/// [`xtask`] with extra environment variables.
fn xtask_with_env(args: &[String], log: &Path, env: &[(&str, &str)]) -> Killed {
    let stderr = std::fs::File::create(log).unwrap();
    Killed(
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("pgc")
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap(),
    )
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Laplace at ε = 1 with |B| = 10, so that a kill can land with a partly filled buffer.
const BUFFER: usize = 10;

fn common(url: &str, run_id: &str) -> Vec<String> {
    strings(&[
        "--redis",
        url,
        "--run-id",
        run_id,
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--buffer-size",
        &BUFFER.to_string(),
        "--redis-timeout",
        "10",
    ])
}

struct Run {
    url: String,
    run_id: String,
    dir: PathBuf,
}

impl Run {
    fn new(url: &str, label: &str) -> Self {
        Self {
            url: url.to_string(),
            run_id: unique(label),
            dir: temp_dir(label),
        }
    }

    fn checkpoint(&self) -> PathBuf {
        self.dir.join("aggregator.json")
    }

    fn summary(&self) -> PathBuf {
        self.dir.join("aggregator-summary.json")
    }

    fn aggregator(&self, submissions: u64, log: &str) -> Killed {
        let mut args = strings(&["aggregator"]);
        args.extend(common(&self.url, &self.run_id));
        args.extend(strings(&[
            "--checkpoint",
            self.checkpoint().to_str().unwrap(),
            "--submissions",
            &submissions.to_string(),
            "--summary",
            self.summary().to_str().unwrap(),
            "--idle-timeout",
            "60",
        ]));
        xtask(&args, &self.dir.join(log))
    }

    /// An agent process named `name` running `count` agents on two worker threads.
    fn agents(&self, name: &str, count: u64, seed: u64) -> Killed {
        let mut args = strings(&["agents"]);
        args.extend(common(&self.url, &self.run_id));
        args.extend(strings(&[
            "--count",
            &count.to_string(),
            "--workers",
            "2",
            "--seed",
            &seed.to_string(),
            "--name",
            name,
            "--summary",
            self.dir.join(format!("{name}.json")).to_str().unwrap(),
            "--sent-log",
            self.sent_log(name).to_str().unwrap(),
        ]));
        xtask(&args, &self.dir.join(format!("{name}.log")))
    }

    fn sent_log(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.sent.jsonl"))
    }

    fn stderr(&self, log: &str) -> String {
        std::fs::read_to_string(self.dir.join(log)).unwrap_or_default()
    }

    fn state(&self) -> serde_json::Value {
        read_json(&self.checkpoint())
    }

    fn applied(&self) -> u64 {
        std::fs::read(self.checkpoint())
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|v| v["applied"].as_u64())
            .unwrap_or(0)
    }

    /// Waits until the checkpoint shows at least `n` applied submissions.
    fn wait_applied(&self, n: u64, aggregator: &mut Killed) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.applied() < n {
            assert!(
                aggregator.0.try_wait().unwrap().is_none(),
                "the aggregator exited early: {}",
                self.stderr("aggregator.log")
            );
            assert!(Instant::now() < deadline, "no progress in 120 s");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn cleanup(&self) {
        let transport = RedisTransport::connect(&self.url, &self.run_id).unwrap();
        transport.delete_run().unwrap();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn assert_success(status: ExitStatus, what: &str, stderr: &str) {
    assert!(status.success(), "{what} failed ({status}):\n{stderr}");
}

/// The configuration that `common` gives the CLI.
fn config() -> PgcConfig {
    PgcConfig::paper(GradientMechanismConfig::laplace(
        Epsilon::finite(1.0).unwrap(),
    ))
    .with_a3c(A3cConfig::pgc_paper().with_buffer_size(BUFFER))
}

/// The stream id `ms-seq` as a sortable pair.
fn stream_order(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap();
    (ms.parse().unwrap(), seq.parse().unwrap())
}

/// An agent process's sent log (`--sent-log`): every release by (source, seq), written ahead
/// of its send, and the stream id of those whose send was confirmed.
struct SentLog {
    released: BTreeMap<(String, u64), Submission>,
    sent: BTreeMap<(String, u64), String>,
}

impl SentLog {
    fn read(path: &Path) -> Self {
        let mut log = Self {
            released: BTreeMap::new(),
            sent: BTreeMap::new(),
        };
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            match v["event"].as_str().unwrap() {
                "release" => {
                    let s: Submission = serde_json::from_value(v["submission"].clone()).unwrap();
                    log.released.insert((s.source.clone(), s.seq), s);
                }
                "sent" => {
                    let key = (
                        v["source"].as_str().unwrap().to_string(),
                        v["seq"].as_u64().unwrap(),
                    );
                    assert!(
                        log.released.contains_key(&key),
                        "{key:?} sent before its release was logged"
                    );
                    log.sent.insert(key, v["id"].as_str().unwrap().to_string());
                }
                other => panic!("unknown event {other} in {}", path.display()),
            }
        }
        log
    }

    /// Releases whose send was never confirmed.
    fn unconfirmed(&self) -> Vec<&(String, u64)> {
        self.released
            .keys()
            .filter(|k| !self.sent.contains_key(*k))
            .collect()
    }
}

/// The submissions of the sent logs in stream order, applied once each by a fresh aggregator
/// (θ₀ from seed 0, as the CLI's): the model the run must end with.
fn replay(logs: &[PathBuf]) -> (Vec<f32>, u64, u64) {
    let mut entries: Vec<((u64, u64), Submission)> = Vec::new();
    for log in logs {
        let trail = SentLog::read(log);
        assert!(
            trail.unconfirmed().is_empty(),
            "{}: releases without a sent line in a run that finished: {:?}",
            log.display(),
            trail.unconfirmed()
        );
        for (key, id) in &trail.sent {
            entries.push((stream_order(id), trail.released[key].clone()));
        }
    }
    entries.sort_by_key(|(id, _)| *id);
    let config = config();
    let theta = initial_parameters::<NdArray>(&config, 0, &Default::default()).unwrap();
    let mut aggregator = Aggregator::new(&config, theta).unwrap();
    let transport = InProcess::new();
    for (_, s) in &entries {
        transport.submit(s).unwrap();
    }
    aggregator
        .poll(&transport, entries.len(), Duration::from_millis(100))
        .unwrap();
    let state = aggregator.state();
    assert_eq!(
        aggregator.buffered(),
        0,
        "a partial buffer left in the replay"
    );
    (state.theta.clone(), state.applied, state.version)
}

fn theta_of(state: &serde_json::Value) -> Vec<f32> {
    serde_json::from_value(state["theta"].clone()).unwrap()
}

/// SIGKILL the aggregator mid-run (a partly filled buffer, unacknowledged entries), restart it
/// from its checkpoint: the final θ is, bit for bit, the replay of every sent submission once
/// in stream order; nothing lost, nothing applied twice, the stream trimmed to nothing.
#[test]
fn aggregator_killed_and_restarted_applies_each_submission_once_in_stream_order() {
    let Some(url) = redis_url() else {
        return;
    };
    let run = Run::new(&url, "agg-kill");
    let per_process = 200u64;
    let total = 2 * per_process;
    let mut first = run.aggregator(total, "aggregator.log");
    let mut agents: Vec<Killed> = (0..2)
        .map(|i| run.agents(&format!("proc{i}"), per_process, i))
        .collect();
    run.wait_applied(40, &mut first);
    first.kill9();
    let applied_at_kill = run.applied();
    assert!(applied_at_kill < total, "finished before the kill");

    let mut second = run.aggregator(total, "aggregator2.log");
    let status = second.wait(Duration::from_secs(120), "the restarted aggregator");
    assert_success(
        status,
        "restarted aggregator",
        &run.stderr("aggregator2.log"),
    );
    let mut sent = 0;
    for (i, agent) in agents.iter_mut().enumerate() {
        let status = agent.wait(Duration::from_secs(30), "agents");
        assert_success(status, "agents", &run.stderr(&format!("proc{i}.log")));
        sent += read_json(&run.dir.join(format!("proc{i}.json")))["sent"]
            .as_u64()
            .unwrap();
    }
    assert_eq!(sent, total);
    let summary = read_json(&run.summary());
    let state = run.state();
    let (theta, applied, updates) = replay(&[run.sent_log("proc0"), run.sent_log("proc1")]);
    assert_eq!(applied, total, "the sent logs hold every submission once");
    assert_eq!(summary["applied"].as_u64().unwrap(), total, "{summary}");
    assert_eq!(summary["updates"].as_u64().unwrap(), updates, "{summary}");
    assert_eq!(summary["dead_letters"].as_u64().unwrap(), 0, "{summary}");
    assert_eq!(theta_of(&state), theta, "θ differs from the replay");
    // Every worker's sequence 1..=100 applied: high-water marks at the end.
    let marks: BTreeMap<String, u64> = serde_json::from_value(state["high_water"].clone()).unwrap();
    assert_eq!(marks.len(), 4);
    assert!(marks.values().all(|&m| m == per_process / 2), "{marks:?}");
    // Trimmed up to the last acknowledged entry: nothing left.
    assert_eq!(summary["stream_len"].as_u64().unwrap(), 0, "{summary}");
    eprintln!("killed at {applied_at_kill} applied; final {summary}");
    run.cleanup();
}

/// SIGKILL one agent process mid-run and restart it under the same name: it resumes its
/// workers' sequences, so no submission is lost or duplicated and the run finishes with the
/// exact total.
#[test]
fn agent_killed_and_restarted_loses_and_duplicates_nothing() {
    let Some(url) = redis_url() else {
        return;
    };
    let run = Run::new(&url, "agent-kill");
    let per_process = 200u64;
    let total = 2 * per_process;
    let mut aggregator = run.aggregator(total, "aggregator.log");
    let mut steady = run.agents("steady", per_process, 0);
    let mut victim = run.agents("victim", per_process, 1);
    run.wait_applied(40, &mut aggregator);
    victim.kill9();
    let transport = RedisTransport::connect(&url, &run.run_id).unwrap();
    let at_kill: Vec<u64> = (0..2)
        .map(|w| transport.last_seq(&format!("victim-w{w}")).unwrap())
        .collect();
    assert!(
        at_kill.iter().all(|&s| s < per_process / 2),
        "the victim finished before the kill: {at_kill:?}"
    );
    let mut restarted = run.agents("victim", per_process, 1);
    let status = aggregator.wait(Duration::from_secs(120), "the aggregator");
    assert_success(status, "aggregator", &run.stderr("aggregator.log"));
    for (agent, name) in [(&mut steady, "steady"), (&mut restarted, "victim")] {
        let status = agent.wait(Duration::from_secs(30), name);
        assert_success(status, name, &run.stderr(&format!("{name}.log")));
    }
    // The restarted process made up exactly what was missing.
    let resent = read_json(&run.dir.join("victim.json"))["sent"]
        .as_u64()
        .unwrap();
    assert_eq!(resent, per_process - at_kill.iter().sum::<u64>());
    let summary = read_json(&run.summary());
    assert_eq!(summary["applied"].as_u64().unwrap(), total, "{summary}");
    assert_eq!(summary["duplicates"].as_u64().unwrap(), 0, "{summary}");
    // Each of the four sources applied seq 1..=100 (applied = Σ marks, no seq twice).
    let marks: BTreeMap<String, u64> =
        serde_json::from_value(run.state()["high_water"].clone()).unwrap();
    assert_eq!(marks.values().sum::<u64>(), total, "{marks:?}");
    assert!(marks.values().all(|&m| m == per_process / 2), "{marks:?}");
    run.cleanup();
}

/// The audit trail never lists fewer releases than were made: an agent process that dies
/// after the server accepted a submission but before it confirmed the send in its sent log
/// (the fault injected at the 5th send of a worker) still lists that submission, and every
/// submission the stream holds for its workers, as released. A log written after the send
/// (as before) loses exactly that one.
#[test]
fn agent_crash_after_send_leaves_the_release_in_the_sent_log() {
    let Some(url) = redis_url() else {
        return;
    };
    let run = Run::new(&url, "crash-log");
    let mut aggregator = run.aggregator(100, "aggregator.log");
    let mut args = strings(&["agents"]);
    args.extend(common(&run.url, &run.run_id));
    args.extend(strings(&[
        "--count",
        "100",
        "--workers",
        "2",
        "--name",
        "crash",
        "--sent-log",
        run.sent_log("crash").to_str().unwrap(),
    ]));
    let mut crashed = xtask_with_env(
        &args,
        &run.dir.join("crash.log"),
        &[("PRIVRL_FAULT_CRASH_AFTER_SENDS", "5")],
    );
    let status = crashed.wait(Duration::from_secs(120), "the crashing agent process");
    assert!(!status.success(), "the fault was not injected ({status})");
    let trail = SentLog::read(&run.sent_log("crash"));
    let transport = RedisTransport::connect(&url, &run.run_id).unwrap();
    let mut accepted = 0;
    for w in 0..2 {
        let source = format!("crash-w{w}");
        let last = transport.last_seq(&source).unwrap();
        accepted += last;
        for seq in 1..=last {
            assert!(
                trail.released.contains_key(&(source.clone(), seq)),
                "{source} seq {seq} reached the stream but is not in the sent log"
            );
        }
    }
    assert!(
        accepted >= 5,
        "fewer sends than the fault's count: {accepted}"
    );
    // The injected crash fell between an accepted send and its confirmation.
    assert!(
        !trail.unconfirmed().is_empty(),
        "no release left unconfirmed by the crash"
    );
    aggregator.kill9();
    run.cleanup();
}

/// Entries added to a run's stream by hand.
fn inject(url: &str, run_id: &str, entries: &[&[(&str, &str)]]) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_connection().unwrap();
    let stream = format!("privrl:pgc:{{{run_id}}}:submissions");
    for fields in entries {
        let mut command = redis::cmd("XADD");
        command.arg(&stream).arg("*");
        for (k, v) in *fields {
            command.arg(*k).arg(*v);
        }
        command.query::<String>(&mut connection).unwrap();
    }
}

fn dead_letter_reasons(url: &str, run_id: &str) -> Vec<String> {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_connection().unwrap();
    let entries: Vec<(String, BTreeMap<String, String>)> = redis::cmd("XRANGE")
        .arg(format!("privrl:pgc:{{{run_id}}}:dead"))
        .arg("-")
        .arg("+")
        .query(&mut connection)
        .unwrap();
    entries
        .into_iter()
        .map(|(_, fields)| fields["reason"].clone())
        .collect()
}

/// Runs a whole small run (one agent process) to the end and checks its summary.
fn finish(run: &Run, total: u64, dead: u64) {
    let mut aggregator = run.aggregator(total, "aggregator.log");
    let mut agents = run.agents("agents", total, 7);
    let status = aggregator.wait(Duration::from_secs(120), "the aggregator");
    assert_success(status, "aggregator", &run.stderr("aggregator.log"));
    let status = agents.wait(Duration::from_secs(30), "agents");
    assert_success(status, "agents", &run.stderr("agents.log"));
    let summary = read_json(&run.summary());
    assert_eq!(summary["applied"].as_u64().unwrap(), total, "{summary}");
    assert_eq!(summary["dead_letters"].as_u64().unwrap(), dead, "{summary}");
    let (theta, applied, _) = replay(&[run.sent_log("agents")]);
    assert_eq!(applied, total);
    assert_eq!(theta_of(&run.state()), theta, "θ differs from the replay");
}

/// Two runs back to back on one server (the second under the first's id, which a fresh
/// aggregator refuses until `pgc cleanup`), then two runs at once under different ids, one of
/// them fed malformed and foreign entries: those land in its dead-letter stream with a reason,
/// the other run never sees them, and both finish with the exact model.
#[test]
fn runs_back_to_back_and_side_by_side_with_dead_letters() {
    let Some(url) = redis_url() else {
        return;
    };
    let first = Run::new(&url, "seq");
    finish(&first, 60, 0);

    // The same id again without a checkpoint: a named error at once, not a hang.
    let again = Run {
        url: url.clone(),
        run_id: first.run_id.clone(),
        dir: temp_dir("seq-again"),
    };
    let mut refused = again.aggregator(60, "aggregator.log");
    let status = refused.wait(Duration::from_secs(30), "the refused aggregator");
    assert!(!status.success());
    let stderr = again.stderr("aggregator.log");
    assert!(stderr.contains("already exists"), "{stderr}");
    let cleanup = strings(&["cleanup", "--redis", &url, "--run-id", &first.run_id]);
    let status =
        xtask(&cleanup, &again.dir.join("cleanup.log")).wait(Duration::from_secs(30), "cleanup");
    assert_success(status, "cleanup", &again.stderr("cleanup.log"));

    // Side by side: the reused id and a fresh one with bad entries injected.
    let dirty = Run::new(&url, "dirty");
    let foreign = serde_json::json!({
        "source": "intruder", "seq": 1, "version": 0, "score": 10.0, "gradient": [0.0, 1.0]
    })
    .to_string();
    inject(
        &url,
        &dirty.run_id,
        &[
            &[("x", "no submission field")],
            &[("s", "{not json")],
            &[("s", &foreign)],
        ],
    );
    std::thread::scope(|scope| {
        scope.spawn(|| finish(&again, 60, 0));
        scope.spawn(|| finish(&dirty, 60, 3));
    });
    let reasons = dead_letter_reasons(&url, &dirty.run_id);
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].contains("no field `s`"), "{reasons:?}");
    assert!(reasons[1].contains("not a submission"), "{reasons:?}");
    assert!(reasons[2].contains("gradient of length 2"), "{reasons:?}");
    assert!(dead_letter_reasons(&url, &again.run_id).is_empty());
    again.cleanup();
    dirty.cleanup();
    let _ = std::fs::remove_dir_all(&first.dir);
}

/// `redis://user:password@host/` for `url` (which carries no credentials).
fn with_credentials(url: &str, user: &str, password: &str) -> String {
    let rest = url
        .strip_prefix("redis://")
        .expect("PRIVRL_REDIS_URL is a redis:// URL");
    format!("redis://{user}:{password}@{rest}")
}

/// AUTH with a user name (Redis 6 ACLs): a run whose aggregator and agents log in as an ACL
/// user finishes with the exact model, and a wrong password stops the aggregator at once with
/// the server's refusal in its error, not a hang or a retry loop.
#[test]
fn a_run_logs_in_as_an_acl_user() {
    let Some(url) = redis_url() else {
        return;
    };
    let user = unique("user");
    let password = "correct-horse";
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut admin = client.get_connection().unwrap();
    let acl = |args: &[&str], admin: &mut redis::Connection| {
        let mut command = redis::cmd("ACL");
        for arg in args {
            command.arg(*arg);
        }
        command.query::<redis::Value>(admin).unwrap();
    };
    let secret = format!(">{password}");
    acl(
        &["SETUSER", &user, "on", &secret, "~*", "&*", "+@all"],
        &mut admin,
    );

    let run = Run::new(&with_credentials(&url, &user, password), "acl");
    finish(&run, 20, 0);
    run.cleanup();

    let wrong = Run::new(
        &with_credentials(&url, &user, "wrong-password"),
        "acl-wrong",
    );
    let mut refused = wrong.aggregator(20, "aggregator.log");
    let started = Instant::now();
    let status = refused.wait(
        Duration::from_secs(60),
        "the aggregator with a wrong password",
    );
    let stderr = wrong.stderr("aggregator.log");
    assert!(!status.success(), "{stderr}");
    // Refused by the server, not timed out after --redis-timeout (10 s) of retries.
    assert!(started.elapsed() < Duration::from_secs(8), "{stderr}");
    let lower = stderr.to_lowercase();
    assert!(
        lower.contains("auth") || lower.contains("password"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&wrong.dir);
    acl(&["DELUSER", &user], &mut admin);
}

/// A second aggregator claiming a run fences the first off: each of the first's writes
/// (θ, acknowledgements, checkpoint, close) fails with `PgcError::Fenced`. An agent's
/// sequence survives its transport; a run's keys go with `delete_run`.
#[test]
fn a_newer_aggregator_fences_the_old_one_off() {
    let Some(url) = redis_url() else {
        return;
    };
    let run_id = unique("fence");
    let old = RedisTransport::aggregator(&url, &run_id).unwrap();
    let config = config();
    let dir = temp_dir("fence");
    let mut aggregator = Aggregator::new(&config, vec![0.0; 112])
        .unwrap()
        .with_checkpoint(dir.join("c.json"))
        .unwrap();
    aggregator.bind_run(&run_id).unwrap();
    aggregator.save(&old).unwrap();
    old.publish(&aggregator.parameters()).unwrap();

    let agent = RedisTransport::connect(&url, &run_id).unwrap();
    for seq in 1..=3 {
        agent
            .submit(&Submission {
                source: "a".into(),
                seq,
                version: 0,
                score: 10.0,
                gradient: vec![0.0; 112],
            })
            .unwrap();
    }
    assert_eq!(
        RedisTransport::connect(&url, &run_id)
            .unwrap()
            .last_seq("a")
            .unwrap(),
        3
    );
    let received: Vec<Delivery> = old.receive(10, Duration::from_millis(100)).unwrap();
    assert_eq!(received.len(), 3);

    let new = RedisTransport::connect(&url, &run_id).unwrap();
    assert!(new.run_exists().unwrap());
    let epoch = new.claim().unwrap();
    assert_eq!((old.epoch(), Some(epoch)), (Some(1), Some(2)));
    let fenced = |result: Result<(), PgcError>| match result {
        Err(PgcError::Fenced {
            epoch: 1,
            current: Some(2),
            ..
        }) => {}
        other => panic!("expected Fenced, got {other:?}"),
    };
    fenced(old.publish(&aggregator.parameters()));
    fenced(old.acknowledge(&[received[0].tag.clone()]));
    fenced(old.close());
    fenced(aggregator.save(&old));
    // The new aggregator re-reads what the old one received but never acknowledged.
    assert_eq!(
        new.receive(10, Duration::from_millis(100)).unwrap().len(),
        3
    );
    new.publish(&aggregator.parameters()).unwrap();
    assert!(new.delete_run().unwrap() > 0);
    assert!(!new.run_exists().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A private redis-server (append-only file, fsync always, so a SIGKILL loses nothing).
struct Server {
    process: Option<Killed>,
    port: u16,
    dir: PathBuf,
}

impl Server {
    fn start(port: u16, dir: &Path) -> Option<Killed> {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                dir.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let child = Killed(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(child)
    }

    fn new() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = temp_dir("redis-server");
        match Self::start(port, &dir) {
            Some(process) => Some(Self {
                process: Some(process),
                port,
                dir,
            }),
            None => {
                assert!(
                    !require_redis(),
                    "PRIVRL_REQUIRE_REDIS=1 but redis-server could not be started"
                );
                eprintln!("skipping: no redis-server on PATH for the Redis-restart test");
                None
            }
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill9();
        }
    }

    fn restart(&mut self) {
        self.kill();
        self.process = Self::start(self.port, &self.dir);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Redis killed and restarted (from its append-only file) under a running aggregator and
/// agents: they reconnect and the run finishes with every submission applied once. Killed for
/// good: the aggregator fails with a clear error within its reconnect timeout, never hangs.
#[test]
fn redis_restarted_under_the_aggregator_reconnects_or_fails_clearly() {
    if std::env::var("PRIVRL_REDIS_URL").map_or(true, |u| u.is_empty()) && !require_redis() {
        eprintln!("skipping: PRIVRL_REDIS_URL is not set (the Redis tests are off)");
        return;
    }
    let Some(mut server) = Server::new() else {
        return;
    };
    let url = server.url();
    let run = Run::new(&url, "redis-restart");
    let total = 300u64;
    let mut aggregator = run.aggregator(total, "aggregator.log");
    let mut agents = run.agents("agents", total, 3);
    run.wait_applied(40, &mut aggregator);
    assert!(run.applied() < total, "finished before the restart");
    server.restart();
    let status = aggregator.wait(Duration::from_secs(120), "the aggregator");
    assert_success(status, "aggregator", &run.stderr("aggregator.log"));
    let status = agents.wait(Duration::from_secs(30), "agents");
    assert_success(status, "agents", &run.stderr("agents.log"));
    let summary = read_json(&run.summary());
    assert_eq!(summary["applied"].as_u64().unwrap(), total, "{summary}");
    let marks: BTreeMap<String, u64> =
        serde_json::from_value(run.state()["high_water"].clone()).unwrap();
    assert_eq!(marks.values().sum::<u64>(), total, "{marks:?}");

    // Gone for good: a clear error within the 10 s reconnect timeout.
    let gone = Run::new(&url, "redis-gone");
    let mut aggregator = gone.aggregator(10_000, "aggregator.log");
    let mut agents = gone.agents("agents", 10_000, 4);
    gone.wait_applied(20, &mut aggregator);
    server.kill();
    let status = aggregator.wait(Duration::from_secs(60), "the orphaned aggregator");
    assert!(!status.success());
    let stderr = gone.stderr("aggregator.log");
    assert!(stderr.contains("could not reconnect within"), "{stderr}");
    let status = agents.wait(Duration::from_secs(60), "the orphaned agents");
    assert!(!status.success());
    let _ = std::fs::remove_dir_all(&run.dir);
    let _ = std::fs::remove_dir_all(&gone.dir);
}

/// The transport of an aggregator that dies right after its `n`-th checkpoint write, before
/// that update's acknowledgement: the narrowest window of a crash.
struct DiesBeforeAck<'a> {
    inner: &'a RedisTransport,
    acks_left: std::sync::atomic::AtomicUsize,
}

impl Transport for DiesBeforeAck<'_> {
    fn publish(&self, parameters: &privrl_agents::Parameters) -> Result<(), PgcError> {
        self.inner.publish(parameters)
    }
    fn parameters(&self) -> Result<Option<privrl_agents::Parameters>, PgcError> {
        self.inner.parameters()
    }
    fn submit(&self, submission: &Submission) -> Result<(), PgcError> {
        self.inner.submit(submission)
    }
    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError> {
        self.inner.receive(max, wait)
    }
    fn acknowledge(&self, tags: &[String]) -> Result<(), PgcError> {
        use std::sync::atomic::Ordering;
        if self.acks_left.load(Ordering::SeqCst) == 0 {
            return Err(PgcError::NoParameters(Duration::ZERO));
        }
        self.acks_left.fetch_sub(1, Ordering::SeqCst);
        self.inner.acknowledge(tags)
    }
    fn reject(&self, tag: &str, reason: &str) -> Result<(), PgcError> {
        self.inner.reject(tag, reason)
    }
    fn check_fence(&self) -> Result<(), PgcError> {
        self.inner.check_fence()
    }
    fn close(&self) -> Result<(), PgcError> {
        self.inner.close()
    }
    fn is_closed(&self) -> Result<bool, PgcError> {
        self.inner.is_closed()
    }
}

/// An aggregator that dies between saving an update and acknowledging it, restarted from
/// that checkpoint: the three submissions saved but not acknowledged come back and are
/// skipped as duplicates, the one in its lost buffer is applied, and θ is the replay of all
/// 30 once in stream order.
#[test]
fn aggregator_dying_between_checkpoint_and_ack_applies_nothing_twice() {
    let Some(url) = redis_url() else {
        return;
    };
    let run_id = unique("ack-window");
    let dir = temp_dir("ack-window");
    let checkpoint = dir.join("c.json");
    let config = PgcConfig::new().with_a3c(A3cConfig::pgc_paper().with_buffer_size(3));
    let agent = RedisTransport::connect(&url, &run_id).unwrap();
    let sent: Vec<Submission> = (1..=30u64)
        .map(|i| Submission {
            source: if i % 2 == 0 { "a" } else { "b" }.into(),
            seq: i.div_ceil(2),
            version: 0,
            score: 10.0,
            gradient: (0..112)
                .map(|j| ((i * 31 + j) % 17) as f32 * 1e-3)
                .collect(),
        })
        .collect();
    for s in &sent {
        agent.submit(s).unwrap();
    }
    let first = RedisTransport::aggregator(&url, &run_id).unwrap();
    let dying = DiesBeforeAck {
        inner: &first,
        acks_left: 2.into(),
    };
    let mut aggregator = Aggregator::new(&config, vec![0.0; 112])
        .unwrap()
        .with_checkpoint(&checkpoint)
        .unwrap();
    let error = loop {
        if let Err(e) = aggregator.poll(&dying, 5, Duration::from_millis(50)) {
            break e;
        }
    };
    assert!(matches!(error, PgcError::NoParameters(_)));
    assert_eq!(
        aggregator.state().applied,
        9,
        "saved, the last 3 unacknowledged"
    );
    drop(aggregator);

    let second = RedisTransport::connect(&url, &run_id).unwrap();
    second.claim().unwrap();
    let mut aggregator = Aggregator::new(&config, vec![0.0; 112])
        .unwrap()
        .with_checkpoint(&checkpoint)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while aggregator.state().applied < 30 {
        assert!(
            Instant::now() < deadline,
            "the restarted aggregator stalled"
        );
        aggregator
            .poll(&second, 5, Duration::from_millis(50))
            .unwrap();
    }
    let state = aggregator.state();
    assert_eq!((state.applied, state.duplicates), (30, 3));
    let mut replay = Aggregator::new(&config, vec![0.0; 112]).unwrap();
    let transport = InProcess::new();
    for s in &sent {
        transport.submit(s).unwrap();
    }
    replay
        .poll(&transport, 30, Duration::from_millis(50))
        .unwrap();
    assert_eq!(state.theta, replay.state().theta);
    // Closing trims what was acknowledged: nothing is left.
    second.close().unwrap();
    assert_eq!(second.stream_len().unwrap(), 0);
    second.delete_run().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--submissions` that whole buffers cannot reach would leave the aggregator waiting for a
/// buffer that never fills: refused at once with a named error (no server needed).
#[test]
fn submissions_not_a_multiple_of_the_buffer_are_refused() {
    let dir = temp_dir("bad-buffer");
    let mut args = strings(&["aggregator"]);
    args.extend(common("redis://127.0.0.1:1/", "bad-buffer"));
    args.extend(strings(&[
        "--checkpoint",
        dir.join("c.json").to_str().unwrap(),
        "--submissions",
        "15",
    ]));
    let status = xtask(&args, &dir.join("log")).wait(Duration::from_secs(30), "the aggregator");
    assert!(!status.success());
    let stderr = std::fs::read_to_string(dir.join("log")).unwrap();
    assert!(stderr.contains("a multiple of the buffer size"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
