//! What a printed ε covers, in one sentence per system: the unit of privacy, the group size
//! that protects more than one record, and what the run publishes outside the guarantee. Every
//! report that prints an ε prints its system's sentence (`docs/dp-sgd.md`, `docs/pgc.md` and
//! `docs/kickstarting.md` say the same at length).

/// The system whose ε a report prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivacyScope {
    /// DP-SGD DQN: ε per replay-buffer transition.
    DpSgdDqn,
    /// DP-SGD REINFORCE: ε per episode.
    DpSgdReinforce,
    /// Both DP-SGD agents in one report.
    DpSgd,
    /// PGC-A3C's local mechanisms: ε per agent over its submissions.
    Pgc,
    /// The kickstarting teacher's Dirichlet releases.
    Kickstart,
}

const ARTEFACTS: &str = "Outside every ε: the returns and episode lengths in each unit's \
    metrics.csv and summary.json, and the curves and tables built from them, are raw functions \
    of the protected data, published for measuring utility.";

impl PrivacyScope {
    /// The sentence.
    pub fn sentence(self) -> String {
        let scope = match self {
            Self::DpSgdDqn => DQN,
            Self::DpSgdReinforce => REINFORCE,
            Self::DpSgd => return format!("**What ε covers.** {DQN} {REINFORCE} {ARTEFACTS}"),
            Self::Pgc => {
                "ε is per agent over all its submissions (ε/T each, sequential composition), \
                 local: the aggregator sees each noisy gradient. It covers the gradients only: \
                 every submission also carries its episode's score (length) in the clear, a \
                 function of the agent's private gravity, which the aggregator reads and sums, \
                 as the paper assumes scores to be public."
            }
            Self::Kickstart => {
                "ε and δ are per teacher observation, for observations within the adjacency b \
                 (Theorem 1), composed over the releases a student run received (basic and \
                 advanced composition); the student's own episodes are not protected."
            }
        };
        format!("**What ε covers.** {scope} {ARTEFACTS}")
    }
}

const DQN: &str = "DP-SGD DQN's ε is per replay-buffer transition (s, a, r, s′) under the \
    stated adjacency; one observation lives in two transitions (s′ of step t is s of t + 1), so \
    protecting an observation is group privacy of size 2, and an episode of T steps a group of \
    T.";

const REINFORCE: &str = "DP-SGD REINFORCE's ε is per episode: every step uses a fixed, public \
    number L of fresh episodes and divides by L, so a neighbouring run has one episode's \
    gradient replaced by zero (zero-out adjacency, which for one Gaussian release at q = 1 is \
    the add/remove figure printed).";
