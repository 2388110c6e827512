"""`continualkit baselines river` (issue 46.4): river's streaming learners on a scenario file,
written in the results layout.

- The accuracy matrix of online logistic regression on a hand-made two-experience stream is the
  one worked out by hand (the second experience flips the first one's labelling rule: R =
  [[1, 0], [0, 1]], BWT −1, forgetting 1) and equals R recomputed by calling river directly.
- Predicting before learning (the prequential pass) leaves every model as a learn-only pass
  leaves it: the matrices of both are equal for hat, arf and logreg.
- A per-user run's per-user matrices are those of runs on each user's rows alone.
- `continualkit table` lists the river rows; `continualkit check` recomputes every stored
  metric; the loaders read the matrices and prequential curves; `continual inspect --verify`
  accepts the digests and `continual merge` takes the file beside neural runs (when a
  `continual` binary is found).
"""
from __future__ import annotations

import contextlib
import io
import json
import subprocess

import h5py
import numpy as np
import pytest

river = pytest.importorskip("river", reason="pip install river (the [river] extra)")

from continualkit import io as ckio  # noqa: E402
from continualkit.baselines import run_river  # noqa: E402
from continualkit.baselines import river_models as RM  # noqa: E402
from continualkit.baselines import scenario_file as S  # noqa: E402
from continualkit.check import check_file  # noqa: E402
from continualkit.cli import main  # noqa: E402

from conftest import find_continual  # noqa: E402

STR = h5py.string_dtype("utf-8")


def write_scenario(path, experiences, classes, feature_names, keys=None):
    """A scenario file in the layout `continual scenario export` writes (docs/scenarios.md).
    `experiences`: [(name, (x_train, y_train), (x_test, y_test))]; `keys`: per experience
    {split: {column: values}} (e.g. a user column)."""
    with h5py.File(path, "w") as f:
        f.attrs.update(format="continualkit-scenario", format_version=np.int64(1), name="hand_made",
                       head="binary" if classes == 2 else "multiclass", classes=np.int64(classes),
                       dimension=np.int64(len(feature_names)), experience_count=np.int64(len(experiences)),
                       metadata_json="{}", options_json="", toolkit_version="test")
        f.create_dataset("feature_names", data=feature_names, dtype=STR)
        f.create_dataset("experience_names", data=[e[0] for e in experiences], dtype=STR)
        for i, (name, train, test) in enumerate(experiences):
            g = f.create_group(f"experiences/{i:03d}")
            g.attrs.update(index=np.int64(i), name=name, metadata_json=json.dumps({"phase": name}))
            for split, (x, y) in (("train", train), ("test", test)):
                g[f"{split}/features"] = np.asarray(x, dtype=np.float32)
                g[f"{split}/labels"] = np.asarray(y, dtype=np.int32)
                for col, v in ((keys or [{}] * len(experiences))[i].get(split, {})).items():
                    g[f"{split}/{col}"] = np.asarray(v)
    return str(path)


def flip_stream(n_train=400, n_test=50):
    """Two experiences on x0 = ±1 (x1 noise-free zero): experience 0 labels x0 > 0 as 1,
    experience 1 the opposite (the rule flips). Alternating signs, so every prefix is balanced."""
    def split(n, flip):
        x0 = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        x = np.stack([x0, np.zeros(n)], axis=1)
        y = ((x0 > 0) != flip).astype(int)
        return x, y
    return [("rule", split(n_train, False), split(n_test, False)),
            ("flipped", split(n_train, True), split(n_test, True))]


@pytest.fixture()
def flip_file(tmp_path):
    return write_scenario(tmp_path / "flip.h5", flip_stream(), 2, ["x0", "x1"])


def river_directly(stream, classes):
    """R of `StandardScaler | LogisticRegression` computed with river's own calls only."""
    from river import linear_model, multiclass, preprocessing
    lr = linear_model.LogisticRegression()
    model = preprocessing.StandardScaler() | (lr if classes == 2 else multiclass.OneVsRestClassifier(lr))
    T = len(stream)
    R = np.zeros((T, T))
    for i, (_, (x, y), _) in enumerate(stream):
        for xi, yi in zip(x, y):
            model.learn_one({"x0": float(xi[0]), "x1": float(xi[1])}, bool(yi) if classes == 2 else int(yi))
        for j, (_, _, (xt, yt)) in enumerate(stream):
            pred = [model.predict_one({"x0": float(a[0]), "x1": float(a[1])}) for a in xt]
            R[i, j] = np.mean([p is not None and int(p) == t for p, t in zip(pred, yt)])
    return R


def test_logistic_regression_matrix_by_hand(flip_file, tmp_path):
    out = str(tmp_path / "river.h5")
    rows = run_river(flip_file, out, models=["logreg"], seeds=[1])
    with h5py.File(out, "r") as f:
        rid = rows[0]["run_id"]
        R = f["runs"][rid]["accuracy_matrix"][()]
        metrics = dict(f["runs"][rid]["metrics"].attrs)
        summary = f["summary"][()]
    # By hand: after experience 0 the model has the rule (1 on its test set, 0 on the flipped
    # one); after experience 1 it has the flipped rule.
    np.testing.assert_array_equal(R, [[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(R, river_directly(flip_stream(), 2))
    # DESIGN.md "Metrics", by hand for this R: ACC = (0 + 1)/2, BWT = R[1][0] − R[0][0] = −1,
    # forgetting of experience 0 = max_{l<1} R[l][0] − R[1][0] = 1, FWT = R[0][1] − b[1] = 0 − ½.
    assert metrics["acc"] == 0.5 and metrics["bwt"] == -1.0 and metrics["forgetting"] == 1.0
    assert metrics["fwt"] == -0.5 and metrics["learning_accuracy"] == 1.0
    assert summary["acc"][0] == 0.5 and summary["bwt"][0] == -1.0 and summary["forgetting"][0] == 1.0
    assert summary["variant"][0] == b"river_logreg" and summary["status"][0] == b"completed"


def test_multiclass_logreg_matrix_equals_river_directly(tmp_path):
    rng = np.random.default_rng(0)
    centres = {0: (2, 0), 1: (-2, 0), 2: (0, 2), 3: (0, -2)}

    def blob(labels, n):
        y = np.array([labels[k % len(labels)] for k in range(n)])
        x = np.array([centres[c] for c in y]) + 0.3 * rng.standard_normal((n, 2))
        return x, y
    stream = [("01", blob([0, 1], 60), blob([0, 1], 20)), ("23", blob([2, 3], 60), blob([2, 3], 20))]
    path = write_scenario(tmp_path / "ci.h5", stream, 4, ["x0", "x1"])
    out = str(tmp_path / "r.h5")
    rows = run_river(path, out, models=["logreg"], seeds=[1])
    with h5py.File(out, "r") as f:
        R = f["runs"][rows[0]["run_id"]]["accuracy_matrix"][()]
    np.testing.assert_array_equal(R, river_directly([(n, (x.astype(np.float32), y), (xt.astype(np.float32), yt))
                                                     for n, (x, y), (xt, yt) in stream], 4))


def learn_only_matrix(name, seed, sc):
    """R of a model trained with learn_one only (no predictions between the updates)."""
    model = RM.make_model(name, seed, sc.classes)
    binary_bool = name == "logreg" and sc.classes == 2
    T = len(sc.experiences)
    R = np.zeros((T, T))
    for i, e in enumerate(sc.experiences):
        for x, y in zip(e.train.features.astype(float).tolist(), e.train.labels.tolist()):
            model.learn_one(dict(zip(sc.feature_names, x)), bool(y) if binary_bool else y)
        for j, t in enumerate(sc.experiences):
            pred = [model.predict_one(dict(zip(sc.feature_names, x))) for x in t.test.features.astype(float).tolist()]
            R[i, j] = np.mean([p is not None and int(p) == yy for p, yy in zip(pred, t.test.labels.tolist())])
    return R


@pytest.mark.parametrize("name", ["hat", "arf", "logreg"])
def test_prequential_predictions_do_not_change_the_model(tmp_path, name):
    rng = np.random.default_rng(1)

    def part(n, shift):
        x = rng.standard_normal((n, 3))
        y = ((x[:, 0] + shift * x[:, 1]) > 0).astype(int) + (x[:, 2] > 1).astype(int)
        return x, y
    stream = [(f"e{k}", part(300, s), part(60, s)) for k, s in enumerate((0.0, 2.0, -2.0))]
    sc = S.read(write_scenario(tmp_path / "s.h5", stream, 3, ["a", "b", "c"]))
    res, _ = RM.run_model(name, 7, sc.experiences, sc.classes, sc.feature_names)
    np.testing.assert_array_equal(res.R, learn_only_matrix(name, 7, sc))
    # The prequential curve: one record every 10 samples, cumulative accuracy = mean of the
    # predictions so far, experiences in order.
    assert list(res.position) == list(range(10, 901, 10))
    assert list(res.experience_starts) == [0, 300, 600]
    assert res.cumulative_accuracy[-1] == pytest.approx(res.prequential_accuracy)
    assert np.all(np.diff(res.experience) >= 0)


def users_stream(tmp_path):
    rng = np.random.default_rng(2)
    exps, keys = [], []
    for k, shift in enumerate((1.0, -1.0)):
        parts, kk = {}, {}
        for split, n in (("train", 80), ("test", 30)):
            xs, ys, us, ts = [], [], [], []
            for user, sign in (("ana", 1.0), ("ben", -1.0)):
                x = rng.standard_normal((n, 2))
                xs.append(x)
                ys.append(((sign * shift * x[:, 0]) > 0).astype(int))
                us += [user] * n
                ts.append(np.arange(n, dtype=float)[::-1])   # stored newest first: time order is reversed
            parts[split] = (np.concatenate(xs), np.concatenate(ys))
            kk[split] = {"user": np.array(us, dtype=object).astype(bytes), "time": np.concatenate(ts)}
        exps.append((f"e{k}", parts["train"], parts["test"]))
        keys.append(kk)
    return exps, keys


def test_per_user_matrices_are_each_users_own_run(tmp_path):
    exps, keys = users_stream(tmp_path)
    path = write_scenario(tmp_path / "users.h5", exps, 2, ["a", "b"], keys)
    with h5py.File(path, "a") as f:
        f.attrs["user_column"] = "user"
        f.attrs["time_column"] = "time"
    out = str(tmp_path / "pop.h5")
    rows = run_river(path, out, models=["hat", "logreg"], seeds=[3], per_user=True)
    sc = S.read(path)
    for row in rows:
        model = row["variant"].removeprefix("river_")
        pop = ckio.population(out, row["run_id"])
        with h5py.File(out, "r") as f:
            names = [s.decode() for s in f["runs"][row["run_id"]]["population"]["user_name"][()]]
        assert names == ["ana", "ben"]
        for u, name in enumerate(names):
            alone = S.per_user(sc, name, "user", None, "time")
            # time order: the rows of each user are reversed against storage order
            np.testing.assert_array_equal(alone[0].train.features, sc.experiences[0].train.features[
                np.flatnonzero(sc.experiences[0].train.keys["user"] == name)][::-1])
            res, _ = RM.run_model(model, 3, alone, sc.classes, sc.feature_names)
            np.testing.assert_array_equal(pop["accuracy_matrices"].values[u], res.R)
        with h5py.File(out, "r") as f:
            R = f["runs"][row["run_id"]]["accuracy_matrix"][()]
        np.testing.assert_allclose(R, pop["accuracy_matrices"].values.mean(axis=0))
    problems, _, checked = check_file(out)
    assert problems == [] and checked == 2


def run_cli(*argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv))
    return rc, buf.getvalue()


def test_table_check_and_loaders_read_the_river_rows(flip_file, tmp_path):
    out = str(tmp_path / "river.h5")
    rc, text = run_cli("baselines", "river", flip_file, "-o", out, "--models", "logreg,hat", "--seeds", "1,2")
    assert rc == 0, text
    assert "river_logreg_seed=2" in text
    rc, table = run_cli("table", out, "--metrics", "acc,bwt,forgetting,prequential_acc")
    assert rc == 0
    assert "| river_logreg | 2 |" in table and "| river_hat | 2 |" in table
    assert "prequential ACC %" in table
    rc, text = run_cli("check", out)
    assert rc == 0 and text.strip().endswith("OK"), text
    df = ckio.load_summary(out)
    assert list(df["configuration"]) == ["river_logreg", "river_logreg", "river_hat", "river_hat"]
    assert df.attrs["group_by"] == ["variant"] and list(df["seed"]) == [1, 2, 1, 2]
    R = ckio.metric_matrix(out)
    assert R.shape == (4, 2, 2) and list(R.coords["evaluated_name"].values) == ["rule", "flipped"]
    pq = ckio.prequential(out)
    assert pq.window_accuracy.shape == (4, 80) and pq.attrs["experience_starts"].tolist() == [0, 400]
    run = ckio.load_run(out, df.run_id[0])
    cfg = run["config"]
    assert cfg["baseline"] == "river" and cfg["river_version"] == river.__version__
    assert cfg["river_model"]["class"] == "river.compose.pipeline.Pipeline"
    assert cfg["scenario"]["sha256"] == S.file_sha256(flip_file)
    with h5py.File(out, "r") as f:
        p = f["runs"][df.run_id[0]]["prequential"]
        assert p["window_accuracy"].attrs["units"] == "fraction correct (0..1)"
        assert "last `window` predictions" in p["window_accuracy"].attrs["meaning"]
    # an existing output is kept unless --overwrite
    rc, _ = run_cli("baselines", "river", flip_file, "-o", out, "--models", "logreg")
    assert rc == 2


def test_unknown_model_and_not_a_scenario(tmp_path, flip_file):
    with pytest.raises(ValueError, match="unknown model"):
        run_river(flip_file, str(tmp_path / "x.h5"), models=["svm"])
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as f:
        f.attrs["format"] = "something else"
    with pytest.raises(ValueError, match="not a scenario file"):
        S.read(str(bad))


def test_continual_verifies_and_merges_the_file(tmp_path, flip_file):
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN): digest and merge not checked against the Swift side")
    out = str(tmp_path / "river.h5")
    run_river(flip_file, out, models=["logreg", "hat"], seeds=[1, 2], first_index=2)   # after the 2 neural runs
    r = subprocess.run([binary, "inspect", "--verify", out], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 verified, 0 damaged" in r.stdout
    # beside a neural sweep on the same stream
    exp = tmp_path / "neural.json"
    exp.write_text(json.dumps({"name": "neural", "seed": 1, "scenario": {"type": "dataset", "path": flip_file},
                               "model": {"hidden": [4]}, "optimizer": {"type": "sgd", "lr": 0.1},
                               "training": {"epochs": 2, "batch_size": 16}, "strategy": ["naive"],
                               "variants": [{"name": "naive"}], "sweep": {"parameters": {"seed": [1, 2]}}}))
    neural = str(tmp_path / "neural.h5")
    r = subprocess.run([binary, "run", str(exp), "-o", neural, "-q", "--plain"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    both = str(tmp_path / "both.h5")
    r = subprocess.run([binary, "merge", both, neural, out, "--allow-mixed"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "share a sweep_index" not in r.stderr
    rc, table = run_cli("table", both)
    assert "| naive | 2 |" in table and "| river_logreg | 2 |" in table
    assert list(ckio.load_summary(both)["configuration"]) == ["naive"] * 2 + ["river_logreg"] * 2 + ["river_hat"] * 2
    problems, _, checked = check_file(both)
    assert problems == [] and checked == 6
