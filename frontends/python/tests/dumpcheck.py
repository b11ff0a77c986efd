"""A checker of trace dumps against docs/trace-format.md (used by the tests).

check(dump_dir) returns (errors, stats): the well-formedness rules of the format (declared
ids, consecutive steps, stack discipline, branch outcomes on every branch step, valid
failure steps, heap rows in step order) and, as stats, how many consecutive same-frame step pairs are CFG edges.
"""

import os
import tomllib


def read(d, name):
    rows = []
    p = os.path.join(d, name)
    with open(p, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line or line.startswith("//"):
                continue
            rows.append(line.split("\t"))
    return rows


def check(d):
    errors = []
    with open(os.path.join(d, "manifest.toml"), "rb") as fh:
        man = tomllib.load(fh)
    if man.get("format") != "prosecutor-dump" or man.get("version") != 1:
        errors.append("bad manifest header")
    stmts = {}
    for r in read(d, "stmt.facts"):
        if len(r) != 6:
            errors.append(f"stmt row {r}")
            continue
        if r[0] in stmts:
            errors.append(f"duplicate stmt {r[0]}")
        stmts[r[0]] = r
        if r[2] not in ("assign", "call", "branch", "goto", "return", "throw", "catch", "nop"):
            errors.append(f"bad kind {r}")
        if not r[4].isdigit() or int(r[4]) < 1:
            errors.append(f"bad line {r}")
    methods = {}
    for r in read(d, "method.facts"):
        methods[r[0]] = r
        if r[1] not in ("app", "test"):
            errors.append(f"bad role {r}")
        if r[2] not in stmts or stmts[r[2]][1] != r[0]:
            errors.append(f"bad entry {r}")
    for s in stmts.values():
        if s[1] not in methods:
            errors.append(f"stmt of undeclared method {s}")
    for name, cols in (("def.facts", (0,)), ("use.facts", (0,)), ("actual.facts", (0,)),
                       ("receiver.facts", (0,)), ("loop_head.facts", (0,))):
        for r in read(d, name):
            for c in cols:
                if r[c] not in stmts:
                    errors.append(f"{name}: undeclared stmt {r}")
    cfg = set()
    for r in read(d, "cfg.facts"):
        if r[0] not in stmts or r[1] not in stmts:
            errors.append(f"cfg: undeclared {r}")
            continue
        if stmts[r[0]][1] != stmts[r[1]][1]:
            errors.append(f"cfg: cross-method edge {r}")
        if r[2] not in ("normal", "exceptional"):
            errors.append(f"cfg: bad kind {r}")
        cfg.add((r[0], r[1]))
    for name in ("formal.facts", "this_formal.facts"):
        for r in read(d, name):
            if r[0] not in methods:
                errors.append(f"{name}: undeclared method {r}")
    frames = {}
    for r in read(d, "frame.facts"):
        frames[(r[0], r[1])] = (r[2], None if r[3] == "-" else int(r[3]))
        if r[2] not in methods:
            errors.append(f"frame of undeclared method {r}")
    steps = {}
    for r in read(d, "step.facts"):
        steps.setdefault(r[0], []).append((int(r[1]), r[2], r[3]))
    branch = {}
    for r in read(d, "branch.facts"):
        branch[(r[0], int(r[1]))] = r[2]
        if r[2] not in ("0", "1"):
            errors.append(f"bad outcome {r}")
    stats = {"pairs": 0, "cfg_pairs": 0, "steps": 0, "non_cfg": {}}
    traces = {t.get("trace") for t in man.get("test", []) if t.get("trace")}
    for tr, ss in steps.items():
        if tr not in traces:
            errors.append(f"trace {tr} not in the manifest")
        ss.sort()
        if [s[0] for s in ss] != list(range(len(ss))):
            errors.append(f"{tr}: steps not consecutive")
            continue
        stack = []
        closed = set()
        last_in = {}
        for (i, nid, fr) in ss:
            stats["steps"] += 1
            if nid not in stmts:
                errors.append(f"{tr}:{i}: undeclared stmt {nid}")
                continue
            if (tr, fr) not in frames:
                errors.append(f"{tr}:{i}: undeclared frame {fr}")
                continue
            meth, cs = frames[(tr, fr)]
            if stmts[nid][1] != meth:
                errors.append(f"{tr}:{i}: stmt {nid} is not of frame {fr}'s method {meth}")
            if stmts[nid][2] == "branch" and (tr, i) not in branch:
                errors.append(f"{tr}:{i}: branch step without outcome")
            if stmts[nid][2] != "branch" and (tr, i) in branch:
                errors.append(f"{tr}:{i}: outcome on a non-branch step")
            if i == 0:
                if cs is not None:
                    errors.append(f"{tr}: step 0 not in the root frame")
                stack = [fr]
                last_in[fr] = 0
                continue
            if fr in closed:
                errors.append(f"{tr}:{i}: step in closed frame {fr}")
                continue
            if fr in stack:
                while stack[-1] != fr:
                    closed.add(stack.pop())
            else:
                # entering a new frame: its call step must be a step of a frame on the stack (top after returns)
                if cs is None:
                    errors.append(f"{tr}:{i}: second root frame {fr}")
                    continue
                owner = ss[cs][2] if cs < len(ss) else None
                if owner not in stack:
                    errors.append(f"{tr}:{i}: frame {fr} entered from step {cs} of {owner}, not on the stack")
                    continue
                while stack[-1] != owner:
                    closed.add(stack.pop())
                if cs >= i:
                    errors.append(f"{tr}:{i}: call step {cs} after the step")
                stack.append(fr)
            if fr in last_in:
                prev = ss[last_in[fr]][1]
                stats["pairs"] += 1
                if (prev, nid) in cfg:
                    stats["cfg_pairs"] += 1
                else:
                    k = (prev, nid)
                    stats["non_cfg"][k] = stats["non_cfg"].get(k, 0) + 1
            last_in[fr] = i
    for t in man.get("test", []):
        if t.get("trace") and t.get("failure_step") is not None:
            n = len(steps.get(t["trace"], []))
            if not 0 <= t["failure_step"] < n:
                errors.append(f"{t['id']}: failure_step {t['failure_step']} out of range {n}")
    if os.path.exists(os.path.join(d, "heap.facts")):
        last = {}
        for r in read(d, "heap.facts"):
            if len(r) != 5 or r[4] not in ("def", "use") or not r[1].isdigit():
                errors.append(f"heap: bad row {r}")
                continue
            i = int(r[1])
            if r[0] not in steps or i >= len(steps[r[0]]):
                errors.append(f"heap: step out of range {r}")
            if i < last.get(r[0], -1):
                errors.append(f"heap: rows of {r[0]} not in step order at {r}")
            last[r[0]] = i
    for r in read(d, "bind.facts"):
        if (r[0], r[2]) not in frames:
            errors.append(f"bind: undeclared frame {r}")
    for r in read(d, "edge_coverage.facts"):
        if (r[1], r[2]) not in cfg:
            errors.append(f"edge_coverage: not a cfg edge {r}")
    return errors, stats
