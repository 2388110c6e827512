#!/usr/bin/env python3
"""A whole run, ContinualKit against the same run written in numpy, one thread each (issue 45).

The run: the quickstart's habit-drift stream (5 experiences × 2,000 training and 500 test days,
10 features, a binary head), an MLP 10-W-W-1 (ReLU, one logit, binary cross-entropy), plain SGD
(lr 0.01), E epochs of shuffled mini-batches per experience, then every experience's test set
evaluated (the accuracy matrix) — naive fine-tuning. Both sides also evaluate every test set on the
untrained model and on a second, independently initialised one, the baselines of the results
file's fwt_init and fwt (GEM's b): 17,500 rows each. (Until 2026-11-28 the numpy side skipped
those two, 12,500 rows against the toolkit's 17,500.) ContinualKit runs it as `continual run` on an
experiment file this script writes (`--threads 1`); numpy runs it in a child process that reads
the same stream (`continual scenario export --experiment`, then `continualkit.baselines.
scenario_file`) and does the same steps with numpy calls (`x @ w`, bias and ReLU as array
operations, the loss's gradient, the transposed products, SGD), its BLAS limited to one thread.
ContinualKit is timed as a whole process (wall clock, and the child's user + system CPU time):
start, data generation, training, evaluation and writing its HDF5 results; numpy from after its
imports (numpy, h5py: a Python start-up of about 0.4 CPU-seconds not charged to it) through
reading the stream, training and evaluation, by its own clocks. On a shared machine the CPU
times are the figure to quote; wall times include waiting for a core. The sides run
alternately, --repeats times each, and the table shows the median, then each side's lowest and
highest CPU time; both sides' final average accuracy is printed so a reader can see that they
trained the same model.

    python3 Experiments/bench/full_run.py [--continual .build-release/release/continual]
        [--width 1024] [--batches 128,512] [--epochs 5] [--repeats 3] [--json out.json]
"""
import argparse, json, os, resource, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas_env import reexec_without_overrides   # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def experiment(width, batch, epochs):
    return {
        "name": f"full_run_w{width}_b{batch}",
        "seed": 1,
        "scenario": {"type": "habit_drift", "train_per_experience": 2000, "test_per_experience": 500,
                     "phases": ["morning", "night", "reminder_fatigue", "weekend_only", "morning"]},
        "model": {"hidden": [width, width], "activation": "relu"},
        "optimizer": {"type": "sgd", "lr": 0.01},
        "training": {"epochs": epochs, "batch_size": batch},
        "variants": [{"name": "naive", "strategy": ["naive"]}],
    }


def timed(cmd, env=None):
    """(wall seconds, child CPU seconds, stdout) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({out.returncode}): {out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def ck_side(binary, exp_path, work):
    out = os.path.join(work, "ck.h5")
    if os.path.exists(out):
        os.remove(out)
    wall, cpu, _ = timed([binary, "run", exp_path, "-o", out, "--threads", "1"])
    import h5py
    with h5py.File(out, "r") as f:
        row = f["summary"][0]
        acc = float(row["acc"])
        path = f.attrs["kernel_path"]
    return wall, cpu, acc, path.decode() if isinstance(path, bytes) else str(path)


def numpy_side(scenario, width, batch, epochs, work):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    _, _, out = timed([sys.executable, os.path.abspath(__file__), "--numpy-child", scenario,
                       "--width", str(width), "--batches", str(batch), "--epochs", str(epochs)], env=env)
    r = json.loads(out.strip().splitlines()[-1])
    return r["wall"], r["cpu"], r["acc"]


def numpy_child(scenario, width, batch, epochs):
    """The run in numpy (float32); prints {"acc": average accuracy after the last experience,
    "wall", "cpu": seconds from after the imports}."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from continualkit.baselines import scenario_file
    wall0, cpu0 = time.perf_counter(), time.process_time()
    sc = scenario_file.read(scenario)
    sys.path.insert(0, HERE)
    from numpy_mlp import NumpyMLP
    rng = np.random.default_rng(1)
    sizes = [sc.experiences[0].train.features.shape[1], width, width, 1]
    mlp = NumpyMLP(sizes, seed=1, lr=0.01)

    def accuracies(model):
        return [float(np.mean((model.forward(t.test.features.astype(np.float32))[-1][:, 0] > 0) == (t.test.labels == 1)))
                for t in sc.experiences]

    # The baselines of fwt_init and fwt, as `continual run` computes them: the untrained model
    # and an independently initialised one on every test set.
    baselines = accuracies(mlp), accuracies(NumpyMLP(sizes, seed=2, lr=0.01))
    accs = []
    for e in sc.experiences:
        x, y = e.train.features.astype(np.float32), e.train.labels.astype(np.float32)[:, None]
        for _ in range(epochs):
            order = rng.permutation(len(x))
            for s in range(0, len(x), batch):
                idx = order[s:s + batch]
                mlp.step(x[idx], y[idx])
        accs = accuracies(mlp)
    print(json.dumps({"acc": sum(accs) / len(accs), "baselines": baselines, "wall": time.perf_counter() - wall0,
                      "cpu": time.process_time() - cpu0}))


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--continual", default=os.path.join(ROOT, ".build-release/release/continual"))
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batches", default="128,512")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--numpy-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    reexec_without_overrides()   # the numpy child inherits the environment: its own kernel, not an override's
    if args.numpy_child:
        return numpy_child(args.numpy_child, args.width, int(args.batches), args.epochs)
    work = tempfile.mkdtemp(prefix="full_run_")
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        exp_path = os.path.join(work, f"exp_{batch}.json")
        with open(exp_path, "w") as f:
            json.dump(experiment(args.width, batch, args.epochs), f)
        scenario = os.path.join(work, "scenario.h5")
        subprocess.run([args.continual, "scenario", "export", "--experiment", exp_path, "-o", scenario],
                       check=True, capture_output=True)
        ck, npy = [], []
        for rep in range(args.repeats):
            first, second = (ck_side, numpy_side) if rep % 2 == 0 else (numpy_side, ck_side)
            for side in (first, second):
                if side is ck_side:
                    ck.append(ck_side(args.continual, exp_path, work))
                else:
                    npy.append(numpy_side(scenario, args.width, batch, args.epochs, work))
            print(f"  batch {batch} repeat {rep + 1}: ContinualKit {ck[-1][0]:.2f} s, numpy {npy[-1][0]:.2f} s",
                  file=sys.stderr, flush=True)
        rows.append(dict(width=args.width, batch=batch, epochs=args.epochs, kernel_path=ck[0][3],
                         ck_wall=median([r[0] for r in ck]), ck_cpu=median([r[1] for r in ck]),
                         numpy_wall=median([r[0] for r in npy]), numpy_cpu=median([r[1] for r in npy]),
                         ck_acc=ck[0][2], numpy_acc=npy[0][2], runs=dict(ck=ck, numpy=npy)))
    print(f"whole run, MLP 10-{args.width}-{args.width}-1, SGD, {args.epochs} epochs × 5 experiences of habit drift; "
          f"median of {args.repeats} alternated repeats")
    print(f"{'batch':>5} {'CK s':>7} {'numpy s':>8} {'numpy/CK':>8} {'CK cpu s':>8} {'np cpu s':>8} {'CK acc':>7} {'np acc':>7} path")
    for r in rows:
        print(f"{r['batch']:>5} {r['ck_wall']:>7.2f} {r['numpy_wall']:>8.2f} {r['numpy_wall'] / r['ck_wall']:>8.2f} "
              f"{r['ck_cpu']:>8.2f} {r['numpy_cpu']:>8.2f} {r['ck_acc']:>7.3f} {r['numpy_acc']:>7.3f} {r['kernel_path']}")
    # The spread behind each median: a ratio near a target means little if one side varies more.
    print("CPU seconds, lowest–highest of the repetitions:")
    for r in rows:
        ck, npy = [x[1] for x in r["runs"]["ck"]], [x[1] for x in r["runs"]["numpy"]]
        print(f"{r['batch']:>5}  CK {min(ck):.2f}–{max(ck):.2f}  numpy {min(npy):.2f}–{max(npy):.2f}  "
              f"numpy/CK {min(npy) / max(ck):.2f}–{max(npy) / min(ck):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
