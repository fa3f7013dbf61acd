//! Accountants: what a sequence of releases has spent.
//!
//! - [`ReleaseSchedule`]: the history of a DP-SGD run (subsampled Gaussian releases, each at
//!   the q it used) and its ε by the RDP or the PLD accountant; the one DP-SGD accounting of
//!   privrl.
//! - [`RdpAccountant`]: the RDP accountant at orders of one's choosing, a view of a
//!   [`ReleaseSchedule`] (its history *is* one), as Opacus' `RDPAccountant` over its
//!   `history`.
//! - [`crate::BasicAccountant`], [`crate::AdvancedAccountant`]: accountants of other
//!   mechanisms, each an [`crate::Accountant`].

mod rdp;
mod schedule;

pub use rdp::RdpAccountant;
pub use schedule::ReleaseSchedule;
