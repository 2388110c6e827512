"""Exports (CSV, Parquet, TensorBoard), the command line, and the tables."""
import glob
import os
import struct

import numpy as np
import pandas as pd
import pytest

from continualkit import load_summary
from continualkit import tables as T
from continualkit.cli import main
from continualkit.export import to_csv, to_parquet, to_tensorboard


def test_csv_export(synthetic, tmp_path):
    to_csv(synthetic, str(tmp_path))
    s = pd.read_csv(tmp_path / "summary.csv")
    assert len(s) == 18 and "configuration" in s
    m = pd.read_csv(tmp_path / "matrices.csv")
    assert len(m) == 18 * 16 and set(m.metric) == {"accuracy"}
    one = s.iloc[0]
    R = m[m.run_id == one.run_id].pivot(index="trained_through", columns="evaluated", values="value").to_numpy()
    assert R[-1].mean() == pytest.approx(one.acc)
    c = pd.read_csv(tmp_path / "curves.csv")
    assert set(c.curve) == {"loss", "penalty"}
    g = pd.read_csv(tmp_path / "grouped.csv")
    assert set(g.configuration) == set(s.configuration)


def test_parquet_export(synthetic, tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow not installed: pip install 'continualkit[parquet]'")
    to_parquet(synthetic, str(tmp_path))
    s = pd.read_parquet(tmp_path / "summary.parquet")
    assert len(s) == 18


def _read_events(path):
    """Scalars from a TFRecord event file (length, crc, payload, crc), parsed with tensorboardX's protos."""
    from tensorboardX.proto import event_pb2
    out = []
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                break
            n = struct.unpack("<Q", head[:8])[0]
            data = f.read(n)
            f.read(4)
            e = event_pb2.Event()
            e.ParseFromString(data)
            for v in e.summary.value:
                out.append((v.tag, e.step, v.simple_value))
    return out


def test_tensorboard_export(synthetic, tmp_path):
    pytest.importorskip("tensorboardX", reason="tensorboardX not installed: pip install 'continualkit[tensorboard]'")
    dirs = to_tensorboard(synthetic, str(tmp_path))
    assert len(dirs) == 18
    files = sorted(glob.glob(os.path.join(dirs[0], "events.out.tfevents.*")))
    assert files
    # The run's scalars and its hparams summary may land in separate event files, listed in any
    # order by the file system: read them all.
    scalars = [s for f in files for s in _read_events(f)]
    tags = {t for t, _, _ in scalars}
    assert {"accuracy/seen_mean", "accuracy/exp_0", "loss/train", "final/acc"} <= tags
    df = load_summary(synthetic)
    row = df.iloc[0]
    final = [v for t, _, v in scalars if t == "final/acc"][0]
    assert final == pytest.approx(row.acc, rel=1e-6)


def test_cli_commands(synthetic, tmp_path, capsys):
    assert main(["table", synthetic, "--baseline", "naive_optimizer.lr=0.01", "--metrics", "acc,bwt"]) == 0
    out = capsys.readouterr().out
    assert "| configuration |" in out and "Δ vs naive_optimizer.lr=0.01" in out and "seeds better" in out
    assert main(["table", synthetic, "--format", "latex"]) == 0
    assert "\\begin{tabular}" in capsys.readouterr().out
    assert main(["table", synthetic, "--format", "csv"]) == 0
    assert "configuration,n," in capsys.readouterr().out
    assert main(["table", synthetic, "--baseline", "nope"]) == 2
    capsys.readouterr()
    assert main(["plot", synthetic, "-o", str(tmp_path / "figs"), "--format", "png,svg", "-q"]) == 0
    assert os.path.exists(tmp_path / "figs" / "heatmap.png") and os.path.exists(tmp_path / "figs" / "heatmap.svg")
    assert not glob.glob(str(tmp_path / "figs" / "*.pdf"))
    assert main(["report", synthetic, "-o", str(tmp_path / "r.html")]) == 0
    assert main(["export", synthetic, "--csv", str(tmp_path / "csv")]) == 0
    assert main(["check", synthetic]) == 0
    assert main(["compare", synthetic, synthetic]) == 0


def test_hsu_paper_data_shipped():
    paper = T.paper_table()
    rows = {r["method"]: r for r in paper["rows"]}
    assert len(rows) == 18
    assert rows["Adam (naive)"]["class"] == [19.71, 0.08]
    assert rows["naive rehearsal (reservoir, 200)"]["domain"] == [95.16, 0.49]
    assert rows["A-GEM (40 per experience)"]["task"] is None


def test_hsu_table_layout(tmp_path):
    from conftest import write_results
    rng = np.random.default_rng(0)
    runs = [dict(name=f"{v}_{s}_seed={k}", variant=f"{v}_{s}", seed=k, R=rng.uniform(0.1, 0.9, (5, 5)))
            for v in ("naive_adam", "joint") for s in ("task", "domain", "class") for k in (1, 2, 3)]
    p = write_results(tmp_path / "hsu.h5", runs, name="hsu_table")
    t = T.hsu_table(str(p))
    assert list(t.columns) == ["method", "task-IL (here)", "task-IL (Hsu)", "domain-IL (here)", "domain-IL (Hsu)",
                               "class-IL (here)", "class-IL (Hsu)"]
    row = t[t.method == "Adam (naive)"].iloc[0]
    df = load_summary(str(p))
    acc = df[df.configuration == "naive_adam_class"].acc * 100
    assert row["class-IL (here)"] == f"{acc.mean():.2f} ± {acc.std(ddof=1):.2f}"
    assert row["class-IL (Hsu)"] == "19.71 ± 0.08"
    assert t[t.method == "SI (c = 1)"].iloc[0]["task-IL (here)"] == "—"


def test_grouped_shows_incomplete_runs(tmp_path):
    from conftest import write_results
    R = np.eye(3) * 0.5 + 0.3
    runs = [dict(name=f"m_seed={k}", variant="m", seed=k, R=R, status="completed" if k < 3 else "diverged")
            for k in (1, 2, 3)]
    p = write_results(tmp_path / "inc.h5", runs)
    t = T.grouped(load_summary(str(p)), ("acc",))
    assert t.iloc[0]["n"] == "2/3"


def test_device_table_marks_the_pareto_fronts(synthetic):
    t = T.device_table(synthetic)
    assert list(t.columns)[-1] == "Pareto (E / M)"
    # synthetic: naive is cheapest (energy and memory), replay the most accurate
    marks = dict(zip(t.configuration, t["Pareto (E / M)"]))
    agg = __import__("continualkit").aggregate(load_summary(synthetic), ["acc", "energy_j"])
    best = agg[("acc", "mean")].idxmax()
    assert marks[best].startswith("E")
    cheapest = agg[("energy_j", "mean")].idxmin()
    top_cheap = agg[agg[("energy_j", "mean")] == agg.loc[cheapest, ("energy_j", "mean")]][("acc", "mean")].idxmax()
    assert marks[top_cheap] == "E / M"
