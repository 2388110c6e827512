#!/usr/bin/env python3
"""One model's training step, two `continual` binaries alternated, beside the machine's sgemm peak.

    python3 Experiments/tools/step_ab.py --base /path/old/continual --new .build/release/continual \\
        --repeats 3 -- --hidden 16,8 --inputs 10 --classes 2 --batch 32 --steps 100000

Each repetition prints the load average, measures numpy/OpenBLAS sgemm (1024³, one thread,
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset for that child only), then runs
`BASE bench ARGS` and `NEW bench ARGS --peak` (the new binary also measures the toolkit's own
sgemm and FMA peaks in the same run). It ends with the medians: CPU µs per step and GFLOP/s per
core of both, and the new step's share of each peak. A base binary from before issue 45 has no
`--peak` and counts one thread's CPU time only (the same for --threads 1).
Exit status 0; 2 on bad usage or when a binary fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from blas_env import without_overrides   # noqa: E402

NUMPY = """
import time, numpy as np
n = 1024
a = np.random.rand(n, n).astype(np.float32); b = np.random.rand(n, n).astype(np.float32)
best = min((lambda t: (a @ b, time.process_time() - t)[1])(time.process_time()) for _ in range(8))
print(2 * n ** 3 / best / 1e9)
"""


def numpy_peak():
    env = dict(without_overrides(), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", NUMPY], capture_output=True, text=True, env=env)
    return float(out.stdout) if out.returncode == 0 else float("nan")


def bench(binary, args):
    out = subprocess.run([binary, "bench"] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} bench failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("args", nargs="*", help="bench arguments after --")
    a = p.parse_args()
    rows = []
    for i in range(a.repeats):
        load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"] * 3
        blas = numpy_peak()
        base, new = bench(a.base, a.args), bench(a.new, a.args + ["--peak"])
        rows.append((blas, base, new))
        print(f"load {' '.join(load)}: numpy sgemm {blas:.1f}; base {base['cpu_seconds_per_step'] * 1e6:.3f} µs "
              f"{base['gflops']:.1f} GFLOP/s; new {new['cpu_seconds_per_step'] * 1e6:.3f} µs {new['gflops']:.1f} "
              f"GFLOP/s (toolkit sgemm {new['sgemm_peak_gflops']:.1f}, FMA {new['fma_peak_gflops']:.1f})", flush=True)
    med = lambda f: statistics.median(f(r) for r in rows)
    print(f"machine: {rows[0][2]['cpu_model']}, family {rows[0][2]['cpu_family']}, {' '.join(rows[0][2]['cpu_flags'])}")
    print(f"median of {a.repeats}: base {med(lambda r: r[1]['cpu_seconds_per_step']) * 1e6:.3f} µs "
          f"({med(lambda r: r[1]['gflops']):.1f} GFLOP/s), new {med(lambda r: r[2]['cpu_seconds_per_step']) * 1e6:.3f} µs "
          f"({med(lambda r: r[2]['gflops']):.1f} GFLOP/s, {med(lambda r: r[2]['gflops'] / r[0]) * 100:.0f} % of numpy's "
          f"sgemm, {med(lambda r: r[2]['share_of_sgemm_peak']) * 100:.0f} % of the toolkit's, "
          f"{med(lambda r: r[2]['share_of_fma_peak']) * 100:.0f} % of the FMA peak)")


if __name__ == "__main__":
    main()
