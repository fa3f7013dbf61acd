//! privrl's paper reproductions as a library: the experiment suites, the sweeps that run them
//! as resumable units, the run directories they write and the reports and plots they make.
//! `cargo xtask` is a thin command line over this crate.
//!
//! | module | what |
//! |---|---|
//! | [`suites`] | one suite per paper (kickstarting, inversion, PGC, DP-SGD) and the leakage suite |
//! | [`train`] | `cargo xtask train`: PPO, DQN, REINFORCE, A3C with learning curves |
//! | [`quickstart`] | every suite's quick mode and one report |
//! | [`run`] | run directories, metrics CSV, JSON files |
//! | [`summary`] | the typed summaries suites write and read |
//! | [`sweep`] | seeds × settings as parallel jobs, shards across machines and their merge |
//! | [`unit`](mod@unit) | the unit template of the long suites: plan, units on disk, resume, report |
//! | [`report`] | markdown reports, tables, number formats and plots |
//! | [`backend`] | the only place a concrete Burn backend is named |
//!
//! The option structs derive [`clap::Args`], so the command line, the quickstart and a library
//! caller share one definition of every option and its default.

pub mod backend;
pub mod bench;
pub mod doctor;
pub mod mechanism_arg;
pub mod noise_rng;
pub mod quickstart;
pub mod report;
pub mod room_sheet;
pub mod run;
pub mod suites;
pub mod summary;
pub mod sweep;
pub mod train;
pub mod unit;
