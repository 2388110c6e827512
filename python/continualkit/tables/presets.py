"""Which tables a results file gets (`experiment_tables`): the experiment's own table when it
has one, the federation table for federated runs, then measures beyond accuracy, the tuning
choices and the paired comparison against the experiment's baseline."""
from __future__ import annotations

import pandas as pd

from ..io import federation_runs, is_federated, load_summary, local_only_configuration
from .experiments import device_table, peft_table, replay_table
from .federation import _local_only_settings, federation_table
from .grouped import DEFAULT_METRICS, grouped, paired_table
from .hsu import hsu_table


#: experiment name → (table function, default baseline for the paired table)
PRESETS = {"replay": (replay_table, "naive"), "peft": (peft_table, "naive"), "hsu_table": (hsu_table, None),
           "device_schedules": (device_table, None),
           "regularisation": (None, "naive")}


def experiment_tables(path, metrics=None, baseline=None, df=None) -> list[tuple[str, pd.DataFrame]]:
    """The tables for a file: the experiment's own table when it has one (replay, PEFT, Hsu),
    else the grouped metrics; then the paired comparison against `baseline` (default: the
    experiment's, e.g. naive, when that configuration exists)."""
    df = df if df is not None else load_summary(path)
    name = df.attrs.get("experiment_name", "")
    fn, default_baseline = PRESETS.get(name, (None, None))
    ok = df[df["status"] == "completed"] if "status" in df.columns else df
    federated = len(ok) > 0 and is_federated(path, ok["run_id"])
    paired_metrics = ("acc", "bwt")
    wanted = repr(default_baseline) if default_baseline else None   # what the paired table would pair against
    if federated:
        local = local_only_configuration(federation_runs(path, df))
        default_baseline = local or default_baseline
        wanted = repr(local) if local else "local-only (share: none)"
        paired_metrics = ("acc", "forgetting")
    out = []
    if metrics:
        out.append(("grouped metrics (mean ± std over seeds)", grouped(df, metrics)))
    elif federated:
        out.append(("federation (mean ± std over seeds)", federation_table(path, df=df)))
        # Runs of the file that have no federation (a local baseline swept beside it) get the
        # main table too, instead of vanishing behind the federated one (issue 41.8).
        plain = df[~df["run_id"].isin(federation_runs(path, df)["run_id"])]
        if len(plain[plain["status"] == "completed"] if "status" in plain.columns else plain):
            out.append(("runs without a federation (mean ± std over seeds)", grouped(plain, DEFAULT_METRICS)))
    elif fn is not None:
        out.append((f"{name} (mean ± std over seeds)", fn(path, df=df)))
    else:
        out.append(("grouped metrics (mean ± std over seeds)", grouped(df, DEFAULT_METRICS)))
    extra = [m for m in ("balanced_acc", "macro_f1", "auroc", "auprc") if m in df.columns and df[m].notna().any()]
    if extra and not metrics:
        out.append(("measures beyond accuracy (ACC of each measure's matrix, mean ± std over seeds)",
                    grouped(df, extra, ci=False)))
    from ..tuning import tuning_table
    tuned = tuning_table(path)
    if tuned is not None:
        out.append(("selected hyperparameters (validation split of the training data; test sets not read)", tuned))
    base = baseline or default_baseline
    settings = _local_only_settings(path, df) if federated and not baseline else {}
    if len(settings) > 1:
        # A sweep of key paths (e.g. the Dirichlet alpha): each setting's configurations pair with
        # the local-only run of that setting (its clients hold that setting's data).
        pm = [m for m in (metrics or paired_metrics) if m in df.columns]
        for local, confs in settings.items():
            out.append((f"paired by seed against {local}", paired_table(df[df["configuration"].isin(confs)], local, pm)))
    elif base and base in set(df["configuration"]) and df["configuration"].nunique() > 1:
        pm = [m for m in (metrics or paired_metrics) if m in df.columns]
        out.append((f"paired by seed against {base}", paired_table(df, base, pm)))
    elif wanted and not baseline and df["configuration"].nunique() > 1:
        # The experiment's usual baseline is not in this file: say so rather than drop the table.
        out.append((f"paired by seed: no table — this file has no {wanted} configuration to pair against "
                    f"(pass --baseline NAME, one of: " + ", ".join(dict.fromkeys(df["configuration"])) + ")",
                    pd.DataFrame()))
    elif baseline:
        raise KeyError(f"baseline {baseline!r} is not a configuration of {path}; have "
                       + ", ".join(dict.fromkeys(df["configuration"])))
    return out
