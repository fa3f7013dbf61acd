//! Measures Burn 0.21's cross-thread autodiff race, without and with privrl's autodiff
//! sections: wrong, missing and panicked gradients per 1,000 backwards.
//!
//! ```sh
//! cargo run --release -p privrl-agents --example autodiff_race -- [threads] [iterations]
//! ```
//!
//! A deadlock (Burn's lock-order inversion between `backward` and graph merging) is reported
//! after 60 s without progress, and the process exits.

#[path = "../tests/support/race.rs"]
mod race;

use std::sync::mpsc;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let iterations: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_500);
    println!("{threads} threads x {iterations} iterations (half second-order)");
    for sections in [true, false] {
        let label = if sections {
            "with sections"
        } else {
            "without sections"
        };
        let (send, receive) = mpsc::channel();
        let start = Instant::now();
        std::thread::spawn(move || {
            let tally = race::stress(threads, iterations, sections);
            let _ = send.send(tally);
        });
        match receive.recv_timeout(Duration::from_secs(60 + iterations as u64 / 10)) {
            Ok(t) => {
                let per_1000 = 1000.0 * t.failures() as f64 / t.backwards as f64;
                println!(
                    "{label}: {} backwards in {:.1?}: {} wrong, {} missing, {} panicked \
                     ({per_1000:.2} failures per 1,000 backwards)",
                    t.backwards,
                    start.elapsed(),
                    t.wrong,
                    t.missing,
                    t.panicked
                );
            }
            Err(_) => {
                println!(
                    "{label}: no result after {:.0?}: deadlocked",
                    start.elapsed()
                );
                std::process::exit(if sections { 1 } else { 0 });
            }
        }
    }
}
