"""Markdown tables of Experiments/when_to_train.json's results (issue 32), mean ± std over seeds.

    python3 Experiments/tools/when_table.py results/when_to_train.h5

Table 1, one row per arm (schedule), over the four drift types x seeds: ACC and forgetting over
the scenario's five phases (`device/phase_accuracy`: the model held at the end of each phase on
every phase's test set; the same test sets for every schedule), prequential accuracy (each day
predicted by the model held that day), sessions run, rollbacks (safe refresh), detector firings,
training energy (mJ, phone_npu_2023). Table 2: ACC per arm and drift type. Percentages in points.
"""
import json
import sys

import h5py
import numpy as np

DRIFTS = ["sudden", "gradual", "incremental", "recurring"]


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def ms(v, fmt="{:.1f}"):
    v = [x for x in v if np.isfinite(x)]
    if not v:
        return "–"
    return (fmt + " ± " + fmt).format(np.mean(v), np.std(v, ddof=1) if len(v) > 1 else 0.0)


def main(path):
    rows, order = {}, []
    with h5py.File(path, "r") as f:
        for rid, g in sorted(f["runs"].items(), key=lambda kv: int(kv[1].attrs["sweep_index"])):
            config = json.loads(text(g.attrs["config_json"]))
            arm = text(g.attrs["variant"]) if "variant" in g.attrs else text(g.attrs["name"]).split("_")[0]
            drift = config["scenario"].get("drift", {"type": "sudden"})
            drift = drift if isinstance(drift, str) else drift.get("type", "sudden")
            if arm not in rows:
                order.append(arm)
                rows[arm] = {}
            r = rows[arm].setdefault(drift, {k: [] for k in ("acc", "forg", "preq", "sess", "roll", "fire", "mj", "failed")})
            if text(g.attrs.get("status", "completed")) != "completed" or "device" not in g:
                r["failed"].append(1)
                continue
            d = g["device"].attrs
            r["acc"].append(100 * float(d["phase_acc"]))
            r["forg"].append(100 * float(d["phase_forgetting"]))
            r["preq"].append(100 * float(d["prequential_accuracy"]))
            r["sess"].append(int(d["training_sessions"]))
            r["roll"].append(int(d.get("rollbacks", 0)))
            r["fire"].append(int(d["detector_firings"]) if "detector_firings" in d else np.nan)
            r["mj"].append(1e3 * float(d["training_energy_j"]))
    print("| arm | ACC (%) | forgetting (pts) | prequential (%) | sessions | rollbacks | firings | energy (mJ) |")
    print("|---|---|---|---|---|---|---|---|")
    for arm in order:
        def pool(k):
            return [x for drift in rows[arm].values() for x in drift[k]]
        print(f"| {arm} | {ms(pool('acc'))} | {ms(pool('forg'))} | {ms(pool('preq'))} | {ms(pool('sess'), '{:.0f}')} | "
              f"{ms(pool('roll'), '{:.1f}')} | {ms(pool('fire'), '{:.1f}')} | {ms(pool('mj'), '{:.2f}')} |")
    failed = sum(len(d["failed"]) for a in rows.values() for d in a.values())
    if failed:
        print(f"\n{failed} runs failed (not averaged).")
    print()
    print("| arm | " + " | ".join(f"ACC {d} (%)" for d in DRIFTS) + " |")
    print("|---|" + "---|" * len(DRIFTS))
    for arm in order:
        print(f"| {arm} | " + " | ".join(ms(rows[arm].get(d, {}).get("acc", [])) for d in DRIFTS) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
