//! Baseline fault localizers: SBFL formulas and CP (seed 001).
