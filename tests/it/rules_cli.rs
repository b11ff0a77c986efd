//! Rules are text read at run time: editing a rule file changes the output of the built binary
//! without rebuilding; broken rule files are reported with file:line:column and a caret.

use crate::common::*;

fn rule_counts(args: &[&str]) -> std::collections::BTreeMap<String, usize> {
    let out = run(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m = std::collections::BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines().skip(1) {
        *m.entry(line.rsplit(',').next().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    m
}

#[test]
fn ablation_rule_file_removes_unexplored_branch_edges() {
    let dump = root().join("fixtures/dumps/interproc");
    let d = dump.to_str().unwrap();
    let full = rule_counts(&["derive", d, "--format", "csv"]);
    let ablation_path = root().join("rules/epg-no-unexplored.dl");
    let ablated = rule_counts(&[
        "derive",
        d,
        "--format",
        "csv",
        "--rules",
        ablation_path.to_str().unwrap(),
    ]);
    for r in ["R_CTRL2", "R_OP3", "R_OP4"] {
        assert!(
            full.get(r).copied().unwrap_or(0) > 0,
            "default rules derive {r}"
        );
        assert_eq!(ablated.get(r), None, "the ablation derives no {r}");
    }
    for r in [
        "R_l", "R_DU", "R_CTRL1", "R_OP1", "R_OP2", "R_CL1", "R_CL2", "R_CL3",
    ] {
        assert_eq!(full.get(r), ablated.get(r), "{r} unchanged by the ablation");
    }
}

/// A researcher's edit: a new rule in a copy of the default file shows up in the output.
#[test]
fn an_edited_rule_file_changes_the_output_without_rebuilding() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mine.dl");
    let mut text = std::fs::read_to_string(root().join("rules/epg.dl")).unwrap();
    text.push_str("\n// new: every statement vertex points at the values of the same step twice removed\nedge(L, V, \"R_MINE\") :- lastctrl(I, J), step(J, S), stmt_vertex(S, L), vd(I, _, V).\n");
    std::fs::write(&p, text).unwrap();
    let counts = rule_counts(&[
        "derive",
        root().join("fixtures/dumps/leftpad_fig1").to_str().unwrap(),
        "--format",
        "csv",
        "--rules",
        p.to_str().unwrap(),
    ]);
    assert!(counts.get("R_MINE").copied().unwrap_or(0) > 0, "{counts:?}");
}

#[test]
fn broken_rule_file_reports_file_line_column_and_caret() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.dl");
    std::fs::write(&p, ".decl a(x: unsigned)\n.decl e(x: unsigned, y: unsigned, r: symbol)\n.output e\ne(X, Y, \"R\") :- a(X).\n").unwrap();
    let out = run(&["check-rules", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("broken.dl:4:6: error:") && err.contains("`Y`"),
        "{err}"
    );
    assert!(
        err.contains("4 | e(X, Y, \"R\") :- a(X).") && err.contains("|      ^"),
        "{err}"
    );
    // derive with the same file fails the same way, before reading the dump
    let out = run(&[
        "derive",
        root().join("fixtures/dumps/leftpad_fig1").to_str().unwrap(),
        "--rules",
        p.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn rules_that_do_not_match_the_forward_pass_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("iface.dl");
    std::fs::write(&p, ".decl stepz(i: unsigned)\n.input stepz\n.decl edge(s: unsigned, d: unsigned, r: symbol)\n.output edge\nedge(I, I, \"x\") :- stepz(I).\n").unwrap();
    let out = run(&[
        "derive",
        root().join("fixtures/dumps/leftpad_fig1").to_str().unwrap(),
        "--rules",
        p.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("iface.dl") && err.contains("no relation `stepz`"),
        "{err}"
    );
}

#[test]
fn rules_that_create_a_cycle_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cycle.dl");
    let mut text = std::fs::read_to_string(root().join("rules/epg.dl")).unwrap();
    text.push_str("\nedge(V, L, \"R_BACK\") :- v(I, V), step(I, S), stmt_vertex(S, L).\n");
    std::fs::write(&p, text).unwrap();
    let out = run(&[
        "derive",
        root().join("fixtures/dumps/leftpad_fig1").to_str().unwrap(),
        "--rules",
        p.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cycle") && err.contains("R_BACK"), "{err}");
}

#[test]
fn output_formats() {
    let d = root().join("fixtures/dumps/while_true_fig6");
    let d = d.to_str().unwrap();
    let json = run(&["derive", d, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        v["edges"].as_array().unwrap().len() > 10
            && v["rule_counts"]["R_CTRL1"].as_u64().unwrap() > 0
    );
    let dot = String::from_utf8(run(&["derive", d, "--format", "dot"]).stdout).unwrap();
    assert!(
        dot.starts_with("digraph epg {") && dot.contains("->") && dot.trim_end().ends_with('}')
    );
    let tsv = String::from_utf8(run(&["derive", d, "--format", "tsv"]).stdout).unwrap();
    assert!(
        tsv.contains("# vertices")
            && tsv.contains("# edges")
            && tsv.contains("stmt:w.6\tstatement\t")
    );
}

/// A real DOT parser accepts the output of every bundled dump: statement text with quotes and
/// backslashes (leftpad's `' '`, `"\n"` in strings) is escaped exactly once. The parser is
/// Graphviz's `dot` where it is installed, else Python's `pydot` (the README's test command
/// installs it); with neither the test fails and says so.
#[test]
fn dot_output_parses() {
    let graphviz = std::process::Command::new("dot")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    let pydot = !graphviz
        && std::process::Command::new("python3")
            .args(["-c", "import pydot"])
            .output()
            .is_ok_and(|o| o.status.success());
    assert!(
        graphviz || pydot,
        "this test needs a DOT parser: Graphviz's `dot` (apt-get install graphviz) or Python's \
         pydot (python3 -m pip install pydot; scripts/test installs it)"
    );
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("fixtures/dumps")).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("manifest.toml").is_file() {
            continue;
        }
        let out = run(&["derive", dir.to_str().unwrap(), "--format", "dot"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut parser = if graphviz {
            std::process::Command::new("dot")
                .arg("-Tcanon")
                .spawn_piped()
        } else {
            std::process::Command::new("python3")
                .args([
                    "-c",
                    "import sys, pydot\n\
                     sys.exit(0 if pydot.graph_from_dot_data(sys.stdin.read()) else 1)",
                ])
                .spawn_piped()
        };
        use std::io::Write;
        parser.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        let parsed = parser.wait_with_output().unwrap();
        assert!(
            parsed.status.success(),
            "{}: the DOT parser rejects the output: {}",
            dir.display(),
            String::from_utf8_lossy(&parsed.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} bundled dumps found");
}

trait SpawnPiped {
    fn spawn_piped(&mut self) -> std::process::Child;
}

impl SpawnPiped for std::process::Command {
    fn spawn_piped(&mut self) -> std::process::Child {
        self.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// `derive --rule NAME` prints exactly the edges of that rule; an unknown name is an error
/// that lists the rules.
#[test]
fn derive_one_rule() {
    let d = root().join("fixtures/dumps/leftpad_fig1");
    let d = d.to_str().unwrap();
    let all = rule_counts(&["derive", d, "--format", "csv"]);
    let du = rule_counts(&["derive", d, "--format", "csv", "--rule", "R_DU"]);
    assert_eq!(du.len(), 1, "{du:?}");
    assert_eq!(du.get("R_DU"), all.get("R_DU"));
    assert!(all.len() > 2, "{all:?}");
    let out = run(&["derive", d, "--rule", "R_NOPE"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("R_NOPE") && err.contains("R_DU"), "{err}");
}
