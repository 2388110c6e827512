"""A self-contained HTML report of a results file: provenance, tables of grouped metrics (and
the experiment's own tables), every figure embedded (SVG inline, so it stays sharp and needs no
network), and the config of each configuration. No scripts, no external resources: it opens
offline in any browser."""
from __future__ import annotations

import base64
import html
import io
import json
import os
import tempfile

import h5py

from . import __version__
from . import figures as F
from . import tables as T
from .io import _json_attr, _str, load_summary, provenance

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;
margin-top:2rem}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
th,td{border-bottom:1px solid #e3e3e3;padding:.25rem .6rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f5f7fa}
.tablewrap{overflow-x:auto}
figure{margin:1rem 0}figure svg,figure img{max-width:100%;height:auto}
figure[data-width=page] svg,figure[data-width=page] img{width:100%}
figcaption{font-size:.85rem;color:#555}
dl.prov{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem;font-size:.9rem}
dl.prov dt{font-weight:600}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;font-size:.78rem}
details{margin:.3rem 0}summary{cursor:pointer}
.note{color:#555;font-size:.85rem}
"""


#: Figures (by id prefix) the report stretches to the page width.
WIDE_FIGURES = ("federation_rounds", "personalisation_gain", "compression_pareto")
FEDERATION_NOTE = (
    "Personal ACC: the model each phone predicts with, over its own experiences after the last round (mean over "
    "the evaluated clients); global ACC: the final global model on the same clients and experiences (— unless the "
    "whole model is shared); KiB / client: bytes up + down over the run, mean over clients; mJ / client: energy of "
    "the client's local training and transfers over the run; ε: after the last round at δ (— without DP noise); "
    "rounds / client: rounds whose aggregate got the client's update.")


def _table_html(df) -> str:
    if df.shape[1] == 0:
        return ""   # a note without a table (its heading says why)
    return '<div class="tablewrap">' + df.to_html(index=False, escape=True, border=0, na_rep="—") + "</div>"


def _svg_inline(fig, salt="") -> str:
    buf = io.StringIO()
    with F.plt.rc_context({"svg.hashsalt": f"ck-{salt}"}):  # unique ids across the inline SVGs
        fig.savefig(buf, format="svg", bbox_inches="tight")
    F.plt.close(fig)
    svg = buf.getvalue()
    start = svg.find("<svg")
    return svg[start:]


def _png_inline(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, bbox_inches="tight")
    F.plt.close(fig)
    return '<img alt="figure" src="data:image/png;base64,' + base64.b64encode(buf.getvalue()).decode() + '">'


def figure_list(path, df):
    """(id, caption, factory) of every figure that applies to the file."""
    ok = df[df["status"] == "completed"]
    out = []
    with h5py.File(path, "r") as f:
        has_matrix = any("accuracy_matrix" in f["runs"][r] for r in ok["run_id"])
        pop = [r for r in ok["run_id"] if "population" in f["runs"][r]]
        preq = any("prequential" in f["runs"][r] for r in ok["run_id"])
    confs = list(dict.fromkeys(ok["configuration"]))
    if has_matrix:
        for k, page in enumerate(F.pages(confs)):
            sfx = "" if len(confs) <= F.MAX_PANELS else f" ({k + 1})"
            out.append((f"heatmap{k + 1}", "Accuracy matrix R[i][j], mean over seeds" + sfx,
                        lambda page=page: F.accuracy_heatmap(path, page, df=df)))
            out.append((f"forgetting{k + 1}", "Accuracy on each experience over training (forgetting curves)" + sfx,
                        lambda page=page: F.forgetting_curves(path, page, df=df)))
    out.append(("metrics", "ACC, BWT and forgetting (mean, 95% CI over seeds)", lambda: F.metrics_vs_swept(path, df=df)))
    if preq:
        out.append(("prequential", "Prequential accuracy", lambda: F.prequential_curves(path, df=df)))
    for r in pop[:4]:
        out.append((f"population_{r}", "Population fan chart", lambda r=r: F.population_fan(path, r, df=df)))
    if ok["run_id"].size and F.is_federated(path, ok["run_id"]):
        # the federation's own figures first: they are what a federated file is about
        fed_figs = []
        fed_runs = F.federation_runs(path, df)
        fed = list(dict.fromkeys(fed_runs["configuration"]))
        for k, page in enumerate(F.pages(fed)):
            sfx = "" if len(fed) <= F.MAX_PANELS else f" ({k + 1})"
            fed_figs.append((f"federation_rounds{k + 1}",
                             "Federated runs: accuracy of the personal models (what each phone predicts with) and of "
                             "the global model over rounds, against the local-only reference; ε over rounds for the "
                             "DP configurations" + sfx,
                             lambda page=page: F.federation_rounds(path, page, df=df)))
        if F.local_only_configuration(fed_runs) is not None:      # gains need a local-only baseline
            fed_figs.append(("personalisation_gain",
                             "Personalisation gain per client: personal ACC minus the same client's ACC under "
                             "the local-only configuration (same seed and client id)",
                             lambda: F.personalisation_gain(path, df=df)))
        out = fed_figs + out
    from . import compression as C
    if C.is_study(path):
        out.append(("compression_pareto", "Compression Pareto study (continualkit pareto): ACC against training "
                    "energy, peak memory, model bytes and energy per prediction, one row per scenario. "
                    + C.NOTE, lambda: C.figure(path)))
    if len(confs) >= 2:
        acc = F.pareto_metric(ok)
        if ok["run_id"].size and F.is_federated(path, ok["run_id"]):
            out.append(("pareto_energy", "Accuracy against energy per client (local training and transfers)",
                        lambda: F.pareto(path, "joules_per_client", acc, df=F.federation_runs(path, df))))
        elif "energy_j" in ok and (ok["energy_j"] > 0).any():
            out.append(("pareto_energy", "Accuracy against training energy",
                        lambda: F.pareto(path, "energy_j", acc, df=df)))
        if "peak_memory_bytes" in ok and (ok["peak_memory_bytes"] > 0).any():
            out.append(("pareto_memory", "Accuracy against peak memory",
                        lambda: F.pareto(path, "peak_memory_bytes", acc, df=df)))
    return out


def _git_commit(path):
    """The commit recorded in the file, else None (the report says so rather than guessing)."""
    prov = provenance(path)
    return prov.get("git_commit")


def build(path, out_html, png=False) -> dict:
    """Write the report; returns {"figures": [ids], "path": out_html}."""
    df = load_summary(path)
    name = df.attrs.get("experiment_name") or os.path.basename(path)
    prov = provenance(path)
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>{html.escape(name)} — ContinualKit report</title><style>{CSS}</style></head><body>"]
    parts.append(f"<h1>{html.escape(name)}</h1>")
    if prov.get("experiment_description"):
        parts.append(f"<p>{html.escape(str(prov['experiment_description']))}</p>")
    # provenance
    items = [("results file", os.path.abspath(path)), ("toolkit", prov.get("toolkit", "")),
             ("toolkit version", prov.get("toolkit_version", "")), ("schema version", prov.get("schema_version", "")),
             ("git commit", _git_commit(path) or "not recorded in the file"),
             ("toolkit built from", (prov.get("toolkit_build_commit") or "not recorded in the file")
              + (" (modified)" if prov.get("toolkit_build_dirty") == 1 else "")),
             ("created (UTC)", prov.get("created_utc", "")), ("experiment file", prov.get("experiment_path", "")),
             ("runs", f"{len(df)} ({int((df['status'] == 'completed').sum())} completed)"),
             ("configurations", str(df["configuration"].nunique())),
             ("report by", f"continualkit {__version__}")]
    parts.append("<h2 id='provenance'>Provenance</h2><dl class='prov'>" + "".join(
        f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in items) + "</dl>")
    # tables
    parts.append("<h2 id='tables'>Metrics by configuration</h2>"
                 "<p class='note'>Mean ± sample std (n − 1) over seeds, 95 % Student-t interval, n seeds; "
                 "the numbers of <code>continual inspect</code>. Percent / percentage points.</p>")
    for title, t in T.experiment_tables(path, df=df):
        parts.append(f"<h3>{html.escape(title)}</h3>" + _table_html(t))
        if title.startswith("federation"):
            parts.append(f"<p class='note'>{html.escape(FEDERATION_NOTE)}</p>")
    # figures
    parts.append("<h2 id='figures'>Figures</h2>")
    ids = []
    for fid, caption, make in figure_list(path, df):
        try:
            fig = make()
        except (ValueError, KeyError) as e:
            parts.append(f"<p class='note'>{html.escape(caption)}: not drawn ({html.escape(str(e))})</p>")
            continue
        body = _png_inline(fig) if png else _svg_inline(fig, fid)
        wide = " data-width='page'" if fid.startswith(WIDE_FIGURES) else ""   # small text: drawn at page width
        parts.append(f"<figure class='ck-figure' id='fig-{html.escape(fid)}'{wide}>{body}"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        ids.append(fid)
    # configs
    parts.append("<h2 id='configs'>Configuration of each configuration</h2>"
                 "<p class='note'>The resolved config of the first run of each configuration "
                 "(its other runs differ in the seed only).</p>")
    with h5py.File(path, "r") as f:
        for conf, g in df.groupby("configuration", sort=False):
            rid = g.sort_values("sweep_index")["run_id"].iloc[0]
            cfg = _json_attr(f["runs"][rid].attrs, "config_json", {})
            seeds = ", ".join(str(s) for s in g["seed"])
            parts.append(f"<details><summary>{html.escape(conf)} — seeds {html.escape(seeds)}</summary>"
                         f"<pre>{html.escape(json.dumps(cfg, indent=2, sort_keys=True))}</pre></details>")
        exp = _str(f.attrs.get("experiment_json", ""))
    if exp:
        parts.append("<details><summary>experiment file as written</summary>"
                     f"<pre>{html.escape(exp)}</pre></details>")
    parts.append("</body></html>")
    os.makedirs(os.path.dirname(os.path.abspath(out_html)) or ".", exist_ok=True)
    tmp = tempfile.NamedTemporaryFile("w", delete=False, dir=os.path.dirname(os.path.abspath(out_html)),
                                      suffix=".tmp", encoding="utf-8")
    with tmp:
        tmp.write("\n".join(parts))
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, out_html)
    return {"figures": ids, "path": out_html}
