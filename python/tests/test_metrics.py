"""Metrics on hand-computed matrices (published definitions), and agreement with the values the
Swift side stored in real results files."""
import math

import numpy as np
import pytest

from continualkit import metrics as M
from continualkit.check import check_file
from continualkit.io import load_run, load_summary

R = np.array([[0.90, 0.10, 0.20],
              [0.60, 0.80, 0.30],
              [0.50, 0.70, 0.95]])
B = np.array([0.10, 0.20, 0.25])


def test_acc_bwt_fwt_forgetting_by_hand():
    assert M.acc(R) == pytest.approx((0.50 + 0.70 + 0.95) / 3)
    assert M.bwt(R) == pytest.approx(((0.50 - 0.90) + (0.70 - 0.80)) / 2)          # -0.25
    assert M.fwt(R, B) == pytest.approx(((0.10 - 0.20) + (0.30 - 0.25)) / 2)       # -0.025
    assert M.forgetting(R) == pytest.approx(((0.90 - 0.50) + (0.80 - 0.70)) / 2)   # 0.25
    assert M.learning_accuracy(R) == pytest.approx((0.90 + 0.80 + 0.95) / 3)
    assert M.bwt_all_pairs(R) == pytest.approx(((0.60 - 0.90) + (0.50 - 0.90) + (0.70 - 0.80)) / 3)
    assert M.forgetting_last(R) == pytest.approx(-M.bwt(R))


def test_forgetting_uses_rows_before_the_experience_was_trained():
    # Chaudhry et al.: max over l < T-1 includes l < j (R[0][1] = 0.95 before experience 1 was seen)
    R2 = np.array([[0.9, 0.95, 0.1], [0.8, 0.7, 0.2], [0.6, 0.5, 0.9]])
    assert M.forgetting_per_experience(R2) == pytest.approx([0.9 - 0.6, 0.95 - 0.5])


def test_forgetting_variants_differ_when_last_row_is_best():
    R3 = np.array([[0.5, 0.0], [0.9, 0.6]])
    assert M.forgetting(R3) == pytest.approx(0.5 - 0.9)          # Chaudhry: may be negative
    assert M.forgetting_max_all_rows(R3) == pytest.approx(0.0)   # Mammoth: max includes the last row


def test_single_experience_is_nan_not_zero():
    one = np.array([[0.7]])
    assert M.acc(one) == pytest.approx(0.7)
    for f in (M.bwt, M.forgetting, M.forgetting_last, M.forgetting_max_all_rows, M.bwt_all_pairs):
        assert math.isnan(f(one))
    assert math.isnan(M.fwt(one, [0.5]))


def test_nan_entry_propagates():
    R4 = R.copy()
    R4[2, 1] = np.nan
    assert math.isnan(M.acc(R4)) and math.isnan(M.bwt(R4))


def test_rejects_non_square():
    with pytest.raises(ValueError):
        M.acc(np.zeros((2, 3)))


def test_synthetic_file_consistent(synthetic):
    problems, _, checked = check_file(synthetic)
    assert checked == 18 and problems == []


def test_check_detects_a_wrong_stored_value(tmp_path, synthetic):
    import shutil

    import h5py
    p = tmp_path / "bad.h5"
    shutil.copy(synthetic, p)
    with h5py.File(p, "r+") as f:
        rid = sorted(f["runs"])[0]
        f["runs"][rid]["metrics"].attrs["bwt"] = 0.123
    problems, _, _ = check_file(str(p))
    assert any("bwt" in x for x in problems)


@pytest.mark.parametrize("name", ["quickstart", "tiny_sweep", "tiny_population_sweep", "prequential_habit"])
def test_python_metrics_agree_with_swift_on_real_files(real_results, name):
    """Every metric the Swift side stored (runs/<id>/metrics, each measure matrix's attributes,
    the /summary columns incl. balanced_acc/macro_f1/auroc/auprc) equals the Python recomputation."""
    problems, notes, checked = check_file(real_results[name])
    assert checked > 0
    assert problems == [], "\n".join(problems[:10])


def test_every_summary_metric_recomputed_on_quickstart(real_results):
    df = load_summary(real_results["quickstart"])
    for rid in df.run_id:
        run = load_run(real_results["quickstart"], rid)
        ours = M.all_metrics(run["accuracy"], run["baseline_random"], run["baseline_init"])
        for k, v in ours.items():
            assert run["metrics"][k] == pytest.approx(v, abs=1e-12, nan_ok=True), k
        for mname in ("balanced_accuracy", "macro_f1", "auroc", "auprc"):
            if run.get(mname) is not None:
                stored = run["matrix_metrics"][mname]
                assert stored["acc"] == pytest.approx(M.acc(run[mname]), abs=1e-12)
                assert stored["bwt"] == pytest.approx(M.bwt(run[mname]), abs=1e-12)
                assert stored["forgetting"] == pytest.approx(M.forgetting(run[mname]), abs=1e-12)


def test_real_quickstart_layout_and_xarray_dims(real_results):
    """Ported from the old check_results.py: root provenance, two runs, naive forgets more than
    joint, and xarray sees the named dimensions of the HDF5 dimension scales."""
    import h5py
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    from continualkit import metric_matrix
    path = real_results["quickstart"]
    with h5py.File(path, "r") as f:
        for key in ("toolkit_version", "schema_version", "created_utc", "experiment_json"):
            assert key in f.attrs
    df = load_summary(path)
    assert sorted(df.name) == ["joint", "naive"] and set(df.status) == {"completed"}
    naive, joint = (df[df.name == n].iloc[0] for n in ("naive", "joint"))
    assert naive.bwt < 0 and joint.bwt > naive.bwt
    ds = xr.open_dataset(path, engine="h5netcdf", group=f"runs/{df.run_id[0]}", phony_dims="sort")
    assert ds["accuracy_matrix"].dims == ("trained_through", "experience")
    da = metric_matrix(path)
    assert da.dims == ("run", "trained_through", "evaluated") and da.sizes["run"] == 2
    assert list(da.configuration.values) == ["naive", "joint"]
