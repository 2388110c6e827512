#!/usr/bin/env python3
"""Checks the measures beyond accuracy that the toolkit stores against scikit-learn.

Reads a results file written with `"metrics": {"store_predictions": true}` and, for every run,
recomputes from the stored final predictions, labels and (binary heads) positive-class logits:
accuracy, balanced accuracy, macro-F1, AUROC and average precision per experience with
scikit-learn, and compares them with the last row of the stored matrices (to 1e-12). Also checks
the last confusion matrices against sklearn's confusion_matrix.

    continual run Experiments/tools/measures_check.json -o /tmp/m.h5
    python3 Experiments/tools/check_measures.py /tmp/m.h5
"""
import sys
import warnings

warnings.filterwarnings("ignore", category=UserWarning)

import h5py
import numpy as np
from sklearn.metrics import (accuracy_score, average_precision_score, balanced_accuracy_score,
                             confusion_matrix, f1_score, roc_auc_score)


def close(a, b):
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-12


def main(path):
    failures = checked = 0
    with h5py.File(path, "r") as f:
        table = f["summary"][()] if "summary" in f else []
        summary = {}
        for r in table:
            rid_ = r["run_id"].decode() if isinstance(r["run_id"], bytes) else str(r["run_id"])
            summary[rid_] = {n: float(r[n]) for n in ("balanced_acc", "macro_f1", "auroc", "auprc")}
        for rid, g in f["runs"].items():
            if "final_predictions" not in g:
                continue
            sizes = g["test_sizes"][()]
            pred, labels = g["final_predictions"][()], g["final_labels"][()]
            scores = g["final_scores"][()] if "final_scores" in g else None
            T = len(sizes)
            K = g["confusion"].shape[-1] if "confusion" in g else None
            start = 0
            for j, n in enumerate(sizes):
                y, p = labels[start:start + n], pred[start:start + n]
                s = scores[start:start + n] if scores is not None else None
                start += n
                present = np.unique(np.concatenate([y, p]))
                want = {
                    "accuracy_matrix": accuracy_score(y, p),
                    "balanced_accuracy": balanced_accuracy_score(y, p),
                    "macro_f1": f1_score(y, p, average="macro", labels=present, zero_division=0),
                }
                if s is not None:
                    both = len(np.unique(y)) == 2
                    want["auroc"] = roc_auc_score(y, s) if both else float("nan")
                    want["auprc"] = average_precision_score(y, s) if (y == 1).any() else float("nan")
                for name, value in want.items():
                    got = g[name][T - 1, j]
                    checked += 1
                    if not close(got, value):
                        failures += 1
                        print(f"{rid} {g.attrs['name']} experience {j}: {name} stored {got!r}, scikit-learn {value!r}")
                if K is not None:
                    cm = confusion_matrix(y, p, labels=list(range(K)))
                    checked += 1
                    if not np.array_equal(cm, g["confusion"][T - 1, j]):
                        failures += 1
                        print(f"{rid} experience {j}: confusion matrix differs")
            # The summary row: scikit-learn on the concatenated final predictions of every experience.
            row = summary.get(rid)
            if row is not None:
                present = np.unique(np.concatenate([labels, pred]))
                want = {"balanced_acc": balanced_accuracy_score(labels, pred),
                        "macro_f1": f1_score(labels, pred, average="macro", labels=present, zero_division=0)}
                if scores is not None:
                    want["auroc"] = roc_auc_score(labels, scores) if len(np.unique(labels)) == 2 else float("nan")
                    want["auprc"] = average_precision_score(labels, scores) if (labels == 1).any() else float("nan")
                for name, value in want.items():
                    checked += 1
                    if not (np.isnan(row[name]) and np.isnan(value)) and abs(row[name] - value) > 1e-12:
                        failures += 1
                        print(f"{rid} {g.attrs['name']}: /summary {name} {row[name]!r}, scikit-learn on the concatenated predictions {value!r}")
            print(f"{g.attrs['name']}: primary metric {g.attrs['primary_metric']}, {T} experiences and the concatenation checked")
    print(f"{checked} values checked against scikit-learn, {failures} differ")
    if checked == 0:
        print("no run with stored predictions")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
