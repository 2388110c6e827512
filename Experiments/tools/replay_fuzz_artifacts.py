#!/usr/bin/env python3
"""Feeds every HDF5 fuzz artifact (crash-*, timeout-*, oom-*) since a time to the CLI as a user would:
results files to `continual inspect`, scenario files through `continual validate` of an experiment
whose dataset scenario is the file. Asserts that the parent process never dies by a signal and never
hangs (a clear error or success within 60 s). Two at a time.

Usage: replay_fuzz_artifacts.py BIN [SINCE_EPOCH_SECONDS]; the artifacts are read from
.build/fuzz/artifacts (what `Fuzz/run.sh` leaves) or from the directory in $ARTS. Exit 1 when
any reached the parent (issue 26; docs/data-limits.md)."""
import glob, json, os, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
BIN = sys.argv[1]
since = float(sys.argv[2]) if len(sys.argv) > 2 else 0
arts = sorted(a for a in glob.glob(os.environ.get("ARTS", ".build/fuzz/artifacts") + "/*")
              if os.path.basename(a).startswith(("results-", "hdf5_scenario-")) and os.path.getmtime(a) >= since)
def one(a):
    d = tempfile.mkdtemp()
    target = "results" if os.path.basename(a).startswith("results-") else "hdf5_scenario"
    f = os.path.join(d, "x.h5")
    open(f, "wb").write(open(a, "rb").read())
    if target == "results":
        c = [BIN, "inspect", f]
    else:
        e = os.path.join(d, "e.json")
        json.dump({"name": "fz", "scenario": {"type": "dataset", "path": "x.h5"}, "model": {"hidden": [4]},
                   "strategy": ["naive"]}, open(e, "w"))
        c = [BIN, "validate", e]
    t = time.monotonic()
    try:
        p = subprocess.run(c, capture_output=True, text=True, timeout=60)
        rc, msg = p.returncode, (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or [""])[-1][:160]
    except subprocess.TimeoutExpired:
        rc, msg = "HANG", ""
    return (os.path.basename(a), c[1], rc, round(time.monotonic() - t, 2), msg)
with ThreadPoolExecutor(2) as ex:
    rows = list(ex.map(one, arts))
bad = [r for r in rows if r[2] == "HANG" or (isinstance(r[2], int) and (r[2] < 0 or r[2] > 128))]
for r in rows: print(*r, sep=" | ")
import collections
print("exit codes:", dict(collections.Counter(r[2] for r in rows)), "max seconds:", max((r[3] for r in rows), default=0))
print(f"{len(arts)} artifacts, {len(rows)} commands, {len(bad)} reached the parent (signal or hang)")
sys.exit(1 if bad else 0)
