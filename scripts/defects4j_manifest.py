#!/usr/bin/env python3
"""Write an evaluation manifest (cases.toml format) for Defects4J Lang bugs, one Java case per bug.

usage: defects4j_manifest.py VERSIONS OUT.toml --d4j D4J [--tsv TSV] [--bugs SPEC]
                             [--d4j-rev REV] [--lib DIR] [--timeout S] [--xmx SIZE] [--relative]

VERSIONS  a folder of built buggy versions in Defects4J's layout, one per bug, either
          * as `d4j_lang.py sweep --keep` leaves them (../shared/bench/defects4j-lang/):
            `Lang-<N>b/tree/` (the `defects4j checkout -v <N>b` tree), `Lang-<N>b/classes/`,
            `Lang-<N>b/test-classes/`, `Lang-<N>b/d4jlib/*.jar`; or
          * as Defects4J writes them (`defects4j checkout -p Lang -v <N>b -w VERSIONS/Lang-<N>b`,
            then `defects4j compile`): the tree at the top, `target/classes`, `target/tests`
            (or `target/test-classes`, `build/classes`, `build/tests`); the bug is read from the
            folder's name or from `defects4j.build.properties` (`d4j.bug.id`).
          Nothing is written inside VERSIONS; its code is only referred to.
OUT.toml  the manifest to write.
D4J       Defects4J's metadata for Lang (relevant_tests/, failing_tests/, dependent_tests,
          random_tests, lib/): a Defects4J installation ($D4J_HOME), its
          framework/projects/Lang folder, or a git snapshot of rjust/defects4j (read at --d4j-rev,
          default v3.0.1).
TSV       the ground truth (default ../shared/bench/defects4j-lang.tsv beside the repository):
          bug_id, src_dir, test_dir, fixed_commit, trigger_tests (`;`-separated), faulty_lines
          (`path:line`, `;` between groups, `|` between alternatives: any listed line counts),
          prosecutor58_guess. A bug without a faulty line (Lang-23, Lang-56: the fix adds
          methods) cannot be scored: it is left out with its reason, on stderr and in a comment.

Each case runs, in one JVM, the bug's trigger tests (which fail) and Defects4J's relevant tests
(the test classes that load a class the fix modifies), minus the tests Defects4J removes from
every checkout (failing_tests of the fixed revision, dependent_tests, random_tests; written as
`!Class::method`), each test class with its own class loader (no static state leaks between
classes, as in one JVM per class). The trigger tests are the case's `failing` tests (the
witnesses of the fault): another test that fails here (one that fails alone but passes in
Defects4J's single-JVM order, such as Lang-9's FastDateParserTest::testParseZone) is left out of
the dump with a warning, as is a test whose outcome tracing changes (the tracer's plain run). The JVM gets what Lang's tests assume (the tool's README):
the en_US locale, TZ America/Los_Angeles, UTF-8, and --add-opens for every package of java.base,
java.desktop and java.sql (JDK 17 forbids the deep reflection of Lang's builders otherwise).

--bugs      all (default), odd, even, 58 (the TSV's prosecutor58_guess = y), or a list `1,3-5`;
            bugs without a built version in VERSIONS are reported on stderr and left out.
--lib       the folder of Defects4J's Lang jars (asm, cglib, commons-io, easymock; default:
            each version's d4jlib/, else D4J/framework/projects/Lang/lib when D4J is a folder).
--timeout   per-test time limit when tracing (default 10 s: Lang-43's trigger test runs until
            the heap is full).
--xmx       the test JVM's heap (default 4g: the recorder holds every test's trace until the
            dump is written, and Lang-62's relevant tests record 2,000,000 steps each).
--relative  paths relative to the manifest's folder instead of absolute.
"""
import argparse
import csv
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quixbugs_manifest import ManifestError, toml_list, toml_str, write  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TSV = REPO_ROOT / ".." / "shared" / "bench" / "defects4j-lang.tsv"
PROJECT = "framework/projects/Lang"
LIB_JARS = ("asm.jar", "cglib.jar", "commons-io.jar", "easymock.jar")
OPEN_MODULES = ("java.base", "java.desktop", "java.sql")
LOCALE_ARGS = ("-Duser.language=en", "-Duser.country=US", "-Duser.timezone=America/Los_Angeles",
               "-Dfile.encoding=UTF-8")
CLASSES = ("classes", "target/classes", "build/classes")
TEST_CLASSES = ("test-classes", "target/tests", "target/test-classes", "build/tests")


# ---------------------------------------------------------------------------------------------
# Defects4J metadata


class Metadata:
    """Lang's metadata from a Defects4J folder or a git snapshot of rjust/defects4j."""

    def __init__(self, path, rev):
        p = Path(path)
        self.git = None
        self.root = None
        for cand in (p, p / PROJECT):
            if (cand / "relevant_tests").is_dir():
                self.root = cand
                break
        if self.root is None:
            gdir = p / "repo" if (p / "repo").is_dir() else p
            if not (gdir / "HEAD").exists() and not (gdir / ".git").exists():
                raise ManifestError("--d4j %s: neither a Defects4J folder (with %s/relevant_tests) "
                                    "nor a git snapshot of rjust/defects4j" % (path, PROJECT))
            self.git, self.rev = gdir, rev

    def read(self, rel):
        """A metadata file's text ('' when it does not exist)."""
        if self.root is not None:
            f = self.root / rel
            return f.read_text(encoding="utf-8", errors="replace") if f.is_file() else ""
        r = subprocess.run(["git", "--git-dir", str(self.git), "show", "%s:%s/%s" % (self.rev, PROJECT, rel)],
                           capture_output=True)
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else ""

    def lib(self):
        return self.root / "lib" if self.root is not None and (self.root / "lib").is_dir() else None

    def relevant_classes(self, bug):
        return [l.strip() for l in self.read("relevant_tests/%d" % bug).splitlines() if l.strip()]

    def broken_tests(self, fixed_rev):
        """The tests Defects4J removes from every checkout of this revision."""
        out = set()
        for rel in ("failing_tests/%s" % fixed_rev, "dependent_tests", "random_tests"):
            out.update(l[4:].strip() for l in self.read(rel).splitlines() if l.startswith("--- "))
        return out


# ---------------------------------------------------------------------------------------------
# Ground truth


def read_truth(tsv):
    try:
        with open(tsv, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        raise ManifestError("%s: cannot read the ground truth: %s" % (tsv, e.strerror or e))
    need = {"bug_id", "src_dir", "test_dir", "fixed_commit", "trigger_tests", "faulty_lines"}
    if not rows or need - set(rows[0]):
        raise ManifestError("%s: expected the columns %s" % (tsv, ", ".join(sorted(need))))
    return {int(r["bug_id"]): r for r in rows}


def faulty_entries(row, where):
    """`faulty` entries relative to the source folder: one per file, every listed line."""
    src = row["src_dir"].rstrip("/") + "/"
    by_file = {}
    for item in re.split(r"[;|]", row["faulty_lines"]):
        item = item.strip()
        if not item:
            continue
        path, _, line = item.rpartition(":")
        if not path.startswith(src) or not line.isdigit():
            raise ManifestError("%s: faulty line %r is not SRC_DIR/FILE:LINE under %s" % (where, item, src))
        by_file.setdefault(path[len(src):], set()).add(int(line))
    return ["%s:%s" % (f, ",".join(map(str, sorted(ls)))) for f, ls in sorted(by_file.items())]


def select_bugs(spec, truth):
    ids = sorted(truth)
    if spec == "all":
        return ids
    if spec in ("odd", "even"):
        return [b for b in ids if b % 2 == (1 if spec == "odd" else 0)]
    if spec == "58":
        return [b for b in ids if truth[b].get("prosecutor58_guess", "y") == "y"]
    out = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise ManifestError("--bugs %r: expected all, odd, even, 58 or a list like 1,3-5" % spec)
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        out += [b for b in ids if lo <= b <= hi]
    return sorted(set(out))


# ---------------------------------------------------------------------------------------------
# Built versions


def find_versions(root):
    """bug id -> folder of its built buggy version."""
    out = {}
    if not root.is_dir():
        raise ManifestError("%s: not a folder of built versions" % root)
    for d in sorted(root.iterdir()):
        if not d.is_dir():
            continue
        m = re.fullmatch(r"Lang[-_]?(\d+)b?", d.name)
        bug = int(m.group(1)) if m else None
        props = d / "defects4j.build.properties"
        if bug is None and props.is_file():
            m = re.search(r"^d4j\.bug\.id\s*=\s*(\d+)", props.read_text(errors="replace"), re.M)
            bug = int(m.group(1)) if m else None
        if bug is not None:
            out[bug] = d
    return out


def first_dir(base, names):
    return next((base / n for n in names if (base / n).is_dir()), None)


def layout(vdir, row, lib, meta):
    """(tree, classes, test classes, class path) of one version, or a reason it cannot run."""
    tree = vdir / "tree" if (vdir / "tree").is_dir() else vdir
    classes = first_dir(vdir, CLASSES)
    tests = first_dir(vdir, TEST_CLASSES)
    if classes is None or tests is None:
        return "no compiled classes (looked for %s and %s in %s)" % ("|".join(CLASSES), "|".join(TEST_CLASSES), vdir)
    if not (tree / row["src_dir"]).is_dir():
        return "no source folder %s in %s" % (row["src_dir"], tree)
    jars = lib or (vdir / "d4jlib" if (vdir / "d4jlib").is_dir() else meta.lib())
    if jars is None:
        return "no Lang jars (%s): give --lib" % ", ".join(LIB_JARS)
    cp = [tree / r for r in ("src/main/resources", "src/test/resources") if (tree / r).is_dir()]
    cp.append(tree / row["test_dir"])  # non-Java test fixtures beside the tests
    cp += [jars / j for j in LIB_JARS if (jars / j).is_file()]
    return tree, classes, tests, cp


def tests_of(bug, row, meta):
    """Trigger tests, the relevant test classes, and `!` exclusions of Defects4J's broken tests."""
    triggers = [t.strip() for t in row["trigger_tests"].split(";") if t.strip()]
    classes = meta.relevant_classes(bug)
    if not classes:
        raise ManifestError("Lang-%d: Defects4J lists no relevant tests (relevant_tests/%d)" % (bug, bug))
    wanted = set(classes) | {t.split("::")[0] for t in triggers}
    broken = sorted(t for t in meta.broken_tests(row["fixed_commit"])
                    if t not in triggers and t.split("::")[0] in wanted)
    seen = set()
    out = [t for t in triggers + classes if not (t in seen or seen.add(t))]
    return out + ["!" + t for t in broken], triggers


def add_opens():
    out = []
    for mod in OPEN_MODULES:
        r = subprocess.run(["java", "--describe-module", mod], capture_output=True, text=True)
        if r.returncode != 0:
            raise ManifestError("`java --describe-module %s` failed (a JDK 9+ `java` on PATH is needed): %s"
                                % (mod, r.stderr.strip()))
        out += ["--add-opens=%s/%s=ALL-UNNAMED" % (mod, m) for m in
                re.findall(r"^(?:exports|contains) (\S+)", r.stdout, re.M)]
    return out


# ---------------------------------------------------------------------------------------------
# Manifest


def render_case(bug, row, paths, tests, triggers, jvm_args, timeout, rel):
    tree, classes, test_classes, cp = paths
    where = "Lang-%d" % bug
    half = "odd" if bug % 2 else "even"
    in58 = row.get("prosecutor58_guess", "y") == "y"
    lines = [
        "# %s (%s): %d trigger test(s), %s half, %s the paper's 58" % (
            where, row.get("report_id", ""), len(triggers), half, "in" if in58 else "not in"),
        "[[case]]",
        "name = %s" % toml_str(where),
        "language = \"java\"",
        "kind = %s" % toml_str("defects4j-lang %s%s" % (half, "" if in58 else " not-58")),
        "dir = %s" % toml_str(rel(tree)),
        "src = %s" % toml_str(row["src_dir"]),
        "classes = %s" % toml_str(rel(classes)),
        "test_classes = %s" % toml_str(rel(test_classes)),
        "classpath = %s" % toml_list(rel(p) for p in cp),
        "source_roots = %s" % toml_list([row["src_dir"], row["test_dir"]]),
        "jvm_args = %s" % toml_list(jvm_args),
        "timeout = %g" % timeout,
        "test = %s" % toml_list(tests),
        "failing = %s" % toml_list(triggers),
        "faulty = %s" % toml_list(faulty_entries(row, where)),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], usage=__doc__.split("\n\n")[0][6:])
    ap.add_argument("versions", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--d4j", required=True)
    ap.add_argument("--d4j-rev", default="v3.0.1")
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--bugs", default="all")
    ap.add_argument("--lib", type=Path)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--xmx", default="4g")
    ap.add_argument("--relative", action="store_true")
    return ap.parse_args(argv)


def main(argv):
    a = parse_args(argv)
    try:
        truth = read_truth(a.tsv)
        meta = Metadata(a.d4j, a.d4j_rev)
        versions = find_versions(a.versions)
        jvm_args = ["-Xmx" + a.xmx, *LOCALE_ARGS, *add_opens()]
        base = a.out.resolve().parent
        rel = (lambda p: os.path.relpath(p.resolve(), base)) if a.relative else (lambda p: str(p.resolve()))
        parts = ["# Defects4J Lang, written by scripts/defects4j_manifest.py from %s\n"
                 "# ground truth: %s\n" % (a.versions.resolve(), a.tsv.resolve())]
        n, missing = 0, []
        for bug in select_bugs(a.bugs, truth):
            row = truth[bug]
            paths = layout(versions[bug], row, a.lib, meta) if bug in versions else "not built"
            if isinstance(paths, str):
                missing.append("Lang-%d: %s" % (bug, paths))
                continue
            if not faulty_entries(row, "Lang-%d" % bug):
                missing.append("Lang-%d: no faulty line to score (%s)" % (
                    bug, row.get("prosecutor58_note") or "the ground truth lists none"))
                continue
            tests, triggers = tests_of(bug, row, meta)
            parts.append(render_case(bug, row, paths, tests, triggers, jvm_args, a.timeout, rel))
            n += 1
        for m in missing:
            print("defects4j_manifest: left out %s" % m, file=sys.stderr)
        parts[0] += "".join("# left out: %s\n" % m for m in missing)
        if n == 0:
            raise ManifestError("no bug of --bugs %s has a built version in %s" % (a.bugs, a.versions))
        write(a.out, "\n".join(parts))
        print("defects4j_manifest: %d case(s) -> %s" % (n, a.out), file=sys.stderr)
        return 0
    except ManifestError as e:
        print("defects4j_manifest: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
