"""One run group as plain Python values: `load_run`."""
from __future__ import annotations

import h5py

from .summary import MATRIX_NAMES, _json_attr, _str


def load_run(path: str, run_id: str) -> dict:
    """One run group as plain Python/numpy values (None for datasets a failed run lacks).

    Keys: run_id, name, status, message, seed, config, sweep_values, accuracy (T×T), every matrix
    of MATRIX_NAMES present (and `<name>_baseline_random`), baseline_random, baseline_init,
    experience_names, forgetting_per_experience, loss_curve, penalty_curve, test_sizes,
    samples_processed, steps, trainable_parameters, metrics, costs, matrix_metrics
    ({matrix: {acc, bwt, fwt, forgetting}} as stored), plugins.
    """
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        a = g.attrs

        def ds(name):
            return g[name][()] if name in g and isinstance(g[name], h5py.Dataset) else None

        out = {
            "run_id": _str(a.get("run_id", run_id)),
            "name": _str(a.get("name", "")),
            "status": _str(a.get("status", "")),
            "message": _str(a.get("message", "")),
            "seed": int(a.get("seed", 0)),
            "primary_metric": _str(a.get("primary_metric", "accuracy")),
            "config": _json_attr(a, "config_json", {}),
            "sweep_values": _json_attr(a, "sweep_values_json", {}),
            "accuracy": ds("accuracy_matrix"),
            "baseline_random": ds("baseline_random"),
            "baseline_init": ds("baseline_init"),
            "forgetting_per_experience": ds("forgetting_per_experience"),
            "loss_curve": ds("loss_curve"),
            "penalty_curve": ds("penalty_curve"),
            "test_sizes": ds("test_sizes"),
            "samples_processed": ds("samples_processed"),
            "steps": ds("steps"),
            "trainable_parameters": ds("trainable_parameters"),
            "experience_names": [_str(x) for x in g["experience_names"][()]] if "experience_names" in g else [],
            "metrics": {k: float(v) for k, v in g["metrics"].attrs.items()} if "metrics" in g else {},
            "costs": {k: (_str(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v)
                      for k, v in g["costs"].attrs.items()} if "costs" in g else {},
            "matrix_metrics": {},
            "plugins": {},
        }
        for m in MATRIX_NAMES[1:]:
            if m in g:
                out[m] = g[m][()]
                out[m + "_baseline_random"] = ds(m + "_baseline_random")
                out["matrix_metrics"][m] = {k: float(v) for k, v in g[m].attrs.items()
                                            if k in ("acc", "bwt", "fwt", "forgetting")}
        if "plugins" in g:
            for name, pg in g["plugins"].items():
                out["plugins"][name] = {
                    "attributes": {k: _str(v) for k, v in pg.attrs.items()},
                    "arrays": {k: v[()] for k, v in pg.items() if isinstance(v, h5py.Dataset)},
                }
    return out
