"""Experiments/tools/doc_tables.py: the warm-start and prequential tables quoted in the docs are
computed from a results file as documented (per variant, in /summary order; mean ± sample std)."""
import os
import subprocess
import sys

import h5py
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "Experiments", "tools", "doc_tables.py")


def _results(path):
    """Two variants × two seeds; values chosen so each mean ± std is easy to compute by hand."""
    runs = {"r1": ("cold", [0.40, 0.6], [[0.70, 0.0], [0.50, 0.60]], [0.5, 0.70]),
            "r2": ("warm", [0.60, 0.6], [[0.80, 0.0], [0.70, 0.70]], [0.5, 0.80]),
            "r3": ("cold", [0.50, 0.6], [[0.90, 0.0], [0.70, 0.80]], [0.5, 0.90]),
            "r4": ("warm", [0.60, 0.6], [[0.80, 0.0], [0.90, 0.90]], [0.5, 0.80])}
    with h5py.File(path, "w") as f:
        dt = np.dtype([("run_id", "S8"), ("variant", "S8")])
        f["summary"] = np.array([(k.encode(), v[0].encode()) for k, v in runs.items()], dtype=dt)
        for k, (_, b, r, c) in runs.items():
            g = f.create_group(f"runs/{k}")
            g["baseline_init"] = np.array(b)
            g["accuracy_matrix"] = np.array(r)
            g["prequential/cumulative_accuracy"] = np.array(c)


def _run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, check=True).stdout


def test_warm_start_table_is_mean_and_sample_std_per_variant(tmp_path):
    path = tmp_path / "w.h5"
    _results(path)
    lines = _run("warm-start", str(path)).strip().split("\n")
    assert lines[0].startswith("| variant | n |") and lines[1].startswith("|---")
    # cold: b[0] 40, 50 → 45.0 ± 7.1; R[0][0] 70, 90 → 80.0 ± 14.1; ACC mean of last row 55, 75 → 65.0 ± 14.1
    assert lines[2] == "| cold | 2 | 45.0 ± 7.1 | 80.0 ± 14.1 | 65.0 ± 14.1 |"
    # warm: b[0] 60, 60 → 60.0 ± 0.0; R[0][0] 80, 80; ACC 70, 90 → 80.0 ± 14.1
    assert lines[3] == "| warm | 2 | 60.0 ± 0.0 | 80.0 ± 0.0 | 80.0 ± 14.1 |"
    assert len(lines) == 4


def test_prequential_line_is_the_last_cumulative_accuracy(tmp_path):
    path = tmp_path / "p.h5"
    _results(path)
    out = _run("prequential", str(path)).strip().split("\n")
    assert out == ["cold: final cumulative prequential accuracy 0.800 ± 0.141 (n = 2)",
                   "warm: final cumulative prequential accuracy 0.800 ± 0.000 (n = 2)"]


def test_settings_pivot_is_method_by_setting_over_completed_runs(tmp_path):
    path = tmp_path / "s.h5"
    rows = [("naive_adam_task", "completed", 0.90), ("naive_adam_task", "completed", 0.80),
            ("naive_adam_class", "completed", 0.20), ("naive_adam_class", "completed", 0.20),
            ("lwf_class", "completed", 0.30), ("lwf_class", "diverged", np.nan),
            ("ewc_task", "diverged", np.nan)]
    with h5py.File(path, "w") as f:
        dt = np.dtype([("variant", "S20"), ("status", "S12"), ("acc", "f8")])
        f["summary"] = np.array([(v.encode(), s.encode(), a) for v, s, a in rows], dtype=dt)
    lines = _run("settings", str(path)).strip().split("\n")
    assert lines[0] == "| method | task ACC % | class ACC % |"
    # Counts differ (lwf_class has 1 completed run), so every cell names its n.
    assert lines[2] == "| naive_adam | 85.0 ± 7.1 (n=2) | 20.0 ± 0.0 (n=2) |"
    assert lines[3] == "| lwf | — | 30.0 (n=1) |"
    assert lines[4] == "| ewc | failed | — |"
    assert len(lines) == 5
