//! Front-ends that produce trace dumps: Python (pytest) and Java (JUnit 4 on the JVM).

pub mod cache;
pub mod java;
pub mod python;

use std::path::PathBuf;

/// Steps recorded per test unless `--step-cap` says otherwise (`trace`, `eval`); `localize`
/// bounds it by its model's budget (`cli::default_step_cap`).
pub const DEFAULT_STEP_CAP: usize = 2_000_000;

/// What a tracing run produced.
#[derive(Debug, Clone)]
pub struct TraceSummary {
    /// The dump directory (absolute).
    pub dump: PathBuf,
    /// Number of failing tests (timeouts included).
    pub failing: usize,
    /// Number of passing tests.
    pub passing: usize,
    /// Number of tests with a full trace in the dump.
    pub traced: usize,
    /// Tests that ran but were never entered by traced code (no trace, no coverage).
    pub untraced: usize,
    /// Warnings of the tracer (unsupported constructs, modules imported too early, ...).
    pub warnings: Vec<String>,
    /// The plain pre-run, if it ran and recorded tests (Python only).
    pub plain_run: Option<python::PlainRun>,
}

/// `p` made absolute against the current directory (as it is when that fails).
pub(crate) fn absolute(p: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
