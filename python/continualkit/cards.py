"""Reproduction cards (issue 24): one markdown card per registered strategy in
docs/reproductions/, generated from results files so they can be regenerated.

Each card: the paper, the setting of the published number we compare with, that number, ours
(mean ± std over n seeds at each step budget, from `Experiments/hsu_table.json`'s results and, when
given, MNIST-1D's), the protocol differences, and a verdict computed by a stated rule:

- "reproduced": the published mean lies inside our 95 % CI (Student t over our seeds), or a Welch
  test against the paper's mean ± std over its 10 runs does not reject at α = 0.05
  (continualkit.verdicts);
- "not reproduced (gap; p)": neither; the card's "protocol differences" says what differs.
Methods without a comparable published number get "no comparable published number".

Methods outside Hsu et al.'s protocol (HAT, SLDA, the parameter-efficient methods, QAT) are
measured by their own experiments: a card's `"other"` entry names the experiment (the stem of a
results file passed with `--other`, e.g. results/architectural.h5) and the variants to show,
its baseline rows included; those numbers are ours only and get no verdict.

Usage: continualkit cards results/hsu_table.h5 [--mnist1d results/mnist1d.h5]
                          [--other results/architectural.h5 results/peft.h5 ...] -o docs/reproductions
"""
from __future__ import annotations

import json
import math
import os
from importlib import resources

import numpy as np

from .io import load_summary
from .tables import _budgets, paper_table

SETTINGS = ("task", "domain", "class")
HSU_RUNS = 10   # Hsu et al. 2018 Table 2: mean ± std over 10 runs
HEAD = {"task": "task-IL", "domain": "domain-IL", "class": "class-IL"}


def facts() -> dict:
    return json.loads(resources.files("continualkit").joinpath("data/reproductions.json").read_text("utf-8"))


def _stats(df, variant, budget):
    part = df[(df["variant"] == variant) & (df["status"] == "completed")]
    if budget is not None and "steps_per_experience" in part.columns:
        part = part[part["steps_per_experience"].round() == budget]
    acc = part["acc"].to_numpy(dtype=float) * 100
    acc = acc[np.isfinite(acc)]
    if len(acc) == 0:
        return None
    return {"mean": float(acc.mean()), "std": float(acc.std(ddof=1)) if len(acc) > 1 else math.nan, "n": int(len(acc))}


def verdict(ours, paper, ours_naive=None, paper_naive=None) -> str:
    """The card's verdict by the strict rule of continualkit.verdicts: "reproduced" only if the
    published mean lies inside our 95 % CI or a Welch test against the paper's mean ± std over
    Hsu et al.'s 10 runs does not reject at 0.05. (The naive arguments are kept for callers; the
    orderings against naive are listed separately.)"""
    if ours is None or paper is None:
        return "no comparable published number"
    from .verdicts import ALPHA, welch_p
    from .stats import t975
    n, mean, std = ours["n"], ours["mean"], ours["std"]
    if n < 2 or not np.isfinite(std):
        return "too few seeds"
    half = t975(n - 1) * std / math.sqrt(n)
    p = welch_p(mean, std, n, paper[0], paper[1], HSU_RUNS)
    if mean - half <= paper[0] <= mean + half or (np.isfinite(p) and p >= ALPHA):
        return "reproduced"
    return f"not reproduced ({mean - paper[0]:+.2f} pts; Welch p = {p:.2g})"


def _fmt(st):
    if st is None:
        return "—"
    return f"{st['mean']:.2f} ± {st['std']:.2f} (n={st['n']})" if np.isfinite(st["std"]) else f"{st['mean']:.2f} (n={st['n']})"


def _other_table(df, variants) -> list[str]:
    """Rows of a card's own experiment: ACC, BWT and forgetting (mean ± std over seeds), the
    budget and whether task labels were used at test time, per variant."""
    int8 = "model_bytes_int8" in df.columns and bool((df["model_bytes_int8"].fillna(0) > 0).any())
    rows = ["| variant | n | steps/exp | task labels | ACC % | BWT pts | forgetting pts |" + (" int8 ACC % |" if int8 else ""),
            "|---|---:|---:|---|---:|---:|---:|" + ("---:|" if int8 else "")]
    for v in variants:
        part = df[(df["variant"] == v) & (df["status"] == "completed")]
        if part.empty:
            rows.append(f"| {v} | 0 | — | — | not run | — | — |" + (" — |" if int8 else ""))
            continue

        def ms(col, scale=100.0):
            if col not in part.columns:
                return "—"
            x = part[col].to_numpy(dtype=float) * scale
            x = x[np.isfinite(x)]
            if len(x) == 0:
                return "—"
            return f"{x.mean():.2f} ± {x.std(ddof=1):.2f}" if len(x) > 1 else f"{x.mean():.2f}"
        steps = f"{part['steps_per_experience'].mean():.0f}" if "steps_per_experience" in part.columns else "—"
        labels = "—"
        if "uses_task_labels" in part.columns:
            labels = "yes" if bool(part["uses_task_labels"].astype(bool).all()) else "no"
        rows.append(f"| {v} | {len(part)} | {steps} | {labels} | {ms('acc')} | {ms('bwt')} | {ms('forgetting')} |"
                    + (f" {ms('acc_int8')} |" if int8 else ""))
    return rows


def cards(hsu_path: str, out_dir: str, mnist1d_path: str | None = None, other_paths: list[str] | None = None) -> list[str]:
    """Writes one card per strategy of `facts()` and an index README.md; returns the paths."""
    others = {os.path.splitext(os.path.basename(p))[0]: (p, load_summary(p)) for p in (other_paths or [])}
    if hsu_path is None:   # no results yet: the cards' paper and protocol parts, numbers pending
        import pandas as pd
        df = pd.DataFrame({"variant": [], "status": [], "acc": []})
        budgets = []
    else:
        df = load_summary(hsu_path)
        budgets = [b for b in _budgets(df)]
    paper = {r["variant"]: r for r in paper_table()["rows"]}
    m1 = load_summary(mnist1d_path) if mnist1d_path else None
    os.makedirs(out_dir, exist_ok=True)
    written, index = [], []
    command = f"continualkit cards {hsu_path or 'results/hsu_table.h5'}" + (f" --mnist1d {mnist1d_path}" if mnist1d_path else "") \
        + (" --other " + " ".join(other_paths) if other_paths else "") + f" -o {out_dir}"
    for card in facts()["cards"]:
        lines = [f"# {card['title']} (`{card['type']}`)", "",
                 f"*Generated by `{command}` from the results files; edit "
                 "python/continualkit/data/reproductions.json, not this file.*", "",
                 f"**Paper.** {card['paper']}", ""]
        verdicts = []
        if card["variants"]:
            lines += ["**Split digits (scikit-learn 8×8), `Experiments/hsu_table.json`** — ACC %, mean ± std over seeds; "
                      "the paper's column is split MNIST (Hsu et al. 2018, Table 2, 10 runs) where it has the row.", ""]
            head = "| variant | budget (steps/exp) | " + " | ".join(f"{HEAD[s]} ours | {HEAD[s]} paper | verdict" for s in SETTINGS) + " |"
            lines += [head, "|" + "---|" * (2 + 3 * len(SETTINGS))]
            for v in card["variants"]:
                for b in budgets:
                    cells = [v, "—" if b is None else str(b)]
                    for s in SETTINGS:
                        ours = _stats(df, f"{v}_{s}", b)
                        p = (paper.get(v) or {}).get(s) if v in card.get("hsu", []) else None
                        naive = _stats(df, f"naive_adam_{s}", b)
                        pn = paper["naive_adam"][s]
                        verd = verdict(ours, p, naive, pn) if ours is not None else "—"
                        if ours is not None and p is not None:
                            verdicts.append(f"{HEAD[s]}, {b} steps: {verd}")
                        cells += [_fmt(ours), f"{p[0]:.2f} ± {p[1]:.2f}" if p else "—", verd if p else "—"]
                    lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
            if m1 is not None:
                lines += ["**MNIST-1D, `Experiments/mnist1d.json`** (no published number: ours only) — ACC %:", "",
                          "| variant | " + " | ".join(HEAD[s] for s in SETTINGS) + " | permuted |", "|---|---|---|---|---|"]
                for v in card["variants"]:
                    row = [v] + [_fmt(_stats(m1, f"{v}_{s}", None)) for s in SETTINGS] + [_fmt(_stats(m1, f"{v}_permuted", None))]
                    lines.append("| " + " | ".join(row) + " |")
                lines.append("")
        other = card.get("other")
        if other:
            name = other["results"]
            lines += [f"**Ours, `Experiments/{name}.json`** (`continual sweep Experiments/{name}.json`; {other.get('about', 'no published number on this protocol')}) — mean ± std over seeds:", ""]
            if name in others:
                lines += _other_table(others[name][1], other["variants"])
            else:
                lines.append(f"*Not measured: pass results/{name}.h5 with `--other`.*")
            lines.append("")
        lines += [f"**Protocol differences.** {card['differences']}", ""]
        if hsu_path is None:
            overall = "pending: the results of Experiments/hsu_table.json at 375 and 60 steps per experience were not measured when this card was written; regenerate with the command above"
        elif not verdicts:
            overall = "no comparable published number" if not card.get("hsu") else "not run"
            if other and other["results"] in others:
                overall += f"; measured on Experiments/{other['results']}.json above"
        else:
            overall = "; ".join(verdicts)
        lines += [f"**Verdict** (rule: python/continualkit/cards.py). {overall}", ""]
        path = os.path.join(out_dir, f"{card['type']}.md")
        with open(path, "w") as f:
            f.write("\n".join(lines))
        written.append(path)
        short = ("no comparable published number" + (f"; ours: `{other['results']}.json`" if other and other["results"] in others else "")) if not verdicts else \
            f"{sum(v.endswith(': reproduced') for v in verdicts)} reproduced, " \
            f"{sum('not reproduced' in v for v in verdicts)} not reproduced"
        index.append(f"| [`{card['type']}`]({card['type']}.md) | {card['title']} | {short} |")
    readme = ["# Reproduction cards", "",
              f"One card per registered strategy, generated by `{command}`.",
              "Verdicts compare with Hsu et al. (2018) Table 2 (split MNIST) where the paper has the row; "
              "the rule is in python/continualkit/cards.py. Our benchmark is split digits (scikit-learn 8×8), "
              "not MNIST: see docs/hsu-table.md for the budget and the protocol.", "",
              "| strategy | method | verdicts over (setting, budget) cells |", "|---|---|---|"] + index + [""]
    p = os.path.join(out_dir, "README.md")
    with open(p, "w") as f:
        f.write("\n".join(readme))
    return written + [p]
