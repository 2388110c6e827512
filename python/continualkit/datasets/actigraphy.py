"""pyActigraphy's example actigraphy recordings (GPL-3.0; optional extra `actigraphy`): the five
multi-day wrist actigraphy files `pyActigraphy/tests/data/example_0[1-5].AWD` carried by the
PyPI package pyActigraphy 1.2.2, one per person, activity counts per 1-minute epoch (Actiwatch
AWD format: a 7-line header — name, start date, start time, epoch code, age, serial, sex — then
one count per line). They are read directly as text; pyActigraphy itself is never imported (its
dependencies are heavy), only its installed files are used.

No labels come with four of the five files (one sleep diary exists, for example_01), so the task
is a forecast every person has: **will the next hour be active** — its total count above the
person's median hourly count over the whole recording (a per-person threshold, chosen so both
classes occur for everyone). The sample at the end of hour h has 11 features: log1p of the
counts of each of the last 6 hours, sin/cos of the next hour of the day, whether the next hour is
on a weekend, the share of zero-count minutes in the last hour, and log1p of the last 24 hours'
total. Experiences: days 1–4, 5–8 and 9–12 of each recording (day 0 gives the first 24 h of
history), so every person has the same three; the drift is the person's own week-to-week
routine."""
from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np

from .convert import ExperienceSpec, WindowTable
from .source import DatasetError, PackagedFile

FILES = [f"pyActigraphy/tests/data/example_0{i}.AWD" for i in range(1, 6)]
# sha256 over the five files' sha256 digests, in order (version 1.2.2).
FILES_SHA256 = "544a1f62ef65a2e4d8a06ed1253994a8a045835045ed6b2c2a60a24c922744ac"

SOURCE = PackagedFile(
    dataset="actigraphy", package="pyActigraphy", version="1.2.2", relative=FILES[0],
    sha256="", extra="actigraphy",
    licence="GPL-3.0 (pyActigraphy's licence; the recordings ship as its test data). Optional extra only: "
            "converting is running GPL code's data files, not linking it; the converted file carries this licence",
    source="pyActigraphy test data: five multi-day Actiwatch recordings (example_01 … example_05.AWD)",
    citation="Hammad, Reyt, Beliy, Baillet, Deantoni, Lesoinne, Muto, Schmidt. pyActigraphy: Open-source python "
             "package for actigraphy data visualization and analysis. PLoS Comput Biol 17(10), 2021")

CLASS_NAMES = ["next_hour_quiet", "next_hour_active"]
FEATURES = [f"log_count_h-{k}" for k in range(1, 7)] + ["next_hour_sin", "next_hour_cos", "next_hour_weekend",
                                                        "zero_minutes_last_hour", "log_count_24h"]
PROTOCOLS = {"weeks": [ExperienceSpec(f"days_{1 + 4 * i}-{4 + 4 * i}", sessions=lambda s, i=i: s == i,
                                      description=f"hours of days {1 + 4 * i}-{4 + 4 * i}") for i in range(3)]}


def locate_all(source_dir: str | None = None) -> list[str]:
    """The five files, from the installed package (version checked) or a directory holding them."""
    import os
    if source_dir:
        paths = [os.path.join(source_dir, os.path.basename(f)) for f in FILES]
    else:
        files = SOURCE.installed_files()
        paths = [str(files[f].locate()) if f in files else "" for f in FILES]
    missing = [p for p in paths if not p or not os.path.isfile(p)]
    if missing:
        raise DatasetError(f"missing actigraphy files {missing}; reinstall: pip install --force-reinstall "
                           f"'{SOURCE.package}=={SOURCE.version}'")
    if sha256_of(paths) != FILES_SHA256:
        raise DatasetError(f"the AWD files {paths[0]} … are not those of {SOURCE.package} {SOURCE.version} (sha256 "
                           f"differs): damaged or another version; run: pip install --force-reinstall "
                           f"'{SOURCE.package}=={SOURCE.version}'")
    return paths


def read_awd(path: str):
    """(start datetime, counts per 1-minute epoch)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    if len(lines) < 8 or lines[3].strip() != "4":
        raise DatasetError(f"{path}: not a 1-minute-epoch AWD file (epoch code {lines[3].strip() if len(lines) > 3 else '?'})")
    start = dt.datetime.strptime(lines[1].strip() + " " + lines[2].strip(), "%d-%b-%Y %H:%M")
    counts = np.array([float(line.split()[0]) for line in lines[7:] if line.strip()], dtype=np.float64)
    return start, counts


def table(paths: list[str]):
    """Every person's hourly samples (person ids 1…5 in file order), standardised like the windows."""
    parts = []
    for uid, path in enumerate(paths, start=1):
        start, counts = read_awd(path)
        # Align to whole hours: drop the minutes before the first full hour.
        skip = (60 - start.minute) % 60
        first_hour = start.replace(minute=0) + dt.timedelta(hours=1 if skip else 0)
        c = counts[skip:]
        hours = len(c) // 60
        per_hour = c[:hours * 60].reshape(hours, 60)
        total = per_hour.sum(axis=1)
        threshold = np.median(total)
        rows = []
        for h in range(24, min(hours - 1, 13 * 24)):           # the sample at the end of hour h predicts hour h+1
            day = h // 24
            if day < 1 or day > 12:
                continue
            nxt = first_hour + dt.timedelta(hours=h + 1)
            angle = 2 * np.pi * nxt.hour / 24
            x = [np.log1p(total[h - k]) for k in range(0, 6)] + [np.sin(angle), np.cos(angle),
                                                               1.0 if nxt.weekday() >= 5 else 0.0,
                                                               float(np.mean(per_hour[h] == 0)),
                                                               np.log1p(total[h - 23:h + 1].sum())]
            rows.append((uid, (day - 1) // 4, float(h + 1) * 3600.0, int(total[h + 1] > threshold), x))
        parts.extend(rows)
    if not parts:
        raise DatasetError("no hourly samples")
    x = np.array([r[4] for r in parts], dtype=np.float64)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    t = WindowTable(np.array([r[0] for r in parts], np.int64), np.array([r[1] for r in parts], np.int64),
                    np.array([r[2] for r in parts]), np.array([r[3] for r in parts], np.int64), (x - mean) / std)
    return t, FEATURES, mean, std


def sha256_of(paths: list[str]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()
