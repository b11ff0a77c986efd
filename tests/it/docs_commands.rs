//! Every `prosecutor SUBCOMMAND --flag ...` written in the README and the docs names a
//! subcommand and flags that exist (stale docs once told users about a `--cwd` flag and two of
//! five `bench` subcommands).

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;

/// The documentation a user reads: README.md, docs/*.md, frontends/*/docs/*.md.
fn doc_files() -> Vec<std::path::PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    for e in std::fs::read_dir(root().join("frontends")).unwrap() {
        dirs.push(e.unwrap().path().join("docs"));
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out
}

/// (subcommand path, flags) of each `prosecutor ...` command in `text`: the words after
/// `prosecutor` up to the end of the line or code span, flags taken before a lone `--` (after
/// it comes the test command, whose flags are pytest's). `bench X` is a two-word subcommand.
fn commands(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        for (i, _) in line.match_indices("prosecutor ") {
            let before = line[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '/' || c == '-' || c == '_') {
                continue; // a path (target/release/prosecutor is fine: checked below) or a word
            }
            let rest = &line[i + "prosecutor ".len()..];
            let rest = rest.split(['`', '|']).next().unwrap_or("");
            let words: Vec<&str> = rest.split_whitespace().collect();
            let Some(sub) = words.first() else { continue };
            if !sub.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
                continue;
            }
            let mut path = sub.to_string();
            let mut from = 1;
            if *sub == "bench" {
                if let Some(w) = words
                    .get(1)
                    .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
                {
                    path = format!("bench {w}");
                    from = 2;
                }
            }
            let flags = words[from..]
                .iter()
                .take_while(|w| **w != "--")
                .map(|w| w.trim_start_matches('['))
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(|w| {
                    w.split(['=', ']', ',', ')', '\\'])
                        .next()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            out.push((path, flags));
        }
    }
    out
}

#[test]
fn documented_commands_and_flags_exist() {
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    let subcommands: BTreeSet<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    assert!(subcommands.contains("localize"), "{help}");
    // words that follow "prosecutor " in prose, not commands
    let prose = [
        "is", "as", "and", "the", "itself", "does", "runs", "itself.",
    ];
    let mut helps: BTreeMap<String, String> = BTreeMap::new();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (path, flags) in commands(&text) {
            let first = path.split(' ').next().unwrap().to_owned();
            if prose.contains(&first.as_str()) {
                continue;
            }
            if !subcommands.contains(&first) {
                wrong.push(format!(
                    "{}: `prosecutor {path}`: no such subcommand",
                    file.display()
                ));
                continue;
            }
            let h = helps.entry(path.clone()).or_insert_with(|| {
                let mut args: Vec<&str> = path.split(' ').collect();
                args.push("--help");
                String::from_utf8(run(&args).stdout).unwrap()
            });
            if h.is_empty() {
                wrong.push(format!(
                    "{}: `prosecutor {path}`: no such subcommand",
                    file.display()
                ));
                continue;
            }
            for f in flags {
                if !h.contains(&format!("{f} ")) && !h.contains(&format!("{f}\n")) {
                    wrong.push(format!(
                        "{}: `prosecutor {path}` has no flag {f}",
                        file.display()
                    ));
                }
                checked += 1;
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "stale commands in the docs:\n{}",
        wrong.join("\n")
    );
    assert!(checked > 20, "only {checked} documented flags found");
}

/// The scanner finds commands and their flags, and stops at the test command's `--`.
#[test]
fn doc_command_scanner() {
    let got = commands(
        "run `prosecutor localize --src src --top 3 -- pytest --lf` or \
         `prosecutor bench localize --runs 5`; prosecutor is fast",
    );
    let want = vec![
        (
            "localize".to_owned(),
            vec!["--src".to_owned(), "--top".to_owned()],
        ),
        ("bench localize".to_owned(), vec!["--runs".to_owned()]),
        ("is".to_owned(), vec![]),
    ];
    assert_eq!(got, want);
    let help = String::from_utf8(run(&["localize", "--help"]).stdout).unwrap();
    assert!(
        !help.contains("--cwd "),
        "the flag the docs once named does not exist"
    );
}
