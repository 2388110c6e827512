"""The federation table: one row per federated configuration (personal and global ACC, bytes,
energy, ε, rounds), and each setting's local-only baseline."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..io import federation_runs, load_summary, local_only_configuration
from ..stats import aggregate
from .grouped import _pm


#: Federation table columns: (per-run column of `federation_runs`, header, scale, digits).
FEDERATION_COLUMNS = (
    ("personal_acc", "personal ACC %", 100, 2),
    ("forgetting", "forgetting pts", 100, 2),
    ("global_acc", "global ACC %", 100, 2),
    ("bytes_per_client", "KiB / client", 1 / 1024, 1),
    ("joules_per_client", "mJ / client", 1000, 3),
    ("epsilon", "ε", 1, 2),
    ("rounds_per_client", "rounds / client", 1, 2),
)


def federation_table(path, df=None, numeric=False) -> pd.DataFrame:
    """Federated runs (issue 16), one row per configuration, mean ± std over seeds: personal ACC
    (the model each phone predicts with, over its own experiences; mean over the evaluated
    clients), forgetting, global ACC (the final global model on the same clients and experiences;
    — unless share = all), KiB up + down per client over the run, energy per client (training
    and transfers, mJ), ε after the last round at the file's δ (— without noise, ∞ for clipping
    without noise) and rounds each client took part in. A value the same for every seed is shown
    without "± 0". See `io.federation_runs`."""
    df = df if df is not None else load_summary(path)
    runs = federation_runs(path, df)
    if runs.empty:
        raise KeyError(f"{path} has no federated run")
    cols = [c for c, *_ in FEDERATION_COLUMNS]
    with np.errstate(invalid="ignore"):      # ε = inf (clipping without noise) has no std
        agg = aggregate(runs, cols)
    if numeric:
        flat = agg.copy()
        flat.columns = [f"{m}_{s}" for m, s in flat.columns]
        flat.insert(0, "runs", [agg.attrs["runs"][c] for c in agg.index])
        return flat.reset_index()
    deltas = sorted(set(runs["delta"].dropna()))
    eps_head = f"ε (δ = {deltas[0]:g})" if len(deltas) == 1 else "ε (at each run's δ)"
    rows = []
    for conf in agg.index:
        g = runs[runs["configuration"] == conf]
        total = int((df["configuration"] == conf).sum())
        r = {"configuration": conf, "n": str(len(g)) if len(g) == total else f"{len(g)}/{total}"}
        for c, head, scale, digits in FEDERATION_COLUMNS:
            if c == "epsilon":
                head = eps_head
                if np.isinf(g[c]).any():
                    r[head] = "∞"
                    continue
            st = {s: agg.loc[conf, (c, s)] for s in ("n", "mean", "std")}
            if st["std"] <= 1e-9 * max(1.0, abs(st["mean"])):   # every seed the same (ε, local-only bytes): no "± 0.00"
                st["std"] = math.nan
            r[head] = _pm(st, scale, digits=digits)
        rows.append(r)
    return pd.DataFrame(rows)


def _local_only_settings(path, df) -> dict:
    """Local-only configuration → the configurations run at its values of the swept key paths
    (itself included), for files whose federated configurations span several settings."""
    runs = federation_runs(path, df)
    out: dict = {}
    for conf in dict.fromkeys(runs["configuration"]):
        local = local_only_configuration(runs, like=conf)
        if local is not None:
            out.setdefault(local, []).append(conf)
    return out
