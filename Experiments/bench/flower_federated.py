#!/usr/bin/env python3
"""Federated speed benchmark on the ContinualKit workload, outside ContinualKit.

Engines (--engine):
  flower         Flower's Simulation Engine (flwr.simulation.run_simulation, Ray
                 backend), Message API: ClientApp @train + serverapp FedAvg. This
                 is the API Flower's current docs and `flwr new` templates use.
  flower-numpy   Same engine, PyTorch NumPyClient through ClientApp(client_fn=...)
                 and ServerApp(server_fn=...) with the flwr.server FedAvg (Flower's
                 compatibility layer for NumPyClient code).
  torch-loop     No Flower: the same clients, the same local training and FedAvg
                 in one sequential Python loop (PyTorch's own cost).

Workload (identical for all engines, and the one federated_10k.json runs in Swift):
  --clients clients, --rounds rounds, --fraction sampled per round; each sampled
  client trains ONE epoch of minibatch SGD (--batch, --lr, no momentum, a fresh
  optimizer each round, seeded shuffle) from the global model over its --samples
  local samples and returns its weights; the server averages them weighted by
  sample count. Model: MLP 10 -> 16 -> 8 -> 2, ReLU, softmax cross-entropy.

Data: synthetic, generated deterministically from (seed, client id) BEFORE the
timed region and written to a .npy file that every process memory-maps:
features ~ N(0, 1) (10 float32 features standing in for the habit scenario's
streak, completion_rate_30d, ...); label = [x . w_c + b_c > 0] with
w_c = w_global + 0.5 * N(0, I) and b_c = 0.2 * N(0, 1) per client (a shared rule
plus a personal deviation). Generation time is reported separately
(data_gen_seconds). One centralised evaluation on fresh samples of the first 200
clients runs after the timed region.

Sampling: the torch loop samples client ids with numpy's seeded generator; Flower
samples its node ids with Python's `random`, which the server seeds, but Flower
draws the node ids themselves at start-up, so which clients train differs between
Flower runs (how many does not).

Writes a JSON report (--out) with wall seconds, rounds done, client-updates/s,
samples/s, CPU seconds and peak memory of the whole process tree (Ray's
GCS/raylet/workers included), per-round times and versions.

Requires: pip install "flwr[simulation]" torch  (a benchmark dependency only).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

FEATURES = 10
CLASSES = 2
EVAL_CLIENTS = 200

# --------------------------------------------------------------------------- data


def client_data(seed: int, cid: int, samples: int, split: int = 0):
    """One client's data, a pure function of (seed, client id, split)."""
    w_global = np.random.default_rng([seed, 7919]).standard_normal(FEATURES)
    rng = np.random.default_rng([seed, cid, 104729])
    w = w_global + 0.5 * rng.standard_normal(FEATURES)
    b = 0.2 * rng.standard_normal()
    xr = np.random.default_rng([seed, cid, split])
    x = xr.standard_normal((samples, FEATURES)).astype(np.float32)
    y = (x.astype(np.float64) @ w + b > 0).astype(np.int64)
    return x, y


def generate_all(seed: int, clients: int, samples: int, directory: str):
    x = np.lib.format.open_memmap(os.path.join(directory, "x.npy"), mode="w+",
                                  dtype=np.float32, shape=(clients, samples, FEATURES))
    y = np.lib.format.open_memmap(os.path.join(directory, "y.npy"), mode="w+",
                                  dtype=np.int64, shape=(clients, samples))
    for cid in range(clients):
        x[cid], y[cid] = client_data(seed, cid, samples)
    x.flush()
    y.flush()
    del x, y


_DATA: dict = {}


def load_client(directory: str, cid: int):
    """Memory-mapped once per process (each Ray worker maps the same file)."""
    if _DATA.get("dir") != directory:
        _DATA["dir"] = directory
        _DATA["x"] = np.load(os.path.join(directory, "x.npy"), mmap_mode="r")
        _DATA["y"] = np.load(os.path.join(directory, "y.npy"), mmap_mode="r")
    return np.array(_DATA["x"][cid]), np.array(_DATA["y"][cid])


# -------------------------------------------------------------------------- model

_TORCH_READY = False


def torch_setup():
    global _TORCH_READY
    import torch
    if not _TORCH_READY:
        torch.set_num_threads(1)  # one client per core; the model is tiny
        _TORCH_READY = True
    return torch


def make_model(seed: int):
    torch = torch_setup()
    from torch import nn
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 8),
                         nn.ReLU(), nn.Linear(8, CLASSES))


def local_train(model, x_np, y_np, lr: float, batch: int, shuffle_seed: int) -> float:
    """ONE epoch of minibatch SGD, fresh optimizer (no momentum). Returns seconds."""
    torch = torch_setup()
    import torch.nn.functional as F
    t0 = time.perf_counter()
    x = torch.from_numpy(x_np)
    y = torch.from_numpy(y_np)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.0)
    gen = torch.Generator().manual_seed(shuffle_seed)
    perm = torch.randperm(x.shape[0], generator=gen)
    for start in range(0, x.shape[0], batch):
        idx = perm[start:start + batch]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def shuffle_seed(seed: int, rnd: int, cid: int) -> int:
    return (seed * 1_000_003 + rnd * 10_007 + cid) % (2**63)


def evaluate(params: list, seed: int, samples: int) -> float:
    torch = torch_setup()
    model = make_model(seed)
    with torch.no_grad():
        for p, v in zip(model.parameters(), params):
            p.copy_(torch.as_tensor(np.asarray(v)))
        correct = total = 0
        for cid in range(EVAL_CLIENTS):
            x, y = client_data(seed, cid, samples, split=1)
            pred = model(torch.from_numpy(x)).argmax(1).numpy()
            correct += int((pred == y).sum())
            total += len(y)
    return correct / total


# ----------------------------------------------------------- process-tree monitor


class TreeMonitor:
    """Samples RSS, PSS and CPU time of this process and all its descendants."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.root = os.getpid()
        self.peak_rss = self.peak_pss = 0
        self.peak_procs = 0
        self.cpu = {}  # pid -> (starttime, cpu seconds), last seen
        self.tick = os.sysconf("SC_CLK_TCK")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree(self):
        children = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            rest = st[st.rfind(")") + 2:].split()
            children.setdefault(int(rest[1]), []).append((int(d), rest))
        out, todo = [], [self.root]
        try:
            with open(f"/proc/{self.root}/stat") as f:
                st = f.read()
            out.append((self.root, st[st.rfind(")") + 2:].split()))
        except OSError:
            pass
        while todo:
            for pid, rest in children.get(todo.pop(), []):
                out.append((pid, rest))
                todo.append(pid)
        return out

    def _name(self, pid):
        if pid == self.root:
            return "driver (server)"
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            return "?"
        words = [w.decode(errors="replace") for w in cmd if w]
        name = os.path.basename(words[0]) if words else "?"
        if name.startswith("python") and len(words) > 1:  # python -u .../x.py
            name = os.path.basename(next((w for w in words[1:] if w.endswith(".py")),
                                         words[1]))
        return name

    def sample(self):
        rss = pss = 0
        procs = self._tree()
        for pid, rest in procs:
            # fields after ')' : state=0 ppid=1 ... utime=11 stime=12 starttime=19
            self.cpu[pid] = (self._name(pid), (int(rest[11]) + int(rest[12])) / self.tick)
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Rss:"):
                            rss += int(line.split()[1]) * 1024
                        elif line.startswith("Pss:"):
                            pss += int(line.split()[1]) * 1024
            except OSError:
                pass
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_pss = max(self.peak_pss, pss)
        self.peak_procs = max(self.peak_procs, len(procs))

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.sample()
        self._stop.set()
        self._thread.join()

    def cpu_seconds(self):
        return sum(c for _, c in self.cpu.values())

    def cpu_by_process(self):
        out = {}
        for name, c in self.cpu.values():
            out[name] = round(out.get(name, 0.0) + c, 2)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# ---------------------------------------------------------------- torch-loop engine


def run_torch_loop(a, data_dir, timing):
    torch = torch_setup()
    model = make_model(a.seed)
    global_params = [p.detach().clone() for p in model.parameters()]
    per_client = max(1, int(a.clients * a.fraction))
    rng = np.random.default_rng([a.seed, 31337])
    train_s = 0.0
    x_all = np.load(os.path.join(data_dir, "x.npy"))  # in RAM: 48 MB at 10k clients
    y_all = np.load(os.path.join(data_dir, "y.npy"))
    t_start = time.perf_counter()
    for rnd in range(1, a.rounds + 1):
        r0 = time.perf_counter()
        sampled = rng.choice(a.clients, per_client, replace=False)
        acc = [torch.zeros_like(p) for p in global_params]
        total = 0
        for cid in sampled:
            cid = int(cid)
            with torch.no_grad():
                for p, g in zip(model.parameters(), global_params):
                    p.copy_(g)
            train_s += local_train(model, x_all[cid], y_all[cid], a.lr, a.batch,
                                   shuffle_seed(a.seed, rnd, cid))
            n = x_all.shape[1]
            with torch.no_grad():
                for s, p in zip(acc, model.parameters()):
                    s.add_(p, alpha=float(n))
            total += n
        global_params = [s / total for s in acc]
        timing["round_seconds"].append(time.perf_counter() - r0)
        timing["rounds_done"] = rnd
        timing["updates"] += len(sampled)
        if rnd % 10 == 0:
            print(f"torch-loop: round {rnd}/{a.rounds}, "
                  f"{time.perf_counter() - t_start:.1f} s", file=sys.stderr, flush=True)
        if a.max_seconds and time.perf_counter() - t_start > a.max_seconds:
            break
    timing["client_train_seconds"] = train_s
    return [p.numpy() for p in global_params]


# ------------------------------------------------------------------ flower engines
# Everything below that runs in Ray workers is a module-level function of this
# module (imported by name in the workers: Flower passes the driver's sys.path on).

def message_train(msg, context):
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    cfg = msg.content["config"]
    cid = int(context.node_config["partition-id"])
    model = make_model(0)
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    x, y = load_client(cfg["data-dir"], cid)
    secs = local_train(model, x, y, cfg["lr"], cfg["batch"],
                       shuffle_seed(cfg["seed"], cfg["server-round"], cid))
    return Message(content=RecordDict({
        "arrays": ArrayRecord(model.state_dict()),
        "metrics": MetricRecord({"num-examples": len(y), "train-seconds": secs}),
    }), reply_to=msg)


def build_message_apps(a, data_dir, timing):
    from flwr.app import ArrayRecord, ConfigRecord
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.serverapp.strategy import FedAvg

    client_app = ClientApp()
    client_app.train()(message_train)

    class TimedFedAvg(FedAvg):
        def configure_train(self, server_round, arrays, config, grid):
            timing["_round_start"] = time.perf_counter()
            return super().configure_train(server_round, arrays, config, grid)

        def aggregate_train(self, server_round, replies):
            replies = list(replies)
            timing["client_train_seconds"] += sum(
                float(r.content["metrics"]["train-seconds"]) for r in replies
                if r.has_content())
            timing["errors"] += sum(1 for r in replies if not r.has_content())
            timing["updates"] += sum(1 for r in replies if r.has_content())
            out = super().aggregate_train(server_round, replies)
            timing["round_seconds"].append(time.perf_counter() - timing["_round_start"])
            timing["rounds_done"] = server_round
            return out

    server_app = ServerApp()

    @server_app.main()
    def main(grid, context):
        random.seed(a.seed)  # Flower samples nodes with the global `random` module
        # Nodes register gradually; FedAvg sizes its sample from the nodes connected
        # at that moment, so wait for all of them (counted as start-up, not rounds).
        while len(list(grid.get_node_ids())) < a.clients:
            time.sleep(0.2)
        timing["nodes_ready"] = time.perf_counter()
        strategy = TimedFedAvg(fraction_train=a.fraction, fraction_evaluate=0.0,
                               min_train_nodes=1, min_evaluate_nodes=0,
                               min_available_nodes=a.clients)
        result = strategy.start(
            grid=grid,
            initial_arrays=ArrayRecord(make_model(a.seed).state_dict()),
            num_rounds=a.rounds,
            train_config=ConfigRecord({"lr": a.lr, "batch": a.batch, "seed": a.seed,
                                       "data-dir": data_dir}),
        )
        sd = result.arrays.to_torch_state_dict()
        timing["final_params"] = [v.numpy() for v in sd.values()]

    return client_app, server_app


def numpy_client_fn(context):
    from flwr.client import NumPyClient

    class TorchClient(NumPyClient):
        def __init__(self, cid):
            self.cid = cid

        def fit(self, parameters, config):
            torch = torch_setup()
            model = make_model(0)
            with torch.no_grad():
                for p, v in zip(model.parameters(), parameters):
                    p.copy_(torch.from_numpy(v))
            x, y = load_client(config["data-dir"], self.cid)
            secs = local_train(model, x, y, config["lr"], config["batch"],
                               shuffle_seed(config["seed"], config["server-round"],
                                            self.cid))
            return ([p.detach().numpy() for p in model.parameters()], len(y),
                    {"train-seconds": secs})

    return TorchClient(int(context.node_config["partition-id"])).to_client()


def build_numpy_apps(a, data_dir, timing):
    from flwr.clientapp import ClientApp
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server import Server, ServerAppComponents, ServerConfig, SimpleClientManager
    from flwr.server.strategy import FedAvg
    from flwr.serverapp import ServerApp

    client_app = ClientApp(client_fn=numpy_client_fn)
    init = [p.detach().numpy() for p in make_model(a.seed).parameters()]

    def fit_config(server_round):
        return {"lr": a.lr, "batch": a.batch, "seed": a.seed, "data-dir": data_dir,
                "server-round": server_round}

    class TimedFedAvg(FedAvg):
        def configure_fit(self, server_round, parameters, client_manager):
            if server_round == 1:  # wait for all nodes, as in the Message API path
                while client_manager.num_available() < a.clients:
                    time.sleep(0.2)
                timing["nodes_ready"] = time.perf_counter()
            timing["_round_start"] = time.perf_counter()
            return super().configure_fit(server_round, parameters, client_manager)

        def aggregate_fit(self, server_round, results, failures):
            timing["client_train_seconds"] += sum(
                float(r.metrics["train-seconds"]) for _, r in results)
            timing["errors"] += len(failures)
            timing["updates"] += len(results)
            out = super().aggregate_fit(server_round, results, failures)
            timing["round_seconds"].append(time.perf_counter() - timing["_round_start"])
            timing["rounds_done"] = server_round
            if out[0] is not None:
                timing["final_params"] = parameters_to_ndarrays(out[0])
            return out

    def server_fn(context):
        random.seed(a.seed)
        strategy = TimedFedAvg(fraction_fit=a.fraction, fraction_evaluate=0.0,
                               min_fit_clients=1, min_evaluate_clients=0,
                               min_available_clients=a.clients,
                               initial_parameters=ndarrays_to_parameters(init),
                               on_fit_config_fn=fit_config)
        server = Server(client_manager=SimpleClientManager(), strategy=strategy)
        if a.max_workers:
            server.set_max_workers(a.max_workers)
        return ServerAppComponents(server=server, config=ServerConfig(num_rounds=a.rounds))

    return client_app, ServerApp(server_fn=server_fn)


def run_flower(a, data_dir, timing):
    import logging
    from flwr.simulation import run_simulation
    # Import this file as a module so that Ray pickles its functions by reference.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    mod = __import__(os.path.splitext(os.path.basename(__file__))[0])
    build = mod.build_message_apps if a.engine == "flower" else mod.build_numpy_apps
    client_app, server_app = build(a, data_dir, timing)
    ncpu = len(os.sched_getaffinity(0))
    backend_config = {
        "client_resources": {"num_cpus": a.cpus, "num_gpus": 0.0},
        "init_args": {"num_cpus": ncpu, "logging_level": logging.ERROR,
                      "log_to_driver": False},
    }
    run_simulation(server_app=server_app, client_app=client_app,
                   num_supernodes=a.clients, backend_config=backend_config,
                   verbose_logging=False)
    return timing.get("final_params")


# --------------------------------------------------------------------------- main


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("torch", "flwr", "ray"):
        try:
            v[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001 - report, don't fail
            v[name] = f"not importable: {type(e).__name__}: {e}"
    return v


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    a = p.parse_args()

    per_round = max(1, int(a.clients * a.fraction))
    report = {"engine": a.engine, "clients": a.clients, "rounds": a.rounds,
              "fraction": a.fraction, "clients_per_round": per_round,
              "samples_per_client": a.samples, "batch": a.batch, "lr": a.lr,
              "seed": a.seed, "client_num_cpus": a.cpus,
              "cores": len(os.sched_getaffinity(0)),
              "load_avg_before": os.getloadavg(), "versions": versions(),
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    timing = {"round_seconds": [], "rounds_done": 0, "client_train_seconds": 0.0,
              "errors": 0, "updates": 0}
    mon = TreeMonitor().start()
    status = "ok"
    with tempfile.TemporaryDirectory(prefix="flbench-") as data_dir:
        t0 = time.perf_counter()
        generate_all(a.seed, a.clients, a.samples, data_dir)
        report["data_gen_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            if a.engine == "torch-loop":
                params = run_torch_loop(a, data_dir, timing)
            else:
                params = run_flower(a, data_dir, timing)
        except BaseException as e:  # noqa: BLE001 - the report must say why
            status = f"failed: {type(e).__name__}: {e}"
            report["traceback"] = traceback.format_exc()
            params = timing.get("final_params")
        wall = time.perf_counter() - t0
    mon.stop()
    rounds_done = timing["rounds_done"]
    rs = timing["round_seconds"]
    updates = timing["updates"]
    rounds_wall = sum(rs)
    report.update({
        "status": status if rounds_done or status != "ok" else "failed: no round done",
        "rounds_done": rounds_done,
        "wall_seconds": wall,  # engine start to finish (Ray start/stop included)
        "rounds_wall_seconds": rounds_wall,  # first round's start to last round's end
        "startup_shutdown_seconds": wall - rounds_wall,
        "startup_to_all_nodes_seconds": (timing["nodes_ready"] - t0
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
    })
    if rounds_done and rounds_done < a.rounds:
        report["extrapolated_full_wall_seconds"] = rounds_wall / rounds_done * a.rounds
    if rounds_done:
        steady = rs[1:] if len(rs) > 1 else rs
        report["steady_round_seconds"] = sum(steady) / len(steady)
        report["extrapolated_rounds_wall_seconds"] = (
            report["steady_round_seconds"] * a.rounds)
    if params is not None:
        report["final_accuracy"] = evaluate(params, a.seed, a.samples)
    text = json.dumps(report, indent=2)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    brief = {k: report.get(k) for k in (
        "engine", "status", "rounds_done", "wall_seconds", "rounds_wall_seconds",
        "client_updates_per_s", "samples_per_s", "cpu_seconds_tree",
        "peak_pss_tree_bytes", "final_accuracy")}
    print(json.dumps(brief), flush=True)
    # Ray may leave non-daemon threads; leave without waiting for them.
    sys.stdout.flush()
    os._exit(0 if report["status"] == "ok" else 1)


if __name__ == "__main__":
    main()
