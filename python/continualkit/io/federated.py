"""A federated run's `federation/` group: `is_federated`, `federation`."""
from __future__ import annotations

from typing import Iterable

import h5py
import numpy as np
import xarray as xr

from .matrices import _exp_names, _unique_labels
from .summary import _str


#: Per-round, per-evaluation and per-client datasets of `runs/<id>/federation/` and their dims.
FEDERATION_ROUND = ("invited", "available", "completed", "adversarial", "bytes_up", "bytes_down", "training_joules",
                    "radio_joules", "mean_update_norm", "epsilon", "samples_trained", "aggregated")
FEDERATION_EVALUATION = ("global_accuracy", "personal_accuracy")
FEDERATION_CLIENT = ("invitations", "participations", "adversary", "client_bytes_up", "client_bytes_down",
                     "client_joules", "device_pattern")


def is_federated(path: str, run_ids: Iterable[str] | None = None) -> bool:
    """True when any of the runs (default: all) has a `federation/` group."""
    with h5py.File(path, "r") as f:
        ids = list(run_ids) if run_ids is not None else list(f["runs"].keys())
        return any(rid in f["runs"] and "federation" in f["runs"][rid] for rid in ids)


def federation(path: str, run_id: str) -> xr.Dataset | None:
    """A federated run's `federation/` group as a Dataset (None for a run without one).

    Dims: `round` (0-based index of the round: invited, available, completed, adversarial,
    bytes_up, bytes_down, training_joules, radio_joules, mean_update_norm, epsilon — NaN without
    noise, inf for clipping without noise —, samples_trained, aggregated), `evaluated_round` (the
    round after which an evaluation was taken: global_accuracy — NaN unless share = all —,
    personal_accuracy, and `personal_accuracy_quantiles` / `global_accuracy_quantiles` over
    `level`), `client` (invitations, participations, adversary, client_bytes_up,
    client_bytes_down, client_joules, device_pattern) and `evaluated_client` (the ids of the
    clients whose models are evaluated, i.e. `population()`'s users: `global_final_accuracy`
    over (evaluated_client, evaluated)). Each variable keeps its `meaning` and `units`; the
    group's attributes (clients, rounds, sampling_rate, share, personal, aggregation, encoding,
    final_epsilon, delta, shared_parameters, …) are the Dataset's attrs."""
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        if "federation" not in g:
            return None
        fg = g["federation"]
        attrs = {k: (_str(v).item() if isinstance(_str(v), np.generic) else _str(v)) for k, v in fg.attrs.items()}
        data, coords = {}, {}

        def var(name, dims, values):
            a = {k: _str(fg[name].attrs[k]) for k in ("meaning", "units") if k in fg[name].attrs}
            data[name] = xr.Variable(dims, values, attrs=a)

        def values(name):
            v = fg[name][()]
            return np.array([_str(x) for x in v]) if v.dtype.kind in "SO" else np.asarray(v)

        if "round" in fg:
            coords["round"] = np.asarray(fg["round"][()])
        for k in FEDERATION_ROUND:
            if k in fg:
                var(k, ("round",), values(k))
        if "evaluated_round" in fg:
            coords["evaluated_round"] = np.asarray(fg["evaluated_round"][()])
        for k in FEDERATION_EVALUATION:
            if k in fg:
                var(k, ("evaluated_round",), values(k))
        levels = None
        if "population" in g and "aggregate" in g["population"] and "quantile_levels" in g["population"]["aggregate"]:
            levels = np.asarray(g["population"]["aggregate"]["quantile_levels"][()], dtype=float)
        for k in ("personal_accuracy_quantiles", "global_accuracy_quantiles"):
            if k in fg:
                v = values(k)
                if levels is not None and len(levels) == v.shape[1]:
                    coords["level"] = levels
                var(k, ("evaluated_round", "level"), v)
        if "client" in fg:
            coords["client"] = np.asarray(fg["client"][()])
        for k in FEDERATION_CLIENT:
            if k in fg:
                var(k, ("client",), values(k))
        if "evaluated_client" in fg:
            coords["evaluated_client"] = np.asarray(fg["evaluated_client"][()])
        if "global_final_accuracy" in fg:
            var("global_final_accuracy", ("evaluated_client", "evaluated"), values("global_final_accuracy"))
            names = _exp_names(g, fg["global_final_accuracy"].shape[1])
            coords["evaluated_name"] = ("evaluated", _unique_labels(names))
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    ds.attrs["run_id"] = run_id
    return ds
