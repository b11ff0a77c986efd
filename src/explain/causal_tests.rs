//! Seed 004's worked example (spec `causal-seed-004.md` §5, Fig. 2 reconstructed) as an oracle:
//! the list-summing loop run by a small interpreter that can patch its state at a step, in
//! regression mode (the correct line 5 as the reference) and in patch mode (the faulty program
//! with the `if` at 6 switched).

use super::causal::{causal_path, ddmin, Config, Reference, Replayer, ValuedRun};
use super::tests::{list_program, trace};
use super::values::{interner, Values};
use crate::cdg::ControlDeps;
use crate::dump::Dump;
use crate::intern::Interner;

const VALS: [i64; 3] = [1, 2, 3];

/// A list pointer by content: `[2, 3]` is the node holding 2.
fn enc_p(p: Option<usize>) -> String {
    match p {
        None => "NULL".to_owned(),
        Some(i) => format!("{:?}", &VALS[i..]),
    }
}

fn dec_p(t: &str) -> Option<usize> {
    (t != "NULL").then(|| 3 - t.matches(',').count() - 1)
}

/// `p = head (1); while p (2) { s = s + p.val (3); p = p.next (4); x = p && p.val > 2 (5, `>=`
/// when faulty); if x (6) { p = p.next (7) } }; return s (9)`, called by the test as
/// `result = m()`, which then checks `result == 3`.
#[derive(Clone, Copy)]
struct Fig2 {
    faulty: bool,
    /// Which evaluation of the `if` at 6 (0-based) is switched.
    switch: Option<usize>,
}

#[derive(Default, Clone)]
struct State {
    p: Option<Option<usize>>,
    s: i64,
    x: Option<bool>,
    result: Option<i64>,
}

impl State {
    fn record(&self, step: u32, end: bool, out: &mut Vec<(u32, String, String)>) {
        let mut put = |var: &str, val: String| out.push((step, var.to_owned(), val));
        if end {
            if let Some(r) = self.result {
                put("result", r.to_string());
            }
            return;
        }
        if let Some(p) = self.p {
            put("p", enc_p(p));
        }
        put("s", self.s.to_string());
        if let Some(x) = self.x {
            put("x", if x { "True" } else { "False" }.to_owned());
        }
    }

    fn patch(&mut self, vars: &[(String, String)]) {
        for (v, t) in vars {
            match v.as_str() {
                "p" => self.p = Some(dec_p(t)),
                "s" => self.s = t.parse().unwrap(),
                "x" => self.x = Some(t == "True"),
                "result" => self.result = Some(t.parse().unwrap()),
                _ => panic!("no variable {v}"),
            }
        }
    }
}

/// A run: its steps (the program's), the values before each step, the test's verdict.
type Out = (
    Vec<(&'static str, Option<bool>)>,
    Vec<(u32, String, String)>,
    bool,
);

impl Fig2 {
    /// Runs the program, patching `vars` before step `at` (the test's call is step 0); `None`
    /// when it crashes (a `.next` of NULL).
    fn run(&self, patch: Option<(u32, &[(String, String)])>) -> Option<Out> {
        let mut st = State::default();
        let (mut rows, mut vals) = (Vec::new(), Vec::new());
        let mut ifs = 0;
        let next = |p: Option<usize>| p.map(|i| (i + 1 < 3).then_some(i + 1));
        let mut pc = "s1";
        while pc != "end" {
            let step = rows.len() as u32 + 1;
            if let Some((at, vars)) = patch.filter(|(at, _)| *at == step) {
                let _ = at;
                st.patch(vars);
            }
            st.record(step, false, &mut vals);
            let p = st.p.flatten();
            let (row, to) = match pc {
                "s1" => {
                    st.p = Some(Some(0));
                    (None, "w2")
                }
                "w2" => (Some(p.is_some()), if p.is_some() { "s3" } else { "s9" }),
                "s3" => {
                    st.s += VALS[p?];
                    (None, "s4")
                }
                "s4" | "s7" => {
                    st.p = Some(next(p)?);
                    (None, if pc == "s4" { "s5" } else { "w2" })
                }
                "s5" => {
                    let v = p.map_or(0, |i| VALS[i]);
                    st.x = Some(p.is_some() && if self.faulty { v >= 2 } else { v > 2 });
                    (None, "b6")
                }
                "b6" => {
                    let c = st.x? != (self.switch == Some(ifs));
                    ifs += 1;
                    (Some(c), if c { "s7" } else { "w2" })
                }
                _ => (None, "end"),
            };
            rows.push((pc, row));
            pc = to;
        }
        st.result = Some(st.s);
        let end = rows.len() as u32 + 1;
        if let Some((_, vars)) = patch.filter(|(at, _)| *at == end) {
            st.patch(vars);
        }
        st.record(end, true, &mut vals);
        Some((rows, vals, st.result != Some(3)))
    }

    fn valued(&self, dump: &Dump, out: &Out, names: &mut Interner) -> ValuedRun {
        let tr = trace(dump, &out.0);
        let rows = out
            .1
            .iter()
            .map(|(s, v, t)| (*s, names.intern(v), names.intern(t)))
            .collect();
        ValuedRun {
            values: Values::from_rows(&tr, rows),
            trace: tr,
            failed: out.2,
        }
    }
}

/// Induction by re-running the reference interpreter with the failing run's values.
struct Interp<'a> {
    dump: &'a Dump,
    reference: Fig2,
    failing: ValuedRun,
    runs: usize,
}

impl Replayer for Interp<'_> {
    fn induce(
        &mut self,
        f0: u32,
        p0: u32,
        vars: &[u32],
        names: &mut Interner,
    ) -> Result<Option<ValuedRun>, String> {
        self.runs += 1;
        let frame = self.failing.trace.steps[f0 as usize].frame;
        let given: Vec<(String, String)> = vars
            .iter()
            .map(|&v| {
                let t = self.failing.values.at(frame, v, f0);
                (names.name(v).to_owned(), names.name(t).to_owned())
            })
            .collect();
        Ok(self
            .reference
            .run(Some((p0, &given)))
            .map(|out| self.reference.valued(self.dump, &out, names)))
    }
}

/// The causal path of the faulty program against `reference` (`switched`: the failing run's
/// steps the reference switched), with at most `max_runs` patched re-runs; the re-runs made.
fn fig2_path(
    reference: Fig2,
    switched: &[u32],
    fast: bool,
    max_runs: usize,
) -> (super::causal::Outcome, usize) {
    let faulty = Fig2 {
        faulty: true,
        switch: None,
    };
    let f_out = faulty.run(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dump = list_program().write(dir.path(), &f_out.0);
    let cd = ControlDeps::compute(&dump);
    let mut names = interner();
    let f = faulty.valued(&dump, &f_out, &mut names);
    let p_out = reference.run(None).unwrap();
    let p = reference.valued(&dump, &p_out, &mut names);
    assert!(f.failed && !p.failed);
    let mut r = Interp {
        dump: &dump,
        reference,
        failing: f.clone(),
        runs: 0,
    };
    let config = Config {
        max_runs,
        fast,
        ..Default::default()
    };
    let reference = Reference {
        dump: &dump,
        cd: &cd,
        labels: None,
        switched,
    };
    let out = causal_path(&dump, &cd, (&f, &p), reference, &mut r, &mut names, &config).unwrap();
    assert_eq!(out.runs, r.runs);
    (out, r.runs)
}

// Failing-run steps of spec §5's points (the test's call is step 0).
const B: u32 = 5; // [S,2T,5]
const C: u32 = 6; // [S,2T,6]
const D: u32 = 7; // [S,2T,6T,7]
const E: u32 = 9; // [S,2T,2T,3]
const CALL: u32 = 0; // the test's `result = m()`

#[test]
fn fig_2_regression_mode_path_is_b_d_e() {
    for fast in [true, false] {
        let (out, _) = fig2_path(
            Fig2 {
                faulty: false,
                switch: None,
            },
            &[],
            fast,
            100,
        );
        let steps: Vec<u32> = out.path.keys().copied().collect();
        assert_eq!(steps, [CALL, B, D, E], "fast passes: {fast}");
        assert!(out.complete, "{}", out.ended);
        assert!(out.head.is_empty());
        assert_eq!(out.aligned, 2 + 13);
        if fast {
            // Single at the test's end, at 9, at [S,2T,2T,6], at C; Definition at E and B
            let at: Vec<u32> = out.singles.iter().map(|s| s.at).collect();
            assert_eq!(at, [15, 14, 12, C]);
            assert_eq!(out.singles[3].diffs, ["x"]);
            assert_eq!(out.singles[1].gamma, ["s"]);
            assert_eq!(out.definition, 1, "E (B's Definition ends the walk)");
            assert!(out.ended.contains("line 5"), "{}", out.ended);
        }
    }
}

#[test]
fn fig_2_patch_mode_path_is_d_e_headed_by_the_switched_if() {
    let (out, _) = fig2_path(
        Fig2 {
            faulty: true,
            switch: Some(0),
        },
        &[C],
        true,
        100,
    );
    let steps: Vec<u32> = out.path.keys().copied().collect();
    assert_eq!(steps, [CALL, D, E]);
    assert_eq!(out.head, [C]);
    assert!(out.ended.contains("no value differs"), "{}", out.ended);
}

#[test]
fn fig_2_walk_stops_at_the_run_budget() {
    let reference = Fig2 {
        faulty: false,
        switch: None,
    };
    let (out, runs) = fig2_path(reference, &[], true, 2);
    assert_eq!(runs, 2);
    assert!(!out.complete);
    assert!(out.ended.contains("budget"), "{}", out.ended);
}

#[test]
fn ddmin_finds_a_one_minimal_subset() {
    // the test holds iff both 3 and 7 are in
    let mut calls = 0;
    let r = ddmin((0..10).collect::<Vec<u32>>(), &mut |c: &[u32]| {
        calls += 1;
        Ok(c.contains(&3) && c.contains(&7))
    })
    .unwrap();
    assert_eq!(r, [3, 7]);
    assert!(calls < 40, "{calls}");
    let one = ddmin(vec![1u32, 2, 3, 4, 5], &mut |c: &[u32]| Ok(c.contains(&4))).unwrap();
    assert_eq!(one, [4]);
}
