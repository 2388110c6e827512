"""Markdown table of Experiments/compression.json's results (issue 31), mean ± std over seeds.

    python3 Experiments/tools/compression_table.py results/compression.h5 [SCENARIO]

The study's variants are named SCENARIO.TECHNIQUE (`habit.dense`, `digits.dense`): with SCENARIO
(`habit`, `digits`) the table holds that scenario's rows, named by technique; without it, every
row under its full name.

Columns: ACC and forgetting (%, points), parameters a sparse format stores (non-pruned),
parameters and FLOPs per prediction of the compacted model in a dense runtime, FLOPs per
prediction in a sparse runtime, peak training memory (bytes, of which optimizer state), training
energy (mJ, the run's cost model: full-size dense layers) and int8 ACC where evaluated. Low-rank
runs report the factorised model (r·(in + out) weights per factorised layer) in the parameter and
FLOP columns.
Diverged runs are counted, not averaged.
"""
import sys

import h5py
import numpy as np


def main(path, scenario=None):
    rows = {}
    with h5py.File(path, "r") as f:
        summary = f["summary"][:]
        int8 = {(r["run_id"].decode() if isinstance(r["run_id"], bytes) else r["run_id"]): float(r["acc_int8"])
                for r in summary}
        order = sorted(f["runs"].items(), key=lambda kv: int(kv[1].attrs["sweep_index"]))
        for rid, g in order:
            name = g.attrs["name"]
            variant = name.rsplit("_seed=", 1)[0]
            if scenario is not None:
                prefix, _, technique = variant.partition(".")
                if prefix != scenario or not technique:
                    continue
                variant = technique
            r = rows.setdefault(variant, {"n": 0, "failed": 0, "acc": [], "forg": [], "nnz": [], "dparams": [],
                                          "dflops": [], "sflops": [], "peak": [], "state": [], "energy": [], "int8": []})
            status = g.attrs.get("status", "completed")
            if isinstance(status, bytes):
                status = status.decode()
            if status != "completed" or "costs" not in g:
                r["failed"] += 1
                continue
            r["n"] += 1
            m = g["metrics"].attrs
            r["acc"].append(100 * m["acc"])
            r["forg"].append(100 * m["forgetting"])
            c = g["costs"].attrs
            total = int(c["total_parameters"])
            flops = int(c["flops_per_prediction"])
            p = g["plugins"]
            pr = next((p[k] for k in p if k.endswith("_pruning")), None) if "plugins" in g else None
            lr = next((p[k] for k in p if k.endswith("_low_rank")), None) if "plugins" in g else None
            if lr is not None:           # the factorised model as deployed (W dropped, as exported)
                for k in ("nnz", "dparams"):
                    r[k].append(lr["model_parameters"][-1])
                for k in ("dflops", "sflops"):
                    r[k].append(lr["model_flops_per_prediction"][-1])
            elif pr is not None:
                r["nnz"].append(pr["nonzero_parameters"][-1])
                r["dparams"].append(pr["dense_runtime_parameters"][-1])
                r["dflops"].append(pr["dense_runtime_flops_per_prediction"][-1])
                r["sflops"].append(pr["sparse_runtime_flops_per_prediction"][-1])
            else:
                for k, v in (("nnz", total), ("dparams", total), ("dflops", flops), ("sflops", flops)):
                    r[k].append(v)
            r["peak"].append(int(c["peak_memory_bytes"]))
            d = g["device"].attrs if "device" in g else {}
            r["state"].append(int(d.get("peak_memory_optimizer_state", -1)))
            r["energy"].append(1e3 * float(c["training_energy_j"]))
            if np.isfinite(int8.get(rid, np.nan)):
                r["int8"].append(100 * int8[rid])

    def ms(v, fmt="{:.2f}"):
        if not v:
            return "—"
        v = np.asarray(v, dtype=float)
        return (fmt + " ± " + fmt).format(v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0)

    def one(v):
        return "—" if not v else f"{np.mean(v):.0f}"

    print("| variant | runs | ACC % | forgetting pts | non-zero params | dense-runtime params | dense FLOPs/pred | sparse FLOPs/pred | peak memory B (optimizer state) | training mJ | int8 ACC % |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        runs = f"{r['n']}" + (f" (+{r['failed']} diverged)" if r["failed"] else "")
        print(f"| {name} | {runs} | {ms(r['acc'])} | {ms(r['forg'])} | {one(r['nnz'])} | {one(r['dparams'])} | "
              f"{one(r['dflops'])} | {one(r['sflops'])} | {one(r['peak'])} ({one(r['state'])}) | {ms(r['energy'], '{:.3f}')} | {ms(r['int8'])} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/compression.h5", sys.argv[2] if len(sys.argv) > 2 else None)
