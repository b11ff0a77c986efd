//! The Python pytest suites: the front-end's own (`frontends/python/tests`: AST → facts, end-to-end
//! dumps, flips, the regression tests of the tracer's defects) and the corpus builder's, run by
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

fn pytest_suite(path: &str) {
    require_pytest();
    let o = Command::new("python3")
        .current_dir(root())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", path])
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
