//! Inputs large enough to take the engine's bulk paths — radix sort of packed keys (>= 65,536
//! rows), lazily built hash indexes (after `1024 + rows/4` lookups far from the cursor), the
//! one-shot evaluation of non-recursive strata — checked against joins computed here with
//! hash maps.

use std::collections::{BTreeSet, HashMap};

use datalog::{Database, Program};

/// xorshift64: deterministic pseudo-random numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self, m: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % u64::from(m)) as u32
    }
}

fn rows(db: &Database, rel: &str) -> BTreeSet<Vec<u32>> {
    let (arity, flat) = db.rows(rel).unwrap();
    let out: BTreeSet<Vec<u32>> = flat.chunks_exact(arity).map(|r| r.to_vec()).collect();
    // The engine's contract: sorted and duplicate-free.
    let v: Vec<Vec<u32>> = flat.chunks_exact(arity).map(|r| r.to_vec()).collect();
    assert!(
        v.windows(2).all(|w| w[0] < w[1]),
        "{rel} is not sorted and unique"
    );
    out
}

#[test]
fn three_way_join_with_out_of_order_lookups() {
    // a(I, U) is scanned in I order; b(I, C) is merge-joined; c(U, L) and d(L, C, R) are
    // looked up in no particular order (hash indexes once the far lookups add up), with a
    // range on R.
    let src = "
        .decl a(i: unsigned, u: unsigned)
        .decl b(i: unsigned, c: unsigned)
        .decl c(u: unsigned, l: unsigned)
        .decl d(l: unsigned, c: unsigned, r: unsigned)
        .decl out(i: unsigned, l: unsigned, r: unsigned)
        .input a, b, c, d
        out(I, L, R) :- a(I, U), b(I, C), c(U, L), d(L, C, R), R < I, I < R + 30000.
    ";
    let p = Program::parse(src, "t.dl").unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let n = 120_000u32;
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut c = Vec::new();
    let mut d = Vec::new();
    for i in 0..n {
        for _ in 0..2 {
            a.extend([i, rng.next(5_000)]);
        }
        b.extend([i, rng.next(300)]);
    }
    for u in 0..5_000 {
        for _ in 0..rng.next(4) {
            c.extend([u, rng.next(2_000)]);
        }
    }
    for _ in 0..200_000 {
        d.extend([rng.next(2_000), rng.next(300), rng.next(n)]);
    }
    // Reference: hash joins.
    let mut b_of: HashMap<u32, Vec<u32>> = HashMap::new();
    for r in b.chunks_exact(2) {
        b_of.entry(r[0]).or_default().push(r[1]);
    }
    let mut c_of: HashMap<u32, Vec<u32>> = HashMap::new();
    for r in c.chunks_exact(2) {
        c_of.entry(r[0]).or_default().push(r[1]);
    }
    let mut d_of: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
    for r in d.chunks_exact(3) {
        d_of.entry((r[0], r[1])).or_default().push(r[2]);
    }
    let mut want = BTreeSet::new();
    for r in a.chunks_exact(2) {
        let (i, u) = (r[0], r[1]);
        for &cc in b_of.get(&i).into_iter().flatten() {
            for &l in c_of.get(&u).into_iter().flatten() {
                for &rr in d_of.get(&(l, cc)).into_iter().flatten() {
                    if rr < i && i < rr + 30_000 {
                        want.insert(vec![i, l, rr]);
                    }
                }
            }
        }
    }
    assert!(want.len() > 1_000, "the test data should produce results");
    let mut db = Database::new();
    db.insert_flat("a", 2, a);
    db.insert_flat("b", 2, b);
    db.insert_flat("c", 2, c);
    db.insert_flat("d", 3, d);
    p.evaluate(&mut db).unwrap();
    assert_eq!(rows(&db, "out"), want);
}

#[test]
fn large_union_with_input_tuples_is_sorted_and_deduplicated() {
    // `e` is both an input and derived (by two rules that overlap): the result keeps the
    // input tuples, adds the derived ones, once each. Over 65,536 rows: radix-sorted.
    let src = "
        .decl x(a: unsigned, b: unsigned)
        .decl e(a: unsigned, b: unsigned, k: symbol)
        .input x, e
        e(B, A, \"swap\") :- x(A, B).
        e(A, B, \"same\") :- x(A, B), A < B.
        e(A, A, \"same\") :- x(A, _).
    ";
    let p = Program::parse(src, "t.dl").unwrap();
    let mut rng = Rng(42);
    let mut db = Database::new();
    let swap = db.symbols.intern("swap");
    let same = db.symbols.intern("same");
    let mut x = Vec::new();
    for _ in 0..150_000 {
        x.extend([rng.next(1 << 20), rng.next(1 << 20)]);
    }
    let mut e_in = Vec::new();
    for _ in 0..20_000 {
        e_in.extend([rng.next(1 << 20), rng.next(1 << 20), same]);
    }
    let mut want: BTreeSet<Vec<u32>> = e_in.chunks_exact(3).map(|r| r.to_vec()).collect();
    for r in x.chunks_exact(2) {
        let (a, b) = (r[0], r[1]);
        want.insert(vec![b, a, swap]);
        if a < b {
            want.insert(vec![a, b, same]);
        }
        want.insert(vec![a, a, same]);
    }
    db.insert_flat("x", 2, x);
    db.insert_flat("e", 3, e_in);
    p.evaluate(&mut db).unwrap();
    assert_eq!(rows(&db, "e"), want);
}

#[test]
fn lookups_back_and_forth_near_the_cursor() {
    // q's keys go back and forth by a few rows of r (J alternates around I): the local
    // backward search must find them, as must far jumps.
    let src = "
        .decl q(i: unsigned, j: unsigned)
        .decl s(i: unsigned, k: unsigned)
        .decl r(j: unsigned, v: unsigned)
        .decl out(i: unsigned, v: unsigned)
        .input q, s, r
        out(I, V) :- q(I, J), s(I, K), r(J, V), K < V.
    ";
    let p = Program::parse(src, "t.dl").unwrap();
    let mut rng = Rng(7);
    let n = 100_000u32;
    let mut q = Vec::new();
    let mut s = Vec::new();
    let mut r = Vec::new();
    for i in 0..n {
        let j = if rng.next(10) == 0 {
            rng.next(n) // far
        } else {
            (i + rng.next(40)).saturating_sub(20) // near, before or after
        };
        q.extend([i, j]);
        s.extend([i, rng.next(8)]);
        for _ in 0..rng.next(3) {
            r.extend([i, rng.next(10)]);
        }
    }
    let mut r_of: HashMap<u32, Vec<u32>> = HashMap::new();
    for x in r.chunks_exact(2) {
        r_of.entry(x[0]).or_default().push(x[1]);
    }
    let s_of: HashMap<u32, u32> = s.chunks_exact(2).map(|x| (x[0], x[1])).collect();
    let mut want = BTreeSet::new();
    for x in q.chunks_exact(2) {
        let k = s_of[&x[0]];
        for &v in r_of.get(&x[1]).into_iter().flatten() {
            if k < v {
                want.insert(vec![x[0], v]);
            }
        }
    }
    let mut db = Database::new();
    db.insert_flat("q", 2, q);
    db.insert_flat("s", 2, s);
    db.insert_flat("r", 2, r);
    p.evaluate(&mut db).unwrap();
    assert_eq!(rows(&db, "out"), want);
}
