#!/usr/bin/env python3
"""Build, check and export the corpus of injected bugs in real PyPI libraries.

    python3 corpus/python/build.py --work DIR [--libs a,b] [--bugs ID,...] [--jobs N]
                                   [--check] [--manifest OUT.toml]
    python3 corpus/python/build.py --stats            # bug counts; no network, no work dir

For every library file (corpus/python/libraries/<name>.toml; format in README.md):

1. the sdist of exactly `pypi==version` is downloaded into DIR/sdists (skipped when present),
   extracted into DIR/pristine/<name> (top-level directory stripped), and `pytest` plus the
   library's `deps` are pip-installed when missing;
2. every selected bug gets a fresh copy DIR/cases/<id>/ of the pristine tree with its edits
   applied (one line replaced by one line, so line numbers stay those of the pristine file);
3. `--check` runs the pristine suite (it must pass, with `deselect`) and every bug's test
   command under a hard time limit, classifies each bug OK or REJECT (with the reason), records
   the failing test ids and their durations in DIR/cases/<id>/.corpus.json, prints a table and
   a summary, and exits 1 if anything was rejected;
4. `--manifest OUT.toml` writes a `prosecutor eval` manifest with one [[case]] per OK bug.

Standard library only (Python >= 3.11); pip is run as a subprocess.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_LIBDIR = HERE / "libraries"

KINDS = (
    "comparison",
    "off-by-one",
    "constant",
    "variable",
    "negation",
    "return-value",
    "argument",
    "mutation",
    "receiver-state",
    "except-branch",
    "two-line",
    "operator",
    "condition",
)

LIB_KEYS = {"name", "pypi", "version", "src", "test", "deps", "deselect", "notes", "bug"}
LIB_REQUIRED = ("name", "pypi", "version", "src", "test")
BUG_KEYS = {"id", "file", "kind", "description", "edits", "tests"}
BUG_REQUIRED = ("id", "file", "kind", "description", "edits")

RUN_TIMEOUT = 120.0  # seconds, per test-command run
MAX_FAIL_FRACTION = 0.30
# Files removed from an extracted sdist: a `.python-version` makes pyenv's `python3` shim pick
# an interpreter that may not exist here (sqlparse ships one).
STRIP_FILES = (".python-version",)


class CorpusError(Exception):
    """A malformed library file or an edit that does not apply."""


class EditMismatch(CorpusError):
    pass


# --------------------------------------------------------------------------------------------
# Library files


@dataclasses.dataclass
class Edit:
    line: int
    original: str
    replacement: str


@dataclasses.dataclass
class Bug:
    id: str
    file: str
    kind: str
    description: str
    edits: list[Edit]
    tests: list[str] | None = None

    @property
    def lines(self) -> list[int]:
        return sorted(e.line for e in self.edits)


@dataclasses.dataclass
class Library:
    name: str
    pypi: str
    version: str
    src: str
    test: list[str]
    deps: list[str]
    deselect: list[str]
    notes: str
    bugs: list[Bug]
    path: Path | None = None


def _req(table: dict, key: str, typ, where: str):
    if key not in table:
        raise CorpusError(f"{where}: missing key `{key}`")
    value = table[key]
    if not isinstance(value, typ):
        raise CorpusError(f"{where}: `{key}` must be {typ.__name__}")
    return value


def _str_list(table: dict, key: str, where: str, default=None) -> list[str] | None:
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise CorpusError(f"{where}: `{key}` must be a list of strings")
    return list(value)


def parse_library(data: dict, where: str, stem: str | None = None) -> Library:
    unknown = set(data) - LIB_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown key(s) {sorted(unknown)}")
    name = _req(data, "name", str, where)
    if stem is not None and name != stem:
        raise CorpusError(f"{where}: name `{name}` differs from the file's stem `{stem}`")
    test = _str_list(data, "test", where)
    if not test:
        raise CorpusError(f"{where}: missing or empty `test`")
    bugs = []
    seen = set()
    for i, raw in enumerate(data.get("bug", [])):
        bwhere = f"{where}: bug #{i + 1}"
        unknown = set(raw) - BUG_KEYS
        if unknown:
            raise CorpusError(f"{bwhere}: unknown key(s) {sorted(unknown)}")
        bid = _req(raw, "id", str, bwhere)
        bwhere = f"{where}: bug {bid}"
        if not bid.startswith(name + "-"):
            raise CorpusError(f"{bwhere}: id must start with `{name}-`")
        if bid in seen:
            raise CorpusError(f"{bwhere}: duplicate id")
        seen.add(bid)
        kind = _req(raw, "kind", str, bwhere)
        if kind not in KINDS:
            raise CorpusError(f"{bwhere}: kind `{kind}` not in {KINDS}")
        edits = []
        raw_edits = _req(raw, "edits", list, bwhere)
        if not 1 <= len(raw_edits) <= 2:
            raise CorpusError(f"{bwhere}: 1 or 2 edits expected")
        for e in raw_edits:
            if not isinstance(e, dict) or set(e) != {"line", "original", "replacement"}:
                raise CorpusError(f"{bwhere}: an edit is {{line, original, replacement}}")
            if not isinstance(e["line"], int) or e["line"] < 1:
                raise CorpusError(f"{bwhere}: edit line must be a positive integer")
            if "\n" in e["original"] or "\n" in e["replacement"]:
                raise CorpusError(f"{bwhere}: an edit replaces one line by one line")
            if e["original"] == e["replacement"]:
                raise CorpusError(f"{bwhere}: edit at line {e['line']} changes nothing")
            edits.append(Edit(e["line"], e["original"], e["replacement"]))
        if len({e.line for e in edits}) != len(edits):
            raise CorpusError(f"{bwhere}: two edits on one line")
        if (kind == "two-line") != (len(edits) == 2):
            raise CorpusError(f"{bwhere}: kind two-line iff two edits")
        bugs.append(
            Bug(
                id=bid,
                file=_req(raw, "file", str, bwhere),
                kind=kind,
                description=_req(raw, "description", str, bwhere),
                edits=edits,
                tests=_str_list(raw, "tests", bwhere),
            )
        )
    return Library(
        name=name,
        pypi=_req(data, "pypi", str, where),
        version=_req(data, "version", str, where),
        src=_req(data, "src", str, where),
        test=test,
        deps=_str_list(data, "deps", where, []),
        deselect=_str_list(data, "deselect", where, []),
        notes=data.get("notes", ""),
        bugs=bugs,
    )


def load_library(path: Path) -> Library:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CorpusError(f"{path}: {e}") from None
    lib = parse_library(data, str(path), stem=path.stem)
    lib.path = path
    return lib


def load_libraries(libdir: Path, names: list[str] | None = None) -> list[Library]:
    files = sorted(Path(libdir).glob("*.toml"))
    if names:
        known = {f.stem for f in files}
        missing = [n for n in names if n not in known]
        if missing:
            raise CorpusError(f"unknown librar{'y' if len(missing) == 1 else 'ies'}: {missing}")
        files = [f for f in files if f.stem in names]
    libs = [load_library(f) for f in files]
    ids: dict[str, str] = {}
    for lib in libs:
        for bug in lib.bugs:
            if bug.id in ids:
                raise CorpusError(f"bug id {bug.id} in both {ids[bug.id]} and {lib.name}")
            ids[bug.id] = lib.name
    return libs


# --------------------------------------------------------------------------------------------
# Edits and test commands


def apply_edits(text: str, edits: list[Edit], where: str = "") -> str:
    """Replace each edit's line (1-based, pristine numbering) by its replacement.

    Raises EditMismatch if a line does not exist or is not exactly `original`. Line endings and
    the final newline are preserved."""
    lines = text.splitlines(keepends=True)
    for e in edits:
        if e.line > len(lines):
            raise EditMismatch(f"{where}:{e.line}: past the end of the file ({len(lines)} lines)")
        current = lines[e.line - 1]
        body = current.rstrip("\r\n")
        ending = current[len(body):]
        if body != e.original:
            raise EditMismatch(
                f"{where}:{e.line}: expected {e.original!r}, the pristine line is {body!r}"
            )
        lines[e.line - 1] = e.replacement + ending
    return "".join(lines)


def check_edits(lib: Library, bug: Bug, root: Path) -> None:
    """Raise EditMismatch unless every edit of `bug` matches the tree at `root`."""
    path = root / lib.src / bug.file
    if not path.is_file():
        raise EditMismatch(f"{lib.src}/{bug.file}: no such file")
    apply_edits(path.read_text(encoding="utf-8"), bug.edits, f"{lib.src}/{bug.file}")


# pytest options whose value is the next argument (so that value is never a test path)
_VALUE_OPTIONS = {"-p", "-k", "-m", "-o", "-c", "-W", "-r", "--deselect", "--ignore",
                  "--ignore-glob", "--rootdir", "--confcutdir", "--junitxml", "--durations",
                  "--maxfail", "--tb", "--basetemp", "--import-mode", "--log-level"}


def _test_path_indexes(argv: list[str], root: Path | None) -> set[int]:
    """Indexes of the arguments of a pytest command that name test paths: after the pytest
    entry point (`pytest`, `.../pytest` or `-m pytest`), not options nor option values, not
    absolute, and existing under `root`."""
    if root is None:
        return set()
    start = None
    for i, a in enumerate(argv):
        if Path(a).name == "pytest" and (i == 0 or argv[i - 1] == "-m" or "/" in a
                                          or a == "pytest"):
            start = i + 1
            break
    if start is None:
        return set()
    found = set()
    i = start
    while i < len(argv):
        a = argv[i]
        if a in _VALUE_OPTIONS:
            i += 2
            continue
        if (not a.startswith("-") and not Path(a).is_absolute()
                and (root / a.split("::")[0]).exists()):
            found.add(i)
        i += 1
    return found


def test_command(lib: Library, bug: Bug | None = None, root: Path | None = None) -> list[str]:
    """The test argv of a library (pristine: bug=None) or a bug.

    `deselect` entries become `--deselect ID`. A bug with `tests` replaces the library
    command's test paths (relative paths after the pytest entry point that name an existing
    file or directory under `root`) by its own; without `root` the bug's paths are appended.
    `-p no:cacheprovider` is added if the command does not say it."""
    argv = list(lib.test)
    if bug is not None and bug.tests:
        drop = _test_path_indexes(argv, root)
        argv = [a for i, a in enumerate(argv) if i not in drop] + list(bug.tests)
    for d in lib.deselect:
        argv += ["--deselect", d]
    if "no:cacheprovider" not in argv:
        argv += ["-p", "no:cacheprovider"]
    return argv


# --------------------------------------------------------------------------------------------
# Download, extract, install


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, text=True, capture_output=True, **kw)


def sdist_path(lib: Library, work: Path) -> Path | None:
    d = work / "sdists"
    if not d.is_dir():
        return None
    norm = re.sub(r"[-_.]+", "[-_.]", re.escape(lib.pypi.lower()).replace("\\", ""))
    pat = re.compile(rf"^{norm}-{re.escape(lib.version)}\.(tar\.gz|zip|tar\.bz2)$", re.I)
    for f in sorted(d.iterdir()):
        if pat.match(f.name):
            return f
    return None


def download(lib: Library, work: Path) -> Path:
    found = sdist_path(lib, work)
    if found:
        return found
    (work / "sdists").mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--no-binary", ":all:", f"{lib.pypi}=={lib.version}",
            "-d", str(work / "sdists")]
    r = _run(argv)
    found = sdist_path(lib, work)
    if r.returncode != 0 or not found:
        raise CorpusError(f"{lib.name}: pip download failed:\n{r.stdout}{r.stderr}")
    return found


def _strip_top(names: list[str]) -> str:
    tops = {n.split("/", 1)[0] for n in names if n.strip("/")}
    if len(tops) != 1:
        raise CorpusError(f"sdist has {len(tops)} top-level entries, expected 1")
    return tops.pop()


def extract(lib: Library, archive: Path, work: Path) -> Path:
    dest = work / "pristine" / lib.name
    stamp = dest / ".corpus-extracted"
    want = f"{archive.name}\n"
    if stamp.is_file() and stamp.read_text() == want:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    (work / "pristine").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{lib.name}-", dir=work / "pristine"))
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                top = _strip_top(z.namelist())
                z.extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                top = _strip_top(t.getnames())
                t.extractall(tmp, filter="data")
        (tmp / top).rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name in STRIP_FILES:
        p = dest / name
        if p.is_file():
            p.unlink()
    stamp.write_text(want)
    return dest


def _installed(req: str) -> bool:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:==\s*([^\s;]+))?\s*$", req)
    if not m:
        return False
    try:
        have = importlib.metadata.version(m.group(1))
    except importlib.metadata.PackageNotFoundError:
        return False
    return m.group(2) is None or have == m.group(2)


def install_deps(lib: Library) -> None:
    missing = [r for r in ["pytest"] + lib.deps if not _installed(r)]
    if not missing:
        return
    r = _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              *missing])
    if r.returncode != 0:
        raise CorpusError(f"{lib.name}: pip install {missing} failed:\n{r.stdout}{r.stderr}")


def prepare(lib: Library, work: Path) -> Path:
    archive = download(lib, work)
    root = extract(lib, archive, work)
    install_deps(lib)
    return root


_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".corpus-extracted")


def make_case(lib: Library, bug: Bug, pristine: Path, work: Path) -> Path:
    """A fresh DIR/cases/<id> = pristine tree with the bug's edits applied."""
    check_edits(lib, bug, pristine)
    dest = work / "cases" / bug.id
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(pristine, dest, ignore=_IGNORE, symlinks=True)
    path = dest / lib.src / bug.file
    path.write_text(
        apply_edits(path.read_text(encoding="utf-8"), bug.edits, f"{lib.src}/{bug.file}"),
        encoding="utf-8",
    )
    return dest


# --------------------------------------------------------------------------------------------
# Running a test command

REPORT_PLUGIN = '''\
"""pytest plugin of corpus/python/build.py: outcomes and durations per test id as JSON."""
import json, os

_tests = {}
_state = {"selected": None, "collect_errors": []}


def pytest_collectreport(report):
    if report.failed:
        _state["collect_errors"].append(report.nodeid or "<session>")


def pytest_collection_finish(session):
    _state["selected"] = len(session.items)


def pytest_runtest_logreport(report):
    t = _tests.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0})
    t["duration"] += report.duration
    if report.failed:
        if report.when == "call" and not hasattr(report, "wasxfail"):
            t["outcome"] = "failed"
        elif t["outcome"] != "failed":
            t["outcome"] = "error"
    elif report.skipped and report.when in ("setup", "call") and t["outcome"] == "passed":
        t["outcome"] = "skipped"


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("CORPUS_REPORT")
    if out:
        with open(out, "w") as f:
            json.dump({"selected": _state["selected"], "collect_errors": _state["collect_errors"],
                       "exitstatus": int(exitstatus), "tests": _tests}, f)
'''


@dataclasses.dataclass
class RunResult:
    status: str  # "OK" or "REJECT" (for a bug); "PASS"/"FAIL" for a pristine run
    reason: str
    selected: int = 0
    failing: list[str] = dataclasses.field(default_factory=list)
    durations: dict[str, float] = dataclasses.field(default_factory=dict)
    wall: float = 0.0
    exitstatus: int | None = None
    output: str = ""


def _plugin_dir(work: Path) -> Path:
    d = work / ".corpus-plugin"
    d.mkdir(parents=True, exist_ok=True)
    p = d / "corpus_report.py"
    if not p.is_file() or p.read_text() != REPORT_PLUGIN:
        p.write_text(REPORT_PLUGIN)
    return d


def run_tests(argv: list[str], cwd: Path, work: Path, timeout: float = RUN_TIMEOUT) -> RunResult:
    """Run `argv` in `cwd` with the reporting plugin; classify nothing yet except hangs and
    collection errors (status "RAN" when tests ran)."""
    plugin = _plugin_dir(work)
    fd, report_path = tempfile.mkstemp(prefix="report-", suffix=".json", dir=plugin)
    os.close(fd)
    os.unlink(report_path)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["CORPUS_REPORT"] = report_path
    env.pop("PYTEST_ADDOPTS", None)
    full = list(argv) + ["-p", "corpus_report"]
    start = time.monotonic()
    proc = subprocess.Popen(full, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return RunResult("REJECT", f"hang (> {timeout:.0f} s)", wall=time.monotonic() - start,
                         output=out)
    wall = time.monotonic() - start
    try:
        with open(report_path) as f:
            rep = json.load(f)
        os.unlink(report_path)
    except (OSError, ValueError):
        return RunResult("REJECT", f"collection or import error (exit {proc.returncode}, "
                         "no report)", wall=wall, exitstatus=proc.returncode, output=out)
    failing = sorted(k for k, v in rep["tests"].items() if v["outcome"] in ("failed", "error"))
    res = RunResult(
        "RAN", "", selected=rep["selected"] or 0, failing=failing,
        durations={k: round(rep["tests"][k]["duration"], 4) for k in failing},
        wall=wall, exitstatus=rep["exitstatus"], output=out,
    )
    if rep["collect_errors"] or rep["exitstatus"] in (2, 3, 4):
        res.status = "REJECT"
        errs = ", ".join(rep["collect_errors"][:3])
        res.reason = f"collection or import error (exit {rep['exitstatus']}; {errs})"
    return res


def classify(res: RunResult) -> RunResult:
    if res.status == "REJECT":
        return res
    n = len(res.failing)
    if n == 0:
        res.status, res.reason = "REJECT", "no failing test"
    elif res.selected and n > MAX_FAIL_FRACTION * res.selected:
        res.status, res.reason = "REJECT", f"too many failures ({n}/{res.selected})"
    else:
        res.status, res.reason = "OK", ""
    return res


def edits_record(bug: Bug) -> list[list]:
    return [[e.line, e.original, e.replacement] for e in bug.edits]


def check_bug(lib: Library, bug: Bug, pristine: Path, work: Path,
              timeout: float = RUN_TIMEOUT) -> RunResult:
    try:
        case = make_case(lib, bug, pristine, work)
    except EditMismatch as e:
        return RunResult("REJECT", f"edit mismatch: {e}")
    argv = test_command(lib, bug, case)
    res = classify(run_tests(argv, case, work, timeout))
    record = {
        "id": bug.id,
        "edits": edits_record(bug),
        "status": res.status,
        "reason": res.reason,
        "argv": argv,
        "selected": res.selected,
        "failing": res.failing,
        "durations": res.durations,
        "wall": round(res.wall, 3),
    }
    (case / ".corpus.json").write_text(json.dumps(record, indent=2) + "\n")
    return res


def check_pristine(lib: Library, pristine: Path, work: Path,
                   timeout: float = RUN_TIMEOUT) -> RunResult:
    res = run_tests(test_command(lib), pristine, work, timeout)
    if res.status == "REJECT":
        res.status = "FAIL"
    elif res.failing:
        res.status, res.reason = "FAIL", f"{len(res.failing)} failing (deselect them)"
    elif res.selected == 0:
        res.status, res.reason = "FAIL", "no test selected"
    else:
        res.status = "PASS"
    return res


# --------------------------------------------------------------------------------------------
# Manifest


def toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def toml_list(xs: list[str]) -> str:
    return "[" + ", ".join(toml_str(x) for x in xs) + "]"


def manifest_case(lib: Library, bug: Bug, case_dir: Path) -> str:
    case_dir = Path(case_dir).resolve()
    faulty = f"{bug.file}:{','.join(str(n) for n in bug.lines)}"
    return "\n".join([
        "[[case]]",
        f"name = {toml_str(bug.id)}",
        f"dir = {toml_str(str(case_dir))}",
        f"src = {toml_str(lib.src)}",
        f"test = {toml_list(test_command(lib, bug, case_dir))}",
        f"faulty = {toml_list([faulty])}",
        f"kind = {toml_str(bug.kind)}",
    ]) + "\n"


def write_manifest(out: Path, entries: list[tuple[Library, Bug, Path]]) -> None:
    parts = [
        "# prosecutor eval manifest written by corpus/python/build.py: injected bugs in PyPI\n"
        "# libraries (corpus/python/README.md). One [[case]] per bug that passed --check.\n"
    ]
    for lib, bug, case_dir in entries:
        parts.append(manifest_case(lib, bug, case_dir))
    Path(out).write_text("\n".join(parts), encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Stats


def stats_markdown(libs: list[Library]) -> str:
    lines = ["| library | PyPI | version | bugs |", "|---|---|---|---:|"]
    for lib in libs:
        lines.append(f"| {lib.name} | {lib.pypi} | {lib.version} | {len(lib.bugs)} |")
    lines.append(f"| **total** | | | **{sum(len(l.bugs) for l in libs)}** |")
    lines.append("")
    head = "| kind | " + " | ".join(l.name for l in libs) + " | total |"
    lines += [head, "|---|" + "---:|" * (len(libs) + 1)]
    for kind in KINDS:
        counts = [sum(b.kind == kind for b in l.bugs) for l in libs]
        lines.append(f"| {kind} | " + " | ".join(str(c) for c in counts) + f" | {sum(counts)} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, help="work directory (downloads, trees, cases)")
    ap.add_argument("--libdir", type=Path, default=DEFAULT_LIBDIR,
                    help="directory of library files (default: %(default)s)")
    ap.add_argument("--libs", help="comma-separated library names (default: all)")
    ap.add_argument("--bugs", help="comma-separated bug ids (default: all)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel test runs")
    ap.add_argument("--check", action="store_true", help="run and classify the bugs")
    ap.add_argument("--manifest", type=Path, help="write a prosecutor eval manifest")
    ap.add_argument("--timeout", type=float, default=RUN_TIMEOUT,
                    help="per-run time limit in seconds (default: %(default)s)")
    ap.add_argument("--stats", action="store_true",
                    help="print bug counts per library and kind (markdown) and exit")
    args = ap.parse_args(argv)

    try:
        libs = load_libraries(args.libdir, args.libs.split(",") if args.libs else None)
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.stats:
        sys.stdout.write(stats_markdown(libs))
        return 0
    if args.work is None:
        ap.error("--work DIR is required (except with --stats)")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    wanted = set(args.bugs.split(",")) if args.bugs else None
    if wanted:
        known = {b.id for l in libs for b in l.bugs}
        unknown = wanted - known
        if unknown:
            print(f"error: unknown bug id(s): {sorted(unknown)}", file=sys.stderr)
            return 2
        libs = [l for l in libs if any(b.id in wanted for b in l.bugs)]
    selected = [(lib, bug) for lib in libs for bug in lib.bugs if not wanted or bug.id in wanted]

    pristine: dict[str, Path] = {}
    for lib in libs:
        try:
            pristine[lib.name] = prepare(lib, work)
        except (CorpusError, OSError, tarfile.TarError) as e:
            print(f"error: {lib.name}: {e}", file=sys.stderr)
            return 2
        print(f"{lib.name} {lib.version}: {pristine[lib.name]}", file=sys.stderr)

    failed = False
    results: dict[str, RunResult] = {}
    if args.check:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            pfut = {lib.name: pool.submit(check_pristine, lib, pristine[lib.name], work,
                                          args.timeout)
                    for lib in libs if not wanted}
            bfut = {bug.id: pool.submit(check_bug, lib, bug, pristine[lib.name], work,
                                        args.timeout)
                    for lib, bug in selected}
            for name, fut in pfut.items():
                res = fut.result()
                print(f"pristine {name}: {res.status} {res.selected} selected, "
                      f"{len(res.failing)} failing, {res.wall:.1f} s {res.reason}")
                for t in res.failing:
                    print(f"    failing: {t}")
                if res.status != "PASS":
                    failed = True
            results = {bid: f.result() for bid, f in bfut.items()}
        print()
        print(f"{'bug':<28} {'kind':<15} {'status':<7} {'fail/sel':>9} {'wall':>6}  reason")
        for lib, bug in selected:
            r = results[bug.id]
            frac = f"{len(r.failing)}/{r.selected}"
            print(f"{bug.id:<28} {bug.kind:<15} {r.status:<7} {frac:>9} {r.wall:>5.1f}s  "
                  f"{r.reason}")
        ok = sum(r.status == "OK" for r in results.values())
        rejected = len(results) - ok
        # Wall times include pytest's start-up and, with --jobs > 1, contention between runs.
        slow = [b for b, r in results.items() if r.wall > 5.0 and r.status == "OK"]
        note = ""
        if slow:
            note = f"; {len(slow)} OK runs took > 5 s wall"
            note += f" (--jobs {args.jobs})" if args.jobs > 1 else f": {', '.join(slow)}"
        print()
        print(f"summary: {len(results)} bugs, {ok} OK, {rejected} rejected{note}")
        if rejected:
            failed = True

    if args.manifest:
        entries = []
        for lib, bug in selected:
            case_dir = work / "cases" / bug.id
            if bug.id in results:
                if results[bug.id].status != "OK":
                    continue
            else:
                # No check in this run: a bug rejected by an earlier --check stays out; an
                # unchecked bug goes in (its case directory is made fresh).
                rec = case_dir / ".corpus.json"
                record = json.loads(rec.read_text()) if rec.is_file() else None
                if record is not None and record.get("edits") != edits_record(bug):
                    record = None  # the bug's edits changed since that check
                if record is not None and record.get("status") != "OK":
                    continue
                try:
                    if record is None:
                        make_case(lib, bug, pristine[lib.name], work)
                    else:
                        check_edits(lib, bug, pristine[lib.name])
                except EditMismatch as e:
                    print(f"skipped {bug.id}: {e}", file=sys.stderr)
                    failed = True
                    continue
            entries.append((lib, bug, case_dir))
        write_manifest(args.manifest, entries)
        print(f"manifest: {args.manifest} ({len(entries)} cases)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
