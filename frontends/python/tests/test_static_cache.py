"""The static analysis done ahead (static_cache.py, docs/frontend-python.md "Static cache"): the
plain pre-run forks a child that analyses the app files and test files and stores each result in
PROSECUTOR_STATIC_CACHE; the traced run loads them instead of analysing. Its dump must be the one
it writes without them, and a result for other source text must not be used."""

import json
import os
import shutil
import subprocess
import sys
import time

import dumpdiff
from test_defects import HERE, PKG_PARENT, base_env, trace, write

FILES = {
    "src/shop/__init__.py": "",
    "src/shop/cart.py": """
        class Cart:
            def __init__(self):
                self.items = []

            def add(self, price, qty=1):
                if qty <= 0:
                    raise ValueError("qty")
                self.items.append((price, qty))

            def total(self):
                s = 0
                for price, qty in self.items:
                    s += price * qty
                return s if s < 100 else s - 5
        """,
    "src/shop/unused.py": """
        def never_imported(x):
            return x and x + 1
        """,
    # (a normalised path: a module imported as tests/../src/shop/cart.py is another question,
    # its code objects carry that file name, and the cache does not answer it)
    "tests/conftest.py": "import os, sys\n"
                         "sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(__file__), '..', 'src')))\n",
    "tests/test_cart.py": """
        from shop.cart import Cart


        def test_small():
            c = Cart()
            c.add(3, 2)
            assert c.total() == 6


        def test_discount():
            c = Cart()
            c.add(60, 2)
            assert c.total() == 120
        """,
}


def prepare(root, cache):
    """The driver's plain pre-run with the cache directory; waits for its child to finish."""
    env = base_env()
    env["PYTHONPATH"] = PKG_PARENT
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider -p prosecutor_tracer.plugin"
    env.update({"PROSECUTOR_MODE": "plain", "PROSECUTOR_PLAIN_OUT": str(root / "plain.json"),
                "PROSECUTOR_SRC": str(root / "src"), "PROSECUTOR_STATIC_CACHE": str(cache)})
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests"], cwd=root, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert time.monotonic() - t0 < 60, p.stdout
    deadline = time.monotonic() + 60
    while not (cache / "complete").exists():
        assert time.monotonic() < deadline, "the plain run's child did not finish the cache"
        time.sleep(0.02)
    return p


def require_fork_and_two_cpus():
    """The child exists only where it can run beside the plain run: fail, naming what is missing."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    assert hasattr(os, "fork"), "the static cache's child needs os.fork (POSIX)"
    assert cpus >= 2, f"the static cache's child needs a second CPU; this process may use {cpus}"


def test_the_traced_run_loads_the_analysis_and_writes_the_same_dump(tmp_path):
    require_fork_and_two_cpus()
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        write(root, FILES)
    cache = tmp_path / "cache"
    p = prepare(b, cache)
    # the plain run's own output is whole: the child wrote nothing into its pipes
    assert "1 failed, 1 passed" in p.stdout, p.stdout
    assert (cache / "complete").read_text().split() == ["3", "2"]   # app files, test files
    # -p keepids: no address is reused, so heap.facts compares exactly (dumpdiff.py)
    env = dict(base_env(pythonpath=HERE), PYTEST_ADDOPTS="-p keepids")
    plain = trace(a, env=env)
    cached = trace(b, env=env, extra={"PROSECUTOR_STATIC_CACHE": str(cache)})
    assert "static_cache" not in plain.status
    # the compile check of the three app files, cart.py and __init__.py imported, unused.py
    # analysed for the static relations, test_cart.py when its code runs (the conftest's
    # module code runs before the first test: it is not analysed)
    assert cached.status["static_cache"] == {"hit": 7, "miss": 0}, cached.status
    bad, _notes = dumpdiff.compare(plain.d, cached.d, masks=(str(a), str(b)))
    assert bad == [], bad
    cached.check()


def test_a_result_for_other_source_is_not_used(tmp_path):
    require_fork_and_two_cpus()
    root = tmp_path / "p"
    write(root, FILES)
    cache = tmp_path / "cache"
    prepare(root, cache)
    # the fault is mended after the cache was made: its stored facts and code are stale
    cart = root / "src" / "shop" / "cart.py"
    cart.write_text(cart.read_text().replace("s if s < 100 else s - 5", "s if s < 200 else s - 5"))
    d = trace(root, extra={"PROSECUTOR_STATIC_CACHE": str(cache)})
    assert d.status["static_cache"]["miss"] >= 2, d.status   # its compile check and its import
    assert {t["id"].split("::")[-1]: t["outcome"] for t in d.manifest["test"]} == {
        "test_small": "pass", "test_discount": "pass"}
    shutil.rmtree(cache)


def test_the_forked_plain_pass_analyses_ahead_and_the_dump_is_the_same(tmp_path):
    """With the plain pass forked after collection (PROSECUTOR_PLAIN_FORK, the driver's default),
    the traced run analyses the test files and the app files it has not imported while the child
    runs (static_cache.prepare_ahead): each result is used, and the dump is the one it writes
    without (PROSECUTOR_AHEAD=0). The child is made slow (its pid is not the conftest's), so that
    the analysis ahead has the time to finish."""
    assert hasattr(os, "fork"), "the plain pass is forked with os.fork (POSIX)"
    a, b = tmp_path / "a", tmp_path / "b"
    files = dict(FILES)
    files["tests/conftest.py"] = FILES["tests/conftest.py"] + (
        "import time, pytest\nPID = os.getpid()\n\n\n@pytest.fixture(autouse=True)\n"
        "def slow_plain_pass():\n    if os.getpid() != PID:\n        time.sleep(0.5)\n    yield\n")
    for root in (a, b):
        write(root, files)
    env = dict(base_env(pythonpath=HERE), PYTEST_ADDOPTS="-p keepids")

    def forked(root, ahead):
        return trace(root, env=env, extra={"PROSECUTOR_PLAIN_FORK": "1", "PROSECUTOR_AHEAD": ahead,
                                           "PROSECUTOR_PLAIN_OUT": str(root / "plain.json"),
                                           "PROSECUTOR_PLAIN_TIMEOUT": "60"})
    without, ahead = forked(a, "0"), forked(b, "1")
    for d in (without, ahead):
        notes = d.manifest["notes"]
        assert notes["plain_run"] is True and notes["plain_run_forked"] is True, notes
        assert notes["tracing_changed"] == [], notes
    assert "static_ahead" not in without.status
    # test_cart.py (the conftest's code runs before the first test: not analysed) and unused.py,
    # never imported, analysed for the static relations
    assert ahead.status["static_ahead"] == {"computed": 2, "hit": 2}, ahead.status
    bad, _notes = dumpdiff.compare(without.d, ahead.d, masks=(str(a), str(b)))
    assert bad == [], bad
    ahead.check()
