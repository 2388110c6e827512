"""The Swift RDP accountant (`continual privacy`) against Google's dp-accounting, an independent
maintained implementation, on a grid of (sampling rate q, noise multiplier σ, rounds, δ): ε must
agree to 1e-6 relative, and the optimal order exactly."""
from __future__ import annotations

import itertools
import json
import subprocess

import pytest

from conftest import find_continual

dp_accounting = pytest.importorskip("dp_accounting", reason="pip install dp-accounting (CI installs it)")

QS = [0.001, 0.01, 0.05, 0.2, 0.5, 1.0]
SIGMAS = [0.6, 1.0, 1.7, 4.0]
ROUNDS = [1, 50, 3000]
DELTAS = [1e-5, 1e-8]


def reference(q, sigma, rounds, delta):
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), rounds)
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    return float(eps), float(order)


@pytest.fixture(scope="module")
def binary():
    b = find_continual()
    if b is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN or swift build -c release)")
    return b


def swift(binary, q, sigma, rounds, delta, every=None):
    args = [binary, "privacy", "--sampling-rate", repr(q), "--noise-multiplier", repr(sigma),
            "--rounds", str(rounds), "--delta", repr(delta), "--json"]
    if every:
        args += ["--every", str(every)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


@pytest.mark.parametrize("q,sigma", list(itertools.product(QS, SIGMAS)))
def test_epsilon_matches_dp_accounting(binary, q, sigma):
    for delta in DELTAS:
        # One CLI call reports every grid point of `ROUNDS` (they are multiples of 1 ... 3000 only
        # through --every 1, too long); call once per round count instead.
        for rounds in ROUNDS:
            (row,) = swift(binary, q, sigma, rounds, delta)
            eps, order = reference(q, sigma, rounds, delta)
            assert row["rounds"] == rounds
            assert row["epsilon"] == pytest.approx(eps, rel=1e-6, abs=1e-12), (q, sigma, rounds, delta)
            assert row["order"] == order, (q, sigma, rounds, delta)


def test_every_reports_the_running_epsilon(binary):
    rows = swift(binary, 0.02, 1.1, 100, 1e-5, every=25)
    assert [r["rounds"] for r in rows] == [25, 50, 75, 100]
    for r in rows:
        assert r["epsilon"] == pytest.approx(reference(0.02, 1.1, r["rounds"], 1e-5)[0], rel=1e-6)


@pytest.mark.parametrize("args,needle", [
    (["--sampling-rate", "0", "--noise-multiplier", "1", "--rounds", "3"], "--sampling-rate"),
    (["--sampling-rate", "0.1", "--noise-multiplier", "-1", "--rounds", "3"], "--noise-multiplier"),
    (["--sampling-rate", "0.1", "--noise-multiplier", "1", "--rounds", "0"], "--rounds"),
    (["--sampling-rate", "0.1", "--noise-multiplier", "1", "--rounds", "3", "--delta", "1"], "--delta"),
])
def test_bad_options_exit_2_naming_the_option(binary, args, needle):
    r = subprocess.run([binary, "privacy", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert needle in r.stderr
