//! Baselines on dumps (`prosecutor baseline`) and the evaluation harness (`prosecutor eval`).

use std::path::PathBuf;

use crate::error::Error;

/// `prosecutor baseline DUMP --technique NAME`.
#[derive(clap::Args, Debug)]
pub struct BaselineArgs {
    /// The trace dump directory.
    pub dump: PathBuf,
    /// ochiai, tarantula, dstar, op2, jaccard, barinel, naish1 or cp.
    #[arg(long)]
    pub technique: String,
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::report::Format,
    #[arg(long, value_enum, default_value = "line")]
    pub granularity: crate::localize::ranking::Granularity,
    #[arg(long)]
    pub top: Option<usize>,
}

/// `prosecutor eval MANIFEST`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// The evaluation manifest (TOML, `[[case]]` entries).
    pub manifest: PathBuf,
    /// Where to write the summary, per-case CSV and the SVG plot.
    #[arg(long, default_value = "eval-out")]
    pub out: PathBuf,
}

pub fn run_baseline(_a: &BaselineArgs, _out: &mut dyn std::io::Write) -> Result<i32, Error> {
    Err(Error::Other("baseline: not implemented yet".to_owned()))
}

pub fn run_eval(_a: &EvalArgs, _out: &mut dyn std::io::Write) -> Result<i32, Error> {
    Err(Error::Other("eval: not implemented yet".to_owned()))
}
