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
