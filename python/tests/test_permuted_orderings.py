"""Experiments/tools/permuted_orderings.py: each method paper's order, checked on a results table by
the strict rule, one row per claim of the setting, in the claims' order. Toy seeds, not results."""
from __future__ import annotations

import importlib.util
import pathlib

import pandas as pd

TOOL = pathlib.Path(__file__).resolve().parents[2] / "Experiments" / "tools" / "permuted_orderings.py"
spec = importlib.util.spec_from_file_location("permuted_orderings", TOOL)
P = importlib.util.module_from_spec(spec)
spec.loader.exec_module(P)


def _df(values: dict) -> pd.DataFrame:
    return pd.DataFrame([dict(variant=v, acc=a / 100, status="completed", seed=k)
                         for v, seeds in values.items() for k, a in enumerate(seeds, 1)])


def _rows(df, setting):
    return [row for _, row in P.checked(df, setting)]


def _row(rows, claim):
    return next(r for r in rows if r.startswith(f"| {claim} |"))


def test_a_separated_pair_holds_a_reversed_one_fails_and_a_missing_one_is_not_run():
    df = _df({"rwalk_class": [90, 91, 92], "ewc_class": [20, 21, 22], "si_class": [95, 96, 97],
              "naive_rehearsal_class": [60, 61, 62]})
    rows = _rows(df, "class")
    assert "| **holds** |" in _row(rows, "rwalk > ewc")
    assert "| **fails** |" in _row(rows, "rwalk > si")
    assert "| **holds** |" in _row(rows, "naive_rehearsal > ewc")
    assert "| not run |" in _row(rows, "xder > derpp")
    assert "91.00 ± 1.00" in _row(rows, "rwalk > ewc")


def test_overlapping_seeds_are_not_significant_and_the_setting_filters_the_claims():
    df = _df({"rwalk_task": [90, 92, 91], "ewc_task": [91, 90, 90.5]})
    rows = _rows(df, "task")
    assert "| **holds (not significant)** |" in _row(rows, "rwalk > ewc")
    assert not any(r.startswith("| xder > derpp |") for r in rows), "X-DER's claim is class-IL only"
    assert len(rows) == sum("task" in c[2] for c in P.CLAIMS)


def test_failed_runs_are_not_seeds():
    df = _df({"rwalk_class": [90, 91, 92], "ewc_class": [20, 21, 22]})
    df.loc[df["variant"] == "rwalk_class", "status"] = "failed"
    assert "| not run |" in _row(_rows(df, "class"), "rwalk > ewc")
