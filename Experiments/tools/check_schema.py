#!/usr/bin/env python3
"""Does `continual schema` agree with `continual validate`? (issue 42.5)

1. The schema is a valid draft 2020-12 schema (jsonschema's metaschema check).
2. Every shipped experiment file (Experiments/**/*.json) is accepted by it, and so is every
   example in README.md and docs/ that validate accepts (a whole experiment, or a strategy or
   scenario object put into the quickstart).
3. Refused files: each base experiment below is mutated one place at a time (an unknown key in
   an object, a string replaced by a word no choice has, a number or boolean replaced by a
   string) and given to both (except values no run decodes: given by every variant or swept).
   The schema must never refuse a mutation `validate` accepts (it
   would stop an editor on a good file); an unknown key `validate` refuses must be refused by
   the schema too, except inside the values it leaves free-form ({}), which are listed.

    python3 Experiments/tools/check_schema.py [--bin .build/release/continual]

Exit status 1 lists each disagreement with the file, the mutation and both verdicts.
"""
import argparse
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Self-contained experiments (synthetic data, or the bundled digits) covering scenarios,
# strategies, sweeps, tuning, populations, federations, schedules and device settings.
BASES = ["quickstart.json", "scenario_tour.json", "federated_habit.json", "population_habit.json",
         "prequential_habit.json", "device_schedules.json", "peft.json", "regularisation.json",
         "sweeps/lr_random_search.json", "federated_digits_pfl.json", "few_shot_habit.json",
         "poisoning_habit.json", "qat.json"]
UNKNOWN = "zz_not_a_key"
BOGUS = "zz_not_a_choice"


def places(doc, path=()):
    """Every (path, value) of the document, depth first."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from places(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from places(v, path + (i,))


def setting(doc, path, value):
    out = copy.deepcopy(doc)
    if not path:
        return value
    target = out
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    return out


def dotted(path):
    return "".join(f"[{p}]" if isinstance(p, int) else ("." if i else "") + p for i, p in enumerate(path))


def replaced(doc, path):
    """Whether the value at path is never decoded: every variant gives its top-level key, or a
    sweep sets it (the schema still checks it, validate does not see it)."""
    variants = doc.get("variants") or []
    if path and variants and all(path[0] in v for v in variants):
        return True
    blocks = []
    for sweep in [doc.get("sweep")] + [v.get("sweep") for v in variants]:
        blocks += sweep if isinstance(sweep, list) else [sweep]
    swept = [k for block in blocks if isinstance(block, dict) for k in block.get("parameters", {})]
    text = dotted(path)
    return any(text == k or text.startswith(k + ".") or text.startswith(k + "[") for k in swept)


def mutations(doc):
    """(kind, path, mutated document) for each place that can be broken."""
    for path, value in places(doc):
        if path and path[0] in ("name", "description", "output") or replaced(doc, path):
            continue
        if isinstance(value, dict) and not (path and path[-1] == "parameters"):
            yield "unknown key", path, setting(doc, path, {**value, UNKNOWN: 1})
        elif isinstance(value, str) and path and path[-1] != "name":
            yield "bad choice", path, setting(doc, path, BOGUS)
        elif isinstance(value, bool):
            yield "wrong kind", path, setting(doc, path, "yes")
        elif isinstance(value, (int, float)) and path and "parameters" not in path:
            yield "wrong kind", path, setting(doc, path, "12")


def validate(binary, doc, directory):
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=directory, delete=False) as f:
        json.dump(doc, f)
    try:
        r = subprocess.run([binary, "validate", f.name], capture_output=True, text=True, timeout=120)
        return r.returncode == 0, (r.stderr or r.stdout).strip().splitlines()[-1:] or [""]
    finally:
        os.unlink(f.name)


def as_experiment(fragment, schema):
    """A strategy or scenario example (`{"type": "ewc", ...}`) inside the quickstart, or None."""
    kind = fragment.get("type")
    base = json.load(open(os.path.join(ROOT, "Experiments", "quickstart.json")))
    base.pop("variants", None)
    if kind in schema["$defs"]["strategy"]["properties"]["type"]["enum"]:
        base["strategy"] = [fragment]
    elif kind in schema["$defs"]["scenario"]["properties"]["type"]["enum"]:
        base["scenario"] = fragment
    else:
        return None
    return base


def schema_words(node, keys=None, choices=None):
    """Property names and string enum values anywhere in a schema."""
    keys = set() if keys is None else keys
    choices = set() if choices is None else choices
    if isinstance(node, dict):
        for k, v in node.get("properties", {}).items():
            keys.add(k)
        for v in node.get("enum", []):
            if isinstance(v, str):
                choices.add(v)
        if isinstance(node.get("const"), str):
            choices.add(node["const"])
        for v in node.values():
            schema_words(v, keys, choices)
    elif isinstance(node, list):
        for v in node:
            schema_words(v, keys, choices)
    return keys, choices


def free_form(schema, doc_path):
    """Whether the schema leaves the value at doc_path free-form: a mutation there is not seen."""
    v = jsonschema.Draft202012Validator(schema)
    probe = setting(SAMPLE_DOC[0], doc_path, {UNKNOWN: {UNKNOWN: 1}})
    return not any(True for _ in v.iter_errors(probe))


SAMPLE_DOC = [None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("CONTINUAL_BIN", os.path.join(ROOT, ".build/debug/continual")))
    args = ap.parse_args()
    schema = json.loads(subprocess.run([args.bin, "schema"], check=True, capture_output=True, text=True).stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    shipped = sorted(glob.glob(os.path.join(ROOT, "Experiments", "**", "*.json"), recursive=True))
    for path in shipped:
        for e in validator.iter_errors(json.load(open(path))):
            problems.append(f"{os.path.relpath(path, ROOT)}: shipped but refused at /{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}")
    print(f"check_schema: {len(shipped)} shipped experiment files against the schema")
    # Every key the schema names (the keys validate accepts, read from the decoders) and every
    # choice it lists is in the JSON reference (check_reference.py reads the Swift sources; this
    # reads what the decoders ask for, so a key decoded outside a strict container counts too).
    import check_reference
    words, _ = check_reference.documented_words()
    keys, choices = schema_words(schema)
    for key in sorted(keys - words):
        problems.append(f"docs/json-reference.md: the key \"{key}\" (in the schema: validate accepts it) is not in the reference")
    for value in sorted(choices - words):
        problems.append(f"docs/json-reference.md: the choice \"{value}\" (in the schema) is not in the reference")
    print(f"check_schema: {len(keys)} keys and {len(choices)} choices of the schema against the reference")
    examples = 0
    for page in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        for block in re.findall(r"```json\n(.*?)```", open(page).read(), re.S):
            try:
                doc = json.loads(block)
            except ValueError:
                continue   # a fragment or an elided example
            if isinstance(doc, dict) and "scenario" not in doc:
                doc = as_experiment(doc, schema)   # a strategy or scenario fragment
            if not isinstance(doc, dict):
                continue
            examples += 1
            errors = list(validator.iter_errors(doc))
            if errors and validate(args.bin, doc, ROOT)[0]:
                e = errors[0]
                problems.append(f"{os.path.relpath(page, ROOT)}: an example validate accepts is refused at /{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}")
    print(f"check_schema: {examples} examples in README.md and docs/ (experiments, strategies, scenarios)")
    counts = {}
    for base in BASES:
        path = os.path.join(ROOT, "Experiments", base)
        doc = json.load(open(path))
        SAMPLE_DOC[0] = doc
        ok, why = validate(args.bin, doc, os.path.dirname(path))
        if not ok:
            problems.append(f"{base}: the unmutated file is refused by validate: {why[0]}")
            continue
        for kind, where, mutated in mutations(doc):
            by_schema = any(True for _ in validator.iter_errors(mutated))
            by_validate = not validate(args.bin, mutated, os.path.dirname(path))[0]
            key = (kind, by_schema, by_validate)
            counts[key] = counts.get(key, 0) + 1
            at = "/" + "/".join(map(str, where))
            if by_schema and not by_validate:
                problems.append(f"{base} {kind} at {at}: the schema refuses what validate accepts")
            elif kind == "unknown key" and by_validate and not by_schema and not free_form(schema, where):
                problems.append(f"{base} {kind} at {at}: validate refuses it, the schema accepts it")
    for kind in ("unknown key", "bad choice", "wrong kind"):
        seen = {k[1:]: n for k, n in counts.items() if k[0] == kind}
        refused = sum(n for (s, v), n in seen.items() if v)
        print(f"  {kind}: {sum(seen.values())} mutations, validate refuses {refused}, "
              f"the schema refuses {seen.get((True, True), 0)} of those and {seen.get((True, False), 0)} others")
    for p in problems:
        print("  " + p)
    if problems:
        print(f"check_schema: {len(problems)} problem(s)")
        return 1
    print("check_schema: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
