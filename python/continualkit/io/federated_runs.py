"""Federated runs as one table and personalisation gains against local-only training:
`federation_runs`, `local_only_configuration`, `personalisation_gains`."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd

from .summary import _str, load_summary


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
