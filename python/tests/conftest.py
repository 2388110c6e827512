"""Fixtures: synthetic results files written with h5py (unit tests, always run) and real results
files written by the `continual` CLI once per session (found via $CONTINUAL_BIN, PATH or the
repository's .build/release; skipped with a message when there is none)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from continualkit import metrics as M  # noqa: E402

STR = h5py.string_dtype("utf-8")
SUMMARY_FLOATS = ["acc", "bwt", "fwt", "forgetting", "learning_accuracy", "forgetting_last",
                  "forgetting_max_all_rows", "bwt_all_pairs", "fwt_init", "train_seconds", "eval_seconds",
                  "energy_j", "balanced_acc", "macro_f1", "auroc", "auprc"]
SUMMARY_INTS = ["total_parameters", "trainable_parameters", "model_bytes", "buffer_bytes", "peak_memory_bytes"]


def write_results(path, runs, name="synthetic", swept=("seed",), population=None, prequential=None):
    """A results file in the layout of docs/results-format.md. `runs`: dicts with name, variant,
    seed, R (T×T) and optional b, status, energy_j, peak_memory_bytes, swept values (by column
    name), experience_names. Metrics are computed with continualkit.metrics (the tests that
    compare against the Swift side use real files)."""
    with h5py.File(path, "w") as f:
        f.attrs.update(toolkit="ContinualKit", toolkit_version="0.1.0", schema_version=np.int64(1),
                       created_utc="2026-01-01T00:00:00Z", experiment_name=name,
                       experiment_description="synthetic test file", experiment_json=json.dumps({"name": name}),
                       experiment_path=f"{name}.json", kind="sweep")
        rg = f.create_group("runs")
        rows = []
        swept_cols = list(swept)
        extra_cols = [c for c in swept_cols if c != "seed"]
        for k, r in enumerate(runs):
            rid = f"{k:016x}"
            R = np.asarray(r["R"], dtype=float)
            T = R.shape[0]
            b = np.asarray(r.get("b", np.full(T, 0.5)))
            status = r.get("status", "completed")
            g = rg.create_group(rid)
            g.attrs.update(run_id=rid, name=r["name"], variant=r["variant"], seed=np.int64(r["seed"]), status=status,
                           message="", strategy="naive", scenario="habit_drift", complete=np.int64(1),
                           config_json=json.dumps({"name": r["variant"], "seed": r["seed"]}), sweep_index=np.int64(k))
            m = M.all_metrics(R, b, b) if status == "completed" else {}
            if status == "completed":
                g["accuracy_matrix"] = R
                g["baseline_random"] = b
                g["baseline_init"] = b
                g["forgetting_per_experience"] = M.forgetting_per_experience(R)
                g["loss_curve"] = np.linspace(1, 0.1, T * 3).reshape(T, 3)
                g["penalty_curve"] = np.zeros((T, 3))
                g["test_sizes"] = np.full(T, 100)
                g["trainable_parameters"] = np.full(T, 321)
                g.create_dataset("experience_names", data=r.get("experience_names", [f"phase{j}" for j in range(T)]),
                                 dtype=STR)
                mg = g.create_group("metrics")
                for key, v in m.items():
                    mg.attrs[key] = v
                cg = g.create_group("costs")
                cg.attrs.update(total_parameters=np.int64(321), trainable_parameters=np.int64(321))
                if population is not None and r.get("population") is not None:
                    pop = g.create_group("population")
                    mats = np.asarray(r["population"])
                    pop["accuracy_matrices"] = mats
                    pop["final_accuracy"] = mats[:, -1, :]
                    pop.create_dataset("status", data=["completed"] * len(mats), dtype=STR)
                    pm = pop.create_group("metrics")
                    pm["acc"] = mats[:, -1, :].mean(1)
                    m["forgetting"] = float(np.mean([M.forgetting(x) for x in mats]))
                    mg.attrs["forgetting"] = m["forgetting"]
                if prequential is not None and r.get("prequential") is not None:
                    p = g.create_group("prequential")
                    w = np.asarray(r["prequential"], dtype=float)
                    p["position"] = np.arange(1, len(w) + 1) * 10
                    p["window_accuracy"] = w
                    p["cumulative_accuracy"] = np.cumsum(w) / np.arange(1, len(w) + 1)
                    p["experience"] = np.repeat(np.arange(T), int(np.ceil(len(w) / T)))[: len(w)]
                    p["experience_starts"] = np.arange(T) * (len(w) * 10 // T)
            row = dict(run_id=rid, sweep_index=k, name=r["name"], variant=r["variant"], strategy="naive",
                       scenario="habit_drift", seed=r["seed"], status=status, message="")
            for c in SUMMARY_FLOATS:
                row[c] = m.get(c, r.get(c, np.nan)) if status == "completed" else np.nan
            row["energy_j"] = r.get("energy_j", 0.01)
            for c in SUMMARY_INTS:
                row[c] = int(r.get(c, 321 if c.endswith("parameters") else 1000))
            for c in extra_cols:
                row[c] = r.get(c, np.nan)
            rows.append(row)
        fields = [("run_id", STR), ("sweep_index", "<i8"), ("name", STR), ("variant", STR), ("strategy", STR),
                  ("scenario", STR), ("seed", "<i8"), ("status", STR), ("message", STR)]
        fields += [(c, "<f8") for c in SUMMARY_FLOATS] + [(c, "<i8") for c in SUMMARY_INTS]
        fields += [(c, "<f8") for c in extra_cols]
        arr = np.array([tuple(row[n] for n, _ in fields) for row in rows], dtype=np.dtype(fields))
        d = f.create_dataset("summary", data=arr)
        d.attrs["swept_columns_json"] = json.dumps(swept_cols)
        d.attrs["swept_paths_json"] = json.dumps(swept_cols)
    return path


def _matrix(rng, T, level=0.6, forget=0.2):
    R = np.full((T, T), 0.3)
    for i in range(T):
        for j in range(T):
            if j == i:
                R[i, j] = level + 0.2
            elif j < i:
                R[i, j] = level + 0.2 - forget * (i - j) / T
    return np.clip(R + rng.normal(0, 0.02, (T, T)), 0, 1)


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory):
    """A sweep: 3 variants × lr ∈ {0.01, 0.1} × seeds 1–3, 4 experiences."""
    rng = np.random.default_rng(0)
    runs = []
    for variant, level, forget in (("naive", 0.5, 0.4), ("ewc", 0.55, 0.2), ("replay", 0.6, 0.1)):
        for lr in (0.01, 0.1):
            for seed in (1, 2, 3):
                runs.append(dict(name=f"{variant}_optimizer.lr={lr:g}_seed={seed}", variant=variant, seed=seed,
                                 R=_matrix(rng, 4, level + (0.05 if lr == 0.1 else 0), forget),
                                 **{"optimizer.lr": lr}, energy_j=0.01 * (1 + ["naive", "ewc", "replay"].index(variant)),
                                 peak_memory_bytes=8000 + 4000 * ["naive", "ewc", "replay"].index(variant)))
    path = tmp_path_factory.mktemp("syn") / "synthetic.h5"
    return str(write_results(path, runs, swept=("optimizer.lr", "seed")))


@pytest.fixture(scope="session")
def synthetic_long(tmp_path_factory):
    """127 experiences (the device_schedules case): figures must aggregate, not draw 127×127."""
    rng = np.random.default_rng(1)
    runs = [dict(name=f"{v}_seed={s}", variant=v, seed=s, R=_matrix(rng, 127, 0.5, 0.3 if v == "naive" else 0.1))
            for v in ("naive", "replay") for s in (1, 2)]
    path = tmp_path_factory.mktemp("long") / "long.h5"
    return str(write_results(path, runs, name="long_stream"))


@pytest.fixture(scope="session")
def synthetic_population(tmp_path_factory):
    rng = np.random.default_rng(2)
    mats = np.stack([_matrix(rng, 5, 0.5 + rng.normal(0, 0.05), 0.2) for _ in range(200)])
    runs = [dict(name="population", variant="population", seed=0, R=mats.mean(0), population=mats,
                 prequential=np.clip(0.5 + 0.3 * np.sin(np.linspace(0, 6, 100)) + rng.normal(0, 0.03, 100), 0, 1))]
    path = tmp_path_factory.mktemp("pop") / "pop.h5"
    return str(write_results(path, runs, name="pop", swept=(), population=True, prequential=True))


# --------------------------------------------------------------------------- the real CLI
def assert_same_summary(a, b):
    """Two `load_summary` tables equal in every column but the wall times (the only values two
    runs of one config may differ in), exactly."""
    import pandas as pd
    from continualkit.io import TIMING_COLUMNS
    drop = [c for c in TIMING_COLUMNS if c in a.columns]
    pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop), check_exact=True)


def find_continual():
    env = os.environ.get("CONTINUAL_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    for c in (shutil.which("continual"), os.path.join(REPO, ".build/release/continual")):
        if c and os.access(c, os.X_OK):
            return c
    return None


REAL_EXPERIMENTS = {
    "quickstart": "Experiments/quickstart.json",
    "tiny_sweep": "Experiments/sweeps/tiny_sweep.json",
    "tiny_population_sweep": "Experiments/sweeps/tiny_population_sweep.json",
    "prequential_habit": "Experiments/prequential_habit.json",
    "tiny_compression": "Experiments/sweeps/tiny_compression.json",
}


@pytest.fixture(scope="session")
def real_results(tmp_path_factory):
    """{name: path} of results files written by the CLI (quickstart, a sweep over lr × seeds,
    a population sweep, prequential runs); skipped when no `continual` binary is found."""
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN, put it on PATH, or swift build -c release): "
                    "real-results tests skipped")
    out = tmp_path_factory.mktemp("real")
    paths = {}
    for name, exp in REAL_EXPERIMENTS.items():
        p = str(out / f"{name}.h5")
        r = subprocess.run([binary, "run", os.path.join(REPO, exp), "-o", p, "--overwrite", "-q", "--plain"],
                           cwd=REPO, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"continual run {exp} failed: {r.stderr[-2000:]}"
        paths[name] = p
    paths["_bin"] = binary
    return paths
