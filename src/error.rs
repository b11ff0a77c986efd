//! The top-level error type. Every variant is reported as one message on stderr with exit code 2.

use crate::dump::DumpError;
use crate::epg::EpgError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Dump(#[from] DumpError),
    #[error("{0}")]
    Epg(#[from] EpgError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write output: {0}")]
    Output(std::io::Error),
    #[error("{0}")]
    Other(String),
    /// The evidence of one failing trace (index into `Dump::traces`) is impossible in the model:
    /// its failure depends on nothing that could be incorrect. `localize` leaves such a trace
    /// out (with a warning) instead of failing.
    #[error("{message}")]
    Contradiction { trace: usize, message: String },
}

impl Error {
    /// Writing the output failed because its reader went away (`prosecutor ... | head`): not
    /// an error of the run, so the binary exits quietly with 0, as ripgrep does.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}
