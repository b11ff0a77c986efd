//! The `prosecutor` binary: parses the command line and hands over to `prosecutor::cli`.
//!
//! Exit codes: 0 success; 1 the command ran but reports a negative result (e.g. `eval` with a
//! failed case, `check-rules` never uses it); 2 an error: bad input (dump, rules, manifest,
//! command line) or a failure to run something, reported on stderr.

fn main() {
    let code = match prosecutor::cli::try_main() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            2
        }
    };
    std::process::exit(code);
}
