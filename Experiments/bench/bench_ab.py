#!/usr/bin/env python3
"""Two `continual` binaries side by side: `continual bench` run alternately, median of N each.

On a shared machine the load changes from minute to minute, so a "before" measured at one time
and an "after" at another compare the load, not the code. This script runs

    BASE bench --steps S --experiment E      NEW bench --steps S --experiment E

alternately (base, new, base, new, ...) for each experiment E given, `--repeats` times each,
and prints the median of every figure `bench` prints: the micro-benchmarks (M samples/s),
the prediction latency (ns) and, per run of E, the "M samples/s through the Trainer"
(training only: shuffling, batching, plugins, steps; evaluation and HDF5 excluded).

    python3 Experiments/bench/bench_ab.py --base /path/old/continual --new .build/release/continual \\
        --repeats 3 Experiments/quickstart.json Experiments/population_habit.json

Exit status 0; 2 on bad usage or when a binary fails.
"""
import argparse
import re
import statistics
import subprocess
import sys

MICRO = re.compile(r"^(training throughput .*?|prediction latency, one sample)\s{2,}([\d.]+) (M samples/s|ns)")
LOOP = re.compile(r"^  (\S+)\s+train ([\d.]+) s \(([\d.]+) M samples/s through the Trainer\)")


def run(binary, steps, experiment):
    out = subprocess.run([binary, "bench", "--steps", str(steps), "--experiment", experiment],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} bench failed ({out.returncode}):\n{out.stderr}")
    figures = {}
    for line in out.stdout.splitlines():
        m = MICRO.match(line)
        if m:
            name = m.group(1).strip().replace("training throughput ", "step ").replace(", batch ", ", b")
            figures[(name.replace("prediction latency, one sample", "prediction latency"), m.group(3))] = float(m.group(2))
            continue
        m = LOOP.match(line)
        if m:
            short = experiment.rsplit("/", 1)[-1].removesuffix(".json")
            figures[(f"loop {short}: {m.group(1)}", "M samples/s")] = float(m.group(3))
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="continual binary before the change")
    ap.add_argument("--new", required=True, help="continual binary of the change")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200_000, help="bench --steps")
    ap.add_argument("experiments", nargs="*", default=["Experiments/quickstart.json"])
    a = ap.parse_args()
    if a.repeats < 1 or a.steps < 1:
        ap.error("--repeats and --steps must be >= 1")
    samples = {"base": {}, "new": {}}
    for experiment in a.experiments:
        for _ in range(a.repeats):
            for side, binary in (("base", a.base), ("new", a.new)):
                for key, value in run(binary, a.steps, experiment).items():
                    samples[side].setdefault(key, []).append(value)
    keys = [k for k in samples["new"] if k in samples["base"]]
    print(f"median of {a.repeats} alternating runs each; speed = new ÷ base (> 1: faster)")
    print(f"{'figure (M samples/s; latency ns)':<52} {'base':>8} {'new':>8} {'speed':>8}")
    for key in keys:
        b = statistics.median(samples["base"][key])
        n = statistics.median(samples["new"][key])
        name, unit = key
        ratio = n / b if unit != "ns" else b / n  # > 1: the new binary is faster
        print(f"{name[:52]:<52} {b:8.2f} {n:8.2f} {ratio:7.2f}x")


if __name__ == "__main__":
    main()
