"""Consistency checks of a results file (what CI runs): every stored metric recomputed in Python
from the stored matrices with the published definitions (continualkit.metrics) and compared with
the values the Swift side stored (`runs/<id>/metrics`, the matrices' own `acc`/`bwt`/`fwt`/
`forgetting` attributes, and the `/summary` columns); the table's shape and order; and a
comparison of two files' summaries apart from wall times (sharded vs unsharded sweeps)."""
from __future__ import annotations

import math

import h5py
import numpy as np

from . import metrics as M
from .io import MATRIX_NAMES, TIMING_COLUMNS, _str, load_run, load_summary

TOLERANCE = 1e-9
#: summary column → matrix whose ACC it is.


def population_forgetting(path, run_id):
    """None for an ordinary run; for a population run the mean over completed users of each
    user's forgetting (README "Populations"), or "unknown" when per-user matrices are not stored."""
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        if "population" not in g:
            return None
        pop = g["population"]
        if "accuracy_matrices" not in pop:
            return "unknown"
        mats = np.asarray(pop["accuracy_matrices"][()], dtype=float)
        status = [_str(s) for s in pop["status"][()]] if "status" in pop else ["completed"] * len(mats)
    per_user = [M.forgetting(R) for R, st in zip(mats, status) if st == "completed"]
    return float(np.mean(per_user)) if per_user else math.nan


def recompute(run: dict) -> dict:
    """{matrix: {metric: recomputed}} for every matrix the run has."""
    out = {}
    R = run["accuracy"]
    if R is not None:
        out["accuracy_matrix"] = M.all_metrics(R, run["baseline_random"], run["baseline_init"])
    for m in MATRIX_NAMES[1:]:
        if run.get(m) is not None:
            out[m] = M.all_metrics(run[m], run.get(m + "_baseline_random"))
    return out


def _check_comparison(path, rid, row, run, label, tol) -> list[str]:
    """Issue 24: min-ACC and WC-ACC recomputed from the stored continual-evaluation curve and R;
    steps and training FLOPs per experience against /summary."""
    out = []
    with h5py.File(path, "r") as f:
        g = f["runs"][rid]
        if "continual_eval" in g and "accuracy" in g["continual_eval"] and run["accuracy"] is not None:
            c = g["continual_eval"]
            m = M.min_acc(c["training_experience"][()], c["accuracy"][()], run["accuracy"])
            w = M.wc_acc(m, run["accuracy"])
            for k, v in (("min_acc", m), ("wc_acc", w)):
                if not M.close(float(c.attrs[k]), v, tol):
                    out.append(f"{label}: continual_eval.attrs[{k}] = {c.attrs[k]!r} stored, {v!r} recomputed")
                if k in row and not M.close(row[k], v, tol):
                    out.append(f"{label}: /summary {k} = {row[k]!r}, recomputed {v!r}")
        if "steps" in g and "steps_per_experience" in row:
            mean = float(np.mean(g["steps"][()]))
            if not M.close(row["steps_per_experience"], mean, tol):
                out.append(f"{label}: /summary steps_per_experience = {row['steps_per_experience']!r}, runs/…/steps mean {mean!r}")
        if "training_flops" in g and "training_flops" in row and int(row["training_flops"]) != int(g["training_flops"][()].sum()):
            out.append(f"{label}: /summary training_flops differs from the sum of runs/…/training_flops")
    return out


def check_file(path, expect_runs=None, tol=TOLERANCE) -> tuple[list[str], list[str], int]:
    """(problems, notes, runs checked)."""
    problems, notes = [], []
    df = load_summary(path)
    with h5py.File(path, "r") as f:
        complete = [k for k, g in f["runs"].items() if int(g.attrs.get("complete", 0)) == 1]
        for key in ("toolkit_version", "schema_version", "created_utc", "experiment_json"):
            if key not in f.attrs:
                problems.append(f"root attribute {key} missing")
    if sorted(df.run_id) != sorted(complete):
        problems.append(f"/summary has {len(df)} rows but {len(complete)} complete run groups")
    if expect_runs is not None and len(df) != expect_runs:
        problems.append(f"expected {expect_runs} runs, found {len(df)}")
    with h5py.File(path, "r") as f:
        stored_order = list(f["summary"]["sweep_index"])
    if stored_order != sorted(stored_order):
        problems.append("/summary rows are not sorted by sweep_index")
    for c in df.attrs["swept_columns"]:
        if c not in df.columns:
            problems.append(f"swept column {c!r} missing from /summary")
    checked = 0
    for row in df.to_dict("records"):
        rid, label = row["run_id"], f"{row['run_id']} ({row['name']})"
        run = load_run(path, rid)
        if run["status"] != row["status"]:
            problems.append(f"{label}: status {row['status']} in /summary, {run['status']} in the run group")
        if row["status"] != "completed":
            if not math.isnan(row["acc"]):
                problems.append(f"{label}: {row['status']} run has ACC {row['acc']}")
            continue
        rec = recompute(run)
        acc_rec = dict(rec.get("accuracy_matrix", {}))
        pop = population_forgetting(path, rid)
        if pop is not None:
            if pop == "unknown":
                for k in ("forgetting", "forgetting_max_all_rows"):
                    acc_rec.pop(k, None)
                notes.append(f"{label}: population run without stored accuracy_matrices; forgetting not checked")
            else:
                acc_rec["forgetting"] = pop
                acc_rec.pop("forgetting_max_all_rows", None)
        for k, v in acc_rec.items():
            stored = run["metrics"].get(k)
            if stored is not None and not M.close(stored, v, tol):
                problems.append(f"{label}: metrics/{k} = {stored!r} stored, {v!r} recomputed")
            if k in row and not M.close(row[k], v, tol):
                problems.append(f"{label}: /summary {k} = {row[k]!r}, recomputed {v!r}")
        if pop is None and run["forgetting_per_experience"] is not None and run["accuracy"] is not None:
            fpe = M.forgetting_per_experience(run["accuracy"])
            if len(fpe) and not np.allclose(run["forgetting_per_experience"], fpe, atol=tol, equal_nan=True):
                problems.append(f"{label}: forgetting_per_experience differs from the matrix")
        for mname, stored in run["matrix_metrics"].items():
            r = rec.get(mname, {})
            for k, v in stored.items():
                if k in r and not (pop is not None and k == "forgetting") and not M.close(v, r[k], tol):
                    problems.append(f"{label}: {mname}.attrs[{k}] = {v!r} stored, {r[k]!r} recomputed")
        problems += _check_concatenated_measures(path, rid, row, label, tol)
        if "trainable_parameters" in row and run["costs"].get("trainable_parameters") is not None \
                and row["trainable_parameters"] != run["costs"]["trainable_parameters"]:
            problems.append(f"{label}: trainable_parameters differs from costs")
        problems += _check_comparison(path, rid, row, run, label, tol)
        checked += 1
    return problems, notes, checked


def _check_concatenated_measures(path, rid, row, label, tol) -> list[str]:
    """/summary's balanced_acc and macro_f1 are scikit-learn's over the concatenated final test
    predictions of every experience (issue 40): recomputed here from the last row of the stored
    confusion matrices, whose sum is the concatenation's confusion matrix."""
    with h5py.File(path, "r") as f:
        g = f["runs"][rid]
        if "confusion" not in g:
            return []
        cm = g["confusion"][()]
    if cm.ndim != 4 or cm.shape[0] == 0:
        return []
    want = M.measures_from_confusion(cm[-1].sum(axis=0))
    out = []
    for col, value in want.items():
        if col in row and not M.close(row[col], value, tol):
            out.append(f"{label}: /summary {col} = {row[col]!r}, recomputed over the concatenated predictions {value!r}")
    return out


def compare_summaries(a_path, b_path) -> list[str]:
    """Differences between two files' /summary tables apart from wall-time columns (NaN = NaN)."""
    a, b = load_summary(a_path), load_summary(b_path)
    problems = []
    if list(a.columns) != list(b.columns):
        problems.append(f"columns differ: {list(a.columns)} vs {list(b.columns)}")
    cols = [c for c in a.columns if c not in TIMING_COLUMNS and c in b.columns]
    a = a[cols].sort_values("run_id").reset_index(drop=True)
    b = b[cols].sort_values("run_id").reset_index(drop=True)
    if len(a) != len(b) or list(a.run_id) != list(b.run_id):
        problems.append(f"run ids differ: {len(a)} vs {len(b)} rows, {sorted(set(a.run_id) ^ set(b.run_id))[:5]}")
        return problems
    for c in cols:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind == "f":
            same = (x == y) | (np.isnan(x) & np.isnan(y))
        else:
            same = x == y
        for i in np.flatnonzero(~same)[:5]:
            problems.append(f"{a.run_id[i]}: {c} = {x[i]!r} vs {y[i]!r}")
    return problems
