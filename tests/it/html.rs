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

/// What [`check_report`] found on a traced project's page.
struct Shown {
    /// The ranking's first row (`file:line`): the selected line.
    top: String,
    /// The best rank shown in the gutter of the source view on one of the faulty lines.
    faulty_rank: u32,
}

/// Checks what a person sees on the report of a traced project whose faulty lines are `faulty`
/// (`file`, relative to SRC, and line): the ranking has rows and its first row is selected; at
/// least one faulty line is shaded in the source view with its rank in the gutter (the rank the
/// ranking gives it when it is listed there); the selected line is selected in the source view
/// and the path view draws its path to an observed failure; the tests, experiments and inference
/// sections are there.
fn check_report(dom: &str, faulty: &[(&str, u32)]) -> Shown {
    // the ranking (as the page shows it, after its script ran): rows, the first one selected
    let ranking = element(dom, r#"<table[^>]*id="ranking""#, "</table>");
    let rows = ranking.matches("<tr data-key=").count();
    assert!(rows > 0, "the ranking has no rows: {ranking}");
    let first = element(ranking, "<tbody><tr", "</tr>");
    assert!(first.contains(r#"data-key="0""#), "{first}");
    assert!(
        first.contains(r#"class="selected""#),
        "the top line is selected: {first}"
    );
    let attr = |tag: &str, name: &str| -> String {
        let re = regex_lite::Regex::new(&format!(r#"\b{name}="([^"]*)""#)).unwrap();
        re.captures(tag)
            .unwrap_or_else(|| panic!("no {name} in {tag}"))[1]
            .to_string()
    };
    let top = attr(first, "data-loc");
    assert!(first.contains(&format!(">{top}</a>")), "first row: {first}");

    // the source view: some faulty line shaded, its rank in the gutter
    let gutter = regex_lite::Regex::new(r#"<td class="g"[^>]*>(\d+)</td>"#).unwrap();
    let mut seen = Vec::new();
    let mut faulty_rank = None;
    for &(file, line) in faulty {
        let loc = format!("{file}:{line}");
        let section = format!(
            r#"<section class="panel file" id="F(\d+)"><h3>{}</h3>"#,
            regex_lite::escape(file)
        );
        let Some(f) = regex_lite::Regex::new(&section).unwrap().captures(dom) else {
            seen.push(format!("{loc}: its file is not in the source view"));
            continue;
        };
        let row = element(dom, &format!(r#"<tr id="L{}-{line}""#, &f[1]), "</tr>");
        let shaded = row.contains(r#"class="ranked"#) && row.contains("background:rgba(");
        let Some(rank) = gutter.captures(row).filter(|_| shaded) else {
            seen.push(format!("{loc} is not shaded with a rank: {row}"));
            continue;
        };
        let rank: u32 = rank[1].parse().unwrap();
        assert_eq!(attr(row, "data-rank"), rank.to_string(), "{row}");
        // the same rank as in the ranking, when the ranking lists the line
        let listed = format!(
            r#"<tr data-key="\d+" data-loc="{}""#,
            regex_lite::escape(&loc)
        );
        if regex_lite::Regex::new(&listed).unwrap().is_match(ranking) {
            let r = element(ranking, &listed, "</tr>");
            assert!(
                r.contains(&format!(r#"<td class="num" data-v="{rank}">{rank}</td>"#)),
                "{loc}: gutter rank {rank}, ranking row {r}"
            );
        }
        faulty_rank = Some(faulty_rank.map_or(rank, |r: u32| r.min(rank)));
    }
    let faulty_rank =
        faulty_rank.unwrap_or_else(|| panic!("no faulty line shown ranked: {seen:#?}"));

    // the selected line is selected in the source view
    let src = attr(first, "data-src");
    let row = element(dom, &format!(r#"<tr id="{src}""#), "</tr>");
    assert!(
        row.contains(r#"class="ranked selected""#),
        "{top} selected in the source view: {row}"
    );
    assert!(row.contains(r#"data-rank="1""#), "{row}");

    // the path view: the selected line's path, from its statement to the observed failure
    let view = element(dom, r#"<div[^>]*id="path""#, "</div>");
    assert!(view.contains(&format!("<b>{top}</b>")), "{view}");
    assert!(
        view.contains("<svg"),
        "no path drawn for the selected line {top} (the page says why): {view}"
    );
    let path = element(dom, r#"<div[^>]*id="path""#, "</svg>");
    let head = element(path, r#"<g class="vertex statement""#, "</g>");
    assert!(
        head.contains(&format!(">statement · {top} · belief ")),
        "{head}"
    );
    assert!(path.contains(r#"data-observed="incorrect""#), "{path}");

    // tests, experiments and convergence are there
    assert!(dom.contains("<h2>Tests: "), "no tests section");
    assert!(
        dom.contains("<h2>Counterfactual experiments"),
        "no experiments section"
    );
    assert!(dom.contains("inference converged"), "no convergence");
    Shown { top, faulty_rank }
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
    let shown = check_report(&dom, &[FAULTY]);
    // the faulty line is first, ranked 1 in the gutter, and its path is drawn
    let (file, line) = FAULTY;
    assert_eq!(shown.top, format!("{file}:{line}"));
    assert_eq!(shown.faulty_rank, 1);
    assert!(
        dom.contains("Counterfactual experiments: "),
        "no experiments ran"
    );
}

/// One case of fixtures/python/cases.toml: `localize --html` (without experiments) on a copy of
/// the project, the page loaded in Chromium and checked by [`check_report`].
fn check_case(case: &toml::Value, out: &Path) -> Shown {
    let s = |k: &str| case[k].as_str().unwrap_or_else(|| panic!("{k}: {case}"));
    let project = out.join("project");
    copy_dir(&root().join("fixtures/python").join(s("dir")), &project);
    let test: Vec<&str> = case["test"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let faulty: Vec<(&str, u32)> = case["faulty"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let (file, line) = f.as_str().unwrap().rsplit_once(':').unwrap();
            (file, line.parse().unwrap())
        })
        .collect();
    let page = out.join("report.html");
    // A 3 s test timeout: the fixtures' tests take milliseconds, and to_base_hang's hanging test
    // is cut there (the default 10 s, twice that in the plain run, makes it the slowest case).
    let o = bin()
        .current_dir(&project)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "localize",
            "--src",
            s("src"),
            "--no-cfx",
            "--test-timeout",
            "3",
        ])
        .arg("--keep-dump")
        .arg(out.join("dump"))
        .arg("--html")
        .arg(&page)
        .arg("--")
        .args(&test)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check_report(&dump_dom(&page), &faulty)
}

/// The report of every project of fixtures/python/cases.toml, checked in the browser as a person
/// would look at it ([`check_report`]); the cases run on two threads.
#[test]
fn every_python_fixture_report() {
    require_pytest();
    chromium();
    let text = std::fs::read_to_string(root().join("fixtures/python/cases.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    let cases = manifest["case"].as_array().unwrap();
    assert!(cases.len() > 1, "{cases:?}");
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let name = case["name"].as_str().unwrap().to_string();
                let out = tempfile::tempdir().unwrap();
                let start = Instant::now();
                let r = std::panic::catch_unwind(|| check_case(case, out.path())).map_err(|e| {
                    e.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                });
                let secs = start.elapsed().as_secs_f64();
                results.lock().unwrap().push((name, secs, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(results.len(), cases.len());
    let mut failed = Vec::new();
    for (name, secs, r) in &results {
        match r {
            Ok(shown) => eprintln!(
                "{name}: {secs:.1} s, top {}, faulty line ranked {}",
                shown.top, shown.faulty_rank
            ),
            Err(e) => failed.push(format!("{name} ({secs:.1} s): {e}")),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} reports fail the browser checks:\n{}",
        failed.len(),
        results.len(),
        failed.join("\n\n")
    );
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
