//! One module per paper, plus the leakage suite that joins two of them. The long suites (the
//! DP-SGD controls, PGC's ablation and tables, kickstarting) plan their runs as resumable units
//! (one setting × seed) on the template of [`crate::unit`]: the missing ones run (in parallel
//! through [`crate::sweep::run_parallel`], or one at a time where a unit runs its own threads),
//! each written atomically as it finishes, and the report is regenerated from every unit on
//! disk. A unit that is a whole run directory ([`crate::run::RunDir`]) is reused when its
//! `config.json` is unchanged ([`crate::run::RunDir::completed_with`]).

pub mod audit;
pub mod dp_ppo;
pub mod dpsgd;
pub mod inversion;
pub mod kickstart;
pub mod leakage;
pub mod pgc;
