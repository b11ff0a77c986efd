//! Reading Soufflé-style `.facts` files: TAB-separated columns, one tuple per line.
//!
//! Rows are handed to a callback as borrowed `&str` columns (no allocation per row), with
//! their 1-based line number; an error returned by the callback is reported as `FILE:LINE: msg`.

use std::path::Path;

use super::DumpError;

/// Maximum arity of any relation of the dump format.
const MAX_ARITY: usize = 8;

/// Reads `dir/<name>.facts`, checking that every row has exactly `arity` columns, and calls `f`
/// for each row. Empty lines and lines starting with `//` are skipped. Returns `false` when the
/// file does not exist and `required` is false.
pub fn read_rows(
    dir: &Path,
    name: &str,
    arity: usize,
    required: bool,
    mut f: impl FnMut(usize, &[&str]) -> Result<(), String>,
) -> Result<bool, DumpError> {
    debug_assert!(arity <= MAX_ARITY);
    let path = dir.join(format!("{name}.facts"));
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if required {
                return Err(DumpError::at(
                    &path,
                    0,
                    format!("missing relation `{name}`: every dump needs {name}.facts (it may be empty)"),
                ));
            }
            return Ok(false);
        }
        Err(e) => return Err(DumpError::at(&path, 0, format!("cannot read: {e}"))),
    };
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            return Err(DumpError::at(&path, line, "not valid UTF-8".to_owned()));
        }
    };
    let mut cols: [&str; MAX_ARITY] = [""; MAX_ARITY];
    let mut rest = text;
    let mut i = 0usize;
    while !rest.is_empty() {
        // Byte-level splitting (TAB and LF are ASCII, so every cut is on a char boundary).
        let (raw, tail) = match rest.as_bytes().iter().position(|&b| b == b'\n') {
            Some(p) => (&rest[..p], &rest[p + 1..]),
            None => (rest, ""),
        };
        rest = tail;
        i += 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.is_empty() || line.starts_with("//") || line.trim().is_empty() {
            continue;
        }
        let i = i - 1;
        let mut n = 0;
        let mut start = 0;
        for (k, &b) in line.as_bytes().iter().enumerate() {
            if b == b'\t' {
                if n < MAX_ARITY {
                    cols[n] = &line[start..k];
                }
                n += 1;
                start = k + 1;
            }
        }
        if n < MAX_ARITY {
            cols[n] = &line[start..];
        }
        n += 1;
        if n != arity {
            return Err(DumpError::at(
                &path,
                i + 1,
                format!(
                    "expected {arity} tab-separated columns, found {n}: {:?}",
                    truncate(line, 80)
                ),
            ));
        }
        f(i + 1, &cols[..arity]).map_err(|msg| DumpError::at(&path, i + 1, msg))?;
    }
    Ok(true)
}

/// Parses an unsigned integer column (surrounding whitespace allowed).
pub fn uint(s: &str, what: &str) -> Result<u32, String> {
    // Fast path: plain ASCII digits that fit in u32.
    let b = s.as_bytes();
    if !b.is_empty() && b.len() <= 9 && b.iter().all(u8::is_ascii_digit) {
        return Ok(b.iter().fold(0u32, |v, &d| v * 10 + u32::from(d - b'0')));
    }
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("{what} must be a non-negative integer, found {s:?}"))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}
