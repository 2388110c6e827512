"""Federated runs (issue 16): the federation Dataset, the federation table against numbers
recomputed with h5py from the file, the personalisation gain against a hand computation for one
client, and the figures/report for federated files. The files are written by the `continual` CLI
at test time (a 12-client, 6-round experiment: under a second); skipped when no binary is found."""
import io
import json
import os
import shutil
import subprocess
from contextlib import redirect_stdout

import h5py
import numpy as np
import pytest

import continualkit as ck
from conftest import REPO, find_continual
from continualkit import figures as F
from continualkit import tables as T
from continualkit.cli import main as cli

TINY = {
    "name": "tiny_federated",
    "description": "test fixture: 12 clients, 6 rounds; local-only vs FedAvg + fine-tuning vs FedPer vs DP-FedAvg",
    "seed": 1,
    "scenario": {"type": "habit_drift", "train_per_experience": 40, "test_per_experience": 20},
    "population": {"users": 12, "quantiles": [0.1, 0.5, 0.9]},
    "model": {"hidden": [8], "activation": "relu"},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "training": {"batch_size": 16},
    "strategy": ["naive"],
    "federation": {"rounds": 6, "client_fraction": 0.5, "sampling": "poisson", "availability": "device",
                   "local_epochs": 1, "evaluate_every": 2},
    "variants": [
        {"name": "local_only", "federation": {"share": "none"}},
        {"name": "fedavg_finetune", "federation": {"share": "all", "personal": "local"}},
        {"name": "fedper", "federation": {"share": "core"}},
        {"name": "dp_fedavg", "federation": {"clip_norm": 0.2, "noise_multiplier": 1.0}},
    ],
    "sweep": {"parameters": {"seed": [1, 2]}},
}


def _run(binary, exp, out):
    js = out.with_suffix(".json")
    js.write_text(json.dumps(exp), encoding="utf-8")
    h5 = str(out.with_suffix(".h5"))
    r = subprocess.run([binary, "run", str(js), "-o", h5, "--overwrite", "-q", "--plain"], cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"continual run {exp['name']} failed: {r.stderr[-2000:]}"
    return h5


@pytest.fixture(scope="module")
def fed(tmp_path_factory):
    """{"tiny": federated file with a local-only configuration, "no_local": one without}."""
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN, put it on PATH, or swift build -c release): "
                    "federation tests skipped")
    out = tmp_path_factory.mktemp("fed")
    no_local = dict(TINY, name="tiny_federated_no_local", variants=TINY["variants"][1:3],
                    sweep={"parameters": {"seed": [1]}})
    # a sweep of a key path beside the seed: each learning rate is its own setting
    swept = dict(TINY, name="tiny_federated_swept", variants=[TINY["variants"][0], TINY["variants"][2]],
                 sweep={"parameters": {"seed": [1], "optimizer.lr": [0.05, 0.2]}})
    return {"tiny": _run(binary, TINY, out / "tiny"), "no_local": _run(binary, no_local, out / "no_local"),
            "swept": _run(binary, swept, out / "swept")}


def _runs_by_conf(path):
    """{configuration: [(seed, federation group attrs/arrays, population acc by client id)]} via h5py only."""
    df = ck.load_summary(path)
    out = {}
    with h5py.File(path, "r") as f:
        for _, r in df.iterrows():
            g = f["runs"][r["run_id"]]
            fg, pop = g["federation"], g["population"]
            rec = {k: fg[k][()] for k in ("client_bytes_up", "client_bytes_down", "client_joules", "epsilon",
                                         "participations", "personal_accuracy", "evaluated_round")}
            rec["global_final_accuracy"] = fg["global_final_accuracy"][()] if "global_final_accuracy" in fg else None
            rec["share"] = fg.attrs["share"].decode() if isinstance(fg.attrs["share"], bytes) else fg.attrs["share"]
            rec["acc"] = dict(zip(pop["user"][()].tolist(), pop["metrics/acc"][()].tolist()))
            rec["forgetting"] = float(np.mean(pop["metrics/forgetting"][()]))
            out.setdefault(r["configuration"], []).append((int(r["seed"]), rec))
    return out


def test_federation_dataset(fed):
    path = fed["tiny"]
    df = ck.load_summary(path)
    for rid in df["run_id"]:
        ds = ck.federation(path, rid)
        assert ds.sizes["round"] == ds.attrs["rounds"] == 6
        assert ds.sizes["client"] == ds.attrs["clients"] == 12
        assert list(ds["evaluated_round"].values) == [1, 3, 5]
        assert ds["personal_accuracy_quantiles"].dims == ("evaluated_round", "level")
        assert list(ds["level"].values) == [0.1, 0.5, 0.9]
        assert ds["client_bytes_up"].attrs["units"] == "bytes"
        assert ds["device_pattern"].dtype.kind == "U"
        pop = ck.population(path, rid)
        assert list(pop["user"].values) == list(ds["evaluated_client"].values)
        if ds.attrs["share"] == "all":
            assert ds["global_final_accuracy"].dims == ("evaluated_client", "evaluated")
            assert np.isfinite(ds["global_accuracy"].values).all()
        else:
            assert np.isnan(ds["global_accuracy"].values).all()
        assert np.isfinite(ds["epsilon"].values).all() == ("delta" in ds.attrs)
    assert ck.is_federated(path)


def test_federation_table_matches_h5py(fed):
    path = fed["tiny"]
    by_conf = _runs_by_conf(path)
    num = T.federation_table(path, numeric=True).set_index("configuration")
    text = T.federation_table(path).set_index("configuration")
    assert list(num.index) == ["local_only", "fedavg_finetune", "fedper", "dp_fedavg"]
    for conf, recs in by_conf.items():
        want = {
            "personal_acc": np.mean([np.mean(list(r["acc"].values())) for _, r in recs]),
            "forgetting": np.mean([r["forgetting"] for _, r in recs]),
            "bytes_per_client": np.mean([np.mean(r["client_bytes_up"] + r["client_bytes_down"]) for _, r in recs]),
            "joules_per_client": np.mean([np.mean(r["client_joules"]) for _, r in recs]),
        }
        for k, v in want.items():
            assert num.loc[conf, f"{k}_mean"] == pytest.approx(v, rel=1e-9, abs=1e-12), (conf, k)
        share = recs[0][1]["share"]
        if share == "all":
            g = np.mean([np.mean(r["global_final_accuracy"]) for _, r in recs])
            assert num.loc[conf, "global_acc_mean"] == pytest.approx(g, rel=1e-9)
        else:
            assert text.loc[conf, "global ACC %"] == "—"
        eps = [r["epsilon"][-1] for _, r in recs]
        if np.isfinite(eps).all():
            assert num.loc[conf, "epsilon_mean"] == pytest.approx(np.mean(eps), rel=1e-9)
            assert text.loc[conf, "ε (δ = 1e-05)"].split(" ± ")[0] == f"{np.mean(eps):.2f}"
        else:
            assert text.loc[conf, "ε (δ = 1e-05)"] == "—"
        if share == "none":
            assert text.loc[conf, "rounds / client"] == "—"
        else:
            rounds = np.mean([np.mean(r["participations"]) for _, r in recs])
            assert num.loc[conf, "rounds_per_client_mean"] == pytest.approx(rounds, rel=1e-9)
        kib = want["bytes_per_client"] / 1024
        assert text.loc[conf, "KiB / client"].split(" ± ")[0] == f"{kib:.1f}"
    assert text.loc["local_only", "KiB / client"] == "0.0"          # nothing sent, and no "± 0.0"


def test_table_command_prints_federation_table(fed):
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli(["table", fed["tiny"]]) == 0
    out = buf.getvalue()
    assert "### federation (mean ± std over seeds)" in out
    assert "| configuration | n | personal ACC % | forgetting pts | global ACC % |" in out
    assert "### paired by seed against local_only" in out
    rows = [l for l in out.splitlines() if l.startswith("| dp_fedavg |")]
    assert rows and rows[0].count("|") == 10                    # markdown row with all 9 columns


def test_a_missing_default_baseline_is_said_not_skipped(fed):
    """Issue 41.8: a federated file without its usual baseline (local-only) says there is no
    paired table and which configurations --baseline could name, instead of printing nothing."""
    titles = [title for title, _ in T.experiment_tables(fed["no_local"])]
    note = [t for t in titles if t.startswith("paired by seed: no table")]
    assert len(note) == 1 and "local-only (share: none)" in note[0] and "--baseline" in note[0], titles
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli(["table", fed["no_local"]]) == 0
    assert "### paired by seed: no table" in buf.getvalue()


def test_infinite_epsilon_is_shown_as_infinity(fed, tmp_path):
    """Clipping without noise gives ε = inf after every round: the table says ∞, not —."""
    p = str(tmp_path / "inf.h5")
    shutil.copy(fed["tiny"], p)
    df = ck.load_summary(p)
    with h5py.File(p, "r+") as f:
        for rid in df[df["configuration"] == "dp_fedavg"]["run_id"]:
            f["runs"][rid]["federation/epsilon"][-1] = np.inf
    t = T.federation_table(p).set_index("configuration")
    assert t.loc["dp_fedavg", "ε (δ = 1e-05)"] == "∞"


def test_personalisation_gain_by_hand(fed):
    path = fed["tiny"]
    by_conf = _runs_by_conf(path)
    g = ck.personalisation_gains(path)
    assert g.attrs["baseline"] == "local_only"
    assert set(g["configuration"]) == {"fedavg_finetune", "fedper", "dp_fedavg"}
    assert len(g) == 3 * 2 * 12                                 # configurations × seeds × clients
    # one client by hand: client 5, seed 2, FedPer
    fedper = dict(by_conf["fedper"])[2]["acc"][5]
    local = dict(by_conf["local_only"])[2]["acc"][5]
    row = g[(g["configuration"] == "fedper") & (g["seed"] == 2) & (g["client"] == 5)]
    assert len(row) == 1
    assert row["gain"].iloc[0] == pytest.approx(fedper - local, abs=1e-12)
    # the figure draws exactly these gains (points), one row per configuration, in sweep order
    fig = F.personalisation_gain(path)
    ax = fig.axes[0]
    assert "local_only" in ax.get_title()
    ticks = sorted(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()]), reverse=True)
    assert [t for _, t in ticks] == ["fedavg_finetune", "fedper", "dp_fedavg"]     # top to bottom
    drawn = np.sort(ax.collections[1].get_offsets()[:, 0])   # second strip: fedper
    want = np.sort(g[g["configuration"] == "fedper"]["gain"].to_numpy() * 100)
    np.testing.assert_allclose(drawn, want, atol=1e-9)


def test_each_setting_of_a_sweep_has_its_own_local_only_baseline(fed):
    """A file sweeping a key path (here optimizer.lr) holds one local-only configuration per
    setting; gains, paired tables and the rounds figure's reference use the one at the same
    setting, never another setting's clients."""
    path = fed["swept"]
    runs = ck.federation_runs(path)
    confs = list(dict.fromkeys(runs["configuration"]))
    lr = {c: float(runs[runs["configuration"] == c]["optimizer.lr"].iloc[0]) for c in confs}
    local = {lr[c]: c for c in confs if runs[runs["configuration"] == c]["share"].iloc[0] == "none"}
    fedper = {lr[c]: c for c in confs if c not in local.values()}
    assert sorted(local) == sorted(fedper) == [0.05, 0.2]
    for v in (0.05, 0.2):
        assert ck.local_only_configuration(runs, like=fedper[v]) == local[v]
    # the gain of one client at lr 0.2, by hand from the file
    by_conf = _runs_by_conf(path)
    g = ck.personalisation_gains(path)
    row = g[(g["configuration"] == fedper[0.2]) & (g["client"] == 5)]
    want = dict(by_conf[fedper[0.2]])[1]["acc"][5] - dict(by_conf[local[0.2]])[1]["acc"][5]
    assert len(row) == 1 and row["gain"].iloc[0] == pytest.approx(want, abs=1e-12)
    assert set(g.attrs["baseline"].split(", ")) == set(local.values())
    # one paired table per setting, each holding only that setting's configurations
    paired = [(title, t) for title, t in T.experiment_tables(path) if title.startswith("paired by seed against")]
    assert sorted(title.rsplit(" ", 1)[1] for title, _ in paired) == sorted(local.values())
    for title, t in paired:
        assert set(t["configuration"]) == {fedper[lr[title.rsplit(" ", 1)[1]]]}
    # the figure's grey reference in the lr 0.2 panel is local-only at lr 0.2
    fig = F.federation_rounds(path, [fedper[0.05], fedper[0.2]])
    ref = [line for line in fig.axes[1].get_lines() if line.get_label().endswith("(personal, reference)")]
    assert len(ref) == 1 and ref[0].get_label().startswith(local[0.2])


def test_no_local_only_configuration(fed):
    path = fed["no_local"]
    with pytest.raises(ValueError, match="local-only"):
        ck.personalisation_gains(path)
    with pytest.raises(ValueError, match="local-only"):
        F.personalisation_gain(path)                            # draw_all and the report skip it (ValueError)
    from continualkit.report import figure_list
    ids = [fid for fid, *_ in figure_list(path, ck.load_summary(path))]
    assert "federation_rounds1" in ids and "personalisation_gain" not in ids
    # No paired table; the note saying why is test_a_missing_default_baseline_is_said_not_skipped's.
    assert "paired by seed against" not in " ".join(t for t, _ in T.experiment_tables(path))


def test_federation_rounds_figure(fed):
    fig = F.federation_rounds(fed["tiny"])
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 4 + 1                                   # one panel per configuration + ε
    eps_ax = axes[-1]
    assert "ε" in eps_ax.get_ylabel()
    assert [l.get_label() for l in eps_ax.get_lines()] == ["dp_fedavg"]   # DP configurations only
    final = np.mean([r["epsilon"][-1] for _, r in _runs_by_conf(fed["tiny"])["dp_fedavg"]])
    assert eps_ax.get_lines()[0].get_ydata()[-1] == pytest.approx(final)
    # the fine-tuned configuration shows the global model too; local-only has none
    labels = {a.get_title().split(" (")[0]: [l.get_label() for l in a.get_lines()] for a in axes[:-1]}
    assert "global model" in labels["fedavg_finetune"] and "global model" not in labels["local_only"]


def test_plot_check_and_report(fed, synthetic, tmp_path):
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli(["plot", fed["tiny"], "-o", str(tmp_path / "figs"), "--format", "png", "--check"])
    assert rc == 0, buf.getvalue()
    assert {"federation_rounds.png", "personalisation_gain.png"} <= set(os.listdir(tmp_path / "figs"))
    assert "federation_rounds" not in F.draw_all(synthetic, str(tmp_path / "syn"), formats=("png",))
    from continualkit.report import build
    r = build(fed["tiny"], str(tmp_path / "r.html"))
    html = open(tmp_path / "r.html", encoding="utf-8").read()
    assert r["figures"][:2] == ["federation_rounds1", "personalisation_gain"]
    assert "federation (mean ± std over seeds)" in html and "ε (δ = 1e-05)" in html
    assert "id='fig-personalisation_gain' data-width='page'" in html
    assert "Accuracy against energy per client" in html       # the federation's energy, not the summary's energy_j


def test_inspect_and_table_print_the_same_global_acc(fed):
    """Issue 29: one definition of global ACC — the file's `global_acc` attribute (the final
    global model over every experience of the evaluated clients), printed alike by
    `continual inspect` and `continualkit table`."""
    path = fed["tiny"]
    with h5py.File(path, "r") as f:
        for rid in f["runs"]:
            fg = f["runs"][rid]["federation"]
            if fg.attrs["share"] in (b"all", "all"):
                assert fg.attrs["global_acc"] == pytest.approx(np.nanmean(fg["global_final_accuracy"][()]), rel=1e-12)
    out = subprocess.run([find_continual(), "inspect", path, "--brief"], capture_output=True, text=True,
                         timeout=120).stdout
    assert "federated runs:" in out
    lines = out.split("federated runs:")[1].splitlines()
    text = T.federation_table(path).set_index("configuration")
    for conf in text.index:
        row = next(l for l in lines if l.startswith(conf + " "))
        cells = [c.strip() for c in (row[30:33], row[33:49], row[49:65])]
        want = text.loc[conf, "global ACC %"]
        assert cells[2].split(" ± ")[0] == want.split(" ± ")[0], (conf, row, want)
        assert cells[1].split(" ± ")[0] == text.loc[conf, "personal ACC %"].split(" ± ")[0], (conf, row)
