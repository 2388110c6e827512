"""The compression study's Pareto front and figure (continualkit.compression) on hand-made data."""
import json

import h5py
import numpy as np
import pytest

from continualkit import compression as C
from continualkit.figures import check_png, pareto_front


def test_pareto_front_by_hand():
    cost = np.array([1.0, 2.0, 3.0, 2.5, 1.0, 4.0])
    acc = np.array([0.5, 0.7, 0.6, 0.8, 0.4, 0.8])
    # (1, .5) beats (1, .4); (2, .7) and (2.5, .8) improve; (3, .6) and (4, .8) are dominated
    # ((4, .8) ties (2.5, .8) in accuracy at a higher cost).
    assert list(pareto_front(cost, acc)) == [0, 1, 3]
    # a single point is its own front; equal points keep the first
    assert list(pareto_front(np.array([2.0]), np.array([0.3]))) == [0]
    assert list(pareto_front(np.array([1.0, 1.0]), np.array([0.5, 0.5]))) == [0]


def _run(f, i, scenario, variant, seed, acc, forg, energy, peak, params, pred, early=None, pruned=None, int8=None):
    g = f.create_group(f"runs/r{i}")
    g.attrs["status"] = "completed"
    g.attrs["name"] = f"{variant}_seed={seed}"
    g.attrs["variant"] = variant
    g.attrs["sweep_index"] = i
    g.attrs["config_json"] = json.dumps({"seed": seed, "scenario": scenario})
    m = g.create_group("metrics")
    m.attrs["acc"], m.attrs["forgetting"] = acc, forg
    c = g.create_group("costs")
    c.attrs["training_energy_j"], c.attrs["peak_memory_bytes"] = energy, peak
    c.attrs["total_parameters"], c.attrs["prediction_energy_j"] = params, pred
    if early is not None:
        p = g.create_group("plugins/0_early_exit")
        p.attrs["threshold"], p.attrs["exit_head_parameters"] = 0.9, 9
        p["thresholds"] = np.array([0, 0.9, 1.1])
        p["joules_per_prediction"] = np.array(early[0])
        p["acc"] = np.array(early[1])
        p["forgetting"] = np.array([0.25, 0.2, 0.2])
        p["final_exit_rate"] = np.array([1.0, 0.4, 0.0])
        p["flops_per_prediction"] = np.array([100.0, 160.0, 200.0])
        p.attrs["sweep_record_bytes"] = 480
    if pruned is not None:
        p = g.create_group("plugins/0_pruning")
        p["nonzero_parameters"] = np.array([params, pruned])
    if int8 is not None:
        c.attrs["model_bytes_float32"] = 4 * params
        d = g.create_group("device")
        d.attrs["prediction_flops"], d.attrs["prediction_bytes"] = 600, 4 * params + 140
        d.attrs["joules_per_flop"], d.attrs["joules_per_byte"] = 5e-13, 4e-11
        q = d.create_group("quantization")
        q.attrs["accuracy_int8_mean"], q.attrs["model_bytes_int8"] = int8, 100


@pytest.fixture
def study(tmp_path):
    path = tmp_path / "compression.h5"
    habit, digits = {"type": "habit_drift"}, {"type": "split_digits", "setting": "domain"}
    with h5py.File(path, "w") as f:
        i = 0
        for scen in (habit, digits):
            for seed in (1, 2):
                prefix = "habit." if scen is habit else "digits."
                for variant, acc, energy, extra in (("dense", 0.60, 5e-3, {"int8": 0.5}),
                                                    ("magnitude_80", 0.55, 4e-3, {"pruned": 60}),
                                                    ("early_exit", 0.58, 6e-3, {"early": ([1e-8, 2e-8, 3e-8], [0.5, 0.58, 0.6])}),
                                                    ("lowrank", 0.62, 4.5e-3, {})):
                    _run(f, i, scen, prefix + variant, seed, acc + 0.01 * seed, 0.2, energy, 8000 + i, 300, 3e-8, **extra)
                    i += 1
    return str(path)


def test_points_read_every_variant_and_the_plugins(study):
    pts = C.load_points(study)
    assert len(pts) == 16 + 4                      # + the dense runs' int8 points
    assert list(dict.fromkeys(pts["variant"])) == ["dense", "dense+int8", "magnitude_80", "early_exit", "lowrank"]
    assert set(pts["run_variant"]) >= {"habit.dense", "digits.lowrank"}
    assert set(pts["scenario"]) == {"habit_drift", "split_digits (domain)"}
    ee = pts[pts["variant"] == "early_exit"].iloc[0]
    assert ee["prediction_j"] == 2e-8 and ee["parameters"] == 309      # cascade at τ = 0.9; + exit head
    assert ee["peak_memory_bytes"] == 8000 + 2 - 480                   # without the τ-sweep records
    assert pts[pts["variant"] == "magnitude_80"].iloc[0]["parameters"] == 60
    table = C.markdown_table(pts)
    # front of ACC vs training energy per scenario: magnitude_80 (cheapest), lowrank (best ACC)
    assert "| habit_drift | magnitude_80 * |" in table and "| habit_drift | lowrank * |" in table
    assert "| habit_drift | dense |" in table and "| habit_drift | early_exit |" in table
    assert "| habit_drift | dense | 2 | 61.50 ± 0.71 |" in table
    # int8: its own ACC, 100 stored bytes against 1,200, the float run's training energy and
    # memory, and prediction energy with the int8 weights moved: 600 FLOPs, 100 + 140 bytes
    q = pts[(pts["variant"] == "dense+int8") & (pts["scenario"] == "habit_drift")]
    assert list(q["acc"]) == [0.5, 0.5] and q["forgetting"].isna().all() and q["int8"].all()
    assert list(q["stored_bytes"]) == [100, 100] and list(q["training_j"]) == [5e-3, 5e-3]
    assert q["prediction_j"].iloc[0] == pytest.approx(600 * 5e-13 + 240 * 4e-11, rel=1e-12)
    assert pts[pts["variant"] == "dense"]["stored_bytes"].iloc[0] == 1200
    assert "| habit_drift | dense+int8 | 2 | 50.00 ± 0.00 | — |" in table
    sweep = C.sweep_table(pts)
    assert "| habit_drift | early_exit | 0.9 | 58.00 ± 0.00 | 20.00 ± 0.00 | 40.0 | 160 | 20.0 |" in sweep
    assert sweep.count("| split_digits (domain) | early_exit |") == 3


def test_labels_of_coinciding_points_are_grouped():
    # display coordinates: 0, 1, 2 stack within 9 px (a chain), 3 is apart in y, 4 apart in x
    px = np.array([100.0, 100.0, 101.0, 100.0, 130.0])
    py = np.array([50.0, 57.0, 64.0, 90.0, 57.0])
    assert C.clusters(px, py) == [[0, 1, 2], [3], [4]]
    assert C.technique("habit.low_rank_4") == "low_rank_4" and C.technique("dense") == "dense"


def test_figure_is_drawn_and_readable(study, tmp_path):
    paths = C.draw(study, str(tmp_path / "fig"), formats=("png",))
    assert paths and not check_png(paths[0])
