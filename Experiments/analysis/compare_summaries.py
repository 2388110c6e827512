#!/usr/bin/env python3
"""Compare the /summary tables of two results files, ignoring wall-time columns.

    python compare_summaries.py reference.h5 merged.h5
Exit code 0 when they hold the same runs with the same values (NaN equals NaN), 1 otherwise.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import continualkit_analysis as ck  # noqa: E402


def main(a_path, b_path):
    a, b = ck.load_summary(a_path), ck.load_summary(b_path)
    problems = []
    if list(a.columns) != list(b.columns):
        problems.append(f"columns differ: {list(a.columns)} vs {list(b.columns)}")
    cols = [c for c in a.columns if c not in ck.TIMING_COLUMNS and c in b.columns]
    a = a[cols].sort_values("run_id").reset_index(drop=True)
    b = b[cols].sort_values("run_id").reset_index(drop=True)
    if len(a) != len(b) or list(a.run_id) != list(b.run_id):
        problems.append(f"run ids differ: {len(a)} vs {len(b)} rows, {sorted(set(a.run_id) ^ set(b.run_id))[:5]}")
    else:
        for c in cols:
            x, y = a[c].to_numpy(), b[c].to_numpy()
            if x.dtype.kind == "f":
                same = (x == y) | (np.isnan(x) & np.isnan(y))
            else:
                same = x == y
            for i in np.flatnonzero(~same)[:5]:
                problems.append(f"{a.run_id[i]}: {c} = {x[i]!r} vs {y[i]!r}")
    for p in problems:
        print("DIFF:", p)
    print(f"{a_path} vs {b_path}: {len(a)} runs, {len(cols)} columns compared (timing excluded): "
          + ("identical" if not problems else f"{len(problems)} difference(s)"))
    return 0 if not problems else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
