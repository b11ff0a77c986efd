//! Which tests a Java dump holds, on a small JUnit project written here: each test class has a
//! class loader of its own (static state does not leak from one test class to the next), a
//! test whose outcome tracing changes is left out (the plain run), a failing test that is not a
//! `--witness` is left out, `!Class::method` deselects a test, and `--jvm-arg` reaches the test
//! JVM and the experiments' re-run command. Each exclusion is a warning in the dump. A string
//! constant UTF-8 cannot encode (an unpaired surrogate) does not stop the dump from being written.

use std::path::{Path, PathBuf};
use std::process::Command;

use prosecutor::frontend::java::Toolchain;

use crate::common::*;

/// `HALF` is an unpaired surrogate (a constant the dump's statement text quotes: written as `?`).
const APP: &str = "package iso;
public class Counter {
    static final String HALF = \"\\uD800\";
    static int count;
    public static int next() {
        if (HALF.length() != 1) {
            return -1;
        }
        count = count + 1;
        return count;
    }
}
";

/// Each test class counts from 1: it passes only if no other class's test ran `next` before it
/// in the same loader.
const FIRST: &str = "package iso;
import static org.junit.Assert.*;
import org.junit.Test;
public class FirstTest {
    @Test public void counts() { assertEquals(1, Counter.next()); }
    @Test public void deselected() { fail(\"named with ! and never run\"); }
}
";

const SECOND: &str = "package iso;
import static org.junit.Assert.*;
import org.junit.Test;
public class SecondTest {
    @Test public void counts() { assertEquals(1, Counter.next()); }
    @Test public void property() { assertEquals(\"on\", System.getProperty(\"iso.flag\")); }
}
";

/// The witness: fails whatever the order.
const THIRD: &str = "package iso;
import static org.junit.Assert.*;
import org.junit.Test;
public class ThirdTest {
    @Test public void wrong() { assertEquals(2, Counter.next()); }
}
";

/// A failing test that is not the witness, and a test whose outcome depends on whether its
/// classes are instrumented (the tracer's loader, not the plain run's).
const OTHER: &str = "package iso;
import static org.junit.Assert.*;
import org.junit.Test;
public class OtherTest {
    @Test public void unrelated() { fail(\"fails for another reason\"); }
    @Test public void tracingSensitive() {
        assertNotEquals(\"prosecutor-test-class\", getClass().getClassLoader().getName());
    }
}
";

fn javac(tc: &Toolchain, out: &Path, cp: &[PathBuf], sources: &[PathBuf]) {
    let mut c = Command::new(&tc.javac);
    c.args(["-g", "-nowarn", "-d"]).arg(out);
    if !cp.is_empty() {
        c.arg("-cp").arg(std::env::join_paths(cp).unwrap());
    }
    let o = c.args(sources).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The project written and compiled in `d` (`d/classes`, `d/test-classes`).
fn compile(d: &Path) {
    let tc = Toolchain::from_env().unwrap_or_else(|e| panic!("{e}"));
    let write = |rel: &str, text: &str| {
        let p = d.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    };
    let app = write("src/main/java/iso/Counter.java", APP);
    let tests: Vec<PathBuf> = [
        ("FirstTest", FIRST),
        ("SecondTest", SECOND),
        ("ThirdTest", THIRD),
        ("OtherTest", OTHER),
    ]
    .iter()
    .map(|(n, t)| write(&format!("src/test/java/iso/{n}.java"), t))
    .collect();
    let (classes, test_classes) = (d.join("classes"), d.join("test-classes"));
    javac(&tc, &classes, &[], &[app]);
    let mut cp = vec![classes.clone()];
    cp.extend(tc.junit.iter().cloned());
    javac(&tc, &test_classes, &cp, &tests);
}

/// `prosecutor trace --java FLAGS... --classes ... --test-classes ... --out OUT ARGS...` in `d`.
fn trace(d: &Path, flags: &[&str], out: &Path, args: &[&str]) -> std::process::Output {
    bin()
        .current_dir(d)
        .args(["trace", "--java"])
        .args(flags)
        .arg("--classes")
        .arg(d.join("classes"))
        .arg("--test-classes")
        .arg(d.join("test-classes"))
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

/// The project, compiled in a new temporary directory (a JDK with JUnit 4 is required).
fn project() -> tempfile::TempDir {
    require_jdk("java_test_selection");
    let d = tempfile::tempdir().unwrap();
    compile(d.path());
    d
}

#[test]
fn test_classes_are_isolated_and_excluded_tests_are_named() {
    let d = project();
    let out = d.path().join("dump");
    let o = trace(
        d.path(),
        &[
            "--jvm-arg=-Diso.flag=on",
            "--witness",
            "iso.ThirdTest::wrong",
        ],
        &out,
        &[
            "--",
            "iso.FirstTest",
            "!iso.FirstTest::deselected",
            "iso.SecondTest",
            "iso.ThirdTest",
            "iso.OtherTest",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let dump = prosecutor::dump::Dump::load(&out).unwrap();
    let outcomes: Vec<(String, String)> = dump
        .manifest
        .tests
        .iter()
        .map(|t| (t.id.clone(), format!("{:?}", t.outcome).to_lowercase()))
        .collect();
    let want = [
        ("iso.FirstTest::counts", "pass"),
        // one JVM without a loader per class: 2, a failure
        ("iso.SecondTest::counts", "pass"),
        ("iso.SecondTest::property", "pass"),
        ("iso.ThirdTest::wrong", "fail"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(outcomes, want, "{stderr}");
    let warnings = dump.manifest.notes["warnings"].to_string();
    for w in [
        "1 test(s) whose outcome tracing changes were left out: \
         iso.OtherTest::tracingSensitive (plain pass, traced fail: assertion)",
        "1 failing test(s) that are not among the --witness tests were left out: \
         iso.OtherTest::unrelated (fail: assertion)",
    ] {
        assert!(warnings.contains(w), "{w}\n{warnings}");
        assert!(stderr.contains(w), "{w}\n{stderr}");
    }
    let rerun = &dump.manifest.rerun.as_ref().unwrap().command;
    assert!(rerun.iter().any(|a| a == "-Diso.flag=on"), "{rerun:?}");
}

#[test]
fn without_the_plain_run_a_tracing_sensitive_test_stays() {
    let d = project();
    let out = d.path().join("dump");
    let o = trace(
        d.path(),
        &["--no-plain-run"],
        &out,
        &["--", "iso.OtherTest::tracingSensitive"],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let dump = prosecutor::dump::Dump::load(&out).unwrap();
    assert_eq!(dump.manifest.tests.len(), 1);
    assert_eq!(
        dump.manifest.tests[0].outcome,
        prosecutor::dump::Outcome::Fail
    );
}

/// With `--max-passing 1` the recorder compacts the passing traces the dump will not keep as
/// soon as they lose their place (bounded memory on long suites): the dump keeps one passing
/// trace, and its coverage and edge coverage are those of a run that keeps every trace.
#[test]
fn compacted_passing_traces_keep_their_coverage() {
    let d = project();
    let traced_with = |max_passing: &str| -> PathBuf {
        let out = d.path().join(format!("dump{max_passing}"));
        let o = trace(
            d.path(),
            &["--max-passing", max_passing, "--jvm-arg=-Diso.flag=on"],
            &out,
            &[
                "--",
                "iso.ThirdTest",
                "iso.FirstTest::counts",
                "iso.SecondTest",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let (one, all) = (traced_with("1"), traced_with("10"));
    let traced = |dir: &Path| {
        prosecutor::dump::Dump::load(dir)
            .unwrap()
            .manifest
            .tests
            .iter()
            .filter(|t| t.trace.is_some())
            .count()
    };
    assert_eq!((traced(&one), traced(&all)), (2, 4));
    for facts in ["coverage.facts", "edge_coverage.facts"] {
        let rows = |dir: &Path| {
            let mut v: Vec<String> = std::fs::read_to_string(dir.join(facts))
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect();
            v.sort();
            v
        };
        assert!(!rows(&all).is_empty(), "{facts}");
        assert_eq!(rows(&one), rows(&all), "{facts}");
    }
}
