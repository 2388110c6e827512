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

import json
import os
import random
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from federated_workload import (evaluate, generate_all, load_client, local_train,  # noqa: E402 (this folder)
                                make_model, shuffle_seed, torch_setup)
from flower_report import measures, parse_args, versions  # noqa: E402
from tree_monitor import TreeMonitor  # noqa: E402

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


def run_engine(a, timing):
    """Generates the data (timed apart), runs the engine; returns (status, params, wall
    seconds, data generation seconds). A failure is reported, not raised."""
    status = "ok"
    with tempfile.TemporaryDirectory(prefix="flbench-") as data_dir:
        t0 = time.perf_counter()
        generate_all(a.seed, a.clients, a.samples, data_dir)
        data_gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        timing["t0"] = t0
        try:
            if a.engine == "torch-loop":
                params = run_torch_loop(a, data_dir, timing)
            else:
                params = run_flower(a, data_dir, timing)
        except BaseException as e:  # noqa: BLE001 - the report must say why
            status = f"failed: {type(e).__name__}: {e}"
            timing["traceback"] = traceback.format_exc()
            params = timing.get("final_params")
        wall = time.perf_counter() - t0
    return status, params, wall, data_gen


def main():
    a = parse_args()
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
    status, params, wall, report["data_gen_seconds"] = run_engine(a, timing)
    mon.stop()
    if "traceback" in timing:
        report["traceback"] = timing["traceback"]
    report.update(measures(a, timing, mon, status, wall))
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
