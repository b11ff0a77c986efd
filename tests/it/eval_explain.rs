//! `prosecutor eval --explain`: seeds 003 and 004 measured per case, on one traced Python case,
//! fixtures/explain/listsum (seed 004's Fig. 2 in Python; its tests fail on `src/` and pass with
//! `--fixed` on `fixed/`), in regression mode against its fixed version (`reference_src`,
//! `reference_test`). Without `--explain` the columns stay empty and nothing more is traced; a
//! fixed version that is missing is the explanation's error, not the case's.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use crate::common::*;
use crate::eval::{csv_rows, require_pytest};

/// The test command of listsum, `--fixed` for the fixed version.
fn pytest(fixed: bool) -> String {
    let fixed = if fixed { ", \"--fixed\"" } else { "" };
    format!(
        "[\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\", \"tests\"{fixed}]"
    )
}

/// A temp dir holding a copy of listsum and `m.toml`, its one case (the fault: line 15, `>=`
/// for `>`).
fn listsum_manifest() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &root().join("fixtures/explain/listsum"),
        &tmp.path().join("listsum"),
    );
    let m = tmp.path().join("m.toml");
    std::fs::write(
        &m,
        format!(
            "[[case]]\nname = \"listsum\"\ndir = \"listsum\"\nsrc = \"src/listsum.py\"\n\
             test = {}\nfaulty = [\"listsum.py:15\"]\nreference_src = \"fixed/listsum.py\"\n\
             reference_test = {}\n",
            pytest(false),
            pytest(true)
        ),
    )
    .unwrap();
    (tmp, m)
}

fn eval(manifest: &Path, out: &Path, flags: &[&str]) -> Output {
    let o = bin()
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("eval")
        .arg(manifest)
        .arg("--out")
        .arg(out)
        .args(["--no-cfx", "--jobs", "2"])
        .args(flags)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    o
}

/// The explain columns (13..) of the case's rows, checked to be the same on each row.
fn explain_cells(rows: &[Vec<String>], case: &str) -> Vec<String> {
    let mine: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == case).collect();
    assert_eq!(mine.len(), prosecutor::eval::Tech::all().len());
    for r in &mine {
        assert_eq!(r[13..], mine[0][13..], "{r:?}");
    }
    mine[0][13..].to_vec()
}

/// `eval --explain` on listsum, run once: (its temp dir, OUT, the explain columns by name, the
/// `prosecutor` row, summary.md).
#[allow(clippy::type_complexity)]
fn explained() -> &'static (
    tempfile::TempDir,
    PathBuf,
    Vec<(&'static str, String)>,
    Vec<String>,
    String,
) {
    static RUN: OnceLock<(
        tempfile::TempDir,
        PathBuf,
        Vec<(&'static str, String)>,
        Vec<String>,
        String,
    )> = OnceLock::new();
    RUN.get_or_init(|| {
        require_pytest();
        let (tmp, m) = listsum_manifest();
        let out = tmp.path().join("out");
        eval(&m, &out, &["--explain"]);
        let rows = csv_rows(&out);
        let cells = prosecutor::eval::output::EXPLAIN_COLUMNS
            .into_iter()
            .zip(explain_cells(&rows, "listsum"));
        let full = rows.iter().find(|r| r[1] == "prosecutor").cloned().unwrap();
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        (tmp, out, cells.collect(), full, summary)
    })
}

fn cell(name: &str) -> &'static str {
    let (_, _, cells, _, _) = explained();
    &cells.iter().find(|(c, _)| *c == name).unwrap().1
}

/// Seed 003 on listsum: a nearest successful run is found (the failing test passes with a
/// branch instance switched), by re-runs, and scored; the rankings are there as without
/// `--explain`; the fixed version was traced into OUT/reference/listsum.
#[test]
fn eval_explain_measures_the_nearest_successful_run() {
    let (_, out, cells, full, summary) = explained();
    assert_eq!(cell("nsr_found"), "true", "{cells:?}");
    assert!(cell("nsr_size").parse::<usize>().unwrap() >= 1, "{cells:?}");
    assert!(cell("nsr_runs").parse::<usize>().unwrap() >= 1, "{cells:?}");
    let score: f64 = cell("nsr_score").parse().unwrap();
    assert!((0.0..=1.0).contains(&score), "{cells:?}");
    let bucket: u32 = cell("nsr_bucket").parse().unwrap();
    // Table 4's buckets: 100, then tens (of the score rounded to a percent)
    let pct = (score * 100.0).round() as u32;
    assert_eq!(bucket, pct.min(100) / 10 * 10, "{cells:?}");
    assert_eq!(
        bucket,
        ((score * 100.0).floor() as u32 / 10 * 10),
        "{cells:?}"
    );
    assert!(cell("explain_seconds").parse::<f64>().unwrap() > 0.0);
    // the ranking's own columns: the fault is ranked, no error
    assert!(!full[2].is_empty() && full[12].is_empty(), "{full:?}");
    assert!(out.join("reference/listsum/manifest.toml").is_file());
    assert!(
        summary.contains("## Seeds 003 and 004 (`eval --explain`)"),
        "{summary}"
    );
    for row in ["| cases | 1 |", "| nearest successful run found | 1 |"] {
        assert!(summary.contains(row), "{row}\n{summary}");
    }
}

/// Seed 004 on listsum in regression mode (spec §5's Fig. 2: `{B, D, E}`, three steps, the
/// first on the faulty line 15).
#[test]
fn eval_explain_measures_the_causal_path() {
    let (_, _, cells, _, summary) = explained();
    assert_eq!(cell("causal_mode"), "regression", "{cells:?}");
    assert_eq!(cell("causal_length"), "3", "{cells:?}");
    assert_eq!(cell("causal_reaches_fault"), "true", "{cells:?}");
    assert_eq!(cell("causal_complete"), "true", "{cells:?}");
    assert!(cell("causal_runs").parse::<usize>().is_ok(), "{cells:?}");
    assert_eq!(cell("explain_error"), "", "{cells:?}");
    for row in [
        "| explained without error | 1 |",
        "| causal path computed | 1 (regression 1) |",
        "| causal path length: median | 3 |",
        "| causal path contains a faulty line | 1 (100.0 % of paths, 100.0 % of cases) |",
    ] {
        assert!(summary.contains(row), "{row}\n{summary}");
    }
}

/// Without `--explain` the columns are empty, summary.md has no such section and the fixed
/// version is not traced.
#[test]
fn eval_without_explain_leaves_the_columns_empty() {
    require_pytest();
    let (tmp, m) = listsum_manifest();
    let out = tmp.path().join("out");
    eval(&m, &out, &[]);
    let cells = explain_cells(&csv_rows(&out), "listsum");
    assert!(cells.iter().all(String::is_empty), "{cells:?}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!summary.contains("Seeds 003 and 004"), "{summary}");
    assert!(!out.join("reference").exists());
}

/// A fixed version that does not exist: the case's explain_error says so, its rankings count.
#[test]
fn eval_explain_records_a_missing_fixed_version() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("p")).unwrap();
    let m = tmp.path().join("m.toml");
    std::fs::write(
        &m,
        format!(
            "[[case]]\nname = \"fig1\"\ndump = \"{}\"\nfaulty = [\"StringUtils.java:9\"]\n\
             dir = \"p\"\nreference_src = \"fixed\"\nreference_test = {}\n",
            root().join("fixtures/dumps/leftpad_fig1").display(),
            pytest(true)
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    eval(&m, &out, &["--explain"]);
    let rows = csv_rows(&out);
    let cells = explain_cells(&rows, "fig1");
    assert!(cells[..11].iter().all(String::is_empty), "{cells:?}");
    assert!(
        cells[11].starts_with("the fixed version (reference_src): ")
            && cells[11].ends_with("p/fixed does not exist"),
        "{cells:?}"
    );
    let full = rows.iter().find(|r| r[1] == "prosecutor").unwrap();
    assert!(!full[2].is_empty() && full[12].is_empty(), "{full:?}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for row in [
        "| explained without error | 0 |",
        "- `fig1`: the fixed version (reference_src): ",
    ] {
        assert!(summary.contains(row), "{row}\n{summary}");
    }
}
