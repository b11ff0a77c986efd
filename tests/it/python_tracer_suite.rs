//! The Python front-end's own pytest suite (`frontends/python/tests`: AST → facts, end-to-end
//! dumps, flips, the regression tests of the tracer's defects), run by `cargo test` so that CI
//! runs it too.

use std::process::Command;

use crate::common::root;
use crate::eval::have_pytest;

#[test]
fn python_tracer_pytest_suite() {
    if !have_pytest() {
        eprintln!("skipped: python3 -c 'import pytest' fails (CI installs pytest)");
        return;
    }
    let o = Command::new("python3")
        .current_dir(root())
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "frontends/python/tests",
        ])
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
        "frontends/python/tests failed (exit {:?}):\n{out}\n{err}",
        o.status.code()
    );
}
