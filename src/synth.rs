//! Synthetic trace dumps of realistic shape, for benchmarks and stress tests.
//!
//! A random program of `methods` methods is generated (assignments, if/else, loops with back
//! edges, calls to later methods with arguments and receivers, returns), then executed by a small
//! interpreter that picks branch outcomes at random (loops run 1–`max_iter` iterations, calls nest
//! up to depth 6) until the requested number of steps is reached. One trace fails at its last
//! step; the others pass. The result is written as a dump directory in the documented format.

use std::fmt::Write as _;
use std::path::Path;

/// splitmix64: a tiny deterministic PRNG.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

#[derive(Debug, Clone)]
pub struct SynthOptions {
    pub steps: usize,
    pub traces: usize,
    pub methods: usize,
    pub max_iter: u64,
    pub seed: u64,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            steps: 100_000,
            traces: 8,
            methods: 40,
            max_iter: 6,
            seed: 42,
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Assign,
    Branch {
        then_: usize,
        else_: usize,
        loop_exit: Option<usize>,
    },
    Goto(usize),
    Call {
        callee: usize,
    },
    Return,
}

#[derive(Debug, Clone)]
struct SStmt {
    kind: Kind,
    defs: Vec<u32>,
    uses: Vec<u32>,
    actuals: Vec<u32>,
    receiver: Option<u32>,
    line: u32,
}

#[derive(Debug, Clone)]
struct SMethod {
    stmts: Vec<SStmt>,
    n_formals: usize,
    has_this: bool,
}

const NVARS: u32 = 8;

fn gen_method(rng: &mut Rng, idx: usize, n_methods: usize) -> SMethod {
    let mut stmts: Vec<SStmt> = Vec::new();
    let n_formals = 1 + rng.below(3) as usize;
    let has_this = rng.chance(0.3);
    // Variables: 0..n_formals are formals (v0..), "this" is var NVARS when present.
    let budget = 6 + rng.below(10) as usize;
    gen_block(&mut stmts, rng, 0, budget, idx, n_methods, has_this);
    let line = stmts.len() as u32 + 1;
    stmts.push(SStmt {
        kind: Kind::Return,
        defs: vec![],
        uses: vec![rng.below(NVARS as u64) as u32],
        actuals: vec![],
        receiver: None,
        line,
    });
    SMethod {
        stmts,
        n_formals,
        has_this,
    }
}

#[allow(clippy::only_used_in_recursion)]
fn gen_block(
    stmts: &mut Vec<SStmt>,
    rng: &mut Rng,
    depth: u32,
    budget: usize,
    idx: usize,
    n_methods: usize,
    has_this: bool,
) {
    let var = |rng: &mut Rng| rng.below(NVARS as u64) as u32;
    for _ in 0..budget {
        let line = stmts.len() as u32 + 1;
        let r = rng.below(100);
        if r < 12 && depth < 2 {
            // if (v) { then } else { else }
            let b = stmts.len();
            stmts.push(SStmt {
                kind: Kind::Assign,
                defs: vec![],
                uses: vec![var(rng)],
                actuals: vec![],
                receiver: None,
                line,
            });
            let then_ = stmts.len();
            let k = 1 + rng.below(3) as usize;
            gen_block(stmts, rng, depth + 1, k, idx, n_methods, has_this);
            let g = stmts.len();
            stmts.push(SStmt {
                kind: Kind::Goto(0),
                defs: vec![],
                uses: vec![],
                actuals: vec![],
                receiver: None,
                line: g as u32 + 1,
            });
            let else_ = stmts.len();
            let k = 1 + rng.below(3) as usize;
            gen_block(stmts, rng, depth + 1, k, idx, n_methods, has_this);
            let join = stmts.len();
            stmts[g].kind = Kind::Goto(join);
            stmts[b].kind = Kind::Branch {
                then_,
                else_,
                loop_exit: None,
            };
        } else if r < 22 && depth < 2 {
            // while (v < n) { body }
            let h = stmts.len();
            stmts.push(SStmt {
                kind: Kind::Assign,
                defs: vec![],
                uses: vec![var(rng)],
                actuals: vec![],
                receiver: None,
                line,
            });
            let body = stmts.len();
            let k = 2 + rng.below(4) as usize;
            gen_block(stmts, rng, depth + 1, k, idx, n_methods, has_this);
            let g = stmts.len();
            stmts.push(SStmt {
                kind: Kind::Goto(h),
                defs: vec![],
                uses: vec![],
                actuals: vec![],
                receiver: None,
                line: g as u32 + 1,
            });
            let exit = stmts.len();
            stmts[h].kind = Kind::Branch {
                then_: body,
                else_: exit,
                loop_exit: Some(exit),
            };
        } else if r < 40 && idx + 1 < n_methods {
            let callee = idx + 1 + rng.below((n_methods - idx - 1).min(5) as u64) as usize;
            let actuals = vec![var(rng), var(rng)];
            let receiver = rng.chance(0.3).then(|| var(rng));
            let mut defs = vec![var(rng)];
            if let Some(r) = receiver {
                if !defs.contains(&r) {
                    defs.push(r);
                }
            }
            let mut uses = actuals.clone();
            uses.extend(receiver);
            stmts.push(SStmt {
                kind: Kind::Call { callee },
                defs,
                uses,
                actuals,
                receiver,
                line,
            });
        } else {
            let uses = vec![var(rng), var(rng)];
            let defs = vec![var(rng)];
            stmts.push(SStmt {
                kind: Kind::Assign,
                defs,
                uses,
                actuals: vec![],
                receiver: None,
                line,
            });
        }
    }
}

struct Writer {
    step: String,
    frame: String,
    branch: String,
}

/// Generates a synthetic dump into `dir` (created if needed). Returns the total number of steps.
pub fn write_dump(dir: &Path, o: &SynthOptions) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Rng::new(o.seed);
    let methods: Vec<SMethod> = (0..o.methods)
        .map(|i| gen_method(&mut rng, i, o.methods))
        .collect();
    // static facts
    let mut stmt = String::new();
    let mut method = String::new();
    let mut def = String::new();
    let mut use_ = String::new();
    let mut cfg = String::new();
    let mut formal = String::new();
    let mut this_formal = String::new();
    let mut actual = String::new();
    let mut receiver = String::new();
    let mut loop_head = String::new();
    let vname = |m: usize, v: u32| {
        if v < NVARS {
            format!("v{v}")
        } else {
            format!("this{m}")
        }
    };
    for (mi, m) in methods.iter().enumerate() {
        writeln!(method, "m{mi}\tapp\tm{mi}.0").unwrap();
        for f in 0..m.n_formals {
            writeln!(formal, "m{mi}\t{f}\tv{f}").unwrap();
        }
        if m.has_this {
            writeln!(this_formal, "m{mi}\tself").unwrap();
        }
        for (si, s) in m.stmts.iter().enumerate() {
            let kind = match s.kind {
                Kind::Assign => "assign",
                Kind::Branch { .. } => "branch",
                Kind::Goto(_) => "goto",
                Kind::Call { .. } => "call",
                Kind::Return => "return",
            };
            writeln!(
                stmt,
                "m{mi}.{si}\tm{mi}\t{kind}\tsynth/m{mi}.x\t{}\t{kind}",
                s.line
            )
            .unwrap();
            for &d in &s.defs {
                writeln!(def, "m{mi}.{si}\t{}", vname(mi, d)).unwrap();
            }
            for &u in &s.uses {
                writeln!(use_, "m{mi}.{si}\t{}", vname(mi, u)).unwrap();
            }
            for (k, &a) in s.actuals.iter().enumerate() {
                writeln!(actual, "m{mi}.{si}\t{k}\t{}", vname(mi, a)).unwrap();
            }
            if let Some(r) = s.receiver {
                writeln!(receiver, "m{mi}.{si}\t{}", vname(mi, r)).unwrap();
            }
            let succ: Vec<usize> = match s.kind {
                Kind::Assign | Kind::Call { .. } => vec![si + 1],
                Kind::Branch { then_, else_, .. } => vec![then_, else_],
                Kind::Goto(t) => vec![t],
                Kind::Return => vec![],
            };
            for t in succ {
                writeln!(cfg, "m{mi}.{si}\tm{mi}.{t}\tnormal").unwrap();
            }
            if let Kind::Goto(t) = s.kind {
                if t < si {
                    writeln!(loop_head, "m{mi}.{t}").unwrap();
                }
            }
        }
    }
    // the test method: t.0: r = m0(a, b); t.1: assert r
    writeln!(method, "test\ttest\tt.0").unwrap();
    writeln!(stmt, "t.0\ttest\tcall\tsynth/test.x\t1\tr = m0(a, b)").unwrap();
    writeln!(stmt, "t.1\ttest\tbranch\tsynth/test.x\t2\tassert r").unwrap();
    writeln!(def, "t.0\tr").unwrap();
    writeln!(use_, "t.1\tr").unwrap();
    writeln!(cfg, "t.0\tt.1\tnormal").unwrap();
    // traces
    let mut w = Writer {
        step: String::new(),
        frame: String::new(),
        branch: String::new(),
    };
    let mut manifest = String::from("format = \"prosecutor-dump\"\nversion = 1\n\n[frontend]\nname = \"synth\"\nversion = \"1\"\nlanguage = \"synthetic\"\n");
    let per_trace = o.steps / o.traces.max(1);
    let mut total = 0;
    for t in 0..o.traces {
        let tid = format!("t{t}");
        let mut n = 0usize;
        let mut frames = 0usize;
        writeln!(w.frame, "{tid}\tf0\ttest\t-").unwrap();
        frames += 1;
        // the root calls m0 repeatedly until the budget is spent, then asserts
        while n + 2 < per_trace {
            let call = n;
            writeln!(w.step, "{tid}\t{n}\tt.0\tf0").unwrap();
            n += 1;
            let f = frames;
            frames += 1;
            writeln!(w.frame, "{tid}\tf{f}\tm0\t{call}").unwrap();
            exec(
                &methods,
                0,
                f,
                &tid,
                &mut n,
                &mut frames,
                per_trace,
                0,
                &mut rng,
                &mut w,
                o.max_iter,
            );
        }
        writeln!(w.step, "{tid}\t{n}\tt.1\tf0").unwrap();
        writeln!(w.branch, "{tid}\t{n}\t{}", if t == 0 { 0 } else { 1 }).unwrap();
        n += 1;
        total += n;
        let outcome = if t == 0 { "fail" } else { "pass" };
        writeln!(
            manifest,
            "\n[[test]]\nid = \"test_{t}\"\ntrace = \"{tid}\"\noutcome = \"{outcome}\""
        )
        .unwrap();
    }
    let files: [(&str, &String); 13] = [
        ("stmt", &stmt),
        ("method", &method),
        ("def", &def),
        ("use", &use_),
        ("cfg", &cfg),
        ("formal", &formal),
        ("this_formal", &this_formal),
        ("actual", &actual),
        ("receiver", &receiver),
        ("loop_head", &loop_head),
        ("frame", &w.frame),
        ("step", &w.step),
        ("branch", &w.branch),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(format!("{name}.facts")), text)?;
    }
    std::fs::write(dir.join("manifest.toml"), manifest)?;
    Ok(total)
}

#[allow(clippy::too_many_arguments)]
fn exec(
    methods: &[SMethod],
    mi: usize,
    frame: usize,
    tid: &str,
    n: &mut usize,
    frames: &mut usize,
    cap: usize,
    depth: u32,
    rng: &mut Rng,
    w: &mut Writer,
    max_iter: u64,
) {
    let m = &methods[mi];
    let mut pc = 0usize;
    let mut iters: Vec<u64> = vec![0; m.stmts.len()];
    loop {
        let s = &m.stmts[pc];
        writeln!(w.step, "{tid}\t{}\tm{mi}.{pc}\tf{frame}", *n).unwrap();
        let here = *n;
        *n += 1;
        let budget_left = *n + 4 < cap;
        match s.kind {
            Kind::Assign => pc += 1,
            Kind::Goto(t) => pc = t,
            Kind::Return => return,
            Kind::Branch {
                then_,
                else_,
                loop_exit,
            } => {
                let take_then = match loop_exit {
                    Some(_) => {
                        iters[pc] += 1;
                        let go = budget_left && iters[pc] <= 1 + rng.below(max_iter);
                        if !go {
                            iters[pc] = 0;
                        }
                        go
                    }
                    None => rng.chance(0.5),
                };
                writeln!(w.branch, "{tid}\t{here}\t{}", u8::from(take_then)).unwrap();
                pc = if take_then { then_ } else { else_ };
            }
            Kind::Call { callee } => {
                if depth < 6 && budget_left {
                    let f = *frames;
                    *frames += 1;
                    writeln!(w.frame, "{tid}\tf{f}\tm{callee}\t{here}").unwrap();
                    exec(
                        methods,
                        callee,
                        f,
                        tid,
                        n,
                        frames,
                        cap,
                        depth + 1,
                        rng,
                        w,
                        max_iter,
                    );
                }
                pc += 1;
            }
        }
    }
}
