"""scripts/quixbugs_manifest.py --java on a tiny fake QuixBugs checkout (not part of cargo test).

python3 -m pytest -q scripts/test_quixbugs_manifest_java.py   (needs javac, java and JUnit 4)

The checkout is written here: programs in package java_programs, their JUnit 4 tests in
java_testcases/junit, as QuixBugs lays them out (none of QuixBugs' code).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # before Python 3.11
    import tomli as tomllib  # scripts/test installs it on Pythons before 3.11

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "quixbugs_manifest.py"
DEFAULT_JARS = "/usr/share/java/junit4.jar:/usr/share/java/hamcrest.jar"
JARS = os.environ.get("PROSECUTOR_JUNIT_JARS", DEFAULT_JARS)

# A missing dependency fails the tests, naming it (scripts/test installs them when missing).
if shutil.which("javac") is None or shutil.which("java") is None:
    pytest.fail("no JDK (javac, java) on PATH: apt-get install default-jdk-headless",
                pytrace=False)
if not all(Path(j).exists() for j in JARS.split(":") if j):
    pytest.fail("JUnit 4 jars missing (%s): install Debian's junit4 and libhamcrest-java or set "
                "PROSECUTOR_JUNIT_JARS" % JARS, pytrace=False)

# name -> (program, test). ADD's bug is on line 4; HALF's (line 5) loops forever on odd numbers.
PROGRAMS = {
    "ADD": (
        "package java_programs;\n"
        "public class ADD {\n"
        "    public static int add(int a, int b) {\n"
        "        return a - b;\n"
        "    }\n"
        "}\n",
        "package java_testcases.junit;\n"
        "public class ADD_TEST {\n"
        "    @org.junit.Test(timeout = 3000)\n"
        "    public void test_0() { org.junit.Assert.assertEquals(2, java_programs.ADD.add(2, 0)); }\n"
        "    @org.junit.Test(timeout = 3000)\n"
        "    public void test_1() { org.junit.Assert.assertEquals(5, java_programs.ADD.add(2, 3)); }\n"
        "}\n"),
    "HALF": (
        "package java_programs;\n"
        "public class HALF {\n"
        "    public static int half(int n) {\n"
        "        int k = 0;\n"
        "        while (2 * k != n) {\n"
        "            k++;\n"
        "        }\n"
        "        return k;\n"
        "    }\n"
        "}\n",
        "package java_testcases.junit;\n"
        "public class HALF_TEST {\n"
        "    @org.junit.Test(timeout = 3000)\n"
        "    public void test_0() { org.junit.Assert.assertEquals(2, java_programs.HALF.half(4)); }\n"
        "    @org.junit.Test(timeout = 300)\n"
        "    public void test_1() { org.junit.Assert.assertEquals(1, java_programs.HALF.half(3)); }\n"
        "}\n"),
}
COLUMNS = ["program", "buggy_file", "faulty_lines", "hunk_kind", "changed_lines",
           "python_hunk_kind", "python_bug_kind", "note"]
KEYS = ["name", "language", "dir", "src", "classes", "test_classes", "source_roots", "test",
        "faulty", "kind"]


def write_checkout(root, programs=PROGRAMS):
    (root / "java_programs").mkdir(parents=True)
    (root / "java_testcases" / "junit").mkdir(parents=True)
    for name, (program, test) in programs.items():
        (root / "java_programs" / (name + ".java")).write_text(program)
        (root / "java_testcases" / "junit" / (name + "_TEST.java")).write_text(test)
    return root


def write_tsv(path, faulty):
    """faulty: program -> faulty_lines."""
    rows = ["\t".join(COLUMNS)]
    for name, lines in faulty.items():
        rows.append("\t".join([name, "java_programs/%s.java" % name, lines, "replace", lines,
                               "replace", "wrong %s" % name.lower(), ""]))
    path.write_text("\n".join(rows) + "\n")
    return path


def snapshot(root):
    return {p: p.stat().st_mtime_ns for p in root.rglob("*")}


def run(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), "--java"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))


@pytest.fixture
def checkout(tmp_path):
    return write_checkout(tmp_path / "qb")


@pytest.fixture
def tsv(tmp_path):
    return write_tsv(tmp_path / "truth.tsv", {"ADD": "4", "HALF": "5"})


def test_manifest_names_the_compiled_classes_and_the_faulty_lines(tmp_path, checkout, tsv):
    before = snapshot(checkout)
    out = tmp_path / "out" / "m.toml"
    out.parent.mkdir()
    proc = run(checkout, out, tsv)
    assert proc.returncode == 0, proc.stderr
    assert snapshot(checkout) == before  # nothing written inside the checkout
    cases = tomllib.loads(out.read_text())["case"]
    assert [c["name"] for c in cases] == ["ADD", "HALF"]
    build = tmp_path / "out" / "m-build"
    add, half = cases
    assert list(add) == KEYS  # no timeout: HALF is not in JAVA_HANGING and --check was not given
    assert add == {
        "name": "ADD", "language": "java", "dir": str(checkout),
        "src": "java_programs/ADD.java",
        "classes": str(build / "classes"), "test_classes": str(build / "test-classes"),
        "source_roots": ["."], "test": ["java_testcases.junit.ADD_TEST"],
        "faulty": ["ADD.java:4"], "kind": "wrong add",
    }
    assert half["faulty"] == ["HALF.java:5"]
    assert (build / "classes" / "java_programs" / "ADD.class").is_file()
    assert (build / "test-classes" / "java_testcases" / "junit" / "HALF_TEST.class").is_file()
    assert out.read_text().startswith("# QuixBugs Java programs")

    again = run(checkout, out, tsv)  # nothing changed: nothing is recompiled
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("up to date"), again.stdout


def test_relative_paths_and_build_folder(tmp_path, checkout, tsv):
    out = tmp_path / "m.toml"
    proc = run(checkout, out, tsv, "--relative", "--build", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    case = tomllib.loads(out.read_text())["case"][0]
    assert case["dir"] == "qb"
    assert case["classes"] == "b/classes" and case["test_classes"] == "b/test-classes"
    assert (tmp_path / case["classes"] / "java_programs" / "ADD.class").is_file()


def test_check_counts_failing_and_passing_tests_and_finds_the_hanging_program(tmp_path, checkout, tsv):
    out = tmp_path / "m.toml"
    proc = run(checkout, out, tsv, "--check")
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "# ground truth: 1 failing, 1 passing, 0 timeouts\n[[case]]\nname = \"ADD\"" in text
    assert "# ground truth: 1 failing, 1 passing, 1 timeouts\n[[case]]\nname = \"HALF\"" in text
    add, half = tomllib.loads(text)["case"]
    assert "timeout" not in add
    assert half["timeout"] == 5 and list(half)[-1] == "timeout"


def test_check_rejects_a_program_whose_tests_all_pass(tmp_path):
    program, test = PROGRAMS["ADD"]
    checkout = write_checkout(tmp_path / "qb", {"ADD": (program.replace("a - b", "a + b"), test)})
    out = tmp_path / "m.toml"
    proc = run(checkout, out, write_tsv(tmp_path / "t.tsv", {"ADD": "4"}), "--check")
    assert proc.returncode != 0
    assert "no test fails on the buggy version of ADD" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_faulty_line_past_the_end_is_rejected(tmp_path, checkout):
    tsv = write_tsv(tmp_path / "truth.tsv", {"ADD": "4", "HALF": "5,99"})
    out = tmp_path / "m.toml"
    proc = run(checkout, out, tsv)
    assert proc.returncode != 0
    assert "%s:3: faulty line 99 is past the end of %s (10 lines)" % (
        tsv, checkout / "java_programs" / "HALF.java") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_program_that_does_not_compile_is_named(tmp_path):
    program, test = PROGRAMS["ADD"]
    checkout = write_checkout(tmp_path / "qb", {"ADD": (program.replace("a - b;", "a - ;"), test)})
    proc = run(checkout, tmp_path / "m.toml", write_tsv(tmp_path / "t.tsv", {"ADD": "4"}))
    assert proc.returncode != 0
    assert "javac could not compile the programs" in proc.stderr
    assert "%s:4: error:" % (checkout / "java_programs" / "ADD.java") in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_junit_jar_and_build_inside_checkout_are_clear_errors(tmp_path, checkout, tsv):
    proc = run(checkout, tmp_path / "m.toml", tsv, env={"PROSECUTOR_JUNIT_JARS": "/no/junit.jar"})
    assert proc.returncode != 0
    assert "JUnit jar /no/junit.jar does not exist" in proc.stderr
    before = snapshot(checkout)
    proc = run(checkout, tmp_path / "m.toml", tsv, "--build", checkout / "build")
    assert proc.returncode != 0
    assert "is inside the checkout" in proc.stderr
    assert snapshot(checkout) == before
