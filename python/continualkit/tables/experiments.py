"""The per-experiment tables of the README's experiments: replay (buffer sizes), PEFT
(trainable parameters, bytes added, routing), on-device schedules (energy, memory, Pareto)."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd

from ..io import load_summary
from ..stats import aggregate, seed_stats
from .grouped import _pm, grouped, paired_table


def _first_run_per_conf(df):
    ok = df.sort_values("sweep_index")
    return ok.groupby("configuration", sort=False)["run_id"].first()


def replay_table(path, df=None) -> pd.DataFrame:
    """Experiments/replay.json: buffer size (samples / bytes) per configuration, ACC and BWT."""
    df = df if df is not None else load_summary(path)
    table = grouped(df, ("acc", "bwt"), ci=True)
    caps = {}
    with h5py.File(path, "r") as f:
        for conf, rid in _first_run_per_conf(df).items():
            plugins = f["runs"][rid].get("plugins")
            for p in (plugins.values() if plugins is not None else []):
                if "capacity_samples" in p.attrs:
                    caps[conf] = f"{int(p.attrs['capacity_samples'])} / {int(p.attrs['buffer_bytes'])} B"
    table.insert(1, "buffer (samples / bytes)", [caps.get(c, "—") for c in table["configuration"]])
    return table


def peft_table(path, df=None) -> pd.DataFrame:
    """Experiments/peft.json: ACC, BWT, learning accuracy, trainable parameters (experience 0 /
    later), total parameters, personalisation bytes added, routing accuracy."""
    df = df if df is not None else load_summary(path)
    table = grouped(df, ("acc", "bwt", "learning_accuracy"), ci=False)
    extra = {}
    with h5py.File(path, "r") as f:
        for conf, g in df[df["status"] == "completed"].groupby("configuration", sort=False):
            vals = {"bytes": [], "routing": []}
            first = f["runs"][g["run_id"].iloc[0]]
            tp = first["trainable_parameters"][()]
            for rid in g["run_id"]:
                run = f["runs"][rid]
                for p in (run["plugins"].values() if "plugins" in run else []):
                    if "bytes_added" in p:
                        vals["bytes"].append(float(np.sum(p["bytes_added"][()])))
                    if "routing_accuracy_final" in p:
                        vals["routing"].append(float(np.mean(p["routing_accuracy_final"][()])))
            extra[conf] = {
                "trainable params exp 0 / exp ≥1": f"{int(tp[0])} / {np.mean(tp[1:]):.0f}" if len(tp) > 1 else str(int(tp[0])),
                "total params": str(int(first["costs"].attrs["total_parameters"])),
                "bytes added (all exp)": _pm(seed_stats(vals["bytes"]), 1, digits=0) if vals["bytes"] else "—",
                "routing acc %": _pm(seed_stats(vals["routing"]), 100, digits=1) if vals["routing"] else "—",
            }
    for col in ("trainable params exp 0 / exp ≥1", "total params", "bytes added (all exp)", "routing acc %"):
        table[col] = [extra.get(c, {}).get(col, "—") for c in table["configuration"]]
    return table


def device_table(path, df=None, accuracy=None) -> pd.DataFrame:
    """Experiments/device_schedules.json (and any file with on-device columns): per configuration
    the training sessions, prequential accuracy, final ACC, int8 ACC, training energy (µJ) and peak
    memory, mean ± std over seeds, and whether it is on the accuracy–energy (E) and
    accuracy–memory (M) Pareto fronts of `accuracy` (default: prequential accuracy when the file
    has it, else ACC) — what plot_pareto.py printed."""
    from ..figures import pareto_front
    df = df if df is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    if accuracy is None:
        accuracy = "prequential_acc" if "prequential_acc" in ok and ok["prequential_acc"].notna().any() else "acc"
    cols = [c for c in dict.fromkeys([accuracy, "final_acc", "acc_int8", "energy_j", "training_sessions",
                                      "peak_memory_bytes"]) if c in ok.columns]
    agg = aggregate(df, cols)
    acc = agg[(accuracy, "mean")].to_numpy()
    fe = set(pareto_front(agg[("energy_j", "mean")].to_numpy(), acc)) if "energy_j" in cols else set()
    fm = set(pareto_front(agg[("peak_memory_bytes", "mean")].to_numpy(), acc)) if "peak_memory_bytes" in cols else set()

    def ms(conf, c, scale=1.0, digits=3):
        st = {k: agg.loc[conf, (c, k)] for k in ("n", "mean", "std")} if c in cols else {"n": 0}
        return _pm(st, scale, digits=digits)

    rows = []
    for i, conf in enumerate(agg.index):
        rows.append({"configuration": conf, "n": int(agg.loc[conf, (accuracy, "n")]),
                     "sessions": ms(conf, "training_sessions", 1, 1).split(" ± ")[0],
                     ("prequential acc" if accuracy == "prequential_acc" else accuracy): ms(conf, accuracy),
                     "final ACC": ms(conf, "final_acc"), "int8 ACC": ms(conf, "acc_int8"),
                     "training energy (µJ)": ms(conf, "energy_j", 1e6, 0),
                     "peak memory (B)": ms(conf, "peak_memory_bytes", 1, 0).split(" ± ")[0],
                     "Pareto (E / M)": f"{'E' if i in fe else '-'} / {'M' if i in fm else '-'}"})
    return pd.DataFrame(rows)


def regularisation_extra(df) -> pd.DataFrame:
    return paired_table(df, "naive", ("bwt",))
