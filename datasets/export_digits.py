#!/usr/bin/env python3
"""Exports scikit-learn's bundled 8x8 digits (1797 images, 10 classes; shipped inside the pip
package, no download) to the ContinualKit HDF5 scenario layout as datasets/digits.h5.

One experience "digits" holds a stratified 80/20 train/test split (seeded, so the file is
reproducible); features are the 64 pixel intensities scaled from 0..16 to 0..1. The scenarios
split_digits and permuted_digits build their streams from this file.

Usage: python3 datasets/export_digits.py [-o datasets/digits.h5]   (pip install scikit-learn h5py)
"""
import argparse
import json

import h5py
import numpy as np
from sklearn.datasets import load_digits


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", default="datasets/digits.h5")
    args = parser.parse_args()

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    rng = np.random.RandomState(0)
    test = np.zeros(len(y), dtype=bool)
    for c in range(10):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        test[idx[: int(round(0.2 * len(idx)))]] = True

    with h5py.File(args.output, "w", track_order=False) as f:
        f.attrs["format"] = "continualkit-scenario"
        f.attrs["format_version"] = np.int64(1)
        f.attrs["name"] = "digits"
        f.attrs["head"] = "multiclass"
        f.attrs["classes"] = np.int64(10)
        f.attrs["dimension"] = np.int64(64)
        f.attrs["experience_count"] = np.int64(1)
        f.attrs["metadata_json"] = json.dumps({
            "source": "sklearn.datasets.load_digits (UCI optical recognition of handwritten digits, test part)",
            "scaling": "pixel / 16", "split": "stratified 80/20, numpy RandomState(0)"}, sort_keys=True)
        f.attrs["options_json"] = ""
        f.attrs["toolkit_version"] = "0.1.0"
        string = h5py.string_dtype("utf-8")
        f.create_dataset("feature_names", data=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)], dtype=string)
        f.create_dataset("experience_names", data=["digits"], dtype=string)
        g = f.create_group("experiences/000")
        g.attrs["index"] = np.int64(0)
        g.attrs["name"] = "digits"
        g.attrs["metadata_json"] = json.dumps({"classes": "0,1,2,3,4,5,6,7,8,9"})
        for split, mask in (("train", ~test), ("test", test)):
            s = g.create_group(split)
            s.create_dataset("features", data=x[mask], compression="gzip", compression_opts=9, shuffle=True)
            s.create_dataset("labels", data=y[mask], compression="gzip", compression_opts=9, shuffle=True)
    print(f"{args.output}: {(~test).sum()} train + {test.sum()} test samples, 64 features, 10 classes")


if __name__ == "__main__":
    main()
