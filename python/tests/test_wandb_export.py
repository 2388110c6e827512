"""`continualkit export --wandb`: offline W&B runs, read back with the wandb package's own
protobuf records (what `wandb sync` uploads), must hold each run's config, the accuracy matrix
per experience, the final metrics and the figures."""
import glob
import os

import numpy as np
import pytest

from continualkit.cli import main
from continualkit.export import read_wandb_offline
from continualkit.io import load_summary

from conftest import _matrix, write_results


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    rng = np.random.default_rng(7)
    runs = [dict(name=f"{v}_seed={s}", variant=v, seed=s, R=_matrix(rng, 3, 0.6, 0.2)) for v in ("naive", "ewc")
            for s in (1,)]
    return str(write_results(tmp_path_factory.mktemp("wb") / "small.h5", runs, name="small"))


def _key(item):
    return item.key or ".".join(item.nested_key)


def _records(run_dir):
    files = glob.glob(os.path.join(run_dir, "run-*.wandb"))
    assert len(files) == 1, run_dir
    return read_wandb_offline(files[0])


def test_one_offline_run_per_toolkit_run_with_config_metrics_and_figures(small, tmp_path, capsys):
    out = tmp_path / "wb"
    assert main(["export", small, "--wandb", str(out)]) == 0
    assert "2 offline W&B runs" in capsys.readouterr().out
    df = load_summary(small)
    dirs = sorted(glob.glob(str(out / "wandb" / "offline-run-*")))
    assert len(dirs) == 2
    seen = set()
    for d in dirs:
        recs = _records(d)
        kinds = [k for k, _ in recs]
        run = next(r.run for k, r in recs if k == "run")
        name = run.display_name
        seen.add(name)
        row = df[df["name"] == name].iloc[0]
        assert run.run_group == row["configuration"] and run.project == "small" and run.job_type == row["variant"]
        config = {}
        for k, r in recs:
            if k == "config":
                config.update({_key(i): i.value_json for i in r.config.update})
        config.update({_key(i): i.value_json for i in run.config.update})
        assert config["seed"].endswith(str(int(row["seed"]))) and row["run_id"] in config["run_id"]
        # history: one record per experience with R[i][j] for j ≤ i, then the figures
        import json
        hist = [{_key(i): json.loads(i.value_json) for i in r.history.item} for k, r in recs if k == "history"]
        acc_rows = [h for h in hist if "accuracy/seen_mean" in h]
        import h5py
        with h5py.File(small, "r") as f:
            R = f["runs"][row["run_id"]]["accuracy_matrix"][()]
        assert [h["experience"] for h in acc_rows] == [0, 1, 2]
        for h in acc_rows:
            i = h["experience"]
            for j in range(i + 1):
                assert h[f"accuracy/exp_{j}"] == pytest.approx(float(R[i, j]), abs=1e-12)
            assert "accuracy/exp_%d" % (i + 1) not in h
            assert h["accuracy/seen_mean"] == pytest.approx(float(R[i, : i + 1].mean()), abs=1e-12)
        figs = [h for h in hist if any(k.startswith("figures/") for k in h)]
        images = {k.split(".")[0]: v for h in figs for k, v in h.items() if k.endswith("._type")}
        assert images == {"figures/forgetting": "image-file", "figures/heatmap": "image-file"}
        assert len(glob.glob(os.path.join(d, "files", "media", "images", "figures", "*.png"))) == 2
        summary = {}
        for k, r in recs:
            if k == "summary":
                summary.update({_key(i): json.loads(i.value_json) for i in r.summary.update})
        assert summary["final/acc"] == pytest.approx(float(row["acc"]), abs=1e-12)
        assert summary["final/bwt"] == pytest.approx(float(row["bwt"]), abs=1e-12)
        assert "exit" in kinds                    # the run was finished, so `wandb sync` takes it whole
    assert seen == set(df["name"])


def test_export_returns_only_when_each_run_file_ends_in_its_exit_record(small, tmp_path):
    """`run.finish()` may return before W&B's service has flushed the run file (seen once in CI
    under load); the export waits for the final `exit` record, and a file cut short is an error
    naming the file, not a silently truncated run."""
    from continualkit.export import _wait_for_exit_record, to_wandb
    dirs = to_wandb(small, str(tmp_path / "out"), figures=False)
    f = glob.glob(os.path.join(dirs[0], "run-*.wandb"))[0]
    _wait_for_exit_record(f, timeout=0)
    data = open(f, "rb").read()
    cut = tmp_path / "cut.wandb"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="cut.wandb: W&B did not finish"):
        _wait_for_exit_record(str(cut), timeout=0.2)
    cut.write_bytes(data[:7])
    with pytest.raises(RuntimeError, match="no exit record yet"):
        _wait_for_exit_record(str(cut), timeout=0.2)
