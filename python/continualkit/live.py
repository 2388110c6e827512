"""Live logging of finished runs to TensorBoard or offline Weights & Biases while `continual run`
or `continual sweep` is still running (`continualkit.run(..., tensorboard=DIR, wandb=DIR)`).

Each run is exported as `continualkit export` exports it (`export.to_tensorboard`,
`export.to_wandb`, one run at a time), as soon as its progress line appears. Where a finished run
is: the CLI writes each one first as its own file `RESULTS.h5.journal/<run_id>.h5` (holding
`/runs/<run_id>` and its `/summary` row as `summary_row`) and folds the journal into the results
file now and then (docs/results-format.md#crash-consistency); both are read-only here and
neither is ever modified in place, so reading them cannot disturb the writer. `continual run`
logs only about ten progress lines, so every event also picks up any other journal entry not
logged yet, and `finish` logs whatever remains from the final file.
"""
from __future__ import annotations

import os
import warnings
from typing import Optional

import h5py
import pandas as pd

from .io import _json_attr, _str, configuration_name


class LiveLogger:
    """Exports each finished run once, to TensorBoard (`tensorboard` directory) and/or offline W&B
    (`wandb` directory; project = the experiment's name). Errors while logging are warnings: a
    logger must never stop the experiment."""

    def __init__(self, tensorboard=None, wandb=None):
        self.tensorboard = os.fspath(tensorboard) if tensorboard else None
        self.wandb = os.fspath(wandb) if wandb else None
        self.logged: set = set()
        self.swept: Optional[list] = None
        self.project: Optional[str] = None

    def log(self, results_path: str, event) -> None:
        """Called for each progress line: logs its run and any other finished run not logged yet."""
        journal = results_path + ".journal"
        try:
            pending = [n[:-3] for n in os.listdir(journal) if n.endswith(".h5") and ".tmp-" not in n]
        except OSError:
            pending = []
        for rid in dict.fromkeys([event.run_id] + sorted(pending)):
            if rid not in self.logged:
                self._log_one(results_path, rid)

    def finish(self, results_path: str) -> None:
        """After the command ended: logs every completed run of the file not logged yet."""
        try:
            with h5py.File(results_path, "r") as f:
                ids = [_str(x) for x in f["summary"]["run_id"][:]]
        except (OSError, KeyError):
            return
        for rid in ids:
            if rid not in self.logged:
                self._log_one(results_path, rid, last_chance=True)

    def _log_one(self, results_path: str, rid: str, last_chance: bool = False) -> None:
        """Logs run `rid` from its journal entry, else (folded meanwhile: the entry is deleted
        once the results file holds the run, possibly between two opens) from the results file."""
        self._read_header(results_path)
        entry = os.path.join(results_path + ".journal", rid + ".h5")
        problem = None
        for source in (entry, results_path):
            try:
                df = _one_run_summary(source, rid, self.swept or [])
                if df is not None:                        # None: failed or diverged, nothing to plot
                    self._export(source, df)
            except (OSError, KeyError) as e:              # not (or no longer) in this file
                problem = e
                continue
            except Exception as e:                        # noqa: BLE001 - logging must not stop a sweep
                warnings.warn(f"live logging of run {rid} failed: {e}")
            self.logged.add(rid)
            return
        if last_chance:
            warnings.warn(f"live logging of run {rid} failed: {problem}")

    def _read_header(self, results_path: str) -> None:
        if self.swept is not None:
            return
        try:
            with h5py.File(results_path, "r") as f:
                self.swept = _json_attr(f["summary"].attrs, "swept_columns_json", [])
                self.project = _str(f.attrs.get("experiment_name", "")) or None
        except (OSError, KeyError):
            self.swept = None

    def _export(self, source: str, df: pd.DataFrame) -> None:
        from . import export
        if self.tensorboard:
            export.to_tensorboard(source, self.tensorboard, df=df)
        if self.wandb:
            project = export._safe(self.project or os.path.splitext(os.path.basename(source))[0])
            export.to_wandb(source, self.wandb, project=project, df=df, figures=False)


def _one_run_summary(path: str, rid: str, swept: list) -> Optional[pd.DataFrame]:
    """The run's `/summary` row as `load_summary` would give it (decoded strings, configuration,
    swept columns in attrs), from a journal entry (`summary_row`) or a results file (`/summary`);
    None when the run did not complete. Raises KeyError when `path` does not hold the run."""
    with h5py.File(path, "r") as f:
        g = f["runs"][rid]
        if int(g.attrs.get("complete", 0)) != 1:
            raise KeyError(rid)
        if "summary_row" in g:
            rows = g["summary_row"][:]
        else:
            table = f["summary"][:]
            rows = table[[_str(x) == rid for x in table["run_id"]]]
    df = pd.DataFrame(rows)
    if df.empty:
        raise KeyError(rid)
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].map(_str)
    df["configuration"] = df["name"].map(configuration_name)
    df.attrs.update(swept_columns=list(swept), path=path)
    if df.loc[0, "status"] != "completed":
        return None
    return df

