#!/usr/bin/env python3
"""Byte-flip campaign (issue 41): mutated results, scenario and checkpoint files through every
command that reads them; the parent `continual` process must never die of a signal or hang.

    python3 Experiments/tools/byteflip_campaign.py --bin .build-release/release/continual \
        --results 1000 --scenarios 300 --checkpoints 200 [--seed 1] [--timeout 120] [--jobs 2]

Each mutant is a copy of a small valid file (written first by the same binary) with 1–16 bytes
flipped at seeded random offsets (a byte XOR a non-zero value). Commands, each in its own process:
- results file: `inspect`, `inspect --verify`, `merge OUT F`, `repair F -o OUT`,
  `export F --run RUN --format onnx`, and `run EXP -o F --resume` (on a copy);
- scenario file (`continual scenario export`): `validate` and `run` of an experiment reading it;
- checkpoint: `run EXP --resume-from F` and `export --checkpoint F --format onnx`.
Reported per command: exit statuses, signals (a crash of the parent), hangs (no exit within
--timeout) and the largest resident set of the parent (its read-check child has its own limit,
`CONTINUALKIT_READ_MEMORY`). Exit status 1 when any run died of a signal or hung.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TINY = {"name": "flip", "seed": 3,
        "scenario": {"type": "habit_drift", "train_per_experience": 120, "test_per_experience": 40,
                     "phases": ["morning", "night", "morning"]},
        "model": {"hidden": [8]}, "optimizer": {"type": "sgd", "lr": 0.05},
        "training": {"epochs": 2, "batch_size": 16},
        "variants": [{"name": "naive", "strategy": ["naive"]}, {"name": "replay", "strategy": [{"type": "replay", "capacity": 40}]}]}


def run(cmd, cwd, timeout):
    """(exit status or 'signal N' or 'hang', max RSS of the process in MiB)."""
    start = time.time()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            rss = usage.ru_maxrss / 1024
            if os.WIFSIGNALED(status):
                return f"signal {os.WTERMSIG(status)}", rss
            return str(os.WEXITSTATUS(status)), rss
        if time.time() - start > timeout:
            p.kill()
            os.wait4(p.pid, 0)
            return "hang", 0.0
        time.sleep(0.01)


def mutate(src, dst, rng):
    data = bytearray(open(src, "rb").read())
    for _ in range(rng.choice([1, 2, 4, 8, 16])):
        i = rng.randrange(len(data))
        data[i] ^= rng.randrange(1, 256)
    open(dst, "wb").write(bytes(data))


def prepare(binary, work):
    """The valid files the mutants start from."""
    exp = os.path.join(work, "tiny.json")
    json.dump(TINY, open(exp, "w"))
    results = os.path.join(work, "base.h5")
    subprocess.run([binary, "run", exp, "-o", results, "--quiet"], cwd=work, check=True, capture_output=True)
    scenario = os.path.join(work, "scenario.h5")
    subprocess.run([binary, "scenario", "export", "habit_drift", "-o", scenario], cwd=work, check=True, capture_output=True)
    checkpoint = os.path.join(work, "base.ckpt")
    subprocess.run([binary, "run", exp, "--variant", "naive", "--stop-after", "1", "--checkpoint", checkpoint],
                   cwd=work, check=True, capture_output=True)
    return exp, results, scenario, checkpoint


def jobs_for(kind, k, binary, work, exp):
    """(label, command) pairs for mutant k of `kind`; files go under work/k."""
    d = os.path.join(work, f"{kind}{k}")
    f = os.path.join(d, "mutant")
    out = os.path.join(d, "out")
    if kind == "results":
        resumed = os.path.join(d, "resume.h5")
        return [("inspect", [binary, "inspect", f]), ("inspect --verify", [binary, "inspect", f, "--verify"]),
                ("merge", [binary, "merge", out + "_m.h5", f]), ("repair", [binary, "repair", f, "-o", out + "_r.h5"]),
                ("export", [binary, "export", f, "--run", "naive", "--format", "onnx", "-o", out + ".onnx"]),
                ("run --resume", [binary, "run", exp, "-o", resumed, "--resume", "--quiet"])]
    if kind == "scenario":
        e = os.path.join(d, "e.json")
        return [("validate (scenario)", [binary, "validate", e]), ("run (scenario)", [binary, "run", e, "-o", out + ".h5", "--quiet"])]
    return [("run --resume-from", [binary, "run", exp, "--variant", "naive", "--resume-from", f, "-o", out + ".h5", "--quiet"]),
            ("export --checkpoint", [binary, "export", "--checkpoint", f, "--format", "onnx", "-o", out + ".onnx"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, ".build-release", "release", "continual"))
    ap.add_argument("--results", type=int, default=1000)
    ap.add_argument("--scenarios", type=int, default=300)
    ap.add_argument("--checkpoints", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="directory to copy every mutant that crashed or hung into")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    work = tempfile.mkdtemp(prefix="byteflip-")
    exp, results, scenario, checkpoint = prepare(binary, work)
    rng = random.Random(args.seed)
    tasks = []
    for kind, n, src in (("results", args.results, results), ("scenario", args.scenarios, scenario),
                         ("checkpoint", args.checkpoints, checkpoint)):
        for k in range(n):
            d = os.path.join(work, f"{kind}{k}")
            os.makedirs(d)
            mutate(src, os.path.join(d, "mutant"), rng)
            if kind == "results":
                shutil.copy(os.path.join(d, "mutant"), os.path.join(d, "resume.h5"))
            if kind == "scenario":
                e = dict(TINY, scenario={"type": "dataset", "path": os.path.join(d, "mutant")})
                json.dump(e, open(os.path.join(d, "e.json"), "w"))
            tasks += [(kind, k, label, cmd) for label, cmd in jobs_for(kind, k, binary, work, exp)]
    outcomes = collections.defaultdict(collections.Counter)
    worst_rss = collections.defaultdict(float)
    bad = []
    start = time.time()
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run, cmd, os.path.join(work, f"{kind}{k}"), args.timeout): (kind, k, label)
                   for kind, k, label, cmd in tasks}
        for fut in cf.as_completed(futures):
            kind, k, label = futures[fut]
            status, rss = fut.result()
            outcomes[label][status] += 1
            worst_rss[label] = max(worst_rss[label], rss)
            if status.startswith("signal") or status == "hang":
                bad.append((kind, k, label, status))
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.copy(os.path.join(work, f"{kind}{k}", "mutant"), os.path.join(args.keep, f"{kind}{k}-{label.split()[0]}"))
    print(f"{args.results} results, {args.scenarios} scenario, {args.checkpoints} checkpoint mutants; "
          f"{len(tasks)} commands in {time.time() - start:.0f} s ({binary})")
    for label in sorted(outcomes):
        counts = ", ".join(f"{s}: {n}" for s, n in sorted(outcomes[label].items()))
        print(f"  {label:22s} {counts}; max RSS {worst_rss[label]:.0f} MiB")
    for b in bad[:20]:
        print("  CRASH/HANG:", *b)
    print(f"signals or hangs in the parent: {len(bad)}")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
