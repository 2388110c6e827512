"""Reading ContinualKit results files (layout: docs/results-format.md).

    import continualkit as ck
    df = ck.load_summary("results/regularisation.h5")    # one row per run, str columns, "configuration"
    R = ck.metric_matrix("results/regularisation.h5")     # xarray: run × trained_through × evaluated
"""
from __future__ import annotations

import json
import re
from typing import Iterable

import h5py
import numpy as np
import pandas as pd
import xarray as xr

#: Columns holding wall times: the only values that differ between two runs of one config.
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


def load_run(path: str, run_id: str) -> dict:
    """One run group as plain Python/numpy values (None for datasets a failed run lacks).

    Keys: run_id, name, status, message, seed, config, sweep_values, accuracy (T×T), every matrix
    of MATRIX_NAMES present (and `<name>_baseline_random`), baseline_random, baseline_init,
    experience_names, forgetting_per_experience, loss_curve, penalty_curve, test_sizes,
    samples_processed, steps, trainable_parameters, metrics, costs, matrix_metrics
    ({matrix: {acc, bwt, fwt, forgetting}} as stored), plugins.
    """
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        a = g.attrs

        def ds(name):
            return g[name][()] if name in g and isinstance(g[name], h5py.Dataset) else None

        out = {
            "run_id": _str(a.get("run_id", run_id)),
            "name": _str(a.get("name", "")),
            "status": _str(a.get("status", "")),
            "message": _str(a.get("message", "")),
            "seed": int(a.get("seed", 0)),
            "primary_metric": _str(a.get("primary_metric", "accuracy")),
            "config": _json_attr(a, "config_json", {}),
            "sweep_values": _json_attr(a, "sweep_values_json", {}),
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
            "matrix_metrics": {},
            "plugins": {},
        }
        for m in MATRIX_NAMES[1:]:
            if m in g:
                out[m] = g[m][()]
                out[m + "_baseline_random"] = ds(m + "_baseline_random")
                out["matrix_metrics"][m] = {k: float(v) for k, v in g[m].attrs.items()
                                            if k in ("acc", "bwt", "fwt", "forgetting")}
        if "plugins" in g:
            for name, pg in g["plugins"].items():
                out["plugins"][name] = {
                    "attributes": {k: _str(v) for k, v in pg.attrs.items()},
                    "arrays": {k: v[()] for k, v in pg.items() if isinstance(v, h5py.Dataset)},
                }
    return out


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


def federation_runs(path: str, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per completed federated run (the summary's columns plus what the federation table
    aggregates), in sweep order: `personal_acc` and `forgetting` (the summary's `acc` and
    `forgetting`: means over the evaluated clients, or of `population/metrics` when absent),
    `global_acc` (the file's `federation` attribute `global_acc`, else the mean of
    `global_final_accuracy`: the final global model's accuracy over every experience of the
    evaluated clients — the one definition of docs/federated.md, the same number `continual
    inspect` prints; NaN unless share = all), `bytes_per_client` (mean over clients of
    client_bytes_up + client_bytes_down), `joules_per_client` (mean of client_joules),
    `epsilon` (ε after the last round; NaN without noise, inf for clipping without noise),
    `delta`, `rounds_per_client` (mean participations; NaN for share = none, which has no server
    rounds), `share`, `personal`, `aggregation`.
    The summary's attrs are kept (so `stats.aggregate` groups it as usual)."""
    df = summary if summary is not None else load_summary(path)
    ok = df[df["status"] == "completed"] if "status" in df.columns else df
    rows = []
    with h5py.File(path, "r") as f:
        for _, r in ok.iterrows():
            g = f["runs"][r["run_id"]]
            if "federation" not in g:
                continue
            fg = g["federation"]
            pm = g["population"]["metrics"] if "population" in g and "metrics" in g["population"] else {}

            def pop_mean(name):
                # the summary's value (what `continual inspect` prints: the mean over the
                # population's users) when present, else the mean of population/metrics
                if name in r and pd.notna(r[name]):
                    return float(r[name])
                values = np.asarray(pm[name][()], dtype=float) if name in pm else np.array([])
                # all NaN (no user had the measure): NaN, without numpy's empty-slice warning
                return float(np.nanmean(values)) if np.isfinite(values).any() else np.nan

            share = _str(fg.attrs.get("share", ""))
            gfa = np.asarray(fg["global_final_accuracy"][()], dtype=float) if "global_final_accuracy" in fg else None
            eps = np.asarray(fg["epsilon"][()], dtype=float) if "epsilon" in fg else np.array([])
            up = np.asarray(fg["client_bytes_up"][()], dtype=float) if "client_bytes_up" in fg else None
            down = np.asarray(fg["client_bytes_down"][()], dtype=float) if "client_bytes_down" in fg else None
            rows.append({
                **r.to_dict(),
                "personal_acc": pop_mean("acc"),
                "forgetting": pop_mean("forgetting"),
                # the file's own value (FederationOutcome.globalACC, what `continual inspect`
                # prints) when stored; older files: the same definition from the dataset
                "global_acc": (float(fg.attrs["global_acc"]) if "global_acc" in fg.attrs
                               else float(np.nanmean(gfa)) if gfa is not None and np.isfinite(gfa).any()
                               else np.nan) if share == "all" else np.nan,
                "bytes_per_client": float(np.mean(up + down)) if up is not None and down is not None else np.nan,
                "joules_per_client": float(np.mean(fg["client_joules"][()])) if "client_joules" in fg else np.nan,
                "epsilon": float(eps[-1]) if len(eps) else float(fg.attrs.get("final_epsilon", np.nan)),
                "delta": float(fg.attrs["delta"]) if "delta" in fg.attrs else np.nan,
                # share = none has no server rounds (files written before cf91947 counted its local rounds)
                "rounds_per_client": float(np.mean(fg["participations"][()])) if "participations" in fg
                and share != "none" else np.nan,
                "share": share, "personal": _str(fg.attrs.get("personal", "")),
                "aggregation": _str(fg.attrs.get("aggregation", "")),
            })
    out = pd.DataFrame(rows)
    # 12 decimals: a mean taken in another order (global ACC of a run whose phones predict with
    # the global model vs the summary's ACC) must not print differently by 1e-16 at a .xx5 edge
    for c in ("personal_acc", "forgetting", "global_acc", "epsilon"):
        if c in out:
            out[c] = out[c].round(12)
    out.attrs.update(df.attrs)
    return out


def _setting(runs: pd.DataFrame, configuration: str) -> tuple | None:
    """The values of the file's swept key paths (columns named like `federation.partition.alpha`)
    that `configuration` ran at, or None when its runs disagree."""
    swept = [c for c in runs.columns if "." in c]
    if not swept:
        return ()
    rows = runs[runs["configuration"] == configuration][swept].astype(str).drop_duplicates()
    return tuple(rows.iloc[0]) if len(rows) == 1 else None


def local_only_configuration(runs: pd.DataFrame, like: str | None = None) -> str | None:
    """The configuration that shares nothing (share = none: every phone learns alone), the
    baseline of personalisation gains: `local_only` when so named, else the first such; None
    when there is none. With `like` (a configuration of a file that sweeps key paths, e.g. the
    Dirichlet alpha), only a local-only configuration run at `like`'s values of every swept key
    path: each setting's clients hold their own data, so a gain or a reference is measured within
    one setting (None when that setting has no local-only configuration)."""
    if runs.empty or "share" not in runs:
        return None
    confs = list(dict.fromkeys(runs[runs["share"] == "none"]["configuration"]))
    if like is not None:
        want = _setting(runs, like)
        confs = [c for c in confs if want is not None and _setting(runs, c) == want]
    if not confs:
        return None
    named = [c for c in confs if runs[runs["configuration"] == c]["variant"].eq("local_only").all()] \
        if "variant" in runs else []
    return "local_only" if "local_only" in confs else (named[0] if named else confs[0])


def personalisation_gains(path: str, baseline: str | None = None, summary: pd.DataFrame | None = None,
                          metric: str = "acc") -> pd.DataFrame:
    """Per client: its personal `metric` (population/metrics, default ACC) under each federated
    configuration minus the same client's value under `baseline` (default: the local-only
    configuration at the same values of every swept key path, `local_only_configuration(runs,
    like=…)`), matched on seed and client id (clients with one id in runs of one seed and setting
    hold the same data). Columns: configuration, seed, client, value,
    baseline_value, gain (fractions, not %). `attrs["baseline"]` names the baseline. Raises
    ValueError when the file has no such baseline."""
    runs = federation_runs(path, summary)
    base = baseline or local_only_configuration(runs)
    # each configuration's own baseline: the one given, or the local-only run at its setting
    bases = {c: baseline or local_only_configuration(runs, like=c) for c in dict.fromkeys(runs.get("configuration", []))}
    if base is None or base not in set(runs.get("configuration", [])):
        raise ValueError(f"{path}: no local-only configuration (share = none) to measure personalisation gains against"
                         if baseline is None else f"{path}: baseline {baseline!r} is not a federated configuration")

    def per_client(f, rid):
        p = f["runs"][rid].get("population")
        if p is None or "metrics" not in p or metric not in p["metrics"]:
            return None
        v = np.asarray(p["metrics"][metric][()], dtype=float)
        ids = np.asarray(p["user"][()]) if "user" in p else np.arange(len(v))
        if "status" in p:
            done = np.array([_str(s) == "completed" for s in p["status"][()]])
            v, ids = v[done], ids[done]
        return pd.Series(v, index=ids)

    frames = []
    with h5py.File(path, "r") as f:
        base_runs = {(conf, int(r["seed"])): per_client(f, r["run_id"]) for conf in set(bases.values()) if conf
                     for _, r in runs[runs["configuration"] == conf].iterrows()}
        for _, r in runs[~runs["configuration"].isin(set(bases.values()))].iterrows():
            b = base_runs.get((bases.get(r["configuration"]), int(r["seed"])))
            v = per_client(f, r["run_id"])
            if b is None or v is None:
                continue
            common = v.index.intersection(b.index)
            frames.append(pd.DataFrame({"configuration": r["configuration"], "seed": int(r["seed"]), "client": common,
                                        "value": v.loc[common].to_numpy(), "baseline_value": b.loc[common].to_numpy()}))
    cols = ["configuration", "seed", "client", "value", "baseline_value", "gain"]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols[:-1])
    out["gain"] = out["value"] - out["baseline_value"]
    out = out[cols]
    used = list(dict.fromkeys(b for b in bases.values() if b))
    out.attrs.update(baseline=", ".join(used) if len(used) > 1 else base, metric=metric,
                     experiment_name=runs.attrs.get("experiment_name", ""))
    return out
