"""The workload every engine of flower_federated.py runs: each client's synthetic data, a pure
function of (seed, client id, split), memory-mapped from one file per benchmark, and the PyTorch
MLP 10 → 16 → 8 → 2 with its one epoch of local SGD and the centralised evaluation. Ray's
workers import it by name (Ray puts the driver script's folder on their path)."""
from __future__ import annotations

import os
import time

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
