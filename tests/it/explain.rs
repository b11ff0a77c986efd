//! `prosecutor explain` on real Python runs (fixtures/explain/apg): the specs' oracles where the
//! runs are real executions, and the JSON output as a snapshot.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{bin, copy_dir, root, trace_python, trace_python_version};
use prosecutor::cdg::ControlDeps;
use prosecutor::dump::Dump;
use prosecutor::explain::index::Indexer;

/// The fixture project, copied and traced once for all tests of this module.
fn traced() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static TRACED: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    TRACED.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("apg");
        copy_dir(&root().join("fixtures/explain/apg"), &project);
        let dump = tmp.path().join("dump");
        let out = trace_python(&project, &dump).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (tmp, project, dump)
    })
}

/// `explain DUMP --no-cfx --format json --test tests/test_apg.py::TEST ARGS`.
fn explain(test: &str, args: &[&str]) -> Value {
    let (_, _, dump) = traced();
    let test = format!("tests/test_apg.py::{test}");
    let mut all = vec!["--test", test.as_str()];
    all.extend_from_slice(args);
    explain_dump(dump, &all)
}

/// `explain DUMP --no-cfx --format json ARGS`, which must succeed.
fn explain_dump(dump: &std::path::Path, args: &[&str]) -> Value {
    let out = bin()
        .arg("explain")
        .arg(dump)
        .args(["--no-cfx", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The source lines of `apg.py` named by a candidate (`apg.py:LINE` each).
fn lines(forced: &Value) -> Vec<u32> {
    forced
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f.as_str()
                .unwrap()
                .rsplit_once(':')
                .unwrap()
                .1
                .parse()
                .unwrap()
        })
        .collect()
}

/// Fig. 2's branches in apg.py: `if a` (line 4), `if b` (6), `if c` (8), `if d` (9).
fn fig2_line(paper: u32) -> u32 {
    match paper {
        1 => 4,
        3 => 6,
        5 => 8,
        6 => 9,
        _ => unreachable!(),
    }
}

#[test]
fn table_2_on_real_runs_eleven_candidates_in_order() {
    let v = explain("test_fig2_no_run_passes", &[]);
    let g = &v["path_generation"];
    assert_eq!(g["found"], false);
    let got: Vec<Vec<u32>> = g["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| lines(&c["forced"]))
        .collect();
    let table_2: Vec<Vec<u32>> = [
        &[6][..],
        &[3, 6],
        &[1, 3, 6],
        &[1, 6],
        &[5],
        &[3, 5],
        &[1, 3, 5],
        &[1, 5],
        &[3],
        &[1, 3],
        &[1],
    ]
    .iter()
    .map(|c| c.iter().map(|&l| fig2_line(l)).collect())
    .collect();
    assert_eq!(got, table_2);
    for c in g["candidates"].as_array().unwrap() {
        assert_eq!(c["verdict"], "fail", "{c}");
        // each real run differs from the failing one at exactly the forced instances
        assert_eq!(
            c["distance"].as_u64().unwrap() as usize,
            lines(&c["forced"]).len(),
            "{c}"
        );
    }
    assert_eq!(v["nearest_successful_run"], Value::Array(vec![]));
}

#[test]
fn the_second_candidate_passes_and_is_the_report() {
    let v = explain("test_fig2_passes_with_b_and_not_d", &[]);
    let g = &v["path_generation"];
    assert_eq!(g["found"], true);
    assert_eq!(g["candidates"].as_array().unwrap().len(), 2);
    let report = v["nearest_successful_run"].as_array().unwrap();
    let at: Vec<(u64, bool, bool)> = report
        .iter()
        .map(|s| {
            let b = |k: &str| s[k].as_bool().unwrap();
            (s["line"].as_u64().unwrap(), b("failing_value"), b("value"))
        })
        .collect();
    assert_eq!(at, [(6, false, true), (9, true, false)]);
    assert_eq!(g["size"], 2);
}

#[test]
fn fig_1_first_candidate_passes() {
    let v = explain("test_fig1", &[]);
    let report = v["nearest_successful_run"].as_array().unwrap();
    assert_eq!(report.len(), 1);
    assert_eq!(report[0]["code"], "if x > 0:");
    assert_eq!(report[0]["value"], true);
    assert_eq!(
        v["path_generation"]["candidates"].as_array().unwrap().len(),
        1
    );
}

#[test]
fn a_budget_of_one_run_stops_and_says_so() {
    let v = explain("test_fig2_no_run_passes", &["--max-runs", "1"]);
    let g = &v["path_generation"];
    assert_eq!(g["candidates"].as_array().unwrap().len(), 1);
    assert!(g["stopped"].as_str().unwrap().contains("budget"), "{g}");
}

#[test]
fn loop_oracle_on_a_real_python_trace() {
    let (_, _, dir) = traced();
    let dump = Dump::load(dir).unwrap();
    let tr = dump
        .traces
        .iter()
        .find(|t| dump.manifest.tests[t.test].id.ends_with("::test_count_to"))
        .unwrap();
    let cd = ControlDeps::compute(&dump);
    let mut ix = Indexer::new();
    let idx = ix.index(&cd, tr);
    let callee = dump.method_ids.get("apg.py::count_to").or_else(|| {
        (0..dump.methods.len() as u32).find(|&m| dump.methods[m as usize].id.ends_with("count_to"))
    });
    let callee = callee.expect("count_to's method");
    let line = |s: u32| dump.stmts[s as usize].line.to_string();
    let shown: Vec<String> = tr
        .steps
        .iter()
        .zip(&idx.leaf)
        .filter(|(s, _)| tr.frames[s.frame as usize].method == callee)
        .map(|(_, &l)| {
            let full = ix.render(l, &line);
            // drop the calling context: everything up to the call's annotated label
            full.rsplit_once("C, ")
                .map_or(full.clone(), |(_, r)| format!("[{r}"))
        })
        .collect();
    assert_eq!(
        shown,
        [
            "[28]",
            "[29]",
            "[29T, 30]",
            "[29T, 29]",
            "[29T, 29T, 30]",
            "[29T, 29T, 29]",
            "[31]"
        ]
    );
}

/// Rounds every float of a JSON value to 4 decimals (the snapshot shows values, not the last
/// bits of a sum).
fn rounded(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = (n.as_f64().unwrap() * 1e4).round() / 1e4;
            serde_json::json!(x)
        }
        Value::Array(a) => Value::Array(a.iter().map(rounded).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), rounded(v))).collect()),
        other => other.clone(),
    }
}

#[test]
fn explain_json_snapshot() {
    let v = explain(
        "test_fig1",
        &["--line", "apg.py:19", "--faulty", "apg.py:19"],
    );
    // the path of the explained line ends in the failure of the test searched from
    let last = v["propagation_path"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["code"], "assert fig1(0) == 5", "{last}");
    // the report is the faulty statement itself: DS* = DS(0) = that one statement
    let n = v["path_generation"]["pdg_nodes"].as_f64().unwrap();
    assert_eq!(
        v["path_generation"]["score"].as_f64().unwrap(),
        1.0 - 1.0 / n
    );
    insta::assert_snapshot!(
        "explain_fig1_json",
        serde_json::to_string_pretty(&rounded(&v)).unwrap()
    );
}

/// fixtures/explain/listsum (seed 004's Fig. 2 in Python) copied and traced once: the faulty
/// version (`src/`) and the fixed one (`fixed/`, the tests run with `--fixed`).
fn listsum() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static TRACED: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    TRACED.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("listsum");
        copy_dir(&root().join("fixtures/explain/listsum"), &project);
        let (faulty, fixed) = (tmp.path().join("faulty"), tmp.path().join("fixed"));
        let out = trace_python(&project, &faulty).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = trace_python_version(&project, "fixed", &fixed, &["--passing-ok"], &["--fixed"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (tmp, faulty, fixed)
    })
}

/// `explain` of listsum's failing test, JSON.
fn explain_listsum(args: &[&str]) -> Value {
    let (_, dump, _) = listsum();
    let mut all = vec!["--faulty", "listsum.py:15"];
    all.extend_from_slice(args);
    explain_dump(dump, &all)
}

/// The causal path's lines, and what each step says.
fn causal_steps(v: &Value) -> (Vec<u64>, Vec<String>) {
    let steps = v["causal_path"].as_array().unwrap();
    (
        steps.iter().map(|s| s["line"].as_u64().unwrap()).collect(),
        steps
            .iter()
            .map(|s| s["what"].as_str().unwrap().to_owned())
            .collect(),
    )
}

// listsum.py: `s = s + p.val` (13), `x = p is not None and p.val >= 2` (15, the fault),
// `if x:` (16), `p = p.next` (17): spec §5's E, B, C and D.

#[test]
fn causal_path_regression_mode_is_b_d_e_and_reaches_the_fault() {
    let (_, _, fixed) = listsum();
    let v = explain_listsum(&["--reference", fixed.to_str().unwrap()]);
    let c = &v["causal"];
    assert_eq!(c["mode"], "regression", "{c}");
    let (lines, says) = causal_steps(&v);
    assert_eq!(lines, [15, 17, 13], "{says:?}");
    assert_eq!(says[0], "At 15, x is given True");
    assert_eq!(says[2], "At 13, s is given 4");
    // every step has file, line, code and a value (issue 17's JSON contract)
    let steps = v["causal_path"].as_array().unwrap();
    assert_eq!(steps[0]["value"], "True");
    assert_eq!(steps[2]["value"], "4");
    assert!(steps
        .iter()
        .all(|s| s["file"].is_string() && s["code"].is_string()));
    assert!(
        says[1].starts_with("At 17, p is given Node("),
        "{}",
        says[1]
    );
    assert_eq!(c["reaches_fault"], true);
    assert_eq!(c["complete"], true, "{c}");
    assert!(c["ended"].as_str().unwrap().contains("line 15"), "{c}");
}

#[test]
fn causal_path_patch_mode_is_d_e_headed_by_the_switched_if() {
    let v = explain_listsum(&[]);
    let c = &v["causal"];
    assert_eq!(c["mode"], "patch", "{c}");
    let (lines, says) = causal_steps(&v);
    assert_eq!(lines, [16, 17, 13], "{says:?}");
    assert_eq!(says[0], "At 16, (if x:) is true");
    assert_eq!(v["causal_path"][0]["value"], true);
    assert_eq!(c["reaches_fault"], false);
    assert!(
        c["ended"].as_str().unwrap().contains("no value differs"),
        "{c}"
    );
}

#[test]
fn causal_path_without_fast_passes_is_the_same() {
    let (_, _, fixed) = listsum();
    let fast = explain_listsum(&["--reference", fixed.to_str().unwrap()]);
    let slow = explain_listsum(&["--reference", fixed.to_str().unwrap(), "--no-fast-passes"]);
    assert_eq!(causal_steps(&fast), causal_steps(&slow));
    let runs = |v: &Value| v["causal"]["runs"].as_u64().unwrap();
    assert!(
        runs(&slow) > runs(&fast),
        "{} vs {}",
        runs(&slow),
        runs(&fast)
    );
}
