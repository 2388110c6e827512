#!/usr/bin/env python3
"""Unit tests of the analysis helpers (no results file needed): grouping by configuration, so that
only seeds are pooled into error bars and heatmaps.

    python3 Experiments/analysis/test_analysis.py
"""
import os
import sys
import unittest

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import continualkit_analysis as ck  # noqa: E402
import plot_results  # noqa: E402


def synthetic():
    """ewc: 2 lr × 2 λ × 3 seeds; naive (no λ): 2 lr × 3 seeds. ACC differs by λ."""
    rows = []
    for lr in (0.01, 0.1):
        for seed in range(3):
            for lam in (1.0, 10.0):
                rows.append(dict(variant="ewc", lr=lr, lam=lam, seed=seed, acc=0.5 + lam / 100 + seed / 1000, status="completed"))
            rows.append(dict(variant="naive", lr=lr, lam=np.nan, seed=seed, acc=0.4, status="completed"))
    df = pd.DataFrame(rows)
    df.attrs["swept_columns"] = ["lam", "lr", "seed"]
    df.attrs["group_by"] = ["variant", "lam", "lr"]
    return df


class GroupingTests(unittest.TestCase):
    def test_lines_split_by_the_other_swept_columns(self):
        df = synthetic()
        lines = plot_results.line_groups(df, "lr", ck.group_columns(df))
        self.assertEqual(sorted(name for name, _ in lines), ["ewc_lam=1", "ewc_lam=10", "naive"])
        for name, rows in lines:
            per_x = rows.groupby("lr").size()
            self.assertEqual(list(per_x), [3, 3], name)  # only the 3 seeds pooled per point
            # Within one line and x, ACC varies only by seed (< 0.01), never by λ (0.09 apart).
            spread = rows.groupby("lr")["acc"].agg(lambda a: a.max() - a.min())
            self.assertTrue((spread < 0.01).all(), name)

    def test_config_groups_pool_only_seeds(self):
        df = synthetic()
        groups = ck.config_groups(df, ck.group_columns(df))
        self.assertEqual(len(groups), 6)  # ewc: 2 λ × 2 lr, naive: 2 lr
        self.assertTrue(all(len(rows) == 3 and rows.seed.nunique() == 3 for _, rows in groups))
        self.assertIn("ewc_lam=10_lr=0.1", [name for name, _ in groups])
        self.assertIn("naive_lr=0.01", [name for name, _ in groups])


if __name__ == "__main__":
    unittest.main()
