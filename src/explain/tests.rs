//! The specs' oracles on hand-built runs: the execution-indexing loop oracle and Fig. 2 of
//! seed 004 (`causal-seed-004.md` §2, §5), Def. 3–4 and Table 2 of seed 003
//! (`pathgen-seed-003.md` §6). The same oracles on real Python runs are in tests/it/explain.rs.

use std::collections::HashMap;
use std::path::Path;

use super::index::{align, Indexer};
use super::pathgen::{dist, search, Config, Distance, Executor, Forced, Run, Verdict};
use crate::cdg::ControlDeps;
use crate::dump::{Dump, Frame, Step, Trace};

/// A one-method program of statements `(id, kind, line)` with its CFG and loop heads, called
/// from a test method `t` (statements `t.call`, then `t.end`), written as a dump whose only
/// test fails with the trace `steps` (statement ids of `m`, with branch outcomes).
pub(super) struct Program {
    stmts: Vec<(&'static str, &'static str, u32)>,
    cfg: Vec<(&'static str, &'static str)>,
    loops: Vec<&'static str>,
    /// `def` and `use` facts `(stmt, var)` (the test's call defines `result`, which its last
    /// statement uses).
    defs: Vec<(&'static str, &'static str)>,
    uses: Vec<(&'static str, &'static str)>,
}

impl Program {
    pub(super) fn write(&self, dir: &Path, steps: &[(&str, Option<bool>)]) -> Dump {
        let w = |name: &str, text: String| std::fs::write(dir.join(name), text).unwrap();
        w(
            "manifest.toml",
            "format = \"prosecutor-dump\"\nversion = 1\n[frontend]\nname = \"hand\"\n\
             version = \"1\"\nlanguage = \"python\"\n[[test]]\nid = \"t\"\ntrace = \"tf\"\n\
             outcome = \"fail\"\n"
                .to_owned(),
        );
        let first = self.stmts[0].0;
        w(
            "method.facts",
            format!("m\tapp\t{first}\nt\ttest\tt.call\n"),
        );
        let mut st =
            String::from("t.call\tt\tcall\ttest.py\t20\tm()\nt.end\tt\tassign\ttest.py\t21\tend\n");
        for (id, kind, line) in &self.stmts {
            st += &format!("{id}\tm\t{kind}\tm.py\t{line}\tline {line}\n");
        }
        w("stmt.facts", st);
        let mut cfg = String::from("t.call\tt.end\tnormal\n");
        for (a, b) in &self.cfg {
            cfg += &format!("{a}\t{b}\tnormal\n");
        }
        w("cfg.facts", cfg);
        w(
            "loop_head.facts",
            self.loops.iter().map(|l| format!("{l}\n")).collect(),
        );
        let rows = |extra: &str, facts: &[(&str, &str)]| {
            let mut t = extra.to_owned();
            for (st, v) in facts {
                t += &format!("{st}\t{v}\n");
            }
            t
        };
        w("def.facts", rows("t.call\tresult\n", &self.defs));
        w("use.facts", rows("t.end\tresult\n", &self.uses));
        for f in ["formal", "this_formal", "actual", "receiver"] {
            w(&format!("{f}.facts"), String::new());
        }
        let (mut step, mut branch) = (String::new(), String::new());
        for (i, (s, o)) in run_rows(steps).iter().enumerate() {
            step += &format!(
                "tf\t{i}\t{s}\t{}\n",
                if s.starts_with("t.") { "f0" } else { "f1" }
            );
            if let Some(o) = o {
                branch += &format!("tf\t{i}\t{}\n", u8::from(*o));
            }
        }
        w("step.facts", step);
        w("branch.facts", branch);
        w("frame.facts", "tf\tf0\tt\t-\ntf\tf1\tm\t0\n".to_owned());
        Dump::load(dir).unwrap()
    }
}

/// The test's call, the program's steps, the test's last statement.
fn run_rows<'a>(steps: &[(&'a str, Option<bool>)]) -> Vec<(&'a str, Option<bool>)> {
    let mut rows = vec![("t.call", None)];
    rows.extend_from_slice(steps);
    rows.push(("t.end", None));
    rows
}

/// A trace of `dump`'s program with the given steps (same shape as the dump's own).
pub(super) fn trace(dump: &Dump, steps: &[(&str, Option<bool>)]) -> Trace {
    let rows = run_rows(steps);
    let method = |n: &str| dump.method_ids.get(n).unwrap();
    Trace {
        id: "r".to_owned(),
        test: 0,
        steps: rows
            .iter()
            .map(|(s, _)| Step {
                stmt: dump.stmt(s).unwrap(),
                frame: u32::from(!s.starts_with("t.")),
            })
            .collect(),
        frames: vec![
            Frame {
                id: "f0".to_owned(),
                method: method("t"),
                call_step: None,
            },
            Frame {
                id: "f1".to_owned(),
                method: method("m"),
                call_step: Some(0),
            },
        ],
        branch: rows.iter().map(|(_, o)| *o).collect(),
        binds: HashMap::new(),
        heap: Vec::new(),
        multi_open: Default::default(),
    }
}

/// The indices of a trace's steps in `m` (the call context left out), by line.
fn indices(ix: &Indexer, dump: &Dump, leaves: &[u32]) -> Vec<String> {
    let line = |s| {
        let st = &dump.stmts[s as usize];
        if st.method == dump.method_ids.get("t").unwrap() {
            "call".to_owned()
        } else {
            st.line.to_string()
        }
    };
    leaves[1..leaves.len() - 1]
        .iter()
        .map(|&l| ix.render(l, &line).replace("S, callC, ", "S, "))
        .collect()
}

/// `while i < 2 (1) { i = i + 1 (2) }` then `return (3)`.
fn loop_program() -> Program {
    Program {
        stmts: vec![
            ("w1", "branch", 1),
            ("a2", "assign", 2),
            ("r3", "return", 3),
        ],
        cfg: vec![("w1", "a2"), ("a2", "w1"), ("w1", "r3")],
        loops: vec!["w1"],
        defs: vec![],
        uses: vec![],
    }
}

#[test]
fn loop_oracle_nests_each_iteration_in_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let steps = [
        ("w1", Some(true)),
        ("a2", None),
        ("w1", Some(true)),
        ("a2", None),
        ("w1", Some(false)),
        ("r3", None),
    ];
    let dump = loop_program().write(dir.path(), &steps);
    let cd = ControlDeps::compute(&dump);
    let mut ix = Indexer::new();
    let r = ix.index(&cd, &dump.traces[0]);
    assert_eq!(
        indices(&ix, &dump, &r.leaf),
        [
            "[S, 1]",
            "[S, 1T, 2]",
            "[S, 1T, 1]",
            "[S, 1T, 1T, 2]",
            "[S, 1T, 1T, 1]",
            "[S, 3]"
        ]
    );
}

/// Seed 004 Fig. 2 (reconstructed, spec §5): the list-summing loop with the skip at 6–7.
pub(super) fn list_program() -> Program {
    Program {
        stmts: vec![
            ("s1", "assign", 1),
            ("w2", "branch", 2),
            ("s3", "assign", 3),
            ("s4", "assign", 4),
            ("s5", "assign", 5),
            ("b6", "branch", 6),
            ("s7", "assign", 7),
            ("s9", "return", 9),
        ],
        cfg: vec![
            ("s1", "w2"),
            ("w2", "s3"),
            ("w2", "s9"),
            ("s3", "s4"),
            ("s4", "s5"),
            ("s5", "b6"),
            ("b6", "s7"),
            ("b6", "w2"),
            ("s7", "w2"),
        ],
        loops: vec!["w2"],
        defs: vec![
            ("s1", "p"),
            ("s3", "s"),
            ("s4", "p"),
            ("s5", "x"),
            ("s7", "p"),
        ],
        uses: vec![
            ("s1", "head"),
            ("w2", "p"),
            ("s3", "s"),
            ("s3", "p"),
            ("s4", "p"),
            ("s5", "p"),
            ("b6", "x"),
            ("s9", "s"),
        ],
    }
}

pub(super) fn iteration(skip: bool) -> Vec<(&'static str, Option<bool>)> {
    let mut v = vec![
        ("w2", Some(true)),
        ("s3", None),
        ("s4", None),
        ("s5", None),
        ("b6", Some(skip)),
    ];
    if skip {
        v.push(("s7", None));
    }
    v
}

fn list_run(skips: [bool; 2]) -> Vec<(&'static str, Option<bool>)> {
    let mut v = vec![("s1", None)];
    v.extend(iteration(skips[0]));
    v.extend(iteration(skips[1]));
    v.extend([("w2", Some(false)), ("s9", None)]);
    v
}

#[test]
fn seed_004_fig_2_indices_and_alignment() {
    let dir = tempfile::tempdir().unwrap();
    let failing = list_run([true, false]);
    let dump = list_program().write(dir.path(), &failing);
    let cd = ControlDeps::compute(&dump);
    let mut ix = Indexer::new();
    let f = ix.index(&cd, &dump.traces[0]);
    assert_eq!(
        indices(&ix, &dump, &f.leaf),
        [
            "[S, 1]",
            "[S, 2]",
            "[S, 2T, 3]",
            "[S, 2T, 4]",
            "[S, 2T, 5]",
            "[S, 2T, 6]",
            "[S, 2T, 6T, 7]",
            "[S, 2T, 2]",
            "[S, 2T, 2T, 3]",
            "[S, 2T, 2T, 4]",
            "[S, 2T, 2T, 5]",
            "[S, 2T, 2T, 6]",
            "[S, 2T, 2T, 2]",
            "[S, 9]"
        ]
    );
    let passing = trace(&dump, &list_run([false, true]));
    let p = ix.index(&cd, &passing);
    let a = align(&f, &p);
    // the call and the test's last step, and 13 of the program's 14 entries (not [S,2T,6T,7])
    assert_eq!(a.iter().filter(|x| x.is_some()).count(), 2 + 13);
    let d7 = 1 + 6; // [S, 2T, 6T, 7] in the failing run
    assert_eq!(a[d7], None);
    // naive alignment would pair the two 7s; by index the passing 7 is [S,2T,2T,6T,7]
    let p7 = passing
        .steps
        .iter()
        .rposition(|s| s.stmt == dump.stmt("s7").unwrap())
        .unwrap();
    assert!(!a.contains(&Some(p7 as u32)));
}

/// Seed 003 Fig. 2: `if a (1) i+=1 (2); if b (3) j+=1 (4); if c (5) { if d (6) k+=1 (7) else
/// k+=2 (9) }; end (10)`.
fn fig2_program() -> Program {
    Program {
        stmts: vec![
            ("b1", "branch", 1),
            ("s2", "assign", 2),
            ("b3", "branch", 3),
            ("s4", "assign", 4),
            ("b5", "branch", 5),
            ("b6", "branch", 6),
            ("s7", "assign", 7),
            ("s9", "assign", 9),
            ("s10", "return", 10),
        ],
        cfg: vec![
            ("b1", "s2"),
            ("b1", "b3"),
            ("s2", "b3"),
            ("b3", "s4"),
            ("b3", "b5"),
            ("s4", "b5"),
            ("b5", "b6"),
            ("b5", "s10"),
            ("b6", "s7"),
            ("b6", "s9"),
            ("s7", "s10"),
            ("s9", "s10"),
        ],
        loops: vec![],
        defs: vec![],
        uses: vec![],
    }
}

/// The run of Fig. 2's program on inputs `abcd` (each condition evaluated once).
fn fig2_run(abcd: [bool; 4]) -> Vec<(&'static str, Option<bool>)> {
    let [a, b, c, d] = abcd;
    let mut v = vec![("b1", Some(a))];
    if a {
        v.push(("s2", None));
    }
    v.push(("b3", Some(b)));
    if b {
        v.push(("s4", None));
    }
    v.push(("b5", Some(c)));
    if c {
        v.push(("b6", Some(d)));
        v.push((if d { "s7" } else { "s9" }, None));
    }
    v.push(("s10", None));
    v
}

/// Runs Fig. 2's program on the failing input (a=F, b=F, c=T, d=T) with instances forced; the
/// test passes when `passes` says so of the outcomes.
struct Fig2<'a> {
    dump: &'a Dump,
    passes: fn([bool; 4]) -> bool,
    runs: Vec<Vec<Forced>>,
}

impl Executor for Fig2<'_> {
    fn run(&mut self, forced: &[Forced]) -> Result<Run, String> {
        self.runs.push(forced.to_vec());
        let mut v = [false, false, true, true];
        for f in forced {
            assert_eq!(f.occurrence, 1, "each condition runs once");
            let k = ["b1", "b3", "b5", "b6"]
                .iter()
                .position(|s| self.dump.stmt(s) == Some(f.stmt))
                .unwrap();
            v[k] = f.to;
        }
        let reached = forced
            .iter()
            .all(|f| f.stmt != self.dump.stmt("b6").unwrap() || v[2]);
        let verdict = match (reached, (self.passes)(v)) {
            (false, _) => Verdict::Unreached,
            (true, true) => Verdict::Pass,
            (true, false) => Verdict::Fail,
        };
        Ok(Run {
            verdict,
            trace: Some(trace(self.dump, &fig2_run(v))),
            detail: String::new(),
            was: Vec::new(),
        })
    }
}

/// Lines of the forced positions of a candidate (positions in the failing trace).
fn lines(dump: &Dump, tr: &Trace, positions: &[u32]) -> Vec<u32> {
    positions
        .iter()
        .map(|&p| dump.stmts[tr.steps[p as usize].stmt as usize].line)
        .collect()
}

#[test]
fn def_3_and_def_4_on_fig_2() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fig2_program().write(dir.path(), &fig2_run([false, false, true, true]));
    let cd = ControlDeps::compute(&dump);
    let mut ix = Indexer::new();
    let pi = &dump.traces[0];
    let fi = ix.index(&cd, pi);
    let mut d = |abcd| {
        let t = trace(&dump, &fig2_run(abcd));
        let a = align(&fi, &ix.index(&cd, &t));
        dist(&dump, pi, &t, &a)
    };
    let (d1, d2, same) = (
        d([false, true, true, false]),
        d([true, false, true, false]),
        d([false, false, true, true]),
    );
    assert_eq!(lines(&dump, pi, &d1.0), [3, 6]); // π'
    assert_eq!(lines(&dump, pi, &d2.0), [1, 6]); // π''
    assert!(
        d1 < d2,
        "⟨3,6⟩ < ⟨1,6⟩ (K = 1, line 3 is later than line 1)"
    );
    assert_eq!(same, Distance(vec![]));
    assert!(d1 < same && d2 < same, "the same control flow is farthest");
    // a proper suffix is closer (K = n < m)
    assert!(Distance(vec![5]) < Distance(vec![2, 5]));
}

#[test]
fn table_2_candidates_in_order_when_none_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fig2_program().write(dir.path(), &fig2_run([false, false, true, true]));
    let cd = ControlDeps::compute(&dump);
    let pi = &dump.traces[0];
    let mut exec = Fig2 {
        dump: &dump,
        passes: |_| false,
        runs: Vec::new(),
    };
    let out = search(&dump, &cd, pi, &mut exec, &Config::default()).unwrap();
    let got: Vec<Vec<u32>> = out
        .candidates
        .iter()
        .map(|c| lines(&dump, pi, &c.forced))
        .collect();
    let table_2: Vec<Vec<u32>> = vec![
        vec![6],
        vec![3, 6],
        vec![1, 3, 6],
        vec![1, 6],
        vec![5],
        vec![3, 5],
        vec![1, 3, 5],
        vec![1, 5],
        vec![3],
        vec![1, 3],
        vec![1],
    ];
    assert_eq!(got, table_2);
    assert!(out.found.is_none() && out.stopped.is_none());
    // each candidate's run is at the distance it forced, and Theorem 1: strictly increasing
    let ds: Vec<Distance> = out
        .candidates
        .iter()
        .map(|c| Distance(c.distance.clone().unwrap()))
        .collect();
    for (c, d) in out.candidates.iter().zip(&ds) {
        assert_eq!(c.forced, d.0);
    }
    assert!(ds.windows(2).all(|w| w[0] < w[1]), "{ds:?}");
    // forced prefixes are run once: 11 candidates, 3 + 2 + 2 + 1 + 1 + 1 + 1 chains' new runs
    assert_eq!(out.runs, exec.runs.len());
    assert_eq!(out.runs, 11);
}

#[test]
fn the_first_successful_candidate_ends_the_search() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fig2_program().write(dir.path(), &fig2_run([false, false, true, true]));
    let cd = ControlDeps::compute(&dump);
    let pi = &dump.traces[0];
    // passes when b is true and d false: the 2nd candidate, ⟨3, 6⟩
    let mut exec = Fig2 {
        dump: &dump,
        passes: |[_, b, _, d]| b && !d,
        runs: Vec::new(),
    };
    let out = search(&dump, &cd, pi, &mut exec, &Config::default()).unwrap();
    assert_eq!(out.candidates.len(), 2);
    assert_eq!(out.found, Some(1));
    let report = out.report.unwrap();
    assert_eq!(lines(&dump, pi, &report.0), [3, 6]);
    // a budget of one run stops after the first candidate, and says so
    let mut exec = Fig2 {
        dump: &dump,
        passes: |[_, b, _, d]| b && !d,
        runs: Vec::new(),
    };
    let config = Config {
        max_runs: 1,
        ..Config::default()
    };
    let out = search(&dump, &cd, pi, &mut exec, &config).unwrap();
    assert_eq!(out.candidates.len(), 1);
    assert!(out.found.is_none());
    assert!(out.stopped.unwrap().contains("budget"));
}

#[test]
fn report_score_counts_the_statements_searched_before_the_fault() {
    use super::score::{bucket, Pdg};
    let dir = tempfile::tempdir().unwrap();
    let dump = fig2_program().write(dir.path(), &fig2_run([false, false, true, true]));
    let cd = ControlDeps::compute(&dump);
    let pdg = Pdg::build(&dump, &cd, &dump.traces[0]);
    let s = |id: &str| dump.stmt(id).unwrap();
    assert_eq!(
        pdg.nodes, 9,
        "the application statements; the test's are not nodes"
    );
    // from {3, 6}: the fault 7 is one edge forward of 6, and DS(1) = {3, 6, 4, 7, 9, 5}
    let score = pdg.score(&[s("b3"), s("b6")], &[s("s7")]);
    assert!((score - (1.0 - 6.0 / 9.0)).abs() < 1e-12, "{score}");
    // a report on the fault itself: DS(0) = the report
    assert!((pdg.score(&[s("s7")], &[s("s7")]) - 8.0 / 9.0).abs() < 1e-12);
    // no directed path either way from the report to the fault, and an empty report: 0
    assert_eq!(pdg.score(&[s("b3"), s("b6")], &[s("s2")]), 0.0);
    assert_eq!(pdg.score(&[], &[s("s7")]), 0.0);
    assert_eq!(
        (bucket(0.999), bucket(0.95), bucket(0.899), bucket(0.04)),
        (100, 90, 90, 0)
    );
}

/// A run that crashes without a trace leaves nothing to locate later instances in: every
/// candidate extending it is infeasible, whichever candidate ran it first.
#[test]
fn a_crashed_prefix_makes_its_extensions_unreached() {
    struct CrashOnB3<'a>(Fig2<'a>);
    impl Executor for CrashOnB3<'_> {
        fn run(&mut self, forced: &[Forced]) -> Result<Run, String> {
            if forced.len() == 1 && forced[0].stmt == self.0.dump.stmt("b3").unwrap() {
                return Ok(Run {
                    verdict: Verdict::Crash,
                    trace: None,
                    detail: "boom".into(),
                    was: Vec::new(),
                });
            }
            self.0.run(forced)
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = fig2_program().write(dir.path(), &fig2_run([false, false, true, true]));
    let cd = ControlDeps::compute(&dump);
    let pi = &dump.traces[0];
    let mut exec = CrashOnB3(Fig2 {
        dump: &dump,
        passes: |_| false,
        runs: Vec::new(),
    });
    let out = search(&dump, &cd, pi, &mut exec, &Config::default()).unwrap();
    let verdict = |ls: &[u32]| {
        out.candidates
            .iter()
            .find(|c| lines(&dump, pi, &c.forced) == ls)
            .unwrap()
            .verdict
    };
    assert_eq!(out.candidates.len(), 11);
    assert_eq!(verdict(&[3, 6]), Verdict::Unreached);
    assert_eq!(verdict(&[3, 5]), Verdict::Unreached);
    assert_eq!(verdict(&[3]), Verdict::Crash);
    assert_eq!(verdict(&[1, 3, 6]), Verdict::Fail);
}

/// Regression mode's statement matching: the fix adds an operand to the condition at line 2
/// (`if a:` → `if b or a:`, an operand statement of its own, placed first on its line); the
/// whole statements still pair (a diff over all statements would pair the operand instead), the
/// added operand has a label of its own.
#[test]
fn versions_pair_whole_statements_and_leave_an_added_operand_alone() {
    let program = |operand: bool| {
        let mut stmts = vec![
            ("m.py:1:4", "assign", 1),
            ("m.py:2:4", "branch", 2),
            ("m.py:3:8", "return", 3),
        ];
        if operand {
            stmts.push(("m.py:2:7:or", "branch", 2));
        }
        Program {
            stmts,
            cfg: vec![("m.py:1:4", "m.py:2:4"), ("m.py:2:4", "m.py:3:8")],
            loops: vec![],
            defs: vec![],
            uses: vec![],
        }
    };
    let run = [
        ("m.py:1:4", None),
        ("m.py:2:4", Some(true)),
        ("m.py:3:8", None),
    ];
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let faulty = program(false).write(d1.path(), &run);
    let fixed = program(true).write(d2.path(), &run);
    let m = super::versions::match_statements(&faulty, &fixed);
    let pair =
        |id: &str| m[fixed.stmt(id).unwrap() as usize].map(|s| faulty.stmts[s as usize].id.clone());
    for id in ["m.py:1:4", "m.py:2:4", "m.py:3:8"] {
        assert_eq!(pair(id).as_deref(), Some(id));
    }
    assert_eq!(pair("m.py:2:7:or"), None);
    let labels = super::versions::labels(&faulty, &m);
    assert!(labels[fixed.stmt("m.py:2:7:or").unwrap() as usize] >= faulty.stmts.len() as u32);
}
