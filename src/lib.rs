//! prosecutor: Bayesian counterfactual fault localization.
//!
//! See `docs/architecture.md` for the code map.

pub mod baselines;
pub mod frontend;
pub mod infer;
pub mod metrics;
