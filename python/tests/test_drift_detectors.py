"""The drift detectors of `continual drift` against river's, an independent maintained
implementation (issue 32): on the same streams with the same parameters, every drift index (and,
for DDM and EDDM, every warning index) must be the same. The streams are the ones the detectors
are for: 0/1 prediction errors whose rate jumps or creeps up, and losses / features whose mean
shifts, with and without noise, plus streams without drift (false alarms must agree too)."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import find_continual

river_drift = pytest.importorskip("river.drift", reason="pip install river (the [test] extra; CI installs it)")


@pytest.fixture(scope="module")
def binary():
    b = find_continual()
    if b is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN or swift build -c release)")
    return b


def error_stream(seed, rates, length=1000):
    """0/1 errors, `length` values per rate: an abrupt change of the error rate at each boundary."""
    rng = np.random.default_rng(seed)
    return np.concatenate([(rng.random(length) < p).astype(float) for p in rates])


def gradual_error_stream(seed, start=0.1, end=0.5, n=3000):
    rng = np.random.default_rng(seed)
    rate = np.clip(np.linspace(start - 0.2, end + 0.2, n), start, end)
    return (rng.random(n) < rate).astype(float)


def real_stream(seed, means, length=800, sd=1.0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(m, sd, length) for m in means])


STREAMS = {
    **{f"errors_abrupt_{s}": error_stream(s, [0.1, 0.4, 0.15]) for s in range(4)},
    **{f"errors_small_{s}": error_stream(s, [0.2, 0.3]) for s in range(2)},
    **{f"errors_none_{s}": error_stream(s, [0.25], length=4000) for s in range(2)},
    **{f"errors_gradual_{s}": gradual_error_stream(s) for s in range(2)},
    **{f"real_shift_{s}": real_stream(s, [0.0, 1.5, -0.5, 3.0]) for s in range(3)},
    **{f"real_none_{s}": real_stream(s, [0.5], length=4000, sd=2.0) for s in range(2)},
    "real_large_values": real_stream(9, [1e6, 1e6 + 50], sd=10.0),
}
BINARY = [k for k in STREAMS if k.startswith("errors")]

# (continual name, --set parameters, river constructor); non-default parameters too.
DETECTORS = [
    ("adwin", {}, lambda: river_drift.ADWIN()),
    ("adwin", {"delta": 0.05, "clock": 8, "max_buckets": 3, "min_window_length": 10, "grace_period": 40},
     lambda: river_drift.ADWIN(delta=0.05, clock=8, max_buckets=3, min_window_length=10, grace_period=40)),
    ("page_hinkley", {}, lambda: river_drift.PageHinkley()),
    ("page_hinkley", {"threshold": 8, "delta": 0.01, "alpha": 0.999, "min_instances": 50, "mode": 0},
     lambda: river_drift.PageHinkley(threshold=8, delta=0.01, alpha=0.999, min_instances=50, mode="up")),
    ("page_hinkley", {"threshold": 8, "mode": 1}, lambda: river_drift.PageHinkley(threshold=8, mode="down")),
    ("ddm", {}, lambda: river_drift.binary.DDM()),
    ("ddm", {"warm_start": 100, "warning_threshold": 1.5, "drift_threshold": 2.5},
     lambda: river_drift.binary.DDM(warm_start=100, warning_threshold=1.5, drift_threshold=2.5)),
    ("eddm", {}, lambda: river_drift.binary.EDDM()),
    ("eddm", {"warm_start": 10, "alpha": 0.97, "beta": 0.85}, lambda: river_drift.binary.EDDM(warm_start=10, alpha=0.97, beta=0.85)),
    # KSWIN draws at random: the same seed in both (river uses Python's `random`, so do we).
    ("kswin", {}, lambda: river_drift.KSWIN(seed=1)),
    ("kswin", {"alpha": 0.01, "window_size": 60, "stat_size": 20, "seed": 12345678901},
     lambda: river_drift.KSWIN(alpha=0.01, window_size=60, stat_size=20, seed=12345678901)),
]


def river_signals(make, values):
    d = make()
    drifts, warnings = [], []
    for i, x in enumerate(values):
        d.update(x)
        if d.drift_detected:
            drifts.append(i)
        elif getattr(d, "warning_detected", False):
            warnings.append(i)
    return drifts, warnings


def ours(binary, tmp_path, name, settings, values, extra=()):
    path = tmp_path / "stream.txt"
    path.write_text("\n".join(repr(float(v)) for v in values) + "\n")
    args = [binary, "drift", str(path), "--detector", name, "--json", *extra]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name,settings,make", DETECTORS, ids=[f"{d[0]}-{i}" for i, d in enumerate(DETECTORS)])
def test_detections_equal_rivers(binary, tmp_path, name, settings, make):
    streams = BINARY if name in ("ddm", "eddm") else list(STREAMS)
    total = 0
    for key in streams:
        values = STREAMS[key]
        expected_drifts, expected_warnings = river_signals(make, values)
        got = ours(binary, tmp_path, name, settings, values)
        assert got["n"] == len(values)
        assert got["drifts"] == expected_drifts, (key, name, settings)
        assert got["warnings"] == expected_warnings, (key, name, settings)
        total += len(expected_drifts)
    # The comparison must exercise detections, not only agree on silence.
    assert total >= 3, f"{name} {settings}: only {total} detections over all streams"


def test_score_against_known_drift_points(binary, tmp_path):
    values = error_stream(0, [0.05, 0.6, 0.05], length=1500)
    got = ours(binary, tmp_path, "ddm", {}, values, extra=["--drifts", "1500,3000"])
    drifts = got["drifts"]
    score = got["score"]
    # Recomputed here from the detections: first detection in each segment, the rest false alarms.
    expected_delays, false_alarms = [None, None], 0
    for d in drifts:
        seg = 1 if d >= 3000 else 0 if d >= 1500 else None
        if seg is None or expected_delays[seg] is not None:
            false_alarms += 1
        else:
            expected_delays[seg] = d - (1500, 3000)[seg]
    assert score["delays"] == expected_delays
    assert score["false_alarms"] == false_alarms
    assert score["detected"] == sum(d is not None for d in expected_delays)
    assert expected_delays[0] is not None and expected_delays[0] < 200   # a jump 5 % → 60 % is found fast


@pytest.mark.parametrize("args,message", [
    (["--detector", "cusum"], "unknown drift detector 'cusum'"),
    (["--detector", "adwin", "--set", "gamma=1"], "'gamma' is not a parameter of adwin"),
    (["--detector", "adwin", "--set", "delta=2"], "adwin.delta must be in (0, 1)"),
    (["--detector", "ddm", "--set", "warm_start=2.5"], "ddm.warm_start must be a whole number"),
    (["--detector", "eddm", "--set", "alpha=0.5"], "eddm.alpha must be in [beta, 1]"),
    (["--detector", "adwin", "--max-delay", "5"], "--max-delay needs --drifts"),
])
def test_bad_input_is_refused_with_the_parameter(binary, tmp_path, args, message):
    path = tmp_path / "s.txt"
    path.write_text("0\n1\n")
    r = subprocess.run([binary, "drift", str(path), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout
    assert message in r.stderr


def test_a_bad_line_names_its_line(binary, tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("0\n1\nnan\n")
    r = subprocess.run([binary, "drift", str(path), "--detector", "ddm"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert ":3: 'nan' is not a finite number" in r.stderr
