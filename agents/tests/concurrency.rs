//! Concurrent autodiff is correct: threads that each build and differentiate their own graphs
//! get exactly the gradients they would get alone (see `privrl_agents::autodiff`).
//!
//! Without sections this workload loses or corrupts gradients and can deadlock in Burn 0.21
//! (`cargo run --release -p privrl-agents --example autodiff_race` measures it); with them,
//! every one of 10,000 backwards must be right.

#[path = "support/race.rs"]
mod race;

#[test]
fn ten_thousand_concurrent_backwards_are_all_right() {
    // 4 threads × 3,334 iterations, half of them second-order (two backwards each).
    let tally = race::stress(4, 3_334, true);
    assert!(tally.backwards >= 10_000, "{tally:?}");
    assert_eq!(tally.failures(), 0, "{tally:?}");
}
