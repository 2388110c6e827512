"""The strict rule for comparing our numbers with a paper's (DESIGN.md "Comparisons",
docs/mnist-tables.md), implemented once and used by the tables (`tables.hsu_table(verdicts=True)`,
Experiments/tools/mnist_table.py) and the reproduction cards (`cards.py`).

A published mean against our seed values (ACC %, one value per seed):

- **reproduced** when the published mean lies inside our 95 % confidence interval (Student t,
  n − 1 degrees of freedom, from our seeds: mean ± t(0.975, n − 1)·s/√n), or — where the paper
  gives its spread and its number of runs — a Welch t-test of our seeds against the paper's
  mean ± std over its runs does not reject equal means at α = 0.05;
- **not reproduced** otherwise; the explanation gives our mean, our interval, the gap (ours −
  paper) and how far the published mean lies outside our interval;
- **too few seeds** when we have fewer than 2 (no interval, no test).

An ordering a paper reports (its mean of A above its mean of B) is checked on our seeds of the two
variants with a Welch test at 0.05: **holds** (our means in the same order, the test rejects),
**holds (not significant)**, **fails** (the other order, the test rejects) and **fails (not
significant)** (the other order or equal means, without significance). A variant missing from the
results file is **not run**, a paper's method without a counterpart here **no counterpart**, a pair
the paper reports as equal **paper tie** (for numbers read off a figure, `"pairs": "significant"`:
also a pair the paper's own spread does not separate); none of them is dropped. Every listed ordering prints both
numbers: the paper's (mean ± its spread) and ours (mean ± the half-width of our 95 % CI, n).

The pairs come from data/orderings.json (`papers()`): per paper, its rows with numbers per setting
(Hsu et al. 2018 Table 2 from data/hsu2018_table2.json) mapped to our variant names; every pair of
rows with numbers in one setting (and one buffer group) is an ordering the paper reports.
`orderings_markdown` writes the "Orderings" section of a docs page (pair, paper, ours, verdict).
"""
from __future__ import annotations

import itertools
import json
import math
from importlib import resources

import pandas as pd
from scipy import stats as _st

from .stats import seed_stats

ALPHA = 0.05
SETTING_NAMES = {"task": "task-IL", "domain": "domain-IL", "class": "class-IL", "permuted": "permuted"}
TUNED = "{variant}_{setting}"            # our variant names: naive_adam_class, ewc_task, ...
PAPER_VALUES = "{variant}_paper_{setting}"  # the rows run with a paper's own hyperparameters


# ----------------------------------------------------------------------------- the rule
def welch_p(mean_a, std_a, n_a, mean_b, std_b, n_b) -> float:
    """Two-sided p-value of Welch's t-test from summary statistics (NaN when undefined)."""
    if n_a is None or n_b is None or n_a < 2 or n_b < 2 or not all(map(math.isfinite, (mean_a, std_a, mean_b, std_b))):
        return math.nan
    if std_a == 0 and std_b == 0:
        return 1.0 if mean_a == mean_b else 0.0
    return float(_st.ttest_ind_from_stats(mean_a, std_a, n_a, mean_b, std_b, n_b, equal_var=False).pvalue)


def compare(ours, paper_mean, paper_std=None, paper_n=None) -> dict:
    """Our seed values `ours` against a published mean (and its std over `paper_n` runs), by the
    strict rule: {verdict, why, n, mean, std, ci_low, ci_high, ci_half, gap, outside, p, inside}.
    `gap` is ours − paper; `outside` how far the published mean lies outside our CI (0 inside)."""
    s = seed_stats(ours)
    out = dict(s, paper_mean=paper_mean, paper_std=paper_std, paper_n=paper_n, gap=s["mean"] - paper_mean,
               outside=math.nan, p=math.nan, inside=False)
    paper = f"paper {paper_mean:.2f}" + (f" ± {paper_std:.2f}" if paper_std is not None else "") + \
        (f" (n = {paper_n})" if paper_n else "")
    if s["n"] < 2:
        ours_text = "no seeds" if s["n"] == 0 else f"ours {s['mean']:.2f} (n = 1)"
        return dict(out, verdict="too few seeds", why=f"{ours_text}, {paper}")
    out["inside"] = s["ci_low"] <= paper_mean <= s["ci_high"]
    out["outside"] = max(0.0, s["ci_low"] - paper_mean, paper_mean - s["ci_high"])
    if paper_std is not None and paper_n:
        out["p"] = welch_p(s["mean"], s["std"], s["n"], paper_mean, paper_std, paper_n)
    why = (f"ours {s['mean']:.2f}, 95 % CI [{s['ci_low']:.2f}, {s['ci_high']:.2f}] (n = {s['n']}), {paper}; "
           f"gap {out['gap']:+.2f} pts")
    why += "; paper mean inside our CI" if out["inside"] else f"; paper mean {out['outside']:.2f} pts outside our CI"
    if math.isfinite(out["p"]):
        why += f"; Welch p = {out['p']:.3g}"
    ok = out["inside"] or (math.isfinite(out["p"]) and out["p"] >= ALPHA)
    return dict(out, verdict="reproduced" if ok else "not reproduced", why=why)


def verdict(ours, paper_mean, paper_std=None, paper_n=None) -> tuple[str, str]:
    """(verdict, explanation) of `compare`."""
    c = compare(ours, paper_mean, paper_std, paper_n)
    return c["verdict"], c["why"]


def order(higher, lower) -> dict:
    """Whether our seed values keep `higher` above `lower` (the paper's order): {verdict, p,
    diff (ours, higher − lower), a, b (seed_stats of each)}."""
    a, b = seed_stats(higher), seed_stats(lower)
    if a["n"] == 0 or b["n"] == 0:
        return dict(verdict="not run", p=math.nan, diff=math.nan, a=a, b=b)
    if a["n"] < 2 or b["n"] < 2:
        return dict(verdict="too few seeds", p=math.nan, diff=a["mean"] - b["mean"], a=a, b=b)
    p = welch_p(a["mean"], a["std"], a["n"], b["mean"], b["std"], b["n"])
    diff = a["mean"] - b["mean"]
    significant = math.isfinite(p) and p < ALPHA
    if diff > 0:
        v = "holds" if significant else "holds (not significant)"
    else:
        v = "fails" if significant and diff < 0 else "fails (not significant)"
    return dict(verdict=v, p=p, diff=diff, a=a, b=b)


def ordering(higher, lower) -> tuple[str, float]:
    """(verdict, Welch p) of `order`."""
    o = order(higher, lower)
    return o["verdict"], o["p"]


# ----------------------------------------------------------------------------- paper facts
def _data(name: str) -> dict:
    return json.loads(resources.files("continualkit").joinpath(f"data/{name}").read_text("utf-8"))


def _paper_rows(paper: dict) -> list[dict]:
    """Rows {method, variant, group, values: {setting: (mean, std, n)}} with the paper's spread
    converted to a std over its runs (a standard error times √runs)."""
    raw = paper.get("rows") or []
    if paper.get("table"):
        raw = [dict(r, values={s: r.get(s) for s in paper["settings"]}) for r in _data(paper["table"])["rows"]]
    runs = paper.get("runs")
    rows = []
    for r in raw:
        values, shown = {}, {}
        for s, v in (r.get("values") or {}).items():
            if not v:
                continue
            mean, spread = float(v[0]), (float(v[1]) if len(v) > 1 and v[1] is not None else None)
            n = r.get("runs", runs)
            shown[s] = f"{mean:.2f}" + (f" ± {float(v[1]):.2f}" if spread is not None else "")
            if spread is not None and paper.get("spread") == "sem":
                shown[s] += " (s.e.m.)"
                spread = spread * math.sqrt(n) if n else None
            values[s] = (mean, spread, n)
        rows.append({"method": r["method"], "variant": r.get("variant"), "group": r.get("group"),
                     "values": values, "shown": shown})
    return rows


BENCHMARKS = ("split", "permuted")   # a paper's `benchmark`: the results it applies to
SPLIT = "split"                      # split MNIST (results/mnist_split.h5): the cards, the tables


def papers(keys=None, benchmark: str | None = None) -> list[dict]:
    """The papers of data/orderings.json (optionally only `keys`, and only those of `benchmark`:
    "split" or "permuted", a paper's `benchmark` field, "split" when absent), each with
    normalised `rows`. A paper's orderings hold for its own benchmark's results only."""
    if benchmark is not None and benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r} (known: {', '.join(BENCHMARKS)})")
    out = []
    for p in _data("orderings.json")["papers"]:
        if (keys is None or p["key"] in keys) and (benchmark is None or paper_benchmark(p) == benchmark):
            out.append(dict(p, rows=_paper_rows(p)))
    return out


def paper_benchmark(paper: dict) -> str:
    """The benchmark whose results a paper's orderings apply to ("split" when not stated)."""
    return paper.get("benchmark", SPLIT)


def paper_pairs(paper: dict, setting: str) -> list[dict]:
    """Every pair of the paper's rows with a number in `setting` (rows of different buffer
    groups are not paired; a row without a group pairs with all): {high, low, tie, delta, p}
    where `high` is the row with the higher published mean and `p` the paper's own Welch p. With
    `"pairs": "significant"` (numbers read off a figure) a pair whose paper p is not below α is a tie."""
    rows = [r for r in paper["rows"] if setting in r["values"]]
    pairs = []
    for a, b in itertools.combinations(rows, 2):
        if a["group"] is not None and b["group"] is not None and a["group"] != b["group"]:
            continue
        ma, mb = a["values"][setting][0], b["values"][setting][0]
        hi, lo = (a, b) if ma >= mb else (b, a)
        (mh, sh, nh), (ml, sl, nl) = hi["values"][setting], lo["values"][setting]
        p = welch_p(mh, sh, nh, ml, sl, nl) if sh is not None and sl is not None else math.nan
        # A paper whose numbers are read off a figure claims only the orders its own spread separates.
        unseparated = paper.get("pairs") == "significant" and not p < ALPHA
        pairs.append(dict(high=hi, low=lo, tie=ma == mb or unseparated, delta=mh - ml, p=p))
    return pairs


# ----------------------------------------------------------------------------- our side
def seed_values(df: pd.DataFrame, variant: str, budget=None, metric: str = "acc", scale: float = 100.0) -> list:
    """Our values of `metric` (× `scale`) over the completed seeds of `variant` (at `budget` steps
    per experience when given); [] when the variant is not in the file."""
    if "variant" not in df.columns:
        return []
    part = df[df["variant"] == variant]
    if "status" in part.columns:
        part = part[part["status"] == "completed"]
    if budget is not None and "steps_per_experience" in part.columns:
        part = part[part["steps_per_experience"].round() == budget]
    x = part[metric].to_numpy(dtype=float) * scale
    return [v for v in x if math.isfinite(v)]


def fmt_ours(s: dict) -> str:
    """"mean ± CI half-width (n = k)", or what is missing."""
    if s["n"] == 0:
        return "not run"
    if s["n"] < 2:
        return f"{s['mean']:.2f} (n = 1)"
    return f"{s['mean']:.2f} ± {s['ci_half']:.2f} (n = {s['n']})"

# ----------------------------------------------------------------------------- orderings
def check_orderings(df: pd.DataFrame, paper: dict, settings=None, template: str = TUNED, budget=None) -> pd.DataFrame:
    """Every ordering `paper` reports (`paper_pairs`, per setting) checked on our results `df`
    (a summary: variant, acc, status, steps_per_experience, seed), with our variant named by
    `template` ("{variant}_{setting}"; PAPER_VALUES for the paper's-values rows). One row per
    pair: paper, setting, pair ("A > B", the paper's order), the two methods and our variants, the
    paper's numbers (`paper`: "mean ± spread vs mean ± spread; Δ"), ours ("mean ± CI half-width
    (n) vs ..."; Δ), verdict and Welch p. Nothing is dropped: a method without a counterpart, a
    variant not in the file and a tie of the paper are listed with that verdict."""
    rows = []
    for setting in settings or paper["settings"]:
        if setting not in paper["settings"]:
            continue
        for pair in paper_pairs(paper, setting):
            hi, lo = pair["high"], pair["low"]
            names = [None if r["variant"] is None else template.format(variant=r["variant"], setting=setting) for r in (hi, lo)]
            vals = [seed_values(df, n, budget) if n else [] for n in names]
            o = order(*vals)
            if pair["tie"]:
                v = "paper tie"
            elif names[0] is None or names[1] is None:
                v = "no counterpart"
            else:
                v = o["verdict"]
            paper_text = f"{hi['shown'][setting]} vs {lo['shown'][setting]}; Δ {pair['delta']:+.2f}"
            ours_text = f"{fmt_ours(o['a'])} vs {fmt_ours(o['b'])}"
            if math.isfinite(o["diff"]):
                ours_text += f"; Δ {o['diff']:+.2f}"
            rows.append(dict(paper=paper["key"], setting=setting, pair=f"{hi['method']} > {lo['method']}",
                             higher=hi["method"], lower=lo["method"], higher_variant=names[0], lower_variant=names[1],
                             paper_delta=pair["delta"], paper_p=pair["p"], ours_delta=o["diff"], p=o["p"],
                             verdict=v, paper_text=paper_text, ours_text=ours_text))
    cols = ["paper", "setting", "pair", "higher", "lower", "higher_variant", "lower_variant", "paper_delta",
            "paper_p", "ours_delta", "p", "verdict", "paper_text", "ours_text"]
    return pd.DataFrame(rows, columns=cols)


VERDICTS = ("holds", "holds (not significant)", "fails (not significant)", "fails", "too few seeds",
            "not run", "no counterpart", "paper tie")


def counts(table: pd.DataFrame) -> str:
    """"k holds, k holds (not significant), ..." of a `check_orderings` table (zeros left out)."""
    c = table["verdict"].value_counts() if len(table) else {}
    return ", ".join(f"{int(c[v])} {v}" for v in VERDICTS if v in c) or "no pairs"


def _p(p) -> str:
    return "—" if not math.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def orderings_markdown(df: pd.DataFrame, keys=None, template: str = TUNED, budget=None, heading: str = "###",
                       settings=None, list_ties: bool = True, benchmark: str = SPLIT) -> list[str]:
    """The "Orderings" section of a docs page: per paper of data/orderings.json (or `keys`) and
    setting, a table | pair (paper's order) | paper | ours | verdict | with the count of each
    verdict; a paper without recorded numbers is listed with its status and citation. With
    `list_ties` False the paper's ties are counted but not listed (a figure's clusters make many).
    Only the papers of `benchmark` (the results `df` holds: "split" or "permuted") are listed."""
    budget_text = f" at {budget} steps per experience" if budget is not None else ""
    lines = [f"{heading} Orderings", "",
             f"Every pair of methods a paper reports in a setting, checked on our runs{budget_text} "
             "(continualkit.verdicts): **holds** = our means in the paper's order and a Welch test at "
             "α = 0.05 separates them; **holds (not significant)**; **fails (not significant)**; **fails** = "
             "the opposite order, significant. Paper: mean ± its spread; ours: mean ± half-width of our "
             "95 % CI (Student t, n − 1 df), n seeds; Δ = higher − lower of the paper's order; p = Welch p "
             "on our seeds.", ""]
    for paper in papers(keys, benchmark):
        lines += [f"{heading}# {paper['title']}", "", f"*{paper['citation']}.* Numbers: {paper['where']}.", ""]
        missing = paper.get("missing") or {}
        if missing.get("methods"):
            lines += [f"Not checked: {', '.join(m['method'] for m in missing['methods'])} — {missing['reason']}.", ""]
        if not any(r["values"] for r in paper["rows"]):
            mapped = ", ".join(f"{m['method']} → {m['variant'] or 'no counterpart'}" for m in paper.get("methods", []))
            lines += [f"**Not checked:** {paper.get('status', 'no numbers recorded')}."
                      + (f" Methods and our counterparts: {mapped}." if mapped else ""), ""]
            continue
        for setting in settings or paper["settings"]:
            t = check_orderings(df, paper, [setting], template, budget)
            if t.empty:
                continue
            lines += [f"**{SETTING_NAMES.get(setting, setting)}** — {counts(t)}", "",
                      "| pair (paper's order) | paper | ours | verdict | p |", "|---|---|---|---|---|"]
            lines += [f"| {r.pair} | {r.paper_text} | {r.ours_text} | {r.verdict} | {_p(r.p)} |" for r in t.itertuples()
                      if list_ties or r.verdict != "paper tie"]
            lines.append("")
    return lines
