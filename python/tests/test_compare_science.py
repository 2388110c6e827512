"""Experiments/tools/compare_science.py: bit-identity within one numerics version, sized
differences and an optional tolerance across a numerics change."""
import importlib.util
import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "Experiments", "tools", "compare_science.py")
spec = importlib.util.spec_from_file_location("compare_science", SCRIPT)
cs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cs)


def write(path, acc, version, kernel="avx2-fma", steps=10):
    with h5py.File(path, "w") as f:
        f.attrs["numerics_version"] = version
        f.attrs["kernel_path"] = kernel
        g = f.create_group("runs/r1")
        g.attrs["config_json"] = "{}"
        g.attrs["final_loss"] = np.float64(acc[-1] / 2)
        g.create_dataset("accuracy", data=np.asarray(acc, dtype=np.float64))
        g.create_dataset("steps", data=np.int64(steps))


def test_within_one_version_any_bit_counts(tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    write(a, [0.5, 0.75], 2)
    write(b, [0.5, np.nextafter(0.75, 1)], 2)
    accepted = []
    diffs = cs.compare_files(a, b, tolerance=0.1, accepted=accepted)
    assert len(diffs) == 2 and not accepted   # the dataset and the attribute derived from it
    assert "relative" in diffs[0]


def test_a_numerics_change_reports_sizes_and_accepts_within_the_tolerance(tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    write(a, [0.5, 0.75], 1, kernel="swift-simd8")
    write(b, [0.5, 0.76], 2)
    accepted = []
    assert cs.compare_files(a, b, tolerance=0.02, accepted=accepted) == []
    assert accepted[0].startswith("numerics changed: version 1 (swift-simd8) -> 2 (avx2-fma)")
    assert any("differs by 0.01 " in d for d in accepted)
    # Beyond the tolerance, or without one, the same difference counts, with its size.
    diffs = cs.compare_files(a, b, tolerance=0.005, accepted=[])
    assert any("/runs/r1/accuracy: differs by 0.01 " in d for d in diffs)
    assert len(cs.compare_files(a, b, accepted=[])) == 2


def test_non_float_differences_always_count(tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    write(a, [0.5], 1, steps=10)
    write(b, [0.5], 2, steps=11)
    assert cs.compare_files(a, b, tolerance=1.0, accepted=[]) == ["/runs/r1/steps: values differ (base [10], new [11])"]
