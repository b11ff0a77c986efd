"""truth.py on small Java pairs and on a fake checkout (offline; run by `cargo test`)."""

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import truth  # noqa: E402

BUGGY = """package java_programs;
import java.util.*;

/* A block
   comment */
public class P {
    public static int f(int n) {
        int s = 0;   // a comment
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) {
                s += i;
            } else {
                s -= 1;
            }
        }
        int t = Math.max(s,
                         n - 1);
        return s;
    }
}
"""

FIXED = """package correct_java_programs;
import java.util.*;
import java_programs.Node;

public class P {
    public static int f(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) {
                s += i;
            } else {
                s += 0;
                s -= 1;
            }
        }
        int t = Math.max(s,
                         n + 1);
        return s;   // fixed
    }
}
"""


def test_code_lines_drop_comments_imports_and_blank_lines():
    lines = truth.code_lines(BUGGY)
    assert lines[0] == (6, "public class P {")
    assert (8, "int s = 0;") in lines
    assert all("comment" not in c and not c.startswith(("import", "package")) for _, c in lines)
    # a "//" inside a string is no comment
    assert truth.code_lines('String u = "http://x"; // y\n') == [(1, 'String u = "http://x";')]


def test_an_insertion_blames_the_statements_around_it_and_a_continuation_its_statement():
    faulty, changed, kind = truth.compare(BUGGY, FIXED)
    # `s += 0;` inserted after `} else {` (line 12): the statements before (11) and after (13);
    # `n - 1` (line 17) continues the statement begun on line 16
    assert faulty == [11, 13, 16, 17]
    assert changed == [11, 13, 17]
    assert kind == "insert+replace"


def test_whitespace_inside_a_line_is_no_difference():
    a = "class A {\n  void g() { put(\"+\",1); }\n}\n"
    b = "class A {\n  void g() { put(\"+\", 1); }\n}\n"
    assert truth.compare(a, b) == ([], [], "none")


def test_main_compares_with_the_python_twins(tmp_path, capsys):
    for d in ("java_programs", "correct_java_programs"):
        os.makedirs(tmp_path / d)
    (tmp_path / "java_programs" / "P.java").write_text(BUGGY)
    (tmp_path / "correct_java_programs" / "P.java").write_text(FIXED)
    (tmp_path / "java_programs" / "Q.java").write_text("class Q {\n int a = 1;\n}\n")
    (tmp_path / "correct_java_programs" / "Q.java").write_text("class Q {\n int a = 2;\n}\n")
    (tmp_path / "java_programs" / "Node.java").write_text("class Node {}\n")   # a helper, no program
    py = tmp_path / "py.tsv"
    py.write_text("program\tbug_kind\thunk_kind\np\tsomething\tinsert\nq\tincorrect constant\treplace\n")
    out = tmp_path / "out.tsv"
    status = truth.main([str(tmp_path), str(out), "--python-truth", str(py)])
    rows = {r["program"]: r for r in csv.DictReader(open(out), delimiter="\t")}
    assert sorted(rows) == ["P", "Q"]
    assert rows["Q"]["faulty_lines"] == "2" and rows["Q"]["python_bug_kind"] == "incorrect constant"
    # P's hunks are an insertion and a replacement, its Python twin's an insertion: named, exit 1
    assert status == 1
    assert "P: hunk kind insert+replace, Python's insert" in capsys.readouterr().err
