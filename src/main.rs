//! The `prosecutor` binary: parses the command line and hands over to `prosecutor::cli`.
//!
//! Exit codes: 0 success; 1 the command ran but reports a negative result (e.g. `eval` with a
//! failed case, `check-rules` never uses it); 2 an error: bad input (dump, rules, manifest,
//! command line) or a failure to run something, reported on stderr. Output cut short by its
//! reader (`prosecutor localize ... | head`) is not an error: exit 0, nothing on stderr.

fn main() {
    let code = match prosecutor::cli::try_main() {
        Ok(code) => code,
        Err(err) if err.is_broken_pipe() => 0,
        Err(err) => {
            let msg = err.to_string();
            // Rule diagnostics are already rendered rustc-style ("path:line:col: error: ...").
            if msg.contains(": error: ") {
                eprintln!("{msg}");
            } else {
                eprintln!("error: {msg}");
            }
            2
        }
    };
    std::process::exit(code);
}
