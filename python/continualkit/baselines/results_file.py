"""Writing baseline runs in the results layout the Swift CLI writes (docs/results-format.md), so
`continualkit table/summary/check/plot`, the xarray loaders and `continual inspect --verify` /
`continual merge` read them like neural runs.

What a baseline run has: the root attributes, `/metric_definitions`, `/summary` with every
column of `ResultsSchema.summaryColumns` (+ swept columns), and per run `runs/<run_id>` with the
attributes, `accuracy_matrix`, `baseline_random`, `baseline_init`, `forgetting_per_experience`,
the size vectors, `confusion`, `metrics/`, `costs/`, `prequential/`, optionally `population/`,
`summary_row` and the `sha256` digest (`RunDigest.swift`'s canonical serialisation, reimplemented
in `run_digest.py`). What it has not: `loss_curve`/`penalty_curve`, `final_parameters`, `device/`,
`plugins/` (no network, no loss, no plugin).
"""
from __future__ import annotations

import json
import os
import time

import h5py
import numpy as np

from .. import __version__
from .. import metrics as M
from .run_digest import canonical_json, git_provenance, run_digest, run_id  # noqa: F401  (run_id: re-exported)

SCHEMA_VERSION = 1

#: /summary columns in storage order (ResultsSchema.summaryColumns), kind: s = string, i = int64, f = float64.
SUMMARY_COLUMNS = [
    ("run_id", "s"), ("sweep_index", "i"), ("name", "s"), ("variant", "s"), ("strategy", "s"), ("scenario", "s"),
    ("seed", "i"), ("status", "s"), ("message", "s"),
    ("acc", "f"), ("bwt", "f"), ("fwt", "f"), ("forgetting", "f"), ("learning_accuracy", "f"), ("forgetting_last", "f"),
    ("forgetting_max_all_rows", "f"), ("bwt_all_pairs", "f"), ("fwt_init", "f"),
    ("total_parameters", "i"), ("trainable_parameters", "i"), ("model_bytes", "i"), ("buffer_bytes", "i"),
    ("flops_per_prediction", "i"), ("train_seconds", "f"), ("eval_seconds", "f"),
    ("energy_j", "f"), ("training_sessions", "i"), ("peak_memory_bytes", "i"), ("model_bytes_int8", "i"),
    ("prequential_acc", "f"), ("final_acc", "f"), ("acc_int8", "f"), ("prediction_latency_s", "f"),
    ("device_profile", "s"), ("schedule", "s"),
    ("uses_task_labels", "i"), ("active_outputs", "s"),
    ("balanced_acc", "f"), ("macro_f1", "f"), ("auroc", "f"), ("auprc", "f"),
    ("steps_per_experience", "f"), ("training_flops", "i"), ("min_acc", "f"), ("wc_acc", "f"),
]

#: /metric_definitions, as the Swift side writes them.
METRIC_DEFINITIONS = {
    "acc": "(1/T) Σ_j R[T-1][j] (Lopez-Paz & Ranzato 2017)",
    "bwt": "(1/(T-1)) Σ_{j<T-1} (R[T-1][j] - R[j][j]) (Lopez-Paz & Ranzato 2017)",
    "bwt_all_pairs": "Σ_{i>=1} Σ_{j<i} (R[i][j] - R[j][j]) / (T(T-1)/2) (Diaz-Rodriguez et al. 2018)",
    "forgetting": "(1/(T-1)) Σ_{j<T-1} max_{l<T-1} R[l][j] - R[T-1][j] (Chaudhry et al. 2018)",
    "forgetting_chaudhry": "same as forgetting",
    "forgetting_last": "(1/(T-1)) Σ_{j<T-1} R[j][j] - R[T-1][j] = -bwt (Avalanche)",
    "forgetting_max_all_rows": "(1/(T-1)) Σ_{j<T-1} max_{l<=T-1} R[l][j] - R[T-1][j] (Mammoth)",
    "fwt": "(1/(T-1)) Σ_{j>=1} (R[j-1][j] - b[j]), b = random-init model (GEM)",
    "fwt_gem": "same as fwt",
    "fwt_init": "(1/(T-1)) Σ_{j>=1} (R[j-1][j] - R_init[j]), R_init = own initial weights (Avalanche)",
    "learning_accuracy": "(1/T) Σ_j R[j][j]",
}
#: The per-run metric attributes (runs/<id>/metrics), in the Swift side's names.
RUN_METRICS = ("acc", "bwt", "bwt_all_pairs", "forgetting", "forgetting_chaudhry", "forgetting_last",
               "forgetting_max_all_rows", "fwt", "fwt_gem", "fwt_init", "learning_accuracy")

STR = h5py.string_dtype("utf-8")


def _ds(g, name, data, meaning=None, units=None, dtype=None, **attrs):
    d = g.create_dataset(name, data=data, dtype=dtype)
    if meaning is not None:
        d.attrs["meaning"] = meaning
    if units is not None:
        d.attrs["units"] = units
    for k, v in attrs.items():
        d.attrs[k] = v
    return d


def _scale(g, name, n, meaning):
    d = _ds(g, name, np.arange(n, dtype=np.int64), meaning, "index")
    d.make_scale(name)
    return d


def summary_dtype(extra_columns=()):
    fields = []
    for name, kind in list(SUMMARY_COLUMNS) + list(extra_columns):
        fields.append((name, STR if kind == "s" else np.int64 if kind == "i" else np.float64))
    return np.dtype(fields)


def summary_array(rows: list[dict], extra_columns=()) -> np.ndarray:
    dt = summary_dtype(extra_columns)
    out = np.zeros(len(rows), dtype=dt)
    for k, r in enumerate(rows):
        for name, kind in list(SUMMARY_COLUMNS) + list(extra_columns):
            v = r.get(name)
            if kind == "s":
                out[name][k] = "" if v is None else str(v)
            elif kind == "i":
                out[name][k] = 0 if v is None else int(v)
            else:
                out[name][k] = np.nan if v is None else float(v)
    return out


def matrix_metrics(R, baseline_random, baseline_init, forgetting_override=None) -> dict:
    """runs/<id>/metrics from R (continualkit.metrics), with the Swift side's alias names.
    `forgetting_override`: a population's {forgetting, forgetting_max_all_rows} (means of per-user values)."""
    m = M.all_metrics(R, baseline_random, baseline_init)
    if forgetting_override:
        m.update(forgetting_override)
    m["forgetting_chaudhry"] = m["forgetting"]
    m["fwt_gem"] = m["fwt"]
    return {k: float(m[k]) for k in RUN_METRICS}


def _write_attributes(g, run: dict):
    """The run group's attributes: identity, configuration, budget and protocol choices."""
    a = g.attrs
    a["run_id"] = run["run_id"]
    a["name"] = run["name"]
    a["variant"] = run["variant"]
    a["status"] = "completed"
    a["message"] = ""
    a["seed"] = np.int64(run["seed"])
    a["strategy"] = run["strategy"]
    a["scenario"] = run["scenario"]
    a["config_json"] = canonical_json(run["config"])
    a["wall_seconds"] = float(run["wall_seconds"])
    a["training_budget"] = "single_pass"
    a["training_budget_value"] = np.int64(1)
    a["sweep_index"] = np.int64(run["sweep_index"])
    a["sweep_values_json"] = canonical_json(run.get("sweep_values", {}))
    a["uses_task_labels"] = np.int64(0)
    a["active_outputs"] = "all"
    a["primary_metric"] = "accuracy"
    for k, v in run.get("attrs", {}).items():
        a[k] = v


def _write_per_experience(g, run: dict, R):
    """The accuracy matrix with its dimension scales, and every per-experience vector and name list."""
    T = R.shape[0]
    _scale(g, "trained_through", T, "index of the last experience trained on")
    _scale(g, "experience", T, "index of the evaluated experience (test set)")
    acc = _ds(g, "accuracy_matrix", R, "R[i][j]: test accuracy on experience j after training through experience i",
              "fraction correct (0..1)", axis0="trained_through: row i = after training on experience i",
              axis1="experience: column j = accuracy on experience j's test set")
    acc.dims[0].attach_scale(g["trained_through"])
    acc.dims[1].attach_scale(g["experience"])

    def vec(name, data, meaning, units, dtype=None):
        d = _ds(g, name, np.asarray(data, dtype=dtype), meaning, units)
        d.dims[0].attach_scale(g["experience" if name in ("baseline_random", "baseline_init", "test_sizes")
                                  else "trained_through"])

    vec("baseline_random", run["baseline_random"], run.get("baseline_random_meaning",
        "chance accuracy 1/classes (a river model predicts nothing before its first sample, so GEM's b is "
        "the expected accuracy of a uniform guess)"), "fraction correct (0..1)", float)
    vec("baseline_init", run["baseline_init"], "accuracy of this run's model before its first sample "
        "(river: no prediction counts as wrong)", "fraction correct (0..1)", float)
    fpe = run.get("forgetting_per_experience")
    _ds(g, "forgetting_per_experience", M.forgetting_per_experience(R) if fpe is None else np.asarray(fpe, float),
        "max_{l<T-1} R[l][j] - R[T-1][j] for j < T-1 (Chaudhry et al. 2018)", "fraction (0..1)")
    vec("test_sizes", run["test_sizes"], "samples in each experience's test set", "count", np.int64)
    vec("train_set_sizes", run["train_sizes"], "samples in the training set used for each experience", "count", np.int64)
    vec("samples_processed", run.get("samples_processed", run["train_sizes"]),
        "rows processed while training each experience (one pass; a population: all users)", "count", np.int64)
    vec("steps", run["train_sizes"], "model updates per experience (river: one learn_one per sample)", "count", np.int64)
    vec("epochs_run", np.ones(T), "passes over each experience's training set (1: a single streaming pass)",
        "count", np.int64)
    vec("training_flops", np.zeros(T), "not counted for river models (0)", "FLOPs", np.int64)
    vec("trainable_parameters", np.zeros(T), "not counted for river models (0: trees and forests grow, "
        "see costs/python_memory_bytes)", "count", np.int64)
    _ds(g, "experience_names", np.array(run["experience_names"], dtype=object), dtype=STR)
    _ds(g, "experience_metadata", np.array(run["experience_metadata"], dtype=object), dtype=STR)
    _ds(g, "feature_names", np.array(run["feature_names"], dtype=object), dtype=STR)
    if run.get("confusion") is not None:
        _ds(g, "confusion", np.asarray(run["confusion"], dtype=np.int64),
            "confusion[i][j][true][predicted]: counts on experience j's test set after training through experience i "
            "(river predictions of no class are left out)", "count")


def _write_prequential(g, p: dict):
    """The test-then-train curve: window and cumulative accuracy by stream position."""
    pg = g.create_group("prequential")
    pg.attrs["meaning"] = "test-then-train: each training sample predicted before it is learned"
    pg.attrs["window"] = np.int64(p["window"])
    pg.attrs["record_every"] = np.int64(p["record_every"])
    pos = _ds(pg, "position", np.asarray(p["position"], np.int64),
              "samples predicted so far (1-based stream position)", "count")
    pos.make_scale("position")
    for name, meaning, units in (("window_accuracy", "accuracy over the last `window` predictions", "fraction correct (0..1)"),
                                 ("cumulative_accuracy", "accuracy over all predictions so far", "fraction correct (0..1)")):
        d = _ds(pg, name, np.asarray(p[name], float), meaning, units)
        d.dims[0].attach_scale(pos)
    d = _ds(pg, "experience", np.asarray(p["experience"], np.int64), "experience being streamed at each point", "index")
    d.dims[0].attach_scale(pos)
    _ds(pg, "experience_starts", np.asarray(p["experience_starts"], np.int64),
        "samples seen before each experience started", "count")


def write_run(runs: h5py.Group, run: dict) -> dict:
    """Writes one run group; returns its summary row. `run` keys: run_id, name, variant, strategy,
    scenario, seed, sweep_index, config (dict), attrs (extra attributes), R, baseline_random,
    baseline_init, test_sizes, train_sizes, confusion, experience_names, experience_metadata,
    feature_names, prequential (dict or None), population (dict or None), costs (dict),
    summary (extra summary values), forgetting (population override or None), wall_seconds."""
    g = runs.create_group(run["run_id"])
    R = np.asarray(run["R"], dtype=float)
    _write_attributes(g, run)
    _write_per_experience(g, run, R)

    metrics = matrix_metrics(R, run["baseline_random"], run["baseline_init"], run.get("forgetting"))
    mg = g.create_group("metrics")
    for k, v in metrics.items():
        mg.attrs[k] = v

    costs = {"total_parameters": 0, "trainable_parameters": 0, "model_bytes": 0, "flops_per_prediction": 0,
             "train_seconds": 0.0, "eval_seconds": 0.0,
             "units": "parameters, model bytes and FLOPs are not counted for river models (0); "
                      "python_memory_bytes: river's estimate of the final model's Python memory (bytes); "
                      "seconds: wall time"}
    costs.update(run.get("costs", {}))
    cg = g.create_group("costs")
    for k, v in costs.items():
        cg.attrs[k] = np.int64(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v

    if run.get("prequential") is not None:
        _write_prequential(g, run["prequential"])

    if run.get("population") is not None:
        _write_population(g, run["population"])

    C = run.get("confusion")
    measures = M.measures_from_confusion(np.asarray(C)[-1].sum(axis=0)) if C is not None else {}
    row = dict(run_id=run["run_id"], sweep_index=run["sweep_index"], name=run["name"], variant=run["variant"],
               strategy=run["strategy"], scenario=run["scenario"], seed=run["seed"], status="completed", message="",
               **{k: metrics[k] for k in ("acc", "bwt", "fwt", "forgetting", "learning_accuracy", "forgetting_last",
                                          "forgetting_max_all_rows", "bwt_all_pairs", "fwt_init")},
               total_parameters=0, trainable_parameters=0, model_bytes=0, buffer_bytes=0, flops_per_prediction=0,
               train_seconds=costs["train_seconds"], eval_seconds=costs["eval_seconds"],
               energy_j=np.nan, training_sessions=0, peak_memory_bytes=0, model_bytes_int8=0,
               final_acc=np.nan, acc_int8=np.nan, prediction_latency_s=np.nan, device_profile="", schedule="",
               uses_task_labels=0, active_outputs="all", auroc=np.nan, auprc=np.nan,
               steps_per_experience=float(np.mean(np.asarray(run["train_sizes"], dtype=np.int64))), training_flops=0, min_acc=np.nan, wc_acc=np.nan,
               balanced_acc=measures.get("balanced_acc", np.nan), macro_f1=measures.get("macro_f1", np.nan))
    row.update(run.get("summary", {}))
    row.update(run.get("swept", {}))
    extra = run.get("extra_columns", ())
    sr = _ds(g, "summary_row", summary_array([row], extra))
    del sr
    g.attrs["sha256"] = run_digest(g)
    g.attrs["complete"] = np.int64(1)
    return row


def _write_population(g, pop: dict):
    """`runs/<id>/population/` in the generators' layout (docs/scenarios.md "Populations")."""
    pg = g.create_group("population")
    n = len(pop["user"])
    pg.attrs["meaning"] = "one model per user of the file; datasets indexed by user"
    pg.attrs["users"] = np.int64(n)
    pg.attrs["completed"] = np.int64(sum(s == "completed" for s in pop["status"]))
    pg.attrs["seed"] = np.int64(pop["seed"])
    pg.attrs["user_column"] = pop["user_column"]
    ud = _ds(pg, "user", np.arange(n, dtype=np.int64), "member index (the i-th user taken part)")
    ud.make_scale("user")
    _ds(pg, "user_name", np.array([str(x) for x in pop["user"]], dtype=object), dtype=STR)
    _ds(pg, "model_seed", np.asarray(pop["model_seed"], np.int64), "seed of the user's model (int64 bit pattern)")
    _ds(pg, "status", np.array(pop["status"], dtype=object), dtype=STR)
    _ds(pg, "message", np.array(pop["message"], dtype=object), dtype=STR)
    _ds(pg, "train_seconds", np.asarray(pop["train_seconds"], float), "training wall time of the user's model, seconds")
    _ds(pg, "final_accuracy", np.asarray(pop["matrices"])[:, -1, :],
        "R[T-1][j]: accuracy on experience j after the whole stream, per user")
    _ds(pg, "accuracy_matrices", np.asarray(pop["matrices"], float),
        "R[i][j] per user: axis1 = trained through experience i, axis2 = evaluated experience j")
    _ds(pg, "prequential_accuracy", np.asarray(pop["prequential_accuracy"], float),
        "test-then-train accuracy over the user's whole training stream", "fraction correct (0..1)")
    mg = pg.create_group("metrics")
    per = pop["metrics"]   # {metric: [users]}
    for k in RUN_METRICS:
        _ds(mg, k, np.asarray(per[k], float), METRIC_DEFINITIONS[k])
    ag = pg.create_group("aggregate")
    ag.attrs["meaning"] = "over users that completed: mean, sample std and quantiles (linear interpolation) per metric"
    levels = np.asarray(pop["quantiles"], float)
    ok = np.array([s == "completed" for s in pop["status"]])
    means, stds, qs = [], [], []
    for k in RUN_METRICS:
        v = np.asarray(per[k], float)[ok]
        v = v[np.isfinite(v)]
        mean = float(v.mean()) if len(v) else np.nan
        std = float(v.std(ddof=1)) if len(v) > 1 else np.nan
        means.append(mean)
        stds.append(std)
        qs.append(np.quantile(v, levels) if len(v) else np.full(len(levels), np.nan))
        ag.attrs[f"{k}_mean"] = mean
        ag.attrs[f"{k}_std"] = std
    _ds(ag, "metric", np.array(RUN_METRICS, dtype=object), dtype=STR)
    _ds(ag, "mean", np.array(means))
    _ds(ag, "std", np.array(stds))
    _ds(ag, "quantile_levels", levels)
    _ds(ag, "quantiles", np.array(qs))


def write_file(path: str, runs: list[dict], *, experiment_name: str, description: str, experiment: dict,
               experiment_path: str, swept_seeds: bool) -> list[dict]:
    """Writes a whole results file (under a temporary name, renamed into place). Returns the summary rows."""
    tmp = f"{path}.tmp-{os.getpid()}"
    commit, dirty, source = git_provenance()
    rows = []
    try:
        with h5py.File(tmp, "w") as f:
            a = f.attrs
            a["toolkit"] = "ContinualKit"
            a["toolkit_version"] = __version__
            a["git_commit"] = commit
            a["git_dirty"] = np.int64(dirty)
            a["git_commit_source"] = source
            a["schema_version"] = np.int64(SCHEMA_VERSION)
            a["created_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            a["experiment_name"] = experiment_name
            a["experiment_description"] = description
            a["experiment_json"] = json.dumps(experiment, indent=2, sort_keys=True)
            a["experiment_path"] = experiment_path
            # A sweep file's header (SweepWriter.writeHeader), so `continual merge` takes the file
            # beside neural results of the same stream; `writer` says who wrote it.
            swept = ["seed"] if swept_seeds else []
            a["kind"] = "sweep"
            a["sweep_json"] = canonical_json({"parameters": {"seed": sorted({int(r["seed"]) for r in runs})}}) \
                if swept_seeds else ""
            a["sweep_run_count"] = np.int64(len(runs))
            a["shard"] = ""
            a["writer"] = f"continualkit {__version__} baselines (python/continualkit/baselines)"
            a["swept_columns_json"] = json.dumps(swept)
            a["swept_paths_json"] = json.dumps(swept)
            md = f.create_group("metric_definitions")
            for k, v in METRIC_DEFINITIONS.items():
                md.attrs[k] = v
            rg = f.create_group("runs")
            for r in runs:
                rows.append(write_run(rg, r))
            s = f.create_dataset("summary", data=summary_array(rows))
            s.attrs["meaning"] = "one row per run, sorted by sweep_index; metrics as in /metric_definitions; fractions 0..1"
            s.attrs["swept_columns_json"] = json.dumps(swept)
            s.attrs["swept_paths_json"] = json.dumps(swept)
            s.attrs["timing_columns_json"] = json.dumps(["eval_seconds", "train_seconds"])
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return rows
