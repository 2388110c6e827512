"""Experiments/tools/read_vandeven_figure.py on a figure drawn here with known values: each
line's centre must give its mean back and the band's edge must bound its s.e.m. from above."""
import importlib.util
import os

import numpy as np
import pytest

PIL = pytest.importorskip("PIL.Image")
TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "Experiments", "tools", "read_vandeven_figure.py")
spec = importlib.util.spec_from_file_location("read_vandeven_figure", TOOL)
R = importlib.util.module_from_spec(spec)
spec.loader.exec_module(R)


def _y(setting, value):
    _, (ya, va), (yb, vb) = R.PANELS[setting]
    return ya + (value / 100 - va) * (yb - ya) / (vb - va)


def _draw(lines):
    """White canvas; per (setting, method, mean, sem): a band at alpha 0.2, then a 5-pixel line,
    flat over the last 30 pixels before the panel's end."""
    im = np.full((538, 2471, 3), 255.0)
    for setting, method, mean, sem in lines:
        x_end = R.PANELS[setting][0]
        colour = np.array(R.COLOURS[method], dtype=float)
        lo, hi = sorted((_y(setting, mean - sem), _y(setting, mean + sem)))
        band = im[int(round(lo)):int(round(hi)) + 1, x_end - 30:x_end + 1]
        band[:] = 0.8 * band + 0.2 * colour
        y = int(round(_y(setting, mean)))
        im[y - 2:y + 3, x_end - 30:x_end + 1] = colour
    return np.rint(im).astype(np.uint8)


def test_reads_means_and_bounds_sems(tmp_path):
    truth = [("domain", "DGR", 95.0, 1.0), ("domain", "None", 60.0, 3.0), ("class", "ER", 89.0, 1.5),
             ("class", "EWC", 20.0, 2.0), ("task", "None", 84.0, 2.5)]
    path = tmp_path / "figure.png"
    PIL.fromarray(_draw(truth)).save(path)
    got = R.read(str(path))
    for setting, method, mean, sem in truth:
        m, s, width, merged = got[(setting, method)]
        px = abs(100 * (R.PANELS[setting][2][1] - R.PANELS[setting][1][1]) / (R.PANELS[setting][2][0] - R.PANELS[setting][1][0]))
        assert m == pytest.approx(mean, abs=px)                  # within one pixel of the axis
        assert sem - px <= s <= sem + 3 * px and not merged    # the band's edge, never below it
        assert width == 5
    assert got[("class", "GenC")] is None                       # not drawn: reported, never invented
