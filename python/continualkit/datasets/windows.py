"""The window-feature recipe shared by every real-data importer.

A recording (samples × channels, one label per sample, fixed sampling rate) becomes windows of
`length` samples every `step` samples. Each window gets, for every channel and for the
magnitude of each 3-axis sensor (√(x²+y²+z²)), seven features:

- ``mean``, ``std`` (population, ddof 0),
- ``p10``, ``p50``, ``p90`` (numpy's linear-interpolation percentiles),
- ``energy``: the mean of the squared values,
- ``jerk``: the mean absolute first difference times the sampling rate (units per second).

A window's label is the label most of its samples carry; the window is kept when that label
covers at least `purity` of the window and is a real label (≥ 0 after the importer's mapping):
windows that straddle an activity change or an unlabelled stretch are dropped.
"""
from __future__ import annotations

from dataclasses import dataclass, asdict

import numpy as np

STATS = ("mean", "std", "p10", "p50", "p90", "energy", "jerk")


@dataclass(frozen=True)
class WindowRecipe:
    length: int = 128          # samples (2.56 s at 50 Hz, as in UCI HAR)
    step: int = 64             # samples (50 % overlap)
    rate_hz: float = 50.0
    purity: float = 0.75       # share of the window carrying the majority label

    def as_dict(self):
        d = asdict(self)
        d["features"] = list(STATS)
        d["magnitudes"] = "one per 3-axis sensor: sqrt(x^2+y^2+z^2)"
        d["standardised"] = "z-score per feature over every kept window of every user of the source"
        return d


def channels_with_magnitudes(signal: np.ndarray, names: list[str], sensors: list[tuple[str, list[int]]]):
    """`signal` [n, c] → [n, c + len(sensors)] with each sensor's magnitude appended."""
    mags = [np.sqrt(np.sum(signal[:, idx] ** 2, axis=1)) for _, idx in sensors]
    return np.column_stack([signal] + mags), names + [f"{s}_mag" for s, _ in sensors]


def feature_names(channels: list[str]) -> list[str]:
    return [f"{c}_{s}" for c in channels for s in STATS]


def windows(signal: np.ndarray, labels: np.ndarray, recipe: WindowRecipe):
    """Windows of one recording: (features [w, channels·7] float64, labels [w] int64,
    start sample [w] int64). `labels` < 0 marks unlabelled samples."""
    n, c = signal.shape
    if n < recipe.length:
        return np.zeros((0, c * len(STATS))), np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.arange(0, n - recipe.length + 1, recipe.step, dtype=np.int64)
    idx = starts[:, None] + np.arange(recipe.length)[None, :]
    w = signal[idx]                                   # [w, length, c]
    lab = labels[idx]                                 # [w, length]
    # Majority label per window (ties: the smallest label), and its share.
    low = int(min(lab.min(), -1))
    values = np.arange(low, int(lab.max()) + 1)
    counts = np.stack([(lab == v).sum(axis=1) for v in values], axis=1)   # [w, labels]
    j = np.argmax(counts, axis=1)                                        # first maximum: the smallest label
    keep_label = values[j].astype(np.int64)
    share = counts[np.arange(len(starts)), j] / recipe.length
    keep = (share >= recipe.purity) & (keep_label >= 0)
    w, keep_label, starts = w[keep], keep_label[keep], starts[keep]
    if len(starts) == 0:
        return np.zeros((0, c * len(STATS))), keep_label, starts
    mean = w.mean(axis=1)
    std = w.std(axis=1)
    p10, p50, p90 = np.percentile(w, [10, 50, 90], axis=1)
    energy = (w ** 2).mean(axis=1)
    jerk = np.abs(np.diff(w, axis=1)).mean(axis=1) * recipe.rate_hz
    stats = np.stack([mean, std, p10, p50, p90, energy, jerk], axis=2)  # [w, c, 7]
    return stats.reshape(len(starts), c * len(STATS)), keep_label, starts


def chronological_split(n: int, test_share: float = 0.3):
    """Train / test indices of `n` consecutive windows of one class in one experience: the first
    windows train, the last `round(test_share·n)` (at least 1 when n ≥ 2) test, and when n ≥ 4 the
    one window between them is dropped, since 50 %-overlapping neighbours share samples."""
    if n <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if n == 1:
        return np.arange(1), np.zeros(0, np.int64)
    n_test = max(1, int(round(test_share * n)))
    gap = 1 if n >= 4 else 0
    n_train = n - n_test - gap
    return np.arange(n_train), np.arange(n - n_test, n)
