//! Evaluation metrics: ranked lists with tie groups, position/top-k/EXAM,
//! Standard and Steinmann rank scores, and HT_Rank (seed 002).
//!
//! * [`ranking`]: [`Ranking`], [`Position`], [`TopK`], [`TieMode`].
//! * [`htrank`]: Markov-chain HT_Rank (Defs. 28/29/30), exact and Monte Carlo.
//! * [`aggregate`]: summaries, % located at an effort budget, %Δ, truncation.
//! * [`linalg`]: small dense LU over `f64` and exact [`linalg::Rational`].

pub mod aggregate;
pub mod htrank;
pub mod linalg;
pub mod ranking;

pub use htrank::{ht_rank_def28, ht_rank_def29, HtEngine, HtRankConfig, HtRankReport, Jumps};
pub use ranking::{MetricError, Position, Ranking, TieMode, TopK};
