"""The `/tuning` group of a results file (docs/tuning.md): which hyperparameters each tuned
variant chose on a validation split of its training data, with what validation score, from how
large a grid and at what compute. Test sets are never read by the selection.

    >>> from continualkit.tuning import load_tuning
    >>> load_tuning("results/mnist_split.h5")      # one row per tuned variant
"""
from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd


def load_tuning(path) -> pd.DataFrame:
    """One row per tuned variant: `variant`, `chosen` (path=value, …), `validation_acc` (%, mean
    over selection seeds of the chosen point), `best_minus_worst` (points between the best and the
    worst finite grid point), `points`, `seeds`, `experiences`, `validation_fraction`,
    `training_flops` (all selection runs), `at_edge` ("lr upper, …": parameters whose chosen value
    is the smallest or largest trained, so the best may lie beyond the grid; "" when none; files
    written before `"extend"` existed get it computed from their points). Empty when the file
    has no `/tuning` group."""
    rows = []
    with h5py.File(path, "r") as f:
        if "tuning" not in f:
            return pd.DataFrame(columns=["variant", "chosen", "validation_acc", "best_minus_worst", "points", "seeds",
                                         "experiences", "validation_fraction", "training_flops", "at_edge"])
        for name in sorted(f["tuning"]):
            g = f["tuning"][name]
            record = json.loads(g.attrs["record_json"])
            scores = np.asarray(g["scores"][()], dtype=float)
            means = scores.mean(axis=1) if scores.size else np.array([])
            finite = means[np.isfinite(means)]
            idx = record.get("chosen_index")
            chosen = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in sorted(record.get("chosen", {}).items()))
            rows.append({
                "variant": name,
                "chosen": chosen or "—",
                "validation_acc": float(means[idx]) * 100 if idx is not None else float("nan"),
                "best_minus_worst": float(finite.max() - finite.min()) * 100 if finite.size else float("nan"),
                "points": int(scores.shape[0]),
                "seeds": int(scores.shape[1]) if scores.ndim == 2 else 1,
                "experiences": record.get("experiences"),
                "validation_fraction": record.get("validation_fraction"),
                "training_flops": float(record.get("total_training_flops", 0)),
                "at_edge": ", ".join(f"{k.split('.')[-1]} {v}" for k, v in sorted(_edges(record).items())),
            })
    return pd.DataFrame(rows)


def _edges(record) -> dict:
    """Tuned path → "lower"/"upper" where the chosen value is the smallest/largest of two or more
    distinct numbers trained for it (the record's own `edges` when it has them)."""
    if "edges" in record:
        return record["edges"]
    idx, points = record.get("chosen_index"), record.get("points", [])
    out = {}
    if idx is None:
        return out
    for j, path in enumerate(record.get("parameters", [])):
        column = [p[j] for p in points]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in column) or len(set(column)) < 2:
            continue
        x = points[idx][j]
        if x == min(column):
            out[path] = "lower"
        elif x == max(column):
            out[path] = "upper"
    return out


def tuning_table(path) -> pd.DataFrame | None:
    """`load_tuning` formatted for `continualkit table` (None without `/tuning`)."""
    df = load_tuning(path)
    if df.empty:
        return None
    out = pd.DataFrame({
        "variant": df["variant"],
        "chosen": df["chosen"],
        "validation ACC %": df["validation_acc"].map(lambda v: f"{v:.2f}"),
        "grid spread pts": df["best_minus_worst"].map(lambda v: f"{v:.2f}"),
        "points × seeds": [f"{p} × {s}" for p, s in zip(df["points"], df["seeds"])],
        "selection FLOPs": df["training_flops"].map(lambda v: f"{v:.2g}"),
        "at grid edge": df["at_edge"].replace("", "—"),
    })
    return out
