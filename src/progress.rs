//! Progress reporting on stderr: a bar when stderr is a terminal, nothing otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub fn bar(len: u64, what: &str) -> ProgressBar {
    let b = ProgressBar::new(len);
    if std::io::stderr().is_terminal() {
        b.set_draw_target(ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
                .unwrap()
                .progress_chars("=> "),
        );
    } else {
        b.set_draw_target(ProgressDrawTarget::hidden());
    }
    b.set_message(what.to_owned());
    b
}

/// A status line on stderr (only when stderr is a terminal or `verbose`).
pub fn note(verbose: bool, msg: &str) {
    if verbose || std::io::stderr().is_terminal() {
        eprintln!("{msg}");
    }
}
