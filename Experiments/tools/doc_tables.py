#!/usr/bin/env python3
"""Small result tables quoted in the docs that neither `continual inspect` nor `continualkit
table` prints, computed from a results file so that every number in the docs has a command
(Experiments/tools/check_docs.py reruns them):

    python3 Experiments/tools/doc_tables.py warm-start results/warm_start.h5     # docs/on-device.md
    python3 Experiments/tools/doc_tables.py prequential results/prequential_habit.h5   # docs/scenarios.md
    python3 Experiments/tools/doc_tables.py settings results/mnist1d.h5         # docs/hsu-table.md

Mean ± sample standard deviation (ddof 1) over the seeds of each variant, as everywhere else."""
import argparse

import h5py
import numpy as np


def runs_by_variant(f):
    """{variant: [run group, ...]} in the order of /summary (sweep order)."""
    out = {}
    for run_id, variant in zip(f["summary"]["run_id"], f["summary"]["variant"]):
        out.setdefault(variant.decode(), []).append(f["runs"][run_id.decode()])
    return out


def mean_std(values, scale=1.0, digits=1):
    a = np.asarray(values, dtype=float) * scale
    return f"{a.mean():.{digits}f} ± {a.std(ddof=1):.{digits}f}"


def warm_start(path):
    """Per variant: the starting model's accuracy on experience 0 (`baseline_init[0]`), R[0][0]
    after training experience 0, and ACC after the last experience."""
    with h5py.File(path, "r") as f:
        print("| variant | n | accuracy before training, exp. 0 % | R[0][0] after exp. 0 % | ACC % |")
        print("|---|---:|---:|---:|---:|")
        for variant, runs in runs_by_variant(f).items():
            acc = [np.mean(r["accuracy_matrix"][-1, :]) for r in runs]
            print(f"| {variant} | {len(runs)} | {mean_std([r['baseline_init'][0] for r in runs], 100)} | "
                  f"{mean_std([r['accuracy_matrix'][0, 0] for r in runs], 100)} | {mean_std(acc, 100)} |")


def prequential(path):
    """Per variant: the final cumulative prequential accuracy (every training sample predicted
    before it is learned), as a fraction."""
    with h5py.File(path, "r") as f:
        for variant, runs in runs_by_variant(f).items():
            final = [r["prequential/cumulative_accuracy"][-1] for r in runs]
            print(f"{variant}: final cumulative prequential accuracy {mean_std(final, digits=3)} (n = {len(runs)})")


def settings(path):
    """ACC % per method (rows) and setting (columns) for an experiment whose variants are named
    METHOD_SETTING (hsu_table.json, mnist1d.json): mean ± std over the completed runs, with the
    number of runs when it is not the same everywhere; "—" where the method has no such variant."""
    with h5py.File(path, "r") as f:
        s = f["summary"]
        status = [x.decode() for x in s["status"]]
        acc = {}
        for variant, st, a in zip((v.decode() for v in s["variant"]), status, s["acc"]):
            method, _, setting = variant.rpartition("_")
            acc.setdefault((method, setting), [])
            if st == "completed":
                acc[(method, setting)].append(a)
    methods = list(dict.fromkeys(m for m, _ in acc))
    settings_ = list(dict.fromkeys(x for _, x in acc))
    counts = {len(v) for v in acc.values()}
    print("| method | " + " | ".join(f"{x} ACC %" for x in settings_) + " |")
    print("|---|" + "---:|" * len(settings_))
    for m in methods:
        cells = []
        for x in settings_:
            v = acc.get((m, x))
            if v is None:
                cells.append("—")
            elif len(v) == 0:
                cells.append("failed")
            else:
                cell = mean_std(v, 100) if len(v) > 1 else f"{100 * v[0]:.1f}"
                cells.append(cell + (f" (n={len(v)})" if len(counts) > 1 else ""))
        print(f"| {m} | " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table", choices=["warm-start", "prequential", "settings"])
    p.add_argument("file")
    args = p.parse_args()
    {"warm-start": warm_start, "prequential": prequential, "settings": settings}[args.table](args.file)


if __name__ == "__main__":
    main()
