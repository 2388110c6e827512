"""Tables of grouped metrics (mean ± std over seeds, 95 % CI, n), paired comparisons against a
baseline, and the per-experiment tables the README shows (regularisation, replay, PEFT, the Hsu
et al. 2018 table beside the paper's numbers), as markdown, CSV or LaTeX.

Every table is a pandas DataFrame of display strings (`render` turns it into text); `numeric=True`
gives the numbers instead (CSV).
"""
from __future__ import annotations

import json
import math
import re
from importlib import resources

import h5py
import numpy as np
import pandas as pd

from .io import _str, federation_runs, is_federated, load_summary, local_only_configuration
from .stats import aggregate, holm, paired, seed_stats

#: Metrics shown by default, and how they are printed: (header, scale, sign).
DEFAULT_METRICS = ("acc", "bwt", "forgetting")
FORMAT = {
    "acc": ("ACC %", 100, False), "bwt": ("BWT pts", 100, True), "fwt": ("FWT pts", 100, True),
    "forgetting": ("forgetting pts", 100, False), "learning_accuracy": ("learning acc %", 100, False),
    "balanced_acc": ("bal. acc %", 100, False), "macro_f1": ("macro-F1 %", 100, False),
    "auroc": ("AUROC %", 100, False), "auprc": ("AUPRC %", 100, False),
    "forgetting_last": ("forgetting (last) pts", 100, False), "bwt_all_pairs": ("BWT all pairs pts", 100, True),
    "energy_j": ("energy mJ", 1000, False), "peak_memory_bytes": ("peak memory KiB", 1 / 1024, False),
    "train_seconds": ("train s", 1, False), "prequential_acc": ("prequential ACC %", 100, False),
    "final_acc": ("final ACC %", 100, False), "acc_int8": ("int8 ACC %", 100, False),
    "min_acc": ("min-ACC %", 100, False), "wc_acc": ("WC-ACC %", 100, False),
}


def _steps(df: pd.DataFrame) -> dict:
    """Mean optimizer steps per experience of each configuration (the `steps_per_experience`
    summary column, issue 24), when the file records them; {} otherwise. Tables show it so that
    no comparison hides its compute budget."""
    if "steps_per_experience" not in df.columns or not df["steps_per_experience"].notna().any():
        return {}
    ok = df[df["status"] == "completed"] if "status" in df.columns else df
    return {c: float(g["steps_per_experience"].mean()) for c, g in ok.groupby("configuration", sort=False)}


def _pm(st, scale=100, sign=False, digits=2):
    if st["n"] == 0 or not np.isfinite(st["mean"]):
        return "—"
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    m = f.format(st["mean"] * scale)
    return m if not np.isfinite(st["std"]) else f"{m} ± {st['std'] * scale:.{digits}f}"


def _ci(st, scale=100, digits=1):
    if not np.isfinite(st.get("ci_half", math.nan)):
        return "—"
    return f"[{st['ci_low'] * scale:.{digits}f}, {st['ci_high'] * scale:.{digits}f}]"


def _task_aware(df: pd.DataFrame) -> dict:
    """Configurations whose runs used task identity at test time (`uses_task_labels`: a
    multi-head model or task-id routing), when the file has any; {} otherwise."""
    if "uses_task_labels" not in df.columns or not (df["uses_task_labels"] == 1).any():
        return {}
    return {c: bool((g["uses_task_labels"] == 1).any()) for c, g in df.groupby("configuration", sort=False)}


def grouped(df: pd.DataFrame, metrics=DEFAULT_METRICS, ci=True, numeric=False) -> pd.DataFrame:
    """One row per configuration (sweep order): n (completed/runs when some did not complete),
    each metric as mean ± std over seeds, and the 95 % CI of the first metric. When some runs
    used task labels at test time, a "task labels" column marks them (yes/no), so task-aware rows
    are never read as comparable with task-free ones."""
    metrics = [m for m in metrics if m in df.columns]
    aware = _task_aware(df)
    steps = _steps(df)
    agg = aggregate(df, metrics)
    if numeric:
        flat = agg.copy()
        flat.columns = [f"{m}_{s}" for m, s in flat.columns]
        flat.insert(0, "runs", [agg.attrs["runs"][c] for c in agg.index])
        if aware:
            flat.insert(1, "uses_task_labels", [int(aware.get(c, False)) for c in agg.index])
        if steps:
            flat.insert(1, "steps_per_experience", [steps.get(c, math.nan) for c in agg.index])
        return flat.reset_index()
    rows = []
    for conf in agg.index:
        runs, done = agg.attrs["runs"][conf], agg.attrs["completed"][conf]
        r = {"configuration": conf, "n": str(runs) if runs == done else f"{done}/{runs}"}
        if steps:
            r["steps/exp"] = f"{steps[conf]:.0f}" if np.isfinite(steps.get(conf, math.nan)) else "—"
        if aware:
            r["task labels"] = "yes" if aware.get(conf) else "no"
        for k, m in enumerate(metrics):
            head, scale, sign = FORMAT.get(m, (m, 1, False))
            st = {s: agg.loc[conf, (m, s)] for s in ("n", "mean", "std", "ci_low", "ci_high", "ci_half")}
            r[f"{head} (mean ± std)"] = _pm(st, scale, sign)
            if ci and k == 0:
                r[f"{head} 95% CI"] = _ci(st, scale)
        rows.append(r)
    return pd.DataFrame(rows)


def paired_table(df: pd.DataFrame, baseline: str, metrics=DEFAULT_METRICS, numeric=False) -> pd.DataFrame:
    """Every configuration minus `baseline`, matched on seed, per metric: mean difference with its
    95 % CI, paired t-test p, Wilcoxon p (n ≥ 6), each also Holm–Bonferroni corrected over the
    whole table (all configurations and metrics are one family; `stats.holm`), and seeds won
    (higher value; for forgetting a win is lower)."""
    frames = [paired(df, baseline, m) for m in metrics if m in df.columns]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not out.empty:
        # The table is one family of tests (every configuration × metric): Holm–Bonferroni over
        # all of its p-values, per test, the uncorrected p kept beside the corrected one.
        out["p_ttest_holm"] = holm(out["p_ttest"])
        out["p_wilcoxon_holm"] = holm(out["p_wilcoxon"])
    if numeric or out.empty:
        return out
    rows = []
    for r in out.to_dict("records"):
        head, scale, _ = FORMAT.get(r["metric"], (r["metric"], 1, False))
        lower_better = r["metric"].startswith("forgetting")
        wins = r["n"] - r["wins"] - r["ties"] if lower_better else r["wins"]
        rows.append({"configuration": r["configuration"], "metric": head.replace(" %", "").replace(" pts", ""),
                     f"Δ vs {baseline} (pts)": "—" if r["n"] == 0 else f"{r['diff_mean'] * scale:+.2f}",
                     "95% CI": _ci({"ci_half": r["ci_high"] - r["diff_mean"], "ci_low": r["ci_low"],
                                    "ci_high": r["ci_high"]}, scale, 2),
                     "p (paired t)": _p(r["p_ttest"]), "p Holm (t)": _p(r["p_ttest_holm"]),
                     "p (Wilcoxon)": _p(r["p_wilcoxon"]), "p Holm (W)": _p(r["p_wilcoxon_holm"]),
                     "seeds better": f"{wins}/{r['n']}"})
    return pd.DataFrame(rows)


def _p(p):
    return "—" if not np.isfinite(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


# ----------------------------------------------------------------------------- per experiment
def _first_run_per_conf(df):
    ok = df.sort_values("sweep_index")
    return ok.groupby("configuration", sort=False)["run_id"].first()


def replay_table(path, df=None) -> pd.DataFrame:
    """Experiments/replay.json: buffer size (samples / bytes) per configuration, ACC and BWT."""
    df = df if df is not None else load_summary(path)
    table = grouped(df, ("acc", "bwt"), ci=True)
    caps = {}
    with h5py.File(path, "r") as f:
        for conf, rid in _first_run_per_conf(df).items():
            plugins = f["runs"][rid].get("plugins")
            for p in (plugins.values() if plugins is not None else []):
                if "capacity_samples" in p.attrs:
                    caps[conf] = f"{int(p.attrs['capacity_samples'])} / {int(p.attrs['buffer_bytes'])} B"
    table.insert(1, "buffer (samples / bytes)", [caps.get(c, "—") for c in table["configuration"]])
    return table


def peft_table(path, df=None) -> pd.DataFrame:
    """Experiments/peft.json: ACC, BWT, learning accuracy, trainable parameters (experience 0 /
    later), total parameters, personalisation bytes added, routing accuracy."""
    df = df if df is not None else load_summary(path)
    table = grouped(df, ("acc", "bwt", "learning_accuracy"), ci=False)
    extra = {}
    with h5py.File(path, "r") as f:
        for conf, g in df[df["status"] == "completed"].groupby("configuration", sort=False):
            vals = {"bytes": [], "routing": []}
            first = f["runs"][g["run_id"].iloc[0]]
            tp = first["trainable_parameters"][()]
            for rid in g["run_id"]:
                run = f["runs"][rid]
                for p in (run["plugins"].values() if "plugins" in run else []):
                    if "bytes_added" in p:
                        vals["bytes"].append(float(np.sum(p["bytes_added"][()])))
                    if "routing_accuracy_final" in p:
                        vals["routing"].append(float(np.mean(p["routing_accuracy_final"][()])))
            extra[conf] = {
                "trainable params exp 0 / exp ≥1": f"{int(tp[0])} / {np.mean(tp[1:]):.0f}" if len(tp) > 1 else str(int(tp[0])),
                "total params": str(int(first["costs"].attrs["total_parameters"])),
                "bytes added (all exp)": _pm(seed_stats(vals["bytes"]), 1, digits=0) if vals["bytes"] else "—",
                "routing acc %": _pm(seed_stats(vals["routing"]), 100, digits=1) if vals["routing"] else "—",
            }
    for col in ("trainable params exp 0 / exp ≥1", "total params", "bytes added (all exp)", "routing acc %"):
        table[col] = [extra.get(c, {}).get(col, "—") for c in table["configuration"]]
    return table


def device_table(path, df=None, accuracy=None) -> pd.DataFrame:
    """Experiments/device_schedules.json (and any file with on-device columns): per configuration
    the training sessions, prequential accuracy, final ACC, int8 ACC, training energy (µJ) and peak
    memory, mean ± std over seeds, and whether it is on the accuracy–energy (E) and
    accuracy–memory (M) Pareto fronts of `accuracy` (default: prequential accuracy when the file
    has it, else ACC) — what plot_pareto.py printed."""
    from .figures import pareto_front
    df = df if df is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    if accuracy is None:
        accuracy = "prequential_acc" if "prequential_acc" in ok and ok["prequential_acc"].notna().any() else "acc"
    cols = [c for c in dict.fromkeys([accuracy, "final_acc", "acc_int8", "energy_j", "training_sessions",
                                      "peak_memory_bytes"]) if c in ok.columns]
    agg = aggregate(df, cols)
    acc = agg[(accuracy, "mean")].to_numpy()
    fe = set(pareto_front(agg[("energy_j", "mean")].to_numpy(), acc)) if "energy_j" in cols else set()
    fm = set(pareto_front(agg[("peak_memory_bytes", "mean")].to_numpy(), acc)) if "peak_memory_bytes" in cols else set()

    def ms(conf, c, scale=1.0, digits=3):
        st = {k: agg.loc[conf, (c, k)] for k in ("n", "mean", "std")} if c in cols else {"n": 0}
        return _pm(st, scale, digits=digits)

    rows = []
    for i, conf in enumerate(agg.index):
        rows.append({"configuration": conf, "n": int(agg.loc[conf, (accuracy, "n")]),
                     "sessions": ms(conf, "training_sessions", 1, 1).split(" ± ")[0],
                     ("prequential acc" if accuracy == "prequential_acc" else accuracy): ms(conf, accuracy),
                     "final ACC": ms(conf, "final_acc"), "int8 ACC": ms(conf, "acc_int8"),
                     "training energy (µJ)": ms(conf, "energy_j", 1e6, 0),
                     "peak memory (B)": ms(conf, "peak_memory_bytes", 1, 0).split(" ± ")[0],
                     "Pareto (E / M)": f"{'E' if i in fe else '-'} / {'M' if i in fm else '-'}"})
    return pd.DataFrame(rows)


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


def paper_table() -> dict:
    """Hsu et al. (2018) Table 2 as shipped with the package (data/hsu2018_table2.json)."""
    return json.loads(resources.files("continualkit").joinpath("data/hsu2018_table2.json").read_text("utf-8"))


def _budgets(df: pd.DataFrame) -> list:
    """The step budgets of a file (rounded mean steps per experience of each run, largest first),
    or [None] when the file does not record steps (files written before issue 24)."""
    if "steps_per_experience" not in df.columns or not df["steps_per_experience"].notna().any():
        return [None]
    return sorted({int(round(v)) for v in df["steps_per_experience"].dropna()}, reverse=True)


def hsu_table(path, df=None, numeric=False, verdicts=False) -> pd.DataFrame:
    """Experiments/hsu_table.json beside the paper: per method and setting (task-, domain-,
    class-incremental) ACC % mean ± std over seeds here and in Hsu et al. (2018) Table 2.
    `verdicts=True` adds, per setting, the strict verdict of continualkit.verdicts (the paper's
    mean inside our 95 % CI, or a Welch test against its mean ± std over 10 runs not rejecting).

    When the file records steps per experience (issue 24), a first column "steps/exp" gives each
    row's budget and a file with several budgets (the sweep over `training.steps_per_experience`)
    gets one block of rows per budget, largest first. Configurations are matched by variant."""
    df = df if df is not None else load_summary(path)
    paper = paper_table()
    rows = []
    for budget in _budgets(df):
        part = df
        if budget is not None:
            part = df[df["steps_per_experience"].round() == budget]
            if "status" in df.columns:   # a run that did not complete has no steps: keep it in its variant's row
                failed = df[(df["status"] != "completed") & df["steps_per_experience"].isna()]
                part = pd.concat([part, failed])
        part = part.copy()
        if "variant" in part.columns:
            part["configuration"] = part["variant"]
        agg = aggregate(part, ("acc",))
        for row in paper["rows"]:
            r = {} if budget is None else {"steps/exp": budget}
            r["method"] = row["method"]
            for setting in paper["settings"]:
                conf = f"{row['variant']}_{setting}"
                head = {"task": "task-IL", "domain": "domain-IL", "class": "class-IL"}[setting]
                if conf in agg.index:
                    st = {s: agg.loc[conf, ("acc", s)] for s in ("n", "mean", "std")}
                else:
                    st = {"n": 0, "mean": math.nan, "std": math.nan}
                p = row.get(setting)
                if numeric:
                    r.update({f"{setting}_mean": st["mean"] * 100, f"{setting}_std": st["std"] * 100, f"{setting}_n": st["n"],
                              f"{setting}_paper_mean": p[0] if p else math.nan, f"{setting}_paper_std": p[1] if p else math.nan})
                else:
                    r[f"{head} (here)"] = _pm(st) if st["n"] else "—"
                    r[f"{head} (Hsu)"] = f"{p[0]:.2f} ± {p[1]:.2f}" if p else "—"
                if verdicts:
                    from .verdicts import compare, seed_values
                    ok = part[part["variant"] == conf] if "variant" in part.columns else part.iloc[:0]
                    r[f"{setting}_verdict" if numeric else f"{head} verdict"] = \
                        compare(seed_values(ok, conf), p[0], p[1], 10)["verdict"] if p and st["n"] else "—"
            rows.append(r)
    return pd.DataFrame(rows)


def equal_compute_table(steps_path, flops_path, steps_df=None, flops_df=None, numeric=False) -> pd.DataFrame:
    """Accuracy at equal steps beside accuracy at equal training FLOPs (Prabhu et al. 2023,
    "Computationally budgeted continual learning"): per variant present in both files, ACC with
    the step budget of `steps_path` (its largest when it sweeps several), the training GFLOPs per
    experience that cost (mean over experiences and seeds, `training_flops` / T), and ACC and steps
    per experience with the FLOPs budget of `flops_path` (`training.flops_per_experience`), where
    every method gets the same FLOPs. Variants are matched by name."""
    a = steps_df if steps_df is not None else load_summary(steps_path)
    b = flops_df if flops_df is not None else load_summary(flops_path)
    budgets = _budgets(a)
    if budgets[0] is not None:
        a = a[a["steps_per_experience"].round() == budgets[0]]
    rows = []
    for v in dict.fromkeys(b["variant"]):
        ra, rb = a[(a["variant"] == v) & (a["status"] == "completed")], b[(b["variant"] == v) & (b["status"] == "completed")]
        if ra.empty or rb.empty:
            continue
        T = {}
        with h5py.File(steps_path, "r") as f:
            T["a"] = np.mean([f["runs"][rid]["accuracy_matrix"].shape[0] for rid in ra["run_id"]])
        with h5py.File(flops_path, "r") as f:
            T["b"] = np.mean([f["runs"][rid]["accuracy_matrix"].shape[0] for rid in rb["run_id"]])
        sa, sb = seed_stats(ra["acc"].to_numpy(float)), seed_stats(rb["acc"].to_numpy(float))
        ga = float(ra["training_flops"].mean()) / T["a"] / 1e9
        gb = float(rb["training_flops"].mean()) / T["b"] / 1e9
        if numeric:
            rows.append({"variant": v, "steps_per_experience": float(ra["steps_per_experience"].mean()),
                         "acc_equal_steps": sa["mean"], "acc_equal_steps_std": sa["std"], "gflops_per_experience": ga,
                         "equal_compute_steps_per_experience": float(rb["steps_per_experience"].mean()),
                         "acc_equal_compute": sb["mean"], "acc_equal_compute_std": sb["std"],
                         "equal_compute_gflops_per_experience": gb, "n": min(sa["n"], sb["n"])})
        else:
            rows.append({"variant": v, "steps/exp": f"{ra['steps_per_experience'].mean():.0f}",
                         "ACC % (equal steps)": _pm(sa), "GFLOPs/exp": f"{ga:.2f}",
                         "steps/exp (equal FLOPs)": f"{rb['steps_per_experience'].mean():.0f}",
                         "ACC % (equal FLOPs)": _pm(sb), "GFLOPs/exp (equal FLOPs)": f"{gb:.2f}",
                         "n": f"{sa['n']}/{sb['n']}"})
    return pd.DataFrame(rows)


def regularisation_extra(df) -> pd.DataFrame:
    return paired_table(df, "naive", ("bwt",))


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
    from .tuning import tuning_table
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


# ----------------------------------------------------------------------------- rendering
def render(table: pd.DataFrame, fmt: str = "markdown", caption: str | None = None) -> str:
    if table.shape[1] == 0:
        return ""   # a note without a table (its title says why)
    if fmt == "csv":
        return table.to_csv(index=False)
    cols = [str(c) for c in table.columns]
    cells = [[str(v) for v in row] for row in table.itertuples(index=False)]
    if fmt == "latex":
        def esc(s):
            s = s.replace("\\", r"\textbackslash{}")
            for a, b in (("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("$", r"\$"), ("{", r"\{"),
                         ("}", r"\}"), ("±", r"$\pm$"), ("—", "--"), ("Δ", r"$\Delta$"), ("≥", r"$\geq$"),
                         ("λ", r"$\lambda$"), ("γ", r"$\gamma$"), ("α", r"$\alpha$"), ("β", r"$\beta$"),
                         ("×", r"$\times$"), ("<", r"$<$"), ("–", "--")):
                s = s.replace(a, b)
            return s
        spec = "l" + "r" * (len(cols) - 1)
        lines = [r"\begin{table}[t]", r"\centering"]
        if caption:
            lines.append(r"\caption{" + esc(caption) + "}")
        lines += [r"\begin{tabular}{" + spec + "}", r"\toprule", " & ".join(esc(c) for c in cols) + r" \\",
                  r"\midrule"]
        lines += [" & ".join(esc(c) for c in row) + r" \\" for row in cells]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"
    if fmt == "markdown":
        def md(s):
            return s.replace("|", r"\|")
        lines = ["| " + " | ".join(md(c) for c in cols) + " |",
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(cols))) + "|"]
        lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in cells]
        return ("" if not caption else f"**{caption}**\n\n") + "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r} (markdown, csv, latex)")


def strip_seed_suffix(name: str) -> str:
    """Legacy files whose variants were named METHOD_sSEED / METHOD-sSEED: the method part."""
    return re.sub(r"[-_]s\d+$", "", name)


def legacy_configurations(df: pd.DataFrame) -> pd.DataFrame:
    """For results written before seeds were a sweep axis (variants `naive_s1` … `naive_s5`):
    group by the name without its `_sN`/`-sN` suffix. Returns a copy with `configuration` set."""
    df = df.copy()
    if "seed" not in df.attrs.get("swept_columns", []):
        df["configuration"] = df["name"].map(strip_seed_suffix).map(_str)
    return df
