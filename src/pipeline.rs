//! Stage plumbing shared by the subcommands: dump → control dependence → forward pass → rules → EPG.

use std::path::Path;

use crate::cdg::ControlDeps;
use crate::dump::Dump;
use crate::epg::{Epg, EpgError, DEFAULT_RULES, DEFAULT_RULES_PATH};
use crate::error::Error;
use crate::forward::{Premises, TraceView};

/// Which rules derive the EPG.
pub enum Rules {
    /// The default rules compiled with crepe (`src/epg/compiled.rs`).
    Compiled,
    /// A rule program interpreted at run time, with the path it came from.
    Interpreted {
        path: String,
        program: Box<datalog::Program>,
    },
}

impl Rules {
    /// Loads and checks a rule file (`None`: the built-in `rules/epg.dl`).
    pub fn load(path: Option<&Path>) -> Result<Rules, Error> {
        let (text, name) = match path {
            None => (DEFAULT_RULES.to_owned(), DEFAULT_RULES_PATH.to_owned()),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| Error::Io {
                    path: p.display().to_string(),
                    source: e,
                })?;
                (text, p.display().to_string())
            }
        };
        Rules::parse(&text, &name)
    }

    /// Parses and checks a rule program read from `name`.
    pub fn parse(text: &str, name: &str) -> Result<Rules, Error> {
        let program = datalog::Program::parse(text, name)
            .map_err(|d| Error::Epg(EpgError::Rules(d.to_string())))?;
        Ok(Rules::Interpreted {
            path: name.to_owned(),
            program: Box::new(program),
        })
    }

    /// The built-in default rules (`rules/epg.dl`), interpreted.
    pub fn default_rules() -> Rules {
        Rules::load(None).expect("the built-in rules/epg.dl is valid")
    }

    pub fn describe(&self) -> String {
        match self {
            Rules::Compiled => "compiled default rules".to_owned(),
            Rules::Interpreted { path, .. } => format!("rules interpreted from {path}"),
        }
    }
}

/// All traces of a dump, uncompressed.
pub fn all_traces(dump: &Dump) -> Vec<TraceView> {
    (0..dump.traces.len())
        .map(|t| TraceView {
            trace: t,
            keep: None,
        })
        .collect()
}

/// Derives the EPG of the given traces and checks it is acyclic.
pub fn derive(dump: &Dump, rules: &Rules, views: &[TraceView]) -> Result<(Epg, Premises), Error> {
    derive_with(dump, rules, views, true)
}

/// [`derive`]; `heap`: use the dump's heap accesses (`heapdef`), else the name-only model.
pub fn derive_with(
    dump: &Dump,
    rules: &Rules,
    views: &[TraceView],
    heap: bool,
) -> Result<(Epg, Premises), Error> {
    let cd = ControlDeps::compute(dump);
    let premises = crate::forward::forward_with(dump, &cd, views, heap);
    let epg = derive_premises(dump, &premises, rules)?;
    epg.check_acyclic(dump)?;
    Ok((epg, premises))
}

/// Applies the rules to premises already computed.
pub fn derive_premises(dump: &Dump, premises: &Premises, rules: &Rules) -> Result<Epg, Error> {
    Ok(match rules {
        Rules::Compiled => Epg::derive_compiled(premises)?,
        Rules::Interpreted { path, program } => {
            Epg::derive_interpreted(dump, premises, program, path)?
        }
    })
}

/// Derives the EPG of every trace of the dump.
pub fn derive_all(dump: &Dump, rules: &Rules) -> Result<(Epg, Premises), Error> {
    derive(dump, rules, &all_traces(dump))
}
