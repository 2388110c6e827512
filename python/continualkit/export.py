"""Export for the tools researchers already use: the summary and per-run curves as CSV or Parquet,
TensorBoard event files (tensorboardX) and offline Weights & Biases runs (`to_wandb`).

Files written (CSV shown; Parquet the same with .parquet):
- `summary.csv`: /summary, one row per run (+ `configuration`);
- `grouped.csv`: per configuration and metric n, mean, std, 95 % CI (tidy);
- `matrices.csv`: every stored matrix in long form (run_id, configuration, seed, metric,
  trained_through, evaluated, evaluated_name, value);
- `curves.csv`: loss and penalty per epoch (run_id, configuration, seed, curve, experience, epoch,
  value);
- `prequential.csv` (prequential runs): run_id, configuration, seed, position,
  window_accuracy, cumulative_accuracy, experience.
TensorBoard: one run directory per run (`<configuration>/seed=<seed>`) with scalars
`accuracy/seen_mean` and `accuracy/exp_<j>` (step = experience trained through), `loss/train`
(step = global epoch), `prequential/window_accuracy` (step = stream position), and the final
metrics as `final/<metric>`; hparams from the swept values.
"""
from __future__ import annotations

import os
import re

import h5py
import numpy as np
import pandas as pd

from .io import MATRIX_NAMES, _exp_names, load_summary
from .stats import aggregate_long


def _frames(path, df=None) -> dict[str, pd.DataFrame]:
    df = df if df is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    meta = ok.set_index("run_id")[["configuration", "seed"]]
    mats, curves, preq = [], [], []
    with h5py.File(path, "r") as f:
        for rid in ok["run_id"]:
            g = f["runs"][rid]
            conf, seed = meta.loc[rid, "configuration"], int(meta.loc[rid, "seed"])
            for m in MATRIX_NAMES:
                if m in g:
                    R = np.asarray(g[m][()], dtype=float)
                    T = R.shape[0]
                    names = _exp_names(g, T)
                    i, j = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
                    mats.append(pd.DataFrame({"run_id": rid, "configuration": conf, "seed": seed,
                                              "metric": "accuracy" if m == "accuracy_matrix" else m,
                                              "trained_through": i.ravel(), "evaluated": j.ravel(),
                                              "evaluated_name": np.array(names, dtype=object)[j.ravel()],
                                              "value": R.ravel()}))
            for c in ("loss_curve", "penalty_curve"):
                if c in g:
                    a = np.asarray(g[c][()], dtype=float)
                    e, ep = np.meshgrid(np.arange(a.shape[0]), np.arange(a.shape[1]), indexing="ij")
                    curves.append(pd.DataFrame({"run_id": rid, "configuration": conf, "seed": seed,
                                                "curve": c.replace("_curve", ""), "experience": e.ravel(),
                                                "epoch": ep.ravel(), "value": a.ravel()}))
            if "prequential" in g:
                p = g["prequential"]
                d = {"run_id": rid, "configuration": conf, "seed": seed}
                for k in ("position", "window_accuracy", "cumulative_accuracy", "experience"):
                    if k in p:
                        d[k] = p[k][()]
                preq.append(pd.DataFrame(d))
    out = {"summary": df, "grouped": aggregate_long(df)}
    if mats:
        out["matrices"] = pd.concat(mats, ignore_index=True)
    if curves:
        out["curves"] = pd.concat(curves, ignore_index=True)
    if preq:
        out["prequential"] = pd.concat(preq, ignore_index=True)
    return out


def to_csv(path, out_dir, df=None) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, frame in _frames(path, df).items():
        p = os.path.join(out_dir, f"{name}.csv")
        frame.to_csv(p, index=False)
        written.append(p)
    return written


def to_parquet(path, out_dir, df=None) -> list[str]:
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise SystemExit("Parquet export needs pyarrow: pip install 'continualkit[parquet]'") from e
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, frame in _frames(path, df).items():
        p = os.path.join(out_dir, f"{name}.parquet")
        frame = frame.copy()
        frame.attrs = {}
        frame.to_parquet(p, index=False)
        written.append(p)
    return written


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", str(s))


def to_tensorboard(path, out_dir, df=None) -> list[str]:
    """One event-file directory per completed run; returns the directories."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError as e:  # pragma: no cover
        raise SystemExit("TensorBoard export needs tensorboardX: pip install 'continualkit[tensorboard]'") from e
    df = df if df is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    swept = [c for c in df.attrs.get("swept_columns", []) if c in df.columns]
    dirs = []
    with h5py.File(path, "r") as f:
        for row in ok.to_dict("records"):
            g = f["runs"][row["run_id"]]
            d = os.path.join(out_dir, _safe(row["configuration"]), f"seed={row['seed']}")
            w = SummaryWriter(logdir=d)
            if "accuracy_matrix" in g:
                R = np.asarray(g["accuracy_matrix"][()], dtype=float)
                for i in range(R.shape[0]):
                    w.add_scalar("accuracy/seen_mean", float(R[i, : i + 1].mean()), i)
                    for j in range(i + 1):
                        w.add_scalar(f"accuracy/exp_{j}", float(R[i, j]), i)
            if "loss_curve" in g:
                loss = np.asarray(g["loss_curve"][()], dtype=float).ravel()
                for s, v in enumerate(loss):
                    if np.isfinite(v):
                        w.add_scalar("loss/train", float(v), s)
            if "prequential" in g and "window_accuracy" in g["prequential"]:
                p = g["prequential"]
                pos = p["position"][()] if "position" in p else np.arange(len(p["window_accuracy"]))
                for s, v in zip(pos, p["window_accuracy"][()]):
                    w.add_scalar("prequential/window_accuracy", float(v), int(s))
            finals = {m: float(row[m]) for m in ("acc", "bwt", "fwt", "forgetting", "learning_accuracy",
                                                  "balanced_acc", "macro_f1", "auroc")
                      if m in row and pd.notna(row[m])}
            for m, v in finals.items():
                w.add_scalar(f"final/{m}", v, 0)
            hp = {"configuration": row["configuration"], "seed": int(row["seed"])}
            for c in swept:
                v = row[c]
                hp[c] = v.item() if hasattr(v, "item") else v
            try:
                w.add_hparams(hp, {f"hparam/{k}": v for k, v in finals.items()}, name=".")
            except Exception:  # hparams are a convenience; never fail the export for them
                pass
            w.close()
            dirs.append(d)
    return dirs


def _flatten(d, prefix=""):
    """Nested config → {"optimizer.lr": 0.005, ...} (lists kept as values), as W&B shows config."""
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _WANDB_SETTINGS(wandb):
    """Offline, quiet, and without what W&B gathers about the exporting process (system stats,
    machine info, git, code, pip requirements): the run describes the toolkit run, whose
    provenance is in its config."""
    return wandb.Settings(mode="offline", silent=True, console="off", save_code=False, disable_code=True,
                          disable_git=True, x_disable_stats=True, x_disable_meta=True,
                          x_disable_machine_info=True, x_save_requirements=False)


def _wandb_figures(path, df, ok, fig_dir) -> dict:
    """{configuration: PNG paths}: its forgetting curves and accuracy heat map, drawn once each."""
    from . import figures as F
    images = {}
    for conf in dict.fromkeys(ok["configuration"]):
        paths = []
        for kind, make in (("forgetting", F.forgetting_curves), ("heatmap", F.accuracy_heatmap)):
            try:
                fig = make(path, [conf], df=df)
            except (ValueError, KeyError):
                continue
            paths += [p for p in F.save(fig, os.path.join(fig_dir, f"{_safe(conf)}_{kind}"), ("png",))]
        images[conf] = paths
    return images


def _wandb_history(run, g):
    """One W&B run's history from its results group: accuracy per experience (step `experience`),
    train loss per epoch (step `epoch`), prequential window accuracy (step `position`)."""
    run.define_metric("experience")
    run.define_metric("accuracy/*", step_metric="experience")
    run.define_metric("epoch")
    run.define_metric("loss/*", step_metric="epoch")
    run.define_metric("position")
    run.define_metric("prequential/*", step_metric="position")
    if "accuracy_matrix" in g:
        R = np.asarray(g["accuracy_matrix"][()], dtype=float)
        for i in range(R.shape[0]):
            log = {"experience": i, "accuracy/seen_mean": float(R[i, : i + 1].mean())}
            log.update({f"accuracy/exp_{j}": float(R[i, j]) for j in range(i + 1)})
            run.log(log)
    if "loss_curve" in g:
        loss = np.asarray(g["loss_curve"][()], dtype=float).ravel()
        for s, v in enumerate(loss):
            if np.isfinite(v):
                run.log({"epoch": s, "loss/train": float(v)})
    if "prequential" in g and "window_accuracy" in g["prequential"]:
        p = g["prequential"]
        pos = p["position"][()] if "position" in p else np.arange(len(p["window_accuracy"]))
        for s, v in zip(pos, p["window_accuracy"][()]):
            run.log({"position": int(s), "prequential/window_accuracy": float(v)})


def to_wandb(path, out_dir, project=None, df=None, figures=True) -> list[str]:
    """One offline Weights & Biases run per completed toolkit run, under `out_dir/wandb/`; returns
    the offline run directories (`wandb sync DIR` uploads one later; nothing leaves the machine
    here: WANDB_MODE=offline is forced).

    Each W&B run: name = the run's name, group = its configuration, job_type = its variant,
    id derived from the file's creation time and the run id (re-exporting the same file and
    syncing again updates the same runs); config = the run's resolved config (flattened key
    paths), configuration, seed, swept values, run id and the file's provenance (toolkit version,
    git commit, results file); history per experience i (step metric `experience`):
    `accuracy/exp_<j>` = R[i][j] for j ≤ i and `accuracy/seen_mean`; train loss per global epoch
    (step metric `epoch`); prequential window accuracy (step metric `position`); summary = the
    final metrics of /summary; with `figures`, the configuration's forgetting curves and accuracy
    heat map as images (drawn once per configuration)."""
    try:
        import wandb
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise SystemExit("W&B export needs wandb: pip install 'continualkit[wandb]'") from e
    import hashlib

    from .io import _json_attr, provenance
    os.environ["WANDB_MODE"] = "offline"
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.setdefault("WANDB_CONSOLE", "off")
    df = df if df is not None else load_summary(path)
    ok = df[df["status"] == "completed"]
    swept = [c for c in df.attrs.get("swept_columns", []) if c in df.columns]
    prov = provenance(path)
    project = project or _safe(prov.get("experiment_name") or os.path.splitext(os.path.basename(path))[0])
    os.makedirs(out_dir, exist_ok=True)
    images = _wandb_figures(path, df, ok, os.path.join(out_dir, "figures")) if figures else {}
    finals = [m for m in ("acc", "bwt", "fwt", "forgetting", "learning_accuracy", "balanced_acc", "macro_f1",
                          "auroc", "auprc", "prequential_acc", "energy_j", "peak_memory_bytes", "train_seconds")
              if m in ok.columns]
    run_dirs = []
    with h5py.File(path, "r") as f:
        for row in ok.to_dict("records"):
            g = f["runs"][row["run_id"]]
            cfg = _flatten(_json_attr(g.attrs, "config_json", {}))
            cfg.update(configuration=row["configuration"], seed=int(row["seed"]), run_id=row["run_id"],
                       results_file=os.path.abspath(path), toolkit_version=prov.get("toolkit_version", ""),
                       git_commit=prov.get("git_commit", ""))
            for c in swept:
                v = row[c]
                cfg[c] = v.item() if hasattr(v, "item") else v
            rid = hashlib.sha1(f"{prov.get('created_utc', '')}|{path}|{row['run_id']}".encode()).hexdigest()[:16]
            run = wandb.init(project=project, name=str(row["name"]), group=str(row["configuration"]),
                             job_type=str(row.get("variant", "run")), id=rid, config=cfg, dir=out_dir,
                             reinit="create_new", settings=_WANDB_SETTINGS(wandb))
            _wandb_history(run, g)
            for m in finals:
                if pd.notna(row[m]):
                    run.summary[f"final/{m}"] = float(row[m])
            for p in images.get(row["configuration"], []):
                kind = os.path.splitext(os.path.basename(p))[0].rsplit("_", 1)[-1]
                run.log({f"figures/{kind}": wandb.Image(p, caption=f"{row['configuration']}: {kind} (mean over seeds)")})
            run_dirs.append(os.path.dirname(run.dir))
            run.finish()
            _wait_for_exit_record(os.path.join(run_dirs[-1], f"run-{rid}.wandb"))
    return run_dirs


def _wait_for_exit_record(run_file, timeout=120.0):
    """Block until W&B's service has written the run file through its final `exit` record.

    `run.finish()` can return before the service process has flushed the file (seen once in CI
    under load: a run file holding only its header), so a caller reading or syncing the
    directory right after the export could find a truncated run. Raises if the file is not
    complete within `timeout` seconds."""
    import time
    deadline, last = time.monotonic() + timeout, "no exit record yet"
    while True:
        try:
            recs = read_wandb_offline(run_file)
            if recs and recs[-1][0] == "exit":
                return
        except Exception as e:  # absent (OSError) or cut mid-record (struct.error, DecodeError)
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run_file}: W&B did not finish writing the run within {timeout:.0f} s ({last})")
        time.sleep(0.05)


def read_wandb_offline(run_file):
    """The records of an offline W&B run file (`run-<id>.wandb`), decoded with the wandb
    package's protobuf `Record`: a list of (record type, message). The file is W&B's LevelDB-style
    log: a 7-byte header (":W&B", magic 0xBEE1, version 0), then 32 KiB blocks of chunks, each
    checksum (4 bytes), length (2, little-endian), type (1: full, 2: first, 3: middle, 4: last)
    and data; a record split over blocks is the concatenation of its chunks."""
    import struct

    from wandb.proto import wandb_internal_pb2 as pb
    with open(run_file, "rb") as fh:
        data = fh.read()
    if data[:4] != b":W&B":
        raise ValueError(f"{run_file}: not a W&B run file")
    block, pos, pending, out = 32768, 7, b"", []
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:                       # the rest of a block too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            r = pb.Record()
            r.ParseFromString(pending)
            out.append((r.WhichOneof("record_type"), r))
            pending = b""
    return out
