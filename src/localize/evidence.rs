//! Evidence (paper §3.3).
//!
//! * In a failing trace, the values and variables the failure point `t_n` defines (`V_n^d`: the
//!   value that was wrong or crashed) are observed **incorrect**. `V_n^a` (inputs handed to a
//!   callee at the failure step) are not: they are arguments, not the failing value.
//! * In a passing trace, every value/variable/argument vertex is observed **correct**.
//! * Statements of test code (methods with role `test`) are observed **correct**.
//! * A failure raised by the program's own `throw` / `raise` that builds its exception is
//!   observed at the decision that reached it ([`FailureAt::Decision`], the default): the values
//!   of the throw's LASTCTRL step, not the exception (docs/model.md, "A failure the program
//!   raised").
//!
//! Several tests share statement vertices and keep their own value/variable vertices.

use crate::dump::{Dump, Outcome, Role, StmtKind};
use crate::forward::{Premises, Vertex};

/// Where a failure that the program raised itself is observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum FailureAt {
    /// The decision that sent control to the `throw` / `raise` (its LASTCTRL step).
    #[default]
    Decision,
    /// The `throw` / `raise` step itself (the paper: `V_n^d` of the failure step).
    Raise,
}

pub fn evidence(dump: &Dump, p: &Premises, at: FailureAt) -> Vec<Option<bool>> {
    let mut failure: Vec<Option<u32>> = dump.traces.iter().map(|t| dump.failure_step(t)).collect();
    if at == FailureAt::Decision {
        for &(trace, gid) in &p.failure_points {
            if let Some(j) = raise_decision(dump, p, gid) {
                failure[trace] = Some(p.steps[j as usize].index);
            }
        }
    }
    p.vertices
        .iter()
        .map(|v| match *v {
            Vertex::Stmt(s) => {
                let m = dump.stmts[s as usize].method;
                (dump.methods[m as usize].role == Role::Test).then_some(true)
            }
            Vertex::Def { trace, step, .. } | Vertex::Value { trace, step } => {
                observe(dump, &failure, trace, step, true)
            }
            Vertex::Arg { trace, step, .. } | Vertex::This { trace, step, .. } => {
                observe(dump, &failure, trace, step, false)
            }
        })
        .collect()
}

fn observe(
    dump: &Dump,
    failure: &[Option<u32>],
    trace: u32,
    step: u32,
    defined_here: bool,
) -> Option<bool> {
    let tr = &dump.traces[trace as usize];
    match dump.manifest.tests[tr.test].outcome {
        Outcome::Pass => Some(true),
        Outcome::Fail => (defined_here && failure[trace as usize] == Some(step)).then_some(false),
    }
}

/// The decision step (global id) at which a failure raised at step `gid` is observed: `gid`
/// runs a `throw` of application code, its exception is not one a handler caught (a rethrow
/// hands on the error of what raised first, which its value leads back to), and a step of its
/// frame sent control to it (LASTCTRL). A handler (a copy, with no statement of its own to
/// blame) hands the decision on to the statement that raised into it, its own LASTCTRL.
/// `None`: observe the failure step itself.
fn raise_decision(dump: &Dump, p: &Premises, gid: u32) -> Option<u32> {
    let id_of = |j: u32| {
        let s = p.steps[j as usize];
        dump.traces[s.trace as usize].steps[s.index as usize].stmt as usize
    };
    let stmt_of = |j: u32| &dump.stmts[id_of(j)];
    let stmt = stmt_of(gid);
    if stmt.kind != StmtKind::Throw || dump.methods[stmt.method as usize].role == Role::Test {
        return None;
    }
    // `throw e` of a caught `e` (a copy); `raise X(...) from e` builds a new exception
    let rethrow = dump.copy[id_of(gid)]
        && rows_of(p, "lastdef", gid).any(|r| stmt_of(r[2]).kind == StmtKind::Catch);
    if rethrow {
        return None;
    }
    let mut at = gid;
    for _ in 0..8 {
        at = rows_of(p, "lastctrl", at).map(|r| r[1]).next()?;
        if stmt_of(at).kind != StmtKind::Catch {
            return Some(at);
        }
    }
    None
}

/// The rows of a forward-pass relation whose first column is `gid` (rows are sorted by it).
fn rows_of<'a>(p: &'a Premises, rel: &str, gid: u32) -> impl Iterator<Item = &'a [u32]> {
    let r = p.rel(rel);
    let (mut lo, mut hi) = (0, r.rows.len() / r.arity);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if r.rows[mid * r.arity] < gid {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    r.rows[lo * r.arity..]
        .chunks_exact(r.arity)
        .take_while(move |row| row[0] == gid)
}
