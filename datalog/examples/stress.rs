//! Evaluate any rule file on random inputs, to measure the engine on real rules.
//!
//! `cargo run --release -p datalog --example stress -- RULES.dl [N] [SYMBOLS]`
//!
//! Every `.input` relation gets N random tuples: `unsigned`/`number` columns uniform in
//! `0..N`, `symbol` columns drawn from SYMBOLS distinct strings (default 1000) plus every
//! string constant of the rules (e.g. `"#"`). Prints the time of `evaluate`, the size of each
//! derived relation and the peak RSS.

use std::time::Instant;

use datalog::{ColumnType, Database, Program};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: stress RULES.dl [N] [SYMBOLS]");
        std::process::exit(2);
    };
    let n: u32 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let nsym: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let program = Program::parse(&src, path).unwrap_or_else(|d| {
        eprintln!("{d}");
        std::process::exit(1)
    });
    let mut db = Database::new();
    // String constants of the program (crudely: everything between double quotes).
    for (k, part) in src.split('"').enumerate() {
        if k % 2 == 1 && !part.contains('\n') {
            db.symbols.intern(part);
        }
    }
    for k in 0..nsym {
        db.symbols.intern(&format!("s{k}"));
    }
    let total_syms = db.symbols.len() as u32;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = move |m: u32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % u64::from(m.max(1))) as u32
    };
    for d in program.decls().iter().filter(|d| d.is_input) {
        let mut rows = Vec::with_capacity(n as usize * d.columns.len());
        for _ in 0..n {
            for (_, t) in &d.columns {
                rows.push(match t {
                    ColumnType::Symbol => rand(total_syms),
                    _ => rand(n),
                });
            }
        }
        db.insert_flat(&d.name, d.columns.len(), rows);
    }
    let t = Instant::now();
    match program.evaluate(&mut db) {
        Ok(stats) => {
            println!(
                "{path}: {n} tuples per input, evaluate took {:.3} s ({} strata, {} rounds)",
                t.elapsed().as_secs_f64(),
                stats.strata,
                stats.iterations
            );
            for (rel, size) in &stats.derived {
                println!("  {rel:<24} {size}");
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
    if let Ok(s) = std::fs::read_to_string("/proc/self/status") {
        if let Some(l) = s.lines().find(|l| l.starts_with("VmHWM:")) {
            println!("peak RSS: {}", l.trim_start_matches("VmHWM:").trim());
        }
    }
}
