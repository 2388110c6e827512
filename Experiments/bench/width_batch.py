#!/usr/bin/env python3
"""Width × batch: ContinualKit's training step vs PyTorch and vs numpy/OpenBLAS, one thread each
(issues 25, 45).

MLP 10-W-W with a binary output (ReLU; one logit, binary cross-entropy), SGD, one fixed batch,
W in --widths, batch in --batches. Every cell runs ContinualKit (`continual bench --hidden W,W`,
a fresh process), PyTorch (in this process, torch.set_num_threads(1)) and a plain numpy step
(the same products as numpy calls: `x @ w`, bias and ReLU as array operations, the loss's
gradient, the transposed products, SGD; numpy's BLAS limited to one thread by threadpoolctl),
in a rotating order, and the whole grid is repeated --repeats times in a shuffled order, so a busy
spell of the shared machine hits every side alike; each side's figure per cell is the **median**
over the repeats (the best is in --json). Times are CPU seconds of the computing thread
(time.thread_time / CLOCK_THREAD_CPUTIME_ID), which leave out time spent waiting for a core on a
loaded machine; wall times are in --json.

GFLOP/s count the dense products of a step (forward, weight gradient, input gradient except
the first layer's; 2 per multiply-add), the same count for every side. The practical per-core
limit is FP32 sgemm through numpy (OpenBLAS) on one thread, measured at the start and end of the
run (best of both) in a child process; the script runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
unset (blas_env.py), so the peak and the numpy step both use the kernel OpenBLAS picks for the CPU,
which threadpoolctl confirms. The header prints each side's kernel ISA:
ContinualKit's kernel path, OpenBLAS's core type, torch's CPU capability, and the CPU's flags.

    python3 Experiments/bench/width_batch.py [--continual .build-release/release/continual] [--json out.json]

The PyTorch model has one output logit with BCEWithLogitsLoss, as ContinualKit's binary head
(`classes: 2`) has, so every side computes the same products. PyTorch is a benchmark dependency
only (`pip install torch`), never CI's.
"""
import argparse, json, os, random, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas_env import reexec_without_overrides, without_overrides   # noqa: E402

PEAK_CODE = r"""
import json, time, numpy as np
from threadpoolctl import threadpool_limits, threadpool_info
with threadpool_limits(1):
    info = [dict(api=i.get("internal_api"), arch=i.get("architecture"), threads=i.get("num_threads"))
            for i in threadpool_info() if i.get("user_api") == "blas"]
    best = {}
    for n in (512, 1024, 2048):
        a = np.random.rand(n, n).astype(np.float32); b = np.random.rand(n, n).astype(np.float32)
        a @ b
        t = min((lambda: (lambda s: (a @ b, time.thread_time() - s)[1])(time.thread_time()))() for _ in range(5))
        best[n] = 2 * n ** 3 / t / 1e9
print(json.dumps(dict(blas=info, gflops=best)))
"""


def sgemm_peak():
    env = dict(without_overrides(), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", PEAK_CODE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def dense_flops(widths, batch):
    total = 0
    for l in range(len(widths) - 1):
        total += (2 if l == 0 else 3) * 2 * batch * widths[l] * widths[l + 1]
    return total


def continualkit(binary, inputs, width, batch, steps):
    out = subprocess.run([binary, "bench", "--hidden", f"{width},{width}", "--inputs", str(inputs),
                          "--classes", "2", "--batch", str(batch), "--steps", str(steps)],
                         capture_output=True, text=True, check=True)
    line = [l for l in out.stdout.splitlines() if l.startswith("{")][-1]
    r = json.loads(line)
    return r["cpu_seconds_per_step"], r["wall_seconds_per_step"], r["kernel_path"], r["numerics_version"]


def pytorch(torch, inputs, width, batch, steps, repetitions=5):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(inputs, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    x = torch.randn(batch, inputs)
    y = (torch.rand(batch, 1) < 0.5).float()

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        opt.step()

    return timed_steps(step, steps, repetitions)


def timed_steps(step, steps, repetitions):
    """(best CPU seconds of this thread, best wall seconds) per call of `step` over `repetitions`
    timed runs of `steps` calls, after an untimed warm-up of a tenth as many."""
    best_cpu = best_wall = float("inf")
    for rep in range(repetitions + 1):
        n = max(steps // 10, 1) if rep == 0 else steps
        c, w = time.thread_time(), time.perf_counter()
        for _ in range(n):
            step()
        if rep > 0:
            best_cpu = min(best_cpu, (time.thread_time() - c) / n)
            best_wall = min(best_wall, (time.perf_counter() - w) / n)
    return best_cpu, best_wall


def numpy_side(inputs, width, batch, steps, repetitions=5):
    """A plain numpy training step of the same MLP (float32), timed like `pytorch`."""
    import numpy as np
    from threadpoolctl import threadpool_limits
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from numpy_mlp import NumpyMLP
    mlp = NumpyMLP([inputs, width, width, 1], seed=0, lr=0.01)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, inputs)).astype(np.float32)
    y = (rng.random((batch, 1)) < 0.5).astype(np.float32)

    with threadpool_limits(1):
        return timed_steps(lambda: mlp.step(x, y), steps, repetitions)


def steps_for(width, batch, budget, rate=20e9):
    """Steps so one repetition takes about `budget` seconds at `rate` FLOP/s (at least 20)."""
    return max(20, min(200_000, int(budget * rate / dense_flops([10, width, width, 1], batch))))


def cpu_flags():
    try:
        flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split(":")[1].split()
        model = next(l for l in open("/proc/cpuinfo") if l.startswith("model name")).split(":")[1].strip()
        family = next(l for l in open("/proc/cpuinfo") if l.startswith("cpu family")).split(":")[1].strip()
    except (OSError, StopIteration):
        return "unknown CPU"
    keep = [f for f in flags if f in ("avx", "avx2", "fma") or f.startswith("avx512")]
    return f"{model}, family {family}, {' '.join(keep)}"


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


SIDES = ("ck", "torch", "numpy")


def measure(args, torch, cells):
    runs = {c: {s: [] for s in SIDES} for c in cells}
    path = version = None
    rng = random.Random(25)
    for rep in range(args.repeats):
        order = cells[:]
        rng.shuffle(order)
        for k, (w, b) in enumerate(order):
            steps = steps_for(w, b, args.budget)
            for side in SIDES[k % 3:] + SIDES[:k % 3]:  # rotate which side goes first
                if side == "ck":
                    cpu, wall, path, version = continualkit(args.continual, args.inputs, w, b, steps)
                    runs[(w, b)]["ck"].append((cpu, wall))
                elif side == "torch":
                    runs[(w, b)]["torch"].append(pytorch(torch, args.inputs, w, b, steps))
                else:
                    runs[(w, b)]["numpy"].append(numpy_side(args.inputs, w, b, steps))
            r = runs[(w, b)]
            print(f"  W={w} batch={b}: CK {r['ck'][-1][0] * 1e6:.1f} µs, torch {r['torch'][-1][0] * 1e6:.1f} µs, "
                  f"numpy {r['numpy'][-1][0] * 1e6:.1f} µs", file=sys.stderr, flush=True)
        print(f"repeat {rep + 1}/{args.repeats} done", file=sys.stderr)
    return runs, path, version


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--continual", default=".build-release/release/continual")
    ap.add_argument("--widths", default="16,64,256,1024")
    ap.add_argument("--batches", default="32,128,512")
    ap.add_argument("--inputs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.15, help="seconds per timed repetition (about)")
    ap.add_argument("--json", default=None, help="also write every measurement here")
    args = ap.parse_args()
    reexec_without_overrides()   # the numpy side runs in this process: its own kernel, not an override's
    import torch
    torch.set_num_threads(1)
    widths = [int(w) for w in args.widths.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    cells = [(w, b) for w in widths for b in batches]
    peaks = [sgemm_peak()]
    runs, path, version = measure(args, torch, cells)
    peaks.append(sgemm_peak())
    peak = max(max(p["gflops"].values()) for p in peaks)
    blas = ", ".join(f"{i['api']} {i['arch']}" for i in peaks[0]["blas"])
    print(f"CPU: {cpu_flags()}")
    print(f"ContinualKit kernels: {path} (numerics version {version}); torch {torch.__version__} "
          f"(CPU capability {torch.backends.cpu.get_cpu_capability()}); numpy {__import__('numpy').__version__} "
          f"({blas}); 1 thread each")
    print(f"sgemm peak (numpy/OpenBLAS, 1 thread): {peak:.1f} GFLOP/s")
    print("median of %d alternated repeats, CPU time per training step (MLP %d-W-W-1, SGD)" % (args.repeats, args.inputs))
    print(f"{'W':>5} {'batch':>5} {'CK µs':>9} {'torch µs':>9} {'numpy µs':>9} {'torch/CK':>8} {'numpy/CK':>8} "
          f"{'CK GF/s':>8} {'CK %pk':>6}")
    rows = []
    for (w, b) in cells:
        f = dense_flops([args.inputs, w, w, 1], b)
        r = runs[(w, b)]
        ck, tc, npy = (median([c for c, _ in r[s]]) for s in SIDES)
        rows.append(dict(width=w, batch=b, flops=f, ck_cpu=ck, torch_cpu=tc, numpy_cpu=npy,
                         runs={s: r[s] for s in SIDES}))
        print(f"{w:>5} {b:>5} {ck * 1e6:>9.1f} {tc * 1e6:>9.1f} {npy * 1e6:>9.1f} {tc / ck:>8.2f} {npy / ck:>8.2f} "
              f"{f / ck / 1e9:>8.1f} {100 * f / ck / 1e9 / peak:>5.0f}%")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(kernel_path=path, numerics_version=version, torch=torch.__version__,
                           cpu=cpu_flags(), sgemm_peak_gflops=peak, sgemm=peaks, cells=rows), out, indent=1)


if __name__ == "__main__":
    main()
