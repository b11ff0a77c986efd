#!/usr/bin/env python3
"""Build a development set of real Python bugs from BugsInPy (corpus/bugsinpy/README.md).

For each bug: read BugsInPy's bug.info / run_test.sh / bug_patch.txt / requirements.txt,
materialize the buggy (and fixed) tree from a bare git mirror of the project, install the
project's test dependencies into a shared virtualenv (old pins relaxed where they do not install
on Python 3.11; every relaxation is recorded), optionally check that the BugsInPy failing tests
fail on the buggy tree and pass on the fixed tree, and derive the ground-truth faulty lines from
the fix patch in buggy-tree coordinates. Writes the bug list (bugs.toml) and an eval manifest for
`prosecutor eval`.

Nothing from the fetched repositories is kept in this repository: snapshots are command-line
arguments, everything derived from them goes to --work.
"""
from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = os.environ.get("BUGSINPY_PYTHON", "python3.11")
RUN_TIMEOUT = 240.0      # one pytest run of a case (buggy or fixed tree)
SLOW_SUITE = 60.0        # a case whose buggy-tree run takes longer is cut down to its failing tests' classes

# --------------------------------------------------------------------------------------------
# Per-project configuration.
#
# src:     what is traced as application code, relative to the tree (a file or a directory).
# deps:    distributions the tests of the project need (requirements.txt of BugsInPy is a dump of a
#          whole developer environment: docs, linters, other projects). A dep pinned in the bug's
#          requirements.txt is installed at that pin unless it is listed in `relax`.
# relax:   dep -> the spec installed instead of the old pin, because the pin does not install or
#          does not work on Python 3.11 (no wheel and the sdist does not build, or the old code
#          uses APIs removed from 3.11). Each applied relaxation is recorded per bug.
# extra:   always installed (unpinned test tooling).
# own:     distribution names of the project itself (never installed: the tree is on sys.path
#          because pytest runs as `python -m pytest` in the tree).

PROJECTS: dict[str, dict] = {
    "black": {
        "src": "black.py",
        "deps": ["click", "attrs", "appdirs", "toml", "typed-ast", "regex", "pathspec",
                 "mypy-extensions", "aiohttp", "aiohttp-cors"],
        "relax": {"typed-ast": "typed-ast>=1.5.4", "regex": "regex>=2022.1.18",
                  "aiohttp": "aiohttp>=3.8", "aiohttp-cors": "aiohttp-cors>=0.7",
                  "click": "click>=7.1,<8.1"},
        "extra": ["pytest>=8,<9", "typing-extensions"],
        "own": ["black"],
        # setuptools_scm writes this module at install time; the trees are not installed
        # a fix only in the vendored parser is traced there instead
        "alt_src": ["blib2to3"],
        "generate": {"_black_version.py": 'version = "0+bugsinpy"\n'},
    },
    "fastapi": {
        "src": "fastapi",
        "deps": ["pydantic", "starlette", "requests", "email-validator", "python-multipart",
                 "aiofiles", "sqlalchemy", "orjson", "ujson", "passlib", "pyjwt", "peewee",
                 "async-exit-stack", "async-generator", "databases", "graphene", "itsdangerous",
                 "jinja2", "markupsafe", "pyyaml"],
        # pydantic < 1.10 cannot build the signature of a model with a field aliased to a
        # keyword (fastapi's Schema.not_) on Python >= 3.9.8
        "relax": {"pydantic": {"1.": "pydantic>=1.10,<1.11"}, "orjson": "orjson", "ujson": "ujson", "sqlalchemy": "sqlalchemy<1.4",
                  "pyyaml": "pyyaml", "markupsafe": "markupsafe<2.1", "jinja2": "jinja2<3.1",
                  "databases": "databases<0.6", "graphene": "graphene<3",
                  "email-validator": "email-validator<2", "requests": "requests",
                  "aiofiles": "aiofiles"},
        "extra": ["pytest>=8,<9", "typing-extensions"],
        "own": ["fastapi"],
    },
    "luigi": {
        "src": "luigi",
        "deps": ["tornado", "python-daemon", "python-dateutil", "mock", "boto3", "botocore",
                 "requests", "sqlalchemy", "psutil", "toml", "hdfs", "elasticsearch",
                 "prometheus-client", "docker", "responses", "testfixtures", "nose",
                 "hypothesis", "selenium", "datadog", "pygments"],
        "relax": {"tornado": "tornado>=6,<6.2", "moto": "moto<2", "psutil": "psutil",
                  "sqlalchemy": "sqlalchemy<1.4", "boto3": "boto3", "botocore": "botocore",
                  "docker": "docker", "elasticsearch": "elasticsearch<8",
                  "python-daemon": "python-daemon", "requests": "requests",
                  "hypothesis": "hypothesis<7", "datadog": "datadog", "selenium": "selenium<4",
                  "prometheus-client": "prometheus-client"},
        "extra": ["pytest>=8,<9", "mock", "boto"],
        "own": ["luigi"],
        "compat": True,
    },
    "scrapy": {
        "src": "scrapy",
        "deps": ["twisted", "lxml", "parsel", "w3lib", "queuelib", "cssselect", "pyopenssl",
                 "cryptography", "service-identity", "pydispatcher", "zope.interface", "protego",
                 "testfixtures", "pillow", "six", "itemadapter", "itemloaders", "jmespath",
                 "botocore", "sybil", "pyftpdlib", "brotli", "zstandard", "mitmproxy"],
        "relax": {"twisted": "twisted>=21.7,<23", "lxml": "lxml<5", "pyopenssl": "pyopenssl",
                  "cryptography": "cryptography", "pillow": "pillow<10",
                  "zope.interface": "zope.interface", "brotli": "brotli",
                  "zstandard": "zstandard", "botocore": "botocore",
                  "mitmproxy": None, "service-identity": "service-identity"},
        "extra": ["pytest>=8,<9", "mock", "pytest-twisted"],
        "own": ["scrapy"],
        "compat": True,
    },
    "tornado": {
        "src": "tornado",
        "deps": [],
        "relax": {},
        # pytest >= 8.2 instantiates unittest classes with methodName="runTest" while
        # collecting, which tornado's AsyncTestCase.__init__ of these years does not accept
        "extra": ["pytest>=8,<8.2"],
        "own": ["tornado"],
        "compat": True,
    },
}

# --------------------------------------------------------------------------------------------
# Reading BugsInPy (a checkout or a bare git directory)


class Source:
    """Files of a directory tree or of the HEAD commit of a (bare) git directory."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.git = None
        if (self.path / "projects").is_dir():
            return
        if (self.path / "HEAD").is_file() and (self.path / "objects").is_dir():
            self.git = self.path
        elif (self.path / ".git").exists():
            self.git = self.path / ".git"
        else:
            raise SystemExit(f"{path}: neither a BugsInPy checkout nor a git directory")

    def read(self, rel: str) -> bytes | None:
        if self.git is None:
            p = self.path / rel
            return p.read_bytes() if p.is_file() else None
        r = subprocess.run(["git", "--git-dir", str(self.git), "show", f"HEAD:{rel}"],
                           capture_output=True)
        return r.stdout if r.returncode == 0 else None

    def list_dir(self, rel: str) -> list[str]:
        if self.git is None:
            p = self.path / rel
            return sorted(x.name for x in p.iterdir()) if p.is_dir() else []
        r = subprocess.run(["git", "--git-dir", str(self.git), "ls-tree", "--name-only",
                            f"HEAD:{rel}"], capture_output=True, text=True)
        return r.stdout.split() if r.returncode == 0 else []


def decode(b: bytes) -> str:
    if b[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return b.decode("utf-16")
    if b[:3] == b"\xef\xbb\xbf":
        return b[3:].decode("utf-8")
    return b.decode("utf-8", errors="replace")


def parse_info(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r'\s*([A-Za-z_]+)\s*=\s*"?(.*?)"?\s*$', line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def parse_requirements(text: str) -> dict[str, str]:
    """name (normalized) -> pinned version, for `name==version` lines."""
    pins = {}
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"^([A-Za-z0-9_.\-]+)\s*==\s*([^\s;#]+)", line)
        if m:
            pins[norm(m.group(1))] = m.group(2)
    return pins


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def unittest_to_nodeid(dotted: str, tree: Path) -> str | None:
    """`pkg.mod.Class.test` -> `pkg/mod.py::Class::test` (longest module prefix that is a file)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        mod = "/".join(parts[:i])
        for cand in (mod + ".py", mod + "/__init__.py") if parts[i - 1] != "__init__" else ():
            if (tree / cand).is_file():
                return "::".join([cand] + parts[i:])
        if parts[i - 1] == "__init__" and (tree / (mod + ".py")).is_file():
            return "::".join([mod + ".py"] + parts[i:])
    return None


def parse_run_test(text: str, tree: Path) -> tuple[list[str], list[str]]:
    """The failing test ids of run_test.sh as pytest node ids; and the lines not understood."""
    ids, bad = [], []
    for raw in re.split(r"[;\n]", text):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        toks = line.split()
        if toks[:3] == ["python", "-m", "unittest"] or toks[:3] == ["python3", "-m", "unittest"]:
            args = [t for t in toks[3:] if not t.startswith("-")]
            for a in args:
                nid = unittest_to_nodeid(a, tree)
                (ids if nid else bad).append(nid or line)
        elif toks[0] in ("pytest", "py.test") or toks[:3] in (["python", "-m", "pytest"],):
            args = [t for t in toks[1:] if not t.startswith("-") and t not in ("-m", "pytest")]
            ids += args
        else:
            bad.append(line)
    seen, out = set(), []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out, bad


# --------------------------------------------------------------------------------------------
# Patch -> ground truth (buggy-tree coordinates)


def parse_patch(text: str, deleted: dict[str, dict[int, str]] | None = None
                ) -> dict[str, list[tuple[str, list[int], int]]]:
    """file (old path) -> change blocks: (kind, deleted old lines, insertion point).

    A change block is a maximal run of '-'/'+' lines inside a hunk. kind is "change" when the
    block deletes lines (the deleted lines are listed), "insert" when it only adds lines
    (insertion point k: the new lines go between old lines k and k+1). Hunk line counts are
    followed, so a deleted line that itself starts with "-- " is not taken for a file header."""
    files: dict[str, list] = {}
    cur: str | None = None
    old_no = old_left = new_left = 0
    dels: list[int] = []
    adds = False
    before = 0  # the last old line before the current block

    def flush():
        nonlocal dels, adds
        if cur is not None and (dels or adds):
            files[cur].append(("change", dels, dels[0] - 1) if dels else ("insert", [], before))
        dels, adds = [], False

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if old_left > 0 or new_left > 0:
            if line.startswith("\\"):
                pass
            elif line.startswith("-"):
                dels.append(old_no)
                if deleted is not None and cur is not None:
                    deleted.setdefault(cur, {})[old_no] = line[1:]
                old_no += 1
                old_left -= 1
            elif line.startswith("+"):
                adds = True
                new_left -= 1
            else:  # context (a blank line in a patch may have lost its leading space)
                flush()
                before = old_no
                old_no += 1
                old_left -= 1
                new_left -= 1
            if old_left <= 0 and new_left <= 0:
                flush()
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            p = line[4:].split("\t")[0].strip()
            cur = None if p == "/dev/null" else (p[2:] if p.startswith("a/") else p)
            if cur is not None:
                files.setdefault(cur, [])
            i += 1
        elif line.startswith("@@"):
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            old_no = int(m.group(1))
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            if old_left == 0:
                old_no += 1  # "-k,0": the new lines go after old line k
            before = old_no - 1
        i += 1
    flush()
    return files


def _is_code(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def statement_starts(source: str) -> dict[int, int]:
    """line -> first line of the smallest statement whose span contains it. Decorator lines map
    to themselves; lines outside any statement are absent."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    best: dict[int, tuple[int, int]] = {}  # line -> (span length, first line)
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start, end = node.lineno, node.end_lineno or node.lineno
        for d in getattr(node, "decorator_list", []):
            for ln in range(d.lineno, (d.end_lineno or d.lineno) + 1):
                best[ln] = (-1, d.lineno)
        span = end - start
        for ln in range(start, end + 1):
            if ln not in best or best[ln][0] > span:
                best[ln] = (span, start)
    return {ln: s for ln, (_, s) in best.items()}


def fault_lines(blocks: list[tuple[str, list[int], int]], source: str) -> list[int]:
    """Ground-truth lines of one file: deleted/changed code lines; for a pure insertion the
    nearest code lines before and after the insertion point; each mapped to the first line of
    its statement."""
    text_lines = source.splitlines()
    n = len(text_lines)
    starts = statement_starts(source)
    raw: set[int] = set()

    def code(k: int) -> bool:
        return 1 <= k <= n and _is_code(text_lines[k - 1])

    for kind, deleted, at in blocks:
        hit = [k for k in deleted if code(k)]
        if kind == "change" and hit:
            raw.update(hit)
            continue
        # pure insertion (or a change that only deletes blank/comment lines)
        lo = (min(deleted) - 1) if deleted else at
        hi = (max(deleted) + 1) if deleted else at + 1
        k = lo
        while k >= 1 and not code(k):
            k -= 1
        if k >= 1:
            raw.add(k)
        k = hi
        while k <= n and not code(k):
            k += 1
        if k <= n:
            raw.add(k)
    return sorted({starts.get(k, k) for k in raw})


class PatchMismatch(Exception):
    pass


def source_files(patch: str) -> list[str]:
    """The non-test .py files the fix patch changes (those are reverted to the buggy commit)."""
    return [p for p in parse_patch(patch) if p.endswith(".py") and not is_test_path(p)
            and p != "setup.py"]


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (any(p in ("test", "tests", "testing") for p in parts[:-1])
            or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


def ground_truth(patch: str, tree: Path, src: str) -> tuple[dict[str, list[int]], list[str]]:
    """{file relative to the tree: lines} for the non-test .py files under src; and notes about
    patched source files left out."""
    out, notes = {}, []
    deleted: dict[str, dict[int, str]] = {}
    for path, blocks in parse_patch(patch, deleted).items():
        if not path.endswith(".py") or is_test_path(path) or path == "setup.py":
            continue
        under = path == src or path.startswith(src.rstrip("/") + "/")
        if not under:
            notes.append(f"patched {path} is outside src {src}")
            continue
        f = tree / path
        if not f.is_file():
            notes.append(f"patched {path} not in the buggy tree")
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        tl_ = text.splitlines()
        bad = [k for k, c in deleted.get(path, {}).items()
               if k > len(tl_) or tl_[k - 1].rstrip() != c.rstrip()]
        if bad:
            raise PatchMismatch(f"{path}:{bad[0]}: the patch's deleted line is not in the buggy file")
        lines = fault_lines(blocks, text)
        if lines:
            out[path] = lines
    return out, notes


def rel_to_src(path: str, src: str) -> str:
    """The manifest convention (corpus/python/build.py): FILE relative to src, or src's name
    when src is a file."""
    if path == src:
        return Path(src).name
    return path[len(src.rstrip("/")) + 1:]


# --------------------------------------------------------------------------------------------
# Trees and virtualenvs


def materialize(repo: Path, commit: str, dest: Path, generate: dict[str, str]) -> None:
    if (dest / ".bip-commit").is_file() and (dest / ".bip-commit").read_text().strip() == commit:
        return
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    arch = subprocess.run(["git", "--git-dir", str(repo), "archive", commit],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(arch)) as tf:
        tf.extractall(dest, filter="fully_trusted")
    for rel, text in generate.items():
        if not (dest / rel).exists():
            (dest / rel).write_text(text)
    (dest / ".bip-commit").write_text(commit + "\n")


def make_buggy(repo: Path, commit: str, fixed: Path, dest: Path, files: list[str]) -> None:
    """The buggy tree as BugsInPy defines it: the fixed commit's tree (its tests and test data)
    with the source files of the fix patch as they are in the buggy commit."""
    stamp = f"{commit} {' '.join(files)}"
    if (dest / ".bip-commit").is_file() and (dest / ".bip-commit").read_text().strip() == stamp:
        return
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(fixed, dest, symlinks=True)
    for rel in files:
        r = subprocess.run(["git", "--git-dir", str(repo), "show", f"{commit}:{rel}"],
                           capture_output=True)
        if r.returncode != 0:
            (dest / rel).unlink(missing_ok=True)  # the fix added this file
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(r.stdout)
    (dest / ".bip-commit").write_text(stamp + "\n")


def pip_specs(cfg: dict, pins: dict[str, str]) -> tuple[list[str], list[str]]:
    """(pip specs, relaxations) for the project's deps under the bug's pins."""
    specs, relaxed = [], []
    relax = {}
    for k, v in cfg["relax"].items():
        if isinstance(v, dict):  # by pinned version prefix; other pins are kept
            pin = pins.get(norm(k), "")
            hit = [spec for pre, spec in v.items() if pin.startswith(pre)]
            if hit:
                relax[norm(k)] = hit[0]
        else:
            relax[norm(k)] = v
    for dep in cfg["deps"]:
        n = norm(dep)
        if n in pins and n not in relax:
            specs.append(f"{dep}=={pins[n]}")
        elif n in pins:
            if relax[n] is None:
                relaxed.append(f"{dep}=={pins[n]} -> not installed")
            else:
                specs.append(relax[n])
                relaxed.append(f"{dep}=={pins[n]} -> {relax[n]}")
        elif n in relax and relax[n] is None:
            continue
        else:
            specs.append(relax.get(n) or dep)
    specs += cfg.get("extra", [])
    return specs, relaxed


_venv_locks: dict[str, threading.Lock] = {}
_venv_guard = threading.Lock()


COMPAT_SHIM = '''\
# sitecustomize of corpus/bugsinpy/build.py: names that Python 3.10/3.11 removed and that the
# old project code (not its tests' logic) still imports. Nothing else is changed.
import collections, collections.abc, inspect
for _n in ("Mapping", "MutableMapping", "Sequence", "MutableSequence", "Set", "MutableSet",
           "Callable", "Iterable", "Iterator", "Hashable", "Sized", "Container", "KeysView",
           "ItemsView", "ValuesView", "MappingView", "Generator", "Awaitable", "Coroutine",
           "AsyncIterable", "AsyncIterator"):
    if not hasattr(collections, _n):
        setattr(collections, _n, getattr(collections.abc, _n))
if not hasattr(inspect, "ArgSpec"):
    inspect.ArgSpec = collections.namedtuple("ArgSpec", "args varargs keywords defaults")
if not hasattr(inspect, "getargspec"):
    def getargspec(func):
        s = inspect.getfullargspec(func)
        return inspect.ArgSpec(s.args, s.varargs, s.varkw, s.defaults)
    inspect.getargspec = getargspec
'''
COMPAT_NOTE = ("python 3.11 + sitecustomize shim: collections.<ABC> aliases, "
               "inspect.getargspec/ArgSpec (removed in 3.10/3.11)")


def ensure_venv(work: Path, project: str, specs: list[str], log: Path,
                compat: bool = False) -> tuple[Path | None, str]:
    """A virtualenv with `specs` installed, shared by every bug with the same specs."""
    key = hashlib.sha1("\n".join(sorted(specs) + ([COMPAT_SHIM] if compat else [])).encode()
                       ).hexdigest()[:10]
    with _venv_guard:
        lock = _venv_locks.setdefault(key, threading.Lock())
    with lock:
        vdir, err = _ensure_venv(work, project, specs, log, key)
    if vdir is not None and compat:
        site = next((vdir / "lib").glob("python3*/site-packages"))
        (site / "sitecustomize.py").write_text(COMPAT_SHIM)
    return vdir, err


def _ensure_venv(work: Path, project: str, specs: list[str], log: Path, key: str):
    vdir = work / "venvs" / f"{project}-{key}"
    ok = vdir / ".bip-ok"
    if ok.is_file():
        return vdir, ""
    bad = vdir / ".bip-failed"
    if bad.is_file():
        return None, bad.read_text()
    if vdir.exists():
        shutil.rmtree(vdir)
    vdir.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([PYTHON, "-m", "venv", str(vdir)], check=True)
    (vdir / "specs.txt").write_text("\n".join(specs) + "\n")
    r = subprocess.run([str(vdir / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", *specs],
                       capture_output=True, text=True, timeout=1800)
    log.write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = [l for l in (r.stderr or r.stdout).splitlines() if l.strip()][-3:]
        msg = "does not install: " + " | ".join(tail)[:300]
        bad.write_text(msg)
        return None, msg
    ok.write_text("\n".join(specs) + "\n")
    return vdir, ""


def installed_versions(vdir: Path) -> dict[str, str]:
    r = subprocess.run([str(vdir / "bin" / "python"), "-m", "pip", "list", "--format=json",
                        "--disable-pip-version-check"], capture_output=True, text=True)
    try:
        return {norm(d["name"]): d["version"] for d in json.loads(r.stdout)}
    except ValueError:
        return {}


# --------------------------------------------------------------------------------------------
# Running tests

REPORT_PLUGIN = '''\
"""pytest plugin of corpus/bugsinpy/build.py: outcome per test id as JSON."""
import json, os
_tests, _state = {}, {"selected": 0, "collect_errors": []}
def pytest_collectreport(report):
    if report.failed:
        _state["collect_errors"].append(report.nodeid or "<session>")
def pytest_collection_finish(session):
    _state["selected"] = len(session.items)
def pytest_runtest_logreport(report):
    t = _tests.setdefault(report.nodeid, "passed")
    if report.failed:
        _tests[report.nodeid] = "failed" if report.when == "call" else ("failed" if t == "failed" else "error")
    elif report.skipped and t == "passed" and report.when in ("setup", "call"):
        _tests[report.nodeid] = "skipped"
def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("BIP_REPORT")
    if out:
        with open(out, "w") as f:
            json.dump({"selected": _state["selected"], "collect_errors": _state["collect_errors"],
                       "exitstatus": int(exitstatus), "tests": _tests}, f)
'''


@dataclasses.dataclass
class Run:
    ok: bool                     # a report was written (tests ran)
    reason: str = ""
    tests: dict = dataclasses.field(default_factory=dict)
    wall: float = 0.0
    output: str = ""
    collect_errors: list = dataclasses.field(default_factory=list)


def run_pytest(argv: list[str], cwd: Path, work: Path, timeout: float) -> Run:
    pdir = work / ".plugin"
    pdir.mkdir(parents=True, exist_ok=True)
    (pdir / "bip_report.py").write_text(REPORT_PLUGIN)
    fd, rep = tempfile.mkstemp(prefix="rep-", suffix=".json", dir=pdir)
    os.close(fd)
    os.unlink(rep)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pdir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["BIP_REPORT"] = rep
    env.pop("PYTEST_ADDOPTS", None)
    t0 = time.monotonic()
    p = subprocess.Popen(argv + ["-p", "bip_report"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return Run(False, f"timeout (> {timeout:.0f} s)", wall=time.monotonic() - t0, output=out)
    wall = time.monotonic() - t0
    try:
        data = json.loads(Path(rep).read_text())
        os.unlink(rep)
    except (OSError, ValueError):
        return Run(False, f"pytest did not run (exit {p.returncode})", wall=wall, output=out)
    r = Run(True, tests=data["tests"], wall=wall, output=out,
            collect_errors=[e for e in data["collect_errors"] if e != "<session>"])
    if data["collect_errors"] and not data["tests"]:
        r.ok, r.reason = False, "collection error: " + ", ".join(data["collect_errors"][:3])
    return r


def base_argv(vdir: Path) -> list[str]:
    return [str(vdir / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-p", "no:randomly", "-W", "ignore::DeprecationWarning"]


def test_args(rec: dict) -> list[str]:
    """pytest arguments of a case: its test files minus the tests that fail on the fixed tree
    too (or, when --deselect would be ambiguous, the explicit list of the other tests)."""
    if rec.get("test_ids"):
        return list(rec["test_ids"])
    return (list(rec["test_files"]) + [f"--ignore={f}" for f in rec.get("ignore", [])]
            + [f"--deselect={t}" for t in rec.get("deselect", [])])


def matches(nodeid: str, wanted: str) -> bool:
    """pytest id `nodeid` is (a parametrization / a method of) BugsInPy id `wanted`."""
    return nodeid == wanted or nodeid.startswith(wanted + "[") or nodeid.startswith(wanted + "::")


def last_error(out: str) -> str:
    lines = [l for l in out.splitlines() if re.match(r"^(E |ERROR|\w*Error)", l)]
    return (lines[-1] if lines else (out.strip().splitlines() or [""])[-1])[:200]


# --------------------------------------------------------------------------------------------
# One bug


def process_bug(bip: Source, project: str, n: int, repo: Path, work: Path,
                check: bool) -> dict:
    cfg = PROJECTS[project]
    base = f"projects/{project}/bugs/{n}"
    rec: dict = {"project": project, "bug": n, "status": "dropped", "src": cfg["src"]}
    info = parse_info(decode(bip.read(f"{base}/bug.info") or b""))
    patch = decode(bip.read(f"{base}/bug_patch.txt") or b"")
    run_test = decode(bip.read(f"{base}/run_test.sh") or b"")
    reqs = decode(bip.read(f"{base}/requirements.txt") or b"")
    rec["buggy_commit"] = info.get("buggy_commit_id", "")
    rec["fixed_commit"] = info.get("fixed_commit_id", "")
    rec["bugsinpy_python"] = info.get("python_version", "")
    name = f"{project}-{n}"
    buggy = work / "cases" / name
    fixed = work / "fixed" / name
    try:
        materialize(repo, rec["fixed_commit"], fixed, cfg.get("generate", {}))
        make_buggy(repo, rec["buggy_commit"], fixed, buggy, source_files(patch))
    except subprocess.CalledProcessError as e:
        rec["reason"] = f"commit not in the mirror: {(e.stderr or b'').decode(errors='replace')[:120]}"
        return rec
    ids, bad = parse_run_test(run_test, buggy)
    rec["bugsinpy_tests"] = ids
    if bad:
        rec["reason"] = "run_test.sh not understood: " + "; ".join(bad)[:200]
        return rec
    try:
        for src in [cfg["src"]] + cfg.get("alt_src", []):
            gt, notes = ground_truth(patch, buggy, src)
            if gt:
                break
    except PatchMismatch as e:
        rec["reason"] = str(e)
        return rec
    if gt:
        rec["src"] = src
    if notes:
        rec["notes"] = notes
    rec["faulty"] = [f"{rel_to_src(p, rec['src'])}:{k}" for p, ks in sorted(gt.items())
                     for k in ks]
    if not gt:
        rec["reason"] = "the fix changes no non-test source line under src"
        return rec
    pins = {k: v for k, v in parse_requirements(reqs).items()
            if k not in {norm(o) for o in cfg["own"]}}
    specs, relaxed = pip_specs(cfg, pins)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    compat = cfg.get("compat", False)
    if compat:
        relaxed.insert(0, COMPAT_NOTE)
    vdir, err = ensure_venv(work, project, specs, logs / f"pip-{name}.log", compat)
    if vdir is None:
        rec["reason"] = err
        rec["relaxed"] = relaxed
        return rec
    inst = installed_versions(vdir)
    for dep, ver in sorted(pins.items()):
        if dep in inst and inst[dep] != ver and not any(r.startswith(dep) for r in relaxed):
            relaxed.append(f"{dep}=={ver} -> {inst[dep]} (resolver)")
    rec["relaxed"] = relaxed
    rec["venv"] = vdir.name
    files = sorted({i.split("::")[0] for i in ids})
    rec["test_files"] = files
    if not check:
        prev = work / "results" / f"{name}.json"
        if prev.is_file():
            old = json.loads(prev.read_text())
            if old.get("status") == "ok" and old.get("faulty") == rec["faulty"]:
                old["venv_path"] = str(vdir)
                return old
        rec["reason"] = "not checked (run with --check)"
        return rec
    argv = base_argv(vdir)
    rec = check_bug(rec, argv, files, ids, buggy, fixed, work, logs, name)
    if rec.get("reason") == "no passing test in the test file(s)":
        # widen to the test files' directory so that the localizer gets passing tests
        wider = sorted({str(Path(f).parent) for f in files})
        rec2 = check_bug(dict(rec, reason=""), argv, wider, ids, buggy, fixed, work, logs, name)
        if rec2["status"] == "ok":
            rec2["notes"] = rec2.get("notes", []) + [
                "no passing test in the BugsInPy test file(s): runs their whole directory"]
            rec = rec2
        else:
            rec["reason"] += f"; with the directory {wider[0]}: {rec2['reason']}"
    if rec["status"] != "ok":
        return rec
    (work / "results").mkdir(parents=True, exist_ok=True)
    (work / "results" / f"{name}.json").write_text(json.dumps(rec, indent=1))
    rec["venv_path"] = str(vdir)
    return rec


def check_bug(rec: dict, argv: list[str], files: list[str], ids: list[str], buggy: Path,
              fixed: Path, work: Path, logs: Path, name: str) -> dict:
    rec = dict(rec)
    rec["test_files"] = files
    rec.pop("test_ids", None)
    # fixed tree: the listed tests must pass; tests that fail there too are deselected
    rf = run_pytest(argv + files + ["--continue-on-collection-errors"], fixed, work, RUN_TIMEOUT)
    (logs / f"fixed-{name}.log").write_text(rf.output)
    rec["ignore"] = sorted(e.split("::")[0] for e in rf.collect_errors if e.split("::")[0] not in files)
    if not rf.ok:
        rec["reason"] = f"fixed tree: {rf.reason}: {last_error(rf.output)}"
        return rec
    listed = {t: o for t, o in rf.tests.items() if any(matches(t, w) for w in ids)}
    if not listed:
        rec["reason"] = "the BugsInPy tests are not collected by pytest on the fixed tree"
        return rec
    bad_fixed = sorted(t for t, o in listed.items() if o in ("failed", "error"))
    if bad_fixed:
        rec["reason"] = (f"fails on fixed too ({len(bad_fixed)}/{len(listed)}): "
                         f"{bad_fixed[0]}: {last_error(rf.output)}")
        return rec
    broken = sorted(t for t, o in rf.tests.items() if o in ("failed", "error"))
    rec["deselect"] = broken
    kept = [t for t in rf.tests if t not in broken]
    if any(k.startswith(b) for b in broken for k in kept):
        # pytest's --deselect is a prefix match (test_x would drop test_x_y too): name the
        # tests to run instead
        rec["test_ids"] = sorted(kept)
    rb = run_pytest(argv + test_args(rec), buggy, work, RUN_TIMEOUT)
    (logs / f"buggy-{name}.log").write_text(rb.output)
    if not rb.ok:
        rec["reason"] = f"buggy tree: {rb.reason}: {last_error(rb.output)}"
        return rec
    failing = sorted(t for t, o in rb.tests.items() if o in ("failed", "error"))
    listed_fail = [t for t in failing if any(matches(t, w) for w in ids)]
    if not listed_fail:
        rec["reason"] = "does not fail on buggy (the BugsInPy tests pass)"
        return rec
    passing = sorted(t for t, o in rb.tests.items() if o == "passed")
    if not passing:
        rec["reason"] = "no passing test in the test file(s)"
        return rec
    if rb.wall > 2 * SLOW_SUITE:
        rec["reason"] = f"the test run takes too long ({rb.wall:.0f} s)"
        return rec
    rec["status"] = "ok"
    rec.pop("reason", None)
    rec["failing"] = failing
    rec["n_passing"] = len(passing)
    rec["wall"] = round(rb.wall, 1)
    if rb.wall > SLOW_SUITE:
        rec["notes"] = rec.get("notes", []) + [f"suite run takes {rb.wall:.0f} s"]
    return rec


# --------------------------------------------------------------------------------------------
# Output


def tq(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def tl(xs: list) -> str:
    return "[" + ", ".join(tq(str(x)) if not isinstance(x, int) else str(x) for x in xs) + "]"


BUG_KEYS = ["project", "bug", "status", "reason", "src", "faulty", "failing", "bugsinpy_tests",
            "test_files", "ignore", "deselect", "test_ids", "n_passing", "wall", "relaxed", "notes", "buggy_commit",
            "fixed_commit", "bugsinpy_python", "venv"]


def bug_toml(rec: dict) -> str:
    out = ["[[bug]]"]
    for k in BUG_KEYS:
        if k not in rec or rec[k] in (None, "", []) and k not in ("faulty",):
            continue
        v = rec[k]
        if isinstance(v, list):
            out.append(f"{k} = {tl(v)}")
        elif isinstance(v, (int, float)):
            out.append(f"{k} = {v}")
        else:
            out.append(f"{k} = {tq(str(v))}")
    return "\n".join(out) + "\n"


def load_bugs(path: Path) -> dict[tuple[str, int], dict]:
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text())
    return {(b["project"], b["bug"]): b for b in data.get("bug", [])}


def write_bugs(path: Path, recs: dict[tuple[str, int], dict]) -> None:
    head = ("# BugsInPy bugs tried by corpus/bugsinpy/build.py (README.md there). One [[bug]] per\n"
            "# bug: status ok (reproduces on Python 3.11: the failing tests fail on the buggy tree\n"
            "# and pass on the fixed tree) or dropped with the reason. faulty = FILE:LINE in the\n"
            "# buggy tree, FILE relative to src (src's name when src is a file).\n")
    body = [bug_toml(recs[k]) for k in sorted(recs)]
    path.write_text(head + "\n" + "\n".join(body))


def manifest_case(rec: dict, work: Path) -> str:
    case_dir = (work / "cases" / f"{rec['project']}-{rec['bug']}").resolve()
    vdir = (work / "venvs" / rec["venv"]).resolve()
    test = base_argv(vdir) + test_args(rec)
    return "\n".join([
        "[[case]]",
        f"name = {tq(rec['project'] + '-' + str(rec['bug']))}",
        f"dir = {tq(str(case_dir))}",
        f"src = {tq(rec['src'])}",
        f"test = {tl(test)}",
        f"faulty = {tl(rec['faulty'])}",
        'kind = "real"',
    ]) + "\n"


def write_manifest(out: Path, recs: list[dict], work: Path) -> None:
    parts = ["# prosecutor eval manifest written by corpus/bugsinpy/build.py: real bugs from\n"
             "# BugsInPy that reproduce on Python 3.11 (corpus/bugsinpy/README.md).\n"]
    parts += [manifest_case(r, work) for r in recs]
    out.write_text("\n".join(parts))


def reason_class(reason: str) -> str:
    r = reason.lower()
    if "collection error" in r or "did not run" in r:
        return "does not import/collect on 3.11"
    if "does not install" in r:
        return "does not install"
    if r.startswith("fails on fixed"):
        return "fails on fixed too"
    if r.startswith("does not fail on buggy"):
        return "does not fail on buggy"
    if "timeout" in r or "too long" in r:
        return "timeout / too slow"
    if "no passing test" in r:
        return "no passing test"
    if "not collected" in r:
        return "test not found"
    if "no non-test source line" in r:
        return "fix outside src"
    return "other"


def summary_markdown(recs: dict) -> str:
    """The README's results table: ok/dropped per project and the drop reasons by class."""
    projects = sorted({r["project"] for r in recs.values()})
    classes = sorted({reason_class(r.get("reason", "")) for r in recs.values()
                      if r["status"] != "ok"})
    head = "| project | tried | ok | dropped | " + " | ".join(classes) + " |"
    out = [head, "|---|" + "---:|" * (3 + len(classes))]
    tot = [0] * (3 + len(classes))
    for p in projects:
        rs = [r for r in recs.values() if r["project"] == p]
        row = [len(rs), sum(r["status"] == "ok" for r in rs), sum(r["status"] != "ok" for r in rs)]
        row += [sum(r["status"] != "ok" and reason_class(r.get("reason", "")) == c for r in rs)
                for c in classes]
        tot = [a + b for a, b in zip(tot, row)]
        out.append(f"| {p} | " + " | ".join(map(str, row)) + " |")
    out.append("| **total** | " + " | ".join(f"**{x}**" for x in tot) + " |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bugsinpy", type=Path)
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--projects", default=",".join(PROJECTS))
    ap.add_argument("--bugs", default="", help="comma-separated bug numbers (or project-n ids)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="run the tests on buggy and fixed trees")
    ap.add_argument("--manifest", type=Path)
    ap.add_argument("--bugs-toml", type=Path, default=HERE / "bugs.toml",
                    help="bug list to update (default: corpus/bugsinpy/bugs.toml)")
    ap.add_argument("--summary", action="store_true",
                    help="print the results table of the bug list (markdown) and exit")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary_markdown(load_bugs(args.bugs_toml)), end="")
        return 0
    if args.bugsinpy is None or args.work is None:
        ap.error("--bugsinpy and --work are required")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    bip = Source(args.bugsinpy)
    repos = {}
    for r in args.repo:
        k, _, v = r.partition("=")
        repos[k] = Path(v)
    projects = [p for p in args.projects.split(",") if p]
    wanted = [b for b in args.bugs.split(",") if b]
    jobs = []
    for p in projects:
        if p not in PROJECTS:
            raise SystemExit(f"unknown project {p} (known: {', '.join(PROJECTS)})")
        if p not in repos:
            raise SystemExit(f"--repo {p}=PATH missing")
        nums = sorted(int(x) for x in bip.list_dir(f"projects/{p}/bugs") if x.isdigit())
        for n in nums:
            if wanted and str(n) not in wanted and f"{p}-{n}" not in wanted:
                continue
            jobs.append((p, n))
    # venvs are built once per spec set: prepare them serially, then run bugs in parallel
    recs = load_bugs(args.bugs_toml)
    results: dict[tuple[str, int], dict] = {}

    def one(job):
        p, n = job
        t0 = time.monotonic()
        try:
            rec = process_bug(bip, p, n, repos[p], work, args.check)
        except Exception as e:  # noqa: BLE001 - one bug's failure must not stop the others
            rec = {"project": p, "bug": n, "status": "dropped", "src": PROJECTS[p]["src"],
                   "reason": f"build error: {type(e).__name__}: {e}"[:300]}
        print(f"{p}-{n}: {rec['status']} {rec.get('reason', '')} "
              f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
        return job, rec

    # group by venv spec so two workers never build the same venv
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        by_project: dict[str, list] = {}
        for j in jobs:
            by_project.setdefault(j[0], []).append(j)
        # first bug of each project alone (builds the common venv), then the rest
        firsts = [js[0] for js in by_project.values()]
        for job, rec in ex.map(one, firsts):
            results[job] = rec
        rest = [j for js in by_project.values() for j in js[1:]]
        for job, rec in ex.map(one, rest):
            results[job] = rec
    for k, rec in results.items():
        if not args.check and rec["status"] != "ok" and k in recs and \
                recs[k].get("reason") != "not checked (run with --check)":
            continue  # keep the checked verdict of an earlier --check run
        recs[k] = {kk: v for kk, v in rec.items() if kk != "venv_path"}
    write_bugs(args.bugs_toml, recs)
    if args.manifest:
        ok = [r for k, r in sorted(recs.items()) if r["status"] == "ok" and r["project"] in projects
              and (work / "venvs" / r.get("venv", "-")).is_dir()]
        write_manifest(args.manifest, ok, work)
        print(f"manifest: {args.manifest} ({len(ok)} cases)", file=sys.stderr)
    counts: dict[str, list[int]] = {}
    for r in recs.values():
        c = counts.setdefault(r["project"], [0, 0])
        c[0 if r["status"] == "ok" else 1] += 1
    for p, (a, b) in sorted(counts.items()):
        print(f"{p}: {a} ok, {b} dropped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
