"""The Flower benchmark's options and its report's measured part (flower_federated.py): what
ran (versions), rounds, throughput, CPU time and memory of the process tree."""
from __future__ import annotations

import argparse
import os
import platform

import numpy as np


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("torch", "flwr", "ray"):
        try:
            v[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001 - report, don't fail
            v[name] = f"not importable: {type(e).__name__}: {e}"
    return v


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Federated speed benchmark on the ContinualKit workload, outside ContinualKit.")
    p.add_argument("--engine", choices=["flower", "flower-numpy", "torch-loop"],
                   default="flower")
    p.add_argument("--clients", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--fraction", type=float, default=0.1)
    p.add_argument("--samples", type=int, default=120)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpus", type=float, default=1.0,
                   help="Flower client_resources num_cpus (1 -> 2 clients at once "
                        "on 2 cores)")
    p.add_argument("--max-workers", type=int, default=0,
                   help="flower-numpy: server thread pool size (0 = Flower's default)")
    p.add_argument("--max-seconds", type=float, default=0,
                   help="torch-loop: stop after the round that passes this")
    p.add_argument("--out", help="write the JSON report here")
    return p.parse_args(argv)


def measures(a, timing, mon, status, wall) -> dict:
    """The report's measured part: rounds, throughput, CPU time and memory of the tree."""
    rounds_done, rs, updates = timing["rounds_done"], timing["round_seconds"], timing["updates"]
    rounds_wall = sum(rs)
    out = {
        "status": status if rounds_done or status != "ok" else "failed: no round done",
        "rounds_done": rounds_done,
        "wall_seconds": wall,  # engine start to finish (Ray start/stop included)
        "rounds_wall_seconds": rounds_wall,  # first round's start to last round's end
        "startup_shutdown_seconds": wall - rounds_wall,
        "startup_to_all_nodes_seconds": (timing["nodes_ready"] - timing["t0"]
                                         if "nodes_ready" in timing else None),
        "round_seconds": rs,
        "client_updates": updates,
        "client_update_errors": timing["errors"],
        "client_updates_per_s": updates / rounds_wall if rounds_wall else None,
        "samples_per_s": updates * a.samples / rounds_wall if rounds_wall else None,
        "client_train_seconds": timing["client_train_seconds"],
        "cpu_seconds_tree": mon.cpu_seconds(),
        "cpu_seconds_by_process": mon.cpu_by_process(),
        "samples_per_cpu_second": (updates * a.samples / mon.cpu_seconds()
                                   if mon.cpu_seconds() else None),
        "peak_rss_tree_bytes": mon.peak_rss,
        "peak_pss_tree_bytes": mon.peak_pss,
        "peak_processes": mon.peak_procs,
        "load_avg_after": os.getloadavg(),
    }
    if rounds_done and rounds_done < a.rounds:
        out["extrapolated_full_wall_seconds"] = rounds_wall / rounds_done * a.rounds
    if rounds_done:
        steady = rs[1:] if len(rs) > 1 else rs
        out["steady_round_seconds"] = sum(steady) / len(steady)
        out["extrapolated_rounds_wall_seconds"] = out["steady_round_seconds"] * a.rounds
    return out
