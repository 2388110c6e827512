"""Export for the tools researchers already use: the summary and per-run curves as CSV or Parquet,
and TensorBoard event files (tensorboardX).

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
