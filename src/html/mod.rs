//! The HTML report (`localize --html FILE`, `eval`'s `DIR/index.html`): one self-contained file,
//! its CSS and JavaScript inline (`report.css`, `report.js`, the shell `page.html`), nothing
//! loaded from the network. Tables and sources are rendered here; the page's script sorts tables,
//! selects lines and draws the propagation path of the selected line from the JSON embedded in
//! the page (docs/formats.md, "HTML report").
//!
//! **Escaping.** Every program text (source lines, statement texts, test ids, failure messages)
//! goes through [`esc`] into HTML, and JSON goes through [`script_json`] into its `<script>`
//! element, which escapes `<`, `>`, `&`, U+2028 and U+2029 so that no text can end the element.
//! The template is filled in one pass ([`fill`]): inserted text is never scanned for
//! placeholders.

mod eval;
mod localize;

use std::path::Path;

use serde::Serialize;

use crate::error::Error;

pub use eval::eval_page;
pub use localize::localize_page;

/// How many top entries of a ranking get their propagation path computed and embedded.
pub const PATHS: usize = 20;

const PAGE: &str = include_str!("page.html");
const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// Writes `page` to `path`.
pub fn write(path: &Path, page: &str) -> Result<(), Error> {
    std::fs::write(path, page).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: e,
    })
}

/// Text as HTML text or attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `v` as JSON that is safe inside a `<script>` element.
pub fn script_json<T: Serialize + ?Sized>(v: &T) -> String {
    let json = serde_json::to_string(v).unwrap_or_else(|_| "{}".to_owned());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
    out
}

/// Replaces each `{{name}}` of `template` by its value, in one pass over the template.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find("}}").and_then(|j| {
            let name = &after[..j];
            values.iter().find(|v| v.0 == name).map(|v| (v.1, j))
        }) {
            Some((value, j)) => {
                out.push_str(value);
                rest = &after[j + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A whole page: `title` (text), `body` (HTML), `data` (JSON for the script, already escaped by
/// [`script_json`]).
fn page(title: &str, body: &str, data: &str) -> String {
    fill(
        PAGE,
        &[
            ("title", &esc(title)),
            ("css", CSS),
            ("body", body),
            ("data", data),
            ("js", JS),
        ],
    )
}

/// A table whose headers sort it: `head` is `(label, numeric)`, `rows` are `<tr>` elements.
fn sortable(id: &str, head: &[(&str, bool)], rows: &str) -> String {
    let mut s = format!("<table class=\"sortable\" id=\"{}\"><thead><tr>", esc(id));
    for (label, num) in head {
        let class = if *num { " class=\"num\"" } else { "" };
        s.push_str(&format!("<th{class}>{}</th>", esc(label)));
    }
    s.push_str("</tr></thead><tbody>");
    s.push_str(rows);
    s.push_str("</tbody></table>");
    s
}

/// A number cell that sorts by `v` and shows `text`.
fn num_cell(v: f64, text: &str) -> String {
    format!("<td class=\"num\" data-v=\"{v}\">{}</td>", esc(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc(r#"</script><a href="x" onclick='y'>&"#),
            "&lt;/script&gt;&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;"
        );
    }

    /// JSON in a script element cannot end it, and still parses to the same text.
    #[test]
    fn json_cannot_end_its_script() {
        let s = "</script><script>alert(1)</script> & \u{2028}\u{2029}";
        let j = script_json(&[s]);
        assert!(!j.contains('<') && !j.contains('>') && !j.contains('&'));
        assert!(!j.contains('\u{2028}') && !j.contains('\u{2029}'));
        let back: Vec<String> = serde_json::from_str(&j).unwrap();
        assert_eq!(back, [s]);
    }

    /// Inserted text is not scanned for placeholders.
    #[test]
    fn fill_is_one_pass() {
        let t = "<p>{{a}}</p>{{b}}{{unknown}}";
        assert_eq!(
            fill(t, &[("a", "{{b}}"), ("b", "B")]),
            "<p>{{b}}</p>B{{unknown}}"
        );
    }
}
