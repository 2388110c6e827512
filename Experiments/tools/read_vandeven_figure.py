#!/usr/bin/env python3
"""Read van de Ven et al.'s split MNIST results off their published figure, for the orderings of
python/continualkit/data/orderings.json (`vandeven2022`).

The article's Table 2 (split MNIST; van de Ven, Tuytelaars & Tolias 2022, Nature Machine
Intelligence) was not among the sources available here. The authors' repository
(GMvandeVen/continual-learning) ships `figures/splitMNIST_results_tutorial.png`: the same split
MNIST protocol and code (NeurIPStutorial/compare_for_tutorial.py, 20 seeds), final test accuracy
per context with ±1 s.e.m. bands, for task-, domain- and class-incremental learning. This script
reads, at the last context, each method's line centre (its mean) and its band half-width (its
s.e.m.) from the pixels:

- the y axis of each panel is calibrated on two of its tick marks (found by the script's caller
  once; the positions are constants below, checked by drawing them);
- a method is found by its line colour (RGB within 12, or within 50 for a line drawn under another
  method's translucent band, then flagged); its mean is the centre of the line's
  pixels, extrapolated linearly from 14 and 5 pixels before the line's end to the end;
- its s.e.m. is the distance from the line centre to the first white pixel, up or down, taking the
  direction that meets no other method's line; where both directions run into other bands the
  smaller is taken. Bands that touch others can only look wider than they are, so a read s.e.m.
  is an upper bound and an ordering read from it is conservative;
- a line hidden under others (task-IL draws seven methods between 98 and 100 %) is not read: it
  is reported as hidden and orderings.json gives it the cluster's span.

    python3 Experiments/tools/read_vandeven_figure.py splitMNIST_results_tutorial.png

(get the PNG from the authors' repository; it is not shipped here). Prints one line per method
and setting: mean, read s.e.m., line pixels seen.
"""
import sys

import numpy as np
from PIL import Image

COLOURS = {"Joint": (0, 0, 0), "SepN": (2, 0, 198), "XdG": (27, 151, 255), "DGR": (165, 6, 0),
           "ER": (255, 32, 0), "LwF": (255, 179, 7), "FROMP": (202, 128, 0), "EWC": (22, 70, 11),
           "SI": (117, 191, 37), "None": (110, 110, 110), "GenC": (66, 0, 107), "iCaRL": (167, 3, 161)}
# Per panel: x of the last context's line end, two (y pixel, accuracy) ticks of the y axis.
PANELS = {"task": (683, (67.0, 1.0), (339.5, 0.85)),
          "domain": (1482, (63.0, 1.0), (369.0, 0.6)),
          "class": (2257, (55.0, 1.0), (453.0, 0.0))}
TOP, BOTTOM, TOLERANCE, TINTED = 30, 445, 12, 50


def runs(mask):
    """Contiguous runs of True rows, as (first, last)."""
    ys = np.where(mask)[0]
    out = []
    for y in ys:
        if out and y - out[-1][1] <= 1:
            out[-1][1] = y
        else:
            out.append([y, y])
    return out


def line_centre(im, x, colour, tolerance=TOLERANCE):
    """Centre row of the longest run of `colour` pixels in column x, with its length."""
    d = np.abs(im[TOP:BOTTOM, x] - np.array(colour)).sum(axis=1)
    r = runs(d <= tolerance)
    if not r:
        return None, 0
    a, b = max(r, key=lambda t: t[1] - t[0])
    return TOP + (a + b) / 2, b - a + 1


def band_half_width(im, x, y, own):
    """Pixels from row y to the first white pixel, up and down; the direction that crosses no
    other method's line wins, else the smaller (an upper bound on the true half-width)."""
    others = [np.array(c) for m, c in COLOURS.items() if m != own]
    found = []
    for step in (-1, 1):
        yy, crossed = int(round(y)), False
        while TOP < yy < BOTTOM and tuple(im[yy, x]) != (255, 255, 255):
            if any(np.abs(im[yy, x] - c).sum() <= TOLERANCE for c in others):
                crossed = True
            yy += step
        found.append((crossed, abs(yy - y)))
    clean = [d for crossed, d in found if not crossed]
    return (min(clean) if clean else min(d for _, d in found)), not clean


def read(path):
    im = np.array(Image.open(path).convert("RGB")).astype(int)
    out = {}
    for setting, (x_end, (ya, va), (yb, vb)) in PANELS.items():
        scale = (vb - va) / (yb - ya)
        for method, colour in COLOURS.items():
            tinted = False
            a, _ = line_centre(im, x_end - 14, colour)
            b, width = line_centre(im, x_end - 5, colour)
            if a is None or b is None or width < 3:
                # A line drawn under another method's translucent band keeps its hue but not its RGB.
                tinted = True
                a, _ = line_centre(im, x_end - 14, colour, TINTED)
                b, width = line_centre(im, x_end - 5, colour, TINTED)
            if a is None or b is None or width < 3:
                out[(setting, method)] = None
                continue
            y = b + (b - a) * 5 / 9
            half, merged = band_half_width(im, x_end - 5, b, method)
            out[(setting, method)] = (100 * (va + (y - ya) * scale), 100 * abs(half * scale), width, merged or tinted)
    return out


def main(path):
    for (setting, method), r in read(path).items():
        if r is None:
            print(f"{setting:6s} {method:6s} hidden or not drawn")
        else:
            mean, sem, width, merged = r
            print(f"{setting:6s} {method:6s} {mean:6.2f}  s.e.m. <= {sem:5.2f}{'  (band merged with others, or line tinted)' if merged else ''}"
                  f"  (line {width} px)")


if __name__ == "__main__":
    main(sys.argv[1])
