"""Offline tests of corpus/bugsinpy/build.py: fix patch -> ground-truth lines (buggy-tree
coordinates), run_test.sh -> pytest ids. Run: python3 -m pytest -q corpus/bugsinpy/test_build.py"""
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build  # noqa: E402

BUGGY = textwrap.dedent("""\
    import os


    def f(a, b):
        # add two numbers
        x = a + b
        if x > 10:
            return 10

        return x


    def g(items):
        total = compute(items,
                        scale=2,
                        offset=1)
        return total
    """)


def truth(patch: str, source: str = BUGGY) -> list[int]:
    blocks = build.parse_patch(textwrap.dedent(patch))["m.py"]
    return build.fault_lines(blocks, source)


def test_changed_line():
    patch = """\
        --- a/m.py
        +++ b/m.py
        @@ -6,3 +6,3 @@ def f(a, b):
             x = a + b
        -    if x > 10:
        +    if x >= 10:
                 return 10
        """
    assert truth(patch) == [7]


def test_deletion():
    patch = """\
        --- a/m.py
        +++ b/m.py
        @@ -6,5 +6,3 @@ def f(a, b):
             x = a + b
        -    if x > 10:
        -        return 10
         
             return x
        """
    assert truth(patch) == [7, 8]


def test_pure_insertion_takes_surrounding_code_lines():
    # new lines between the blank line 9 and `return x` (line 10): the previous code line is 8,
    # the next one 10
    patch = """\
        --- a/m.py
        +++ b/m.py
        @@ -8,3 +8,5 @@ def f(a, b):
                 return 10
         
        +    if x < 0:
        +        return 0
             return x
        """
    assert truth(patch) == [8, 10]


def test_insertion_skips_comments_and_blanks():
    # inserted right after the comment line 5: previous code line is 4 (`def f`), next is 6
    patch = """\
        --- a/m.py
        +++ b/m.py
        @@ -5,2 +5,3 @@ def f(a, b):
             # add two numbers
        +    a = int(a)
             x = a + b
        """
    assert truth(patch) == [4, 6]


def test_continuation_line_maps_to_statement_start():
    patch = """\
        --- a/m.py
        +++ b/m.py
        @@ -15,3 +15,3 @@ def g(items):
                             scale=2,
        -                    offset=1)
        +                    offset=0)
             return total
        """
    assert truth(patch) == [14]


def test_hunk_without_count_and_dashdash_content():
    src = "a = 1\n-- = 2\n"  # not Python; no statement mapping, lines kept as they are
    patch = "--- a/m.py\n+++ b/m.py\n@@ -2 +2 @@\n--- = 2\n+b = 2\n"
    blocks = build.parse_patch(patch)["m.py"]
    assert blocks == [("change", [2], 1)]
    assert build.fault_lines(blocks, src) == [2]


def test_new_file_and_test_files_are_ignored(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(BUGGY)
    patch = textwrap.dedent("""\
        diff --git a/pkg/m.py b/pkg/m.py
        --- a/pkg/m.py
        +++ b/pkg/m.py
        @@ -6,3 +6,3 @@ def f(a, b):
             x = a + b
        -    if x > 10:
        +    if x >= 10:
                 return 10
        diff --git a/tests/test_m.py b/tests/test_m.py
        --- a/tests/test_m.py
        +++ b/tests/test_m.py
        @@ -1,1 +1,2 @@
         import m
        +assert m
        diff --git a/pkg/new.py b/pkg/new.py
        new file mode 100644
        --- /dev/null
        +++ b/pkg/new.py
        @@ -0,0 +1 @@
        +x = 1
        """)
    gt, notes = build.ground_truth(patch, tmp_path, "pkg")
    assert gt == {"pkg/m.py": [7]}
    assert build.rel_to_src("pkg/m.py", "pkg") == "m.py"
    assert build.rel_to_src("black.py", "black.py") == "black.py"


def test_unittest_ids_become_pytest_ids(tmp_path):
    (tmp_path / "tests" / "test_settings").mkdir(parents=True)
    (tmp_path / "tests" / "test_black.py").write_text("")
    (tmp_path / "tests" / "test_settings" / "__init__.py").write_text("")
    ids, bad = build.parse_run_test(
        "python -m unittest -q tests.test_black.BlackTestCase.test_x\n"
        "python -m unittest -q tests.test_settings.__init__.BaseSettingsTest.test_y\n"
        "pytest tests/test_a.py::test_z;py.test tests/test_a.py::test_z\n", tmp_path)
    assert ids == ["tests/test_black.py::BlackTestCase::test_x",
                   "tests/test_settings/__init__.py::BaseSettingsTest::test_y",
                   "tests/test_a.py::test_z"]
    assert bad == []


def test_requirements_utf16():
    text = "aiohttp==3.6.2\n-e git+https://x@1#egg=black\nClick==7.0\n"
    pins = build.parse_requirements(build.decode(text.encode("utf-16")))
    assert pins == {"aiohttp": "3.6.2", "click": "7.0"}
