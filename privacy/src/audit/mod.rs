//! Privacy auditing: an empirical, confidence lower bound on ε beside every accountant's
//! upper bound.
//!
//! An accountant's ε is an upper bound, and only as good as the code of the mechanism it
//! describes. An audit runs the mechanism on adjacent inputs, lets a membership test guess
//! which input was used, and turns the test's success into a lower bound on ε that holds with
//! a stated confidence whatever the mechanism (Jagielski, Ullman & Oprea 2020; Nasr et al.
//! 2021, 2023). A lower bound above the accountant's ε is a bug in one of them.
//!
//! - [`counting_audit`]: thresholds on held-in and held-out canary scores, exact
//!   Clopper–Pearson bounds on the rates ([`clopper_pearson_lower`],
//!   [`clopper_pearson_upper`]), ε from Kairouz et al.'s hypothesis-testing view
//!   ([`counting_epsilon_lower_bound`]); the threshold is fixed in advance or chosen on a
//!   separate split ([`ThresholdChoice`]), never on the counted scores.
//! - [`one_run_epsilon_lower_bound`]: Steinke, Nasr & Jagielski 2023, many canaries in one
//!   run, guesses and abstentions ([`one_run_guesses`]).
//! - [`gaussian_dp_audit`]: the same tests read as a lower bound on μ of μ-GDP
//!   ([`gaussian_dp_mu_lower_bound`]), and its ε at δ ([`gdp_epsilon`]) where the mechanism's
//!   trade-off curve is Gaussian (Nasr et al. 2023).
//!
//! Every bound is rounded towards the conservative side (a lower bound down).

mod binomial;
mod counting;
mod one_run;

pub use binomial::{clopper_pearson_lower, clopper_pearson_upper};
pub use counting::{
    counting_audit, counting_epsilon_lower_bound, gaussian_dp_audit, gaussian_dp_mu_lower_bound,
    gdp_epsilon, AuditCounts, CanaryScores, ThresholdAudit, ThresholdChoice,
};
pub use one_run::{one_run_epsilon_lower_bound, one_run_guesses, one_run_p_value, OneRunGuesses};
