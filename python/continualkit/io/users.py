"""A population run's per-user data: `population`."""
from __future__ import annotations

import h5py
import numpy as np
import xarray as xr

from .matrices import _exp_names
from .summary import _str


def population(path: str, run_id: str) -> xr.Dataset | None:
    """A population run's per-user data: `accuracy_matrices` (user, trained_through, evaluated)
    when stored, per-user metrics (user), and the aggregate quantiles (metric, level). A
    population read from a data file's user column also has the coordinate `user_name` (the
    people's ids in that file, indexed: `ds.sel(user_name="alice")`).
    None for a run without a `population/` group."""
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        if "population" not in g:
            return None
        p = g["population"]
        n_users = None
        data, coords = {}, {}
        if "accuracy_matrices" in p:
            m = np.asarray(p["accuracy_matrices"][()], dtype=float)
            n_users = m.shape[0]
            data["accuracy_matrices"] = (("user", "trained_through", "evaluated"), m)
        if "metrics" in p and isinstance(p["metrics"], h5py.Group):
            for k, v in p["metrics"].items():
                arr = np.asarray(v[()], dtype=float)
                if arr.ndim == 1:
                    data[k] = (("user",), arr)
                    n_users = len(arr)
        if "final_accuracy" in p:
            arr = np.asarray(p["final_accuracy"][()], dtype=float)
            if arr.ndim == 1:
                data["final_accuracy"] = (("user",), arr)
            elif arr.ndim == 2:
                data["final_accuracy"] = (("user", "evaluated"), arr)
        if "status" in p:
            data["status"] = (("user",), np.array([_str(s) for s in p["status"][()]]))
        if "user" in p and n_users is not None and len(p["user"]) == n_users:
            coords["user"] = np.asarray(p["user"][()])   # the user (federated: client) ids
        if "user_name" in p and n_users is not None and len(p["user_name"]) == n_users:
            # A population read from a data file's user column: each index's name in that file.
            coords["user_name"] = ("user", np.array([_str(s) for s in p["user_name"][()]], dtype=object))
        if "aggregate" in p:
            ag = p["aggregate"]
            if "metric" in ag and "quantiles" in ag and "quantile_levels" in ag:
                mnames = [_str(x) for x in ag["metric"][()]]
                coords["metric"] = mnames
                coords["level"] = np.asarray(ag["quantile_levels"][()], dtype=float)
                data["quantiles"] = (("metric", "level"), np.asarray(ag["quantiles"][()], dtype=float))
                for k in ("mean", "std"):
                    if k in ag:
                        data[k] = (("metric",), np.asarray(ag[k][()], dtype=float))
        names = _exp_names(g, data["accuracy_matrices"][1].shape[1]) if "accuracy_matrices" in data else None
    ds = xr.Dataset(data, coords=coords)
    if "user_name" in ds.coords:
        ds = ds.set_xindex("user_name")   # ds.sel(user_name="alice") picks a person by name
    if names:
        ds.attrs["experience_names"] = names
    return ds
