"""Tests of corpus/python/build.py on a tiny fake library made in a tmp dir (no network).

    python3 -m pytest -q corpus/python/test_build.py
"""

import io
import json
import sys
import tarfile
import tomllib
from contextlib import redirect_stdout
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402  (not `from build import ...`: pytest would collect test_command)

FAKE_INIT = '''\
import math


def add(a, b):
    return a + b


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
'''

FAKE_TESTS = '''\
import pytest
import fakelib


@pytest.mark.parametrize("a", range(7))
def test_add(a):
    assert fakelib.add(a, 1) == a + 1


def test_clamp_low():
    assert fakelib.clamp(-1, 0, 5) == 0


def test_clamp_high():
    assert fakelib.clamp(9, 0, 5) == 5


def test_clamp_mid():
    assert fakelib.clamp(3, 0, 5) == 3


def test_flaky():
    assert False, "fails on the pristine tree too: deselected"
'''


def lib_toml(bugs: str, test=None, deselect=('tests/test_fake.py::test_flaky',)) -> str:
    test = test or [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    return (
        'name = "fakelib"\n'
        'pypi = "fakelib"\n'
        'version = "1.0"\n'
        'src = "fakelib"\n'
        f"test = {json.dumps(test)}\n"
        "deps = []\n"
        f"deselect = {json.dumps(list(deselect))}\n"
        'notes = "a fake library for the tests of build.py"\n\n' + bugs
    )


def bug(n, kind, line, original, replacement, extra=""):
    return (
        "[[bug]]\n"
        f'id = "fakelib-{n:03d}"\n'
        'file = "__init__.py"\n'
        f'kind = "{kind}"\n'
        f'description = "bug {n}"\n'
        f"edits = [ {{ line = {line}, original = {json.dumps(original)}, "
        f"replacement = {json.dumps(replacement)} }} ]\n{extra}\n"
    )


HANG_BUG = bug(5, "return-value", 13, "    return x", "    while True: pass")  # hangs
OK_BUG = bug(1, "return-value", 12, "        return hi", "        return lo")
BUGS = (
    OK_BUG
    + bug(2, "comparison", 9, "    if x < lo:", "    if x <= lo:")  # no test sees it
    + bug(3, "operator", 5, "    return a + b", "    return a - b")  # 7 of 10 fail
    + bug(4, "argument", 1, "import math", "import no_such_module_xyz")  # import error
    + HANG_BUG
    + bug(6, "constant", 12, "        return HI", "        return 0")  # mismatch
    + "[[bug]]\n"
    'id = "fakelib-007"\nfile = "__init__.py"\nkind = "two-line"\ndescription = "two"\n'
    'edits = [\n  { line = 10, original = "        return lo", replacement = "        return hi" },\n'
    '  { line = 12, original = "        return hi", replacement = "        return lo" },\n]\n'
    'tests = ["tests/test_fake.py"]\n'
)


@pytest.fixture
def libdir(tmp_path):
    d = tmp_path / "libraries"
    d.mkdir()
    (d / "fakelib.toml").write_text(lib_toml(BUGS))
    return d


@pytest.fixture
def pristine(tmp_path):
    root = tmp_path / "tree"
    (root / "fakelib").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "fakelib" / "__init__.py").write_text(FAKE_INIT)
    (root / "tests" / "test_fake.py").write_text(FAKE_TESTS)
    return root


def make_sdist(tree: Path, work: Path) -> Path:
    (work / "sdists").mkdir(parents=True, exist_ok=True)
    archive = work / "sdists" / "fakelib-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(tree, arcname="fakelib-1.0")
        info = tarfile.TarInfo("fakelib-1.0/.python-version")
        data = b"some-pyenv-env\n"
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return archive


# ------------------------------------------------------------------------------------------
# Library files


def test_load_library(libdir):
    lib = build.load_library(libdir / "fakelib.toml")
    assert (lib.name, lib.pypi, lib.version, lib.src) == ("fakelib", "fakelib", "1.0", "fakelib")
    assert lib.deselect == ["tests/test_fake.py::test_flaky"]
    assert [b.id for b in lib.bugs] == [f"fakelib-{i:03d}" for i in range(1, 8)]
    two = lib.bugs[6]
    assert two.kind == "two-line" and two.lines == [10, 12]
    assert two.tests == ["tests/test_fake.py"]
    assert lib.bugs[0].tests is None


@pytest.mark.parametrize(
    "text, message",
    [
        (lib_toml(OK_BUG).replace('version = "1.0"\n', ""), "missing key `version`"),
        (lib_toml(OK_BUG) + "colour = 1\n", "unknown key"),
        (lib_toml(OK_BUG.replace("return-value", "typo")), "kind `typo`"),
        (lib_toml(OK_BUG.replace('"fakelib-001"', '"other-001"')), "must start with `fakelib-`"),
        (lib_toml(OK_BUG + OK_BUG), "duplicate id"),
        (lib_toml(OK_BUG.replace("return-value", "two-line")), "two-line iff two edits"),
        (lib_toml(OK_BUG.replace('"        return lo"', '"        return hi"')), "changes nothing"),
        (lib_toml(OK_BUG).replace('name = "fakelib"', 'name = "other"'), "differs from the file"),
        ("name = [", "fakelib.toml"),
    ],
)
def test_load_library_rejects(tmp_path, text, message):
    path = tmp_path / "fakelib.toml"
    path.write_text(text)
    with pytest.raises(build.CorpusError, match=message.replace("`", ".").replace("(", ".")):
        build.load_library(path)


def test_load_libraries_filters_by_name(libdir):
    (libdir / "other.toml").write_text(
        lib_toml("").replace('name = "fakelib"', 'name = "other"'))
    assert [l.name for l in build.load_libraries(libdir)] == ["fakelib", "other"]
    assert [l.name for l in build.load_libraries(libdir, ["other"])] == ["other"]
    with pytest.raises(build.CorpusError, match="unknown"):
        build.load_libraries(libdir, ["nope"])


# ------------------------------------------------------------------------------------------
# Edits


def test_apply_edits_keeps_line_numbers_and_endings():
    text = "a = 1\r\nb = 2\r\nc = 3"
    edits = [build.Edit(2, "b = 2", "b = 20"), build.Edit(3, "c = 3", "c = 30")]
    assert build.apply_edits(text, edits) == "a = 1\r\nb = 20\r\nc = 30"
    assert build.apply_edits("x\n", [build.Edit(1, "x", "y")]) == "y\n"


def test_apply_edits_mismatch():
    with pytest.raises(build.EditMismatch, match=r"f.py:2: expected 'b = 3'"):
        build.apply_edits("a\nb = 2\n", [build.Edit(2, "b = 3", "b = 4")], "f.py")
    with pytest.raises(build.EditMismatch, match="past the end"):
        build.apply_edits("a\n", [build.Edit(5, "a", "b")], "f.py")
    # whitespace counts
    with pytest.raises(build.EditMismatch):
        build.apply_edits("    x = 1\n", [build.Edit(1, "x = 1", "x = 2")])


def test_make_case(libdir, pristine, tmp_path):
    lib = build.load_library(libdir / "fakelib.toml")
    work = tmp_path / "work"
    two = lib.bugs[6]
    case = build.make_case(lib, two, pristine, work)
    assert case == work / "cases" / "fakelib-007"
    new = (case / "fakelib" / "__init__.py").read_text().splitlines()
    old = FAKE_INIT.splitlines()
    assert len(new) == len(old)
    assert [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b] == [10, 12]
    assert (case / "tests" / "test_fake.py").read_text() == FAKE_TESTS
    # the pristine tree is untouched
    assert (pristine / "fakelib" / "__init__.py").read_text() == FAKE_INIT
    with pytest.raises(build.EditMismatch, match="return HI"):
        build.make_case(lib, lib.bugs[5], pristine, work)


def test_test_command(libdir, pristine):
    lib = build.load_library(libdir / "fakelib.toml")
    deselect = ["--deselect", "tests/test_fake.py::test_flaky"]
    assert build.test_command(lib) == lib.test + deselect  # -p no:cacheprovider already there
    two = lib.bugs[6]
    # the library's test path ("tests", an existing dir) is replaced by the bug's tests
    assert build.test_command(lib, two, pristine) == lib.test[:-1] + ["tests/test_fake.py"] + deselect
    # without a tree to look at, the bug's tests are appended
    assert build.test_command(lib, two) == lib.test + ["tests/test_fake.py"] + deselect
    lib.test = ["pytest", "tests"]
    lib.deselect = []
    assert build.test_command(lib) == ["pytest", "tests", "-p", "no:cacheprovider"]


# ------------------------------------------------------------------------------------------
# Manifest and stats


def test_write_manifest(libdir, pristine, tmp_path):
    lib = build.load_library(libdir / "fakelib.toml")
    work = tmp_path / "work"
    entries = []
    for b in (lib.bugs[0], lib.bugs[6]):
        entries.append((lib, b, build.make_case(lib, b, pristine, work)))
    out = tmp_path / "m.toml"
    build.write_manifest(out, entries)
    cases = tomllib.loads(out.read_text())["case"]
    assert [c["name"] for c in cases] == ["fakelib-001", "fakelib-007"]
    one, two = cases
    assert one["dir"] == str((work / "cases" / "fakelib-001").resolve())
    assert Path(one["dir"]).is_absolute()
    assert one["src"] == "fakelib"
    assert one["faulty"] == ["__init__.py:12"]
    assert two["faulty"] == ["__init__.py:10,12"]
    assert one["kind"] == "return-value" and two["kind"] == "two-line"
    assert one["test"] == lib.test + ["--deselect", "tests/test_fake.py::test_flaky"]
    assert two["test"] == lib.test[:-1] + [
        "tests/test_fake.py", "--deselect", "tests/test_fake.py::test_flaky"]
    assert set(one) == {"name", "dir", "src", "test", "faulty", "kind"}


def test_toml_strings_round_trip():
    s = 'quote " backslash \\ tab \t unicode é'
    assert tomllib.loads(f"x = {build.toml_str(s)}")["x"] == s


def test_stats(libdir):
    out = io.StringIO()
    with redirect_stdout(out):
        assert build.main(["--stats", "--libdir", str(libdir)]) == 0
    text = out.getvalue()
    assert "| fakelib | fakelib | 1.0 | 7 |" in text
    assert "| return-value | 2 | 2 |" in text
    assert "| two-line | 1 | 1 |" in text
    assert "| mutation | 0 | 0 |" in text


# ------------------------------------------------------------------------------------------
# End to end, offline: the sdist is already in DIR/sdists, so nothing is downloaded.


def test_hang(libdir, pristine, tmp_path):
    lib = build.load_library(libdir / "fakelib.toml")
    hang = next(b for b in lib.bugs if b.id == "fakelib-005")
    res = build.check_bug(lib, hang, pristine, tmp_path / "work", timeout=1.0)
    assert res.status == "REJECT" and res.reason.startswith("hang")
    rec = json.loads((tmp_path / "work" / "cases" / "fakelib-005" / ".corpus.json").read_text())
    assert rec["status"] == "REJECT" and rec["failing"] == []


def test_check_and_manifest_end_to_end(libdir, pristine, tmp_path):
    # the hanging bug is checked in test_hang, with a short time limit
    (libdir / "fakelib.toml").write_text(lib_toml(BUGS.replace(HANG_BUG, "")))
    work = tmp_path / "work"
    make_sdist(pristine, work)
    out = io.StringIO()
    manifest = tmp_path / "out.toml"
    with redirect_stdout(out):
        rc = build.main(["--work", str(work), "--libdir", str(libdir), "--check", "--jobs", "2",
                         "--timeout", "60", "--manifest", str(manifest)])
    text = out.getvalue()
    assert rc == 1, text  # some bugs are rejected on purpose
    assert "pristine fakelib: PASS 10 selected, 0 failing" in text
    assert not (work / "pristine" / "fakelib" / ".python-version").exists()

    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("fakelib-")}
    assert " OK " in rows["fakelib-001"] and "1/10" in rows["fakelib-001"]
    assert "no failing test" in rows["fakelib-002"]
    assert "too many failures (7/10)" in rows["fakelib-003"]
    assert "collection or import error" in rows["fakelib-004"]
    assert "fakelib-005" not in rows
    assert "edit mismatch" in rows["fakelib-006"]
    assert " OK " in rows["fakelib-007"] and "2/10" in rows["fakelib-007"]
    assert "summary: 6 bugs, 2 OK, 4 rejected" in text

    rec = json.loads((work / "cases" / "fakelib-001" / ".corpus.json").read_text())
    assert rec["status"] == "OK"
    assert rec["failing"] == ["tests/test_fake.py::test_clamp_high"]
    assert set(rec["durations"]) == set(rec["failing"])
    assert rec["selected"] == 10
    rec4 = json.loads((work / "cases" / "fakelib-004" / ".corpus.json").read_text())
    assert rec4["status"] == "REJECT" and "collection" in rec4["reason"]

    cases = tomllib.loads(manifest.read_text())["case"]
    assert [c["name"] for c in cases] == ["fakelib-001", "fakelib-007"]

    # --manifest alone reuses the recorded statuses (no test runs); the bug whose edit does
    # not apply still makes it exit 1
    manifest2 = tmp_path / "out2.toml"
    with redirect_stdout(io.StringIO()):
        assert build.main(["--work", str(work), "--libdir", str(libdir),
                           "--manifest", str(manifest2)]) == 1
    assert manifest2.read_text() == manifest.read_text()
