"""A population read from a data file's user column: the people's names are coordinates of
`continualkit.population` (issue 44 item 3), and each person's stored model is their own."""
import json
import os
import subprocess

import h5py
import numpy as np
import pytest

from conftest import REPO, find_continual
from continualkit.io import population


def _people_csv(path):
    rng = np.random.default_rng(4)
    lines = ["user,day,f0,f1,label"]
    for p, person in enumerate(["ana", "ben", "cy"]):
        w = np.array([[1, -1], [-1, 1], [0.5, 1]][p])
        for day in range(60):
            x = rng.normal(size=2)
            lines.append(f"{person},{day},{x[0]:.5f},{x[1]:.5f},{int(x @ w > 0)}")
    path.write_text("\n".join(lines) + "\n")


def test_population_names_are_coordinates(tmp_path):
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary")
    csv = tmp_path / "people.csv"
    _people_csv(csv)
    exp = {"name": "people", "seed": 3,
           "scenario": {"type": "dataset", "path": str(csv), "user_column": "user", "time_column": "day",
                        "classes": 2, "experiences": {"count": 2}, "test": {"last": 5}},
           "model": {"hidden": [4]}, "optimizer": {"type": "sgd", "lr": 0.1},
           "training": {"epochs": 2, "batch_size": 4}, "population": {"users": 3}}
    (tmp_path / "e.json").write_text(json.dumps(exp))
    out = tmp_path / "r.h5"
    r = subprocess.run([binary, "run", str(tmp_path / "e.json"), "-o", str(out), "-q"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        rid = list(f["runs"].keys())[0]
        kept = f["runs"][rid]["population"]["final_parameters"][()]
        acc = f["runs"][rid]["population"]["metrics"]["acc"][()]
    ds = population(str(out), rid)
    assert list(ds["user_name"].values) == ["ana", "ben", "cy"]
    assert float(ds["acc"].sel(user_name="ben")) == acc[1]
    assert kept.shape[0] == 3 and np.isfinite(kept).all()
    assert len({tuple(row) for row in kept}) == 3     # three people, three models
