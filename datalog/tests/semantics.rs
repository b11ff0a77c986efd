mod common;
use common::*;
use datalog::{Database, EvalError, Program};

const TC: &str = r#"
.decl edge(a: symbol, b: symbol)
.decl path(a: symbol, b: symbol)
.input edge
.output path
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).
"#;

#[test]
fn transitive_closure() {
    let (p, db) = run(TC, &[("edge", "a\tb\nb\tc\nc\td\n")]);
    assert_eq!(
        sorted(&p, &db, "path"),
        strs(&["a\tb", "a\tc", "a\td", "b\tc", "b\td", "c\td"])
    );
}

#[test]
fn transitive_closure_with_cycle_right_recursive() {
    let src = r#"
    .decl edge(a: number, b: number)
    .decl path(a: number, b: number)
    .input edge
    path(X, Y) :- edge(X, Y).
    path(X, Z) :- edge(X, Y), path(Y, Z).
    "#;
    let (p, db) = run(src, &[("edge", "1\t2\n2\t3\n3\t1\n")]);
    let got = sorted(&p, &db, "path");
    assert_eq!(got.len(), 9);
    assert!(got.contains(&"3\t3".to_string()));
}

#[test]
fn nonlinear_transitive_closure() {
    let src = r#"
    .decl edge(a: unsigned, b: unsigned)
    .decl path(a: unsigned, b: unsigned)
    .input edge
    path(X, Y) :- edge(X, Y).
    path(X, Z) :- path(X, Y), path(Y, Z).
    "#;
    let chain: String = (0..50).map(|i| format!("{i}\t{}\n", i + 1)).collect();
    let (_p, db) = run(src, &[("edge", &chain)]);
    let (ar, rows) = db.rows("path").unwrap();
    assert_eq!(rows.len() / ar, 51 * 50 / 2);
}

#[test]
fn same_generation() {
    let src = r#"
    .decl parent(c: symbol, p: symbol)
    .decl person(x: symbol)
    .decl sg(a: symbol, b: symbol)
    .input parent
    person(X) :- parent(X, _).
    person(X) :- parent(_, X).
    sg(X, X) :- person(X).
    sg(X, Y) :- parent(X, XP), sg(XP, YP), parent(Y, YP).
    "#;
    let parents = "b\ta\nc\ta\nd\tb\ne\tc\nf\te\n";
    let (p, db) = run(src, &[("parent", parents)]);
    let got = sorted(&p, &db, "sg");
    for pair in ["b\tc", "c\tb", "d\te", "e\td", "a\ta", "f\tf"] {
        assert!(got.contains(&pair.to_string()), "missing {pair}: {got:?}");
    }
    assert!(!got.contains(&"d\tc".to_string()));
    // 6 persons reflexive + (b,c),(c,b),(d,e),(e,d)
    assert_eq!(got.len(), 10);
}

#[test]
fn stratified_negation() {
    let src = r#"
    .decl node(x: symbol)
    .decl edge(a: symbol, b: symbol)
    .decl reach(x: symbol)
    .decl unreached(x: symbol)
    .input node
    .input edge
    reach("s").
    reach(Y) :- reach(X), edge(X, Y).
    unreached(X) :- node(X), !reach(X).
    "#;
    let (p, db) = run(
        src,
        &[("node", "s\na\nb\nc\n"), ("edge", "s\ta\na\ts\nb\tc\n")],
    );
    assert_eq!(sorted(&p, &db, "reach"), strs(&["s", "a"]));
    assert_eq!(sorted(&p, &db, "unreached"), strs(&["b", "c"]));
}

#[test]
fn negation_with_wildcard_and_constant() {
    let src = r#"
    .decl e(a: number, b: number, k: symbol)
    .decl n(a: number)
    .decl out(a: number)
    .decl out2(a: number)
    .input e
    .input n
    out(X) :- n(X), !e(X, _, _).
    out2(X) :- n(X), !e(_, X, "k").
    "#;
    let (p, db) = run(
        src,
        &[("e", "1\t2\tk\n3\t4\tj\n"), ("n", "1\n2\n3\n4\n5\n")],
    );
    assert_eq!(sorted(&p, &db, "out"), strs(&["2", "4", "5"]));
    assert_eq!(sorted(&p, &db, "out2"), strs(&["1", "3", "4", "5"]));
}

#[test]
fn arithmetic_and_comparisons() {
    let src = r#"
    .decl n(x: number)
    .decl succ(x: number, y: number)
    .decl small(x: number)
    .decl combo(x: number, y: number, z: number)
    .decl neg(x: number)
    .decl divs(x: number, q: number, r: number)
    .input n
    succ(X, Y) :- n(X), Y = X + 1.
    small(X) :- n(X), X * 2 <= 4, X != 0.
    combo(X, Y, Z) :- n(X), n(Y), X < Y, Z = (X + Y) * 2 - 1, Y + 1 < Z * 2.
    neg(Y) :- n(X), Y = -X - 10.
    divs(X, Q, R) :- n(X), X > 0, Q = 7 / X, R = 7 % X.
    "#;
    let (p, db) = run(src, &[("n", "-2\n0\n1\n2\n3\n")]);
    assert_eq!(
        sorted(&p, &db, "succ"),
        strs(&["-2\t-1", "0\t1", "1\t2", "2\t3", "3\t4"])
    );
    assert_eq!(sorted(&p, &db, "small"), strs(&["-2", "1", "2"]));
    let combo = sorted(&p, &db, "combo");
    assert!(combo.contains(&"1\t2\t5".to_string()));
    assert!(!combo.contains(&"-2\t0\t-5".to_string())); // 0+1 < -10 fails
    assert!(combo.contains(&"0\t2\t3".to_string()));
    assert!(!combo.contains(&"0\t1\t1".to_string()));
    assert_eq!(
        sorted(&p, &db, "neg"),
        strs(&["-8", "-10", "-11", "-12", "-13"])
    );
    assert_eq!(
        sorted(&p, &db, "divs"),
        strs(&["1\t7\t0", "2\t3\t1", "3\t2\t1"])
    );
}

#[test]
fn signed_order_and_range_scan() {
    // Range scans over a number column must respect signed order.
    let src = r#"
    .decl ev(t: number, name: symbol)
    .decl win(lo: number, hi: number)
    .decl inside(lo: number, name: symbol)
    .input ev
    .input win
    inside(L, N) :- win(L, H), ev(T, N), L < T, T <= H.
    "#;
    let (p, db) = run(
        src,
        &[
            ("ev", "-5\ta\n-1\tb\n0\tc\n3\td\n7\te\n"),
            ("win", "-6\t0\n0\t7\n-2\t-1\n"),
        ],
    );
    assert_eq!(
        sorted(&p, &db, "inside"),
        strs(&["-6\ta", "-6\tb", "-6\tc", "0\td", "0\te", "-2\tb"])
    );
    // Rows are sorted with number columns in signed order.
    let (_, rows) = db.rows("ev").unwrap();
    let firsts: Vec<i32> = rows.chunks(2).map(|r| r[0] as i32).collect();
    assert_eq!(firsts, vec![-5, -1, 0, 3, 7]);
}

#[test]
fn range_scan_with_bound_prefix() {
    // exec(L, C, R), J < R, R < I with L, C, J, I bound.
    let src = r#"
    .decl exec(l: unsigned, c: unsigned, r: unsigned)
    .decl q(l: unsigned, c: unsigned, j: unsigned, i: unsigned)
    .decl hit(l: unsigned, r: unsigned)
    .input exec
    .input q
    hit(L, R) :- q(L, C, J, I), exec(L, C, R), J < R, R < I.
    "#;
    let mut exec = String::new();
    for l in 0..3 {
        for c in 0..2 {
            for r in 0..20 {
                exec.push_str(&format!("{l}\t{c}\t{r}\n"));
            }
        }
    }
    let (p, db) = run(
        src,
        &[
            ("exec", &exec),
            ("q", "1\t1\t5\t9\n2\t0\t18\t100\n0\t0\t4294967295\t0\n"),
        ],
    );
    assert_eq!(
        sorted(&p, &db, "hit"),
        strs(&["1\t6", "1\t7", "1\t8", "2\t19"])
    );
}

#[test]
fn wildcards_constants_and_repeated_vars() {
    let src = r#"
    .decl r(a: symbol, b: symbol, c: number)
    .decl loops(a: symbol)
    .decl tagged(a: symbol, t: symbol, k: number)
    .decl firsts(a: symbol)
    .input r
    loops(X) :- r(X, X, _).
    tagged(X, "T", 42) :- r(X, "y", 1).
    firsts(X) :- r(X, _, _).
    "#;
    let (p, db) = run(src, &[("r", "x\tx\t1\nx\ty\t1\nz\ty\t2\nw\tw\t5\n")]);
    assert_eq!(sorted(&p, &db, "loops"), strs(&["w", "x"]));
    assert_eq!(sorted(&p, &db, "tagged"), strs(&["x\tT\t42"]));
    assert_eq!(sorted(&p, &db, "firsts"), strs(&["w", "x", "z"]));
}

#[test]
fn facts_in_program_and_input_plus_rules() {
    let src = r#"
    .decl e(a: number, b: number)
    .decl t(a: number, b: number)
    .input t
    e(1, 2). e(2, 3).
    e(-1, -1).
    t(X, Z) :- t(X, Y), e(Y, Z).
    "#;
    let (p, db) = run(src, &[("t", "0\t1\n")]);
    assert_eq!(sorted(&p, &db, "e"), strs(&["1\t2", "2\t3", "-1\t-1"]));
    assert_eq!(sorted(&p, &db, "t"), strs(&["0\t1", "0\t2", "0\t3"]));
}

#[test]
fn mutual_recursion() {
    let src = r#"
    .decl succ(a: unsigned, b: unsigned)
    .decl even(a: unsigned)
    .decl odd(a: unsigned)
    .input succ
    even(0).
    odd(Y) :- even(X), succ(X, Y).
    even(Y) :- odd(X), succ(X, Y).
    "#;
    let succ: String = (0..10).map(|i| format!("{i}\t{}\n", i + 1)).collect();
    let (p, db) = run(src, &[("succ", &succ)]);
    assert_eq!(
        sorted(&p, &db, "even"),
        strs(&["0", "2", "4", "6", "8", "10"])
    );
    assert_eq!(sorted(&p, &db, "odd"), strs(&["1", "3", "5", "7", "9"]));
}

#[test]
fn recursive_join_on_non_leading_column_uses_index() {
    // reach is joined on its second column: needs a permuted index of a recursive relation.
    let src = r#"
    .decl e(a: number, b: number)
    .decl back(a: number, b: number)
    .input e
    back(X, Y) :- e(Y, X).
    back(X, Z) :- e(Z, Y), back(X, Y).
    "#;
    let (p, db) = run(src, &[("e", "1\t2\n2\t3\n3\t4\n")]);
    // back(X, Y): Y reaches X
    assert_eq!(
        sorted(&p, &db, "back"),
        strs(&["2\t1", "3\t2", "4\t3", "3\t1", "4\t2", "4\t1"])
    );
}

#[test]
fn output_sorted_and_deduplicated() {
    let src = r#"
    .decl a(x: unsigned, y: unsigned)
    .decl b(x: unsigned)
    .input a
    b(Y) :- a(_, Y).
    "#;
    let (p, db) = run(src, &[("a", "5\t3\n1\t3\n2\t1\n1\t3\n")]);
    assert_eq!(lines(&p, &db, "b"), vec!["1", "3"]);
    assert_eq!(lines(&p, &db, "a"), vec!["1\t3", "2\t1", "5\t3"]);
}

#[test]
fn eval_errors_not_panics() {
    let program = Program::parse(TC, "tc.dl").unwrap();
    let mut db = Database::new();
    assert_eq!(
        program.evaluate(&mut db),
        Err(EvalError::MissingInput("edge".into()))
    );
    db.insert_flat("edge", 3, vec![0, 0, 0]);
    assert!(matches!(
        program.evaluate(&mut db),
        Err(EvalError::ArityMismatch {
            expected: 2,
            found: 3,
            ..
        })
    ));
    let a = db.symbols.intern("a");
    db.insert_flat("edge", 2, vec![a, a, a]);
    assert!(matches!(
        program.evaluate(&mut db),
        Err(EvalError::RaggedRows { .. })
    ));
    db.insert_flat("edge", 2, vec![a, 99]);
    assert!(matches!(
        program.evaluate(&mut db),
        Err(EvalError::UnknownSymbol {
            value: 99,
            column: 2,
            ..
        })
    ));

    let div = Program::parse(
        ".decl n(x: number)\n.decl q(x: number)\n.input n\nq(Y) :- n(X), Y = 10 / X.\n",
        "div.dl",
    )
    .unwrap();
    let mut db = Database::new();
    db.insert_flat("n", 1, vec![2, 0]);
    let e = div.evaluate(&mut db).unwrap_err();
    assert_eq!(
        e.to_string(),
        "div.dl:4: division by zero while evaluating a rule for `q`"
    );
    // Inputs are still there after a failed evaluation.
    assert_eq!(db.rows("n").unwrap().1.len(), 2);
}

/// A join that explodes stops at the row limit with the rule's file and line; under the limit
/// (and without one) the same program derives every row.
#[test]
fn row_limit_stops_an_exploding_join() {
    let src = ".decl n(x: unsigned)\n.decl pair(x: unsigned, y: unsigned)\n.decl big(x: unsigned, y: unsigned, z: unsigned)\n.input n\n.output big\npair(X, Y) :- n(X), n(Y).\nbig(X, Y, Z) :- pair(X, Y), n(Z).\n";
    let program = Program::parse(src, "cube.dl").unwrap();
    let fill = |db: &mut Database| db.insert_flat("n", 1, (0..100).collect());
    let mut db = Database::new();
    fill(&mut db);
    db.set_row_limit(Some(50_000));
    let e = program.evaluate(&mut db).unwrap_err();
    assert_eq!(
        e,
        EvalError::TooManyRows {
            path: "cube.dl".into(),
            line: 7,
            relation: "big".into(),
            limit: 50_000
        }
    );
    assert!(e
        .to_string()
        .starts_with("cube.dl:7: relation `big` grew past 50000 rows"));
    // A limit that the derivation stays under changes nothing.
    for limit in [Some(1_000_000), None] {
        let mut db = Database::new();
        fill(&mut db);
        db.set_row_limit(limit);
        program.evaluate(&mut db).unwrap();
        assert_eq!(db.rows("big").unwrap().1.len(), 3 * 1_000_000);
        assert_eq!(db.rows("pair").unwrap().1.len(), 2 * 10_000);
    }
}

#[test]
fn evaluate_twice_is_stable() {
    let program = Program::parse(TC, "tc.dl").unwrap();
    let mut db = Database::new();
    let ids: Vec<u32> = ["a", "b", "c"]
        .iter()
        .map(|s| db.symbols.intern(s))
        .collect();
    db.insert_flat("edge", 2, vec![ids[0], ids[1], ids[1], ids[2]]);
    let s1 = program.evaluate(&mut db).unwrap();
    let first = db.rows("path").unwrap().1.to_vec();
    let s2 = program.evaluate(&mut db).unwrap();
    assert_eq!(db.rows("path").unwrap().1, &first[..]);
    assert_eq!(s1.derived, s2.derived);
    assert_eq!(s1.derived, vec![("path".to_string(), 3)]);
}

#[test]
fn facts_dir_round_trip() {
    let src = r#"
    .decl vd(i: number, k: symbol, v: symbol)
    .decl lastdef(i: number, u: symbol, j: unsigned, w: symbol)
    .decl edge(w: symbol, v: symbol, kind: symbol)
    .decl copy(i: number, k: symbol, v: symbol)
    .input vd
    .input lastdef(IO=file, filename="ld.tsv")
    .output edge
    .output copy
    edge(W, V, "R_DU") :- vd(I, _, V), lastdef(I, U, J, W).
    copy(I, K, V) :- vd(I, K, V).
    "#;
    let program = Program::parse(src, "rt.dl").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("facts");
    let out = dir.path().join("out");
    std::fs::create_dir(&facts).unwrap();
    std::fs::write(
        facts.join("vd.facts"),
        "1\tk1\tx\n-2\tk2\ty with space\n\n3\tk3\tz\n1\tk1\tx\n",
    )
    .unwrap();
    std::fs::write(
        facts.join("ld.tsv"),
        "1\tu\t7\tw1\r\n-2\tu\t4294967295\tw2\n9\tu\t0\tw9\n",
    )
    .unwrap();
    let mut db = Database::new();
    db.load_facts_dir(&program, &facts).unwrap();
    program.evaluate(&mut db).unwrap();
    db.write_output_dir(&program, &out).unwrap();
    let edge = std::fs::read_to_string(out.join("edge.csv")).unwrap();
    let mut edge_lines: Vec<&str> = edge.lines().collect();
    edge_lines.sort();
    assert_eq!(edge_lines, vec!["w1\tx\tR_DU", "w2\ty with space\tR_DU"]);
    // copy is written in sorted order (numbers signed) and deduplicated.
    let copy = std::fs::read_to_string(out.join("copy.csv")).unwrap();
    assert_eq!(copy, "-2\tk2\ty with space\n1\tk1\tx\n3\tk3\tz\n");

    // Reading the written output back as facts gives the same relation.
    let src2 = ".decl copy(i: number, k: symbol, v: symbol)\n.input copy(filename=\"copy.csv\")\n";
    let p2 = Program::parse(src2, "rt2.dl").unwrap();
    let mut db2 = Database::new();
    db2.load_facts_dir(&p2, &out).unwrap();
    p2.evaluate(&mut db2).unwrap();
    assert_eq!(
        db2.rows_text(&p2, "copy").unwrap(),
        db.rows_text(&program, "copy").unwrap()
    );
}

#[test]
fn rules_without_positive_atoms() {
    let src = r#"
    .decl s(x: number)
    .decl r(x: number)
    .input s
    r(X) :- X = 3.
    r(Y) :- Y = 2 * 5 - 1, Y > 0.
    r(1) :- 1 < 2.
    r(2) :- 2 < 1.
    r(4) :- !s(4).
    r(5) :- !s(7).
    "#;
    let (p, db) = run(src, &[("s", "7\n")]);
    assert_eq!(sorted(&p, &db, "r"), strs(&["1", "3", "4", "9"]));
}

#[test]
fn unsigned_arithmetic_and_large_values() {
    let src = r#"
    .decl u(x: unsigned)
    .decl big(x: unsigned)
    .decl wrapped(x: unsigned)
    .input u
    big(X) :- u(X), X > 2147483647.
    wrapped(Y) :- u(X), X >= 4294967295, Y = X + 1.
    "#;
    let (p, db) = run(src, &[("u", "1\n2147483648\n4294967295\n")]);
    assert_eq!(sorted(&p, &db, "big"), strs(&["2147483648", "4294967295"]));
    assert_eq!(sorted(&p, &db, "wrapped"), strs(&["0"]));
}

#[test]
fn types_of_helper_variables_are_inferred_from_comparisons() {
    let src = r#"
    .decl u(x: unsigned)
    .decl a(x: unsigned)
    .decl b(x: unsigned)
    .decl c(x: unsigned)
    .input u
    a(Y) :- u(Y), Z = 5 - 6, Y < Z.      // Z is unsigned (compared with Y): wraps around
    b(Y) :- u(Y), Y < 5 - 6.             // unsigned arithmetic
    c(Y) :- u(Y), 3 > 4 - 5.             // no variables: `number`, so 3 > -1 holds
    "#;
    let (p, db) = run(src, &[("u", "1\n7\n")]);
    assert_eq!(sorted(&p, &db, "a"), strs(&["1", "7"]));
    assert_eq!(sorted(&p, &db, "b"), strs(&["1", "7"]));
    assert_eq!(sorted(&p, &db, "c"), strs(&["1", "7"]));
}

/// Larger random inputs (so that block summaries, galloping and packed sorting are used),
/// checked against joins computed directly here.
#[test]
fn larger_random_joins_match_direct_computation() {
    use std::collections::BTreeSet;
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut rnd = |m: u32| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as u32
    };
    let a: Vec<(u32, u32)> = (0..4000).map(|_| (rnd(3000), rnd(700))).collect();
    let b: Vec<(u32, u32)> = (0..4000).map(|_| (rnd(700), rnd(3000))).collect();
    let c: Vec<u32> = (0..2000).map(|_| rnd(3000)).collect();
    let src = r#"
    .decl a(x: unsigned, y: unsigned)
    .decl b(y: unsigned, z: unsigned)
    .decl c(z: unsigned)
    .decl ab(x: unsigned, z: unsigned)
    .decl rev(x: unsigned, z: unsigned)
    .decl abc(x: unsigned)
    .decl lonely(x: unsigned)
    .decl near(x: unsigned, z: unsigned)
    .input a
    .input b
    .input c
    ab(X, Z) :- a(X, Y), b(Y, Z).
    rev(X, Z) :- b(Y, X), a(Z, Y).
    abc(X) :- a(X, Y), b(Y, Z), c(Z).
    lonely(X) :- a(X, Y), !b(Y, _).
    near(X, Z) :- a(X, Y), c(Z), X < Z, Z <= X + 3.
    "#;
    let program = Program::parse(src, "big.dl").unwrap();
    let mut db = Database::new();
    db.insert_flat("a", 2, a.iter().flat_map(|&(p, q)| [p, q]).collect());
    db.insert_flat("b", 2, b.iter().flat_map(|&(p, q)| [p, q]).collect());
    db.insert_flat("c", 1, c.clone());
    program.evaluate(&mut db).unwrap();
    let pairs = |rel: &str| -> BTreeSet<(u32, u32)> {
        db.rows(rel)
            .unwrap()
            .1
            .chunks(2)
            .map(|r| (r[0], r[1]))
            .collect()
    };
    let singles =
        |rel: &str| -> BTreeSet<u32> { db.rows(rel).unwrap().1.iter().copied().collect() };

    let cset: BTreeSet<u32> = c.iter().copied().collect();
    let bys: BTreeSet<u32> = b.iter().map(|p| p.0).collect();
    let mut ab = BTreeSet::new();
    let mut rev = BTreeSet::new();
    let mut abc = BTreeSet::new();
    for &(ax, ay) in &a {
        for &(by, bz) in &b {
            if ay == by {
                ab.insert((ax, bz));
                if cset.contains(&bz) {
                    abc.insert(ax);
                }
            }
            if by == ay {
                rev.insert((bz, ax));
            }
        }
    }
    let lonely: BTreeSet<u32> = a
        .iter()
        .filter(|p| !bys.contains(&p.1))
        .map(|p| p.0)
        .collect();
    let mut near = BTreeSet::new();
    for &(ax, _) in &a {
        for &z in &c {
            if ax < z && z <= ax + 3 {
                near.insert((ax, z));
            }
        }
    }
    assert!(ab.len() > 1000 && !lonely.is_empty() && !near.is_empty() && !abc.is_empty());
    assert_eq!(pairs("ab"), ab);
    assert_eq!(pairs("rev"), rev);
    assert_eq!(singles("abc"), abc);
    assert_eq!(singles("lonely"), lonely);
    assert_eq!(pairs("near"), near);
}
