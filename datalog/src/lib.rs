//! A small Soufflé-like Datalog interpreter, evaluated semi-naively on [`datafrog`].
//!
//! ```
//! use datalog::{Database, Program};
//!
//! let src = r#"
//!     .decl edge(a: symbol, b: symbol)
//!     .decl path(a: symbol, b: symbol)
//!     .input edge
//!     .output path
//!     path(X, Y) :- edge(X, Y).
//!     path(X, Z) :- path(X, Y), edge(Y, Z).
//! "#;
//! let program = Program::parse(src, "tc.dl").unwrap();
//! let mut db = Database::new();
//! let (a, b, c) = (db.symbols.intern("a"), db.symbols.intern("b"), db.symbols.intern("c"));
//! db.insert_flat("edge", 2, vec![a, b, b, c]);
//! program.evaluate(&mut db).unwrap();
//! let (arity, rows) = db.rows("path").unwrap();
//! assert_eq!(arity, 2);
//! assert_eq!(rows.len() / arity, 3); // a->b, a->c, b->c
//! ```
//!
//! See the crate README for the dialect, the checks and the evaluation strategy.

mod ast;
mod db;
mod diag;
mod eval;
mod lexer;
mod parser;
mod program;

pub use ast::CmpOp;
pub use db::{parse_facts, Database, EvalError, EvalStats};
pub use diag::{Diagnostic, Diagnostics};
pub use program::Program;

use std::collections::HashMap;
use std::sync::Arc;

/// Largest supported relation arity.
pub const MAX_ARITY: usize = 12;

/// Column types of the dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// Interned string (a [`Symbols`] id).
    Symbol,
    /// Signed 32-bit integer (stored as its `u32` bit pattern at the API boundary).
    Number,
    /// Unsigned 32-bit integer.
    Unsigned,
}

/// A declared relation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationDecl {
    pub name: String,
    pub columns: Vec<(String, ColumnType)>,
    pub is_input: bool,
    pub is_output: bool,
}

impl RelationDecl {
    pub fn arity(&self) -> usize {
        self.columns.len()
    }
}

/// String interner: every symbol value in a [`Database`] is an id from this table.
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    map: HashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Symbols {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `s`, adding it if new.
    ///
    /// # Panics
    /// Only if more than `u32::MAX` distinct symbols are interned.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = u32::try_from(self.names.len()).expect("symbol table overflow (2^32 symbols)");
        let a: Arc<str> = Arc::from(s);
        self.names.push(a.clone());
        self.map.insert(a, id);
        id
    }

    /// The string of id `id`.
    pub fn resolve(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(|s| &**s)
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<u32> {
        self.map.get(s).copied()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
