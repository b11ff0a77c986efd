//! The values a run's steps saw (seed 004's stores), from a re-run's `values.facts`
//! (docs/trace-format.md "Values, capture and patch").
//!
//! A row `step var value` says that, before `step` ran, local `var` of the step's frame had
//! encoding `value` (written only when it changed since the frame's previous step; `<unbound>`
//! when the variable is gone). Encodings are canonical (equal content, equal text), so two runs
//! are compared by their interned ids: one interner ([`interner`]) serves every run compared.
//!
//! Invariant: a frame's changes of one variable are sorted by step.

use std::path::Path;

use rustc_hash::FxHashMap;

use crate::dump::Trace;
use crate::intern::Interner;

/// The encoding of a variable that is not bound.
pub const UNBOUND_TEXT: &str = "<unbound>";

/// The interned [`UNBOUND_TEXT`] in an interner made by [`interner`].
pub const UNBOUND: u32 = 0;

/// An interner for the names and values of the runs compared: [`UNBOUND_TEXT`] is [`UNBOUND`].
pub fn interner() -> Interner {
    let mut i = Interner::new();
    i.intern(UNBOUND_TEXT);
    i
}

/// One run's stores: per frame and variable, the value before each step that changed it.
#[derive(Debug, Default, Clone)]
pub struct Values {
    changes: FxHashMap<(u32, u32), Vec<(u32, u32)>>,
    vars_of: FxHashMap<u32, Vec<u32>>,
}

impl Values {
    /// Reads `dir/values.facts` of a run whose trace is `tr` (an error names the line).
    pub fn load(dir: &Path, tr: &Trace, names: &mut Interner) -> Result<Values, String> {
        let path = dir.join("values.facts");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut rows = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let bad = |why: &str| format!("{}:{}: {why}", path.display(), n + 1);
            let mut cols = line.splitn(3, '\t');
            let (Some(step), Some(var), Some(value)) = (cols.next(), cols.next(), cols.next())
            else {
                return Err(bad("expected `step<TAB>var<TAB>value`"));
            };
            let step: u32 = step.parse().map_err(|_| bad("the step is not a number"))?;
            if step as usize >= tr.steps.len() {
                return Err(bad(&format!(
                    "step {step} is not a step of the run ({} steps)",
                    tr.steps.len()
                )));
            }
            rows.push((step, names.intern(var), names.intern(value)));
        }
        Ok(Values::from_rows(tr, rows))
    }

    /// The stores of `tr` from rows `(step, var, value)`.
    pub fn from_rows(tr: &Trace, mut rows: Vec<(u32, u32, u32)>) -> Values {
        rows.sort_by_key(|r| r.0);
        let mut v = Values::default();
        for (step, var, value) in rows {
            let frame = tr.steps[step as usize].frame;
            let ch = v.changes.entry((frame, var)).or_default();
            if ch.is_empty() {
                v.vars_of.entry(frame).or_default().push(var);
            }
            if ch.last().is_none_or(|c| c.1 != value) {
                ch.push((step, value)); // (a row that repeats the value is no change)
            }
        }
        for vars in v.vars_of.values_mut() {
            vars.sort_unstable();
        }
        v
    }

    /// The value of `var` in `frame` before `step` ran ([`UNBOUND`] if none).
    pub fn at(&self, frame: u32, var: u32, step: u32) -> u32 {
        let Some(ch) = self.changes.get(&(frame, var)) else {
            return UNBOUND;
        };
        match ch.partition_point(|c| c.0 <= step) {
            0 => UNBOUND,
            k => ch[k - 1].1,
        }
    }

    /// The variables `frame` ever had, sorted.
    pub fn vars(&self, frame: u32) -> &[u32] {
        self.vars_of.get(&frame).map_or(&[], |v| v.as_slice())
    }

    /// The last step at or before `step` before which `var` of `frame` changed.
    pub fn last_change(&self, frame: u32, var: u32, step: u32) -> Option<u32> {
        let ch = self.changes.get(&(frame, var))?;
        match ch.partition_point(|c| c.0 <= step) {
            0 => None,
            k => Some(ch[k - 1].0),
        }
    }
}
