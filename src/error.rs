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
}
