//! prosecutor: Bayesian counterfactual fault localization.
//!
//! See `docs/architecture.md` for the code map.

pub mod baselines;
pub mod frontend;
pub mod infer;
pub mod metrics;
pub mod dump;
pub mod intern;
pub mod cdg;
pub mod forward;
pub mod epg;
pub mod cli;
pub mod error;
pub mod pipeline;
pub mod synth;
pub mod bench;
pub mod compress;
pub mod progress;
pub mod localize;
pub mod report;
pub mod eval;
