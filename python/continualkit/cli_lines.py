"""What the `continual` command prints, as Python values: its `--plain` progress lines, the line
naming the results file, and its one-line error for a refused experiment file. The driver
(`continualkit.run` / `continualkit.sweep`) reads these from the child's output.

The formats (docs/sweeps-and-clusters.md, `ProgressPrinter` and `ConfigError` in the Swift sources):

    writing results/x.h5 (3 run(s), 0 already there)                   run: file and run count
    sweep x: 24 runs, 0 already in results/x.h5, jobs 2                sweep (`(shard K/N)` after x)
    [12/24] completed naive_lr=0.1_seed=3 4d1cca1722f7fef8 ACC 61.11% 0.07 s · ETA 1s
    [3/24] diverged lr=10 0123456789abcdef diverged 0.01 s · ETA 1s — loss is NaN at …
      tuning: 40/120 selection runs
      tuning: 130/140 selection runs so far (up to 560)
    results: results/x.h5 (24 written now, 0 already there)
    error: FILE: .model.hiden: unknown key "hiden" (did you mean `hidden`?); allowed keys: …
    error: FILE: line 2, column 1: unexpected end of the file, expected "," or "}"

`[done/total]` counts this invocation's runs (a resumed file's earlier runs are not in `total`).
`continual run` logs about ten such lines in all (the first three, every failure and the last);
`continual sweep` logs one per run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_PROGRESS = re.compile(
    r"^\[(?P<done>\d+)/(?P<total>\d+)\] (?P<status>\S+) (?P<name>.+) (?P<run_id>[0-9a-f]{8,64}) "
    r"(?:ACC (?P<acc>[-+0-9.eE]+|nan|inf)%|(?P<word>\S+)) (?P<seconds>[-+0-9.eE]+|nan|inf) s"
    r"(?: · ETA (?P<eta>\S+))?(?: — (?P<message>.*))?$")
_RUN_HEADER = re.compile(r"^writing (?P<path>.+) \((?P<total>\d+) run\(s\), (?P<already>\d+) already there\)$")
_SWEEP_HEADER = re.compile(r"^sweep (?P<name>.+?)(?: \(shard [^)]*\))?: (?P<total>\d+) runs, "
                           r"(?P<already>\d+) already in (?P<path>.+), jobs \d+$")
_RESULTS = re.compile(r"^results: (?P<path>.+) \((?P<written>\d+) written now, (?P<already>\d+) already there\)$")
_TUNING = re.compile(r"^\s*tuning: (?P<done>\d+)/(?P<total>\d+) selection runs(?: so far \(up to \d+\))?$")
# A key path as `formatCodingPath` writes it: `.key`, `[index]`, repeated; a key may hold any
# character but the separators, so `.a b` and `.optimizer.lr` both parse.
_KEY_PATH = re.compile(r"^(?P<path>(?:\.[^.\[\]:]+|\[\d+\])+|\(top level\)): (?P<message>.*)$", re.S)
_LINE_COLUMN = re.compile(r"^line (?P<line>\d+), column (?P<column>\d+): (?P<message>.*)$", re.S)
_CONTEXT = re.compile(r" \((?P<context>(?:variant|run|sweep point) .*)\)$")
_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class RunEvent:
    """One finished run as a progress line reports it. `acc` is a fraction (0.6111), None when the
    run did not complete; `message` says why a run failed or diverged."""
    done: int
    total: int
    status: str
    name: str
    run_id: str
    acc: Optional[float]
    seconds: float
    message: str = ""


@dataclass(frozen=True)
class Header:
    """The first line of `run` / `sweep`: the results file (as printed: relative to the child's
    working directory) and how many runs the experiment has and how many were already there."""
    path: str
    total: int
    already: int


def parse_progress(line: str) -> Optional[RunEvent]:
    """The `[done/total] …` line of one finished run, or None for any other line."""
    m = _PROGRESS.match(line.rstrip("\n"))
    if not m:
        return None
    acc = float(m["acc"]) / 100 if m["acc"] is not None else None
    return RunEvent(done=int(m["done"]), total=int(m["total"]), status=m["status"], name=m["name"],
                    run_id=m["run_id"], acc=acc, seconds=float(m["seconds"]), message=m["message"] or "")


def parse_header(line: str) -> Optional[Header]:
    """`writing PATH (N run(s), M already there)` or `sweep NAME: N runs, M already in PATH, …`."""
    line = line.rstrip("\n")
    m = _RUN_HEADER.match(line) or _SWEEP_HEADER.match(line)
    return Header(m["path"], int(m["total"]), int(m["already"])) if m else None


def parse_results(line: str) -> Optional[str]:
    """The path of the final `results: PATH (…)` line, or None."""
    m = _RESULTS.match(line.rstrip("\n"))
    return m["path"] if m else None


def parse_tuning(line: str) -> Optional[tuple]:
    """(done, total) of a `tuning: done/total selection runs` line, or None."""
    m = _TUNING.match(line.rstrip("\n"))
    return (int(m["done"]), int(m["total"])) if m else None


@dataclass(frozen=True)
class Refusal:
    """A refused experiment file, from the CLI's `error: FILE: LOCATION: MESSAGE` line.

    key_path: as the CLI prints it (`.model.hiden`, `.strategy[0].lamda`), "" for the top level,
    None when the problem has no key (JSON syntax, a missing file named on the command line);
    keys: the same as a tuple (`("model", "hiden")`, `("strategy", 0, "lamda")`); context: which
    variant, run or sweep point the key belongs to (`variant "a"`), else ""; line/column: where a
    JSON syntax error is."""
    message: str
    key_path: Optional[str] = None
    keys: tuple = ()
    context: str = ""
    line: Optional[int] = None
    column: Optional[int] = None


def key_parts(key_path: str) -> tuple:
    """`.strategy[0].lamda` → ("strategy", 0, "lamda")."""
    return tuple(int(i) if i else k for k, i in _PART.findall(key_path or ""))


def parse_refusal(stderr: str, file: str) -> Refusal:
    """The CLI's error for experiment file `file` (the path the CLI was given), parsed; the whole
    text is the message when it has no recognisable shape (never raises)."""
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    first = next((l for l in lines if l.startswith("error: ")), lines[0] if lines else "")
    text = first[len("error: "):] if first.startswith("error: ") else first
    if file and text.startswith(file + ": "):
        text = text[len(file) + 2:]
    m = _LINE_COLUMN.match(text)
    if m:
        return Refusal(message=m["message"], line=int(m["line"]), column=int(m["column"]))
    m = _KEY_PATH.match(text)
    if not m:
        return Refusal(message=text)
    path = "" if m["path"] == "(top level)" else m["path"]
    message = m["message"]
    c = _CONTEXT.search(message)
    return Refusal(message=message, key_path=path, keys=key_parts(path), context=c["context"] if c else "")
