"""continualkit.run / sweep / validate (docs/python-driver.md): the results equal the CLI's own
for the same config, a refused config raises with its key path, a missing binary raises with
the three ways to name one, the progress bar follows the CLI's progress lines, Ctrl-C leaves the
finished runs, dict configs resolve relative paths against base_dir. The parsers of the CLI's
lines are tested on the documented formats without a binary."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess

import pytest
from tqdm import tqdm

import continualkit as ck
from continualkit import cli_lines
from conftest import REPO, assert_same_summary, find_continual

QUICKSTART = os.path.join(REPO, "Experiments", "quickstart.json")
TINY_SWEEP = os.path.join(REPO, "Experiments", "sweeps", "tiny_sweep.json")


@pytest.fixture(scope="module")
def binary():
    b = find_continual()
    if b is None:
        pytest.skip("no `continual` binary (CONTINUAL_BIN, PATH or .build/release): driver tests skipped")
    return b


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cli(binary, command, config_path, out, cwd):
    """The CLI's own results file for `config_path` (the reference every driver result must equal)."""
    p = subprocess.run([binary, command, config_path, "-o", out, "--overwrite", "--plain", "--jobs", "2"],
                       cwd=cwd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return ck.load_summary(out)


class Recorder(tqdm):
    """A tqdm that keeps every bar it made and the values it was updated to."""
    bars: list = []

    def __init__(self, *args, **kwargs):
        kwargs["file"] = io.StringIO()                            # drawn, but not on the test's output
        super().__init__(*args, **kwargs)
        self.steps = []
        Recorder.bars.append(self)

    def update(self, n=1):
        super().update(n)
        self.steps.append(n)


# ------------------------------------------------------------------------ parsers (no binary)
def test_progress_line_formats():
    e = cli_lines.parse_progress("[12/24] completed naive_lr=0.1_seed=3 4d1cca1722f7fef8 ACC 61.11% 0.07 s · ETA 1s")
    assert (e.done, e.total, e.status, e.name, e.run_id, e.seconds) == (12, 24, "completed", "naive_lr=0.1_seed=3",
                                                                     "4d1cca1722f7fef8", 0.07)
    assert e.acc == pytest.approx(0.6111)
    e = cli_lines.parse_progress("[1/2] diverged my run 71cbd2b88fc795c7 diverged 0.00 s · ETA 0s — diverged: loss NaN")
    assert (e.status, e.name, e.acc, e.message) == ("diverged", "my run", None, "diverged: loss NaN")
    assert cli_lines.parse_progress("name  strategy   ACC%     BWT") is None
    assert cli_lines.parse_header("writing results/x y.h5 (3 run(s), 1 already there)") == \
        cli_lines.Header("results/x y.h5", 3, 1)
    assert cli_lines.parse_header("sweep tiny (shard 0/2): 24 runs, 0 already in out.h5, jobs 2") == \
        cli_lines.Header("out.h5", 24, 0)
    assert cli_lines.parse_results("results: r.h5 (2 written now, 0 already there)") == "r.h5"
    assert cli_lines.parse_tuning("  tuning: 40/120 selection runs") == (40, 120)
    assert cli_lines.parse_tuning("  tuning: 130/140 selection runs so far (up to 560)") == (130, 140)


def test_refusal_parsing():
    r = cli_lines.parse_refusal('error: f.json: .strategy[0].lamda: unknown key "lamda"; allowed keys: a, b '
                                '(variant "a")\n', "f.json")
    assert (r.key_path, r.keys, r.context) == (".strategy[0].lamda", ("strategy", 0, "lamda"), 'variant "a"')
    assert r.message.startswith('unknown key "lamda"')
    r = cli_lines.parse_refusal("error: f.json: (top level): expected an object", "f.json")
    assert (r.key_path, r.keys) == ("", ())
    r = cli_lines.parse_refusal('error: f.json: line 2, column 1: unexpected end of the file', "f.json")
    assert (r.key_path, r.line, r.column) == (None, 2, 1)
    r = cli_lines.parse_refusal("error: f.json: no such file", "f.json")
    assert (r.key_path, r.message) == (None, "no such file")
    assert cli_lines.key_parts(".sweep.parameters[3].a b") == ("sweep", "parameters", 3, "a b")


def test_missing_binary_names_the_three_ways(monkeypatch, tmp_path):
    monkeypatch.delenv("CONTINUAL_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ck.ContinualNotFound) as e:
        ck.run({"name": "x"})
    assert "binary=" in str(e.value) and "CONTINUAL_BIN" in str(e.value) and "PATH" in str(e.value)
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(ck.ContinualNotFound, match="binary="):
        ck.sweep({"name": "x"}, binary=str(tmp_path / "nothing"))
    monkeypatch.setenv("CONTINUAL_BIN", str(tmp_path / "missing"))
    with pytest.raises(ck.ContinualNotFound, match="CONTINUAL_BIN"):
        ck.validate({"name": "x"})


# ------------------------------------------------------------------------ against the real CLI
def test_run_from_dict_and_path_equal_the_cli(binary, tmp_path, monkeypatch):
    reference = cli(binary, "run", QUICKSTART, str(tmp_path / "cli.h5"), REPO)
    monkeypatch.chdir(tmp_path)
    from_path = ck.run(QUICKSTART, "path.h5", binary=binary, progress=False)
    from_dict = ck.run(load(QUICKSTART), "dict.h5", binary=binary, progress=False)
    assert from_dict.attrs["path"] == str(tmp_path / "dict.h5")
    assert len(reference) == 2 and list(reference["status"]) == ["completed"] * 2
    assert_same_summary(from_path, reference)
    assert_same_summary(from_dict, reference)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".continualkit-")]   # temp file removed


def test_default_output_is_the_clis(binary, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = ck.run(load(QUICKSTART), binary=binary, progress=False)
    assert df.attrs["path"] == str(tmp_path / "results" / "quickstart.h5")
    with pytest.raises(ck.RunFailed) as e:                # an existing file is never replaced silently
        ck.run(load(QUICKSTART), binary=binary, progress=False)
    assert e.value.returncode == 2 and "--overwrite" in str(e.value)
    ck.run(load(QUICKSTART), binary=binary, progress=False, overwrite=True)


def test_sweep_jobs2_equals_the_cli(binary, tmp_path):
    reference = cli(binary, "sweep", TINY_SWEEP, str(tmp_path / "cli.h5"), REPO)
    df = ck.sweep(load(TINY_SWEEP), tmp_path / "py.h5", jobs=2, binary=binary, progress=False)
    assert len(df) == 24
    assert_same_summary(df, reference)


@pytest.mark.parametrize("config, key_path, keys", [
    ({"name": "x", "scenario": {"type": "habit_drift"}, "model": {"hiden": [4]}}, ".model.hiden", ("model", "hiden")),
    ({"model": {"hidden": [4]}}, ".scenario", ("scenario",)),
    ({"name": "x", "scenario": {"type": "habit_drift", "train_per_experiance": 5}},
     ".scenario.train_per_experiance", ("scenario", "train_per_experiance")),
    ({"name": "x", "scenario": {"type": "habit_drift"}, "optimizer": {"lr": "fast"}}, ".optimizer.lr",
     ("optimizer", "lr")),
    ({"name": "x", "scenario": {"type": "habit_drift"},
      "variants": [{"name": "a", "strategy": [{"type": "ewc", "lamda": 1}]}]},
     ".strategy[0].lamda", ("strategy", 0, "lamda")),
])
def test_bad_key_raises_with_its_key_path(binary, tmp_path, config, key_path, keys):
    out = tmp_path / "never.h5"
    with pytest.raises(ck.ConfigError) as e:
        ck.run(config, out, binary=binary, progress=False, base_dir=tmp_path)
    assert (e.value.key_path, e.value.keys) == (key_path, keys)
    assert e.value.file == "<dict>" and key_path in str(e.value) and ".continualkit-" not in str(e.value)
    assert not out.exists()
    if "lamda" in key_path:
        assert e.value.context == 'variant "a"'


def test_bad_file_and_syntax_error(binary, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x" ')
    with pytest.raises(ck.ConfigError) as e:
        ck.sweep(bad, binary=binary, progress=False)
    assert (e.value.key_path, e.value.line, e.value.column, e.value.file) == (None, 1, 14, str(bad))
    with pytest.raises(ck.ConfigError, match="no such file"):
        ck.validate(tmp_path / "absent.json", binary=binary)
    with pytest.raises(TypeError):
        ck.run([1, 2], binary=binary)


def test_relative_paths_resolve_against_base_dir(binary, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(os.path.join(REPO, "datasets", "habit_log.csv"), data / "habit_log.csv")
    config = load(os.path.join(REPO, "Experiments", "habit_events.json"))
    config["scenario"]["path"] = "habit_log.csv"                  # relative to base_dir
    saved = data / "saved.json"
    saved.write_text(json.dumps(config))
    reference = cli(binary, "run", str(saved), str(tmp_path / "cli.h5"), str(tmp_path))
    monkeypatch.chdir(tmp_path)                                   # habit_log.csv is not here …
    with pytest.raises(ck.ConfigError) as e:
        ck.run(config, "x.h5", binary=binary, progress=False)
    assert e.value.key_path == ".scenario.path"
    df = ck.run(config, "with_base.h5", binary=binary, progress=False, base_dir=data)   # … but there
    assert_same_summary(df, reference)                                     # run ids too: the path hashes as written
    monkeypatch.chdir(data)                                       # default base_dir: the working directory
    assert_same_summary(ck.run(config, "cwd.h5", binary=binary, progress=False), reference)
    assert not [n for n in os.listdir(data) if n.startswith(".continualkit-")]
    with pytest.raises(TypeError, match="base_dir"):
        ck.run(str(saved), binary=binary, base_dir=data)


def test_progress_bar_follows_every_run(binary, tmp_path):
    Recorder.bars = []
    ck.sweep(TINY_SWEEP, tmp_path / "s.h5", jobs=2, binary=binary, progress=Recorder)
    (bar,) = Recorder.bars
    assert (bar.total, bar.n, len(bar.steps), sum(bar.steps)) == (24, 24, 24, 24)
    assert "last " in bar.postfix and "0 failed" in bar.postfix
    Recorder.bars = []
    events = []
    ck.run(QUICKSTART, tmp_path / "r.h5", binary=binary, progress=Recorder, on_run=events.append)
    (bar,) = Recorder.bars
    assert (bar.total, bar.n) == (2, 2)
    assert [e.name for e in events] == ["naive", "joint"] and events[1].acc == pytest.approx(0.7092)


def test_failed_runs_raise_with_the_results(binary, tmp_path):
    config = load(QUICKSTART)
    config["optimizer"]["lr"] = 1e4                               # diverges at once
    with pytest.raises(ck.RunFailed) as e:
        ck.run(config, tmp_path / "d.h5", binary=binary, progress=False)
    assert e.value.returncode == 1 and list(e.value.results["status"]) == ["diverged"] * 2
    df = ck.run(config, tmp_path / "d.h5", binary=binary, progress=False, overwrite=True, check=False)
    assert list(df["status"]) == ["diverged"] * 2


def test_ctrl_c_keeps_finished_runs_and_resume_completes(binary, tmp_path):
    config = load(TINY_SWEEP)
    config["training"]["epochs"] = 20                             # long enough to be stopped midway
    out = tmp_path / "i.h5"

    def interrupt(event):
        if event.done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as e:
        ck.sweep(config, out, jobs=2, binary=binary, progress=False, on_run=interrupt)
    assert isinstance(e.value, ck.RunInterrupted) and e.value.returncode == 130
    assert e.value.path == str(out)
    kept = ck.load_summary(out)
    assert 2 <= len(kept) < 24 and set(kept["status"]) == {"completed"}
    full = ck.sweep(config, out, jobs=2, binary=binary, progress=False, resume=True)
    reference = cli(binary, "sweep", _saved(config, tmp_path), str(tmp_path / "ref.h5"), str(tmp_path))
    assert_same_summary(full, reference)


def _saved(config, directory):
    path = os.path.join(directory, "saved.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    return path


def test_live_tensorboard_logs_every_run(binary, tmp_path):
    tb = tmp_path / "tb"
    df = ck.sweep(TINY_SWEEP, tmp_path / "s.h5", jobs=2, binary=binary, progress=False, tensorboard=tb)
    dirs = [os.path.join(c, s) for c in os.listdir(tb) for s in os.listdir(tb / c)]
    assert len(dirs) == len(df) == 24
    assert all(any(n.startswith("events.") for n in os.listdir(tb / d)) for d in dirs)


def test_validate_lists_the_runs(binary):
    text = ck.validate(TINY_SWEEP, binary=binary)
    assert "24 run(s)" in text and "ca52a4137527a477" in text


def test_live_wandb_logs_every_run_offline(binary, tmp_path):
    pytest.importorskip("wandb")
    import glob

    import h5py
    from continualkit.export import read_wandb_offline
    df = ck.run(QUICKSTART, tmp_path / "q.h5", binary=binary, progress=False, wandb=tmp_path / "wb")
    dirs = glob.glob(str(tmp_path / "wb" / "wandb" / "offline-run-*"))
    assert len(dirs) == len(df) == 2
    names = set()
    for d in dirs:
        (records,) = [read_wandb_offline(f) for f in glob.glob(os.path.join(d, "run-*.wandb"))]
        run = next(r.run for k, r in records if k == "run")
        assert run.project == "quickstart"
        names.add(run.display_name)
        rid = df.loc[df["name"] == run.display_name, "run_id"].item()
        with h5py.File(df.attrs["path"], "r") as f:
            last = f["runs"][rid]["accuracy_matrix"][()][-1].mean()
        seen = [json.loads(i.value_json) for k, r in records if k == "history" for i in r.history.item
                if (i.key or "/".join(i.nested_key)) == "accuracy/seen_mean"]
        assert seen[-1] == pytest.approx(float(last), abs=1e-12)
    assert names == {"naive", "joint"}
