#!/usr/bin/env python3
"""Is every key and choice an experiment file can hold in the JSON reference? (issue 42)

Reads the Swift sources: every `CodingKeys` enum of a type decoded with `strictContainer` (the
keys `validate` accepts; an unknown key is refused) and every `String`-backed `Codable` enum (the
values a choice accepts). Each key and value must appear in docs/json-reference.md or a page it
links to, written as code (`key`) or quoted inside code ("key"). Exit status 1 lists what is
missing, with the Swift file that accepts it. Run in CI (.ci/run).

    python3 Experiments/tools/check_reference.py
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(ROOT, "docs", "json-reference.md")
# String enums that are Codable but never read from an experiment file (results, CLI output).
NOT_CONFIG = {
    "DriftDetector.swift:DriftSignal": "a detector's per-step output (continual drift --json), not an input",
    "PageHinkley.swift:Mode": "the Swift API's; experiment files give page_hinkley's mode as 0, 1 or 2 (docs/drift.md)",
}


def documented_words():
    text = open(REFERENCE).read()
    pages = {REFERENCE}
    for link in re.findall(r"\]\(([a-z0-9-]+\.md)", text):
        pages.add(os.path.join(ROOT, "docs", link))
    words = set()
    for page in pages:
        body = open(page).read()
        for block in re.findall(r"```[a-z]*\n(.*?)```", body, re.S):
            words.update(re.findall(r'"([A-Za-z0-9_]+)"', block))
        body = re.sub(r"```[a-z]*\n.*?```", "", body, flags=re.S)
        for code in re.findall(r"`([^`\n]+)`", body):
            words.add(code.strip())
            words.update(re.split(r"[|\\\s,/]+", code))
            words.update(re.findall(r'"([A-Za-z0-9_]+)"', code))
    return words, sorted(os.path.relpath(p, ROOT) for p in pages)


def cases(body):
    """The raw values of the `case` lines of an enum body (top level only)."""
    out, depth = [], 0
    for line in body.split("\n"):
        if depth == 0:
            for stmt in line.split(";"):
                stmt = re.sub(r"//.*", "", stmt).strip()
                if not stmt.startswith("case "):
                    continue
                for part in stmt[5:].split(","):
                    part = part.strip()
                    if not part or "(" in part:
                        continue
                    m = re.match(r'`?(\w+)`?\s*=\s*"([^"]+)"', part)
                    out.append(m.group(2) if m else part.strip("`"))
        depth += line.count("{") - line.count("}")
    return out


def enum_bodies(source, header):
    for m in re.finditer(header, source):
        depth, i = 1, m.end()
        while depth and i < len(source):
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        yield m, source[m.end():i - 1]


def main():
    words, pages = documented_words()
    missing = []
    for path in sorted(glob.glob(os.path.join(ROOT, "Sources", "**", "*.swift"), recursive=True)):
        source = open(path).read()
        rel = os.path.relpath(path, ROOT)
        if "strictContainer(keyedBy" in source:
            for m, body in enum_bodies(source, r"enum (\w+): String, CodingKey[^{]*\{"):
                missing += [(rel, "key", k) for k in cases(body) if k not in words]
        for m, body in enum_bodies(source, r"enum (\w+): String,([^{]*)\{"):
            if "Codable" not in m.group(2) or f"{os.path.basename(path)}:{m.group(1)}" in NOT_CONFIG:
                continue
            missing += [(rel, f"value of {m.group(1)}", v) for v in cases(body) if v not in words]
    if missing:
        print(f"{len(missing)} keys or values an experiment file accepts are not in the reference ({', '.join(pages)}):")
        for rel, what, name in missing:
            print(f"  {name!r} ({what}, {rel})")
        return 1
    print(f"every key and choice is in the reference ({len(pages)} pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
