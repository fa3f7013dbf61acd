//! Concurrent use of Burn 0.21's autodiff made safe: every graph is built and differentiated
//! inside an **autodiff section**, and a process runs one section at a time.
//!
//! # Why
//!
//! burn-autodiff 0.21 keeps one process-wide registry of graphs. At the end of every
//! `backward()` it frees each registered graph that has no live tensor at that instant
//! (`GraphCleaner::cleanup_orphaned_entries`). A graph that another thread is building has such
//! instants: `cat`, `stack` and other ops drop their inputs' references before the output's
//! node is registered. When a backward ends in one of them, the other thread's steps are freed,
//! and its own backward later returns gradients with parameters missing ("the shared gradient
//! has no entry `vector_layers.0.weight`") or fails outright. The same registry locks a graph
//! and then the registry in `backward`, but the registry and then a graph when merging graphs,
//! so two threads can also deadlock. Burn fixed both in 0.22 (upstream issues 5573 and 5193),
//! but 0.22 forbids the nested `Autodiff<Autodiff<B>>` that gradient inversion needs.
//!
//! `agents/tests/concurrency.rs` reproduces the race: threads that each build and
//! differentiate graphs of matmul, convolution, `cat`, `stack`, softmax and a second-order
//! loss, with every gradient compared with the same computation done alone
//! (`cargo run --release -p privrl-agents --example autodiff_race` measures it with and
//! without sections).
//!
//! # The design, and why this one
//!
//! [`exclusive`] runs a closure as the process's only section: a process-wide mutex is held
//! from before the first tracked op to after the last `backward()` and optimiser step, so no
//! backward can ever observe another graph mid-op, and no two graphs are merged while one is
//! differentiated. Work outside sections stays parallel: environments, acting on host copies
//! or on the inner (non-autodiff) backend, aggregation, I/O.
//!
//! The alternatives were measured or reasoned out and rejected:
//! - *Graphs built so that no racy op occurs* (no `cat` or `stack`): any op that drops its
//!   inputs before registering (reshape chains, slices of freed tensors) reopens the window;
//!   it cannot be proven for a user's own model.
//! - *Fresh leaves per thread*: privrl does this already (A3C and PGC workers copy θ), and the
//!   race remains, since it needs no shared node.
//! - *One process per job*: safe, but leaves the library unsafe for a user's threads.
//!
//! Sections run on a dedicated rayon pool. A lock held by a thread that also steals work
//! (rayon's `join` and `scope` run queued jobs while they wait) would deadlock as soon as a
//! stolen job wanted the same lock, so: the lock is taken by the calling thread, which then
//! only sleeps; the section's work runs on the section pool, into which only the lock holder
//! puts work, so anything that runs on that pool belongs to the current section, and a nested
//! [`exclusive`] there runs inline. A caller that is itself a worker of some other rayon pool
//! (a user's `par_iter`) hands the wait to a short-lived helper thread, which never steals. The
//! pool also keeps burn-ndarray's parallel kernels on threads that are already awake: called
//! from outside a pool, each of them would cost a wake-up and a sleep (the reason for the old
//! `on_compute_pool`).
//!
//! Within one section, graphs must be built and differentiated one after another: code inside
//! a section must not run two graphs at once with `rayon::join` or threads of its own.
//!
//! # Determinism
//!
//! Sections change no arithmetic. With them, a computation's result does not depend on what
//! other threads do, so a seeded job gives the same numbers alone or beside others.
//!
//! # Example
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::Tensor;
//! use privrl_agents::autodiff;
//!
//! type B = Autodiff<NdArray>;
//! let device = Default::default();
//! // Two threads, each differentiating its own graph: each in its own section.
//! let grads: Vec<Vec<f32>> = std::thread::scope(|s| {
//!     let workers: Vec<_> = (1..=2)
//!         .map(|k| {
//!             let device = &device;
//!             s.spawn(move || {
//!                 autodiff::exclusive(|| {
//!                     let x = Tensor::<B, 1>::from_floats([1.0, 2.0], device).require_grad();
//!                     let loss = (x.clone() * x.clone()).sum().mul_scalar(k as f32);
//!                     let g = x.grad(&autodiff::backward(&loss)).unwrap();
//!                     g.into_data().to_vec::<f32>().unwrap()
//!                 })
//!             })
//!         })
//!         .collect();
//!     workers.into_iter().map(|w| w.join().unwrap()).collect()
//! });
//! assert_eq!(grads, vec![vec![2.0, 4.0], vec![4.0, 8.0]]);
//! ```

use std::panic::resume_unwind;
use std::sync::{Mutex, OnceLock, PoisonError};

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

/// Serialises sections across the process.
static SECTION: Mutex<()> = Mutex::new(());

/// The pool that runs sections; only the holder of [`SECTION`] puts work into it.
static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();

fn pool() -> &'static rayon::ThreadPool {
    POOL.get_or_init(|| {
        // As many threads as rayon's global pool would have (RAYON_NUM_THREADS, else cores).
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|i| format!("privrl-autodiff-{i}"))
            .build()
            .expect("starting the autodiff section pool")
    })
}

/// Whether the current thread is running inside an autodiff section.
pub(crate) fn in_section() -> bool {
    POOL.get()
        .is_some_and(|pool| pool.current_thread_index().is_some())
}

/// Runs `work` as the process's only autodiff section and returns its result.
///
/// Every op on tracked tensors and every `backward()` belongs in a section; privrl's own entry
/// points (agents' `update` and `gradient`, the attacks, the victims) open one themselves, so a
/// user needs this only for graphs of their own. Nested calls run inline. A panic in `work`
/// ends the section and resumes in the caller.
pub fn exclusive<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    if in_section() {
        return work();
    }
    if rayon::current_thread_index().is_some() {
        // A worker of another pool would run that pool's queued jobs while it waits, and one
        // of them could want this lock: wait on a thread that only waits.
        return std::thread::scope(|scope| {
            scope
                .spawn(|| exclusive(work))
                .join()
                .unwrap_or_else(|payload| resume_unwind(payload))
        });
    }
    let _section = SECTION.lock().unwrap_or_else(PoisonError::into_inner);
    pool().install(work)
}

/// `loss.backward()`, checked (in debug builds) to run inside a section.
pub fn backward<B: AutodiffBackend, const D: usize>(loss: &Tensor<B, D>) -> B::Gradients {
    debug_assert!(
        in_section(),
        "backward() outside an autodiff section: wrap the graph in privrl_agents::autodiff::exclusive"
    );
    loss.backward()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_nest_and_run_on_the_pool() {
        assert!(!in_section());
        let nested = exclusive(|| {
            assert!(in_section());
            exclusive(in_section)
        });
        assert!(nested);
        assert!(!in_section());
    }

    #[test]
    fn sections_exclude_each_other() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let inside = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        exclusive(|| {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_worker_of_another_pool_does_not_deadlock() {
        use rayon::prelude::*;
        // Each job holds a section while other jobs of the same pool wait for one.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let total: usize = pool.install(|| {
            (0..16)
                .into_par_iter()
                .map(|i| exclusive(|| (0..100).into_par_iter().map(|j| i * j).sum::<usize>()))
                .sum()
        });
        assert_eq!(total, (0..16).sum::<usize>() * (0..100).sum::<usize>());
    }

    #[test]
    fn a_panic_ends_the_section() {
        let caught = std::panic::catch_unwind(|| exclusive(|| panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(exclusive(|| 7), 7);
    }
}
