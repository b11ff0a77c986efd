//! prosecutor: Bayesian counterfactual fault localization.
//!
//! See `docs/architecture.md` for the code map.

pub mod baselines;
pub mod bench;
pub mod cdg;
pub mod cli;
pub mod compress;
pub mod dump;
pub mod epg;
pub mod error;
pub mod eval;
pub mod explain;
pub mod forward;
pub mod frontend;
pub mod html;
pub mod infer;
pub mod intern;
pub mod jobs;
pub mod localize;
pub mod metrics;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod synth;
pub mod variants;
