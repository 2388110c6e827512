"""Non-neural streaming baselines from river (https://riverml.xyz; `pip install './python[river]'`)
on a scenario file, in the toolkit's two protocols:

- **experience protocol**: `learn_one` over experience i's training samples in stream order (one
  pass), then `predict_one` on every experience's test set → R[i][j], the accuracy matrix the
  neural runs have (docs/results-format.md), with ACC/BWT/FWT/forgetting from it
  (`continualkit.metrics`, the definitions of DESIGN.md "Metrics");
- **prequential** (test-then-train, Gama et al. 2013): every training sample of the concatenated
  stream is predicted first, then learned from → a prequential accuracy curve in the layout of
  `training.mode = "prequential"` runs (`runs/<id>/prequential/`).

Both come from one pass: river's `predict_one` does not change a model (trees, forests and
linear models; a pipeline's scaler learns only in `learn_one`), so the model evaluated after
experience i has learned exactly the samples it would have learned without the predictions
(`python/tests/test_river_baselines.py` checks this against learn-only passes).

Models (`MODELS`): `hat` Hoeffding adaptive tree (`tree.HoeffdingAdaptiveTreeClassifier`, seeded:
its bootstrap sampling draws), `arf` adaptive random forest (`forest.ARFClassifier`, seeded),
`logreg` online logistic regression (`preprocessing.StandardScaler | linear_model.
LogisticRegression`; one-vs-rest, `multiclass.OneVsRestClassifier`, for more than two classes);
river's default hyperparameters throughout. A model predicts nothing (None) before its first
sample and only classes it has seen: such predictions count as wrong.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np

#: model name → (summary strategy label, what it is)
MODELS = {
    "hat": "Hoeffding adaptive tree (river tree.HoeffdingAdaptiveTreeClassifier)",
    "arf": "adaptive random forest (river forest.ARFClassifier)",
    "logreg": "online logistic regression (river preprocessing.StandardScaler | linear_model.LogisticRegression, "
              "one-vs-rest for more than two classes)",
}
SEEDED = {"hat", "arf"}


def river_module():
    try:
        import river
    except ImportError:
        raise ImportError("the river baselines need the river package: pip install './python[river]' "
                          "(or pip install river)") from None
    return river


def river_version() -> str:
    return river_module().__version__


def make_model(name: str, seed: int, classes: int):
    """A fresh river model. `seed` goes to the seeded models (hat, arf); logreg is deterministic."""
    river_module()
    from river import forest, linear_model, multiclass, preprocessing, tree
    if name == "hat":
        return tree.HoeffdingAdaptiveTreeClassifier(seed=seed)
    if name == "arf":
        return forest.ARFClassifier(seed=seed)
    if name == "logreg":
        lr = linear_model.LogisticRegression()
        return preprocessing.StandardScaler() | (lr if classes == 2 else multiclass.OneVsRestClassifier(lr))
    raise ValueError(f"unknown river model {name!r}: {', '.join(MODELS)}")


def _jsonable(v):
    """river's `_get_params()` as JSON: (class, params) pairs become {"class": …, "params": …}."""
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], type) and isinstance(v[1], dict):
        return {"class": f"{v[0].__module__}.{v[0].__qualname__}", "params": _jsonable(v[1])}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, type):
        return f"{v.__module__}.{v.__qualname__}"
    if isinstance(v, (np.generic,)):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def model_description(model) -> dict:
    """Class and every parameter of a river model (pipelines: each step's), JSON-ready."""
    cls = type(model)
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "params": _jsonable(model._get_params())}


@dataclass
class StreamResult:
    R: np.ndarray                 # (T, T) accuracy
    confusion: np.ndarray         # (T, T, K, K) counts, rows true, columns predicted (None predictions left out)
    baseline_init: np.ndarray     # (T,) accuracy of the untrained model
    test_sizes: np.ndarray
    train_sizes: np.ndarray
    position: np.ndarray          # prequential record points (1-based samples predicted so far)
    window_accuracy: np.ndarray
    cumulative_accuracy: np.ndarray
    experience: np.ndarray
    experience_starts: np.ndarray
    prequential_accuracy: float   # over every test-then-train prediction
    train_seconds: float
    eval_seconds: float
    memory_bytes: int             # river's estimate of the final model's Python memory


def _rows(features: np.ndarray, names) -> list:
    return [dict(zip(names, r)) for r in features.astype(float).tolist()]


def _predict(model, xs, binary_bool: bool):
    out = np.empty(len(xs), dtype=np.int64)
    for k, x in enumerate(xs):
        p = model.predict_one(x)
        out[k] = -1 if p is None else int(p)
    return out


def run_stream(model, experiences, classes: int, feature_names, *, binary_bool: bool = False,
               window: int = 100, record_every: int = 10) -> StreamResult:
    """Both protocols in one pass over `experiences` (scenario_file.Experience list).
    `binary_bool`: the model takes bool targets (river's binary LogisticRegression)."""
    T = len(experiences)
    tests = [_rows(e.test.features, feature_names) for e in experiences]
    test_y = [e.test.labels for e in experiences]
    R = np.full((T, T), np.nan)
    confusion = np.zeros((T, T, classes, classes), dtype=np.int64)
    eval_seconds = 0.0

    def evaluate():
        nonlocal eval_seconds
        t0 = time.perf_counter()
        accs, preds = [], []
        for xs, y in zip(tests, test_y):
            p = _predict(model, xs, binary_bool)
            preds.append(p)
            accs.append(float(np.mean(p == y)) if len(y) else np.nan)
        eval_seconds += time.perf_counter() - t0
        return np.array(accs), preds

    baseline_init, _ = evaluate()
    eval_seconds = 0.0                      # the untrained model's evaluation is not the run's
    correct = []
    pos, win, cum, exp_at, starts = [], [], [], [], []
    train_seconds = 0.0
    for i, e in enumerate(experiences):
        starts.append(len(correct))
        xs = _rows(e.train.features, feature_names)
        ys = e.train.labels.tolist()
        t0 = time.perf_counter()
        for x, y in zip(xs, ys):
            p = model.predict_one(x)
            correct.append(p is not None and int(p) == y)
            model.learn_one(x, bool(y) if binary_bool else y)
            n = len(correct)
            if n % record_every == 0:
                pos.append(n)
                w = correct[-window:]
                win.append(sum(w) / len(w))
                cum.append(sum(correct) / n)
                exp_at.append(i)
        train_seconds += time.perf_counter() - t0
        R[i], preds = evaluate()
        for j, (p, y) in enumerate(zip(preds, test_y)):
            ok = p >= 0
            np.add.at(confusion[i, j], (y[ok], p[ok]), 1)
    try:
        memory = int(model._raw_memory_usage)
    except Exception:  # noqa: BLE001 - an estimate only
        memory = 0
    return StreamResult(
        R=R, confusion=confusion, baseline_init=baseline_init,
        test_sizes=np.array([len(y) for y in test_y], dtype=np.int64),
        train_sizes=np.array([len(e.train) for e in experiences], dtype=np.int64),
        position=np.array(pos, dtype=np.int64), window_accuracy=np.array(win, dtype=float),
        cumulative_accuracy=np.array(cum, dtype=float), experience=np.array(exp_at, dtype=np.int64),
        experience_starts=np.array(starts, dtype=np.int64),
        prequential_accuracy=float(np.mean(correct)) if correct else float("nan"),
        train_seconds=train_seconds, eval_seconds=eval_seconds, memory_bytes=memory)


def run_model(name: str, seed: int, experiences, classes: int, feature_names, **kw) -> tuple[StreamResult, dict]:
    """(result, description) of one river model on one stream."""
    model = make_model(name, seed, classes)
    desc = model_description(model)
    res = run_stream(model, experiences, classes, feature_names, binary_bool=(name == "logreg" and classes == 2), **kw)
    return res, desc


def describe_json(desc: dict) -> str:
    return json.dumps(desc, sort_keys=True)
