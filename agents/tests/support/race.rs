//! The autodiff race workload, shared by `tests/concurrency.rs` (with sections, in CI) and
//! `examples/autodiff_race.rs` (with and without, to measure the race).
//!
//! Each thread owns parameters and data of its own (no node is shared between threads) and,
//! again and again, builds a graph with the ops privrl's networks and attacks use (matmul,
//! Burn's conv2d, privrl's im2col convolution, `cat`, `stack`, softmax) and differentiates it;
//! every other iteration is a second-order gradient of a gradient-matching loss, as in QGI.
//! Every result is compared with the same computation done alone, before any thread starts.

use std::panic::{catch_unwind, AssertUnwindSafe};

use burn::backend::{Autodiff, NdArray};
use burn::tensor::activation::{relu, softmax};
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::{autodiff, conv2d_im2col};

type Inner = Autodiff<NdArray>;
type Outer = Autodiff<Autodiff<NdArray>>;

/// How one thread's backwards went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Backward passes run (first- and second-order).
    pub backwards: usize,
    /// Results that differ from the lone computation.
    pub wrong: usize,
    /// Results with a parameter's gradient missing.
    pub missing: usize,
    /// Backwards that panicked (Burn's "Node should have a step registered" and the like).
    pub panicked: usize,
}

impl Tally {
    /// Wrong, missing and panicked together.
    pub fn failures(&self) -> usize {
        self.wrong + self.missing + self.panicked
    }

    /// Adds another thread's tally.
    pub fn add(&mut self, other: Tally) {
        self.backwards += other.backwards;
        self.wrong += other.wrong;
        self.missing += other.missing;
        self.panicked += other.panicked;
    }
}

/// One thread's parameters and data.
pub struct Workload {
    w_vec: Tensor<Inner, 2>,
    k_burn: Tensor<Inner, 4>,
    k_im2col: Tensor<Inner, 4>,
    b_im2col: Tensor<Inner, 1>,
    w_head: Tensor<Inner, 2>,
    image: Tensor<Inner, 4>,
    vector: Tensor<Inner, 2>,
    target: Tensor<Inner, 2>,
    reference: Option<(Vec<Vec<f32>>, Vec<f32>)>,
}

/// What one backward returns: every parameter's gradient (`None` if missing), or ∂m/∂x.
type FirstOrder = Vec<Option<Vec<f32>>>;

fn host<const D: usize>(t: Tensor<NdArray, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().to_vec().expect("f32 data")
}

fn random<const D: usize>(shape: [usize; D], seed: u64) -> Tensor<Inner, D> {
    // From a seeded host generator, not Burn's global one, so threads do not share state.
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    Tensor::from_data(TensorData::new(values, shape), &Default::default())
}

impl Workload {
    /// Thread `seed`'s parameters and data, and its reference results computed alone.
    pub fn new(seed: u64) -> Self {
        let s = seed * 16;
        let mut w = Workload {
            w_vec: random([6, 8], s).require_grad(),
            k_burn: random([2, 1, 3, 3], s + 1).require_grad(),
            k_im2col: random([2, 1, 3, 3], s + 2).require_grad(),
            b_im2col: random([2], s + 3).require_grad(),
            w_head: random([2 * 32 + 8, 3], s + 4).require_grad(),
            image: random([2, 1, 6, 6], s + 5),
            vector: random([2, 6], s + 6),
            target: random::<2>([2, 3], s + 7).abs(),
            reference: None,
        };
        let first = autodiff::exclusive(|| w.first_order())
            .into_iter()
            .map(|g| g.expect("alone, every gradient is present"))
            .collect();
        let second = autodiff::exclusive(|| w.second_order());
        w.reference = Some((first, second));
        w
    }

    /// Loss over matmul, two convolutions, `cat`, `stack` and softmax; gradients of every
    /// parameter.
    fn first_order(&self) -> FirstOrder {
        let options = ConvOptions::new([1, 1], [0, 0], [1, 1], 1);
        let a = relu(conv2d(
            self.image.clone(),
            self.k_burn.clone(),
            None,
            options,
        ))
        .reshape([2, 32]);
        let b = relu(conv2d_im2col(
            self.image.clone(),
            self.k_im2col.clone(),
            self.b_im2col.clone(),
            1,
            0,
        ))
        .reshape([2, 32]);
        let v = self.vector.clone().matmul(self.w_vec.clone()).tanh();
        let h = Tensor::cat(vec![a, b, v], 1);
        let h = Tensor::stack::<3>(vec![h.clone(), h.mul_scalar(0.5)], 0).sum_dim(0);
        let logits = h.reshape([2, 2 * 32 + 8]).matmul(self.w_head.clone());
        let loss = (softmax(logits, 1) - self.target.clone())
            .powi_scalar(2)
            .sum();
        let grads = autodiff::backward(&loss);
        let params = [
            self.w_vec.grad(&grads).map(host),
            self.k_burn.grad(&grads).map(host),
            self.k_im2col.grad(&grads).map(host),
            self.b_im2col.grad(&grads).map(host),
            self.w_head.grad(&grads).map(host),
        ];
        params.into_iter().collect()
    }

    /// ∂m/∂x for m(x) = ‖∂L(x)/∂W‖², the shape of QGI's gradient matching: an outer backward
    /// whose result is differentiated again by the inner autodiff.
    fn second_order(&self) -> Vec<f32> {
        let x = Tensor::<Inner, 2>::from_inner(self.vector.clone().inner()).require_grad();
        let w = Tensor::<Outer, 2>::from_inner(Tensor::from_inner(self.w_vec.clone().inner()))
            .require_grad();
        let head = Tensor::<Outer, 2>::from_inner(Tensor::from_inner(self.w_head.clone().inner()))
            .slice([0..8, 0..3])
            .require_grad();
        let h = Tensor::<Outer, 2>::from_inner(x.clone())
            .matmul(w.clone())
            .tanh();
        let h = Tensor::cat(vec![h.clone(), h], 0);
        let loss = softmax(h.matmul(head.clone()), 1)
            .log()
            .mul(Tensor::from_inner(Tensor::from_inner(
                Tensor::cat(vec![self.target.clone(), self.target.clone()], 0).inner(),
            )))
            .sum()
            .neg();
        let grads = autodiff::backward(&loss);
        let (gw, gh) = (w.grad(&grads), head.grad(&grads));
        let (Some(gw), Some(gh)) = (gw, gh) else {
            return Vec::new();
        };
        let matching = gw.powi_scalar(2).sum() + gh.powi_scalar(2).sum();
        let grads = autodiff::backward(&matching);
        x.grad(&grads).map(host).unwrap_or_default()
    }

    /// Runs `iterations` backwards (alternately first- and second-order), each in a section if
    /// `sections`, and scores them against the reference.
    pub fn run(&self, iterations: usize, sections: bool) -> Tally {
        let (first_ref, second_ref) = self.reference.as_ref().expect("built by new");
        let mut tally = Tally::default();
        for i in 0..iterations {
            let work = || {
                if i % 2 == 0 {
                    Score::of_first(&self.first_order(), first_ref)
                } else {
                    Score::of_second(&self.second_order(), second_ref)
                }
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                if sections {
                    autodiff::exclusive(work)
                } else {
                    unguarded(work)
                }
            }));
            tally.backwards += if i % 2 == 0 { 1 } else { 2 };
            match outcome {
                Ok(Score::Right) => {}
                Ok(Score::Wrong) => tally.wrong += 1,
                Ok(Score::Missing) => tally.missing += 1,
                Err(_) => tally.panicked += 1,
            }
        }
        tally
    }
}

/// Runs `work` with no section, as privrl did before sections: the race's "before".
fn unguarded<R>(work: impl FnOnce() -> R) -> R {
    // `autodiff::backward` checks for a section in debug builds; the example runs in release.
    work()
}

enum Score {
    Right,
    Wrong,
    Missing,
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs()))
}

impl Score {
    fn of_first(got: &FirstOrder, reference: &[Vec<f32>]) -> Score {
        if got.iter().any(Option::is_none) {
            return Score::Missing;
        }
        if got
            .iter()
            .flatten()
            .zip(reference)
            .all(|(g, r)| close(g, r))
        {
            Score::Right
        } else {
            Score::Wrong
        }
    }

    fn of_second(got: &[f32], reference: &[f32]) -> Score {
        if got.is_empty() {
            Score::Missing
        } else if close(got, reference) {
            Score::Right
        } else {
            Score::Wrong
        }
    }
}

/// `threads` threads, each with its own [`Workload`], each running `iterations` backwards.
pub fn stress(threads: usize, iterations: usize, sections: bool) -> Tally {
    let workloads: Vec<Workload> = (0..threads as u64).map(Workload::new).collect();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = workloads
            .iter()
            .map(|w| s.spawn(move || w.run(iterations, sections)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("a stress thread panicked outside a backward")
            })
            .collect()
    });
    let mut total = Tally::default();
    for t in tallies {
        total.add(t);
    }
    total
}
