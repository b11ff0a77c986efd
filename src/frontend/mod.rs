//! Front-ends that produce trace dumps (Python first).

pub mod python;
