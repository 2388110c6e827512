"""How check_docs.py compares a marked block with its command's output: each doc line matched, in
order, with the next output line of the same key (first cell of a markdown row, first word of a
text line), equal once whitespace and the volatile values are set aside; `…` elides output lines.
`compare` finds the differences, `updated_lines` rewrites a block from fresh output."""
from __future__ import annotations

import re

#: A doc line that is only one of these elides output lines.
ELISION = {"…", "..."}


def _is_table(line: str) -> bool:
    return line.lstrip().startswith("|")


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith(r"\|"):
        s = s[:-1]
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", s)]
    if all(re.fullmatch(r":?-{3,}:?", c) for c in cells):        # separator row: alignment is style
        return ["---"] * len(cells)
    return cells


def _mask(line: str, volatile: re.Pattern | None) -> str:
    return volatile.sub("<volatile>", line) if volatile else line


def _tokens(line: str, volatile) -> list[str]:
    line = _mask(line, volatile)
    return _cells(line) if _is_table(line) else line.split()


def _key(line: str, volatile) -> str:
    t = _tokens(line, volatile)
    return ("|" if _is_table(line) else "") + (t[0] if t else "")


def _wholly_volatile(line: str, volatile) -> bool:
    return volatile is not None and _mask(line, volatile).strip() == "<volatile>"


def compare(doc_lines: list[str], output: str, volatile: re.Pattern | None):
    """(problems, matches): the doc lines that the output does not show, and for each doc line
    index the output line it matched (for --update)."""
    out = [l.rstrip() for l in output.split("\n")]
    problems, matches = [], {}
    cursor = 0
    elided = any(l.strip() in ELISION for l in doc_lines)
    used = set()
    for n, line in enumerate(doc_lines):
        if not line.strip() or line.strip() in ELISION or _wholly_volatile(line, volatile):
            continue
        key = _key(line, volatile)
        hit = next((k for k in range(cursor, len(out)) if out[k].strip() and _key(out[k], volatile) == key), None)
        if hit is None:
            problems.append(f"line {n + 1} not printed by the command: {line.strip()}")
            continue
        matches[n] = hit
        used.add(hit)
        cursor = hit + 1
        a, b = _tokens(line, volatile), _tokens(out[hit], volatile)
        if a != b:
            diffs = [f"{x!r} → {y!r}" for x, y in zip(a, b) if x != y]
            if len(a) != len(b):
                diffs.append(f"{len(a)} → {len(b)} fields")
            problems.append(f"line {n + 1} differs ({'; '.join(diffs)}):\n      docs:    {line.strip()}\n"
                            f"      command: {out[hit].strip()}")
    if not elided:
        for k, l in enumerate(out):
            if l.strip() and k not in used and not _wholly_volatile(l, volatile):
                problems.append(f"the command prints a line the docs do not show: {l.strip()}")
    return problems, matches


def updated_lines(doc_lines: list[str], output: str, volatile) -> list[str]:
    """The block rewritten from fresh output: without `…` the whole output (a wholly volatile doc
    line kept in front, e.g. the terminal's progress line); with `…` each matched line replaced."""
    out = [l.rstrip() for l in output.rstrip("\n").split("\n")]
    while out and not out[0].strip():
        out.pop(0)
    elided = any(l.strip() in ELISION for l in doc_lines)
    _, matches = compare(doc_lines, output, volatile)
    # A line that differs only in volatile values (wall times) keeps the docs' version, so an
    # update on a slow or busy machine does not rewrite timings it does not check.
    same = {}
    for n, k in matches.items():
        if _tokens(doc_lines[n], volatile) == _tokens(out[k], volatile):
            same[k] = doc_lines[n]
    if not elided:
        kept = [l for l in doc_lines if _wholly_volatile(l, volatile)]
        body = [same.get(k, l) for k, l in enumerate(out) if not (kept and _wholly_volatile(l, volatile))]
        return kept + body
    return [same.get(matches[n], out[matches[n]]) if n in matches else l for n, l in enumerate(doc_lines)]
