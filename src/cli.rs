//! Command-line interface: one function per subcommand. Every flag lives here.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Error;
use crate::pipeline::{self, Rules};

#[derive(Parser, Debug)]
#[command(name = "prosecutor", version, about = "Bayesian counterfactual fault localization", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Derive the error propagation graph (EPG) of a trace dump and print it.
    Derive {
        /// The trace dump directory.
        dump: PathBuf,
        /// A rule file (default: the built-in rules/epg.dl).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Use the compiled (crepe) default rules instead of interpreting a rule file.
        #[arg(long, conflicts_with = "rules")]
        compiled: bool,
        #[arg(long, value_enum, default_value = "tsv")]
        format: crate::epg::Format,
    },
    /// Benchmarks (results go to docs/performance.md).
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Validate a rule file: parse, safety and stratification checks.
    CheckRules {
        /// The rule file.
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// Load + forward pass + rules throughput on a synthetic dump.
    Derive {
        #[arg(long, default_value_t = 1_000_000)]
        steps: usize,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// A rule file (default: the built-in rules, interpreted).
        #[arg(long)]
        rules: Option<PathBuf>,
    },
    /// Write a synthetic dump of about `steps` steps.
    Gen {
        out: PathBuf,
        #[arg(long, default_value_t = 100_000)]
        steps: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
}

pub fn try_main() -> Result<i32, Error> {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Derive { dump, rules, compiled, format } => {
            let rules = if compiled { Rules::Compiled } else { Rules::load(rules.as_deref())? };
            let dump = crate::dump::Dump::load(&dump)?;
            let (epg, _) = pipeline::derive_all(&dump, &rules)?;
            match format {
                crate::epg::Format::Tsv => crate::epg::write_tsv(&mut out, &dump, &epg),
                crate::epg::Format::Csv => crate::epg::write_csv(&mut out, &dump, &epg),
                crate::epg::Format::Json => crate::epg::write_json(&mut out, &dump, &epg),
                crate::epg::Format::Dot => crate::epg::write_dot(&mut out, &dump, &epg),
            }
            .map_err(Error::Output)?;
        }
        Command::Bench { what } => match what {
            BenchWhat::Derive { steps, runs, seed, rules } => {
                let rules = Rules::load(rules.as_deref())?;
                let compiled_too = !matches!(rules, Rules::Compiled);
                let report = crate::bench::derive(steps, runs, seed, &rules, compiled_too)?;
                write!(out, "{report}").map_err(Error::Output)?;
            }
            BenchWhat::Gen { out: dir, steps, seed } => {
                let n = crate::bench::generate(&dir, steps, seed)?;
                writeln!(out, "wrote {} ({n} steps)", dir.display()).map_err(Error::Output)?;
            }
        },
        Command::CheckRules { file } => {
            let rules = Rules::load(Some(&file))?;
            writeln!(out, "{}: ok ({})", file.display(), rules.describe()).map_err(Error::Output)?;
        }
    }
    Ok(0)
}
