"""A results file's matrices and curves as xarray: `metric_matrix`, `curves`, `prequential`."""
from __future__ import annotations

from typing import Iterable

import h5py
import numpy as np
import pandas as pd
import xarray as xr

from .summary import MATRIX_ALIASES, _str, load_summary


def _exp_names(g, T):
    if "experience_names" in g:
        names = [_str(x) for x in g["experience_names"][()]]
        if len(names) == T:
            return names
    return [f"exp {j}" for j in range(T)]


def _unique_labels(names):
    """Experience names made unique (phases repeat, e.g. morning … morning) by suffixing #k."""
    seen, out = {}, []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} #{seen[n]}")
    return out


def metric_matrix(path: str, metric: str = "accuracy_matrix", run_ids: Iterable[str] | None = None,
                  summary: pd.DataFrame | None = None) -> xr.DataArray:
    """A metric matrix of every completed run as one DataArray with dims
    (run, trained_through, evaluated); coords: run (run id), configuration, seed, name per run,
    experience names on both matrix axes (`trained_through_name`, `evaluated_name`).

    Runs whose matrix has a different size than the first are left out (a file mixing stream
    lengths: select `run_ids` yourself).
    """
    metric = MATRIX_ALIASES.get(metric, metric)
    df = summary if summary is not None else load_summary(path)
    ok = df[df["status"] == "completed"] if "status" in df.columns else df
    ids = list(run_ids) if run_ids is not None else list(ok["run_id"])
    mats, kept, names = [], [], None
    with h5py.File(path, "r") as f:
        for rid in ids:
            g = f["runs"][rid]
            if metric not in g:
                continue
            m = np.asarray(g[metric][()], dtype=float)
            if mats and m.shape != mats[0].shape:
                continue
            if names is None:
                names = _exp_names(g, m.shape[0])
            mats.append(m)
            kept.append(rid)
    if not mats:
        raise KeyError(f"no completed run in {path} has a {metric!r} matrix")
    T = mats[0].shape[0]
    rows = df.set_index("run_id").loc[kept]
    labels = _unique_labels(names)
    da = xr.DataArray(np.stack(mats), dims=("run", "trained_through", "evaluated"),
                      coords={"run": kept, "trained_through": np.arange(T), "evaluated": np.arange(T),
                              "trained_through_name": ("trained_through", labels),
                              "evaluated_name": ("evaluated", labels),
                              "configuration": ("run", list(rows["configuration"])),
                              "seed": ("run", [int(s) for s in rows["seed"]]),
                              "name": ("run", list(rows["name"]))},
                      name=metric)
    da.attrs.update(units="fraction (0..1)", experiment=df.attrs.get("experiment_name", ""))
    return da


def curves(path: str, name: str = "loss_curve", summary: pd.DataFrame | None = None) -> xr.DataArray:
    """Per-run curves of shape (T, E) (`loss_curve`, `penalty_curve`) as (run, experience, epoch)."""
    df = summary if summary is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    arrs, kept = [], []
    with h5py.File(path, "r") as f:
        for rid in ok["run_id"]:
            g = f["runs"][rid]
            if name in g:
                a = np.asarray(g[name][()], dtype=float)
                if arrs and a.shape != arrs[0].shape:
                    continue
                arrs.append(a)
                kept.append(rid)
    if not arrs:
        raise KeyError(f"no run has {name}")
    rows = df.set_index("run_id").loc[kept]
    return xr.DataArray(np.stack(arrs), dims=("run", "experience", "epoch"),
                        coords={"run": kept, "configuration": ("run", list(rows["configuration"])),
                                "seed": ("run", [int(s) for s in rows["seed"]])}, name=name)


def prequential(path: str, summary: pd.DataFrame | None = None) -> xr.Dataset | None:
    """Prequential curves (`runs/<id>/prequential/`) as a Dataset with dims (run, position):
    `window_accuracy`, `cumulative_accuracy`, `experience`. None when no run is prequential."""
    df = summary if summary is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    recs, kept, pos, starts = [], [], None, None
    with h5py.File(path, "r") as f:
        for rid in ok["run_id"]:
            g = f["runs"][rid]
            if "prequential" not in g:
                continue
            p = g["prequential"]
            r = {k: np.asarray(p[k][()], dtype=float) for k in ("window_accuracy", "cumulative_accuracy", "experience")
                 if k in p}
            position = np.asarray(p["position"][()]) if "position" in p else np.arange(len(r["window_accuracy"]))
            if pos is not None and len(position) != len(pos):
                continue
            pos = position
            if starts is None and "experience_starts" in p:
                starts = np.asarray(p["experience_starts"][()])
            recs.append(r)
            kept.append(rid)
    if not recs:
        return None
    rows = df.set_index("run_id").loc[kept]
    data = {k: (("run", "position"), np.stack([r[k] for r in recs])) for k in recs[0]}
    ds = xr.Dataset(data, coords={"run": kept, "position": pos,
                                  "configuration": ("run", list(rows["configuration"])),
                                  "seed": ("run", [int(s) for s in rows["seed"]])})
    if starts is not None:
        ds.attrs["experience_starts"] = starts
    return ds
