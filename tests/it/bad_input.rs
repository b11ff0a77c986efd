//! Bad input gets a clear message naming the file and line, exit code 2, and never a panic.

use std::path::Path;

use proptest::prelude::*;

use crate::common::*;

/// Copies leftpad_fig1, lets `edit` corrupt the copy, runs `derive` and returns (exit code, stderr).
fn corrupt(edit: impl FnOnce(&Path)) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dump");
    copy_dir(&root().join("fixtures/dumps/leftpad_fig1"), &d);
    edit(&d);
    let out = run(&["derive", d.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

fn rewrite(d: &Path, file: &str, f: impl FnOnce(String) -> String) {
    let p = d.join(file);
    let s = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, f(s)).unwrap();
}

/// Replaces line `n` (1-based) of a file.
fn replace_line(d: &Path, file: &str, n: usize, with: &str) {
    rewrite(d, file, |s| {
        let mut lines: Vec<String> = s.lines().map(str::to_owned).collect();
        lines[n - 1] = with.to_owned();
        lines.join("\n") + "\n"
    });
}

fn line(d: &Path, file: &str, n: usize) -> String {
    std::fs::read_to_string(d.join(file))
        .unwrap()
        .lines()
        .nth(n - 1)
        .unwrap()
        .to_owned()
}

#[test]
fn wrong_column_count() {
    let (code, err) = corrupt(|d| {
        let l = line(d, "step.facts", 3);
        let cols: Vec<&str> = l.split('\t').collect();
        replace_line(d, "step.facts", 3, &cols[..3].join("\t"));
    });
    assert_eq!(code, 2);
    assert!(
        err.contains("step.facts:3:") && err.contains("expected 4 tab-separated columns, found 3"),
        "{err}"
    );
}

#[test]
fn unknown_statement() {
    let (code, err) = corrupt(|d| {
        let l = line(d, "step.facts", 5);
        let mut cols: Vec<&str> = l.split('\t').collect();
        cols[2] = "no.such.stmt";
        replace_line(d, "step.facts", 5, &cols.join("\t"));
    });
    assert_eq!(code, 2);
    assert!(
        err.contains("step.facts:5:") && err.contains("unknown statement \"no.such.stmt\""),
        "{err}"
    );
}

#[test]
fn steps_out_of_order() {
    let (code, err) = corrupt(|d| {
        rewrite(d, "step.facts", |s| {
            let mut lines: Vec<&str> = s.lines().collect();
            lines.swap(3, 4);
            lines.join("\n") + "\n"
        })
    });
    assert_eq!(code, 2);
    assert!(
        err.contains("step.facts:4:") && err.contains("steps out of order"),
        "{err}"
    );
}

/// A step in a frame that already returned: the dump format's "return with no open frame".
#[test]
fn step_in_a_returned_frame() {
    let (code, err) = corrupt(|d| {
        // tc1: the leftPad frame returns to the test frame; make the last test step run in the
        // callee frame again.
        let text = std::fs::read_to_string(d.join("step.facts")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let tc1: Vec<(usize, &str)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.starts_with("tc1\t"))
            .map(|(i, l)| (i, *l))
            .collect();
        let (last_i, last) = *tc1.last().unwrap();
        let callee_frame = tc1
            .iter()
            .map(|(_, l)| l.split('\t').nth(3).unwrap())
            .find(|f| *f != last.split('\t').nth(3).unwrap())
            .unwrap();
        let mut cols: Vec<&str> = last.split('\t').collect();
        let prev_stmt = tc1[tc1.len() - 2].1.split('\t').nth(2).unwrap();
        cols[2] = prev_stmt;
        cols[3] = callee_frame;
        let _ = last_i;
        let new = cols.join("\t");
        let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        // Insert a test-frame step before it so the callee frame is closed, then the bad step.
        out[last_i] = new;
        std::fs::write(d.join("step.facts"), out.join("\n") + "\n").unwrap();
    });
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("step.facts")
            && (err.contains("returned at step")
                || err.contains("no longer on the stack")
                || err.contains("belongs to method")),
        "{err}"
    );
}

#[test]
fn missing_relation() {
    let (code, err) = corrupt(|d| std::fs::remove_file(d.join("cfg.facts")).unwrap());
    assert_eq!(code, 2);
    assert!(
        err.contains("cfg.facts") && err.contains("missing relation `cfg`"),
        "{err}"
    );
}

#[test]
fn bad_manifest_version() {
    let (code, err) = corrupt(|d| {
        rewrite(d, "manifest.toml", |s| {
            s.replace("version = 1", "version = 99")
        })
    });
    assert_eq!(code, 2);
    assert!(
        err.contains("manifest.toml") && err.contains("unsupported dump format version 99"),
        "{err}"
    );
}

#[test]
fn branch_step_without_outcome() {
    let (code, err) = corrupt(|d| {
        rewrite(d, "branch.facts", |s| {
            s.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n"
        });
    });
    assert_eq!(code, 2);
    assert!(
        err.contains("branch.facts") && err.contains("has no outcome"),
        "{err}"
    );
}

#[test]
fn not_a_dump() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["derive", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing manifest.toml"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Random bytes in any fact file: the loader returns an error or a dump, never panics.
    #[test]
    fn random_bytes_in_fact_files_never_panic(file in prop::sample::select(vec!["step", "frame", "stmt", "cfg", "def", "branch", "method", "formal"]), bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dump");
        copy_dir(&root().join("fixtures/dumps/interproc"), &d);
        std::fs::write(d.join(format!("{file}.facts")), &bytes).unwrap();
        let _ = prosecutor::dump::Dump::load(&d);
    }

    /// Random edits of a valid step file (swapped fields, dropped lines): error or dump, no panic;
    /// and a dump that loads derives an acyclic EPG.
    #[test]
    fn shuffled_steps_never_panic(drop in 0usize..40, swap_a in 0usize..40, swap_b in 0usize..40) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dump");
        copy_dir(&root().join("fixtures/dumps/interproc"), &d);
        let text = std::fs::read_to_string(d.join("step.facts")).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let n = lines.len();
        // swap the frame column of two rows, drop a row
        let (a, b) = (swap_a % n, swap_b % n);
        let fa = lines[a].split('\t').nth(3).unwrap().to_owned();
        let fb = lines[b].split('\t').nth(3).unwrap().to_owned();
        let fix = |l: &str, f: &str| { let mut c: Vec<&str> = l.split('\t').collect(); c[3] = f; c.join("\t") };
        lines[a] = fix(&lines[a].clone(), &fb);
        lines[b] = fix(&lines[b].clone(), &fa);
        lines.remove(drop % n);
        std::fs::write(d.join("step.facts"), lines.join("\n")).unwrap();
        if let Ok(dump) = prosecutor::dump::Dump::load(&d) {
            let g = prosecutor::pipeline::derive_all(&dump, &prosecutor::pipeline::Rules::default_rules());
            if let Ok((g, _)) = g { g.check_acyclic(&dump).unwrap(); }
        }
    }
}

/// A time limit that is not a positive number of seconds is a usage error (exit 2, naming the
/// value), not a panic in `Duration::from_secs_f64`.
#[test]
fn time_limits_must_be_positive_seconds() {
    let d = root().join("fixtures/dumps/leftpad_fig1");
    let d = d.to_str().unwrap();
    for args in [
        vec!["localize", d, "--cfx-timeout=-1"],
        vec!["localize", d, "--test-timeout", "0"],
        vec!["localize", d, "--cfx-timeout", "inf"],
        vec!["eval", "fixtures/cases.toml", "--test-timeout=-3"],
        vec!["eval", "fixtures/cases.toml", "--cfx-timeout", "nan"],
    ] {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("is not a positive number of seconds"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
