"""Progress of a run of the test command (issue 14 §4): with PROSECUTOR_PROGRESS the plugin keeps
`DONE TOTAL FAILED` in that file as tests finish, in the plain and the traced run, which the
Rust driver polls to draw a progress bar on a terminal."""

from test_defects import CONFTEST, trace, write
from test_plain_run import plain_run

FILES = {
    "src/calc.py": """
        def total(xs):
            s = 0
            for x in xs:
                s += x
            return s + 1          # the fault
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_calc.py": """
        from calc import total


        def test_fails():
            assert total([1, 2]) == 3


        def test_fails_too():
            assert total([]) == 0


        def test_passes():
            assert total([1]) > 0
        """,
}


def _read(path):
    text = path.read_text()
    assert text.endswith("\n"), repr(text)
    return [int(x) for x in text.split()]


def test_the_traced_run_writes_its_progress(tmp_path):
    write(tmp_path, FILES)
    progress = tmp_path / "progress"
    d = trace(tmp_path, extra={"PROSECUTOR_PROGRESS": str(progress)})
    assert d.status["ok"], d.proc.stdout
    assert _read(progress) == [3, 3, 2]
    assert not (tmp_path / "progress.tmp").exists()


def test_the_plain_run_writes_its_progress_and_no_file_without_the_variable(tmp_path):
    write(tmp_path, FILES)
    progress = tmp_path / "progress"
    plain_run(tmp_path, extra={"PROSECUTOR_PROGRESS": str(progress)})
    assert _read(progress) == [3, 3, 2]
    progress.unlink()
    plain_run(tmp_path)
    assert not progress.exists()
