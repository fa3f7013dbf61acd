//! Parallel jobs: named jobs on a pool of threads, with an overall progress bar and per-job
//! bars; a failing or panicking job is reported by name and does not stop the others.

use anyhow::{anyhow, bail, ensure, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The progress-bar style every long loop uses: prefix, bar, position, rate-free ETA, message.
pub fn progress_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix:>20.bold} [{bar:32.cyan/blue}] {pos:>7}/{len:<7} {percent:>3}% \
         {elapsed_precise} eta {eta:<4} {msg}",
    )
    .expect("the progress template is a valid constant")
    .progress_chars("=> ")
}

/// A progress bar of `len` steps in [`progress_style`], labelled `prefix`.
pub fn progress_bar(len: u64, prefix: impl Into<String>) -> ProgressBar {
    ProgressBar::new(len)
        .with_style(progress_style())
        .with_prefix(prefix.into())
}

/// One unit of a sweep: a unique name (usually the run name) and its input.
#[derive(Clone, Debug)]
pub struct Job<T> {
    /// Unique job name, used in progress bars and failure reports.
    pub name: String,
    /// What the job function receives.
    pub input: T,
}

impl<T> Job<T> {
    /// A job called `name` with `input`.
    pub fn new(name: impl Into<String>, input: T) -> Self {
        Self {
            name: name.into(),
            input,
        }
    }
}

/// Handle passed to each job: its name and a way to add its own progress bars.
pub struct JobProgress {
    name: String,
    multi: MultiProgress,
    overall: ProgressBar,
    bars: Mutex<Vec<ProgressBar>>,
}

impl JobProgress {
    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A bar of `len` steps for this job, shown above the overall bar and removed when the
    /// job returns.
    pub fn bar(&self, len: u64) -> ProgressBar {
        let bar = self
            .multi
            .insert_before(&self.overall, progress_bar(len, self.name.clone()));
        self.bars
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(bar.clone());
        bar
    }

    /// Runs `f` (e.g. a `tracing` call) with the bars hidden, so output does not tear them.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }

    fn finish(&self) {
        let bars = std::mem::take(&mut *self.bars.lock().unwrap_or_else(|p| p.into_inner()));
        for bar in bars {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
    }
}

/// The result of one job.
#[derive(Debug)]
pub struct JobOutcome<R> {
    /// The job's name.
    pub name: String,
    /// What the job returned; a panic becomes an error.
    pub result: Result<R>,
    /// Wall-clock time the job took.
    pub elapsed: Duration,
}

/// The results of [`run_parallel`], in job order.
#[derive(Debug)]
pub struct Outcomes<R>(pub Vec<JobOutcome<R>>);

impl<R> Outcomes<R> {
    /// The jobs that failed.
    pub fn failures(&self) -> impl Iterator<Item = &JobOutcome<R>> {
        self.0.iter().filter(|o| o.result.is_err())
    }

    /// Names of the jobs that succeeded.
    pub fn succeeded_names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|o| o.result.is_ok())
            .map(|o| o.name.clone())
            .collect()
    }

    /// `Ok` if every job succeeded, else one error counting the failed `what` and naming each
    /// with its cause: for a caller that first writes what the successful jobs produced (a
    /// report from the units on disk), then fails.
    pub fn ensure_all_succeeded(&self, what: &str) -> Result<()> {
        let failed: Vec<String> = self
            .0
            .iter()
            .filter_map(|o| {
                o.result
                    .as_ref()
                    .err()
                    .map(|e| format!("{}: {e:#}", o.name))
            })
            .collect();
        ensure!(
            failed.is_empty(),
            "{} {what} failed:\n{}",
            failed.len(),
            failed.join("\n")
        );
        Ok(())
    }

    /// All `(name, value)` pairs, or one error listing every failed job with its cause.
    pub fn into_ok(self) -> Result<Vec<(String, R)>> {
        let total = self.0.len();
        let mut ok = Vec::with_capacity(total);
        let mut failed = Vec::new();
        for outcome in self.0 {
            match outcome.result {
                Ok(value) => ok.push((outcome.name, value)),
                Err(e) => failed.push(format!("  {}: {e:#}", outcome.name)),
            }
        }
        if failed.is_empty() {
            Ok(ok)
        } else {
            bail!(
                "{} of {total} jobs failed:\n{}",
                failed.len(),
                failed.join("\n")
            )
        }
    }
}

/// Runs `jobs` on a pool of `threads` workers (0: one per core), with one overall progress
/// bar; each job gets a [`JobProgress`] for its own bars. A failing or panicking job does not
/// stop the others; failures are logged by name as they happen and returned in order.
pub fn run_parallel<T, R, F>(jobs: Vec<Job<T>>, threads: usize, f: F) -> Result<Outcomes<R>>
where
    T: Send,
    R: Send,
    F: Fn(T, &JobProgress) -> Result<R> + Sync,
{
    let mut names = HashSet::new();
    for job in &jobs {
        ensure!(
            names.insert(job.name.as_str()),
            "two jobs are named {:?}",
            job.name
        );
    }
    let multi = MultiProgress::new();
    let overall = multi.add(progress_bar(jobs.len() as u64, "jobs"));
    let failed = Mutex::new(0usize);
    let started = Instant::now();

    // Plain threads, not a rayon pool: a job's autodiff sections must be opened from a thread
    // that only waits (privrl_agents::autodiff), and each job's numbers depend on its seed
    // alone, whichever thread runs it and whatever runs beside it.
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let count = jobs.len();
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let results = Mutex::new((0..count).map(|_| None).collect::<Vec<_>>());
    let run_job = |job: Job<T>| {
        let progress = JobProgress {
            name: job.name,
            multi: multi.clone(),
            overall: overall.clone(),
            bars: Mutex::new(Vec::new()),
        };
        let start = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| f(job.input, &progress)))
            .unwrap_or_else(|payload| Err(anyhow!("panicked: {}", panic_message(&*payload))));
        progress.finish();
        if let Err(e) = &result {
            let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
            *failed += 1;
            overall.set_message(format!("{failed} failed"));
            multi.suspend(|| tracing::error!(job = %progress.name, "job failed: {e:#}"));
        }
        let elapsed = start.elapsed();
        if result.is_ok() {
            multi.suspend(|| tracing::debug!(job = %progress.name, "finished in {elapsed:.1?}"));
        }
        overall.inc(1);
        JobOutcome {
            name: progress.name,
            result,
            elapsed,
        }
    };
    std::thread::scope(|scope| {
        for i in 0..threads.min(count) {
            let (queue, results, run_job) = (&queue, &results, &run_job);
            std::thread::Builder::new()
                .name(format!("sweep-{i}"))
                .spawn_scoped(scope, move || loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((index, job)) = next else { break };
                    let outcome = run_job(job);
                    results.lock().unwrap_or_else(|p| p.into_inner())[index] = Some(outcome);
                })
                .context("starting a sweep thread")?;
        }
        anyhow::Ok(())
    })?;
    let outcomes: Vec<JobOutcome<R>> = results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|o| o.expect("every job ran"))
        .collect();
    overall.finish_and_clear();
    let failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    tracing::info!(
        "{} of {} jobs succeeded in {:.1?}",
        outcomes.len() - failed,
        outcomes.len(),
        started.elapsed()
    );
    Ok(Outcomes(outcomes))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn run_parallel_collects_results_and_names_failures() {
        let jobs: Vec<Job<u64>> = (0..8).map(|i| Job::new(format!("job{i}"), i)).collect();
        let calls = AtomicUsize::new(0);
        let outcomes = run_parallel(jobs, 3, |i, progress| {
            calls.fetch_add(1, Ordering::Relaxed);
            let bar = progress.bar(4);
            bar.inc(4);
            match i {
                3 => bail!("diverged at step {i}"),
                5 => panic!("boom {i}"),
                _ => Ok(i * 10),
            }
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 8);
        let names: Vec<&str> = outcomes.0.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            ["job0", "job1", "job2", "job3", "job4", "job5", "job6", "job7"]
        );
        let failed: Vec<&str> = outcomes.failures().map(|o| o.name.as_str()).collect();
        assert_eq!(failed, ["job3", "job5"]);
        assert_eq!(outcomes.succeeded_names().len(), 6);
        let err = outcomes
            .ensure_all_succeeded("units")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("2 units failed:\njob3: diverged at step 3\n"),
            "{err}"
        );
        assert!(err.contains("job5: panicked: boom 5"), "{err}");
        let err = outcomes.into_ok().unwrap_err().to_string();
        assert!(err.contains("2 of 8 jobs failed"), "{err}");
        assert!(err.contains("job3: diverged at step 3"), "{err}");
        assert!(err.contains("job5: panicked: boom 5"), "{err}");

        let ok = run_parallel(
            vec![Job::new("a", 1), Job::new("b", 2)],
            0,
            |x, _| Ok(x + 1),
        )
        .unwrap()
        .into_ok()
        .unwrap();
        assert_eq!(ok, [("a".to_owned(), 2), ("b".to_owned(), 3)]);
        assert!(run_parallel(vec![Job::new("a", 1), Job::new("a", 2)], 1, |x, _| Ok(x)).is_err());
    }
}
