#!/usr/bin/env python3
"""Write an evaluation manifest (cases.toml format) for the 40 QuixBugs Python or Java programs.

usage: quixbugs_manifest.py CHECKOUT OUT.toml [TSV] [--timeout SECONDS] [--correct] [--relative]
       quixbugs_manifest.py --java CHECKOUT OUT.toml [TSV] [--build DIR] [--check] [--relative]

CHECKOUT  a QuixBugs work tree (holds python_programs/, python_testcases/, conftest.py;
          java_programs/, java_testcases/junit/); its code is only referred to, never copied,
          and nothing is written inside it.
OUT.toml  the manifest to write.
TSV       ground truth with the columns program, buggy_file, faulty_lines, bug_kind, ...
          (default: ../shared/bench/quixbugs-python.tsv relative to the repository root);
          with --java the columns program, buggy_file, faulty_lines, python_bug_kind, ...
          (default: corpus/quixbugs-java/truth.tsv of the repository).

Python: QuixBugs' root conftest.py adds the pytest options --correct (import
correct_python_programs instead of python_programs) and --runslow; without them its tests import
the buggy programs, so the test command needs no flag. Some buggy programs (bitcount,
find_first_in_sorted, sqrt: the TSV's timeout_tests column) loop forever on some inputs:
--timeout N adds pytest-timeout's per-test limit (`--timeout=N`, needs the pytest-timeout
package). --correct writes test commands that run the correct versions (to check that every
suite passes there).

Java (--java): compiles CHECKOUT/java_programs/*.java into DIR/classes and
CHECKOUT/java_testcases/junit/*.java into DIR/test-classes with `javac -g` (DIR: --build, default
`<OUT stem>-build` beside OUT.toml; skipped when DIR's classes are newer than the sources), against
JUnit 4 (/usr/share/java/junit4.jar:/usr/share/java/hamcrest.jar, or the ':'-separated list in
$PROSECUTOR_JUNIT_JARS). Each case names its JUnit test class, java_testcases.junit.<PROGRAM>_TEST.
The programs whose buggy tests never end (JAVA_HANGING) get `timeout`. --check runs every test
class once with JUnitCore (one JVM per program, up to 120 s each), writes the failing / passing
counts as comments, takes the programs that never end from that run, and exits non-zero when a
program has no failing test (a broken case).

--relative writes `dir` (and with --java `classes`, `test_classes`) relative to the manifest's
folder instead of as absolute paths.
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TSV = REPO_ROOT / ".." / "shared" / "bench" / "quixbugs-python.tsv"
DEFAULT_JAVA_TSV = REPO_ROOT / "corpus" / "quixbugs-java" / "truth.tsv"
DEFAULT_JUNIT_JARS = ("/usr/share/java/junit4.jar", "/usr/share/java/hamcrest.jar")
JUNIT_JARS_ENV = "PROSECUTOR_JUNIT_JARS"
TEST_PACKAGE = "java_testcases.junit"

# Where one flavour's programs, tests and bug kinds are. `needs`: what a checkout must hold.
Layout = namedtuple("Layout", "language kind_column program_file test_file needs name_kind")
PYTHON = Layout("python", "bug_kind", "python_programs/%s.py", "python_testcases/test_%s.py",
                ("conftest.py", "python_programs", "python_testcases"), "Python module name")
JAVA = Layout("java", "python_bug_kind", "java_programs/%s.java",
              "java_testcases/junit/%s_TEST.java", ("java_programs", "java_testcases/junit"),
              "Java class name")


class ManifestError(Exception):
    pass


def toml_str(s):
    """A TOML basic string."""
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_list(items):
    return "[" + ", ".join(toml_str(i) for i in items) + "]"


# ---------------------------------------------------------------------------------------------
# Ground truth and checkout


def read_ground_truth(tsv, layout=PYTHON):
    """Rows of the ground-truth table as dicts, each with its 1-based line number."""
    try:
        text = tsv.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError("%s: cannot read ground truth: %s" % (tsv, e.strerror or e))
    reader = csv.DictReader(text.splitlines(), delimiter="\t")
    required = ("program", "buggy_file", "faulty_lines", layout.kind_column)
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise ManifestError("%s:1: missing column(s): %s" % (tsv, ", ".join(missing)))
    rows = []
    seen = {}
    for line_no, row in enumerate(reader, start=2):
        if not any((v or "").strip() for v in row.values()):
            continue
        where = "%s:%d" % (tsv, line_no)
        for col in required:
            if not (row.get(col) or "").strip():
                raise ManifestError("%s: empty %s" % (where, col))
        program = row["program"].strip()
        if not program.isidentifier():
            raise ManifestError("%s: program %r is not a %s" % (where, program, layout.name_kind))
        if program in seen:
            raise ManifestError("%s: program %s already listed on line %d" % (where, program, seen[program]))
        seen[program] = line_no
        expected_file = layout.program_file % program
        if row["buggy_file"].strip() != expected_file:
            raise ManifestError("%s: buggy_file %r, expected %r" % (where, row["buggy_file"].strip(), expected_file))
        rows.append({"line": line_no, "program": program, "file": expected_file,
                     "lines": parse_lines(row["faulty_lines"], where),
                     "kind": row[layout.kind_column].strip(), "row": row})
    if not rows:
        raise ManifestError("%s: no programs listed" % tsv)
    return rows


def parse_lines(text, where):
    lines = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ManifestError("%s: faulty_lines %r: %r is not a line number" % (where, text, part))
        lines.append(int(part))
    return lines


def check_checkout(checkout, rows, tsv, layout=PYTHON):
    for need in layout.needs:
        if not (checkout / need).exists():
            raise ManifestError("%s: not a QuixBugs checkout (no %s)" % (checkout, need))
    for r in rows:
        where = "%s:%d" % (tsv, r["line"])
        program_file = checkout / r["file"]
        test_file = checkout / (layout.test_file % r["program"])
        if not program_file.is_file():
            raise ManifestError("%s: %s does not exist" % (where, program_file))
        if not test_file.is_file():
            raise ManifestError("%s: %s does not exist" % (where, test_file))
        n = len(program_file.read_text(encoding="utf-8").splitlines())
        for line in r["lines"]:
            if line > n:
                raise ManifestError("%s: faulty line %d is past the end of %s (%d lines)"
                                    % (where, line, program_file, n))


# ---------------------------------------------------------------------------------------------
# Python manifest

# Seconds a test of a program whose tests loop forever may run under tracing (FauxPy's anchor
# ran them under pytest-timeout's 5 s).
HANG_TIMEOUT = 5


def render(rows, dir_value, timeout, correct):
    out = [
        "# QuixBugs Python programs: evaluation manifest written by scripts/quixbugs_manifest.py.",
        "# Tests import the buggy python_programs/ unless pytest gets --correct.",
    ]
    hanging = [r["program"] for r in rows
               if (r["row"].get("timeout_tests") or "0").strip() not in ("", "0")]
    if timeout is None and hanging:
        out.append("# Tests of %s never end: their cases get `timeout = %g` (the tracer's per-test"
                   % (", ".join(hanging), HANG_TIMEOUT))
        out.append("# limit); every other case uses eval's --test-timeout, so give it room: tests run")
        out.append("# 20-100x slower under tracing, and a slow test stopped early would count as failing.")
    out.append("")
    for r in rows:
        test = ["python3", "-m", "pytest", "-q", "python_testcases/test_%s.py" % r["program"]]
        if timeout is not None:
            test.append("--timeout=%g" % timeout)
        if correct:
            test.append("--correct")
        counts = [("failing", "failing_tests"), ("passing", "passing_tests"),
                  ("timeouts", "timeout_tests")]
        known = ["%s %s" % (r["row"][col].strip(), label) for label, col in counts
                 if (r["row"].get(col) or "").strip()]
        if known:
            out.append("# ground truth: " + ", ".join(known))
        out += [
            "[[case]]",
            "name = %s" % toml_str(r["program"]),
            "dir = %s" % toml_str(dir_value),
            "src = %s" % toml_str(r["file"]),
            "test = %s" % toml_list(test),
            "faulty = %s" % toml_list(["%s.py:%s" % (r["program"], ",".join(map(str, r["lines"])))]),
            "kind = %s" % toml_str(r["kind"]),
        ]
        if not correct:
            # the fixed version, for explain's regression mode (scripts/explain_eval.py)
            out.append("reference_src = %s" % toml_str(r["file"].replace(
                "python_programs/", "correct_python_programs/", 1)))
            out.append("reference_test = %s" % toml_list(test + ["--correct"]))
        if timeout is None and r["program"] in hanging:
            out.append("timeout = %g" % HANG_TIMEOUT)
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Java: compiling

JAVAC_ERROR = re.compile(r"^(.+\.java):(\d+): error: (.*)$")


def junit_jars():
    """The JUnit 4 class path entries ($PROSECUTOR_JUNIT_JARS or Debian's junit4 + hamcrest)."""
    env = os.environ.get(JUNIT_JARS_ENV)
    jars = [j for j in env.split(":") if j] if env is not None else list(DEFAULT_JUNIT_JARS)
    if not jars:
        raise ManifestError("$%s is empty: give the JUnit 4 jars, ':'-separated" % JUNIT_JARS_ENV)
    for jar in jars:
        if not Path(jar).exists():
            hint = "check $%s" % JUNIT_JARS_ENV if env is not None else \
                "install Debian's junit4 package or set $%s" % JUNIT_JARS_ENV
            raise ManifestError("JUnit jar %s does not exist (%s)" % (jar, hint))
    return jars


def need_tool(name):
    path = shutil.which(name)
    if path is None:
        raise ManifestError("`%s` is not on PATH: --java needs a JDK (javac, java)" % name)
    return path


def build_dir_for(out, build, checkout):
    """The build folder: --build, or `<OUT stem>-build` beside OUT; never inside the checkout."""
    d = (build if build is not None else out.parent / (out.stem + "-build")).resolve()
    if d == checkout or checkout in d.parents:
        raise ManifestError("build folder %s is inside the checkout %s, which is never written to; "
                            "give another with --build DIR" % (d, checkout))
    return d


def up_to_date(stamp, command, sources):
    """Whether `stamp` records `command` and is newer than every source."""
    try:
        if json.loads(stamp.read_text(encoding="utf-8")) != command:
            return False
        built = stamp.stat().st_mtime
    except (OSError, ValueError):
        return False
    return all(s.stat().st_mtime < built for s in sources)


def javac(sources, out_dir, class_path, build, what):
    """Compiles `sources` into `out_dir` (skipped when its stamp is newer); True if it compiled."""
    command = [need_tool("javac"), "-g", "-encoding", "UTF-8", "-nowarn"]
    if class_path:
        command += ["-cp", ":".join(map(str, class_path))]
    command += ["-d", str(out_dir)] + [str(s) for s in sources]
    stamp = build / (out_dir.name + ".stamp")
    if up_to_date(stamp, command, sources):
        return False
    if not sources:
        raise ManifestError("no %s to compile" % what)
    stamp.unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "CLASSPATH"}
    proc = subprocess.run(command, cwd=build, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ManifestError(javac_failure(proc.stdout + proc.stderr, what))
    stamp.write_text(json.dumps(command), encoding="utf-8")
    return True


def javac_failure(output, what):
    """javac's errors, the files they are in first."""
    files = []
    for line in output.splitlines():
        m = JAVAC_ERROR.match(line)
        if m and m.group(1) not in files:
            files.append(m.group(1))
    message = [line for line in output.splitlines() if not line.startswith("Note: ")]
    head = "javac could not compile the %s" % what
    if files:
        head += " (errors in %s)" % ", ".join(files)
    return head + ":\n" + "\n".join(message).rstrip()


def compile_java(checkout, build, jars):
    """DIR/classes from java_programs/*.java, DIR/test-classes from java_testcases/junit/*.java."""
    build.mkdir(parents=True, exist_ok=True)
    classes, test_classes = build / "classes", build / "test-classes"
    programs = sorted((checkout / "java_programs").glob("*.java"))
    tests = sorted((checkout / "java_testcases" / "junit").glob("*.java"))
    compiled = javac(programs, classes, [], build, "programs (java_programs/*.java)")
    if compiled:
        (build / "test-classes.stamp").unlink(missing_ok=True)
    compiled_tests = javac(tests, test_classes, [classes] + jars, build,
                           "JUnit tests (java_testcases/junit/*.java)")
    state = "compiled" if compiled or compiled_tests else "up to date"
    print("%s: %d files of java_programs/, %d of java_testcases/junit/ in %s"
          % (state, len(programs), len(tests), build))
    return classes, test_classes


# ---------------------------------------------------------------------------------------------
# Java: running the buggy tests once (--check)

# Seconds JUnitCore may run one program's test class in --check.
CHECK_TIMEOUT = 120

# The programs with JUnit tests that never end on the buggy version (they hit their
# @Test(timeout = 3000)): --check's result on jkoppel/QuixBugs (9 of 9 tests of BITCOUNT, 2 of 9
# of FIND_FIRST_IN_SORTED, 6 of 7 of SQRT), the same programs as the Python twins' timeout_tests.
JAVA_HANGING = ("BITCOUNT", "FIND_FIRST_IN_SORTED", "SQRT")

Outcome = namedtuple("Outcome", "failing passing timeouts seconds ended")


def parse_junit(output):
    """(failing, passing, timed out) from JUnitCore's output, or None if it has no summary."""
    timeouts = sum(1 for line in output.splitlines()
                   if line.startswith("org.junit.runners.model.TestTimedOutException"))
    ok = re.search(r"^OK \((\d+) tests?\)", output, re.M)
    if ok:
        return 0, int(ok.group(1)), timeouts
    bad = re.search(r"^Tests run: (\d+),\s+Failures: (\d+)", output, re.M)
    if bad:
        run, failed = int(bad.group(1)), int(bad.group(2))
        return failed, run - failed, timeouts
    return None


def run_junit(program, class_path, build):
    """Runs <program>_TEST once with JUnitCore."""
    command = [need_tool("java"), "-cp", ":".join(map(str, class_path)),
               "org.junit.runner.JUnitCore", "%s.%s_TEST" % (TEST_PACKAGE, program)]
    env = {k: v for k, v in os.environ.items() if k != "CLASSPATH"}
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=build, env=env, capture_output=True, text=True,
                              errors="replace", timeout=CHECK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Outcome(None, None, None, time.monotonic() - start, False)
    seconds = time.monotonic() - start
    counts = parse_junit(proc.stdout)
    if counts is None or "Could not find class" in proc.stdout:
        raise ManifestError("%s: JUnitCore did not run %s (exit %d):\n%s"
                            % (program, command[-1], proc.returncode, (proc.stdout + proc.stderr)[-2000:]))
    return Outcome(*counts, seconds, True)


def check_java(rows, class_path, build):
    """Each program's Outcome; prints one line per program and the total time."""
    outcomes = {}
    start = time.monotonic()
    for r in rows:
        o = outcomes[r["program"]] = run_junit(r["program"], class_path, build)
        print("  %-28s %s (%.1f s)" % (r["program"], describe(o), o.seconds), flush=True)
    print("checked %d programs in %.1f s" % (len(rows), time.monotonic() - start))
    return outcomes


def describe(o):
    if not o.ended:
        return "did not end within %d s" % CHECK_TIMEOUT
    return "%d failing, %d passing, %d timeouts" % (o.failing, o.passing, o.timeouts)


def hangs(o):
    return not o.ended or o.timeouts > 0


# ---------------------------------------------------------------------------------------------
# Java manifest


def java_header(hanging, build, jars, checked):
    out = [
        "# QuixBugs Java programs: evaluation manifest written by scripts/quixbugs_manifest.py --java.",
        "# `classes` and `test_classes` were compiled (javac -g) from dir's java_programs/*.java and",
        "# java_testcases/junit/*.java into %s, against %s;" % (build, ":".join(jars)),
        "# the tests run the buggy java_programs. Most tests carry JUnit's @Test(timeout = 3000).",
    ]
    if checked:
        out.append("# Ground truth: each test class run once with JUnitCore (--check); time-outs count as failing.")
    if hanging:
        out.append("# Tests of %s never end: their cases get `timeout = %g` (the tracer's per-test"
                   % (", ".join(hanging), HANG_TIMEOUT))
        out.append("# limit); every other case uses eval's --test-timeout, so give it room: tests run")
        out.append("# much slower under tracing, and a slow test stopped early would count as failing.")
    return out + [""]


def java_case(r, paths, hanging, outcome):
    out = []
    if outcome is not None:
        out.append("# ground truth: " + describe(outcome))
    out += [
        "[[case]]",
        "name = %s" % toml_str(r["program"]),
        "language = \"java\"",
        "dir = %s" % toml_str(paths["dir"]),
        "src = %s" % toml_str(r["file"]),
        "classes = %s" % toml_str(paths["classes"]),
        "test_classes = %s" % toml_str(paths["test_classes"]),
        "source_roots = %s" % toml_list(["."]),
        "test = %s" % toml_list(["%s.%s_TEST" % (TEST_PACKAGE, r["program"])]),
        "faulty = %s" % toml_list(["%s.java:%s" % (r["program"], ",".join(map(str, r["lines"])))]),
        "kind = %s" % toml_str(r["kind"]),
    ]
    if r["program"] in hanging:
        out.append("timeout = %g" % HANG_TIMEOUT)
    return out + [""]


def render_java(rows, paths, build, jars, outcomes):
    known = [r["program"] for r in rows if r["program"] in JAVA_HANGING]
    if outcomes is None:
        hanging = known
    else:
        hanging = [r["program"] for r in rows if hangs(outcomes[r["program"]])]
        if hanging != known:
            print("note: tests of %s never end; JAVA_HANGING names %s"
                  % (", ".join(hanging) or "no program", ", ".join(known) or "none"))
    out = java_header(hanging, build, jars, outcomes is not None)
    for r in rows:
        out += java_case(r, paths, hanging, None if outcomes is None else outcomes[r["program"]])
    return "\n".join(out)


def java_manifest(checkout, out, tsv, build, relative, check):
    """The Java manifest's text and the programs --check found no failing test for."""
    rows = read_ground_truth(tsv, JAVA)
    check_checkout(checkout, rows, tsv, JAVA)
    jars = junit_jars()
    build = build_dir_for(out, build, checkout)
    classes, test_classes = compile_java(checkout, build, jars)
    outcomes = check_java(rows, [classes, test_classes] + jars, build) if check else None
    place = (lambda p: os.path.relpath(p, out.parent)) if relative else str
    paths = {"dir": place(checkout), "classes": place(classes), "test_classes": place(test_classes)}
    text = render_java(rows, paths, build, jars, outcomes)
    broken = [p for p, o in (outcomes or {}).items() if o.ended and o.failing == 0]
    return text, len(rows), broken


# ---------------------------------------------------------------------------------------------


def write(out, text):
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ManifestError("%s: cannot write manifest: %s" % (out, e.strerror or e))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", type=Path, help="QuixBugs work tree")
    ap.add_argument("out", type=Path, help="manifest to write")
    ap.add_argument("tsv", type=Path, nargs="?", help="ground-truth table")
    ap.add_argument("--java", action="store_true", help="the Java programs (JUnit tests)")
    ap.add_argument("--timeout", type=float, help="per-test limit in seconds (pytest-timeout; Python)")
    ap.add_argument("--correct", action="store_true", help="run the correct versions (Python)")
    ap.add_argument("--build", type=Path, metavar="DIR",
                    help="where --java compiles to (default: <OUT stem>-build beside OUT)")
    ap.add_argument("--check", action="store_true",
                    help="--java: run every test class once and record failing/passing counts")
    ap.add_argument("--relative", action="store_true", help="write paths relative to OUT's folder")
    args = ap.parse_args(argv)
    if args.timeout is not None and not args.timeout > 0:
        ap.error("--timeout must be positive, got %g" % args.timeout)
    if args.java and (args.timeout is not None or args.correct):
        ap.error("--timeout and --correct apply to the Python programs only, not with --java")
    if not args.java and (args.build is not None or args.check):
        ap.error("--build and --check need --java")
    if args.tsv is None:
        args.tsv = DEFAULT_JAVA_TSV if args.java else DEFAULT_TSV
    return args


def main(argv):
    args = parse_args(argv)
    broken = []
    try:
        tsv = args.tsv.resolve()
        checkout = args.checkout.resolve()
        out = args.out.resolve()
        if args.java:
            text, n, broken = java_manifest(checkout, out, tsv, args.build, args.relative, args.check)
        else:
            rows = read_ground_truth(tsv)
            check_checkout(checkout, rows, tsv)
            dir_value = os.path.relpath(checkout, out.parent) if args.relative else str(checkout)
            text, n = render(rows, dir_value, args.timeout, args.correct), len(rows)
        write(out, text)
    except ManifestError as e:
        print("quixbugs_manifest: error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %d cases to %s" % (n, out))
    if broken:
        print("quixbugs_manifest: error: no test fails on the buggy version of %s (broken case%s)"
              % (", ".join(broken), "s" if len(broken) > 1 else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
