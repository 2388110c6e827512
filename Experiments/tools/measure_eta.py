#!/usr/bin/env python3
"""Measures the sweep ETA against the truth: runs `continual sweep FILE --plain` (one log line per
run, each with its ETA), timestamps every line, and reports, at 10 %, 25 % and 50 % of the runs,
the ETA shown next to the time that actually remained.

    python3 Experiments/tools/measure_eta.py Experiments/sweeps/eta_mixed_800.json [--jobs N] [--continual PATH]
"""
import argparse, os, re, subprocess, sys, tempfile, time

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--continual", default="continual")
    args = ap.parse_args()
    out = os.path.join(tempfile.mkdtemp(), "eta.h5")
    cmd = [args.continual, "sweep", args.experiment, "-o", out, "--jobs", str(args.jobs), "--plain"]
    start = time.monotonic()
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            m = re.match(r"\[(\d+)/(\d+)\].* ETA (\S+)", line)
            if m:
                lines.append((time.monotonic() - start, int(m.group(1)), int(m.group(2)), m.group(3)))
    end = time.monotonic() - start
    if p.returncode != 0 or not lines:
        sys.exit(f"sweep failed (exit {p.returncode})")

    def seconds(text):
        if text == "?":
            return float("nan")
        h = re.match(r"(\d+)h(\d+)m$", text); m = re.match(r"(\d+)m(\d+)s$", text); s = re.match(r"(\d+)s$", text)
        return int(h[1]) * 3600 + int(h[2]) * 60 if h else int(m[1]) * 60 + int(m[2]) if m else int(s[1])

    total = lines[-1][2]
    print(f"{args.experiment}: {total} runs, {args.jobs} jobs, {end:.1f} s")
    print("done    shown ETA   true remaining   error   count-based ETA   error")
    for frac in (0.1, 0.25, 0.5):
        t, done, _, eta = next(l for l in lines if l[1] >= frac * total)
        truth = end - t
        naive = t / done * (total - done)
        shown = seconds(eta)
        print(f"{frac:4.0%} {shown:10.0f} s {truth:12.1f} s {100 * (shown - truth) / truth:+7.1f}% "
              f"{naive:12.1f} s {100 * (naive - truth) / truth:+7.1f}%")

if __name__ == "__main__":
    main()
