#!/usr/bin/env python3
"""Kill test for federated checkpoints (issue 42): a federated run saving itself every N rounds
(`continual run --checkpoint-every N --checkpoint CK.h5`) is killed with SIGKILL at random
moments and continued each time with the command it documents (`--resume-or-start
--resume-from CK.h5`), which may itself be killed; the finished results file must equal an
uninterrupted run's in every non-timing dataset and attribute (`compare_science.compare_files`).

Usage: federated_kill_test.py --bin .build/release/continual --kills 5 [--every 5] [--seed 1]
Prints the figures; exits 1 when the results differ (files kept in --keep or a temporary folder).
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_science import compare_files  # noqa: E402

EXPERIMENT = os.path.join(HERE, "federated_kill_test.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("CONTINUAL_BIN", ".build/release/continual"))
    ap.add_argument("--kills", type=int, default=5, help="runs to kill, each continued until it finishes")
    ap.add_argument("--every", type=int, default=5, help="rounds between checkpoints")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--experiment", default=EXPERIMENT)
    ap.add_argument("--keep", help="directory for the files (default: a temporary one, removed on success)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="ck-fedkill-")
    os.makedirs(work, exist_ok=True)
    reference = os.path.join(work, "reference.h5")
    subprocess.run([args.bin, "run", args.experiment, "-q", "-o", reference], check=True, stdout=subprocess.DEVNULL)
    # The kills are timed on a saving run (saves cost time of their own).
    timed = [os.path.join(work, "timed.h5"), os.path.join(work, "timed.ck.h5")]
    start = time.monotonic()
    subprocess.run([args.bin, "run", args.experiment, "-q", "-o", timed[0], "--checkpoint", timed[1], "--checkpoint-every",
                    str(args.every)], check=True, stdout=subprocess.DEVNULL)
    full = time.monotonic() - start
    print(f"reference: one federated run; {full:.2f} s with a checkpoint every {args.every} rounds")
    figures = {"kills": 0, "restarts": 0, "started_without_checkpoint": 0, "differences": 0}
    for k in range(args.kills):
        out, ck = os.path.join(work, f"k{k}.h5"), os.path.join(work, f"k{k}.ck.h5")
        base = [args.bin, "run", args.experiment, "-q", "-o", out, "--checkpoint", ck, "--checkpoint-every", str(args.every)]
        command = base
        while True:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            killed = False
            # Kill most attempts somewhere in the run; let one in three finish.
            if rng.random() < 2 / 3:
                time.sleep(rng.uniform(0.05, full * 0.9))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
            stdout, stderr = proc.communicate()
            if killed:
                figures["kills"] += 1
                figures["restarts"] += 1
                command = base + ["--resume-or-start", "--resume-from", ck]
                continue
            stale = [f for f in os.listdir(work) if f.startswith(os.path.basename(ck) + ".tmp-")]
            if stale:
                print(f"kill {k}: temporaries of killed saves were left behind: {stale}")
                return 1
            if proc.returncode != 0:
                print(f"kill {k}: {' '.join(command)} exited {proc.returncode}\n{stderr.decode(errors='replace')}")
                return 1
            if b"no checkpoint at" in stdout:
                figures["started_without_checkpoint"] += 1
            break
        diffs = compare_files(reference, out)
        if diffs:
            figures["differences"] += len(diffs)
            print(f"run {k}: {len(diffs)} differences from the uninterrupted run, e.g. {diffs[:3]}; files in {work}")
            return 1
    print("figures: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    print(f"every continued run equals the uninterrupted one ({args.kills} runs, {figures['kills']} SIGKILLs)")
    if not args.keep:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
