use datalog::{parse_facts, ColumnType, Database, Diagnostics, Program, Symbols};

const DECLS: &str = "\
.decl vd(i: number, k: symbol, v: symbol)
.decl lastdef(i: number, u: symbol, j: number, w: symbol)
.decl edge(a: symbol, b: symbol, kind: symbol)
";

/// Parse DECLS + `rules` (rules start at line 4) and return the diagnostics.
fn errs(rules: &str) -> Diagnostics {
    match Program::parse(&format!("{DECLS}{rules}"), "rules/epg.dl") {
        Ok(_) => panic!("expected errors for:\n{rules}"),
        Err(d) => d,
    }
}

fn one(rules: &str) -> String {
    let d = errs(rules);
    assert_eq!(d.len(), 1, "expected exactly one diagnostic, got:\n{d}");
    d.to_string()
}

#[test]
fn unbound_head_variable_with_caret() {
    let got = one("edge(W, V, \"R_DU\") :- vd(I, _, V), lastdef(I, U, J, X).\n");
    assert_eq!(
        got,
        "rules/epg.dl:4:6: error: variable `W` in the head is not bound by any positive body atom\n  \
         |\n\
         4 | edge(W, V, \"R_DU\") :- vd(I, _, V), lastdef(I, U, J, X).\n  \
         |      ^"
    );
    let d = errs("edge(W, V, \"R_DU\") :- vd(I, _, V), lastdef(I, U, J, X).\n");
    assert_eq!((d.0[0].line, d.0[0].col), (4, 6));
    assert_eq!(d.0[0].path, "rules/epg.dl");
}

#[test]
fn gutter_widens_for_two_digit_lines() {
    let rules = "\n\n\n\n\n\n\n\nedge(W, V, \"R_DU\") :- vd(I, _, V), lastdef(I, U, J, X).\n";
    let got = one(rules);
    assert_eq!(
        got,
        "rules/epg.dl:12:6: error: variable `W` in the head is not bound by any positive body atom\n   \
         |\n\
         12 | edge(W, V, \"R_DU\") :- vd(I, _, V), lastdef(I, U, J, X).\n   \
         |      ^"
    );
}

#[test]
fn undeclared_relation() {
    let got = one("edge(A, B, C) :- undeclared(A, B, C).\n");
    assert_eq!(
        got,
        "rules/epg.dl:4:18: error: relation `undeclared` is not declared\n  \
         |\n\
         4 | edge(A, B, C) :- undeclared(A, B, C).\n  \
         |                  ^^^^^^^^^^"
    );
}

#[test]
fn arity_mismatch_underlines_atom() {
    let got = one("edge(W, V) :- vd(W, _, V).\n");
    assert!(got.starts_with(
        "rules/epg.dl:4:1: error: arity mismatch: `edge` has 3 columns, but 2 arguments are given\n"
    ));
    assert!(got.ends_with("\n  | ^^^^^^^^^^"), "{got}");
}

#[test]
fn type_mismatches() {
    let d = one("edge(K, V, 3) :- vd(I, K, V).\n");
    assert!(
        d.starts_with(
            "rules/epg.dl:4:12: error: type mismatch: column `kind` of `edge` has type symbol"
        ),
        "{d}"
    );
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), I < K.\n");
    assert!(
        d.starts_with(
            "rules/epg.dl:4:33: error: type mismatch: cannot compare a number with a symbol"
        ),
        "{d}"
    );
    assert!(
        d.ends_with("|                                 ^^^^^"),
        "{d}"
    );
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), K + 1 = V.\n");
    assert!(
        d.starts_with(
            "rules/epg.dl:4:33: error: type mismatch: a symbol cannot be used in arithmetic"
        ),
        "{d}"
    );
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), lastdef(K, _, _, _).\n");
    assert!(d.starts_with("rules/epg.dl:4:41: error: type mismatch: variable `K` is a number here (column `i` of `lastdef`) but a symbol at 4:26"), "{d}");
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), K = 3.\n");
    assert!(
        d.starts_with(
            "rules/epg.dl:4:33: error: type mismatch: cannot compare a symbol with a number\n"
        ),
        "{d}"
    );
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), K < \"s\".\n");
    assert!(
        d.contains("symbols can only be compared with `=` and `!=`"),
        "{d}"
    );
    let d = one("edge(\"a\", \"b\", \"c\") :- vd(3000000000, _, _).\n");
    assert!(
        d.starts_with(
            "rules/epg.dl:4:27: error: literal 3000000000 is out of range for type number"
        ),
        "{d}"
    );
    let d = one(".decl u(x: unsigned)\n.decl n(x: number)\nu(X) :- n(Y), X = Y + 1.\n");
    assert!(
        d.starts_with("rules/epg.dl:6:1: error: type mismatch") || d.contains("type mismatch"),
        "{d}"
    );
}

#[test]
fn duplicate_decl_and_io_of_undeclared() {
    let d = errs(".decl vd(x: number)\n.input nosuch\n.output other\n");
    assert_eq!(d.len(), 3, "{d}");
    assert_eq!(
        d.0[0].to_string(),
        "rules/epg.dl:4:7: error: duplicate declaration of relation `vd` (first declared at 1:7)\n  \
         |\n\
         4 | .decl vd(x: number)\n  \
         |       ^^"
    );
    assert_eq!(d.0[1].message, "`.input` of undeclared relation `nosuch`");
    assert_eq!((d.0[1].line, d.0[1].col), (5, 8));
    assert_eq!(d.0[2].message, "`.output` of undeclared relation `other`");
}

#[test]
fn safety_errors() {
    let d = one("edge(K, V, _) :- vd(I, K, V).\n");
    assert!(
        d.starts_with("rules/epg.dl:4:12: error: wildcard `_` is not allowed in the head"),
        "{d}"
    );
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), !lastdef(I, K, Z, V).\n");
    assert!(
        d.starts_with(
            "rules/epg.dl:4:48: error: variable `Z` in negated atom `lastdef` is not bound"
        ),
        "{d}"
    );
    let d = one("edge(K, V, \"x\") :- vd(I, K, V), Q < I.\n");
    assert!(
        d.starts_with("rules/epg.dl:4:33: error: variable `Q` in a comparison is not bound"),
        "{d}"
    );
    // X = Y with both unbound binds nothing.
    let d = errs(".decl n(x: number)\n.decl m(x: number)\nm(X) :- n(_), X = Y.\n");
    assert!(
        d.to_string()
            .contains("variable `X` in the head is not bound"),
        "{d}"
    );
    // A fact with a variable is unsafe.
    let d = one("edge(X, \"a\", \"b\").\n");
    assert!(
        d.starts_with("rules/epg.dl:4:6: error: variable `X` in the head is not bound"),
        "{d}"
    );
}

#[test]
fn binding_through_equality_is_safe() {
    let src = ".decl n(x: number)\n.decl m(x: number, y: number)\nm(X, Z) :- n(X), Y = X + 1, Z = Y * 2.\nm(X, X) :- X = 3.\n";
    assert!(Program::parse(src, "ok.dl").is_ok());
}

#[test]
fn stratification_error_names_cycle() {
    let src = "\
.decl q(x: number)
.decl p(x: number)
.decl r(x: number)
p(X) :- q(X), !r(X).
r(X) :- p(X).
";
    let d = Program::parse(src, "s.dl").unwrap_err();
    assert_eq!(d.len(), 1, "{d}");
    assert_eq!(
        d.to_string(),
        "s.dl:4:15: error: negation of `r` inside a recursive cycle (p, r): the program is not stratifiable\n  \
         |\n\
         4 | p(X) :- q(X), !r(X).\n  \
         |               ^^^^^"
    );
    // Negation of a lower stratum is fine.
    let ok = "\
.decl q(x: number)
.decl p(x: number)
.decl r(x: number)
r(X) :- q(X), X > 1.
p(X) :- q(X), !r(X).
p(X) :- p(X), q(X).
";
    assert!(Program::parse(ok, "s.dl").is_ok());
}

#[test]
fn syntax_errors_recover_and_report_all() {
    let src = "\
.decl a(x: number)
a(1) a(2).
a(X :- a(X).
.bogus a
a(3).
a(\"unterminated).
a(4) :- a(X), X < 5 @ 3.
";
    let d = Program::parse(src, "syn.dl").unwrap_err();
    let text = d.to_string();
    let locs: Vec<(usize, usize)> = d.iter().map(|d| (d.line, d.col)).collect();
    assert!(locs.contains(&(2, 6)), "{text}");
    assert!(
        text.contains("syn.dl:2:6: error: expected `:-` or `.`, found identifier `a`"),
        "{text}"
    );
    assert!(
        text.contains("syn.dl:3:5: error: expected `,` or `)`, found `:-`"),
        "{text}"
    );
    assert!(
        text.contains("syn.dl:4:1: error: unknown directive `.bogus`"),
        "{text}"
    );
    assert!(
        text.contains("syn.dl:6:3: error: unterminated string literal"),
        "{text}"
    );
    assert!(
        text.contains("syn.dl:7:21: error: unexpected character `@`"),
        "{text}"
    );
    assert!(d.len() >= 5);
}

#[test]
fn unterminated_block_comment() {
    let d = Program::parse(".decl a(x: number)\n/* oops\na(1).\n", "c.dl").unwrap_err();
    assert_eq!(d.0[0].message, "unterminated block comment");
    assert_eq!((d.0[0].line, d.0[0].col), (2, 1));
}

#[test]
fn many_errors_in_one_program_are_all_reported_in_order() {
    let src = format!(
        "{DECLS}\
edge(W, V, \"R_DU\") :- vd(I, _, V), lastdef(I, U, J, X).
edge(W, V) :- vd(W, _, V).
edge(A, B, C) :- undeclared(A, B, C).
edge(K, V, 3) :- vd(I, K, V).
edge(K, V, _) :- vd(I, K, V).
.decl vd(x: number)
"
    );
    let d = Program::parse(&src, "m.dl").unwrap_err();
    let lines: Vec<usize> = d.iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![4, 5, 6, 7, 8, 9], "{d}");
}

#[test]
fn comments_and_souffle_io_params_are_accepted() {
    let src = r#"
    // line comment
    /* block
       comment */
    .decl a(x: symbol, y: number) // trailing
    .decl b(x: symbol)
    .input a(IO=file, filename="a_in.facts", delimiter="\t")
    .output b(IO=file, filename="b_out.tsv")
    b(X) :- a(X, Y), Y >= -3.
    "#;
    let p = Program::parse(src, "io.dl").unwrap();
    assert_eq!(p.input_file_name("a").unwrap(), "a_in.facts");
    assert_eq!(p.output_file_name("b").unwrap(), "b_out.tsv");
    assert!(p.decl("a").unwrap().is_input);
    assert!(p.decl("b").unwrap().is_output);
    assert_eq!(
        p.decl("a").unwrap().columns,
        vec![
            ("x".to_string(), ColumnType::Symbol),
            ("y".to_string(), ColumnType::Number)
        ]
    );
}

#[test]
fn facts_errors() {
    let mut syms = Symbols::new();
    let types = [ColumnType::Symbol, ColumnType::Number, ColumnType::Unsigned];
    let e = parse_facts(
        b"a\t1\t2\nb\t2\n\nc\tx\t3\nd\t4\t-1\n",
        &types,
        "dir/r.facts",
        &mut syms,
    )
    .unwrap_err();
    let msgs: Vec<String> = e.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        vec![
            "dir/r.facts:2: expected 3 columns, found 2",
            "dir/r.facts:4: column 2 (\"x\") is not a number",
            "dir/r.facts:5: column 3 (\"-1\") is not an unsigned number",
        ]
    );
    let ok = parse_facts(
        b"a\t-7\t9\r\n\nb\t2147483647\t4294967295",
        &types,
        "f",
        &mut syms,
    )
    .unwrap();
    assert_eq!(ok.len(), 6);
    assert_eq!(ok[1] as i32, -7);
    assert_eq!(ok[5], u32::MAX);
    assert_eq!(syms.resolve(ok[3]), Some("b"));
}

#[test]
fn facts_dir_missing_file_and_bad_rows() {
    let dir = tempfile::tempdir().unwrap();
    let src = ".decl a(x: number)\n.decl b(x: symbol, y: symbol)\n.input a\n.input b\n";
    let p = Program::parse(src, "x.dl").unwrap();
    std::fs::write(dir.path().join("b.facts"), "p\tq\nr\n").unwrap();
    let mut db = Database::new();
    let d = db.load_facts_dir(&p, dir.path()).unwrap_err();
    let text = d.to_string();
    assert_eq!(d.len(), 2, "{text}");
    assert!(
        text.contains("a.facts: cannot read facts for `a`"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{}:2: expected 2 columns, found 1",
            dir.path().join("b.facts").display()
        )),
        "{text}"
    );
}
