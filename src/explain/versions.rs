//! Regression mode's static version alignment (spec `causal-seed-004.md` §1, §5.4 of the
//! paper): which statement of the fixed version carries the label of which statement of the
//! faulty one, so that the two versions' runs can be aligned by execution index.
//!
//! The paper matches the control-dependence trees of each function. Here, per pair of source
//! files, the statements (in source order) are aligned by their text with a diff (`similar`'s
//! Myers diff): equal statements keep their label; a replaced block of as many statements on
//! each side pairs them in order (an edited statement keeps its label, as Theorem 1's mutation
//! `x =ℓ e1 ⇒ x =ℓ e2` does); inserted and deleted statements have a label of their own.
//! A condition's operands (`x = a and b` has the operand `a`, a statement of its own) take no
//! part in that diff: they pair, by text, within their whole statements' pair (an operand added
//! by the fix has a label of its own). Files pair by path, else by file name when it is unique
//! in both versions (QuixBugs' `python_programs/x.py` and `correct_python_programs/x.py`).

use std::collections::HashMap;

use similar::{capture_diff_slices, Algorithm, DiffOp};

use crate::dump::{Dump, StmtId};

/// For each statement of `fixed`, the statement of `faulty` with the same label, if any.
pub fn match_statements(faulty: &Dump, fixed: &Dump) -> Vec<Option<StmtId>> {
    let mut out = vec![None; fixed.stmts.len()];
    let by_file = |d: &Dump| {
        let mut m: HashMap<String, Vec<StmtId>> = HashMap::new();
        for (i, s) in d.stmts.iter().enumerate() {
            m.entry(s.file.clone()).or_default().push(i as StmtId);
        }
        for v in m.values_mut() {
            v.sort_by_key(|&s| position(d, s));
        }
        m
    };
    let (ff, rf) = (by_file(faulty), by_file(fixed));
    for (file, rs) in &rf {
        let Some(fs) = partner(file, &ff) else {
            continue;
        };
        // whole statements first; a condition's operands then pair within their statement's line
        let (fw, rw) = (wholes(faulty, fs), wholes(fixed, rs));
        diff_pair(&mut out, faulty, fixed, &fw, &rw);
        for &r in &rw {
            let Some(f) = out[r as usize] else { continue };
            let (fl, rl) = (faulty.stmts[f as usize].line, fixed.stmts[r as usize].line);
            let fo: Vec<StmtId> = operands(faulty, fs, fl);
            let ro: Vec<StmtId> = operands(fixed, rs, rl);
            diff_pair(&mut out, faulty, fixed, &fo, &ro);
        }
    }
    out
}

/// Whether a statement is a condition's operand (its id has a part after `file:line:col`,
/// `m.py:15:12:and`), not a whole statement.
fn is_operand(d: &Dump, s: StmtId) -> bool {
    let st = &d.stmts[s as usize];
    st.id
        .strip_prefix(&format!("{}:{}:", st.file, st.line))
        .is_some_and(|rest| rest.contains(':'))
}

fn wholes(d: &Dump, v: &[StmtId]) -> Vec<StmtId> {
    v.iter().copied().filter(|&s| !is_operand(d, s)).collect()
}

fn operands(d: &Dump, v: &[StmtId], line: u32) -> Vec<StmtId> {
    v.iter()
        .copied()
        .filter(|&s| is_operand(d, s) && d.stmts[s as usize].line == line)
        .collect()
}

/// Pairs `rs` (fixed) with `fs` (faulty) by a diff of their texts: equal ones, and a replaced
/// block of as many statements on each side in order.
fn diff_pair(
    out: &mut [Option<StmtId>],
    faulty: &Dump,
    fixed: &Dump,
    fs: &[StmtId],
    rs: &[StmtId],
) {
    let text = |d: &Dump, v: &[StmtId]| -> Vec<String> {
        v.iter()
            .map(|&s| d.stmts[s as usize].text.clone())
            .collect()
    };
    let (ft, rt) = (text(faulty, fs), text(fixed, rs));
    for op in capture_diff_slices(Algorithm::Myers, &ft, &rt) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => pair(out, fs, rs, old_index, new_index, len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } if old_len == new_len => pair(out, fs, rs, old_index, new_index, old_len),
            _ => {}
        }
    }
}

/// A statement's place in its file: line, then column (from its id `file:line:col`, else 0).
fn position(d: &Dump, s: StmtId) -> (u32, u32, StmtId) {
    let st = &d.stmts[s as usize];
    let col = st
        .id
        .rsplit(':')
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (st.line, col, s)
}

fn pair(
    out: &mut [Option<StmtId>],
    fs: &[StmtId],
    rs: &[StmtId],
    old: usize,
    new: usize,
    len: usize,
) {
    for k in 0..len {
        out[rs[new + k] as usize] = Some(fs[old + k]);
    }
}

/// The faulty version's statements of the file that `file` (of the fixed version) is a version
/// of: the same path, else the only file of the same name.
fn partner<'a>(file: &str, faulty: &'a HashMap<String, Vec<StmtId>>) -> Option<&'a Vec<StmtId>> {
    if let Some(v) = faulty.get(file) {
        return Some(v);
    }
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
    let mut same = faulty.iter().filter(|(f, _)| name(f) == name(file));
    match (same.next(), same.next()) {
        (Some((_, v)), None) => Some(v),
        _ => None,
    }
}

/// The labels of `fixed`'s statements in `faulty`'s statement space: a matched statement takes
/// its partner's id, an unmatched one an id of its own past `faulty`'s statements.
pub fn labels(faulty: &Dump, matched: &[Option<StmtId>]) -> Vec<StmtId> {
    let n = faulty.stmts.len() as StmtId;
    matched
        .iter()
        .enumerate()
        .map(|(i, m)| m.unwrap_or(n + i as StmtId))
        .collect()
}
