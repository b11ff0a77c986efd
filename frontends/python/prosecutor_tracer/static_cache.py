"""The static analysis, done ahead on the idle core (docs/frontend-python.md "Static cache").

The traced run analyses every app file under SRC (static facts, and the instrumented code of
each module it imports) and every test file whose code runs: 0.05-0.5 s of a corpus suite's
traced run, paid before its first test. The plain pre-run, which comes first and leaves one
core idle on a machine with two or more, forks a child at configure time that does this work
and writes each result to PROSECUTOR_STATIC_CACHE (a scratch directory of the dump the driver
removes after the traced run). The traced run then loads a result instead of computing it.

A result is used only for the exact question it answers: the same file path, relative path,
role and instrumentation flag, the same source text (its SHA-1), the same interpreter and heap
setting. Anything else (a file the child has not reached yet, one whose role the traced run
decides otherwise) is a miss and is computed as before, so the dump is the same either way
(`tests/test_static_cache.py`).
"""

import hashlib
import marshal
import os
import pickle
import sys

FORMAT = 1
_DIR = os.environ.get("PROSECUTOR_STATIC_CACHE") or None
# skip folders no test or app file lives in (a virtualenv's own folders are skipped by name)
_SKIP_DIRS = ("__pycache__", "node_modules", "site-packages")
_MAX_TEST_FILES = 2000
# lookups answered from the cache and not (the status file reports them, for the tests)
counts = {"hit": 0, "miss": 0}
_filling = False   # in the child that fills the cache: compute everything
# results this process computed ahead of need (prepare_ahead): question -> (stamp, value)
_memo = {}
ahead = {"computed": 0, "hit": 0}


def _heap_on():
    try:
        from . import heap
    except ImportError:
        return False
    return bool(heap.ENABLED)


def _key(kind, path, rel, role, instrument):
    return "\0".join((kind, path, rel, role, repr(instrument)))


def _entry_path(kind, path, rel, role, instrument):
    key = _key(kind, path, rel, role, instrument)
    return os.path.join(_DIR, hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest() + ".pickle")


def _stamp(source):
    return (FORMAT, sys.version, _heap_on(), hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest())


def load(kind, path, rel, role, instrument, source):
    """The stored result for this question, or None (no cache, not there yet, another source)."""
    if _filling:
        return None
    if _memo:
        e = _memo.pop(_key(kind, path, rel, role, instrument), None)
        if e is not None and e[0] == _stamp(source):
            ahead["hit"] += 1
            return e[1]
    if _DIR is None:
        return None
    try:
        with open(_entry_path(kind, path, rel, role, instrument), "rb") as fh:
            stamp, value = pickle.load(fh)
    except Exception:
        stamp, value = None, None
    if stamp != _stamp(source):
        counts["miss"] += 1
        return None
    counts["hit"] += 1
    return value


def store(kind, path, rel, role, instrument, source, value):
    """Writes one result whole (a reader never sees half of it)."""
    target = _entry_path(kind, path, rel, role, instrument)
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            pickle.dump((_stamp(source), value), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except Exception:
        try:
            os.remove(tmp)
        except OSError:
            pass


def load_code(path, rel, source):
    """(code, facts) of an app module as `instrument.compile_instrumented` computes them."""
    v = load("app", path, rel, "app", True, source)
    if v is None or v[0] is None:
        return None
    try:
        return marshal.loads(v[0]), v[1]
    except Exception:
        return None


def load_facts(path, rel, role, instrument, source):
    """The static facts `static_facts.analyze_file` computes for this question."""
    if role == "app" and instrument in (None, True):
        v = load("app", path, rel, "app", True, source)
    else:
        v = load("facts", path, rel, role, instrument, source)
    return None if v is None else v[1]


def load_compiles(path, source):
    """The plugin's compile check of an app file (None: not known; "" compiles; else the
    SyntaxError's line and message as `(lineno, msg)`)."""
    return load("compiles", path, "", "app", None, source)


# ------------------------------------------------------------------ ahead, in the traced run

def prepare_ahead(reg, app, busy):
    """In the traced run while the plain pass it forked runs (session._plain_pass), on the core
    that leaves idle: the facts of the collected test files and the instrumented code of the app
    files `app` (real paths) that the traced run has not analysed yet, kept in memory for the lookups
    above (each used once). Stops as soon as `busy()` is false: it never delays the traced
    tests by more than one file's analysis."""
    from . import instrument, static_facts as sf
    import importlib.util

    def read(path):
        with open(path, "rb") as fh:
            return importlib.util.decode_source(fh.read())

    todo = [(rp, "test") for rp in sorted(reg.test_files)] + [(rp, "app") for rp in app]
    for rp, role in todo:
        if not busy():
            return
        if rp in reg.files or reg.role_of(rp) != role:
            continue
        try:
            source = read(rp)
            rel = reg.rel_of(rp, role)
            if role == "test":
                facts = sf.analyze_source(source, rp, rel, "test", instrument=False)[0]
                _memo[_key("facts", rp, rel, "test", False)] = (_stamp(source), (None, facts))
            else:
                code, facts = instrument.compile_instrumented(source, rp, rel)
                _memo[_key("app", rp, rel, "app", True)] = (_stamp(source), (marshal.dumps(code), facts))
            ahead["computed"] += 1
        except Exception:
            continue


# ------------------------------------------------------------------ the child of the plain run

def fork_prepare(config):
    """Called by the plain run at configure time: with two or more CPUs and a cache directory,
    fork a child that fills it and return at once (the child never returns)."""
    if _DIR is None or not hasattr(os, "fork"):
        return
    try:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    except OSError:
        cpus = os.cpu_count() or 1
    if cpus < 2:
        return
    try:
        patterns = list(config.getini("python_files") or ["test_*.py", "*_test.py"])
    except Exception:
        patterns = ["test_*.py", "*_test.py"]
    import warnings
    try:
        os.makedirs(_DIR, exist_ok=True)
        with warnings.catch_warnings():
            # (3.12+ warns of a fork with threads running; a suite run with -W error must not fail)
            warnings.simplefilter("ignore")
            pid = os.fork()
    except OSError:
        return
    if pid:
        return
    # the child: nothing of pytest's, no output into the plain run's pipes
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        sys.settrace(None)
        sys.setprofile(None)
        _prepare(patterns)
    except BaseException:
        pass
    finally:
        os._exit(0)


def _prepare(patterns):
    global _filling
    _filling = True
    import fnmatch
    import importlib.util
    import types
    from . import instrument, session, static_facts as sf

    src = os.path.realpath(os.environ.get("PROSECUTOR_SRC", os.getcwd()))
    cwd = os.path.realpath(os.getcwd())
    reg = session.registry(src, cwd, os.environ.get("PROSECUTOR_OUT"))

    def read(path):
        with open(path, "rb") as fh:
            return importlib.util.decode_source(fh.read())

    # the app files the traced run analyses (session._app_files, the same walk and patterns)
    app = [(p, os.path.realpath(p))
           for p in session._app_files(types.SimpleNamespace(src=src, reg=reg, patterns=patterns))]
    tests = []
    for p, rp in app:
        if not os.path.isdir(_DIR):
            return   # the driver is done with it
        try:
            source = read(p)
        except Exception:
            continue
        try:
            compile(source, p, "exec", dont_inherit=True)
            store("compiles", p, "", "app", None, source, "")
        except SyntaxError as e:
            store("compiles", p, "", "app", None, source, (e.lineno or 0, e.msg))
            continue
        except Exception:
            continue
        rel = reg.rel_of(rp, "app")
        try:
            code, facts = instrument.compile_instrumented(source, rp, rel)
            store("app", rp, rel, "app", True, source, (marshal.dumps(code), facts))
        except Exception:
            continue
    for root, dirs, files in os.walk(cwd):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                         and not d.endswith(".egg-info") and not os.path.exists(os.path.join(root, d, "pyvenv.cfg")))
        for f in sorted(files):
            if f == "conftest.py" or (f.endswith(".py") and any(fnmatch.fnmatch(f, p) for p in patterns)):
                tests.append(os.path.realpath(os.path.join(root, f)))
        if len(tests) > _MAX_TEST_FILES:
            break
    for rp in tests[:_MAX_TEST_FILES]:
        if not os.path.isdir(_DIR):
            return
        try:
            source = read(rp)
            rel = reg.rel_of(rp, "test")
            facts = sf.analyze_source(source, rp, rel, "test", instrument=False)[0]
            store("facts", rp, rel, "test", False, source, (None, facts))
        except Exception:
            continue
    # (for the tests: the child is done)
    try:
        with open(os.path.join(_DIR, "complete"), "w") as fh:
            fh.write(f"{len(app)} {len(tests)}\n")
    except OSError:
        pass
