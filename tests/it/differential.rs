//! The naive-vs-optimized check (polonius): the interpreted rule engine on rules/epg.dl and the
//! crepe-compiled rules derive exactly the same edges on every fixture and on synthetic dumps.

use prosecutor::pipeline::Rules;

use crate::common::*;

fn same(dump: &prosecutor::dump::Dump) {
    let a = derive(dump, &Rules::default_rules());
    let b = derive(dump, &Rules::Compiled);
    assert_eq!(named_edges(dump, &a), named_edges(dump, &b));
}

#[test]
fn interpreted_equals_compiled_on_every_fixture() {
    for (_, path) in dump_fixtures() {
        same(&load(&path));
    }
}

#[test]
fn interpreted_equals_compiled_on_synthetic_dumps() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [7, 8, 9] {
        let p = dir.path().join(format!("s{seed}"));
        let o = prosecutor::synth::SynthOptions {
            steps: 5000,
            seed,
            methods: 12,
            ..Default::default()
        };
        prosecutor::synth::write_dump(&p, &o).unwrap();
        same(&load(&p));
    }
}

/// `copy.facts` (statements that only copy a value): the default rules derive no `R_l` edge from
/// such a statement, the paper's literal rules (`rules/epg-paper.dl`) do, every other edge is the
/// same, and the compiled twin agrees with the interpreter.
#[test]
fn copy_statements_lose_exactly_their_r_l_edges() {
    let fixture = root().join("fixtures/dumps/leftpad_fig3");
    // the fixture lists lp.14, lp.17c, lp.20b, lp.22c and lp.28c (`return x`, as Jimple writes it)
    let copies: Vec<String> = std::fs::read_to_string(fixture.join("copy.facts"))
        .unwrap()
        .lines()
        .map(|l| format!("stmt:{l}"))
        .collect();
    assert!(copies.contains(&"stmt:lp.22c".to_owned()));
    let dump = load(&fixture);
    same(&dump);
    let paper = Rules::load(Some(&root().join("rules/epg-paper.dl"))).unwrap();
    let refined = named_edges(&dump, &derive(&dump, &Rules::default_rules()));
    let literal = named_edges(&dump, &derive(&dump, &paper));
    let missing: Vec<_> = literal.iter().filter(|e| !refined.contains(e)).collect();
    assert!(refined.iter().all(|e| literal.contains(e)));
    assert!(!missing.is_empty(), "lp.22c runs in the failing trace");
    for (rule, src, _) in &missing {
        assert_eq!(rule, "R_l");
        assert!(copies.contains(src), "{src}");
    }
    // without copy.facts both rule files derive the same edges
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("fig3");
    copy_dir(&fixture, &d);
    std::fs::remove_file(d.join("copy.facts")).unwrap();
    let plain = load(&d);
    same(&plain);
    assert_eq!(
        named_edges(&plain, &derive(&plain, &Rules::default_rules())),
        named_edges(&plain, &derive(&plain, &paper))
    );
}
