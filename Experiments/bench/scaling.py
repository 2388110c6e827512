#!/usr/bin/env python3
"""Threads and jobs on this machine (issue 45.4): what a second core buys, with the bits checked.

- **Threads**: one wide training step (`continual bench --hidden 1024,1024 --batch 512`) with
  `--threads 1` and `--threads 2`, alternated --repeats times; the median wall time per step of
  each, their ratio, and the process CPU time (≈ 2 × wall when both threads computed at once).
- **Jobs**: a sweep of four equal runs (the quickstart's stream, MLP 10-256-256-1, seeds 1–4),
  `continual sweep --jobs 1` against `--jobs 2`, alternated; the median wall time of each, their
  ratio, and whether the two files hold the same results bit for bit (`compare_science.py`'s
  comparison, which leaves out timings; the run digests cover timings too, so they differ).

The figures mean something only on a quiet machine: the script prints the load average before and
after, and the CPU model, flags and core count.

    python3 Experiments/bench/scaling.py [--continual .build-release/release/continual] [--repeats 3] [--epochs 10]
"""
import argparse, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SWEEP = {
    "name": "scaling_jobs", "seed": 1,
    "scenario": {"type": "habit_drift", "train_per_experience": 2000, "test_per_experience": 500,
                 "phases": ["morning", "night", "reminder_fatigue", "weekend_only", "morning"]},
    "model": {"hidden": [256, 256], "activation": "relu"},
    "optimizer": {"type": "sgd", "lr": 0.01},
    "training": {"epochs": 10, "batch_size": 128},
    "variants": [{"name": "naive", "strategy": ["naive"]}],
    "sweep": {"parameters": {"seed": [1, 2, 3, 4]}},
}


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def bench(binary, threads):
    out = subprocess.run([binary, "bench", "--hidden", "1024,1024", "--batch", "512", "--steps", "20",
                          "--threads", str(threads)], capture_output=True, text=True, check=True).stdout
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def sweep(binary, exp, out, jobs):
    for f in (out, out + ".lock"):
        if os.path.exists(f):
            os.remove(f)
    t = time.perf_counter()
    subprocess.run([binary, "sweep", exp, "-o", out, "--jobs", str(jobs), "--threads", "1"],
                   capture_output=True, text=True, check=True)
    return time.perf_counter() - t


def differences(a, b):
    sys.path.insert(0, os.path.join(ROOT, "Experiments", "tools"))
    import compare_science
    return compare_science.compare_files(a, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--continual", default=os.path.join(ROOT, ".build-release/release/continual"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10,
                    help="epochs per experience of each sweep run (10: ≈ 0.3 s a run on a Zen 5 core, where the "
                         "sweep's serial start and writing weigh; more measures the steady state)")
    args = ap.parse_args()
    if args.epochs < 1 or args.repeats < 1:
        ap.error("--epochs and --repeats must be at least 1")
    load0 = os.getloadavg()
    threads = {1: [], 2: []}
    for rep in range(args.repeats):
        for t in ((1, 2) if rep % 2 == 0 else (2, 1)):
            threads[t].append(bench(args.continual, t))
    work = tempfile.mkdtemp(prefix="scaling_")
    exp = os.path.join(work, "sweep.json")
    with open(exp, "w") as f:
        json.dump(dict(SWEEP, training=dict(SWEEP["training"], epochs=args.epochs)), f)
    jobs = {1: [], 2: []}
    for rep in range(args.repeats):
        for j in ((1, 2) if rep % 2 == 0 else (2, 1)):
            jobs[j].append(sweep(args.continual, exp, os.path.join(work, f"jobs{j}.h5"), j))
    diffs = differences(os.path.join(work, "jobs1.h5"), os.path.join(work, "jobs2.h5"))
    m = threads[1][0]
    print(f"CPU: {m['cpu_model']}, family {m['cpu_family']}, {m['processors']} processors, kernel path {m['kernel_path']}; "
          f"flags {' '.join(f for f in m['cpu_flags'] if f.startswith('avx'))}")
    print(f"load average before {load0[0]:.2f} / {load0[1]:.2f}, after {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} (1 / 5 min)")
    w = {t: median([r["wall_seconds_per_step"] for r in threads[t]]) for t in threads}
    c = {t: median([r["cpu_seconds_per_step"] for r in threads[t]]) for t in threads}
    used = sorted({r["threads_used"] for r in threads[2]})
    print(f"threads, W = 1024, batch 512, median of {args.repeats}: 1 thread {w[1] * 1e3:.1f} ms wall "
          f"({c[1] * 1e3:.1f} CPU-ms), 2 threads {w[2] * 1e3:.1f} ms wall ({c[2] * 1e3:.1f} CPU-ms, "
          f"threads_used {used}): {w[1] / w[2]:.2f}x")
    j1, j2 = median(jobs[1]), median(jobs[2])
    print(f"jobs, sweep of 4 equal runs ({args.epochs} epochs per experience), median of {args.repeats}: "
          f"--jobs 1 {j1:.2f} s, --jobs 2 {j2:.2f} s: "
          f"{j1 / j2:.2f}x; results bit-identical: {not diffs}" + "".join(f"\n  {d}" for d in diffs[:10]))


if __name__ == "__main__":
    main()
