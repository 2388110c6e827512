"""seglearn's smartwatch exercise set (Burns et al. 2018), carried by the PyPI package `seglearn`
1.2.5 in `seglearn/data/watch_dataset.npy`: 10 subjects, each performing 7 shoulder exercises
(20 repetitions a set) once with the left and once with the right arm, a smartwatch's 6-axis
inertial sensor (accelerometer ax/ay/az, gyroscope wx/wy/wz) at 50 Hz; 140 recordings, one
exercise label each. The file is a pickled dict of numpy arrays (`allow_pickle=True`; it is read
only after its sha256 matched the known file)."""
from __future__ import annotations

import numpy as np

from .source import PackagedFile

SOURCE = PackagedFile(
    dataset="watch", package="seglearn", version="1.2.5", relative="seglearn/data/watch_dataset.npy",
    sha256="eb122f23cdf06ef6bd6c6c5312958ec5cf9d038e2e6d457b8081662c75a42537", extra="watch",
    licence="BSD-3-Clause (seglearn's LICENSE, Copyright (c) 2018 David M. Burns; the data ships in the wheel)",
    source="seglearn load_watch(): shoulder-exercise smartwatch recordings of 10 subjects",
    citation="Burns, Leung, Hardisty, Whyne, Henry, McLachlin. Shoulder physiotherapy exercise recognition: "
             "machine learning the inertial signals from a smartwatch. Physiological Measurement 39(7), 2018")

CHANNELS = ["acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"]
SENSORS = [("acc", [0, 1, 2]), ("gyro", [3, 4, 5])]
CLASS_NAMES = ["pendulum", "abduction", "forward_elevation", "internal_rotation", "external_rotation",
               "trapezius_extension", "upright_row"]
RATE_HZ = 50.0


def recordings(path: str):
    """Per subject, its recordings as (session = arm side: 0 left, 1 right, signal, labels, start
    time): the recording order is not in the file, so within a subject the recordings are laid end
    to end left arm first, then by exercise, and `time` is that synthetic order (documented)."""
    d = np.load(path, allow_pickle=True).item()
    out = {}
    subjects = np.asarray(d["subject"]).astype(int)
    sides = np.asarray(d["side"]).astype(int)
    ys = np.asarray(d["y"]).astype(int)
    for uid in sorted(set(subjects.tolist())):
        idx = [i for i in range(len(ys)) if subjects[i] == uid]
        idx.sort(key=lambda i: (sides[i], ys[i], i))
        t = 0.0
        rows = []
        for i in idx:
            x = np.asarray(d["X"][i], dtype=np.float64)
            rows.append((int(sides[i]), x, np.full(len(x), ys[i], np.int64), t))
            t += len(x) / RATE_HZ
        out[uid] = rows
    return out
