//! The one integration-test binary (ripgrep's layout): each module covers one area.

mod bad_input;
mod baseline;
mod cfx_runner;
mod common;
mod differential;
mod docs_commands;
mod epg_fixtures;
mod eval;
mod eval_explain;
mod explain;
mod html;
mod java_fixtures;
mod java_frontend;
mod java_test_selection;
mod localize;
mod python_defects;
mod python_frontend;
mod python_tracer_suite;
mod rules_cli;
