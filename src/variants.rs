//! PROSECUTOR's model options and ablations, declared once.
//!
//! Each [`Variant`] is a named pipeline of [`Unit`]s applied to the default [`Options`] and
//! rules. `prosecutor eval` runs every variant as one column of its tables (named by `id` in
//! cases.csv and by `label` in summary.md), and `prosecutor localize --variant ID` runs the same
//! configuration, so a column and a command line can never disagree. A model change gets its
//! ablation by adding one line here.

use crate::error::Error;
use crate::localize::{CfxEvidence, CfxModel, CfxThrown, Mode, Options, PassingSelection};
use crate::pipeline::Rules;

/// One change to the default configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    /// Which traces build the model (F, F∪P, or both averaged or aggregated).
    Mode(Mode),
    /// No loop compression of traces (Algorithm 1).
    NoCompress,
    /// No counterfactual experiments.
    NoCfx,
    /// A built-in rule file instead of rules/epg.dl (see [`BUILTIN_RULES`]).
    Rules(&'static str),
    /// Weight of the spectrum likelihood (`localize::spectrum`; 0 = off).
    SpectrumWeight(f64),
    /// `ε` of the spectrum likelihood (`localize::spectrum::OTHER_CAUSE`).
    OtherCause(f64),
    /// Ignore the heap accesses of the dump (no `heapdef`, no R_HEAP edges).
    NoHeap,
    /// Where a failure the program raised itself is observed.
    FailureAt(crate::localize::evidence::FailureAt),
    /// How F∪P chooses its passing traces.
    Passing(PassingSelection),
    /// What a successful experiment's `cfx` vertex depends on.
    Cfx(CfxModel),
    /// At most this many experiments flip instances of one statement.
    CfxPerStatement(usize),
    /// What an experiment's outcome is evidence of.
    CfxEvidence(CfxEvidence),
    /// What a pass by a thrown exception is evidence of.
    CfxThrown(CfxThrown),
}

/// A named configuration: the default options changed by `units`, in order.
#[derive(Debug, PartialEq)]
pub struct Variant {
    /// Machine name: cases.csv column, `--variant` value.
    pub id: &'static str,
    /// Display name (summary.md, topk.svg).
    pub label: &'static str,
    /// What it changes and why it is measured.
    pub about: &'static str,
    pub units: &'static [Unit],
}

/// Every variant, in table order; the first is PROSECUTOR as shipped.
pub const VARIANTS: &[Variant] = &[
    Variant {
        id: "prosecutor",
        label: "PROSECUTOR",
        about: "the default model: rules/epg.dl, F and F∪P averaged, counterfactuals, compression",
        units: &[],
    },
    Variant {
        id: "prosecutor-nocfx",
        label: "w/o Cfx",
        about: "without counterfactual experiments (paper Table 3)",
        units: &[Unit::NoCfx],
    },
    Variant {
        id: "prosecutor-f",
        label: "F",
        about: "failing traces only, no aggregation (paper Table 3)",
        units: &[Unit::Mode(Mode::F)],
    },
    Variant {
        id: "prosecutor-fp",
        label: "F∪P",
        about: "failing and passing traces, no aggregation (paper Table 3)",
        units: &[Unit::Mode(Mode::Fp)],
    },
    Variant {
        id: "prosecutor-minrank",
        label: "min-rank F, F∪P",
        about: "F and F∪P aggregated by min(r^F∪P, r^F) (paper §4) instead of averaged",
        units: &[Unit::Mode(Mode::Both)],
    },
    Variant {
        id: "prosecutor-nocompress",
        label: "w/o compression",
        about: "without loop compression (paper Table 3)",
        units: &[Unit::NoCompress],
    },
    Variant {
        id: "prosecutor-nospectrum",
        label: "w/o spectrum",
        about: "without the spectrum likelihood (docs/model.md)",
        units: &[Unit::SpectrumWeight(0.0)],
    },
    Variant {
        id: "prosecutor-eps01",
        label: "spectrum ε 0.1",
        about: "the spectrum likelihood with ε = 0.1: a test that does not run the fault fails with probability 0.1 (docs/model.md)",
        units: &[Unit::OtherCause(0.1)],
    },
    Variant {
        id: "prosecutor-noheap",
        label: "w/o heap",
        about: "values followed by variable name only, not through the heap (docs/model.md)",
        units: &[Unit::NoHeap],
    },
    Variant {
        id: "prosecutor-failure-at-raise",
        label: "failure at the raise",
        about: "a failure the program raised itself observed at its throw / raise, as the paper does, not at the decision that reached it (docs/model.md)",
        units: &[Unit::FailureAt(crate::localize::evidence::FailureAt::Raise)],
    },
    Variant {
        id: "prosecutor-passing-methods",
        label: "P by methods",
        about: "F∪P's passing traces chosen by shared methods (paper §4), not by coverage",
        units: &[Unit::Passing(PassingSelection::Methods)],
    },
    Variant {
        id: "prosecutor-cfx-successors",
        label: "cfx ← successors",
        about: "a passing flip's cfx vertex depends on the flipped branch value and its successors (paper §3.3), not on the branch value alone",
        units: &[Unit::Cfx(CfxModel::Successors)],
    },
    Variant {
        id: "prosecutor-cfx-spread",
        label: "cfx ≤ 2 per statement",
        about: "at most 2 of the k experiments flip instances of one statement: the k most suspicious instances are often one statement's evaluations in earlier, passing checks of the same test, whose flips fail those checks and clear the statement",
        units: &[Unit::CfxPerStatement(2)],
    },
    Variant {
        id: "prosecutor-cfx-coincidence",
        label: "cfx may be coincidence",
        about: "a passing flip may pass by coincidence (a weak oracle): its cfx vertex has a root parent of its own, so a pass is finite evidence against the flipped value, not proof",
        units: &[Unit::CfxEvidence(CfxEvidence::Coincidence)],
    },
    Variant {
        id: "prosecutor-cfx-outcomes",
        label: "cfx passes and fails",
        about: "as cfx may be coincidence, and a flip that still fails is evidence too (cfx observed correct)",
        units: &[Unit::CfxEvidence(CfxEvidence::Outcomes)],
    },
    Variant {
        id: "prosecutor-cfx-thrown",
        label: "cfx thrown passes count",
        about: "a flip that passes because the call holding it threw an exception the test accepted counts as evidence, as every pass does in the paper (the default ignores it: an expected-exception check passes on any throwing path)",
        units: &[Unit::CfxThrown(CfxThrown::Evidence)],
    },
    Variant {
        id: "prosecutor-cfx-thrown-weak",
        label: "cfx thrown passes weak",
        about: "a flip that passes because the call holding it threw an exception the test accepted is finite evidence (it may be a coincidence, as cfx may be coincidence has it for every pass), neither ignored nor proof",
        units: &[Unit::CfxThrown(CfxThrown::Coincidence)],
    },
    Variant {
        id: "prosecutor-paper-rules",
        label: "paper rules",
        about: "the paper's literal rules (rules/epg-paper.dl: copies are causes)",
        units: &[Unit::Rules("epg-paper.dl")],
    },
    Variant {
        id: "prosecutor-paper",
        label: "paper model",
        about: "the paper's model as published: literal rules, no spectrum likelihood, no heap, cfx ← successors, every pass evidence",
        units: &[
            Unit::Mode(Mode::Both),
            Unit::Rules("epg-paper.dl"),
            Unit::SpectrumWeight(0.0),
            Unit::NoHeap,
            Unit::FailureAt(crate::localize::evidence::FailureAt::Raise),
            Unit::Passing(PassingSelection::Methods),
            Unit::Cfx(CfxModel::Successors),
            Unit::CfxThrown(CfxThrown::Evidence),
        ],
    },
];

/// The rule files built into the binary: (file name under rules/, text).
pub const BUILTIN_RULES: &[(&str, &str)] = &[
    ("epg.dl", include_str!("../rules/epg.dl")),
    ("epg-paper.dl", include_str!("../rules/epg-paper.dl")),
    (
        "epg-no-unexplored.dl",
        include_str!("../rules/epg-no-unexplored.dl"),
    ),
];

impl Variant {
    pub fn by_id(id: &str) -> Result<&'static Variant, Error> {
        VARIANTS.iter().find(|v| v.id == id).ok_or_else(|| {
            Error::Other(format!(
                "unknown variant {id:?}; known: {}",
                VARIANTS.iter().map(|v| v.id).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The PROSECUTOR column that every other variant is an ablation of.
    pub fn full() -> &'static Variant {
        &VARIANTS[0]
    }

    pub fn is_full(&self) -> bool {
        std::ptr::eq(self, Variant::full())
    }

    /// Whether this variant runs counterfactual experiments (when the dump allows them).
    pub fn cfx(&self) -> bool {
        !self.units.contains(&Unit::NoCfx)
    }

    /// Applies the units to `o`; returns the rules to use when a unit replaces them.
    pub fn apply(&self, o: &mut Options) -> Result<Option<Rules>, Error> {
        let mut rules = None;
        for u in self.units {
            match *u {
                Unit::Mode(m) => o.mode = m,
                Unit::NoCompress => o.compress = false,
                Unit::NoCfx => o.cfx = crate::localize::CfxSource::Off,
                Unit::SpectrumWeight(w) => o.spectrum_weight = w,
                Unit::OtherCause(e) => o.other_cause = e,
                Unit::NoHeap => o.heap = false,
                Unit::FailureAt(a) => o.failure_at = a,
                Unit::Passing(p) => o.passing_selection = p,
                Unit::Rules(name) => rules = Some(builtin_rules(name)?),
                Unit::Cfx(m) => o.cfx_model = m,
                Unit::CfxPerStatement(n) => o.cfx_per_stmt = n,
                Unit::CfxEvidence(e) => o.cfx_evidence = e,
                Unit::CfxThrown(t) => o.cfx_thrown = t,
            }
        }
        Ok(rules)
    }
}

/// A built-in rule file, parsed.
pub fn builtin_rules(name: &str) -> Result<Rules, Error> {
    let (_, text) = BUILTIN_RULES
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| Error::Other(format!("no built-in rule file {name:?}")))?;
    Rules::parse(text, &format!("rules/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids are unique, every built-in rule file parses, and the embedded default is the one the
    /// pipeline uses.
    #[test]
    fn variants_are_well_formed() {
        let mut ids: Vec<&str> = VARIANTS.iter().map(|v| v.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), VARIANTS.len());
        for (name, _) in BUILTIN_RULES {
            builtin_rules(name).unwrap();
        }
        assert_eq!(BUILTIN_RULES[0].1, crate::epg::DEFAULT_RULES);
        for v in VARIANTS {
            let mut o = Options::default();
            v.apply(&mut o).unwrap();
        }
        assert!(Variant::full().units.is_empty() && Variant::full().is_full());
        assert!(Variant::by_id("nope").is_err());
    }
}
