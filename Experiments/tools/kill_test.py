#!/usr/bin/env python3
"""Kill test for crash-consistent results files (issue 26; docs/results-format.md#crash-consistency).

Starts `continual sweep` or `continual run` on a small experiment, kills it with SIGKILL or
SIGTERM at a random moment while CPU burners load the machine, and asserts after every kill:

1. the exit status tells the truth: SIGTERM gives 130 with an "interrupted:" line, or 0 if the
   command had already finished (or death by SIGTERM before the handlers were installed);
2. the results file, if it exists, opens with h5py, every run group in it is complete and sealed
   (`sha256`), `/summary` has one row per run group, and every run is one of the reference runs;
3. `--resume` completes it (exit 0), recovering the runs left in the journal;
4. the completed file equals an uninterrupted run in every non-timing dataset (every dataset of
   every run group; `/summary` without its timing columns).

Usage: kill_test.py --bin .build/release/continual --kills 200 [--load 1] [--seed 1]
Prints the figures at the end; exits 1 on the first violated assertion (with the file kept).
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXPERIMENT = os.path.join(HERE, "kill_test.json")


def datasets(group, prefix=""):
    """Every dataset below `group`, by path."""
    out = {}
    for name, obj in group.items():
        path = prefix + "/" + name
        if isinstance(obj, h5py.Dataset):
            out[path] = obj
        else:
            out.update(datasets(obj, path))
    return out


def same_array(a, b):
    if a.dtype.names:  # compound
        if a.dtype.names != b.dtype.names or a.shape != b.shape:
            return False
        return all(same_array(a[n], b[n]) for n in a.dtype.names)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def compare(reference, path):
    """Differences between two completed results files (non-timing datasets), as text lines."""
    problems = []
    with h5py.File(reference, "r") as r, h5py.File(path, "r") as f:
        rr, fr = set(r["runs"]), set(f["runs"])
        if rr != fr:
            problems.append(f"run ids differ: missing {sorted(rr - fr)[:3]}, extra {sorted(fr - rr)[:3]}")
        for run in sorted(rr & fr):
            a, b = datasets(r["runs"][run]), datasets(f["runs"][run])
            if set(a) != set(b):
                problems.append(f"run {run}: datasets differ {sorted(set(a) ^ set(b))[:3]}")
            for name in sorted(set(a) & set(b)):
                if name.endswith("summary_row"):
                    continue  # compared through /summary below
                if not same_array(a[name][()], b[name][()]):
                    problems.append(f"run {run}: dataset {name} differs")
        timing = set(json.loads(r["summary"].attrs["timing_columns_json"]))
        s, t = r["summary"][()], f["summary"][()]
        keep = [n for n in s.dtype.names if n not in timing]
        if len(s) != len(t) or not all(same_array(s[n], t[n]) for n in keep):
            problems.append("/summary differs outside the timing columns")
    return problems


def check_partial(path, reference_ids):
    """Assertion 2 on the file a kill left behind; returns the number of runs in it."""
    with h5py.File(path, "r") as f:
        runs = f["runs"]
        for run in runs:
            g = runs[run]
            assert g.attrs.get("complete") == 1, f"run group {run} is not complete"
            assert "sha256" in g.attrs, f"run group {run} has no digest"
            assert run in reference_ids, f"run {run} is not a run of the experiment"
        assert len(f["summary"]) == len(runs), f"/summary has {len(f['summary'])} rows for {len(runs)} run groups"
        return len(runs)


def burner():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.nice(10))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("CONTINUAL_BIN", ".build/release/continual"))
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--load", type=int, default=1, help="CPU burner processes while killing")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--experiment", default=EXPERIMENT, help="experiment file (default: kill_test.json, 24 runs)")
    ap.add_argument("--keep", help="directory for the files (default: a temporary one, removed on success)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="ck-kill-")
    os.makedirs(work, exist_ok=True)
    burners = [burner() for _ in range(args.load)]
    try:
        return run(args, rng, work)
    finally:
        for b in burners:
            b.kill()
            b.wait()


def run(args, rng, work):
    reference = os.path.join(work, "reference.h5")
    commands = {
        "sweep": [args.bin, "sweep", args.experiment, "--jobs", str(args.jobs), "--plain"],
        "run": [args.bin, "run", args.experiment, "--jobs", str(args.jobs), "-q"],
    }
    start = time.monotonic()
    subprocess.run(commands["sweep"] + ["-o", reference], check=True, stdout=subprocess.DEVNULL)
    full = time.monotonic() - start
    with h5py.File(reference, "r") as f:
        reference_ids = set(f["runs"])
    print(f"reference: {len(reference_ids)} runs in {full:.2f} s (jobs {args.jobs}, load {args.load})")

    figures = {"kills": 0, "SIGKILL": 0, "SIGTERM": 0, "exit130": 0, "finished_first": 0, "early_sigterm": 0,
               "no_file": 0, "runs_kept": 0, "runs_recovered_from_journal": 0, "resume_seconds": 0.0}
    kept_hist = []
    for k in range(args.kills):
        which = "sweep" if k % 2 == 0 else "run"
        sig = signal.SIGKILL if rng.random() < 0.5 else signal.SIGTERM
        delay = rng.uniform(0.0, full * 1.1)
        out = os.path.join(work, f"k{k}.h5")
        proc = subprocess.Popen(commands[which] + ["-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(delay)
        proc.send_signal(sig)
        _, err = proc.communicate()
        rc, err = proc.returncode, err.decode(errors="replace")
        figures["kills"] += 1
        figures[sig.name] += 1
        where = f"kill {k}: {which} {sig.name} at {delay:.3f} s, exit {rc}"
        if sig == signal.SIGTERM:
            if rc == 130:
                figures["exit130"] += 1
                assert "interrupted:" in err, f"{where}: exit 130 without an 'interrupted:' line: {err}"
            elif rc == 0:
                figures["finished_first"] += 1
            elif rc == -signal.SIGTERM:
                figures["early_sigterm"] += 1  # before the handlers were installed: nothing written yet
            else:
                raise AssertionError(f"{where}: unexpected exit status; stderr: {err}")
        if rc == 0:
            with h5py.File(out, "r") as f:
                assert set(f["runs"]) == reference_ids, f"{where}: exit 0 with {len(f['runs'])} runs"
        n = 0
        if os.path.exists(out):
            try:
                n = check_partial(out, reference_ids)
            except Exception as e:  # noqa: BLE001 - any failure is the test failing
                raise AssertionError(f"{where}: the file left behind is not good: {e}") from e
        else:
            figures["no_file"] += 1
        figures["runs_kept"] += n
        kept_hist.append(n)
        t = time.monotonic()
        resume = subprocess.run(commands[which] + ["-o", out, "--resume-or-start"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        figures["resume_seconds"] += time.monotonic() - t
        rerr = resume.stderr.decode(errors="replace")
        assert resume.returncode == 0, f"{where}: --resume failed ({resume.returncode}): {rerr}"
        for line in rerr.splitlines():
            if "recovered" in line and "finished run(s)" in line:
                figures["runs_recovered_from_journal"] += int(line.split("recovered ")[1].split()[0])
        problems = compare(reference, out)
        assert not problems, f"{where}: completed file differs from the reference: {problems[:5]}"
        assert not os.path.exists(out + ".journal"), f"{where}: journal left after --resume"
        leftovers = [p for p in os.listdir(work) if ".tmp-" in p]
        assert not leftovers, f"{where}: temporary files left: {leftovers}"
        os.remove(out)
        if os.path.exists(out + ".lock"):
            os.remove(out + ".lock")
        if (k + 1) % 10 == 0:
            print(f"  {k + 1} kills ok", flush=True)
    figures["runs_kept_mean"] = round(figures["runs_kept"] / max(1, figures["kills"]), 2)
    figures["resume_seconds"] = round(figures["resume_seconds"], 1)
    figures["kept_histogram"] = {str(v): kept_hist.count(v) for v in sorted(set(kept_hist))}
    print(json.dumps(figures, indent=1))
    print(f"kill test passed: {figures['kills']} kills, every file good, every resume complete and equal to the reference")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
