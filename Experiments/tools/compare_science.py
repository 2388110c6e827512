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

Numerics versions: every results file records `numerics_version` and `kernel_path` (the dense
kernels' summation order and path, docs/versioning.md). When both files carry the same pair, every
difference counts, as above: within one numerics version results must be bit-identical. When the
pair changed, the last bits of every trained value may differ: each differing floating-point
object is reported with the size of its difference (max |new - base| and that size relative to
max(|base|, |new|, 1)), and with `--tolerance T` a difference no larger than T relative is
accepted (listed, not counted). Differences in anything that is not floating point always count.

Each binary runs from its own repository root (`--base-root`, `--new-root`) so that relative
dataset paths resolve as a user's would. `--results-a DIR` reuses existing result files.
"""
import argparse, glob, json, os, subprocess, sys, time

import h5py
import numpy as np

TIMING = ("seconds", "per_second", "wall", "time", "created", "version", "commit", "hostname", "elapsed",
          # A run group's content digest (RunDigest) covers its wall times too, so two runs of the
          # same science differ in it; `inspect --verify` checks it, this comparison does not.
          "sha256",
          # Threads a run's products could use and used (issue 45.4): execution, not science.
          "kernel_threads")
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


#: Kernel paths that compute the same chains with the same roundings as another path, so their
#: files must be bit-identical: avx512-fma is avx2-fma's arithmetic on 16-float vectors.
SAME_ARITHMETIC = {"avx512-fma": "avx2-fma"}


def numerics(f):
    """(numerics_version, kernel path's arithmetic) of an open results file; version 1 before they
    were recorded. Paths of one arithmetic (SAME_ARITHMETIC) count as one."""
    v = f.attrs.get("numerics_version", 1)
    k = f.attrs.get("kernel_path", "swift-simd8")
    k = k.decode() if isinstance(k, bytes) else str(k)
    return int(v), SAME_ARITHMETIC.get(k, k)


def difference_size(a, b):
    """(max |b - a|, max |b - a| / max(|a|, |b|, 1)) of two float arrays or scalars of one shape, or
    None when they are not both floating point (NaN in both places is equal; in one, infinite)."""
    try:
        a, b = np.asarray(a), np.asarray(b)
    except Exception:
        return None
    if a.shape != b.shape or a.dtype.kind != "f" or b.dtype.kind != "f":
        return None
    a, b = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    d = np.where(both_nan, 0.0, np.abs(b - a))
    d = np.where(np.isnan(d), np.inf, d)
    if d.size == 0:
        return 0.0, 0.0
    scale = np.maximum(np.maximum(np.abs(np.nan_to_num(a)), np.abs(np.nan_to_num(b))), 1.0)
    return float(d.max()), float((d / scale).max())


class Policy:
    """Whether a floating-point difference is accepted: only when the numerics changed and it is
    within the tolerance. Accepted differences are kept in `accepted` for the report."""
    def __init__(self, numerics_changed=False, tolerance=None):
        self.numerics_changed, self.tolerance, self.accepted = numerics_changed, tolerance, []

    def judge(self, where, a, b, diffs, detail):
        size = difference_size(a, b)
        if size is None:
            diffs.append(f"{where}: {detail}")
            return
        line = f"{where}: differs by {size[0]:.3g} (relative {size[1]:.3g}); {detail}"
        if self.numerics_changed and self.tolerance is not None and size[1] <= self.tolerance:
            self.accepted.append(line)
        else:
            diffs.append(line)


def compare_attrs(path, a, b, diffs, skip=(), policy=None):
    for k in sorted(set(a.attrs.keys()) | set(b.attrs.keys())):
        if is_timing(k) or k in REFERENCES or k in skip:
            continue
        if k not in a.attrs or k not in b.attrs:
            diffs.append(f"{path} @{k}: only in {'new' if k in b.attrs else 'base'}")
        elif not same(a.attrs[k], b.attrs[k]):
            (policy or Policy()).judge(f"{path} @{k}", a.attrs[k], b.attrs[k], diffs,
                                       f"{str(a.attrs[k])[:80]} != {str(b.attrs[k])[:80]}")


def compare_files(fa, fb, tolerance=None, accepted=None):
    """Differences that count (list of lines); differences accepted under a numerics change and
    `tolerance` are appended to `accepted`."""
    diffs = []
    with h5py.File(fa, "r") as a, h5py.File(fb, "r") as b:
        na, nb = numerics(a), numerics(b)
        policy = Policy(numerics_changed=na != nb, tolerance=tolerance)
        if na != nb:
            diffs_note = f"numerics changed: version {na[0]} ({na[1]}) -> {nb[0]} ({nb[1]})"
            (accepted if accepted is not None else []).append(diffs_note)
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
            compare_attrs(f"/runs/{rid}", ga, gb, diffs, skip=IDENTITY if rid != rid_b else (), policy=policy)
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
                    va, vb = oa[()], ob[()]
                    if not same(va, vb):
                        policy.judge(f"/runs/{rid}{p}", va, vb, diffs,
                                     f"values differ (base {np.ravel(va)[:4]}, new {np.ravel(vb)[:4]})")
                    compare_attrs(f"/runs/{rid}{p}", oa, ob, diffs, policy=policy)
                elif isinstance(oa, h5py.Group) and isinstance(ob, h5py.Group):
                    compare_attrs(f"/runs/{rid}{p}", oa, ob, diffs, policy=policy)
                else:
                    diffs.append(f"/runs/{rid}{p}: kinds differ")
        compare_tuning(a, b, diffs, policy)
        if accepted is not None:
            accepted.extend(policy.accepted)
    return diffs


def compare_tuning(a, b, diffs, policy):
    """`/tuning` (the hyperparameter selection, docs/results-format.md): every variant's scores,
    training FLOPs, run ids and record, bit for bit; its wall times (`wall_seconds`,
    `run_wall_seconds`) are timings and are skipped."""
    ta, tb = a.get("tuning"), b.get("tuning")
    if ta is None and tb is None:
        return
    if ta is None or tb is None:
        diffs.append(f"/tuning: only in {'new' if tb is not None else 'base'}")
        return
    for variant in sorted(set(ta) | set(tb)):
        where = f"/tuning/{variant}"
        if variant not in ta or variant not in tb:
            diffs.append(f"{where}: only in {'new' if variant in tb else 'base'}")
            continue
        va, vb = ta[variant], tb[variant]
        compare_attrs(where, va, vb, diffs, policy=policy)
        for name in sorted(set(va) | set(vb)):
            if is_timing(name):
                continue
            if name not in va or name not in vb:
                diffs.append(f"{where}/{name}: only in {'new' if name in vb else 'base'}")
            elif not same(va[name][()], vb[name][()]):
                policy.judge(f"{where}/{name}", va[name][()], vb[name][()], diffs, "values differ")


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
    ap.add_argument("--tolerance", type=float, default=None,
                    help="accept floating-point differences up to this size relative to max(|base|, |new|, 1) "
                         "when the files' numerics_version or kernel_path differ (never within one version)")
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
        accepted = []
        diffs = compare_files(fa, fb, tolerance=args.tolerance, accepted=accepted)
        added = [d for d in diffs if d.endswith("only in new")]
        changed = [d for d in diffs if not d.endswith("only in new")]
        total += len(changed)
        kinds = sorted({d.split(": ")[0].split("/", 3)[-1] for d in added})
        print(f"{name}: {'identical' if not changed else f'{len(changed)} differences'}"
              f"{f', {len(added)} additions' if added else ''} ({t:.1f} s)")
        if added and args.verbose:
            print("    added:", ", ".join(sorted({k.split('/')[-1] for k in kinds})))
        within = [d for d in accepted if not d.startswith("numerics changed")]
        for note in [d for d in accepted if d.startswith("numerics changed")]:
            print(f"    {note}; {len(within)} floating-point differences within --tolerance {args.tolerance}")
        for d in within[:args.show]:
            print("     ~", d)
        for d in changed[:args.show]:
            print("   ", d)
    sys.exit(0 if total == 0 else 1)


if __name__ == "__main__":
    main()
