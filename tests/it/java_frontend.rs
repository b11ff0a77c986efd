//! The Java front-end's command line, as far as it goes without the agent: flag errors, a
//! missing JDK (deterministic: the environment of the run says where the JDK is not), and a
//! Java case of `eval` that cannot be traced. End-to-end traces are elsewhere.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// A project with (empty) class directories.
fn project() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for p in ["target/classes", "target/test-classes"] {
        std::fs::create_dir_all(d.path().join(p)).unwrap();
    }
    d
}

/// (exit code, stderr) of `c`, which must not panic.
fn status(mut c: Command) -> (i32, String) {
    let o = c.output().expect("run prosecutor");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (o.status.code().unwrap_or(-1), stderr)
}

fn in_project(d: &Path, args: &[&str]) -> Command {
    let mut c = bin();
    c.current_dir(d).args(args);
    c
}

/// The environment of a machine without a JDK: JAVA_HOME an empty directory.
fn without_jdk(c: &mut Command, empty: &Path) {
    c.env("JAVA_HOME", empty);
}

const CLASSES: [&str; 4] = [
    "--classes",
    "target/classes",
    "--test-classes",
    "target/test-classes",
];

#[test]
fn java_flag_errors() {
    let d = project();
    let p = d.path();
    for (args, want) in [
        (
            vec![
                "trace",
                "--java",
                "--test-classes",
                "target/test-classes",
                "--out",
                "o",
                "--",
                "FooTest",
            ],
            "error: --java needs --classes DIR, the compiled classes of the code under analysis",
        ),
        (
            vec![
                "trace",
                "--java",
                "--classes",
                "target/classes",
                "--out",
                "o",
                "--",
                "FooTest",
            ],
            "error: --java needs --test-classes DIR",
        ),
        (
            vec![
                "localize",
                "--java",
                "--classes",
                "target/classes",
                "--",
                "FooTest",
            ],
            "error: --java needs --test-classes DIR",
        ),
        (
            vec![
                "trace",
                "--java",
                "--classes",
                "target/classes",
                "--test-classes",
                "target/test-classes",
                "--out",
                "o",
            ],
            "error: no test given: name the JUnit test classes (or methods) after `--`",
        ),
        (
            vec![
                "localize",
                "--java",
                "--classes",
                "target/classes",
                "--test-classes",
                "nope",
                "--",
                "FooTest",
            ],
            "error: --test-classes nope: not a directory",
        ),
        (
            vec![
                "localize",
                "dump",
                "--java",
                "--classes",
                "target/classes",
                "--test-classes",
                "target/test-classes",
                "--",
                "FooTest",
            ],
            "error: give either a DUMP or tests to trace",
        ),
    ] {
        let (code, err) = status(in_project(p, &args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
    // Java flags need --java; Python's flags do not go with it (--no-plain-run serves both)
    for (args, want) in [
        (
            vec!["trace", "--classes", "c", "--out", "o", "--", "FooTest"],
            "--java",
        ),
        (
            vec![
                "trace",
                "--source-root",
                "src",
                "--out",
                "o",
                "--",
                "FooTest",
            ],
            "--java",
        ),
        (
            vec![
                "trace", "--java", "--src", "src", "--out", "o", "--", "FooTest",
            ],
            "--src",
        ),
        (
            vec![
                "trace",
                "--witness",
                "FooTest",
                "--out",
                "o",
                "--",
                "FooTest",
            ],
            "--java",
        ),
        (
            vec!["trace", "--jvm-arg=-Xmx1g", "--out", "o", "--", "FooTest"],
            "--java",
        ),
    ] {
        let (code, err) = status(in_project(p, &args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(want),
            "{args:?}: {err}"
        );
    }
    // nothing written
    assert!(!p.join("o").exists());
}

#[test]
fn a_missing_jdk_is_named() {
    let d = project();
    let empty = tempfile::tempdir().unwrap();
    let mut args = vec!["trace", "--java", "--out", "dump"];
    args.extend(CLASSES);
    args.extend(["--", "org.example.FooTest"]);
    // JAVA_HOME without a JDK
    let mut c = in_project(d.path(), &args);
    without_jdk(&mut c, empty.path());
    let (code, err) = status(c);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(
            "error: the Java front-end needs a JDK (java, javac and jar): JAVA_HOME is "
        ) && err.contains("`java`, `javac` and `jar` are not in its bin/")
            && err.contains(
                "apt-get install default-jdk-headless libasm-java junit4 libhamcrest-java"
            ),
        "{err}"
    );
    // no JAVA_HOME, no JDK on PATH
    let mut c = in_project(d.path(), &args);
    c.env_remove("JAVA_HOME").env("PATH", empty.path());
    let (code, err) = status(c);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`java`, `javac` and `jar` are not on PATH"),
        "{err}"
    );
    // localize traces with the same front-end
    let mut args = vec!["localize", "--java"];
    args.extend(CLASSES);
    args.extend(["--", "org.example.FooTest"]);
    let mut c = in_project(d.path(), &args);
    without_jdk(&mut c, empty.path());
    let (code, err) = status(c);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs a JDK"), "{err}");
}

/// A Java case of `eval` is traced by the Java front-end: without a JDK it fails, saying so.
#[test]
fn eval_traces_java_cases_with_the_java_frontend() {
    let d = project();
    let p = d.path();
    std::fs::create_dir_all(p.join("src/main/java/org/example")).unwrap();
    std::fs::write(
        p.join("src/main/java/org/example/Gcd.java"),
        "class Gcd {}\n",
    )
    .unwrap();
    let m = p.join("m.toml");
    std::fs::write(
        &m,
        "[[case]]\nname = \"gcd\"\nlanguage = \"java\"\ndir = \".\"\nsrc = \"src/main/java\"\n\
         classes = \"target/classes\"\ntest_classes = \"target/test-classes\"\n\
         test = [\"org.example.GcdTest\"]\nfaulty = [\"org/example/Gcd.java:1\"]\n",
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let mut c = bin();
    c.arg("eval").arg(&m).arg("--out").arg(p.join("out"));
    without_jdk(&mut c, empty.path());
    let o = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("- `gcd`: tracing failed: the Java front-end needs a JDK"),
        "{stdout}"
    );
}
