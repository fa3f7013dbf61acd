//! The envs crate's integration tests, one module per topic, linked into one test binary:
//! every test binary links Burn, so one binary instead of many saves link time and disk.

mod env_behaviour;
mod gymnasium_bridge;
mod gymnasium_parity;
mod room;
