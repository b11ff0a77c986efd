//! Parse and check a Datalog file, printing diagnostics (like a compiler front end).
//!
//! `cargo run -p datalog --example check -- rules.dl [facts_dir [out_dir]]`: with a facts
//! directory the program is also evaluated and its outputs written to `out_dir` (default:
//! current directory).
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: check RULES.dl [FACTS_DIR [OUT_DIR]]");
        return ExitCode::from(2);
    };
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let program = match datalog::Program::parse(&src, path) {
        Ok(p) => p,
        Err(d) => {
            eprintln!("{d}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{path}: ok ({} relations, {} strata)",
        program.decls().len(),
        program.strata_count()
    );
    if let Some(facts) = args.get(1) {
        let mut db = datalog::Database::new();
        if let Err(d) = db.load_facts_dir(&program, Path::new(facts)) {
            eprintln!("{d}");
            return ExitCode::FAILURE;
        }
        match program.evaluate(&mut db) {
            Ok(stats) => println!("{stats:?}"),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
        let out = args.get(2).map(String::as_str).unwrap_or(".");
        if let Err(e) = db.write_output_dir(&program, Path::new(out)) {
            eprintln!("{out}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
