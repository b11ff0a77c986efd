//! The HTML report (`localize --html`) in a real browser: headless Chromium loads the report and
//! prints the DOM after the page's scripts ran (`--dump-dom`); the tests check what a person sees.
//! Chromium is required: scripts/test installs Debian's `chromium` when it is missing, and these
//! tests fail (never skip) when it is not there.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::eval::require_pytest;

/// The fixture of the browser test and its faulty line (fixtures/python/cases.toml), which
/// PROSECUTOR ranks first.
const FIXTURE: &str = "merge_sorted";
const FAULTY: (&str, u32) = ("merge.py", 16);

/// Headless Chromium on PATH (`chromium`, as Debian names it, or `chromium-browser`).
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "headless Chromium is required by the HTML report tests: no `chromium` on PATH \
         (install Debian's with `apt-get install -y chromium`; scripts/test does it when missing)"
    );
}

/// Chromium's flags for a closed network: without them it hangs on start-up.
fn headless(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The DOM of `page` after its scripts ran.
fn dump_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = headless(profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium did not finish loading {} in 90 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let dom = reader.join().unwrap().unwrap();
    assert!(dom.contains("</html>"), "chromium printed no DOM: {dom}");
    dom
}

/// The element that starts at the first match of `open` (a regex of its opening tag) up to the
/// next `close`.
fn element<'a>(dom: &'a str, open: &str, close: &str) -> &'a str {
    let re = regex_lite::Regex::new(open).unwrap();
    let m = re
        .find(dom)
        .unwrap_or_else(|| panic!("no {open} in the DOM:\n{dom}"));
    let end = dom[m.start()..]
        .find(close)
        .map_or(dom.len(), |i| m.start() + i + close.len());
    &dom[m.start()..end]
}

/// A traced fixture's report: the first row is the faulty line, the line is highlighted (and
/// selected) in the source view, and the path view shows that line's path to the failure.
#[test]
fn report_shows_ranking_source_and_path() {
    require_pytest();
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let project = root().join("fixtures/python").join(FIXTURE);
    let o = localize_python(
        &project,
        &dir.path().join("dump"),
        &["--html", page.to_str().unwrap(), "--cfx-timeout", "120"],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.starts_with("rank"),
        "the table is still printed: {stdout}"
    );
    let dom = dump_dom(&page);
    let (file, line) = FAULTY;
    let loc = format!("{file}:{line}");

    // the ranking's first row (as the page shows it, after its script ran): the faulty line
    let ranking = element(&dom, r#"<table[^>]*id="ranking""#, "</table>");
    let first = element(ranking, "<tbody><tr", "</tr>");
    assert!(first.contains(r#"data-key="0""#), "{first}");
    assert!(first.contains(&format!(">{loc}</a>")), "first row: {first}");
    assert!(
        first.contains("selected"),
        "the top line is selected: {first}"
    );

    // the source view: the faulty line shaded with rank 1 in its gutter, and selected
    let row = element(&dom, &format!(r#"<tr id="L\d+-{line}""#), "</tr>");
    assert!(row.contains(r#"class="ranked selected""#), "{row}");
    assert!(
        row.contains(r#"<td class="g""#) && row.contains(">1</td>"),
        "{row}"
    );
    assert!(row.contains("background:rgba("), "shaded: {row}");

    // the path view: the selected line's path, from its statement to the observed failure
    let path = element(&dom, r#"<div[^>]*id="path""#, "</svg>");
    assert!(path.contains(&format!("<b>{loc}</b>")), "{path}");
    assert!(path.contains("<svg"), "no graph drawn: {path}");
    let head = element(path, r#"<g class="vertex statement""#, "</g>");
    assert!(
        head.contains(&format!(">statement · {loc} · belief ")),
        "{head}"
    );
    assert!(path.contains(r#"data-observed="incorrect""#), "{path}");

    // tests, experiments and convergence are there
    assert!(dom.contains("<h2>Tests: "), "no tests section");
    assert!(
        dom.contains("Counterfactual experiments: "),
        "no experiments"
    );
    assert!(dom.contains("inference converged"), "no convergence");
}

/// Program text holding `</script><script>…</script>` (in a statement, its source line and a test
/// id) shows as text and runs nothing: no script element is added and its code never ran.
#[test]
fn program_text_is_escaped() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    copy_dir(&root().join("fixtures/dumps/leftpad_fig1"), &dump);
    let payload = "</script><script>document.documentElement.setAttribute('data-pwned','1');\
                   alert(1)</script>\u{2028}\"'&amp;";
    let edit = |file: &str, f: &dyn Fn(&str) -> String| {
        let p = dump.join(file);
        std::fs::write(&p, f(&std::fs::read_to_string(&p).unwrap())).unwrap();
    };
    // the top line (26) and the failing test
    edit("stmt.facts", &|s| {
        s.lines()
            .map(|l| {
                let c: Vec<&str> = l.split('\t').collect();
                if c.len() == 6 && c[4] == "26" {
                    format!("{l} {payload}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    });
    edit("source/StringUtils.java", &|s| {
        s.lines()
            .enumerate()
            .map(|(i, l)| match i + 1 {
                26 => format!("{l} // {payload}\n"),
                _ => format!("{l}\n"),
            })
            .collect()
    });
    edit("manifest.toml", &|s| {
        let toml_payload = payload.replace('\\', "\\\\").replace('"', "\\\"");
        s.replace(
            "id = \"StringUtils::testCase2\"",
            &format!("id = \"StringUtils::testCase2{toml_payload}\""),
        )
    });
    let page = dir.path().join("report.html");
    let o = run(&[
        "localize",
        dump.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<script").count(),
        2,
        "the page's own two scripts"
    );
    let dom = dump_dom(&page);
    let root_tag = element(&dom, "<html", ">");
    assert!(
        !root_tag.contains("data-pwned"),
        "the program's script ran: {root_tag}"
    );
    assert_eq!(
        dom.matches("<script").count(),
        2,
        "a script element was injected"
    );
    let shown = "&lt;/script&gt;&lt;script&gt;document.documentElement";
    // as text in the ranking, the source view, the tests table and the drawn path
    let ranking = element(&dom, r#"<table[^>]*id="ranking""#, "</table>");
    assert!(ranking.contains(shown), "{ranking}");
    let source = element(&dom, r#"<tr id="L0-26""#, "</tr>");
    assert!(source.contains(shown), "{source}");
    let tests = element(&dom, r#"<table[^>]*id="tests""#, "</table>");
    assert!(
        tests.contains(&format!("StringUtils::testCase2{shown}")),
        "{tests}"
    );
    let path = element(&dom, r#"<div[^>]*id="path""#, "</svg>");
    assert!(
        path.contains(shown),
        "the path's JSON was read back whole: {path}"
    );
}

/// `eval --out DIR` writes `DIR/index.html`: the technique table, the top-k plot and the cases.
#[test]
fn eval_writes_an_index_page() {
    chromium();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        format!(
            "[[case]]\nname = \"fig1\"\ndump = \"{}\"\nfaulty = [\"StringUtils.java:9\"]\n",
            root().join("fixtures/dumps/leftpad_fig1").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = run(&[
        "eval",
        manifest.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = dump_dom(&out.join("index.html"));
    let techniques = element(&dom, r#"<table[^>]*id="techniques""#, "</table>");
    assert!(techniques.contains("<td>PROSECUTOR</td>"), "{techniques}");
    assert!(techniques.contains("<td>Ochiai</td>"), "{techniques}");
    let plot = element(&dom, "<svg class=\"topk\"", "</svg>");
    assert!(plot.contains("Faults found within the top k"), "{plot}");
    let cases = element(&dom, r#"<table[^>]*id="cases""#, "</table>");
    assert!(cases.contains(">fig1</td>"), "{cases}");
}
