//! Baseline fault localizers: SBFL formulas and CP (seed 001), plus
//! interop with GZoltar and FauxPy files (see `docs/formats.md`).
//!
//! * [`sbfl`]: Ochiai, Tarantula, DStar, Op2, Jaccard, Barinel, Naish1 on a
//!   coverage [`Spectrum`].
//! * [`cp`]: CP (Zhang et al. 2009) on block-level edge profiles.
//! * [`interop`]: GZoltar `matrix.txt` + `spectra.csv`, FauxPy `Scores_*.csv`,
//!   GZoltar-style ranking CSV output.

pub mod cp;
pub mod interop;
pub mod sbfl;

pub use cp::{
    build_basic_blocks, cp_scores, cp_statement_ranking, BlockGraph, CpConfig, CpEdge, CpError,
    CpInput, CpResult, EdgeProfile, ExitMode, StatementKind,
};
pub use interop::{
    parse_fauxpy_scores, parse_gzoltar, parse_gzoltar_ranking, read_fauxpy_scores, read_gzoltar,
    write_gzoltar_ranking, GzoltarSpectrum, InteropError, NamedScores,
};
pub use sbfl::{sbfl_scores, spectrum_counts, Counts, Formula, SbflError, Spectrum, SpectrumTest};
