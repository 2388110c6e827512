#!/usr/bin/env python3
"""Mean ± std of ACC and BWT per method from a results file whose variants are named METHOD_sSEED,
and each method's BWT gain over `naive` paired by seed (same seed = same data and initialisation).

Usage: python3 Experiments/analysis/regularisation_summary.py results/regularisation.h5
ACC and BWT are read from /summary (fractions, printed in percent / points); std is the sample
standard deviation (ddof=1) over seeds.
"""
import re
import sys
from collections import OrderedDict

import h5py
import numpy as np


def main(path):
    with h5py.File(path, "r") as f:
        table = f["summary"][()]
    names = [n.decode() if isinstance(n, bytes) else n for n in table["name"]]
    groups = OrderedDict()
    for i, name in enumerate(names):
        method = re.sub(r"_s\d+$", "", name)
        groups.setdefault(method, []).append(i)
    status = [s.decode() if isinstance(s, bytes) else s for s in table["status"]]
    print(f"{'method':28s} {'n':>2s}  {'ACC % (mean ± std)':>20s}  {'BWT pts (mean ± std)':>22s}  {'forgetting pts':>16s}")
    for method, rows in groups.items():
        ok = [r for r in rows if status[r] == "completed"]
        acc = 100 * np.array([table["acc"][r] for r in ok])
        bwt = 100 * np.array([table["bwt"][r] for r in ok])
        fg = 100 * np.array([table["forgetting"][r] for r in ok])
        sd = lambda a: a.std(ddof=1) if len(a) > 1 else float("nan")
        print(f"{method:28s} {len(ok):2d}  {acc.mean():8.2f} ± {sd(acc):5.2f}      {bwt.mean():8.2f} ± {sd(bwt):5.2f}      "
              f"{fg.mean():6.2f} ± {sd(fg):5.2f}" + ("" if len(ok) == len(rows) else f"  ({len(rows) - len(ok)} not completed)"))


    seeds = {}
    for i, name in enumerate(names):
        m = re.match(r"(.*)_s(\d+)$", name)
        if m and status[i] == "completed":
            seeds.setdefault(m.group(1), {})[int(m.group(2))] = 100 * table["bwt"][i]
    if "naive" in seeds:
        print()
        print(f"{'method':28s} paired BWT gain over naive (mean ± std)   seeds with higher BWT")
        for method, by_seed in seeds.items():
            if method == "naive":
                continue
            common = sorted(set(by_seed) & set(seeds["naive"]))
            gain = np.array([by_seed[k] - seeds["naive"][k] for k in common])
            if len(gain) == 0:
                continue
            sd = gain.std(ddof=1) if len(gain) > 1 else float("nan")
            print(f"{method:28s} {gain.mean():+8.2f} ± {sd:5.2f}                       {(gain > 0).sum()}/{len(gain)}")


if __name__ == "__main__":
    main(sys.argv[1])
