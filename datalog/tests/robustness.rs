//! Random input never makes the parser/checker or the facts reader panic.

use datalog::{parse_facts, ColumnType, Database, Program, Symbols};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    ".decl",
    ".input",
    ".output",
    ".type",
    ".",
    ",",
    "(",
    ")",
    ":",
    ":-",
    "!",
    "<",
    "<=",
    ">",
    ">=",
    "=",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "_",
    "a",
    "b",
    "X",
    "Y",
    "Z",
    "edge",
    "path",
    "symbol",
    "number",
    "unsigned",
    "float",
    "\"s\"",
    "\"",
    "0",
    "1",
    "-7",
    "4294967296",
    "99999999999999999999",
    "//c\n",
    "/*",
    "*/",
    "\n",
    " ",
    "\t",
    "é",
    "IO",
    "filename",
];

const BASE: &str = "\
.decl edge(a: symbol, b: symbol)
.decl path(a: symbol, b: symbol)
.decl n(x: number)
.input edge
.output path
";

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..60).prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1500), failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn parse_random_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let src = String::from_utf8_lossy(&bytes);
        if let Err(d) = Program::parse(&src, "fuzz.dl") {
            prop_assert!(!d.is_empty());
            let _ = d.to_string();
        }
    }

    #[test]
    fn parse_token_soup_never_panics(soup in token_soup()) {
        if let Err(d) = Program::parse(&soup, "soup.dl") {
            prop_assert!(!d.is_empty());
            let _ = d.to_string();
        }
        // Also with valid declarations in front, so rules reach the later checks.
        let src = format!("{BASE}{soup}");
        match Program::parse(&src, "soup.dl") {
            Err(d) => { let _ = d.to_string(); }
            Ok(p) => {
                // A program that parses must evaluate without panicking.
                let mut db = Database::new();
                let a = db.symbols.intern("a");
                let b = db.symbols.intern("b");
                db.insert_flat("edge", 2, vec![a, b, b, a]);
                for d in p.decls() {
                    if d.is_input && db.rows(&d.name).is_none() {
                        db.insert_flat(&d.name, d.columns.len(), Vec::new());
                    }
                }
                let _ = p.evaluate(&mut db);
            }
        }
    }

    #[test]
    fn rules_from_soup_never_panic(body in prop::collection::vec(prop::sample::select(&TOKENS[4..]), 0..30)) {
        let src = format!("{BASE}path(X, Y) :- {}.\n", body.join(" "));
        let _ = Program::parse(&src, "r.dl").map_err(|d| d.to_string());
    }

    #[test]
    fn facts_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400), ncols in 1usize..4) {
        let types = [ColumnType::Symbol, ColumnType::Number, ColumnType::Unsigned];
        let types: Vec<ColumnType> = (0..ncols).map(|i| types[i % 3]).collect();
        let mut syms = Symbols::new();
        match parse_facts(&bytes, &types, "f.facts", &mut syms) {
            Ok(rows) => prop_assert_eq!(rows.len() % ncols, 0),
            Err(d) => prop_assert!(!d.is_empty()),
        }
    }

    #[test]
    fn facts_reader_on_tsv_like_text(lines in prop::collection::vec(
        prop::collection::vec(prop::sample::select(&["a", "-1", "7", "", "x y", "4294967295", "é", "\r"][..]), 0..4), 0..20)) {
        let text: String = lines.iter().map(|l| l.join("\t") + "\n").collect();
        let types = [ColumnType::Symbol, ColumnType::Number];
        let mut syms = Symbols::new();
        let _ = parse_facts(text.as_bytes(), &types, "g.facts", &mut syms);
    }
}

/// Number of proptest cases: `PROPTEST_CASES` if set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn huge_expressions_and_bodies_are_errors_not_stack_overflows() {
    let chain = vec!["1"; 100_000].join(" + ");
    let src = format!("{BASE}n(X) :- n(Y), X = {chain}.\n");
    let d = Program::parse(&src, "big.dl").unwrap_err();
    assert!(
        d.to_string().contains("expression nested too deeply"),
        "{}",
        &d.0[0]
    );
    let nested = format!("{}1{}", "(".repeat(50_000), ")".repeat(50_000));
    let src = format!("{BASE}n(X) :- n(Y), X = {nested}.\n");
    assert!(Program::parse(&src, "big.dl").is_err());
    let negs = format!("{}1", "-".repeat(50_000));
    let src = format!("{BASE}n(X) :- n(Y), X = {negs}.\n");
    assert!(Program::parse(&src, "big.dl").is_err());
    let body = vec!["n(X)"; 5000].join(", ");
    let src = format!("{BASE}n(X) :- {body}.\n");
    let d = Program::parse(&src, "big.dl").unwrap_err();
    assert!(d.to_string().contains("more than 1000 literals"));
    // Moderately large rules still work.
    let chain = vec!["1"; 150].join(" + ");
    let body = vec!["n(X)"; 200].join(", ");
    let src = format!("{BASE}n(Y) :- {body}, Y = X + {chain}, Y < 1000.\n");
    let p = Program::parse(&src, "ok.dl").unwrap();
    let mut db = Database::new();
    db.insert_flat("edge", 2, Vec::new());
    db.insert_flat("n", 1, vec![1, 2]);
    p.evaluate(&mut db).unwrap();
    let (_, rows) = db.rows("n").unwrap();
    // 1, 2, then +150 repeatedly while < 1000.
    assert_eq!(rows.len(), 14);
}
