#!/usr/bin/env python3
"""The MNIST-784 comparison tables of docs/mnist-tables.md from a results file of
Experiments/mnist_split.json (or mnist_permuted.json, mnist_permuted_task_class.json,
mnist1d_400.json): per setting, every method's ACC (tuned
row: values selected on validation data; `_paper` rows: Hsu et al.'s values), the chosen values,
Hsu et al. 2018's number where Table 2 has the row, the strict verdict (continualkit.verdicts) and
every ordering between two methods that Table 2 reports in that setting, checked on our rows.

    python3 Experiments/tools/mnist_table.py results/mnist_split.h5 > tables.md
    python3 Experiments/tools/mnist_table.py results/mnist_split.h5 --readme   # the README's short table
"""
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import experiment_json, load_summary   # noqa: E402
from continualkit.stats import seed_stats             # noqa: E402
from continualkit.tuning import load_tuning           # noqa: E402
from continualkit.verdicts import ordering, verdict    # noqa: E402

HSU = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "python/continualkit/data/hsu2018_table2.json")))
HSU_ROWS = {r["variant"]: r for r in HSU["rows"]}
NAMES = {"task": "task-IL", "domain": "domain-IL", "class": "class-IL"}


def values(df, variant):
    part = df[(df["variant"] == variant) & (df["status"] == "completed")]
    return (part["acc"].to_numpy(dtype=float) * 100).tolist(), (part["steps_per_experience"].mean() if len(part) else float("nan"))


def fmt(v):
    s = seed_stats(v)
    return "—" if s["n"] == 0 else f"{s['mean']:.2f} ± {s['std']:.2f}"


def setting_table(df, chosen, setting, hsu_rows):
    """One setting's rows; `hsu_rows` is Hsu et al.'s Table 2 (split MNIST), or {} for a stream
    the table does not describe (permuted MNIST): then the paper's columns are left out."""
    variants = [v for v in dict.fromkeys(df["variant"]) if v.endswith("_" + setting)]
    tuned = [v for v in variants if "_paper_" not in v]
    paper_cols = bool(hsu_rows)
    out = [f"### {NAMES[setting]}", "",
           "| method | steps/exp | ACC % (tuned or as listed) | chosen on validation |"
           + (" Hsu's values ACC % | Hsu 2018 | verdict (Hsu's values vs Hsu) |" if paper_cols else ""),
           "|---|---:|---:|---|" + ("---:|---:|---|" if paper_cols else "")]
    for v in tuned:
        m = v[: -len(setting) - 1]
        acc, steps = values(df, v)
        row = f"| {m} | {steps:.0f} | {fmt(acc)} | {chosen.get(v, 'not tuned')} |"
        if paper_cols:
            row += paper_cells(df, variants, m, setting, acc, hsu_rows.get(m, {}).get(setting))
        out.append(row)
    # Without the paper's columns (other data than split MNIST-784), every Hsu's-values row is a row
    # of its own; with them, those of a tuned method sit in its row and the rest follow.
    for extra in [v for v in variants if "_paper_" in v
                  and (not paper_cols or not any(v == f"{t[:-len(setting)-1]}_paper_{setting}" for t in tuned))]:
        acc, steps = values(df, extra)
        out.append(f"| {extra[:-len(setting)-1]} | {steps:.0f} | {fmt(acc)} | Hsu's values |" + (" — | — | — |" if paper_cols else ""))
    return out


def paper_cells(df, variants, m, setting, acc, hsu):
    """The Hsu's-values row of method `m`, Hsu's number and the strict verdict (on the Hsu's-values
    row where there is one, else on the tuned row, marked)."""
    paper_variant = f"{m}_paper_{setting}"
    pacc, _ = values(df, paper_variant) if paper_variant in variants else ([], 0)
    verd = "—"
    if hsu:
        verd = verdict(pacc if pacc else acc, hsu[0], hsu[1], 10)[0] + ("" if pacc else " (tuned row)")
    return f" {fmt(pacc) if pacc else '—'} | {f'{hsu[0]:.2f} ± {hsu[1]:.2f}' if hsu else '—'} | {verd} |"


def orderings(df, setting, hsu_rows):
    """Every pair of Table 2 rows with numbers in this setting whose means differ by more than
    both stds: the paper's order, checked on our tuned rows and on our Hsu's-values rows."""
    rows = [(m, r[setting]) for m, r in hsu_rows.items() if r.get(setting)]
    out = []
    for (a, pa), (b, pb) in itertools.combinations(rows, 2):
        if abs(pa[0] - pb[0]) <= max(pa[1], pb[1]):
            continue
        hi, lo = (a, b) if pa[0] > pb[0] else (b, a)
        for kind, suffix in (("tuned", ""), ("Hsu's values", "_paper")):
            vh, _ = values(df, f"{hi}{suffix}_{setting}")
            vl, _ = values(df, f"{lo}{suffix}_{setting}")
            if not vh or not vl:
                if suffix:
                    continue
                out.append(f"| {hi} > {lo} | {kind} | not run | |")
                continue
            v, p = ordering(vh, vl)
            out.append(f"| {hi} > {lo} | {kind} | {v} | {fmt(vh)} vs {fmt(vl)}, p = {p:.2g} |")
    return out


README_ROWS = [("naive (Adam)", "naive_adam"), ("L2", "l2"), ("EWC", "ewc"), ("SI", "si"), ("MAS", "mas"), ("LwF", "lwf"),
               ("replay (200)", "naive_rehearsal"), ("GEM (40/exp)", "gem"), ("A-GEM (40/exp)", "agem"), ("DER++ (200)", "derpp"),
               ("ER-ACE (200)", "er_ace"), ("iCaRL (200)", "icarl"), ("GDumb (200)", "gdumb"), ("SLDA", "slda"),
               ("generative replay", "generative_replay"), ("joint (upper bound)", "joint")]


def readme_table(df):
    """The README's short table: tuned rows per setting, Hsu's-values rows in domain- and class-IL."""
    def cell(v):
        acc, _ = values(df, v)
        s = seed_stats(acc)
        return "—" if s["n"] == 0 else f"{s['mean']:.1f} ± {s['std']:.1f}"
    out = ["| method | task-IL tuned | domain-IL tuned | domain-IL Hsu values | class-IL tuned | class-IL Hsu values |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, v in README_ROWS:
        out.append(f"| {name} | {cell(v + '_task')} | {cell(v + '_domain')} | {cell(v + '_paper_domain')} | "
                   f"{cell(v + '_class')} | {cell(v + '_paper_class')} |")
    return out


def main(path, readme=False):
    df = load_summary(path)
    if readme:
        print("\n".join(readme_table(df)))
        return
    tuning = load_tuning(path)
    chosen = dict(zip(tuning["variant"], tuning["chosen"])) if len(tuning) else {}
    settings = [s for s in ("task", "domain", "class") if any(str(v).endswith("_" + s) for v in df["variant"])]
    # Hsu et al.'s Table 2 is split MNIST: a permuted stream, or other data (MNIST-1D), is compared
    # with no published number.
    scenario = experiment_json(path).get("scenario", {})
    split_mnist = scenario.get("type") == "split_digits" and "mnist784" in str(scenario.get("path", ""))
    # A file without any of Table 2's methods (e.g. a check of one method) has nothing to compare with it.
    has_hsu_method = any(str(v).rsplit("_", 1)[0] in HSU_ROWS for v in df["variant"])
    hsu_rows = HSU_ROWS if split_mnist and has_hsu_method else {}
    lines = []
    for s in settings:
        lines += setting_table(df, chosen, s, hsu_rows) + [""]
    for s in settings:
        o = orderings(df, s, hsu_rows)
        if o:
            lines += [f"#### Hsu et al. 2018's orderings, {NAMES[s]}", "",
                      "| paper's order | our rows | verdict | ours (ACC %, mean ± std; Welch p) |", "|---|---|---|---|"] + o + [""]
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], readme="--readme" in sys.argv[2:])
