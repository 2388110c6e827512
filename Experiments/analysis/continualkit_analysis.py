"""Load and summarise ContinualKit results files (HDF5 written by `continual run` / `continual sweep`).

    import continualkit_analysis as ck
    df = ck.load_summary("results/tiny_sweep.h5")        # one row per run, str columns
    ck.mean_std(df)                                     # mean ± std over seeds, grouped by swept values
    run = ck.load_run("results/tiny_sweep.h5", df.run_id[0])
    run["accuracy"]                                     # T × T matrix R[i][j]

Layout: docs/results-format.md and docs/sweeps-and-clusters.md.
"""
from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd

#: Columns holding wall times: the only values that differ between two runs of one config.
TIMING_COLUMNS = ("train_seconds", "eval_seconds")
#: Metrics `mean_std` summarises by default.
METRICS = ("acc", "bwt", "fwt", "forgetting", "learning_accuracy")


def _str(x):
    return x.decode("utf-8") if isinstance(x, bytes) else x


def _json_attr(attrs, name, default):
    if name not in attrs:
        return default
    return json.loads(_str(attrs[name]))


def load_summary(path: str) -> pd.DataFrame:
    """`/summary` as a DataFrame, string columns decoded to `str`.

    h5py returns the variable-length strings inside the compound table as `bytes`; they are
    decoded here. `df.attrs` holds `swept_columns` (columns of swept values, `seed` included when
    seeds are swept), `swept_paths` (their JSON key paths) and `group_by` (variant + swept
    columns except seed: what `mean_std` groups by).
    """
    with h5py.File(path, "r") as f:
        summary = f["summary"]
        df = pd.DataFrame(summary[:])
        swept = _json_attr(summary.attrs, "swept_columns_json", [])
        paths = _json_attr(summary.attrs, "swept_paths_json", [])
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].map(_str)
    df.attrs["swept_columns"] = swept
    df.attrs["swept_paths"] = paths
    group_by = [c for c in ["variant"] + [c for c in swept if c != "seed"] if c in df.columns]
    df.attrs["group_by"] = group_by or ["name"]
    return df


def load_run(path: str, run_id: str) -> dict:
    """One run group as plain Python/numpy values.

    Keys: run_id, name, status, message, seed, config (dict), accuracy (T×T), baseline_random,
    baseline_init, experience_names, forgetting_per_experience, loss_curve, penalty_curve,
    test_sizes, samples_processed, steps, trainable_parameters (per experience), metrics (dict),
    costs (dict), plugins ({name: {"attributes": {...}, "arrays": {...}}}), sweep_values (dict).
    Missing datasets (a run that failed) are None.
    """
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        a = g.attrs

        def ds(name):
            return g[name][()] if name in g else None

        out = {
            "run_id": _str(a.get("run_id", run_id)),
            "name": _str(a.get("name", "")),
            "status": _str(a.get("status", "")),
            "message": _str(a.get("message", "")),
            "seed": int(a.get("seed", 0)),
            "config": json.loads(_str(a["config_json"])) if "config_json" in a else {},
            "sweep_values": json.loads(_str(a["sweep_values_json"])) if "sweep_values_json" in a else {},
            "accuracy": ds("accuracy_matrix"),
            "baseline_random": ds("baseline_random"),
            "baseline_init": ds("baseline_init"),
            "forgetting_per_experience": ds("forgetting_per_experience"),
            "loss_curve": ds("loss_curve"),
            "penalty_curve": ds("penalty_curve"),
            "test_sizes": ds("test_sizes"),
            "samples_processed": ds("samples_processed"),
            "steps": ds("steps"),
            "trainable_parameters": ds("trainable_parameters"),
            "experience_names": [_str(x) for x in g["experience_names"][()]] if "experience_names" in g else [],
            "metrics": {k: float(v) for k, v in g["metrics"].attrs.items()} if "metrics" in g else {},
            "costs": {k: (_str(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v)
                      for k, v in g["costs"].attrs.items()} if "costs" in g else {},
            "plugins": {},
        }
        if "plugins" in g:
            for name, pg in g["plugins"].items():
                out["plugins"][name] = {
                    "attributes": {k: _str(v) for k, v in pg.attrs.items()},
                    "arrays": {k: v[()] for k, v in pg.items()},
                }
    return out


def group_columns(df):
    """Columns that identify a configuration: variant + swept columns except seed."""
    return [c for c in (df.attrs.get("group_by") or ["variant"]) if c in df.columns]


def config_label(keys, columns):
    """`variant_col=value_…` for a group key (NaN values, i.e. a column the variant does not sweep, left out)."""
    keys = keys if isinstance(keys, tuple) else (keys,)
    parts = []
    for c, k in zip(columns, keys):
        if isinstance(k, float) and np.isnan(k):
            continue
        parts.append(str(k) if c in ("variant", "name") else f"{c}={k:g}" if isinstance(k, float) else f"{c}={k}")
    return "_".join(parts) or "all"


def config_groups(rows, columns):
    """(label, rows) per distinct value of `columns` (NaN kept as its own value), in first-seen order."""
    if not columns:
        return [("all", rows)]
    return [(config_label(k, columns), g) for k, g in rows.groupby(columns if len(columns) > 1 else columns[0], sort=False, dropna=False)]


def mean_std(df: pd.DataFrame, by=None, metrics=METRICS, completed_only: bool = True) -> pd.DataFrame:
    """Mean ± std (n−1) over seeds of `metrics`, grouped by `by` (default: variant + swept values
    except seed, i.e. `df.attrs["group_by"]`). Columns: (metric, "mean"|"std"|"count")."""
    by = list(by) if by is not None else list(df.attrs.get("group_by") or ["name"])
    rows = df[df["status"] == "completed"] if completed_only and "status" in df else df
    metrics = [m for m in metrics if m in rows.columns]
    return rows.groupby(by, sort=False, dropna=False)[metrics].agg(["mean", "std", "count"])


def recompute_metrics(R, baseline_random) -> dict:
    """ACC, BWT, FWT (vs the random-init baseline), forgetting and learning accuracy from an
    accuracy matrix, by the definitions in docs/concepts.md (Lopez-Paz & Ranzato 2017; Chaudhry et al. 2018)."""
    R = np.asarray(R, dtype=float)
    b = np.asarray(baseline_random, dtype=float)
    T = R.shape[0]
    out = {"acc": R[T - 1].mean(), "learning_accuracy": np.mean([R[j, j] for j in range(T)])}
    if T < 2:
        out.update(bwt=np.nan, fwt=np.nan, forgetting=np.nan)
        return out
    out["bwt"] = np.mean([R[T - 1, j] - R[j, j] for j in range(T - 1)])
    out["fwt"] = np.mean([R[j - 1, j] - b[j] for j in range(1, T)])
    out["forgetting"] = np.mean([R[: T - 1, j].max() - R[T - 1, j] for j in range(T - 1)])
    return out


def seen_accuracy_curve(R) -> np.ndarray:
    """Mean accuracy over the experiences seen so far after training each experience:
    c[i] = mean_{j<=i} R[i][j]."""
    R = np.asarray(R, dtype=float)
    return np.array([R[i, : i + 1].mean() for i in range(R.shape[0])])
