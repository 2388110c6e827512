#!/usr/bin/env python3
"""Keep the numbers in README.md and docs/*.md true: rerun the commands that produced them.

A marked block is an HTML comment (invisible on GitHub) right before a fenced code block, a
markdown table or a paragraph. Unmarked prose and blocks are not checked, so new sections never
break the check; a marked block always is. Three markers:

    <!-- save: my_first.json -->            the next fenced block is written to that file in the
                                            work directory before the document's commands run
    <!-- check: COMMAND                     cheap: COMMAND is rerun (bash, in the work directory)
         volatile: REGEX -->                and the block must show what it prints; REGEX (optional)
                                            masks values that differ between runs (wall times)
    <!-- measured: COMMAND                  expensive (benchmarks, the Hsu table): not rerun in CI;
         depends: PATH PATH ...             the block records where it was measured and a hash of
         commit: … date: … machine: …       the files it depends on, and the check fails (STALE)
         sha: HASH -->                      when they changed since, until it is regenerated
         stale: REASON                      (optional) the block is known to predate the code and
                                            its visible text says so: reported, not failed

How a check block is compared: each line of the block is matched, in order, with the next line
of the output that has the same key (first cell of a markdown row, first word of a text line),
and the two must be equal once whitespace and the volatile values are set aside; a line that is
only `…` elides output lines; a doc line that is wholly volatile (a progress line) is skipped.
Without `…`, the output must have no line the block lacks (a new row is a difference too).

The work directory is a fresh temporary directory per document with a symlink to each top-level
entry of the repository except results/ and .build/, so README commands run as written
(`continual run Experiments/quickstart.json` writes ./results/quickstart.h5 there). `continual`
is the binary in $CONTINUAL_BIN (default .build/release/continual), put first on the PATH;
$ROOT is the repository root.

    python3 Experiments/tools/check_docs.py                 # check every marked block (CI)
    python3 Experiments/tools/check_docs.py --update        # rewrite check blocks from fresh output
    python3 Experiments/tools/check_docs.py --update --measured  # also rerun measured commands
    python3 Experiments/tools/check_docs.py --restamp docs/hsu-table.md   # after regenerating a
                                       measured block by hand: record commit, date, machine, hash
    python3 Experiments/tools/check_docs.py --list          # every marker and its command
    python3 Experiments/tools/check_docs.py --stale         # measured blocks' hashes only (seconds)

Exit status: 0 all blocks agree, 1 a difference or a stale measured block, 2 bad usage/markers.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

# The measured blocks' dependencies, their hash and the stamp a regenerated block gets (this folder).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measured_stamp import depends_files, depends_hash, machine, stamp  # noqa: E402,F401 (re-exported)
# How a block is compared with its command's output (this folder).
from doc_compare import ELISION, compare, updated_lines  # noqa: E402,F401 (re-exported)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MARKER_START = re.compile(r"^\s*<!--\s*(save|check|measured):(.*)$")


@dataclass
class Block:
    """A marked block: the marker's fields, and the [start, end) lines of its body in the file."""
    doc: str
    kind: str                      # save, check, measured
    fields: dict
    marker: tuple                  # [first, last] line index of the marker comment
    start: int                     # first body line (for a fence: the line after ```)
    end: int                       # one past the last body line
    lines: list = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.marker[0] + 1}"

    @property
    def command(self) -> str:
        return self.fields.get(self.kind, "").strip()


# ----------------------------------------------------------------------------- parsing
def documents(root=ROOT) -> list[str]:
    return ["README.md"] + sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))


def _parse_fields(text: str) -> dict:
    """`key: value` lines of a marker (a value may continue on following lines without a key)."""
    fields, key = {}, None
    for raw in text.split("\n"):
        m = re.match(r"^\s*([a-z_]+):\s?(.*)$", raw)
        if m and m.group(1) in ("save", "check", "measured", "volatile", "depends", "commit", "date",
                                "machine", "sha", "stale"):
            key = m.group(1)
            fields[key] = m.group(2).strip()
        elif key and raw.strip():
            fields[key] += " " + raw.strip()
    return fields


def parse(doc: str, lines: list[str]) -> list[Block]:
    """The marked blocks of one document (raises ValueError on a marker without a block)."""
    out = []
    i = 0
    while i < len(lines):
        m = MARKER_START.match(lines[i])
        if not m:
            i += 1
            continue
        first = i
        body = lines[i][lines[i].index("<!--") + 4:]
        while "-->" not in lines[i]:
            i += 1
            if i >= len(lines):
                raise ValueError(f"{doc}:{first + 1}: marker comment never closed")
            body += "\n" + lines[i]
        body = body[:body.rindex("-->")]
        fields = _parse_fields(body)
        kind = m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines):
            raise ValueError(f"{doc}:{first + 1}: marker with no block after it")
        if lines[j].lstrip().startswith("```"):
            k = j + 1
            while k < len(lines) and lines[k].strip() != "```":
                k += 1
            if k >= len(lines):
                raise ValueError(f"{doc}:{j + 1}: code block never closed")
            start, end = j + 1, k
        elif lines[j].lstrip().startswith("|"):
            k = j
            while k < len(lines) and lines[k].lstrip().startswith("|"):
                k += 1
            start, end = j, k
        else:                                                       # a paragraph
            k = j
            while k < len(lines) and lines[k].strip():
                k += 1
            start, end = j, k
        if kind == "save" and not lines[j].lstrip().startswith("```"):
            raise ValueError(f"{doc}:{first + 1}: `save:` must stand before a fenced block")
        if kind == "measured" and "depends" not in fields:
            raise ValueError(f"{doc}:{first + 1}: a `measured:` marker needs `depends:` paths")
        out.append(Block(doc, kind, fields, (first, i), start, end, lines[start:end]))
        i = end
    return out


# ----------------------------------------------------------------------------- running
def work_directory(root=ROOT) -> str:
    d = tempfile.mkdtemp(prefix="check_docs.")
    for name in os.listdir(root):
        if name in ("results", ".build", ".git") or name.startswith(".build"):
            continue
        os.symlink(os.path.join(root, name), os.path.join(d, name))
    return d


def keep_results(work: str, into) -> None:
    """Moves the results files a document's commands wrote into `into` (--keep-results), so a
    later step (CI's figures) reads them instead of running the same experiments again."""
    produced = os.path.join(work, "results")
    if not into or not os.path.isdir(produced):
        return
    os.makedirs(into, exist_ok=True)
    for name in sorted(os.listdir(produced)):
        if name.endswith(".h5"):
            shutil.move(os.path.join(produced, name), os.path.join(into, name))


def environment(root=ROOT) -> dict:
    env = dict(os.environ)
    binary = os.path.abspath(os.environ.get("CONTINUAL_BIN", os.path.join(root, ".build", "release", "continual")))
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"check_docs: no continual binary at {binary} (swift build -c release --product "
                         "continual, or set CONTINUAL_BIN)")
    bindir = tempfile.mkdtemp(prefix="check_docs_bin.")
    os.symlink(binary, os.path.join(bindir, "continual"))
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["ROOT"] = root
    env["COLUMNS"] = "80"
    env.pop("FORCE_COLOR", None)
    return env


def run(command: str, cwd: str, env: dict, timeout: float) -> str:
    p = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {command}\n{p.stderr.strip()[-2000:]}")
    return p.stdout


# ----------------------------------------------------------------------------- main
def check_measured(b, args, root, env, work, volatile, edits) -> tuple[list[str], int, str | None]:
    """One measured block: rerun (--update --measured) or restamped (--restamp), else its files'
    hash against the recorded one — STALE unless the block declares why. Edits go into `edits`;
    returns (problems, blocks rewritten, the work directory, created if a rerun needed it)."""
    recorded = b.fields.get("sha", "")
    try:
        now = depends_hash(b.fields["depends"], root)
    except ValueError as e:
        return [f"{b.where}: {e}"], 0, work
    rerun = args.update and args.measured
    restamp = args.restamp and any(s in b.where for s in args.restamp)
    if rerun:
        work = work or work_directory(root)
        print(f"running (measured) {b.where}: {b.command}", file=sys.stderr)
        output = run(b.command, work, env, timeout=args.timeout_measured)
        edits[(b.start, b.end)] = updated_lines(b.lines, output, volatile)
    if rerun or restamp:
        edits[(b.marker[0], b.marker[1] + 1)] = stamp(b, root)
        return [], 1, work
    if recorded != now and b.fields.get("stale"):
        # Declared stale (the document's own text says which code the numbers predate): shown on
        # every check so it is never forgotten, but not a failure.
        print(f"{b.where}: declared stale — {b.fields['stale']}", file=sys.stderr)
    elif recorded != now:
        return [f"{b.where}: STALE — measured at commit {b.fields.get('commit', '?')} "
                f"({b.fields.get('date', '?')}), but {b.fields['depends']} changed since (hash "
                f"{recorded or 'none'} → {now}). Rerun `{b.command}` and update the block "
                f"(check_docs.py --update --measured --only {b.doc}:{b.marker[0] + 1}, or by hand "
                f"then --restamp {b.doc}:{b.marker[0] + 1})"], 0, work
    return [], 0, work


def process(doc: str, args, root=ROOT, env=None) -> tuple[list[str], int, int]:
    """(problems, blocks checked, blocks rewritten) for one document; rewrites it with --update."""
    path = os.path.join(root, doc)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = parse(doc, lines)
    if not blocks:
        return [], 0, 0
    problems, checked, rewritten = [], 0, 0
    edits = {}                                  # (start, end) → new lines
    work = None
    try:
        for b in blocks:
            if b.kind == "save":
                work = work or work_directory(root)
                with open(os.path.join(work, b.command), "w", encoding="utf-8") as fh:
                    fh.write("\n".join(b.lines) + "\n")
                continue
            if args.only and not any(s in b.where or s in b.command for s in args.only):
                continue
            volatile = re.compile(b.fields["volatile"]) if b.fields.get("volatile") else None
            if b.kind == "measured":
                checked += 1
                found, n, work = check_measured(b, args, root, env, work, volatile, edits)
                problems, rewritten = problems + found, rewritten + n
                continue
            if (args.restamp or args.stale) and not args.update:   # measured blocks only
                continue
            checked += 1
            work = work or work_directory(root)
            t0 = datetime.datetime.now()
            try:
                output = run(b.command, work, env, timeout=args.timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                problems.append(f"{b.where}: command failed: {e}")
                continue
            secs = (datetime.datetime.now() - t0).total_seconds()
            if args.verbose:
                print(f"  {b.where}: {b.command} ({secs:.1f} s)", file=sys.stderr)
            found, _ = compare(b.lines, output, volatile)
            if args.update:
                new = updated_lines(b.lines, output, volatile)
                if new != b.lines:
                    edits[(b.start, b.end)] = new
                    rewritten += 1
            else:
                problems += [f"{b.where}: {p}  [{b.command}]" for p in found]
    finally:
        if work:
            keep_results(work, args.keep_results)
            shutil.rmtree(work, ignore_errors=True)
    if edits:
        for (s, e), new in sorted(edits.items(), reverse=True):
            lines[s:e] = new
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    return problems, checked, rewritten


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("docs", nargs="*", help="documents (default: README.md and docs/*.md)")
    p.add_argument("--update", action="store_true", help="rewrite check blocks from fresh output")
    p.add_argument("--measured", action="store_true", help="with --update: also rerun measured commands")
    p.add_argument("--restamp", nargs="+", metavar="DOC[:LINE]",
                   help="record commit/date/machine/hash of these measured blocks (regenerated by hand)")
    p.add_argument("--only", nargs="+", metavar="DOC[:LINE]|TEXT", help="only blocks whose place or command match")
    p.add_argument("--list", action="store_true", help="list the markers and exit")
    p.add_argument("--stale", action="store_true",
                   help="only the measured blocks' hashes (no command runs, no binary needed; seconds): "
                        "run it after a restamp and before committing a change to code a block depends on")
    p.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=float, default=300, help="seconds per check command (default 300)")
    p.add_argument("--timeout-measured", type=float, default=7200)
    p.add_argument("--keep-results", metavar="DIR",
                   help="move the results files the commands wrote (results/*.h5) into DIR")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    root = os.path.abspath(args.root)
    docs = args.docs or documents(root)
    try:
        if args.list:
            for d in docs:
                with open(os.path.join(root, d), encoding="utf-8") as f:
                    for b in parse(d, f.read().split("\n")):
                        print(f"{b.where:32} {b.kind:9} {b.command}")
            return 0
        if args.stale and (args.update or args.restamp):
            raise ValueError("--stale checks hashes only: not with --update or --restamp")
        needs_binary = args.update or not (args.restamp or args.stale)
        env = environment(root) if needs_binary else dict(os.environ)
        problems, checked, rewritten = [], 0, 0
        for d in docs:
            pr, c, r = process(d, args, root, env)
            problems += pr
            checked += c
            rewritten += r
    except ValueError as e:
        print(f"check_docs: {e}", file=sys.stderr)
        return 2
    for pr in problems:
        print("FAIL:", pr)
    verb = "rewritten" if args.update or args.restamp else "differ"
    count = rewritten if args.update or args.restamp else len(problems)
    print(f"docs: {checked} marked blocks checked in {len(docs)} documents, {count} {verb}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
