#!/usr/bin/env python3
"""Estimated peak memory (`continual validate`) against measured peak RSS (`continual run`),
per shipped experiment (issue 26, "validate = runnable").

The estimate is the largest run's (what a run allocates: data, model, optimizer, buffers, results)
plus what writing the file's results adds to the process (`validate`'s "writing the results of N
run(s)", `RunEstimate.resultsWriterBytes`); the measured
figure is the peak resident set of `continual run --jobs 1` minus that of the process doing
nothing run-specific (`continual validate` on the same file: the Swift runtime, libhdf5, the
parsed config). Usage: memory_estimate.py --bin .build/release/continual [--timeout 300] FILE.json…
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

UNITS = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}  # validate's units are binary ("kB" too)


def parse_bytes(text):
    m = re.match(r"([\d.e+]+)\s*([kKMGT]?B)", text)
    return float(m.group(1)) * UNITS[m.group(2).upper()] if m else None


def peak_kb(cmd, timeout):
    # Its own process group: on a time-out the run itself is killed, not only /usr/bin/time
    # (subprocess.run's timeout would leave `continual` running as an orphan).
    p = subprocess.Popen(["/usr/bin/time", "-f", "PEAK %M"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    m = re.search(r"PEAK (\d+)", err)
    return (int(m.group(1)) if m else None), p.returncode, out + err


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", default=".build/release/continual")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    print(f"{'experiment':28} {'runs':>5} {'per run':>9} {'writer':>8} {'estimate':>10} {'measured':>10} {'error':>7} {'run s':>6}")
    for f in a.files:
        base_kb, rc, out = peak_kb([a.bin, "validate", f], a.timeout)
        m = re.search(r"peak memory per run ≈ ([\d.e+]+ [kKMGT]?B)", out)
        if rc != 0 or not m:
            print(f"{os.path.basename(f):28} validate failed ({rc})")
            continue
        per_run = parse_bytes(m.group(1))
        # The process at --jobs 1: the largest run plus the results file's writer.
        w = re.search(r"\+ ≈ ([\d.e+]+ [kKMGT]?B) writing the results of (\d+) run", out)
        writer, runs = (parse_bytes(w.group(1)), int(w.group(2))) if w else (0.0, 0)
        est = per_run + writer
        with tempfile.TemporaryDirectory() as d:
            start = time.monotonic()
            try:
                run_kb, rc, out = peak_kb([a.bin, "run", f, "-o", os.path.join(d, "r.h5"), "--jobs", "1", "-q"], a.timeout)
            except subprocess.TimeoutExpired:
                print(f"{os.path.basename(f):28} {runs:5d} {per_run / 2**20:8.1f}M {writer / 2**20:7.1f}M {est / 2**20:9.1f}M   (run longer than {a.timeout:.0f} s, not measured)")
                continue
        seconds = time.monotonic() - start
        measured = (run_kb - base_kb) * 1024
        err = (est - measured) / measured * 100 if measured > 0 else float("nan")
        print(f"{os.path.basename(f):28} {runs:5d} {per_run / 2**20:8.1f}M {writer / 2**20:7.1f}M {est / 2**20:9.1f}M "
              f"{measured / 2**20:9.1f}M {err:+6.0f}% {seconds:6.0f}"
              + ("" if rc == 0 else f"  (run exit {rc}: {out.strip().splitlines()[-2:]})"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
