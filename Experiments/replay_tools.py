#!/usr/bin/env python3
"""Writes Experiments/replay.json and tabulates its results (mean ± std over seeds).

    python3 Experiments/replay_tools.py generate            # rewrite Experiments/replay.json
    python3 Experiments/replay_tools.py table results/replay.h5

Variant names are CONFIG-sSEED; the table groups runs by CONFIG. (A stopgap until sweeps land.)
"""
import json, sys
from collections import OrderedDict

SEEDS = [1, 2, 3, 4, 5]
BUDGETS = [("1KiB", 1024), ("4KiB", 4096), ("16KiB", 16384)]
POLICIES = ["reservoir", "class_balanced", "coreset_herding", "coreset_kcenter"]


def configs():
    yield "naive", ["naive"]
    yield "joint", ["joint"]
    yield "reservoir-200", [{"type": "replay", "policy": "reservoir", "capacity": 200}]
    for policy in POLICIES:
        for label, b in BUDGETS:
            yield f"{policy}-{label}", [{"type": "replay", "policy": policy, "capacity_bytes": b}]
    for precision in ["float16", "int8"]:
        for label, b in BUDGETS:
            yield f"reservoir-{precision}-{label}", [
                {"type": "replay", "policy": "reservoir", "capacity_bytes": b, "precision": precision}]
    yield "herding-penultimate-4KiB", [
        {"type": "replay", "policy": "coreset_herding", "capacity_bytes": 4096, "features": "penultimate"}]


def generate(path="Experiments/replay.json"):
    doc = OrderedDict()
    doc["name"] = "replay"
    doc["description"] = ("Habit drift (5 phases x 2000 training days): naive fine-tuning vs replay; reservoir "
                          "with 200 samples, the four buffer policies at 1, 4 and 16 KiB (float32), reservoir "
                          "at float16/int8, herding on penultimate features; 5 seeds each.")
    doc["scenario"] = {"type": "habit_drift", "train_per_experience": 2000, "test_per_experience": 500,
                       "phases": ["morning", "night", "reminder_fatigue", "weekend_only", "morning"]}
    doc["model"] = {"hidden": [16, 8], "activation": "relu"}
    doc["optimizer"] = {"type": "sgd", "lr": 0.05, "momentum": 0.9}
    doc["training"] = {"epochs": 20, "batch_size": 32}
    doc["variants"] = [{"name": f"{name}-s{s}", "seed": s, "strategy": strategy}
                       for name, strategy in configs() for s in SEEDS]
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def table(path):
    import h5py, numpy as np
    with h5py.File(path, "r") as f:
        s = f["summary"][()]
        capacity = {}
        for run in f["runs"].values():
            plugins = run.get("plugins")
            for p in (plugins.values() if plugins is not None else []):
                if "capacity_samples" in p.attrs:
                    capacity[run.attrs["name"]] = (int(p.attrs["capacity_samples"]), int(p.attrs["buffer_bytes"]))
    names = [n.decode() if isinstance(n, bytes) else n for n in s["name"]]
    groups = OrderedDict()
    for i, n in enumerate(names):
        groups.setdefault(n.rsplit("-s", 1)[0], []).append(i)
    print("| configuration | buffer (samples / bytes) | runs | ACC % (mean ± std) | BWT pts (mean ± std) |")
    print("|---|---|---|---|---|")
    for g, idx in groups.items():
        acc = np.array([s["acc"][i] for i in idx]) * 100
        bwt = np.array([s["bwt"][i] for i in idx]) * 100
        cap = capacity.get(names[idx[0]])
        buf = f"{cap[0]} / {cap[1]} B" if cap else "—"
        print(f"| {g} | {buf} | {len(idx)} | {acc.mean():.2f} ± {acc.std(ddof=1):.2f} | {bwt.mean():+.2f} ± {bwt.std(ddof=1):.2f} |")
    if "naive" in groups and "reservoir-200" in groups:
        by_seed = lambda g: {int(s["seed"][i]): (s["acc"][i], s["bwt"][i]) for i in groups[g]}
        a, b = by_seed("naive"), by_seed("reservoir-200")
        wins = [(seed, (b[seed][0] - a[seed][0]) * 100, (b[seed][1] - a[seed][1]) * 100) for seed in sorted(a) if seed in b]
        print("\nreservoir-200 minus naive, per seed (ACC pts, BWT pts): "
              + ", ".join(f"s{seed}: {da:+.2f}, {db:+.2f}" for seed, da, db in wins))


if __name__ == "__main__":
    if sys.argv[1:2] == ["generate"]:
        generate()
    elif sys.argv[1:2] == ["table"]:
        table(sys.argv[2])
    else:
        print(__doc__)
