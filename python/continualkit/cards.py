"""Reproduction cards (issues 24 and 40): one markdown card per registered strategy in
docs/reproductions/, generated from results files so they can be regenerated.

Each card gives:
- the paper and the setting of the published number we compare with (Hsu et al. 2018 Table 2,
  shipped as data/hsu2018_table2.json), that number, and ours (ACC %, mean ± std over n seeds at
  each step budget, from the results of `Experiments/hsu_table.json` — or of any file whose
  variants are named `{method}_{setting}`, such as `Experiments/mnist_split.json`);
- a verdict per (setting, budget) by the strict rule of continualkit.verdicts: "reproduced" only if
  the published mean lies inside our 95 % CI (Student t, n − 1 df) or a Welch test against the
  paper's mean ± std over its 10 runs does not reject at α = 0.05; otherwise "not reproduced"
  with the gap, how far the paper's mean lies outside our CI and the Welch p; "too few seeds"
  below 2 seeds;
- the orderings: every pair of Table 2 rows involving the card's methods, in the paper's order,
  checked on our runs at the file's largest budget (holds / holds (not significant) / fails (not
  significant) / fails / not run), each with both numbers; papers whose numbers are not recorded
  (data/orderings.json: van de Ven et al. 2022, Buzzega et al. 2020) are named as not checked;
- the protocol differences: data size, network, optimizer, steps, strengths, memory and seeds, ours
  read from the run configurations stored in the results file (`config_json`, the per-experience
  training and test set sizes), the paper's from data/orderings.json, then the card's own notes.

Methods without a comparable published number get "no comparable published number". Methods
outside Hsu et al.'s protocol (HAT, SLDA, the parameter-efficient methods, QAT) are measured by
their own experiments: a card's `"other"` entry names the experiment (the stem of a results file
passed with `--other`, `--mnist1d` or `--permuted`, e.g. results/architectural.h5) and the variants to show, its
baseline rows included; `"other"` may be a list of such entries, one table each (a check of a
method's row, and the table rows it is read beside). MNIST-1D (`--mnist1d`) and permuted MNIST-784
(`--permuted`, its files read as one) get one row per card variant and a column per setting.
Those numbers are ours only and get no verdict.

Usage: continualkit cards results/hsu_table.h5 [--mnist1d results/mnist1d.h5]
                          [--permuted results/mnist_permuted.h5 results/mnist_permuted_task_class.h5]
                          [--other results/architectural.h5 results/peft.h5 ...] -o docs/reproductions
"""
from __future__ import annotations

import json
import math
import os
import re
from importlib import resources

import numpy as np
import pandas as pd

from . import verdicts as V
from .io import experiment_json, load_summary
from .card_protocol import SETTINGS, _data_text, _protocol_block, run_protocol  # noqa: F401 (run_protocol: re-exported)
from .tables import _budgets, paper_table

HSU_RUNS = 10   # Hsu et al. 2018 Table 2: mean ± std over 10 runs
HEAD = {s: V.SETTING_NAMES[s] for s in SETTINGS}
# The memory of Hsu et al.'s Table 2 rows (docs/hsu-table.md): a sized `_paper` row
# (`naive_rehearsal_4400_paper`) is judged against the paper's number only at that size.
PAPER_MEMORY = {"naive_rehearsal": 1100, "gem": 4400}


def facts() -> dict:
    return json.loads(resources.files("continualkit").joinpath("data/reproductions.json").read_text("utf-8"))


def _stats(df, variant, budget):
    """{mean, std, n, values} of our ACC % over the completed seeds of `variant` at `budget`."""
    acc = V.seed_values(df, variant, budget)
    if not acc:
        return None
    return {"mean": float(np.mean(acc)), "std": float(np.std(acc, ddof=1)) if len(acc) > 1 else math.nan,
            "n": len(acc), "values": acc}


def verdict(ours, paper, ours_naive=None, paper_naive=None) -> str:
    """The card's verdict by the strict rule (continualkit.verdicts.compare): `ours` our seed
    values (or a `_stats` dict), `paper` (mean, std) over Hsu et al.'s 10 runs. (The naive
    arguments are kept for callers; the orderings are listed separately.)"""
    if ours is None or paper is None:
        return "no comparable published number"
    values = ours["values"] if isinstance(ours, dict) else ours
    c = V.compare(values, paper[0], paper[1], HSU_RUNS)
    if c["verdict"] == "too few seeds":
        return f"too few seeds (n = {c['n']})"
    if c["verdict"] == "reproduced":
        return "reproduced"
    return (f"not reproduced ({c['gap']:+.2f} pts; {c['outside']:.2f} pts outside our 95 % CI "
            f"[{c['ci_low']:.2f}, {c['ci_high']:.2f}]; Welch p = {c['p']:.2g})")


def _fmt(st):
    if st is None:
        return "—"
    return f"{st['mean']:.2f} ± {st['std']:.2f} (n={st['n']})" if np.isfinite(st["std"]) else f"{st['mean']:.2f} (n={st['n']})"


def _ms(part, col, scale=100.0):
    if col not in part.columns:
        return "—"
    x = part[col].to_numpy(dtype=float) * scale
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return "—"
    return f"{x.mean():.2f} ± {x.std(ddof=1):.2f}" if len(x) > 1 else f"{x.mean():.2f}"


def _other_table(df, variants) -> list[str]:
    """Rows of a card's own experiment: ACC, BWT and forgetting (mean ± std over seeds), the
    budget and whether task labels were used at test time, per variant."""
    int8 = "model_bytes_int8" in df.columns and bool((df["model_bytes_int8"].fillna(0) > 0).any())
    rows = ["| variant | n | steps/exp | task labels | ACC % | BWT pts | forgetting pts |" + (" int8 ACC % |" if int8 else ""),
            "|---|---:|---:|---|---:|---:|---:|" + ("---:|" if int8 else "")]
    for v in variants:
        runs = df[df["variant"] == v]
        part = runs[runs["status"] == "completed"]
        n = f"{len(part)}" if len(part) == len(runs) else f"{len(part)}/{len(runs)}"   # as `summary` counts
        if part.empty:
            # Ran and diverged or failed is a result, not "not run": say which, of how many.
            what = ", ".join(f"{k} ({c} of {len(runs)})" for k, c in runs["status"].value_counts().items())
            rows.append(f"| {v} | {n} | — | — | {what or 'not run'} | — | — |" + (" — |" if int8 else ""))
            continue
        steps = f"{part['steps_per_experience'].mean():.0f}" if "steps_per_experience" in part.columns else "—"
        labels = "—"
        if "uses_task_labels" in part.columns:
            labels = "yes" if bool(part["uses_task_labels"].astype(bool).all()) else "no"
        rows.append(f"| {v} | {n} | {steps} | {labels} | {_ms(part, 'acc')} | {_ms(part, 'bwt')} | "
                    f"{_ms(part, 'forgetting')} |" + (f" {_ms(part, 'acc_int8')} |" if int8 else ""))
    return rows


# ----------------------------------------------------------------------------- blocks
def _ordering_budget(df, budgets):
    """The budget the orderings are checked at: the largest when variants were run at several,
    None (all runs) when each variant has one (e.g. epoch budgets, where joint takes more steps)."""
    if not budgets or budgets[0] is None or "variant" not in df.columns:
        return None
    per_variant = df.groupby("variant")["steps_per_experience"].apply(lambda x: x.round().nunique())
    return budgets[0] if (per_variant > 1).any() else None


def _paper_value_variants(df, v) -> list[str]:
    """The rows of `df` run with a paper's own values for method `v` (no tuning): `{v}_paper` and
    sized ones such as `{v}_1100_paper` (Experiments/mnist_split.json), in file order."""
    names = df["variant"].astype(str).unique() if "variant" in df.columns else []
    pat = re.compile(rf"^{re.escape(v)}(_\d+)?_paper_({'|'.join(SETTINGS)})$")
    return list(dict.fromkeys(n[: n.rindex("_")] for n in names if pat.match(n)))


def _steps_text(df, v) -> str:
    """The steps per experience row `v` ran at over its settings ("28", or "28 / 77"), "—" if none."""
    if "steps_per_experience" not in df.columns:
        return "—"
    part = df[df["variant"].astype(str).isin([f"{v}_{s}" for s in SETTINGS])]["steps_per_experience"].dropna()
    steps = sorted({int(round(x)) for x in part})
    return " / ".join(str(x) for x in steps) or "—"


def _judged(v, base, card) -> bool:
    """Whether row `v` (method `base`) is compared with the paper's number: the method has a
    Table 2 row, and a sized `_paper` row has the paper's memory size."""
    if base not in card.get("hsu", []):
        return False
    size = re.fullmatch(rf"{re.escape(base)}_(\d+)_paper", v)
    return size is None or int(size.group(1)) == PAPER_MEMORY.get(base)


def _hsu_block(df, card, budgets, paper_rows, source) -> tuple[list[str], list[str]]:
    """The table of our numbers beside Hsu et al.'s, per budget and setting, and the verdicts.
    Rows run with Hsu's own values (`_paper`) follow their method's row and are judged too."""
    lines = [f"**{source}** — ACC %, mean ± std over seeds; "
             "the paper's column is split MNIST (Hsu et al. 2018, Table 2, 10 runs) where it has the row; "
             "a `_paper` row uses Hsu et al.'s own strengths and memory sizes, the others the values the "
             "file gives or its tuning chose (see the file's /tuning group).", ""]
    head = "| variant | budget (steps/exp) | " + " | ".join(f"{HEAD[s]} ours | {HEAD[s]} paper | verdict" for s in SETTINGS) + " |"
    lines += [head, "|" + "---|" * (2 + 3 * len(SETTINGS))]
    verdicts = []
    rows = [(v, v) for v in card["variants"]]
    rows = [r for v, base in rows for r in [(v, base)] + [(pv, base) for pv in _paper_value_variants(df, v)]]
    for v, base in rows:
        for b in budgets:
            cells = [v, _steps_text(df, v) if b is None else str(b)]
            for s in SETTINGS:
                ours = _stats(df, f"{v}_{s}", b)
                p = (paper_rows.get(base) or {}).get(s) if _judged(v, base, card) else None
                verd = verdict(ours, p) if ours is not None and p else "—"
                if ours is not None and p:
                    verdicts.append(f"{v} {HEAD[s]}" + (f", {b} steps" if b is not None else "") + f": {verd}")
                cells += [_fmt(ours), f"{p[0]:.2f} ± {p[1]:.2f}" if p else "—", verd]
            lines.append("| " + " | ".join(cells) + " |")
    return lines + [""], verdicts


def _orderings_block(df, card, budget) -> tuple[list[str], str]:
    """Every ordering of the papers of data/orderings.json involving the card's methods."""
    mine = set(card["variants"])
    lines, summaries = [], []
    for paper in V.papers(benchmark=V.SPLIT):   # the cards are of split MNIST results
        if not any(r["values"] for r in paper["rows"]):
            named = [m["method"] for m in paper.get("methods", []) if m["variant"] in mine]
            if named:
                lines += [f"*{paper['title']}* ({', '.join(named)}): not checked — {paper['status']}.", ""]
            continue
        missing = paper.get("missing") or {}
        named = [m["method"] for m in missing.get("methods", []) if m["variant"] in mine]
        if named:
            lines += [f"*{paper['title']}* ({', '.join(named)}): not checked — {missing['reason']}.", ""]
        t = V.check_orderings(df, paper, budget=budget)
        base = {r["method"]: r["variant"] for r in paper["rows"]}
        t = t[t["higher"].map(base).isin(mine) | t["lower"].map(base).isin(mine)]
        if t.empty:
            continue
        summary = V.counts(t)
        summaries.append(f"{paper.get('short', paper['key'])}: {summary}")
        at = f" at {budget} steps per experience" if budget is not None else ""
        lines += [f"**Orderings, {paper['title']}**{at} (continualkit.verdicts; paper: mean ± its spread; ours: mean ± "
                  f"95 % CI half-width, n; Welch p on our seeds; the paper's ties counted, not listed) — {summary}:", "",
                  "| setting | pair (paper's order) | paper | ours | verdict | p |", "|---|---|---|---|---|---|"]
        lines += [f"| {HEAD.get(r.setting, r.setting)} | {r.pair} | {r.paper_text} | {r.ours_text} | {r.verdict} | "
                  f"{V._p(r.p)} |" for r in t.itertuples() if r.verdict != "paper tie"]
        lines.append("")
    return lines, "; ".join(summaries)


def _card(card, ctx) -> tuple[list[str], list[str], str]:
    """One card's lines, its verdicts and its orderings summary."""
    df, budgets, paper_rows = ctx["df"], ctx["budgets"], ctx["paper_rows"]
    lines = [f"# {card['title']} (`{card['type']}`)", "",
             f"*Generated by `{ctx['command']}` from the results files; edit "
             "python/continualkit/data/reproductions.json (and orderings.json), not this file.*", "",
             f"**Paper.** {card['paper']}", ""]
    verdicts, summary = [], ""
    if card["variants"]:
        block, verdicts = _hsu_block(df, card, budgets, paper_rows, ctx["source"])
        lines += block
        if ctx["mnist1d"] is not None:
            lines += _ours_block("MNIST-1D", [ctx["mnist1d_name"]], ctx["mnist1d"], card["variants"])
        if ctx["permuted"] is not None:
            lines += _ours_block("Permuted MNIST-784", [name for name, _ in ctx["permuted_files"]], ctx["permuted"],
                                 card["variants"])
        block, summary = _orderings_block(df, card, _ordering_budget(df, budgets))
        lines += block
    for other in _others(card):
        name = other["results"]
        lines += [f"**Ours, `Experiments/{name}.json`** (`continual sweep Experiments/{name}.json`; "
                  f"{other.get('about', 'no published number on this protocol')}) — mean ± std over seeds:", ""]
        lines += _other_table(ctx["others"][name][1], other["variants"]) if name in ctx["others"] else \
            [f"*Not measured: pass results/{name}.h5 with `--other`.*"]
        lines.append("")
    lines += _protocol_block(ctx["path"], df, card)
    return lines, verdicts, summary


def _ours_block(title, names, df, variants) -> list[str]:
    """One row per card variant, one column per setting (`{variant}_{setting}` in `df`): a stream
    with no published number, ours only."""
    files = ", ".join(f"`Experiments/{n}.json`" for n in names)
    lines = [f"**{title}, {files}** (no published number: ours only) — ACC %:", "",
             "| variant | " + " | ".join(HEAD[s] for s in SETTINGS) + " |", "|---|" + "---|" * len(SETTINGS)]
    lines += ["| " + " | ".join([v] + [_fmt(_stats(df, f"{v}_{s}", None)) for s in SETTINGS]) + " |" for v in variants]
    return lines + [""]


def _others(card) -> list[dict]:
    """A card's own experiments: `"other"` is one entry or a list of them (e.g. a check of the
    method's row, and the table rows it is read beside)."""
    other = card.get("other") or []
    return [other] if isinstance(other, dict) else list(other)


def _measured_others(card, ctx) -> list[str]:
    """The experiments (stems) holding the card's rows: the benchmark file, MNIST-1D and the
    permuted files where a card variant ran, then its own `"other"` files that were passed."""
    wanted = {f"{v}_{s}" for v in card["variants"] for s in SETTINGS}

    def ran(df):
        return df is not None and not wanted.isdisjoint(df["variant"])
    stems = [ctx["name"]] if ctx["path"] is not None and ran(ctx["df"]) else []
    stems += [ctx["mnist1d_name"]] if ran(ctx["mnist1d"]) else []
    stems += [name for name, df in ctx["permuted_files"] if ran(df)]
    return stems + [o["results"] for o in _others(card) if o["results"] in ctx["others"] and o["results"] not in stems]


def _overall(card, ctx, verdicts, summary) -> str:
    if ctx["path"] is None:
        return ("pending: the results of Experiments/hsu_table.json were not measured when this card was written; "
                "regenerate with the command above")
    if not verdicts:
        overall = "no comparable published number" if not card.get("hsu") else "not run"
        measured = _measured_others(card, ctx)
        if measured:
            overall += "; measured on " + ", ".join(f"Experiments/{m}.json" for m in measured) + " above"
    else:
        overall = "; ".join(verdicts)
    return overall + (f". Orderings: {summary}" if summary else "")


def _streams(mnist1d_path, other_paths, permuted_paths) -> dict:
    """The card context's other files: MNIST-1D, the permuted files (each, and read as one) and the
    files `"other"` entries name — which may also be the --mnist1d or a --permuted file."""
    # Each file read once, keyed by its stem (the name an "other" entry gives).
    others = {os.path.splitext(os.path.basename(p))[0]: (p, load_summary(p))
              for p in (other_paths or []) + ([mnist1d_path] if mnist1d_path else []) + (permuted_paths or [])}
    summary = {p: df for p, df in others.values()}
    permuted = [(experiment_json(p).get("name", os.path.splitext(os.path.basename(p))[0]), summary[p])
                for p in permuted_paths or []]
    seen = {}
    for (name, df), path in zip(permuted, permuted_paths or []):
        for v in set(df["variant"]):
            if v in seen:   # pooled, its seeds would count twice
                raise ValueError(f"variant {v} is in two --permuted files ({seen[v]} and {path}): pass each once")
            seen[v] = path
    return {"mnist1d": summary[mnist1d_path] if mnist1d_path else None,
            "mnist1d_name": experiment_json(mnist1d_path).get("name", "mnist1d") if mnist1d_path else None,
            "permuted_files": permuted,
            "permuted": pd.concat([df for _, df in permuted]) if permuted else None, "others": others}


def cards(hsu_path: str, out_dir: str, mnist1d_path: str | None = None, other_paths: list[str] | None = None,
          permuted_paths: list[str] | None = None) -> list[str]:
    """Writes one card per strategy of `facts()` and an index README.md; returns the paths.
    `permuted_paths`: the permuted MNIST-784 files (domain-IL; task- and class-IL), read as one."""
    df = load_summary(hsu_path) if hsu_path is not None else pd.DataFrame({"variant": [], "status": [], "acc": []})
    budgets = _budgets(df) if hsu_path is not None else []
    # A file whose variants each ran at one budget (an epoch budget: joint's steps grow with the
    # union) is shown one row per variant, at its own steps; a sweep over budgets one per budget.
    if budgets and _ordering_budget(df, budgets) is None:
        budgets = [None]
    ctx = {"path": hsu_path, "df": df, "budgets": budgets, "paper_rows": {r["variant"]: r for r in paper_table()["rows"]},
           "name": experiment_json(hsu_path).get("name", "?") if hsu_path is not None else None}
    ctx.update(_streams(mnist1d_path, other_paths, permuted_paths))
    ctx["source"] = "Split digits (scikit-learn 8×8), `Experiments/hsu_table.json`"
    if hsu_path is not None and ctx["name"] != "hsu_table":
        ctx["source"] = f"Ours, `{ctx['name']}` ({os.path.basename(hsu_path)}: {_data_text(hsu_path, df)})"
    ctx["command"] = f"continualkit cards {hsu_path or 'results/hsu_table.h5'}" + \
        (f" --mnist1d {mnist1d_path}" if mnist1d_path else "") + \
        (" --permuted " + " ".join(permuted_paths) if permuted_paths else "") + \
        (" --other " + " ".join(other_paths) if other_paths else "") + \
        f" -o {out_dir}"
    os.makedirs(out_dir, exist_ok=True)
    written, index = [], []
    for card in facts()["cards"]:
        lines, verdicts, summary = _card(card, ctx)
        lines += [f"**Verdict** (strict rule: python/continualkit/verdicts.py). {_overall(card, ctx, verdicts, summary)}", ""]
        path = os.path.join(out_dir, f"{card['type']}.md")
        with open(path, "w") as f:
            f.write("\n".join(lines))
        written.append(path)
        measured = _measured_others(card, ctx)
        short = ("not run" if card.get("hsu") else "no comparable published number"
                 + ("; ours: " + ", ".join(f"`{m}.json`" for m in measured) if measured else "")) \
            if not verdicts else f"{sum(v.endswith(': reproduced') for v in verdicts)} reproduced, " \
            f"{sum('not reproduced' in v for v in verdicts)} not reproduced"
        index.append(f"| [`{card['type']}`]({card['type']}.md) | {card['title']} | {short} | {summary or '—'} |")
    readme = ["# Reproduction cards", "", f"One card per registered strategy, generated by `{ctx['command']}`.",
              "Verdicts compare with Hsu et al. (2018) Table 2 (split MNIST) where the paper has the row, by the strict "
              "rule of python/continualkit/verdicts.py (the published mean inside our 95 % CI, or a Welch test at "
              "0.05 that does not reject); orderings are every pair of rows a paper of python/continualkit/data/orderings.json "
              "reports in a setting (Hsu et al. 2018 Table 2; van de Ven et al. 2022's split MNIST, read off the authors' "
              "figure) involving the card's methods. Our benchmark is the first file named in the command: see "
              "docs/mnist-tables.md (split MNIST-784) and docs/hsu-table.md (8×8 digits) for the budget and the protocol. "
              "A card's rows on split MNIST-1D (`--mnist1d`) and permuted MNIST-784 (`--permuted`, docs/mnist-tables.md) "
              "follow, ours only: no published number is compared there.", "",
              "| strategy | method | verdicts over (setting, budget) cells | orderings (per paper) |", "|---|---|---|---|"] \
        + index + [""]
    p = os.path.join(out_dir, "README.md")
    with open(p, "w") as f:
        f.write("\n".join(readme))
    return written + [p]
