"""A file of the wrong kind given to `continualkit` (issue 41.8): one line saying what it got and
which command takes it, exit 2, no traceback — and results files still pass through."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import h5py
import pytest

from continualkit import cli
from continualkit.filekind import HDF5_SIGNATURE, kind, wrong_results_file

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
READERS = [["table"], ["plot", "-o", "figs"], ["report", "-o", "r.html"], ["summary"], ["check"],
           ["export", "--csv", "out"]]


@pytest.fixture
def experiment(tmp_path):
    p = tmp_path / "exp.json"
    p.write_text(json.dumps({"name": "x", "scenario": {"type": "habit_drift"}}, indent=1))
    return str(p)


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_an_experiment_json_is_named_with_the_command_that_takes_it(args, experiment, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main([args[0], experiment] + args[1:]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == (f"continualkit {args[0]}: {experiment} is a JSON file (an experiment file?); `continualkit {args[0]}` "
                   f"takes a results file (HDF5) written by `continual run` or `continual sweep` — to make one: "
                   f"continual run {experiment}\n")
    assert not os.path.exists(tmp_path / "figs") and not os.path.exists(tmp_path / "r.html")


def test_the_installed_entry_point_prints_no_traceback(experiment):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    r = subprocess.run([sys.executable, "-m", "continualkit", "table", experiment], capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert "is a JSON file" in r.stderr and r.stdout == ""


def test_a_scenario_file_and_a_text_file_are_told_apart_from_results(tmp_path, synthetic, capsys):
    scenario = str(tmp_path / "scenario.h5")
    with h5py.File(scenario, "w") as f:
        f.create_group("experiences/000/test")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert cli.main(["table", scenario]) == 2
    assert f"{scenario} is a scenario file (HDF5); `continualkit table` takes a results file" in capsys.readouterr().err
    assert cli.main(["compare", synthetic, str(notes)]) == 2
    assert f"{notes} is a text file;" in capsys.readouterr().err
    # A results file is not refused.
    assert wrong_results_file(synthetic, "table") is None
    assert cli.main(["summary", synthetic]) == 0


def test_kinds_come_from_the_first_bytes_not_the_name(tmp_path):
    h5 = tmp_path / "looks.json"
    h5.write_bytes(bytes(512) + HDF5_SIGNATURE + bytes(100))      # after a 512-byte user block
    assert kind(str(h5)) == "hdf5"
    (tmp_path / "a.h5").write_text("\ufeff  [1, 2]")
    assert kind(str(tmp_path / "a.h5")) == "json"
    (tmp_path / "b").write_bytes("naï".encode()[:-1])             # cut inside a character: still text
    assert kind(str(tmp_path / "b")) == "text"
    (tmp_path / "c").write_bytes(b"{\0}")
    assert kind(str(tmp_path / "c")) == "binary"
    (tmp_path / "d").write_bytes(b"")
    assert kind(str(tmp_path / "d")) == "empty"
    assert kind(str(tmp_path)) == "directory" and kind(str(tmp_path / "none")) == "missing"
