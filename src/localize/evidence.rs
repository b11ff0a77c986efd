//! Evidence (paper §3.3).
//!
//! * In a failing trace, the values and variables the failure point `t_n` defines (`V_n^d`: the
//!   value that was wrong or crashed) are observed **incorrect**. `V_n^a` (inputs handed to a
//!   callee at the failure step) are not: they are arguments, not the failing value.
//! * In a passing trace, every value/variable/argument vertex is observed **correct**.
//! * Statements of test code (methods with role `test`) are observed **correct**.
//!
//! Several tests share statement vertices and keep their own value/variable vertices.

use crate::dump::{Dump, Outcome, Role};
use crate::forward::{Premises, Vertex};

pub fn evidence(dump: &Dump, p: &Premises) -> Vec<Option<bool>> {
    let failure: Vec<Option<u32>> = dump.traces.iter().map(|t| dump.failure_step(t)).collect();
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
