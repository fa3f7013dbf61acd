//! Accountants: what a sequence of releases has spent.
//!
//! - [`ReleaseSchedule`]: the history of a DP-SGD run (subsampled Gaussian releases, each at
//!   the q it used) and its ε by the RDP or the PLD accountant; the one DP-SGD accounting of
//!   privrl.
//! - [`crate::RdpAccountant`], [`crate::BasicAccountant`], [`crate::AdvancedAccountant`]: the
//!   accountants behind it and for other mechanisms, each an [`crate::Accountant`].

mod schedule;

pub use schedule::ReleaseSchedule;
