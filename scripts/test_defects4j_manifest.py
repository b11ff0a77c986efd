"""scripts/defects4j_manifest.py on a made-up Defects4J layout (run by cargo test).

python3 -m pytest -q scripts/test_defects4j_manifest.py   (needs `java` for --describe-module)

Everything is written here: Defects4J's metadata folder for Lang (relevant_tests, failing_tests,
dependent_tests, random_tests), a ground-truth TSV and two built versions, one as
`d4j_lang.py --keep` leaves it and one as `defects4j checkout` + `compile` writes it (no code of
Defects4J or commons-lang).
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # before Python 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "defects4j_manifest.py"

if shutil.which("java") is None:
    pytest.fail("no JDK (java) on PATH: apt-get install default-jdk-headless", pytrace=False)

HEADER = ["bug_id", "src_dir", "test_dir", "fixed_commit", "trigger_tests", "faulty_lines",
          "report_id", "prosecutor58_guess", "prosecutor58_note"]
ROWS = [
    ["1", "src/main/java", "src/test/java", "f1", "p.ATest::t1;p.ATest::t2",
     "src/main/java/p/A.java:10|src/main/java/p/A.java:11;src/main/java/p/B.java:3", "LANG-1", "y", ""],
    ["2", "src/java", "src/test", "f2", "p.CTest::t", "", "LANG-2", "n", "fix adds a method"],
    ["3", "src/java", "src/test", "f3", "p.DTest::t", "src/java/p/D.java:5", "LANG-3", "y", ""],
]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def layout(tmp_path):
    meta = tmp_path / "d4j" / "framework" / "projects" / "Lang"
    write(meta / "relevant_tests" / "1", "p.ATest\np.OtherTest\n")
    write(meta / "relevant_tests" / "2", "p.CTest\n")
    write(meta / "relevant_tests" / "3", "p.DTest\n")
    write(meta / "failing_tests" / "f1", "--- p.OtherTest::broken\n--- q.Elsewhere::broken\n")
    write(meta / "dependent_tests", "--- p.ATest::dependent\n")
    write(meta / "random_tests", "")
    for j in ("asm.jar", "cglib.jar", "commons-io.jar", "easymock.jar"):
        write(meta / "lib" / j, "")
    tsv = tmp_path / "truth.tsv"
    tsv.write_text("\n".join("\t".join(r) for r in [HEADER] + ROWS) + "\n")
    versions = tmp_path / "versions"
    # bug 1 as d4j_lang.py --keep leaves it
    v1 = versions / "Lang-1b"
    for d in ("tree/src/main/java/p", "tree/src/test/java/p", "tree/src/test/resources", "classes",
              "test-classes", "d4jlib"):
        (v1 / d).mkdir(parents=True)
    for j in ("asm.jar", "cglib.jar", "commons-io.jar", "easymock.jar"):
        write(v1 / "d4jlib" / j, "")
    # bug 2: no faulty line; bug 3 as `defects4j checkout` + `compile` (properties name the bug)
    for b in (2, 3):
        v = versions / ("checkout%d" % b)
        for d in ("src/java/p", "src/test/p", "target/classes", "target/tests"):
            (v / d).mkdir(parents=True)
        write(v / "defects4j.build.properties", "d4j.project.id=Lang\nd4j.bug.id=%d\n" % b)
    return tmp_path, meta, tsv, versions


def run(args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cases_from_both_layouts(layout):
    tmp, meta, tsv, versions = layout
    out = tmp / "m.toml"
    r = run([versions, out, "--d4j", tmp / "d4j", "--tsv", tsv])
    assert r.returncode == 0, r.stderr
    assert "left out Lang-2: no faulty line to score (fix adds a method)" in r.stderr
    text = out.read_text()
    assert "# left out: Lang-2: no faulty line to score" in text
    cases = {c["name"]: c for c in tomllib.loads(text)["case"]}
    assert sorted(cases) == ["Lang-1", "Lang-3"]
    c1 = cases["Lang-1"]
    assert c1["language"] == "java" and c1["src"] == "src/main/java"
    assert c1["dir"] == str((versions / "Lang-1b" / "tree").resolve())
    assert c1["classes"] == str((versions / "Lang-1b" / "classes").resolve())
    # triggers first, then the relevant classes; broken tests of those classes deselected
    assert c1["test"] == ["p.ATest::t1", "p.ATest::t2", "p.ATest", "p.OtherTest",
                          "!p.ATest::dependent", "!p.OtherTest::broken"]
    assert c1["failing"] == ["p.ATest::t1", "p.ATest::t2"]
    # any listed line counts: one entry per file, relative to the source folder
    assert c1["faulty"] == ["p/A.java:10,11", "p/B.java:3"]
    lib = versions / "Lang-1b" / "d4jlib"
    tree = versions / "Lang-1b" / "tree"
    assert c1["classpath"] == [str((tree / "src/test/resources").resolve()), str((tree / "src/test/java").resolve())] + \
        [str((lib / j).resolve()) for j in ("asm.jar", "cglib.jar", "commons-io.jar", "easymock.jar")]
    assert c1["source_roots"] == ["src/main/java", "src/test/java"]
    assert "-Duser.timezone=America/Los_Angeles" in c1["jvm_args"]
    assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in c1["jvm_args"]
    assert c1["kind"] == "defects4j-lang odd"
    c3 = cases["Lang-3"]
    assert c3["classes"].endswith("checkout3/target/classes")
    assert c3["test_classes"].endswith("checkout3/target/tests")
    # no d4jlib: the metadata folder's lib/
    assert c3["classpath"][-1] == str((meta / "lib" / "easymock.jar").resolve())


def test_bug_subsets(layout):
    tmp, meta, tsv, versions = layout
    out = tmp / "m.toml"
    for spec, want in [("odd", ["Lang-1", "Lang-3"]), ("even", []), ("58", ["Lang-1", "Lang-3"]),
                       ("3", ["Lang-3"]), ("1-2", ["Lang-1"])]:
        r = run([versions, out, "--d4j", meta, "--tsv", tsv, "--bugs", spec])
        if not want:
            assert r.returncode == 2 and "no bug of --bugs even" in r.stderr, r.stderr
            continue
        assert r.returncode == 0, r.stderr
        assert [c["name"] for c in tomllib.loads(out.read_text())["case"]] == want


def test_bad_inputs_are_named(layout):
    tmp, meta, tsv, versions = layout
    out = tmp / "m.toml"
    r = run([versions, out, "--d4j", tmp / "nowhere", "--tsv", tsv])
    assert r.returncode == 2 and "neither a Defects4J folder" in r.stderr
    bad = tmp / "bad.tsv"
    bad.write_text("bug_id\tsrc_dir\n1\tsrc\n")
    r = run([versions, out, "--d4j", meta, "--tsv", bad])
    assert r.returncode == 2 and "expected the columns" in r.stderr
    r = run([versions, out, "--d4j", meta, "--tsv", tsv, "--bugs", "x"])
    assert r.returncode == 2 and "--bugs 'x'" in r.stderr
    shutil.rmtree(versions / "Lang-1b" / "classes")
    r = run([versions, out, "--d4j", meta, "--tsv", tsv])
    assert r.returncode == 0 and "left out Lang-1: no compiled classes" in r.stderr
