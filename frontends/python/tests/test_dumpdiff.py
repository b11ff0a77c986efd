"""The differential check of issue 13 §3 (dumpdiff.py, keepids.py): a fixture traced twice with
the object ids kept alive gives equal dumps (times and paths aside); a changed fact is found.
The check that the tracer's optimisations changed no fact ran these tools on the output of the
tracer before and after them (docs/performance.md "Tracer cost (issue 13 §3)")."""

import os
import shutil

import dumpdiff
from test_defects import HERE, base_env, trace

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "fixtures", "python",
                       "merge_sorted")


def _traced(root):
    shutil.copytree(FIXTURE, root)
    env = base_env(pythonpath=HERE)
    env["PYTEST_ADDOPTS"] = "-p keepids"
    d = trace(root, env=env, extra={"PROSECUTOR_TRACE_ALL": "0", "PROSECUTOR_TEST_TIMEOUT": "120"})
    assert d.status and d.status["ok"], d.proc.stdout
    return d.d


def test_two_runs_are_equal_and_a_changed_fact_is_found(tmp_path):
    a, b = _traced(tmp_path / "a"), _traced(tmp_path / "b")
    masks = [str(tmp_path / "a"), str(tmp_path / "b")]
    bad, _ = dumpdiff.compare(a, b, masks=masks)
    assert bad == [], bad
    with open(os.path.join(a, "heap.facts")) as fh:
        assert fh.read(), "the fixture records heap rows"
    # one step of one trace moved to another frame
    path = os.path.join(b, "step.facts")
    with open(path) as fh:
        rows = fh.read().splitlines()
    f = rows[3].split("\t")
    f[3] = "f99"
    rows[3] = "\t".join(f)
    with open(path, "w") as fh:
        fh.write("\n".join(rows) + "\n")
    bad, _ = dumpdiff.compare(a, b, masks=masks)
    assert len(bad) == 1 and bad[0].startswith("step.facts: differs"), bad
    # --heap-loose compares the def rows only
    bad, notes = dumpdiff.compare(a, a, heap_loose_mode=True)
    assert bad == [] and notes and "def rows equal" in notes[0], notes
