#!/usr/bin/env python3
"""What extending the tuned grids changes (docs/federated.md, "Grids extended at their edges"):
the tuned 1,000-round table's file, with the rows of the variants whose choice moved replaced by
the runs at the new choice (Experiments/federated_mnist_pfl_tuned_1000_extend.json, each moved
variant run with `continual run ... --variant V -o FILE`), then the orderings of
federated_orderings.py on that combined table, by the same strict rule.

    python3 Experiments/tools/federated_extended.py results/federated_mnist_pfl_tuned_1000.h5 \\
        results/ext_*.h5

Prints one row per moved variant (personal and global ACC, mean ± std over seeds 1-3, at the
grid's choice and at the extended one, with the Welch p of the change) and one ordering table
per Dirichlet alpha.
"""
import os
import sys

import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(__file__))
from continualkit.io import federation_runs                  # noqa: E402
from continualkit.tuning import load_tuning                  # noqa: E402
from continualkit.verdicts import order                      # noqa: E402
from federated_orderings import by_alpha, mean_std, ordering_table, p_text   # noqa: E402


def chosen(path):
    """{variant: its chosen values} of the file's /tuning, as `continualkit table` prints them."""
    tuned = load_tuning(path)
    return dict(zip(tuned["variant"], tuned["chosen"]))


def main(base, moved_files):
    runs, grid = federation_runs(base), chosen(base)
    moved, rows = [], []
    for path in moved_files:
        m, extended = federation_runs(path), chosen(path)
        for v in m["variant"].unique():
            old, new = runs[runs["variant"] == v], m[m["variant"] == v]
            row = [v, grid[v], extended[v]]
            for measure in ("personal_acc", "global_acc"):
                o = order((new[measure] * 100).tolist(), (old[measure] * 100).tolist())
                row += [mean_std(o["b"]), mean_std(o["a"]), p_text(o["p"])]
            rows.append(row)
            moved.append(new)
            runs = runs[runs["variant"] != v]
    print("| variant | grid's choice | extended choice | personal ACC % (grid) | personal ACC % (extended) | p "
          "| global ACC % (grid) | global ACC % (extended) | p |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in sorted(rows):
        print("| " + " | ".join(r) + " |")
    print()
    combined = by_alpha(pd.concat([runs] + moved, ignore_index=True))
    for a in sorted(combined["alpha"].unique()):
        print("\n".join(ordering_table(combined[combined["alpha"] == a], f"#### Dirichlet α = {a:g}, grids extended",
                                        skip_unrun=True)) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
