//! Diagnostics: `path:line:col: error: message` followed by the source line and a caret line.

use std::fmt;

/// One error, located in a file.
///
/// `col == 0` means "no column" (used for `.facts` files): the diagnostic then renders as
/// `path:line: message` without a snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: String,
    /// 1-based line (0 if the error is about the file as a whole).
    pub line: usize,
    /// 1-based column in characters (0 if none).
    pub col: usize,
    pub message: String,
    /// The full source line the error points into (without newline), if any.
    pub source_line: Option<String>,
    /// Number of characters the caret line underlines (at least 1 when rendered).
    pub len: usize,
}

impl Diagnostic {
    /// A diagnostic without a column or snippet (e.g. for `.facts` files).
    pub fn at_line(path: &str, line: usize, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.to_string(),
            line,
            col: 0,
            message: message.into(),
            source_line: None,
            len: 0,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.col == 0 {
            if self.line == 0 {
                return write!(f, "{}: {}", self.path, self.message);
            }
            return write!(f, "{}:{}: {}", self.path, self.line, self.message);
        }
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.path, self.line, self.col, self.message
        )?;
        if let Some(src) = &self.source_line {
            let num = self.line.to_string();
            let gutter = " ".repeat(num.len() + 1);
            writeln!(f)?;
            writeln!(f, "{gutter}|")?;
            writeln!(f, "{num} | {src}")?;
            // Pad with the same whitespace characters as the source (keeps tabs aligned).
            let mut pad = String::new();
            for ch in src.chars().take(self.col - 1) {
                pad.push(if ch == '\t' { '\t' } else { ' ' });
            }
            let line_chars = src.chars().count();
            let avail = line_chars.saturating_sub(self.col - 1).max(1);
            let n = self.len.clamp(1, avail);
            write!(f, "{gutter}| {pad}{}", "^".repeat(n))?;
        }
        Ok(())
    }
}

/// A list of diagnostics (never empty when returned as an error).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
                if d.source_line.is_some() {
                    writeln!(f)?;
                }
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Maps byte offsets of a source text to line/column and builds diagnostics.
pub(crate) struct SourceMap<'a> {
    pub path: &'a str,
    pub src: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> SourceMap<'a> {
    pub fn new(path: &'a str, src: &'a str) -> Self {
        let mut line_starts = vec![0];
        for (i, b) in src.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        SourceMap {
            path,
            src,
            line_starts,
        }
    }

    /// Diagnostic for the byte span `start..end`.
    pub fn diag(&self, start: usize, end: usize, message: impl Into<String>) -> Diagnostic {
        let mut start = start.min(self.src.len());
        while !self.src.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = end.clamp(start, self.src.len());
        while !self.src.is_char_boundary(end) {
            end += 1;
        }
        let line_idx = match self.line_starts.binary_search(&start) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let ls = self.line_starts[line_idx];
        let le = self.src[ls..]
            .find('\n')
            .map(|p| ls + p)
            .unwrap_or(self.src.len());
        let line_text = self.src[ls..le].trim_end_matches('\r');
        let col = self.src[ls..start].chars().count() + 1;
        let span_end = end.min(le);
        let len = if span_end > start {
            self.src[start..span_end].chars().count()
        } else {
            1
        };
        Diagnostic {
            path: self.path.to_string(),
            line: line_idx + 1,
            col,
            message: message.into(),
            source_line: Some(line_text.to_string()),
            len,
        }
    }
}
