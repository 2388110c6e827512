#!/usr/bin/env python3
"""Do two builds of the toolkit give the same science?

Runs every experiment (default: Experiments/*.json) with two `continual` binaries -- typically a
release build of the commit before a change and one of the change -- and compares the results
files run by run: the same run ids, and every dataset and attribute bit for bit, except wall
times and provenance (creation time, toolkit version, git commit), which differ between any two
runs. Prints one line per experiment and, for every difference, the run, the object and the
first differing values. Objects only in the new file are additions (new measurements) and are
counted apart; exit status 0 when nothing that exists in both differs, 1 otherwise.

    python3 Experiments/tools/compare_science.py --base /path/to/old/continual --new .build/release/continual

Each binary runs from its own repository root (`--base-root`, `--new-root`) so that relative
dataset paths resolve as a user's would. `--results-a DIR` reuses existing result files.
"""
import argparse, glob, json, os, subprocess, sys, time

import h5py
import numpy as np

TIMING = ("seconds", "per_second", "wall", "time", "created", "version", "commit", "hostname", "elapsed")
# Dimension-scale bookkeeping: object references, compared through the datasets they point to.
REFERENCES = ("DIMENSION_LIST", "REFERENCE_LIST")


def is_timing(name):
    n = name.lower()
    return any(t in n for t in TIMING)


def run(binary, root, exp, out):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    start = time.time()
    p = subprocess.run([binary, "run", os.path.abspath(exp), "-o", out, "--quiet"], cwd=root,
                       capture_output=True, text=True)
    return p.returncode, time.time() - start, p.stderr.strip()[-400:]


def walk(group, prefix=""):
    """Yields (path, object) for every group and dataset below `group`."""
    for k in sorted(group.keys()):
        try:
            obj = group[k]
        except Exception as e:  # unreadable link
            yield prefix + "/" + k, e
            continue
        yield prefix + "/" + k, obj
        if isinstance(obj, h5py.Group):
            yield from walk(obj, prefix + "/" + k)


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object or b.dtype == object:
            return a.shape == b.shape and all(same(x, y) for x, y in zip(a.ravel(), b.ravel()))
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind == "f":
            return np.array_equal(a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))
        if a.dtype.names:  # compound
            return all(same(a[n], b[n]) for n in a.dtype.names if not is_timing(n))
        return np.array_equal(a, b)
    if isinstance(a, float) and isinstance(b, float):
        return (a == b) or (a != a and b != b)
    return a == b


def match_runs(ga, gb, ids_a, ids_b):
    """Pairs base and new runs whose configs agree on every key path both have (a config key
    added with a default, or a run renamed, changes the run id, not the run; `name` is not
    compared). None unless every base run pairs with exactly one new run (new runs may be left
    over: variants added by the change)."""
    def cfg(g, r):
        try:
            return flatten(json.loads(g[r].attrs["config_json"]))
        except Exception:
            return None
    ca = {r: cfg(ga, r) for r in ids_a}
    cb = {r: cfg(gb, r) for r in ids_b}
    if any(v is None for v in list(ca.values()) + list(cb.values())):
        return None
    pairs, used = [], set()
    for r in ids_a:
        hits = [q for q in ids_b if q not in used
                and all(ca[r][k] == cb[q][k] for k in ca[r].keys() & cb[q].keys() if k != "name")]
        if len(hits) != 1:
            return None
        used.add(hits[0])
        pairs.append((r, hits[0]))
    return pairs


def flatten(value, prefix=""):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
        return out
    return {prefix: value}


def config_changes(ga, gb):
    """Key paths whose value differs between the two runs' config_json (added keys marked +)."""
    try:
        ca = flatten(json.loads(ga.attrs["config_json"]))
        cb = flatten(json.loads(gb.attrs["config_json"]))
    except Exception:
        return {"config_json unreadable"}
    out = {("+" + k) for k in cb.keys() - ca.keys()} | {("-" + k) for k in ca.keys() - cb.keys()}
    out |= {k for k in ca.keys() & cb.keys() if ca[k] != cb[k]}
    return out


IDENTITY = ("run_id", "config_json")


def compare_attrs(path, a, b, diffs, skip=()):
    for k in sorted(set(a.attrs.keys()) | set(b.attrs.keys())):
        if is_timing(k) or k in REFERENCES or k in skip:
            continue
        if k not in a.attrs or k not in b.attrs:
            diffs.append(f"{path} @{k}: only in {'new' if k in b.attrs else 'base'}")
        elif not same(a.attrs[k], b.attrs[k]):
            diffs.append(f"{path} @{k}: {str(a.attrs[k])[:80]} != {str(b.attrs[k])[:80]}")


def compare_files(fa, fb):
    diffs = []
    with h5py.File(fa, "r") as a, h5py.File(fb, "r") as b:
        ra, rb = set(a["runs"].keys()), set(b["runs"].keys())
        pairs = [(rid, rid) for rid in sorted(ra & rb)]
        if ra != rb:
            # Run ids hash the canonical config, so a new config key with a default changes every
            # id. Pair the remaining runs by (name, seed, sweep index) and compare their contents;
            # report the id change once, with the config keys that caused it.
            matched = match_runs(a["runs"], b["runs"], sorted(ra - rb), sorted(rb - ra))
            if matched is not None:
                changed = set()
                for ia, ib in matched:
                    pairs.append((ia, ib))
                    changed |= config_changes(a["runs"][ia], b["runs"][ib])
                diffs.append(f"run ids changed for {len(matched)} runs (paired by their configs' common keys; "
                             f"contents compared below); the configs differ in: {', '.join(sorted(changed)) or 'nothing'}")
                extra = len(rb - ra) - len(matched)
                if extra:
                    diffs.append(f"{extra} runs only in new (new variants)")
            else:
                diffs.append(f"run ids differ: only base {sorted(ra - rb)[:5]}, only new {sorted(rb - ra)[:5]}")
        for rid, rid_b in pairs:
            ga, gb = a["runs"][rid], b["runs"][rid_b]
            compare_attrs(f"/runs/{rid}", ga, gb, diffs, skip=IDENTITY if rid != rid_b else ())
            pa = dict(walk(ga))
            pb = dict(walk(gb))
            for p in sorted(set(pa) | set(pb)):
                if is_timing(p.rsplit("/", 1)[-1]):
                    continue
                if p not in pa or p not in pb:
                    diffs.append(f"/runs/{rid}{p}: only in {'new' if p in pb else 'base'}")
                    continue
                oa, ob = pa[p], pb[p]
                if isinstance(oa, h5py.Dataset) and isinstance(ob, h5py.Dataset):
                    if not same(oa[()], ob[()]):
                        diffs.append(f"/runs/{rid}{p}: values differ (base {np.ravel(oa[()])[:4]}, new {np.ravel(ob[()])[:4]})")
                    compare_attrs(f"/runs/{rid}{p}", oa, ob, diffs)
                elif isinstance(oa, h5py.Group) and isinstance(ob, h5py.Group):
                    compare_attrs(f"/runs/{rid}{p}", oa, ob, diffs)
                else:
                    diffs.append(f"/runs/{rid}{p}: kinds differ")
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="continual binary of the commit before the change")
    ap.add_argument("--base-root", default=None, help="repository root the base binary runs in")
    ap.add_argument("--new", required=True, help="continual binary of the change")
    ap.add_argument("--new-root", default=".", help="repository root the new binary runs in")
    ap.add_argument("--workdir", default="/tmp/compare_science")
    ap.add_argument("--results-a", default=None, help="directory with existing base results (NAME.h5)")
    ap.add_argument("--show", type=int, default=40, help="differences printed per experiment")
    ap.add_argument("--verbose", action="store_true", help="also list added objects")
    ap.add_argument("experiments", nargs="*")
    args = ap.parse_args()
    exps = args.experiments or sorted(glob.glob(os.path.join(args.new_root, "Experiments", "*.json")))
    base_root = args.base_root or (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(args.base))))
                                   if args.base else None)
    total = 0
    for exp in exps:
        name = os.path.splitext(os.path.basename(exp))[0]
        fa = os.path.join(args.results_a or os.path.join(args.workdir, "base"), name + ".h5")
        fb = os.path.join(args.workdir, "new", name + ".h5")
        if args.results_a is not None and not os.path.exists(fa):
            print(f"{name}: new in this change (no base results)")
            continue
        if args.results_a is None:
            rc, t, err = run(args.base, base_root, os.path.join(base_root, "Experiments", name + ".json"), fa)
            if rc != 0 and not os.path.exists(fa):
                print(f"{name}: base failed ({rc}): {err}")
                total += 1
                continue
        rc, t, err = run(args.new, args.new_root, exp, fb)
        if not os.path.exists(fb):
            print(f"{name}: new failed ({rc}): {err}")
            total += 1
            continue
        diffs = compare_files(fa, fb)
        added = [d for d in diffs if d.endswith("only in new")]
        changed = [d for d in diffs if not d.endswith("only in new")]
        total += len(changed)
        kinds = sorted({d.split(": ")[0].split("/", 3)[-1] for d in added})
        print(f"{name}: {'identical' if not changed else f'{len(changed)} differences'}"
              f"{f', {len(added)} additions' if added else ''} ({t:.1f} s)")
        if added and args.verbose:
            print("    added:", ", ".join(sorted({k.split('/')[-1] for k in kinds})))
        for d in changed[:args.show]:
            print("   ", d)
    sys.exit(0 if total == 0 else 1)


if __name__ == "__main__":
    main()
