"""Issue 24: step budgets in the tables, continual evaluation (min-ACC, the stability-gap figure),
equal-compute tables and reproduction cards — on synthetic files (always) and on the CI version
of the Hsu table written by the real CLI (skipped without a `continual` binary)."""
from __future__ import annotations

import math
import os
import subprocess

import h5py
import numpy as np
import pytest

from continualkit import metrics as M
from continualkit import tables as T
from continualkit.io import load_summary

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_min_acc_on_a_hand_built_curve():
    n = math.nan
    R = np.array([[0.9, 0.1, 0.1], [0.8, 0.95, 0.1], [0.7, 0.85, 0.9]])
    e = [0, 0, 1, 1, 2, 2]
    A = [[0.1, n, n], [0.6, n, n], [0.9, 0.1, n], [0.4, 0.7, n], [0.75, 0.95, 0.2], [0.72, 0.5, 0.6]]
    # j = 0: lowest after experience 0 is 0.4 (while 1 trains); j = 1: 0.5 (while 2 trains)
    assert M.min_acc(e, A, R) == pytest.approx(0.45)
    assert M.wc_acc(0.45, R) == pytest.approx(0.9 / 3 + 2 / 3 * 0.45)
    assert M.min_acc([], [], R) == pytest.approx((0.7 + 0.85) / 2)
    assert math.isnan(M.min_acc([], [], [[0.5]]))


def _with_steps(tmp_path, steps_by_variant, name="hsu_table"):
    from conftest import write_results
    rng = np.random.default_rng(1)
    runs = []
    for v, steps in steps_by_variant:
        for k in (1, 2, 3):
            runs.append(dict(name=f"{v}_seed={k}", variant=v, seed=k, R=rng.uniform(0.2, 0.9, (5, 5))))
    p = write_results(tmp_path / f"{name}.h5", runs, name=name)
    # add the budget columns the Swift writer adds (steps_per_experience, training_flops)
    with h5py.File(p, "r+") as f:
        s = f["summary"][()]
        import numpy.lib.recfunctions as rf
        steps = np.array([dict(steps_by_variant)[r["variant"].decode() if isinstance(r["variant"], bytes) else r["variant"]]
                          for r in s], dtype=float)
        s = rf.append_fields(s, ["steps_per_experience", "training_flops"], [steps, (steps * 5e6).astype(np.int64)],
                             usemask=False)
        del f["summary"]
        f["summary"] = s
    return p


def test_tables_show_steps_per_experience(tmp_path):
    p = _with_steps(tmp_path, [("naive_adam_class", 375.0), ("joint_class", 375.0)])
    t = T.grouped(load_summary(str(p)), ("acc",))
    assert list(t["steps/exp"]) == ["375", "375"]
    h = T.hsu_table(str(p))
    assert h.columns[0] == "steps/exp" and set(h["steps/exp"]) == {375}
    assert h[h.method == "Adam (naive)"].iloc[0]["class-IL (here)"] != "—"


def test_hsu_table_has_one_block_per_budget(tmp_path):
    from conftest import write_results
    rng = np.random.default_rng(2)
    runs = [dict(name=f"naive_adam_class_b={b}_seed={k}", variant="naive_adam_class", seed=k, R=rng.uniform(0.1, 0.9, (5, 5)))
            for b in (375, 60) for k in (1, 2)]
    p = write_results(tmp_path / "h.h5", runs, name="hsu_table")
    with h5py.File(p, "r+") as f:
        import numpy.lib.recfunctions as rf
        s = f["summary"][()]
        steps = np.array([375.0, 375.0, 60.0, 60.0])
        s = rf.append_fields(s, ["steps_per_experience"], [steps], usemask=False)
        del f["summary"]
        f["summary"] = s
    h = T.hsu_table(str(p))
    assert list(dict.fromkeys(h["steps/exp"])) == [375, 60]
    df = load_summary(str(p))
    for b in (375, 60):
        acc = df[np.isclose(df.steps_per_experience, b)].acc * 100
        row = h[(h["steps/exp"] == b) & (h.method == "Adam (naive)")].iloc[0]
        assert row["class-IL (here)"] == f"{acc.mean():.2f} ± {acc.std(ddof=1):.2f}"


@pytest.fixture(scope="module")
def ci_hsu(tmp_path_factory):
    from conftest import find_continual
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary: real-results tests skipped")
    out = tmp_path_factory.mktemp("hsu") / "hsu_ci.h5"
    r = subprocess.run([binary, "sweep", os.path.join(REPO, "Experiments/tools/hsu_table_ci.json"), "-o", str(out),
                        "--jobs", "2", "--plain"], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return str(out)


def test_real_file_records_budget_and_curves(ci_hsu):
    df = load_summary(ci_hsu)
    assert set(df.steps_per_experience.round()) == {20, 8}
    with h5py.File(ci_hsu, "r") as f:
        for rid, steps in zip(df.run_id, df.steps_per_experience):
            g = f["runs"][rid]
            assert g.attrs["training_budget"] == "steps_per_experience"
            assert int(g.attrs["training_budget_value"]) == int(round(steps))
            assert list(g["steps"][()]) == [int(round(steps))] * 5
            assert (g["training_flops"][()] > 0).all() and (g["epochs_run"][()] >= 1).all()
            c = g["continual_eval"]
            R = g["accuracy_matrix"][()]
            m = M.min_acc(c["training_experience"][()], c["accuracy"][()], R)
            assert c.attrs["min_acc"] == pytest.approx(m, abs=1e-12)
            assert list(c["step"][()]) == list(range(0, 5 * int(round(steps)), 5))
    # DER replays rows: more samples and FLOPs per step than naive at the same steps
    d = df[(df.variant == "der_class") & (df.steps_per_experience == 20)].training_flops.mean()
    n = df[(df.variant == "naive_adam_class") & (df.steps_per_experience == 20)].training_flops.mean()
    assert d > n
    from continualkit.check import check_file
    problems, _, checked = check_file(ci_hsu)
    assert problems == [] and checked == len(df)


def test_real_file_tables_figure_and_cards(ci_hsu, tmp_path):
    h = T.hsu_table(ci_hsu)
    assert list(dict.fromkeys(h["steps/exp"])) == [20, 8]
    from continualkit.figures import check_png, save, stability_gap
    fig = stability_gap(ci_hsu)
    paths = save(fig, str(tmp_path / "stability_gap"), ("png",))
    assert check_png(paths[0]) == []
    from continualkit.cards import cards
    written = cards(ci_hsu, str(tmp_path / "cards"))
    names = {os.path.basename(p) for p in written}
    from continualkit.cards import facts
    # One card per entry of reproductions.json (every registered strategy: a Swift test checks
    # that list against the registry) plus the index.
    assert {"der.md", "mas.md", "naive.md", "lora.md", "hat.md", "slda.md", "README.md"} <= names
    assert len(names) == len(facts()["cards"]) + 1
    text = open(tmp_path / "cards" / "naive.md").read()
    assert "| naive_adam | 20 |" in text and "Verdict" in text
