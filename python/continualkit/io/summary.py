"""The summary of a results file and its run-level attributes: `load_summary`, provenance, the
experiment's JSON (layout: docs/results-format.md)."""
from __future__ import annotations

import json
import re

import h5py
import numpy as np
import pandas as pd

TIMING_COLUMNS = ("train_seconds", "eval_seconds")
#: Matrices with the accuracy matrix's layout (experience trained through × experience evaluated).
MATRIX_NAMES = ("accuracy_matrix", "balanced_accuracy", "macro_f1", "auroc", "auprc")
#: Short names accepted for the matrices.
MATRIX_ALIASES = {"accuracy": "accuracy_matrix", "acc": "accuracy_matrix", "balanced_acc": "balanced_accuracy"}

_SEED_PART = re.compile(r"^seed=")


def _str(x):
    if isinstance(x, bytes):
        return x.decode("utf-8")
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "SO":
        return _str(x[()])
    return x


def _json_attr(attrs, name, default):
    if name not in attrs:
        return default
    try:
        return json.loads(_str(attrs[name]))
    except (TypeError, ValueError):
        return default


def configuration_name(run_name: str) -> str:
    """A run name without its seed label, as the Swift side names configurations
    (`SweepReport.configurationName`): `naive_seed=3` → `naive`, `lr=0.1_seed=0` → `lr=0.1`,
    `seed=4` → `seed`; names without a `seed=` part are unchanged."""
    parts = [p for p in str(run_name).split("_") if not _SEED_PART.match(p)]
    joined = "_".join(parts)
    return joined if joined else "seed"


def load_summary(path: str, completed_only: bool = False) -> pd.DataFrame:
    """`/summary` as a DataFrame, one row per run in sweep order, string columns decoded.

    Adds a `configuration` column (the run name without its `seed=` part). `df.attrs` holds
    `swept_columns` (swept value columns, `seed` included when seeds are swept), `swept_paths`,
    `group_by` (variant + swept columns except seed: what identifies a configuration, as
    `continual inspect` groups), `experiment_name` and `path`.
    """
    with h5py.File(path, "r") as f:
        summary = f["summary"]
        df = pd.DataFrame(summary[:])
        swept = _json_attr(summary.attrs, "swept_columns_json", _json_attr(f.attrs, "swept_columns_json", []))
        paths = _json_attr(summary.attrs, "swept_paths_json", _json_attr(f.attrs, "swept_paths_json", []))
        name = _str(f.attrs.get("experiment_name", ""))
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].map(_str)
    if "sweep_index" in df.columns:
        df = df.sort_values("sweep_index", kind="stable").reset_index(drop=True)
    if "name" in df.columns:
        df["configuration"] = df["name"].map(configuration_name)
    if completed_only and "status" in df.columns:
        df = df[df["status"] == "completed"].reset_index(drop=True)
    group_by = [c for c in ["variant"] + [c for c in swept if c != "seed"] if c in df.columns]
    df.attrs.update(swept_columns=list(swept), swept_paths=list(paths),
                    group_by=group_by or ["name"], experiment_name=name, path=str(path))
    return df


def swept_values(df: pd.DataFrame) -> list[str]:
    """Swept columns except the seed (the values that distinguish configurations of a variant)."""
    return [c for c in df.attrs.get("swept_columns", []) if c != "seed" and c in df.columns]


def provenance(path: str) -> dict:
    """Root attributes that say where a file came from: toolkit, version, schema, creation time,
    experiment name/description/path, git commit when the file records one, and the commit the
    `continual` binary was built from (`toolkit_build_commit`, files written since issue 41)."""
    with h5py.File(path, "r") as f:
        a = {k: _str(v) for k, v in f.attrs.items()}
    out = {k: a[k] for k in ("toolkit", "toolkit_version", "schema_version", "created_utc", "experiment_name",
                             "experiment_description", "experiment_path", "kind",
                             "numerics_version", "kernel_path", "toolkit_build_commit", "toolkit_build_dirty") if k in a}
    for k in ("git_commit", "git_revision", "commit", "toolkit_commit"):
        if k in a:
            out["git_commit"] = a[k]
    out = {k: (v.item() if hasattr(v, "item") else v) for k, v in out.items()}
    return out


def experiment_json(path: str) -> dict:
    with h5py.File(path, "r") as f:
        return _json_attr(f.attrs, "experiment_json", {})


def run_config(path: str, run_id: str) -> dict:
    with h5py.File(path, "r") as f:
        return _json_attr(f["runs"][run_id].attrs, "config_json", {})
