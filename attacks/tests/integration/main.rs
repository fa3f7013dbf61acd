//! The attacks crate's integration tests, one module per topic, linked into one test binary:
//! every test binary links Burn, so one binary instead of many saves link time and disk.

mod common;
mod defence;
mod end_to_end;
mod metrics;
mod parts;
mod rules;
