//! Regression tests of silent data errors of the Python front-end, end to end through the
//! binary (the tracer-level ones are in frontends/python/tests/test_defects.py, run by
//! `python_tracer_suite`).

use std::path::Path;

use serde_json::Value;

use crate::common::*;
use crate::eval::require_pytest;

fn localize_json(project: &Path, dump: &Path, pythonpath: Option<&str>) -> Value {
    let mut c = localize_python(
        project,
        dump,
        &[
            "--format",
            "json",
            "--cfx-model",
            "reroute",
            // generous: a slow (loaded) machine must not turn experiments into timeouts
            "--cfx-timeout",
            "120",
        ],
    );
    match pythonpath {
        Some(p) => c.env("PYTHONPATH", p),
        None => c.env_remove("PYTHONPATH"),
    };
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn assert_experiments_ran(r: &Value) {
    let ex = r["experiments"].as_array().unwrap();
    assert!(!ex.is_empty(), "no experiment");
    for e in ex {
        let detail = e["detail"].as_str().unwrap_or("");
        assert!(
            e["outcome"] == "pass" || e["outcome"] == "fail",
            "experiment did not run: {e}"
        );
        assert!(!detail.contains("not collected"), "{e}");
    }
    assert!(
        ex.iter().any(|e| e["line"] == 21 && e["outcome"] == "pass"),
        "flipping line 21 passes: {ex:?}"
    );
    assert_eq!(r["ranking"][0]["line"], 22, "{}", r["ranking"]);
}

/// Defect 2: `PYTHONPATH=src pytest tests`. The counterfactual re-runs used to replace the user's
/// PYTHONPATH with the tracer's, so the test module did not import, every experiment came back
/// "not collected" and localize still exited 0. The re-runs must see the original environment,
/// also when the dump is localized later from another directory without that PYTHONPATH.
#[test]
fn reruns_keep_the_users_pythonpath() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    copy_dir(&root().join("fixtures/python/pythonpath_src"), &project);
    let dump = dir.path().join("dump");
    let r = localize_json(&project, &dump, Some("src"));
    assert_experiments_ran(&r);
    // the dump alone, localized from elsewhere in an environment without PYTHONPATH
    let o = bin()
        .current_dir(dir.path())
        .env_remove("PYTHONPATH")
        .args([
            "localize",
            dump.to_str().unwrap(),
            "--format",
            "json",
            "--cfx-model",
            "reroute",
            "--cfx-timeout",
            "120",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_experiments_ran(&serde_json::from_slice(&o.stdout).unwrap());
}

/// Defect 4: tests inherited from a unittest mixin in tests/__init__.py, or imported from
/// tests/helpers.py, ran with neither a trace nor coverage, and the faulty line was in no
/// ranking. They are traced now; a test that cannot be traced (defined by `exec`) is named in a
/// warning the driver prints.
#[test]
fn inherited_tests_are_traced_and_untraced_ones_reported() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    copy_dir(&root().join("fixtures/python/mixin_tests"), &project);
    let dump = dir.path().join("dump");
    let o = localize_python(&project, &dump, &["--no-cfx", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: trace: 1 test(s) ran but were not traced")
            && stderr.contains("tests/test_gen.py::test_generated"),
        "{stderr}"
    );
    let d = prosecutor::dump::Dump::load(&dump).unwrap();
    for t in &d.manifest.tests {
        let traced = d
            .traces
            .iter()
            .any(|tr| d.manifest.tests[tr.test].id == t.id);
        assert_eq!(
            traced,
            t.id != "tests/test_gen.py::test_generated",
            "{}: traced = {traced}",
            t.id
        );
    }
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ranked = r["ranking"].as_array().unwrap();
    assert!(
        ranked
            .iter()
            .any(|e| e["file"] == "lru.py" && e["line"] == 17),
        "the faulty line is ranked: {ranked:?}"
    );
}

/// Issue 20 §8: tests kept inside the package. A helper module in the package's test directory
/// (no tests collected from it) and a helper matched by `--exclude` are test code, never
/// suspects, and the output names both; without `--exclude` the shared helper is a suspect.
#[test]
fn test_helpers_inside_the_package_are_not_suspects() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    copy_dir(&root().join("fixtures/python/tests_in_package"), &project);
    let run = |extra: &[&str]| {
        let dump = dir.path().join("dump");
        let options = [&["--no-cfx", "--format", "json"], extra].concat();
        let o = localize_python_in(&project, "pkg", "pkg/tests", &dump, &options)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        let files: Vec<String> = r["ranking"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["file"].as_str().unwrap().to_owned())
            .collect();
        (stderr, r, files)
    };
    let (stderr, r, files) = run(&["--exclude", "_testutil.py"]);
    assert!(
        files.iter().all(|f| f == "stats.py"),
        "only the code under test is ranked: {files:?}"
    );
    assert_eq!(r["ranking"][0]["line"], 17, "{}", r["ranking"]);
    let note = "2 file(s) under SRC treated as test code, not suspects: _testutil.py \
                (--exclude _testutil.py); tests/helpers.py (in the test directory tests)";
    assert!(stderr.contains(note), "{stderr}");
    let warnings = r["warnings"].to_string();
    assert!(warnings.contains("treated as test code"), "{warnings}");
    let (stderr, _, files) = run(&[]);
    assert!(files.iter().any(|f| f == "_testutil.py"), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("helpers")), "{files:?}");
    assert!(
        stderr.contains("1 file(s) under SRC treated as test code"),
        "{stderr}"
    );
}

/// Issue 20 §2/§4a: a failing test that fails only in the traced session (an earlier test left
/// state behind) passes when an experiment re-runs it alone. The control run (nothing flipped)
/// finds that first: every experiment of the test is void with the reason, and the test is
/// named on stderr and in the output, instead of experiments that silently say nothing.
#[test]
fn experiments_of_a_test_that_passes_alone_are_void_with_the_reason() {
    let (r, stderr) = localize_session_state("");
    let exps = r["experiments"].as_array().unwrap();
    assert!(!exps.is_empty(), "{r}");
    let why = "control: tests/test_names.py::test_lower_input passes when re-run alone";
    for e in exps {
        assert_eq!(e["outcome"], "void", "{e}");
        assert!(e["detail"].as_str().unwrap().starts_with(why), "{e}");
    }
    assert!(stderr.contains(why), "{stderr}");
    assert!(r["warnings"].to_string().contains(why), "{}", r["warnings"]);
}

/// Issue 20 §1: `check(rectangle(2, 3), 10)` opens `rectangle`, then the test helper `check`,
/// from one statement; `check`'s `got` has no named actual. R_NEST links `rectangle`'s result
/// to it, so the failure inside the helper reaches the code under test: no trace is left out,
/// and the faulty line is first (without the rule: contradictory evidence, spectrum fallback,
/// the faulty line tied with its neighbour).
#[test]
fn nested_call_result_reaches_the_helpers_argument() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    copy_dir(&root().join("fixtures/python/nested_call_helper"), &project);
    let dump = dir.path().join("dump");
    let o = localize_python(&project, &dump, &["--no-cfx", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("left out of the model"), "{stderr}");
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["ranking"][0]["line"], 10, "{}", r["ranking"]);
    assert_eq!(r["ranking"][1]["rank"], 2, "{}", r["ranking"]);
    let d = prosecutor::dump::Dump::load(&dump).unwrap();
    let g = derive(&d, &prosecutor::pipeline::Rules::default_rules());
    let nest: Vec<_> = named_edges(&d, &g)
        .into_iter()
        .filter(|e| e.0 == "R_NEST")
        .collect();
    assert!(
        nest.iter().any(|e| e.2.contains("got")),
        "an R_NEST edge into check's `got`: {nest:?}"
    );
}

/// Issue 20 §2: with another failing test that does fail alone, the test whose control run
/// passes (it fails only because of the session's state) is left out of the model with a warning
/// naming it; the model and the experiments are those of the reproducible test.
#[test]
fn a_failing_test_that_passes_alone_is_left_out_of_the_model() {
    let (r, stderr) = localize_session_state(
        "\n\ndef test_upper():\n    assert canonical(\"EPSILON\") == \"epsilon\"\n",
    );
    let why =
        "failing test tests/test_names.py::test_lower_input left out of the model: it passes \
               when re-run alone";
    assert!(r["warnings"].to_string().contains(why), "{}", r["warnings"]);
    assert!(stderr.contains(why), "{stderr}");
    assert!(
        !r["warnings"].to_string().contains("test_upper left out"),
        "{}",
        r["warnings"]
    );
    assert_eq!(r["stats"]["failing_traces"], 1, "{}", r["stats"]);
    let exps = r["experiments"].as_array().unwrap();
    assert!(
        exps.iter()
            .all(|e| e["test"] == "tests/test_names.py::test_upper"),
        "{r}"
    );
    let fault = r["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["line"] == 10)
        .unwrap();
    assert!(fault["rank"].as_u64().unwrap() <= 3, "{}", r["ranking"]);
}

/// `localize --format json` (with experiments) on a copy of fixtures/python/session_state whose
/// test file has `extra` appended: the report and stderr.
fn localize_session_state(extra: &str) -> (Value, String) {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    copy_dir(&root().join("fixtures/python/session_state"), &project);
    let tests = project.join("tests/test_names.py");
    let text = std::fs::read_to_string(&tests).unwrap() + extra;
    std::fs::write(&tests, text).unwrap();
    let dump = dir.path().join("dump");
    let o = localize_python(&project, &dump, &["--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    (serde_json::from_slice(&o.stdout).unwrap(), stderr)
}
