"""Publication figures from a results file. Every function takes the file's path (and options),
returns the matplotlib Figure, and `save(fig, base, formats)` writes PDF/SVG/PNG (300 dpi).

Conventions: Okabe–Ito colours (colour-blind safe), experiment name in every title, units on
every axis, means over seeds with Student-t 95 % intervals (the numbers of `aggregate`), sizes
capped whatever the number of experiences or configurations (long streams are averaged into at
most MAX_CELLS blocks, many configurations are split over several panels or pages).

The package by concept: common.py (palette, sizes, `save` and the shared helpers), matrices.py
(heat map, forgetting curves, metrics against a swept value), streams.py (prequential, continual
evaluation, stability gap, population fan), pareto.py (cost against accuracy), federation.py
(rounds, personalisation gain); this file re-exports them, checks drawn PNGs and draws them all.
"""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..io import federation_runs, is_federated, local_only_configuration  # noqa: E402,F401 (report.py reads them here)
from .common import DPI, _summary, pages, save  # noqa: E402
from .matrices import accuracy_heatmap, forgetting_curves, metrics_vs_swept  # noqa: E402
from .streams import population_fan, prequential_curves, stability_gap  # noqa: E402
from .pareto import pareto, pareto_metric  # noqa: E402
from .federation import federation_rounds, personalisation_gain  # noqa: E402
from .common import (FORGETTING_NOTE, LINESTYLES, MARKERS, MATRIX_LABELS, MAX_CELLS, MAX_LINES,
                     MAX_NAMED_POINTS, MAX_PANELS, METRIC_LABELS, MIN_N_BAND, OKABE_ITO, PARETO_NOTE,
                     _block_labels, _block_mean, _blocks, _conf_matrices, _configs, _experiment, _footnote,
                     _grid, _mean_band, _n_label, _wrap, phase_styles, style)  # noqa: E402,F401 (the package's names)
from .matrices import _dotplot, _numeric  # noqa: E402,F401 (the package's names)
from .streams import continual_eval_curves  # noqa: E402,F401 (the package's names)
from .pareto import COSTS, _place_labels, pareto_front, unit_scale  # noqa: E402,F401 (the package's names)
from .federation import (_band_range, _epsilon_panel, _federation_series, _rounds_panel)  # noqa: E402,F401 (the package's names)


# ---------------------------------------------------------------------------------------------
#: Bounds `check_png` enforces (what CI checks on every figure).
MAX_PX = 4200
MAX_BYTES = 3_000_000


def check_png(path) -> list[str]:
    """Problems with a drawn PNG: missing, over MAX_BYTES, larger than MAX_PX or tiny, not
    300 dpi, or blank (grey-level standard deviation ≤ 10 or almost no dark pixels)."""
    from PIL import Image
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return [f"{path}: missing or empty"]
    out = []
    if os.path.getsize(path) > MAX_BYTES:
        out.append(f"{path}: {os.path.getsize(path)} bytes > {MAX_BYTES}")
    im = Image.open(path)
    w, h = im.size
    if not (300 < w <= MAX_PX and 200 < h <= MAX_PX):
        out.append(f"{path}: {w}×{h} px outside (300..{MAX_PX}) × (200..{MAX_PX})")
    dpi = im.info.get("dpi", (0, 0))
    if round(dpi[0]) != DPI:
        out.append(f"{path}: {dpi[0]:.0f} dpi, not {DPI}")
    px = np.asarray(im.convert("L"), dtype=float)
    if px.std() <= 10 or (px < 128).mean() < 0.002:
        out.append(f"{path}: looks blank (grey std {px.std():.1f})")
    return out


def draw_all(path, out_dir, formats=("pdf", "svg", "png"), df=None, verbose=False) -> dict[str, list[str]]:
    """Every figure that applies to the file, written to `out_dir`; {figure name: paths}.
    Heatmaps and forgetting curves get one page per MAX_PANELS configurations."""
    df = _summary(path, df)
    ok = df[df["status"] == "completed"]
    out = {}

    def emit(name, make):
        try:
            fig = make()
        except (ValueError, KeyError) as e:
            if verbose:
                print(f"skipped {name}: {e}")
            return
        out[name] = save(fig, os.path.join(out_dir, name), formats)

    with_matrix = [c for c in dict.fromkeys(ok["configuration"])]
    pop_ids = set()
    import h5py
    with h5py.File(path, "r") as f:
        for rid in ok["run_id"]:
            if "population" in f["runs"][rid]:
                pop_ids.add(rid)
        has_matrix = any("accuracy_matrix" in f["runs"][rid] for rid in ok["run_id"])
        has_preq = any("prequential" in f["runs"][rid] for rid in ok["run_id"])
        has_ce = any("continual_eval" in f["runs"][rid] for rid in ok["run_id"])
    conf_pages = pages(with_matrix)
    if has_matrix and with_matrix:
        for k, page in enumerate(conf_pages):
            suffix = "" if len(conf_pages) == 1 else f"_{k + 1}"
            emit(f"heatmap{suffix}", lambda page=page: accuracy_heatmap(path, page, df=df))
            emit(f"forgetting_curves{suffix}", lambda page=page: forgetting_curves(path, page, df=df))
    emit("metrics", lambda: metrics_vs_swept(path, df=df))
    if has_preq:
        emit("prequential", lambda: prequential_curves(path, df=df))
    if has_ce:
        emit("stability_gap", lambda: stability_gap(path, df=df))
    for rid in sorted(pop_ids, key=lambda r: list(ok["run_id"]).index(r))[:4]:
        name = "population" if len(pop_ids) == 1 else f"population_{ok.set_index('run_id').loc[rid, 'configuration']}"
        emit(name, lambda rid=rid: population_fan(path, rid, df=df))
    if is_federated(path, ok["run_id"]):
        fed = list(dict.fromkeys(federation_runs(path, df)["configuration"]))
        fed_pages = pages(fed)
        for k, page in enumerate(fed_pages):
            suffix = "" if len(fed_pages) == 1 else f"_{k + 1}"
            emit(f"federation_rounds{suffix}", lambda page=page: federation_rounds(path, page, df=df))
        emit("personalisation_gain", lambda: personalisation_gain(path, df=df))
    if len(dict.fromkeys(ok["configuration"])) >= 2:
        acc = pareto_metric(ok)
        if is_federated(path, ok["run_id"]):
            # a federated run's summary energy_j is not what its phones spend: use the federation's
            # per-client energy (local training + transfers), the table's mJ / client
            emit("pareto_energy", lambda: pareto(path, "joules_per_client", acc, df=federation_runs(path, df)))
        elif "energy_j" in ok and ok["energy_j"].notna().any() and (ok["energy_j"] > 0).any():
            emit("pareto_energy", lambda: pareto(path, "energy_j", acc, df=df))
        if "peak_memory_bytes" in ok and (ok["peak_memory_bytes"] > 0).any():
            emit("pareto_memory", lambda: pareto(path, "peak_memory_bytes", acc, df=df))
    return out

