//! The agents crate's integration tests, one module per topic, linked into one test binary:
//! every test binary links Burn, so one binary instead of many saves link time and disk.

mod checkpoints;
mod kickstart;
mod learning;
mod losses;
mod networks;
mod per_sample;
mod pgc;
mod private_training;
mod second_order;
mod victim_second_order;
