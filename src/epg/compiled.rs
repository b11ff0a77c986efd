//! The default rule set (`rules/epg.dl`) compiled with **crepe**.
//!
//! This is the reference the interpreted engine is checked against (the naive-vs-optimized
//! differential check of polonius): `tests/it/differential.rs` asserts both derive exactly the
//! same edges on every fixture. Each rule sits beside its Datalog text; keep them in sync with
//! `rules/epg.dl`.

use crepe::crepe;

use super::RuleName;
use crate::forward::Premises;

crepe! {
    @input struct Step(u32, u32);
    @input struct Ctx(u32, u32);
    @input struct StmtVertex(u32, u32);
    @input struct Vd(u32, u32, u32);
    @input struct Va(u32, u32, u32);
    @input struct Def(u32, u32);
    @input struct Lastdef(u32, u32, u32, u32);
    @input struct Lastctrl(u32, u32);
    @input struct Open(u32);
    @input struct Close(u32);
    @input struct Stktop(u32, u32);
    @input struct Isarg(u32, u32);
    @input struct Isrcvobj(u32, u32);
    @input struct Map(u32, u32, u32, u32);
    @input struct LastdefClose(u32, u32, u32, u32);
    @input struct Rdfinverse(u32, u32);
    @input struct CopyStmt(u32);
    @input struct Heapdef(u32, u32, u32, u32);
    @input struct Nested(u32, u32);
    @input struct HashSym(u32);
    @input struct ThisSym(u32);

    struct V(u32, u32);
    struct Exec(u32, u32, u32);
    struct Ctrldef(u32, u32);
    struct Unexplored(u32, u32, u32);
    @output struct Edge(u32, u32, RuleName);

    // v(I, V) :- vd(I, _, V).   v(I, V) :- va(I, _, V).
    V(i, v) <- Vd(i, _, v);
    V(i, v) <- Va(i, _, v);
    // exec(L, C, R) :- step(R, L), ctx(R, C).
    Exec(l, c, r) <- Step(r, l), Ctx(r, c);
    // ctrldef(LR, U) :- rdfinverse(LR, L), def(L, U).
    Ctrldef(lr, u) <- Rdfinverse(lr, l), Def(l, u);
    // unexplored(I, U, RV) :- lastdef(I, U, J, _), ctx(I, C), ctrldef(LR, U), exec(LR, C, R), J < R, R < I, vd(R, "#", RV).
    Unexplored(i, u, rv) <- Lastdef(i, u, j, _), Ctx(i, c), Ctrldef(lr, u), Exec(lr, c, r), (j < r), (r < i), Vd(r, h, rv), HashSym(h);

    // R_l: edge(L, V, "R_l") :- v(I, V), step(I, S), stmt_vertex(S, L), !copy(S).
    Edge(l, v, RuleName::Rl) <- V(i, v), Step(i, s), StmtVertex(s, l), !CopyStmt(s);
    // R_DU: edge(W, V, "R_DU") :- vd(I, _, V), lastdef(I, _, _, W).
    Edge(w, v, RuleName::RDu) <- Vd(i, _, v), Lastdef(i, _, _, w);
    // R_CTRL1: edge(U, V, "R_CTRL1") :- v(I, V), lastctrl(I, J), vd(J, _, U).
    Edge(u, v, RuleName::RCtrl1) <- V(i, v), Lastctrl(i, j), Vd(j, _, u);
    // R_CTRL2: edge(RV, V, "R_CTRL2") :- unexplored(I, _, RV), vd(I, _, V).
    Edge(rv, v, RuleName::RCtrl2) <- Unexplored(i, _, rv), Vd(i, _, v);
    // R_OP1: edge(W, A, "R_OP1") :- open(I), isarg(I, U), lastdef(I, U, _, W), map(I, U, _, A).
    Edge(w, a, RuleName::ROp1) <- Open(i), Isarg(i, u), Lastdef(i, u, _, w), Map(i, u, _, a);
    // R_OP2: edge(W, T, "R_OP2") :- open(I), isrcvobj(I, U), lastdef(I, U, _, W), va(I, "this", T).
    Edge(w, t, RuleName::ROp2) <- Open(i), Isrcvobj(i, u), Lastdef(i, u, _, w), Va(i, th, t), ThisSym(th);
    // R_OP3: edge(RV, A, "R_OP3") :- open(I), isarg(I, U), unexplored(I, U, RV), map(I, U, _, A).
    Edge(rv, a, RuleName::ROp3) <- Open(i), Isarg(i, u), Unexplored(i, u, rv), Map(i, u, _, a);
    // R_OP4: edge(RV, T, "R_OP4") :- open(I), isrcvobj(I, U), unexplored(I, U, RV), va(I, "this", T).
    Edge(rv, t, RuleName::ROp4) <- Open(i), Isrcvobj(i, u), Unexplored(i, u, rv), Va(i, th, t), ThisSym(th);
    // R_CL1: edge(V, U, "R_CL1") :- close(I), stktop(I, J), vd(I, _, V), vd(J, _, U).
    Edge(v, u, RuleName::RCl1) <- Close(i), Stktop(i, j), Vd(i, _, v), Vd(j, _, u);
    // R_CL2: edge(W, VR, "R_CL2") :- close(I), stktop(I, R), isarg(R, X), map(R, X, F, _), lastdef_close(I, F, J, W), R != J, vd(R, X, VR).
    Edge(w, vr, RuleName::RCl2) <- Close(i), Stktop(i, r), Isarg(r, x), Map(r, x, f, _), LastdefClose(i, f, j, w), (r != j), Vd(r, x, vr);
    // R_CL3: edge(W, VR, "R_CL3") :- close(I), stktop(I, R), isrcvobj(R, X), lastdef_close(I, "this", J, W), R != J, vd(R, X, VR).
    Edge(w, vr, RuleName::RCl3) <- Close(i), Stktop(i, r), Isrcvobj(r, x), LastdefClose(i, th, j, w), ThisSym(th), (r != j), Vd(r, x, vr);
    // R_HEAP: edge(W, V, "R_HEAP") :- vd(I, _, V), heapdef(I, _, _, W).
    Edge(w, v, RuleName::RHeap) <- Vd(i, _, v), Heapdef(i, _, _, w);
    // R_NEST: edge(V, A, "R_NEST") :- nested(I, A), vd(I, _, V).
    Edge(v, a, RuleName::RNest) <- Nested(i, a), Vd(i, _, v);
}

/// Derives the default EPG edges with the compiled rules.
pub fn derive(p: &Premises) -> Vec<(u32, u32, RuleName)> {
    let mut rt = Crepe::new();
    macro_rules! feed {
        ($name:literal, $ctor:expr, $ar:literal) => {{
            let r = p.rel($name);
            debug_assert_eq!(r.arity, $ar);
            rt.extend(r.rows.chunks_exact($ar).map($ctor));
        }};
    }
    feed!("step", |c| Step(c[0], c[1]), 2);
    feed!("ctx", |c| Ctx(c[0], c[1]), 2);
    feed!("stmt_vertex", |c| StmtVertex(c[0], c[1]), 2);
    feed!("vd", |c| Vd(c[0], c[1], c[2]), 3);
    feed!("va", |c| Va(c[0], c[1], c[2]), 3);
    feed!("def", |c| Def(c[0], c[1]), 2);
    feed!("lastdef", |c| Lastdef(c[0], c[1], c[2], c[3]), 4);
    feed!("lastctrl", |c| Lastctrl(c[0], c[1]), 2);
    feed!("open", |c| Open(c[0]), 1);
    feed!("close", |c| Close(c[0]), 1);
    feed!("stktop", |c| Stktop(c[0], c[1]), 2);
    feed!("isarg", |c| Isarg(c[0], c[1]), 2);
    feed!("isrcvobj", |c| Isrcvobj(c[0], c[1]), 2);
    feed!("map", |c| Map(c[0], c[1], c[2], c[3]), 4);
    feed!("lastdef_close", |c| LastdefClose(c[0], c[1], c[2], c[3]), 4);
    feed!("rdfinverse", |c| Rdfinverse(c[0], c[1]), 2);
    feed!("copy", |c| CopyStmt(c[0]), 1);
    feed!("heapdef", |c| Heapdef(c[0], c[1], c[2], c[3]), 4);
    feed!("nested", |c| Nested(c[0], c[1]), 2);
    rt.extend([HashSym(p.symbols.hash())]);
    rt.extend([ThisSym(p.symbols.this())]);
    let (edges,) = rt.run();
    let mut out: Vec<(u32, u32, RuleName)> =
        edges.into_iter().map(|Edge(a, b, r)| (a, b, r)).collect();
    out.sort_unstable();
    out
}
