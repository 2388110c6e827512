"""The "Protocol differences" block of a reproduction card (continualkit.cards): what a results
file stores about each variant's protocol (data, network, optimizer, steps, strengths, memory,
seeds) beside the values each paper of data/orderings.json states."""
from __future__ import annotations

import math
import os

import h5py
import pandas as pd

from . import verdicts as V
from .io import run_config

SETTINGS = ("task", "domain", "class")
MEMORY_METHODS = {"gem", "agem", "naive_rehearsal", "der", "derpp", "er_ace", "gdumb", "gdumb_balanced", "icarl"}
MEMORY_KEYS = ("capacity", "memory", "per_experience", "buffer", "budget", "samples")


def _strategy_parts(config) -> tuple[list, list]:
    """(strengths, memory) of a run's strategy list: every parameter except its type, memory
    sizes (capacity, per-experience memory, ...) apart from the strengths."""
    strengths, memory = [], []
    for s in config.get("strategy", []):
        if isinstance(s, str):
            continue
        name = s.get("type", "?")
        st = [f"{k}={v}" for k, v in s.items() if k != "type" and not any(m in k for m in MEMORY_KEYS)]
        me = [f"{k}={v}" for k, v in s.items() if any(m in k for m in MEMORY_KEYS)]
        if st:
            strengths.append(f"{name}: " + ", ".join(st))
        if me:
            memory.append(f"{name}: " + ", ".join(me))
    return strengths, memory


def run_protocol(path, df, variant) -> dict | None:
    """What the results file stores about `variant`'s protocol (its first completed run's
    config and set sizes, the step budgets and seeds of all its runs), as display strings."""
    part = df[(df["variant"] == variant) & (df["status"] == "completed")] if "variant" in df.columns else df.iloc[:0]
    if part.empty:
        return None
    rid = part["run_id"].iloc[0]
    cfg = run_config(path, rid)
    with h5py.File(path, "r") as f:
        run = f["runs"][rid]
        train = [int(x) for x in run["train_set_sizes"][()]] if "train_set_sizes" in run else []
        test = [int(x) for x in run["test_sizes"][()]] if "test_sizes" in run else []
    sc, model, opt, tr = cfg.get("scenario", {}), cfg.get("model", {}), cfg.get("optimizer", {}), cfg.get("training", {})
    data = f"{sc.get('type', '?')} ({os.path.basename(str(sc.get('path', '')))})"
    if train:
        data += f", {sum(train):,} training / {sum(test):,} test samples over {len(train)} experiences"
    net = "MLP " + "-".join(str(h) for h in model.get("hidden", [])) + f" ({model.get('activation', '?')})"
    net += ", one head per experience" if model.get("multi_head") else ""
    optim = f"{opt.get('type', '?')}, lr {opt.get('lr', '?')}, batch {tr.get('batch_size', '?')}"
    budgets = part["steps_per_experience"].round() if "steps_per_experience" in part.columns else pd.Series(math.nan, part.index)
    if budgets.notna().any():
        steps = ", ".join(f"{b:.0f}" for b in sorted(budgets.dropna().unique(), reverse=True)) + " optimizer steps per experience"
    else:
        steps = f"{tr.get('epochs', '?')} epochs per experience"
    strengths, memory = _strategy_parts(cfg)
    seeds = "; ".join(f"{len(g)} ({', '.join(str(int(s)) for s in sorted(g['seed']))})" + (f" at {b:.0f} steps" if b >= 0 else "")
                      for b, g in part.groupby(budgets.fillna(-1), sort=False))
    return {"data": data, "network": net, "optimizer": optim, "steps": steps,
            "strengths": "; ".join(strengths) or "none", "memory": "; ".join(memory) or "none", "seeds": seeds}


def _data_text(path, df) -> str:
    """The data of a results file as its first completed run records it."""
    ok = df[df["status"] == "completed"] if "status" in df.columns else df
    proto = run_protocol(path, df, ok["variant"].iloc[0]) if len(ok) and "variant" in ok.columns else None
    return proto["data"] if proto else "no completed run"


ASPECTS = (("data", "data size"), ("network", "network"), ("optimizer", "optimizer"), ("steps", "steps"),
           ("strengths", "strengths"), ("memory", "memory"), ("seeds", "seeds"))


def _papers_for(card) -> list[dict]:
    """The papers of data/orderings.json with a row or method mapped to one of the card's variants."""
    mine = set(card["variants"])
    return [p for p in V.papers(benchmark=V.SPLIT)   # the cards are of split MNIST results
            if mine & ({r["variant"] for r in p["rows"] if r["values"]} | {m["variant"] for m in p.get("methods", [])})]


def _their(paper, card, key) -> str:
    """A paper's value of one protocol aspect; Hsu et al.'s strengths and memory are the labels
    of the card's rows in Table 2."""
    if key in ("strengths", "memory") and paper.get("table"):
        rows = [r for r in paper["rows"] if r["variant"] in card["variants"] and r["values"]]
        if key == "memory":
            rows = [r for r in rows if r["variant"] in MEMORY_METHODS]
        return "; ".join(r["method"] for r in rows) or "none"
    return paper.get("protocol", {}).get(key, "not recorded")


def _protocol_block(path, df, card) -> list[str]:
    """The card's "Protocol differences": per aspect ours (per variant and setting, identical
    values merged) beside each paper's that has the card's methods, then the card's own notes."""
    theirs = _papers_for(card)
    lines = ["**Protocol differences** (ours: the run configurations stored in the results file; the papers': "
             "data/orderings.json, and for Hsu et al. the row labels of Table 2).", ""]
    if path is not None and card["variants"]:
        ours = {f"{v}_{s}": run_protocol(path, df, f"{v}_{s}") for v in card["variants"] for s in SETTINGS}
        ours = {k: p for k, p in ours.items() if p}
    if path is not None and card["variants"] and (ours or theirs):
        lines += ["| " + " | ".join(["aspect", "ours"] + [p["title"] for p in theirs]) + " |", "|---|---|" + "---|" * len(theirs)]
        for key, name in ASPECTS:
            vals = {}
            for k, p in ours.items():
                vals.setdefault(p[key], []).append(k)
            cell = "not run" if not vals else next(iter(vals)) if len(vals) == 1 else \
                "; ".join(f"{', '.join(ks)}: {v}" for v, ks in vals.items())
            lines.append("| " + " | ".join([name, cell] + [_their(p, card, key) for p in theirs]) + " |")
        lines.append("")
    lines += [f"Notes: {card['differences']}", ""]
    return lines
