"""A paper of data/orderings.json is checked only on results of its own benchmark (`benchmark`:
"split" or "permuted"): the split MNIST cards and `continualkit orderings` never apply van de Ven
& Tolias 2019's permuted MNIST table to a split file, nor a split paper to a permuted file. The
preprint's table is not recorded (no rows), so the tests give the entry hand-made rows (toy
numbers, not the paper's) to see that it would reach only permuted results, in the paper's order."""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from continualkit import verdicts as V

PERMUTED = "vandeven2019_permuted"
SPLIT_KEYS = ["hsu2018", "vandeven2022", "buzzega2020"]
# Toy rows: EWC above SI above None, ± 0.5 (read as a std: the entry's spread is not stated) over 5 runs (every pair separated).
TOY_ROWS = [{"method": "None", "variant": "naive_adam", "values": {"domain": [50.0, 0.5]}},
            {"method": "EWC", "variant": "ewc", "values": {"domain": [90.0, 0.5]}},
            {"method": "SI", "variant": "si", "values": {"domain": [80.0, 0.5]}}]


@pytest.fixture
def toy_rows(monkeypatch):
    """data/orderings.json with the permuted paper given TOY_ROWS."""
    real = V._data

    def data(name):
        d = real(name)
        if name == "orderings.json":
            d = copy.deepcopy(d)
            p = next(p for p in d["papers"] if p["key"] == PERMUTED)
            p.update(rows=TOY_ROWS, runs=5)
        return d
    monkeypatch.setattr(V, "_data", data)


def _df(values: dict) -> pd.DataFrame:
    return pd.DataFrame([dict(variant=v, acc=a / 100, status="completed", steps_per_experience=128.0, seed=k)
                         for v, accs in values.items() for k, a in enumerate(accs, 1)])


OURS = {"ewc_domain": [95, 96, 94], "si_domain": [70, 71, 69], "naive_adam_domain": [99, 98, 97]}


def test_papers_are_scoped_to_their_benchmark():
    assert [p["key"] for p in V.papers(benchmark="split")] == SPLIT_KEYS
    assert [p["key"] for p in V.papers(benchmark="permuted")] == [PERMUTED]
    assert [p["key"] for p in V.papers()] == SPLIT_KEYS + [PERMUTED]
    assert V.papers([PERMUTED], benchmark="split") == []
    with pytest.raises(ValueError):
        V.papers(benchmark="rotated")
    entry = V.papers([PERMUTED])[0]
    # Not read: no numbers are invented, the status says why and the methods are mapped.
    assert not any(r["values"] for r in entry["rows"]) and "not recorded" in entry["status"]
    assert {m["method"]: m["variant"] for m in entry["methods"]}["DGR"] == "generative_replay"


def test_hand_made_permuted_ordering_holds_and_fails(toy_rows):
    paper = V.papers([PERMUTED], benchmark="permuted")[0]
    t = V.check_orderings(_df(OURS), paper).set_index("pair")["verdict"].to_dict()
    # the paper: EWC > SI > None. Ours: EWC above SI (holds), None above both (fails, significant)
    assert t == {"EWC > SI": "holds", "EWC > None": "fails", "SI > None": "fails"}
    task = V.check_orderings(_df(OURS), paper, settings=["task", "class"])
    assert task.empty                                     # the toy rows have domain-IL numbers only


def test_a_permuted_paper_is_never_applied_to_split_results(toy_rows):
    df = _df(OURS)
    split = "\n".join(V.orderings_markdown(df, settings=["domain"]))
    assert "2019, permuted MNIST" not in split and "Hsu et al. 2018" in split
    permuted = "\n".join(V.orderings_markdown(df, benchmark="permuted"))
    assert "2019, permuted MNIST" in permuted and "Hsu et al. 2018" not in permuted
    assert "| EWC > SI |" in permuted and "| holds |" in permuted and "| fails |" in permuted


def test_split_cards_leave_the_permuted_paper_out(toy_rows, tmp_path):
    from conftest import write_results
    from continualkit import cards as C
    runs = [dict(name=f"{v}_seed={k}", variant=v, seed=k, R=np.full((5, 5), a / 100))
            for v, accs in OURS.items() for k, a in enumerate(accs, 1)]
    p = write_results(tmp_path / "split.h5", runs, name="split")
    written = C.cards(str(p), str(tmp_path / "cards"))
    text = "".join(open(w).read() for w in written)
    assert "2019, permuted MNIST" not in text and "van de Ven 2019 (permuted)" not in text
    assert "van de Ven, Tuytelaars & Tolias 2022" in text          # the split papers still are


def test_orderings_command_benchmark(toy_rows, monkeypatch, capsys):
    from continualkit import cli, io
    monkeypatch.setattr(io, "load_summary", lambda path: _df(OURS))
    monkeypatch.setattr(cli, "_results_inputs", lambda a: [])
    assert cli.main(["orderings", "permuted.h5", "--benchmark", "permuted"]) == 0
    out = capsys.readouterr().out
    assert "| EWC > SI |" in out and "Hsu et al." not in out
    assert cli.main(["orderings", "split.h5", "--paper", PERMUTED]) == 2          # default: split
    assert f"--paper {PERMUTED} is not a paper" in capsys.readouterr().err
    assert cli.main(["orderings", "permuted.h5", "--benchmark", "permuted", "--paper", "hsu2018"]) == 2
