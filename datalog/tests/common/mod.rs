#![allow(dead_code)]
use datalog::{parse_facts, Database, Program};

/// Parse `src`, load each `(relation, tsv)` input, evaluate.
pub fn run(src: &str, inputs: &[(&str, &str)]) -> (Program, Database) {
    let program = match Program::parse(src, "test.dl") {
        Ok(p) => p,
        Err(e) => panic!("parse failed:\n{e}"),
    };
    let mut db = Database::new();
    for (name, tsv) in inputs {
        let decl = program.decl(name).expect("declared");
        let types: Vec<_> = decl.columns.iter().map(|c| c.1).collect();
        let rows = parse_facts(tsv.as_bytes(), &types, name, &mut db.symbols).expect("facts");
        db.insert_flat(name, types.len(), rows);
    }
    program.evaluate(&mut db).expect("evaluate");
    (program, db)
}

/// Rows of `rel` as TAB-joined lines, in database order.
pub fn lines(program: &Program, db: &Database, rel: &str) -> Vec<String> {
    db.rows_text(program, rel)
        .unwrap_or_else(|| panic!("no relation {rel}"))
        .into_iter()
        .map(|r| r.join("\t"))
        .collect()
}

/// Sorted lines.
pub fn sorted(program: &Program, db: &Database, rel: &str) -> Vec<String> {
    let mut v = lines(program, db, rel);
    v.sort();
    v
}

pub fn strs(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}
