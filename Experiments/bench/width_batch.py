#!/usr/bin/env python3
"""Width × batch: ContinualKit's training step vs a plain PyTorch loop, one thread each (issue 25).

MLP 10-W-W with a binary output (ReLU; one logit, binary cross-entropy), SGD, one fixed batch,
W in --widths, batch in --batches. Every cell runs ContinualKit (`continual bench --hidden W,W`,
a fresh process) and PyTorch (in this process, torch.set_num_threads(1)) one after the other, and
the whole grid is repeated --repeats times in a shuffled order, so a busy spell of the shared
machine hits both sides alike; each side keeps its best (lowest) time per cell. Times are CPU
seconds of the computing thread (time.thread_time / CLOCK_THREAD_CPUTIME_ID), which leave out
time spent waiting for a core on a loaded machine; wall times are printed too.

GFLOP/s count the dense products of a step (forward, weight gradient, input gradient except
the first layer's; 2 per multiply-add), the same count for both sides. The practical per-core
limit is FP32 sgemm through numpy (OpenBLAS) on one thread, measured at the start and end of the
run (best of both) in a child process with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, which
threadpoolctl confirms picks the CPU's own kernel.

    python3 Experiments/bench/width_batch.py [--continual .build/release/continual] [--json out.json]

The PyTorch model has one output logit with BCEWithLogitsLoss, as ContinualKit's binary head
(`classes: 2`) has, so both compute the same products. PyTorch is a benchmark dependency only
(`pip install torch`), never CI's.
"""
import argparse, json, os, random, subprocess, sys, time

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
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OPENBLAS_NUM_THREADS"] = "1"
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
    best_cpu = best_wall = float("inf")
    for rep in range(repetitions + 1):
        n = max(steps // 10, 1) if rep == 0 else steps
        c, w = time.thread_time(), time.perf_counter()
        for _ in range(n):
            opt.zero_grad(set_to_none=False)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        if rep > 0:
            best_cpu = min(best_cpu, (time.thread_time() - c) / n)
            best_wall = min(best_wall, (time.perf_counter() - w) / n)
    return best_cpu, best_wall


def steps_for(width, batch, budget, rate=20e9):
    """Steps so one repetition takes about `budget` seconds at `rate` FLOP/s (at least 20)."""
    return max(20, min(200_000, int(budget * rate / dense_flops([10, width, width, 1], batch))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--continual", default=".build/release/continual")
    ap.add_argument("--widths", default="16,64,256,1024")
    ap.add_argument("--batches", default="32,128,512")
    ap.add_argument("--inputs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.15, help="seconds per timed repetition (about)")
    ap.add_argument("--json", default=None, help="also write every measurement here")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    widths = [int(w) for w in args.widths.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    cells = [(w, b) for w in widths for b in batches]
    peaks = [sgemm_peak()]
    best = {c: {"ck": (float("inf"),) * 2, "torch": (float("inf"),) * 2} for c in cells}
    path = version = None
    rng = random.Random(25)
    for rep in range(args.repeats):
        order = cells[:]
        rng.shuffle(order)
        for (w, b) in order:
            steps = steps_for(w, b, args.budget)
            cpu, wall, path, version = continualkit(args.continual, args.inputs, w, b, steps)
            best[(w, b)]["ck"] = min(best[(w, b)]["ck"], (cpu, wall))
            best[(w, b)]["torch"] = min(best[(w, b)]["torch"], pytorch(torch, args.inputs, w, b, steps))
            print(f"  W={w} batch={b}: CK {best[(w, b)]['ck'][0] * 1e6:.1f} µs, torch {best[(w, b)]['torch'][0] * 1e6:.1f} µs",
                  file=sys.stderr, flush=True)
        print(f"repeat {rep + 1}/{args.repeats} done", file=sys.stderr)
    peaks.append(sgemm_peak())
    peak = max(max(p["gflops"].values()) for p in peaks)
    print(f"ContinualKit kernels: {path} (numerics version {version}); torch {torch.__version__}, 1 thread each")
    print(f"sgemm peak (numpy/OpenBLAS, 1 thread, {peaks[0]['blas']}): {peak:.1f} GFLOP/s")
    print("best of %d interleaved repeats, CPU time per training step (MLP %d-W-W-1, SGD)" % (args.repeats, args.inputs))
    print(f"{'W':>5} {'batch':>5} {'CK µs':>9} {'torch µs':>9} {'torch/CK':>8} {'CK GF/s':>8} {'torch GF/s':>10} {'CK %pk':>6}")
    rows = []
    for (w, b) in cells:
        f = dense_flops([args.inputs, w, w, 1], b)
        ck, tc = best[(w, b)]["ck"], best[(w, b)]["torch"]
        rows.append(dict(width=w, batch=b, flops=f, ck_cpu=ck[0], ck_wall=ck[1], torch_cpu=tc[0], torch_wall=tc[1]))
        print(f"{w:>5} {b:>5} {ck[0] * 1e6:>9.1f} {tc[0] * 1e6:>9.1f} {tc[0] / ck[0]:>8.2f} "
              f"{f / ck[0] / 1e9:>8.1f} {f / tc[0] / 1e9:>10.1f} {100 * f / ck[0] / 1e9 / peak:>5.0f}%")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(kernel_path=path, numerics_version=version, torch=torch.__version__,
                           sgemm_peak_gflops=peak, sgemm=peaks, cells=rows), out, indent=1)


if __name__ == "__main__":
    main()
