#!/usr/bin/env python3
"""Are two results files the same science? Every dataset and attribute of every run bit for bit,
except wall times and provenance (see compare_science.py, whose comparison this reuses).

    python3 Experiments/tools/same_results.py single.h5 np2.h5

Exit status 0 when nothing differs, 1 otherwise (each difference printed)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_science import compare_files  # noqa: E402

if len(sys.argv) != 3:
    sys.exit(__doc__)
diffs = compare_files(sys.argv[1], sys.argv[2])
for d in diffs:
    print(d)
print(f"{sys.argv[1]} vs {sys.argv[2]}: {'identical' if not diffs else f'{len(diffs)} differences'}")
sys.exit(1 if diffs else 0)
