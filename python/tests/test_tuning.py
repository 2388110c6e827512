"""The `/tuning` group written by a `"tune"` block (docs/tuning.md), read back with h5py: the
chosen point is the best mean validation score, the reported runs carry the chosen values, and
`continualkit table` shows the selection."""
import json
import os
import subprocess

import h5py
import numpy as np
import pytest

from conftest import REPO, find_continual
from continualkit import tables as T
from continualkit.tuning import load_tuning

EXPERIMENT = {
    "name": "tune_py", "seed": 1,
    "scenario": {"type": "split_digits", "path": os.path.join(REPO, "datasets/digits.h5"), "setting": "class"},
    "model": {"hidden": [16]}, "optimizer": {"type": "adam", "lr": 0.001},
    "training": {"steps_per_experience": 6, "batch_size": 32},
    "tune": {"parameters": {"optimizer.lr": [0.0001, 0.003, 0.03]}, "experiences": 2, "seeds": [11, 12]},
    "variants": [
        {"name": "ewc", "strategy": [{"type": "ewc", "lambda": 10}], "tune": {"parameters": {"strategy[0].lambda": [1, 100]}}},
        {"name": "paper", "strategy": ["naive"], "tune": None},
    ],
    "sweep": {"parameters": {"seed": [1, 2]}},
}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN)")
    d = tmp_path_factory.mktemp("tune")
    exp, out = d / "e.json", d / "r.h5"
    exp.write_text(json.dumps(EXPERIMENT))
    r = subprocess.run([binary, "sweep", str(exp), "-o", str(out), "--jobs", "2", "--plain"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return str(out)


def test_choice_is_the_best_mean_validation_score(tuned):
    with h5py.File(tuned, "r") as f:
        g = f["tuning/ewc"]
        scores = g["scores"][()]
        record = json.loads(g.attrs["record_json"])
        assert scores.shape == (6, 2) and np.isfinite(scores).all()
        best = int(np.argmax(scores.mean(axis=1)))          # first on ties, as numpy's argmax
        assert record["chosen_index"] == best == int(g.attrs["chosen_index"])
        point = dict(zip(record["parameters"], record["points"][best]))
        assert record["chosen"] == point
        assert record["total_training_flops"] == int(g["training_flops"][()].sum()) > 0
        assert "paper" not in f["tuning"]
        # Every reported ewc run carries the chosen values; none evaluates on a validation split.
        for run in f["runs"].values():
            config = json.loads(run.attrs["config_json"])
            assert "validation_split" not in config
            if run.attrs["variant"] == "ewc":
                assert config["optimizer"]["lr"] == pytest.approx(point["optimizer.lr"])
                assert config["strategy"][0]["lambda"] == pytest.approx(point["strategy[0].lambda"])


def test_table_shows_the_selection(tuned):
    df = load_tuning(tuned)
    assert list(df["variant"]) == ["ewc"] and df.loc[0, "points"] == 6 and df.loc[0, "seeds"] == 2
    titles = [t for t, _ in T.experiment_tables(tuned)]
    assert any(t.startswith("selected hyperparameters") for t in titles)


EXTENDED = dict(EXPERIMENT, name="tune_extend_py",
                tune={"parameters": {"optimizer.lr": [0.0003, 0.001]}, "extend": {"optimizer.lr": [0.0001, 0.003, 0.01, 0.03, 0.1]},
                      "experiences": 2, "seeds": [11]},
                variants=[{"name": "naive", "strategy": ["naive"]},
                          {"name": "ewc", "strategy": [{"type": "ewc", "lambda": 10}],
                           "tune": {"parameters": {"strategy[0].lambda": [1, 100]}, "extend": {"strategy[0].lambda": [10000]}}}],
                sweep={"parameters": {"seed": [1]}})


def test_extended_grid_ends_inside_or_at_an_exhausted_edge(tmp_path):
    """`"extend"`: the stored points are the cartesian grid of the values trained, the choice is
    the best of all of them, and `edges` (recomputed here from the points alone) names a side only
    once its extension values are all trained."""
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN)")
    exp, out = tmp_path / "e.json", tmp_path / "r.h5"
    exp.write_text(json.dumps(EXTENDED))
    r = subprocess.run([binary, "sweep", str(exp), "-o", str(out), "--jobs", "2", "--plain"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    full = {"optimizer.lr": [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1], "strategy[0].lambda": [1, 100, 10000]}
    with h5py.File(out, "r") as f:
        for name in ("naive", "ewc"):
            g = f["tuning"][name]
            record = json.loads(g.attrs["record_json"])
            means = g["scores"][()].mean(axis=1)
            assert record["chosen_index"] == int(np.argmax(means))
            columns = list(zip(*record["points"]))
            values = [sorted(set(c)) for c in columns]
            assert len(record["points"]) == len(set(map(tuple, record["points"]))) == int(np.prod([len(v) for v in values]))
            from continualkit.tuning import _edges
            recomputed = _edges({k: v for k, v in record.items() if k != "edges"})
            assert recomputed == record["edges"]
            for path, side in record["edges"].items():
                trained = values[record["parameters"].index(path)]
                assert (full[path][-1] if side == "upper" else full[path][0]) in trained
    assert "lr" in load_tuning(str(out)).loc[0, "chosen"]
