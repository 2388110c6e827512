"""Figures exist in every format, have bounded sizes, are not blank, carry the experiment name,
aggregate long streams, and Pareto labels do not overlap."""
import os

import numpy as np
import pytest
from PIL import Image

from continualkit import figures as F

MAX_PX = 4200          # no figure wider/taller than 14 in at 300 dpi
MAX_BYTES = 3_000_000  # per PNG


def assert_png_ok(path):
    assert F.check_png(path) == []
    assert os.path.getsize(path) < MAX_BYTES, f"{path} is {os.path.getsize(path)} bytes"
    im = Image.open(path)
    w, h = im.size
    assert 300 < w <= MAX_PX and 200 < h <= MAX_PX, f"{path}: {w}×{h}"
    dpi = im.info.get("dpi", (0, 0))
    assert round(dpi[0]) == 300, f"{path}: dpi {dpi}"
    px = np.asarray(im.convert("L"), dtype=float)
    assert px.std() > 10, f"{path} looks blank (pixel std {px.std():.1f})"
    assert (px < 128).mean() > 0.002, f"{path} has almost no dark pixels"


def test_draw_all_formats_and_sizes(synthetic, tmp_path):
    out = F.draw_all(synthetic, str(tmp_path), formats=("pdf", "svg", "png"))
    assert {"heatmap", "forgetting_curves", "metrics", "pareto_energy", "pareto_memory"} <= set(out)
    for name, paths in out.items():
        assert [os.path.splitext(p)[1] for p in paths] == [".pdf", ".svg", ".png"]
        for p in paths:
            assert os.path.getsize(p) > 1000
        assert open(paths[0], "rb").read(5) == b"%PDF-"
        assert b"<svg" in open(paths[1], "rb").read(2000)
        assert_png_ok(paths[2])
        assert b"synthetic" in open(paths[1], "rb").read(), f"{name}: experiment name not in the figure"


def test_check_png_flags_blank_and_oversized(tmp_path):
    from PIL import Image
    blank = tmp_path / "blank.png"
    Image.new("RGB", (1000, 800), "white").save(blank, dpi=(300, 300))
    assert any("blank" in p for p in F.check_png(str(blank)))
    huge = tmp_path / "huge.png"
    Image.new("RGB", (14840, 300), "white").save(huge, dpi=(100, 100))
    probs = F.check_png(str(huge))
    assert any("px" in p for p in probs) and any("dpi" in p for p in probs)


def test_metrics_against_swept_value_uses_the_swept_axis(synthetic):
    fig = F.metrics_vs_swept(synthetic)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "optimizer.lr"
    assert len(ax.get_lines()) >= 3          # one line per variant
    assert "ACC" in ax.get_ylabel() and "%" in ax.get_ylabel()


def test_long_stream_is_aggregated_not_127x127(synthetic_long, tmp_path):
    fig = F.accuracy_heatmap(synthetic_long)
    im = fig.axes[0].get_images()[0]
    assert im.get_array().shape[0] <= F.MAX_CELLS
    assert not fig.axes[0].texts             # no per-cell annotations at this size
    paths = F.save(fig, str(tmp_path / "heat"), ("png",))
    assert_png_ok(paths[0])
    fig = F.forgetting_curves(synthetic_long)
    assert len(fig.axes[0].get_lines()) <= F.MAX_LINES + 1
    assert len(fig.axes[0].get_xticklabels()) <= 10
    assert_png_ok(F.save(fig, str(tmp_path / "curves"), ("png",))[0])


def _overlaps(fig, ax):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    from matplotlib.text import Text
    boxes = [Text.get_window_extent(t, r) for t in ax.texts]   # the text alone, not its leader line
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def test_pareto_labels_do_not_overlap_and_front_is_right(synthetic):
    fig = F.pareto(synthetic, "energy_j")
    ax = fig.axes[0]
    assert len(ax.texts) == 6
    assert _overlaps(fig, ax) == []
    assert "mJ" in ax.get_xlabel() and "ACC" in ax.get_ylabel()
    front = F.pareto_front(np.array([1, 2, 3, 2.5]), np.array([0.5, 0.7, 0.6, 0.8]))
    assert list(front) == [0, 1, 3]


def test_pareto_many_points_numbered_without_overlap(tmp_path):
    from conftest import write_results
    rng = np.random.default_rng(5)
    runs = [dict(name=f"method{k}_seed={s}", variant=f"method{k}", seed=s, R=rng.uniform(0.5, 0.6, (3, 3)),
                 energy_j=0.01 + 0.0001 * k) for k in range(25) for s in (1, 2)]
    p = write_results(tmp_path / "many.h5", runs, name="many")
    fig = F.pareto(str(p), "energy_j")
    ax = fig.axes[0]
    assert all(t.get_text().isdigit() for t in ax.texts)
    assert any("method24" in t.get_text() for t in fig.texts)   # the key
    assert _overlaps(fig, ax) == []


def test_population_fan_and_prequential(synthetic_population, tmp_path):
    fig = F.population_fan(synthetic_population)
    assert len(fig.axes) == 2
    assert "200 users" in fig._suptitle.get_text()
    assert_png_ok(F.save(fig, str(tmp_path / "fan"), ("png",))[0])
    fig = F.prequential_curves(synthetic_population)
    assert "prequential" in fig.axes[0].get_title()
    assert_png_ok(F.save(fig, str(tmp_path / "preq"), ("png",))[0])


def test_real_quickstart_figures(real_results, tmp_path):
    out = F.draw_all(real_results["quickstart"], str(tmp_path), formats=("png",))
    assert {"heatmap", "forgetting_curves", "metrics", "pareto_energy"} <= set(out)
    for paths in out.values():
        assert_png_ok(paths[0])


def test_real_population_and_prequential_figures(real_results, tmp_path):
    out = F.draw_all(real_results["tiny_population_sweep"], str(tmp_path / "pop"), formats=("png",))
    assert any(k.startswith("population") for k in out)
    out = F.draw_all(real_results["prequential_habit"], str(tmp_path / "preq"), formats=("png",))
    assert "prequential" in out
    for paths in out.values():
        assert_png_ok(paths[0])
