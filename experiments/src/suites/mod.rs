//! One module per paper, plus the leakage suite that joins two of them. Each suite plans its
//! runs as resumable units (one setting × seed, [`crate::run::RunDir`]), runs the missing ones
//! in parallel ([`crate::sweep::run_parallel`]) and regenerates its report from every unit on
//! disk.

pub mod dpsgd;
pub mod inversion;
pub mod kickstart;
pub mod leakage;
pub mod pgc;
