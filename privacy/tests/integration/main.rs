//! The privacy crate's integration tests, one module per topic, linked into one test binary:
//! every test binary links Burn, so one binary instead of many saves link time and disk.

mod composition_ledger;
mod dirichlet;
mod gaussian_dpsgd;
mod lipschitz;
mod local_mechanisms;
mod properties;
mod rdp_opacus;
