"""Mean ± std table of Experiments/peft.json results (ACC, BWT, learning accuracy, trainable
parameters, personalisation bytes, routing accuracy), grouped by variant name without the seed.

Usage: python3 Experiments/analysis/peft_table.py [results/peft.h5]
"""
import re
import sys

import h5py
import numpy as np

path = sys.argv[1] if len(sys.argv) > 1 else "results/peft.h5"
groups = {}
with h5py.File(path, "r") as f:
    for run_id, g in f["runs"].items():
        name = re.sub(r"_s\d+$", "", g.attrs["name"])
        m = g["metrics"].attrs
        row = {
            "acc": m["acc"] * 100, "bwt": m["bwt"] * 100, "la": m["learning_accuracy"] * 100,
            "trainable_after": float(np.mean(g["trainable_parameters"][1:])),
            "trainable_first": float(g["trainable_parameters"][0]),
            "total": float(g["costs"].attrs["total_parameters"]),
        }
        for pname, p in g.get("plugins", {}).items():
            if "bytes_added" in p:
                row["bytes_added"] = float(np.sum(p["bytes_added"][:]))
            if "routing_accuracy_final" in p:
                row["routing"] = float(np.mean(p["routing_accuracy_final"][:])) * 100
        groups.setdefault(name, []).append(row)


def ms(rows, key, fmt="{:.1f}"):
    v = [r[key] for r in rows if key in r]
    if not v:
        return "—"
    return (fmt + " ± " + fmt).format(np.mean(v), np.std(v, ddof=1) if len(v) > 1 else 0.0)


print("| variant | n | ACC % | BWT (points) | learning acc % | trainable params exp 0 / exp ≥1 | total params | bytes added (all exp) | routing acc % |")
print("|---|---|---|---|---|---|---|---|---|")
for name, rows in groups.items():
    print(f"| {name} | {len(rows)} | {ms(rows, 'acc')} | {ms(rows, 'bwt')} | {ms(rows, 'la')} | "
          f"{int(rows[0]['trainable_first'])} / {rows[0]['trainable_after']:.0f} | {int(rows[0]['total'])} | "
          f"{ms(rows, 'bytes_added', '{:.0f}')} | {ms(rows, 'routing')} |")
