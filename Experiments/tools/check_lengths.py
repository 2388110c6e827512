#!/usr/bin/env python3
"""Size rules of the code style (issue 42.5): no Swift file under Sources/ and no Python file under
python/continualkit/ or Experiments/ over 400 lines, and no function (Swift: func, init, subscript,
computed property; Python: def, nested ones too) over 80 lines.

A ratchet while the older long ones are split: `Experiments/tools/length_baseline.txt` lists
each function and file still over its limit with its length then (a file as the name `<file>`).
CI fails when a function or file not in the list exceeds its limit or a listed one grows; one
that shrank within its limit is reported so its line can be deleted.

    python3 Experiments/tools/check_lengths.py            # check (exit 1 on a violation)
    python3 Experiments/tools/check_lengths.py --list     # every function over 80 lines
    python3 Experiments/tools/check_lengths.py --write-baseline

Lengths count the lines from the declaration to the closing brace (Python: to the body's last
line), comments and blank lines included (what a reader scrolls through). The Swift parser is a
brace counter that skips string literals (also multi-line ones) and comments, Python's is `ast`;
both are checked by python/tests/test_check_lengths.py.
"""
from __future__ import annotations

import ast
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASELINE = os.path.join(REPO, "Experiments", "tools", "length_baseline.txt")
MAX_FUNCTION, MAX_FILE = 80, 400

MODIFIERS = (r"(?:(?:@[\w.]+(?:\([^)]*\))?|public|private(?:\(set\))?|fileprivate(?:\(set\))?|internal|open|static|"
             r"class|final|override|mutating|nonmutating|nonisolated|convenience|required|lazy|dynamic)\s+)*")
DECLARATION = re.compile(r"^\s*" + MODIFIERS + r"(func\s+[^\s(<]+|init[?!]?(?=\s*[(<])|subscript(?=\s*[(<])|var\s+\w+\s*:)")


def code_only(line: str, in_multiline: bool) -> tuple[str, bool]:
    """`line` without string literals and comments, and whether a multi-line string is still open."""
    out, i = [], 0
    while i < len(line):
        if in_multiline:
            end = line.find('"""', i)
            if end < 0:
                return "".join(out), True
            i, in_multiline = end + 3, False
            continue
        if line.startswith('"""', i):
            i, in_multiline = i + 3, True
            continue
        if line.startswith("//", i):
            break
        if line[i] == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        out.append(line[i])
        i += 1
    return "".join(out), in_multiline


def functions(text: str):
    """(name, first line, length) of every function-like body in Swift source `text`."""
    lines = text.split("\n")
    code, open_string = [], False
    for line in lines:
        c, open_string = code_only(line, open_string)
        code.append(c)
    found = []
    for i, c in enumerate(code):
        m = DECLARATION.match(c)
        if not m:
            continue
        depth, started, j = 0, False, i
        while j < len(code):
            # A declaration without a body (protocol requirement, stored property) ends before the
            # next declaration or the enclosing type's closing brace.
            if not started and j > i and (DECLARATION.match(code[j]) or code[j].strip() == "}"):
                break
            for ch in code[j]:
                if ch == "{":
                    depth, started = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if started and depth <= 0:
                break
            if not started and j == i and m.group(1).startswith("var") and "{" not in c:
                break   # a stored property
            j += 1
        if started:
            found.append((m.group(1).split("(")[0].rstrip(" :"), i + 1, j - i + 1))
    return found


def python_functions(text: str):
    """(name, first line, length) of every `def` in Python source `text`, nested ones included."""
    return [(f"def {node.name}", node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


# The folders checked, each with its language's measure (python/build is pip's copy, not source).
TREES = (("Sources", ".swift", functions), (os.path.join("python", "continualkit"), ".py", python_functions),
         ("Experiments", ".py", python_functions))


def scan(root: str):
    """({(path, name): length} of functions and files (name "<file>") over their limits, [])."""
    long_functions, long_files = {}, []
    for tree, suffix, measure in TREES:
        for folder, _, files in os.walk(os.path.join(root, tree)):
            for f in sorted(files):
                if not f.endswith(suffix):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as h:
                    text = h.read()
                n = text.count("\n") + (0 if text.endswith("\n") else 1)
                if n > MAX_FILE:
                    long_functions[(rel, "<file>")] = n
                for name, line, length in measure(text):
                    if length > MAX_FUNCTION:
                        key = (rel, name)
                        long_functions[key] = max(length, long_functions.get(key, 0))
    return long_functions, long_files


def read_baseline() -> dict:
    out = {}
    if os.path.exists(BASELINE):
        for line in open(BASELINE, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                length, path, name = line.split(maxsplit=2)
                out[(path, name.strip())] = int(length)
    return out


def main(argv) -> int:
    long_functions, long_files = scan(REPO)
    if "--list" in argv:
        for (path, name), n in sorted(long_functions.items(), key=lambda kv: -kv[1]):
            print(f"{n:5d} {path} {name}")
        return 0
    if "--write-baseline" in argv:
        with open(BASELINE, "w", encoding="utf-8") as f:
            f.write("# Functions over 80 lines and files over 400 (name <file>) still to split: length, file, name.\n"
                    "# check_lengths.py fails if one grows or a new one appears. Delete a line when it is split.\n")
            for (path, name), n in sorted(long_functions.items()):
                f.write(f"{n} {path} {name}\n")
        print(f"wrote {len(long_functions)} entries to {os.path.relpath(BASELINE, REPO)}")
        return 0
    baseline, problems = read_baseline(), []
    for (path, name), n in sorted(long_functions.items()):
        allowed = baseline.get((path, name))
        what, limit = ("the file", MAX_FILE) if name == "<file>" else (name, MAX_FUNCTION)
        if allowed is None:
            problems.append(f"{path}: {what} is {n} lines (limit {limit}); split it")
        elif n > allowed:
            problems.append(f"{path}: {what} grew to {n} lines (baseline {allowed}, limit {limit}); split it")
    for key in sorted(set(baseline) - set(long_functions)):
        print(f"note: {key[0]}: {key[1]} is within {MAX_FUNCTION} lines now; delete its line from the baseline")
    for p in problems:
        print("error: " + p)
    files = sum(1 for _, name in long_functions if name == "<file>")
    print(f"check_lengths: {len(long_functions) - files} function(s) over {MAX_FUNCTION} lines and {files} file(s) over "
          f"{MAX_FILE} lines ({len(baseline)} entries in the baseline)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
