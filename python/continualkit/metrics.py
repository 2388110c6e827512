"""Continual-learning metrics from a matrix R[i][j] (accuracy, or any measure with its layout) —
the published definitions, the same as Sources/ContinualMetrics/AccuracyMatrix.swift:

- ACC = (1/T) Σ_j R[T−1][j]                        (Lopez-Paz & Ranzato 2017)
- BWT = (1/(T−1)) Σ_{j<T−1} (R[T−1][j] − R[j][j])   (Lopez-Paz & Ranzato 2017)
- FWT = (1/(T−1)) Σ_{j≥1} (R[j−1][j] − b[j])        (GEM; b = independently initialised model)
- forgetting = (1/(T−1)) Σ_{j<T−1} (max_{l<T−1} R[l][j] − R[T−1][j])   (Chaudhry et al. 2018)
- learning accuracy = (1/T) Σ_j R[j][j]
and the other libraries' variants under explicit names (forgetting_last = −BWT (Avalanche),
forgetting_max_all_rows (Mammoth), bwt_all_pairs (Díaz-Rodríguez et al. 2018), fwt_init).
Undefined values (T = 1) are NaN, never 0.
"""
from __future__ import annotations

import math

import numpy as np


def _R(R):
    R = np.asarray(R, dtype=float)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] < 1:
        raise ValueError(f"R must be T × T with T ≥ 1, got shape {R.shape}")
    return R


def acc(R) -> float:
    R = _R(R)
    return float(R[-1].mean())


def learning_accuracy(R) -> float:
    R = _R(R)
    return float(np.diag(R).mean())


def bwt(R) -> float:
    R = _R(R)
    T = R.shape[0]
    if T < 2:
        return math.nan
    return float(np.mean(R[T - 1, : T - 1] - np.diag(R)[: T - 1]))


def fwt(R, baseline) -> float:
    R = _R(R)
    T = R.shape[0]
    if T < 2:
        return math.nan
    b = np.asarray(baseline, dtype=float)
    return float(np.mean([R[j - 1, j] - b[j] for j in range(1, T)]))


def forgetting_per_experience(R) -> np.ndarray:
    """f(j, T−1) = max_{l<T−1} R[l][j] − R[T−1][j] for j < T−1 (Chaudhry et al. 2018)."""
    R = _R(R)
    T = R.shape[0]
    return np.array([R[: T - 1, j].max() - R[T - 1, j] for j in range(T - 1)])


def forgetting(R) -> float:
    R = _R(R)
    if R.shape[0] < 2:
        return math.nan
    return float(forgetting_per_experience(R).mean())


def forgetting_last(R) -> float:
    R = _R(R)
    T = R.shape[0]
    if T < 2:
        return math.nan
    return float(np.mean(np.diag(R)[: T - 1] - R[T - 1, : T - 1]))


def forgetting_max_all_rows(R) -> float:
    R = _R(R)
    T = R.shape[0]
    if T < 2:
        return math.nan
    return float(np.mean([R[:, j].max() - R[T - 1, j] for j in range(T - 1)]))


def bwt_all_pairs(R) -> float:
    R = _R(R)
    T = R.shape[0]
    if T < 2:
        return math.nan
    total = sum(R[i, j] - R[j, j] for i in range(1, T) for j in range(i))
    return float(total / (T * (T - 1) / 2))


def all_metrics(R, baseline_random=None, baseline_init=None) -> dict:
    """Every metric the Swift side stores in `runs/<id>/metrics` (those needing a baseline only
    when it is given)."""
    out = dict(acc=acc(R), bwt=bwt(R), forgetting=forgetting(R), learning_accuracy=learning_accuracy(R),
               forgetting_last=forgetting_last(R), forgetting_max_all_rows=forgetting_max_all_rows(R),
               bwt_all_pairs=bwt_all_pairs(R))
    if baseline_random is not None:
        out["fwt"] = fwt(R, baseline_random)
    if baseline_init is not None:
        out["fwt_init"] = fwt(R, baseline_init)
    return out


def seen_accuracy_curve(R) -> np.ndarray:
    """Mean accuracy over the experiences seen so far after each experience: c[i] = mean_{j≤i} R[i][j]."""
    R = _R(R)
    return np.array([R[i, : i + 1].mean() for i in range(R.shape[0])])


def min_acc(training_experience, accuracy, R) -> float:
    """min-ACC (De Lange et al. 2023, eq. 2), as `ContinualEvaluationCurve.minAccuracy`: for every
    experience j < T−1, the lowest accuracy on j at any continual-evaluation point taken while a
    later experience trained (`training_experience` > j; `accuracy` [P, T]) or in a later row of
    R; averaged over j. NaN for T < 2."""
    R = _R(R)
    T = R.shape[0]
    if T < 2:
        return math.nan
    e = np.asarray(training_experience, dtype=int)
    A = np.asarray(accuracy, dtype=float).reshape(len(e), -1) if len(e) else np.zeros((0, T))
    total = 0.0
    for j in range(T - 1):
        vals = [R[l, j] for l in range(j + 1, T) if not math.isnan(R[l, j])]
        vals += [v for v in A[e > j, j] if not math.isnan(v)]
        total += min(vals)
    return total / (T - 1)


def wc_acc(min_accuracy, R) -> float:
    """WC-ACC (De Lange et al. 2023, eq. 3): (1/T) R[T−1][T−1] + (1 − 1/T) min-ACC."""
    R = _R(R)
    T = R.shape[0]
    return float(R[-1, -1]) if T == 1 else float(R[-1, -1] / T + (1 - 1 / T) * min_accuracy)


def close(a, b, tol=1e-9) -> bool:
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def measures_from_confusion(cm) -> dict:
    """Balanced accuracy and macro-F1 of a K×K confusion matrix (rows true, columns predicted), as
    scikit-learn defines them: mean recall over classes present; mean F1 over classes present or
    predicted, F1 = 2TP / (2TP + FP + FN). NaN for an empty matrix."""
    cm = np.asarray(cm, dtype=np.int64)
    if cm.sum() == 0:
        return {"balanced_acc": float("nan"), "macro_f1": float("nan")}
    tp = np.diag(cm).astype(float)
    actual, predicted = cm.sum(axis=1), cm.sum(axis=0)
    present = actual > 0
    seen = present | (predicted > 0)
    recall = tp[present] / actual[present]
    f1 = 2 * tp[seen] / (2 * tp[seen] + (predicted[seen] - tp[seen]) + (actual[seen] - tp[seen]))
    return {"balanced_acc": float(recall.mean()), "macro_f1": float(f1.mean())}
