//! The Python pytest suites: the front-end's own (`frontends/python/tests`: AST → facts, end-to-end
//! dumps, flips, the regression tests of the tracer's defects), the corpus builder's and QuixBugs
//! Java's ground truth's, run by
//! `cargo test` so that CI runs them too.

use std::process::Command;

use crate::common::root;
use crate::eval::require_pytest;

#[test]
fn python_tracer_pytest_suite() {
    pytest_suite("frontends/python/tests");
}

/// The corpus builder's tests (`corpus/python/test_build.py`: a fake library, offline).
#[test]
fn corpus_builder_pytest_suite() {
    pytest_suite("corpus/python/test_build.py");
}

/// QuixBugs Java's ground truth (`corpus/quixbugs-java/test_truth.py`: small Java pairs).
#[test]
fn quixbugs_java_truth_pytest_suite() {
    pytest_suite("corpus/quixbugs-java/test_truth.py");
}

/// `scripts/quixbugs_manifest.py --java` (`scripts/test_quixbugs_manifest_java.py`: two made-up
/// programs compiled with javac, JUnit 4 runs; needs the JDK and jars scripts/test installs).
#[test]
fn quixbugs_manifest_java_pytest_suite() {
    pytest_suite("scripts/test_quixbugs_manifest_java.py");
}

/// `scripts/defects4j_manifest.py` (`scripts/test_defects4j_manifest.py`: a made-up Defects4J
/// layout, both kinds of built versions, subsets, bad inputs).
#[test]
fn defects4j_manifest_pytest_suite() {
    pytest_suite("scripts/test_defects4j_manifest.py");
}

/// `scripts/explain_eval.py` (`scripts/test_explain_eval.py`: the command per case and the
/// summary, with a stand-in for the binary).
#[test]
fn explain_eval_pytest_suite() {
    pytest_suite("scripts/test_explain_eval.py");
}

/// `scripts/bench_suites.py` (`scripts/test_bench_suites.py`: plain, trace and localize of the
/// left-pad fixture, with and without a reference binary; this build's binary is both).
#[test]
fn bench_suites_pytest_suite() {
    pytest_suite_with(
        "scripts/test_bench_suites.py",
        &[("PROSECUTOR_BIN", env!("CARGO_BIN_EXE_prosecutor"))],
    );
}

fn pytest_suite(path: &str) {
    pytest_suite_with(path, &[]);
}

fn pytest_suite_with(path: &str, env: &[(&str, &str)]) {
    require_pytest();
    let o = Command::new("python3")
        .current_dir(root())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", path])
        .envs(env.iter().copied())
        // nothing written into the checkout
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PYTEST_ADDOPTS")
        .env_remove("PROSECUTOR_MODE")
        .output()
        .expect("run python3 -m pytest");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{path} failed (exit {:?}):\n{out}\n{err}",
        o.status.code()
    );
}

/// Issue 14 §3: the front-end on the oldest and the newest supported Python (3.9, 3.13; CI
/// machines have them through pyenv, and `scripts/test` installs pytest into them). A subset of
/// the front-end's tests, then `localize --src` end to end on a fixture with that interpreter
/// (the test command picks it, as a user's would). A version that cannot be found fails.
#[test]
fn python_frontend_on_oldest_and_newest() {
    for minor in ["3.9", "3.13"] {
        let py = pyenv_python(minor);
        let o = Command::new(&py)
            .current_dir(root())
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .args(
                OTHER_PYTHON_TESTS
                    .iter()
                    .map(|t| format!("frontends/python/tests/{t}")),
            )
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("PYTEST_ADDOPTS")
            .env_remove("PROSECUTOR_MODE")
            .output()
            .expect("run python -m pytest");
        assert!(
            o.status.success(),
            "the front-end's tests on {py} failed (exit {:?}; `{py} -m pip install pytest tomli`, \
             as scripts/test does, when pytest is missing):\n{}\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        // end to end: trace, localize, experiments (cold and warm re-runs with that Python)
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        crate::common::copy_dir(&root().join("fixtures/python/leftpad_fig3"), &project);
        let o = crate::common::bin()
            .current_dir(&project)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .args(["localize", "--src", "src", "--format", "json", "--", &py])
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{py}: {stderr}");
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // as on 3.11: the faulty line 2nd behind the branch whose flip makes the test pass
        let ranking = r["ranking"].as_array().unwrap();
        let rank = |line: u64| {
            ranking
                .iter()
                .find(|e| e["file"] == "leftpad.py" && e["line"] == line)
                .and_then(|e| e["rank"].as_u64())
        };
        assert_eq!(
            (rank(21), rank(22)),
            (Some(1), Some(2)),
            "{py}: {ranking:?}"
        );
        let passing: Vec<&serde_json::Value> = r["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["outcome"] == "pass")
            .collect();
        assert!(
            passing.len() == 1
                && passing[0]["stmt"] == "leftpad.py:21:4"
                && passing[0]["runner"] == "warm",
            "{py}: the flip of line 21 makes the test pass (warm runner): {}",
            r["experiments"]
        );
    }
}

/// The front-end tests run on 3.9 and 3.13 (the whole suite takes minutes per interpreter).
const OTHER_PYTHON_TESTS: &[&str] = &[
    "test_static_facts.py",
    "test_coroutines.py",
    "test_dumpdiff.py",
];

/// `$PYENV_ROOT/versions/MINOR.*/bin/python` (the highest patch release), or a panic naming the
/// version.
fn pyenv_python(minor: &str) -> String {
    let root = std::env::var_os("PYENV_ROOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".pyenv")
        });
    let mut found: Vec<(Vec<u32>, std::path::PathBuf)> = std::fs::read_dir(root.join("versions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix(&format!("{minor}."))?;
            let patch: u32 = rest.parse().ok()?;
            let py = e.path().join("bin/python");
            py.exists().then(|| (vec![patch], py))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, p)) => p.to_string_lossy().into_owned(),
        None => panic!(
            "Python {minor} is required by this test (the front-end's oldest / newest supported \
             Python) and was not found under {}/versions (install it with `pyenv install {minor}`)",
            root.display()
        ),
    }
}
