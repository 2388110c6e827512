"""The HTML report: self-contained (no external resources), every figure present, tables and
provenance; loaded in headless Chromium with no console errors and a non-blank screenshot."""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from continualkit.report import build


@pytest.fixture(scope="module")
def report(synthetic, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    r = build(synthetic, str(out))
    return str(out), r


def test_report_is_self_contained(report):
    path, r = report
    text = open(path, encoding="utf-8").read()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text), "external resource in the report"
    assert "<script" not in text
    assert text.count("class='ck-figure'") == len(r["figures"]) >= 5
    for fid in r["figures"]:
        assert f"id='fig-{fid}'" in text
    assert "toolkit version" in text and "created (UTC)" in text and "git commit" in text
    assert "ewc_optimizer.lr=0.1" in text            # configurations in the tables
    assert "&quot;seed&quot;" in text or '"seed"' in text   # each configuration's config


def _chromium():
    for c in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(c)
        if p:
            return p
    return None


SENTINEL_HEAD = """<script>
window.addEventListener('error', function (e) {
  var what = e.message || (e.target && (e.target.src || e.target.href)) || 'resource';
  document.documentElement.setAttribute('data-ck-error', String(what));
}, true);
var _ce = console.error;
console.error = function () { document.documentElement.setAttribute('data-ck-console', Array.prototype.join.call(arguments, ' ')); };
</script>"""
SENTINEL_TAIL = """<script>
document.body.setAttribute('data-ck-figures', JSON.stringify(Array.prototype.map.call(
  document.querySelectorAll('figure.ck-figure'), function (f) {
    var el = f.querySelector('svg, img'); var r = el ? el.getBoundingClientRect() : {width: 0, height: 0};
    return [f.id, Math.round(r.width), Math.round(r.height)]; })));
</script>"""


def test_report_in_headless_chromium(report, tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium not installed (apt-get install -y chromium): browser test skipped")
    path, r = report
    base = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,2400"]
    # 1. the page as shipped: console messages logged to stderr must hold no errors
    shot = tmp_path / "shot.png"
    p = subprocess.run([chromium, *base, "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
                        f"file://{path}"], capture_output=True, text=True, timeout=120)
    console = [l for l in p.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    assert not console, "console messages:\n" + "\n".join(console)
    assert shot.exists(), p.stderr[-2000:]
    px = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert px.std() > 15, f"screenshot looks blank (pixel std {px.std():.1f})"
    # 2. a copy with error sentinels and a figure census, read back with --dump-dom
    text = open(path, encoding="utf-8").read()
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</title>", "</title>" + SENTINEL_HEAD, 1).replace("</body>", SENTINEL_TAIL + "</body>"),
                     encoding="utf-8")
    p = subprocess.run([chromium, *base, "--dump-dom", f"file://{probe}"], capture_output=True, text=True, timeout=120)
    dom = p.stdout
    root = re.search(r"<html[^>]*>", dom).group(0)          # the sentinels set attributes on <html>
    assert "data-ck-error" not in root, root
    assert "data-ck-console" not in root, root
    m = re.search(r"data-ck-figures=\"([^\"]*)\"", dom)
    assert m, "figure census missing from the DOM"
    figs = json.loads(m.group(1).replace("&quot;", '"'))
    assert [f[0] for f in figs] == [f"fig-{i}" for i in r["figures"]]
    for fid, w, h in figs:
        assert w > 200 and h > 100, f"{fid} rendered at {w}×{h}"


def test_real_quickstart_report(real_results, tmp_path):
    out = tmp_path / "quickstart.html"
    r = build(real_results["quickstart"], str(out))
    assert len(r["figures"]) >= 4
    assert os.path.getsize(out) < 5_000_000


def test_report_of_a_compression_study_draws_the_pareto_figure(real_results, tmp_path):
    """A compression results file written by the CLI (Experiments/sweeps/tiny_compression.json):
    the report holds the Pareto figure with a row per scenario, and an ordinary sweep's does not."""
    from continualkit import compression as C
    path = real_results["tiny_compression"]
    assert C.is_study(path) and not C.is_study(real_results["tiny_sweep"])
    assert not C.is_study(real_results["quickstart"]) and not C.is_study(real_results["prequential_habit"])
    r = build(path, str(tmp_path / "compression.html"))
    assert "compression_pareto" in r["figures"]
    text = open(r["path"], encoding="utf-8").read()
    assert "id='fig-compression_pareto'" in text and "data-width='page'" in text
    fig = C.figure(path)
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels == ["habit_drift\nACC (%)", "split_digits (domain)\nACC (%)"]
    pts = C.load_points(path)
    assert set(pts["variant"]) == {"dense", "magnitude_50", "early_exit", "low_rank_2", "dense+int8"}
    int8 = pts[pts["variant"] == "dense+int8"]
    dense = pts[(pts["variant"] == "dense") & (pts["seed"].isin(int8["seed"]))]
    assert len(int8) == 4 and (int8["stored_bytes"].to_numpy() < dense["stored_bytes"].to_numpy() / 2).all()
    assert "compression_pareto" not in build(real_results["tiny_sweep"], str(tmp_path / "sweep.html"))["figures"]
