"""Markdown table of the mixed-precision, early-stopping and checkpointing rows of
Experiments/compression.json (issue 31 items 5, 6, 8), beside the dense float32 reference.

    python3 Experiments/tools/precision_table.py results/compression.h5 [SCENARIO]

SCENARIO (default `habit`) picks the study's `SCENARIO.TECHNIQUE` variants (`habit.bfloat16`);
a file whose variants carry no scenario prefix is read as it is.

Columns (mean ± std over seeds): ACC and forgetting (%, points), peak training memory (bytes, of
which activations), training energy (mJ, the run's cost model), optimizer steps taken of those
budgeted, energy the untaken steps would have cost (mJ, early stopping), steps skipped by the loss
scaler, and the activation floats per row with gradient checkpointing (without → with, plus
recomputed FLOPs per sample) where the run asked for it.
"""
import sys

import h5py
import numpy as np

VARIANTS = ("dense", "bfloat16", "float16", "early_stop")


def main(path, scenario="habit"):
    rows = {}
    with h5py.File(path, "r") as f:
        for rid, g in sorted(f["runs"].items(), key=lambda kv: int(kv[1].attrs["sweep_index"])):
            variant = g.attrs["name"].rsplit("_seed=", 1)[0]
            prefix, dot, technique = variant.partition(".")
            if dot:
                if prefix != scenario:
                    continue
                variant = technique
            if variant not in VARIANTS:
                continue
            r = rows.setdefault(variant, {"n": 0, "failed": 0, "acc": [], "forg": [], "peak": [], "act": [], "energy": [],
                                          "steps": [], "budget": [], "saved": [], "skipped": [], "ckpt": None})
            status = g.attrs.get("status", "completed")
            status = status.decode() if isinstance(status, bytes) else status
            if status != "completed" or "costs" not in g:
                r["failed"] += 1
                continue
            r["n"] += 1
            m = g["metrics"].attrs
            r["acc"].append(100 * m["acc"])
            r["forg"].append(100 * m["forgetting"])
            c = g["costs"]
            r["peak"].append(int(c.attrs["peak_memory_bytes"]))
            r["act"].append(int(g["device"].attrs["peak_memory_activations"]))
            r["energy"].append(1e3 * float(c.attrs["training_energy_j"]))
            r["steps"].append(int(np.sum(g["steps"][:])))
            if "steps_budgeted" in c:
                r["budget"].append(int(np.sum(c["steps_budgeted"][:])))
                r["saved"].append(1e3 * float(c.attrs["training_energy_saved_j"]))
            if "skipped_steps" in c:
                r["skipped"].append(int(np.sum(c["skipped_steps"][:])))
            if "checkpoint_layers" in c.attrs:
                r["ckpt"] = (int(c.attrs["activation_floats_per_row"]), int(c.attrs["activation_floats_per_row_checkpointed"]),
                             int(c.attrs["recompute_flops_per_sample"]), [int(x) for x in c.attrs["checkpoint_layers"]])

    def ms(v, fmt="{:.2f}"):
        if not v:
            return "—"
        v = np.asarray(v, dtype=float)
        return (fmt + " ± " + fmt).format(v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0)

    print("| variant | runs | ACC % | forgetting pts | peak memory B (activations) | training mJ | steps taken / budgeted | mJ saved | skipped steps | checkpointing: floats/row, recompute FLOPs/sample |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in VARIANTS:
        if name not in rows:
            continue
        r = rows[name]
        runs = f"{r['n']}" + (f" (+{r['failed']} diverged)" if r["failed"] else "")
        steps = f"{np.mean(r['steps']):.0f}" + (f" / {np.mean(r['budget']):.0f}" if r["budget"] else "")
        ck = "—" if r["ckpt"] is None else f"layers {r['ckpt'][3]}: {r['ckpt'][0]} → {r['ckpt'][1]}, +{r['ckpt'][2]}"
        peak = "—" if not r["peak"] else f"{np.mean(r['peak']):.0f} ({np.mean(r['act']):.0f})"
        print(f"| {name} | {runs} | {ms(r['acc'])} | {ms(r['forg'])} | {peak} | {ms(r['energy'], '{:.3f}')} | {steps} | "
              f"{ms(r['saved'], '{:.3f}')} | {ms(r['skipped'], '{:.0f}')} | {ck} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/compression.h5", sys.argv[2] if len(sys.argv) > 2 else "habit")
