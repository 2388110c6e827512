"""Issue 43, item 1: every registered federated algorithm's server and client step recomputed
from a per-round trace (`federation.trace`) with the papers' equations in float64 numpy
(`continualkit.fedrules`, written independently of the Swift code), to float tolerance; a
deliberately wrong weight makes the check fail; the bytes of every upload and download against
the arrays that travel; Flower's aggregate functions as a second oracle where it has them.

The runs are small (10 clients, 7 a round, 3 traced rounds) and written by the `continual` CLI at
test time; skipped when no binary is found. The max abs difference per configuration is printed
(pytest -s) and written to $FEDTRACE_REPORT when set."""
import json
import os

import numpy as np
import pytest

from conftest import find_continual
from continualkit import fedrules as P
from continualkit import fedtrace as FT
from test_federation import _run

BASE = {
    "name": "federated_trace",
    "description": "test fixture: every federated algorithm, 3 traced rounds",
    "seed": 3,
    "scenario": {"type": "split_digits", "setting": "class", "classes_per_experience": 10},
    "population": {"users": 10},
    "model": {"hidden": [8], "activation": "relu"},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "training": {"batch_size": 16},
    "strategy": ["naive"],
    "federation": {"rounds": 4, "client_fraction": 0.7, "local_epochs": 1, "evaluate_every": 4,
                   "partition": {"type": "dirichlet", "alpha": 0.5}, "trace": {"rounds": 3}},
}

# name: federation overrides (and an optional "optimizer" override)
VARIANTS = {
    "fedavg": {},
    "fedprox": {"proximal_mu": 0.1},
    "fedavgm": {"server_optimizer": "fedavgm", "server_lr": 1.0, "server_beta1": 0.9},
    "fedadam": {"server_optimizer": "fedadam", "server_lr": 0.05},
    "fedyogi": {"server_optimizer": "fedyogi", "server_lr": 0.05},
    "fedadagrad": {"server_optimizer": "fedadagrad", "server_lr": 0.05},
    "scaffold": {"aggregation": "scaffold"},
    "fednova": {"aggregation": "fednova", "local_steps": 0},
    "fednova_weight_decay": {"aggregation": "fednova", "optimizer": {"weight_decay": 0.05}},
    "fednova_momentum": {"aggregation": "fednova", "optimizer": {"momentum": 0.9}},
    "fednova_proximal": {"aggregation": "fednova", "proximal_mu": 0.1},
    "qfedavg": {"aggregation": "qfedavg", "qfed_q": 1.0},
    "qfedavg_q2": {"aggregation": "qfedavg", "qfed_q": 2.0, "qfed_lipschitz": 10.0},
    "median": {"aggregation": "median"},
    "trimmed_mean": {"aggregation": "trimmed_mean", "trim_fraction": 0.2},
    "krum": {"aggregation": "krum", "byzantine": 1},
    "multi_krum": {"aggregation": "multi_krum", "byzantine": 1, "krum_selected": 3},
    "bulyan": {"aggregation": "bulyan", "byzantine": 1},
    "dp_clip": {"clip_norm": 0.05},
    "dp_fedavg": {"clip_norm": 0.05, "noise_multiplier": 1.0, "sampling": "poisson"},
    "ditto": {"personal": "ditto", "ditto_lambda": 0.5},
    "apfl": {"personal": "apfl", "apfl_alpha": 0.25},
    "pfedme": {"personal": "pfedme", "pfedme_beta": 0.5, "pfedme_inner_steps": 2},
    "per_fedavg": {"personal": "per_fedavg"},
    "fedrep": {"personal": "fedrep", "fedrep_head_epochs": 1},
    "fedper": {"share": "core", "personal": "local"},
    "fedavg_finetune": {"personal": "local"},
    "fedbuff": {"fedbuff": {"buffer_size": 3, "delay": "none"}},
    "fedbuff_samples": {"fedbuff": {"buffer_size": 4, "weighting": "samples", "staleness_exponent": 1.0}},
    "moon": {"moon": {"mu": 1.0}},
    "feddyn": {"aggregation": "feddyn", "feddyn_alpha": 0.1},
    "server_distillation": {"server_distillation": 0.5},
    "float16": {"encoding": "float16"},
    "int8": {"encoding": "int8"},
    "top_k": {"encoding": "top_k", "top_k_fraction": 0.2},
    "secure": {"secure_aggregation": True},
    "secure_int8": {"secure_aggregation": True, "encoding": "int8"},
    "scaffold_secure": {"aggregation": "scaffold", "secure_aggregation": True},
    "secure_dropouts": {"secure_aggregation": True, "dropout_probability": 0.3},
    "stragglers": {"round_deadline": 1.5e-5, "straggler_spread": 1.0},
    "scaffold_stragglers": {"aggregation": "scaffold", "round_deadline": 1.5e-5, "straggler_spread": 1.0},
    "feddyn_dropouts": {"aggregation": "feddyn", "feddyn_alpha": 0.1, "dropout_probability": 0.3},
}

# Full-batch local rounds (batch ≥ every client's round data, so no batch order is involved):
# the local steps themselves are recomputed with a numpy MLP (continualkit.fedtrace_local).
FULL_BATCH = {
    "fedavg": {},
    "fedavg_momentum_decay": {"optimizer": {"momentum": 0.9, "weight_decay": 0.01}},
    "fedprox": {"proximal_mu": 0.5},
    "scaffold": {"aggregation": "scaffold"},
    "feddyn": {"aggregation": "feddyn", "feddyn_alpha": 0.1},
    "fednova_weight_decay": {"aggregation": "fednova", "optimizer": {"weight_decay": 0.05}},
    "qfedavg": {"aggregation": "qfedavg", "qfed_q": 1.0},
    "ditto": {"personal": "ditto", "ditto_lambda": 0.5},
    "pfedme": {"personal": "pfedme", "pfedme_lambda": 15, "pfedme_inner_steps": 3, "pfedme_personal_lr": 0.02},
    "per_fedavg": {"personal": "per_fedavg", "per_fedavg_alpha": 0.02},
    "per_fedavg_hf": {"personal": "per_fedavg", "per_fedavg_alpha": 0.02, "per_fedavg_variant": "hessian_free"},
    "apfl": {"personal": "apfl", "apfl_alpha": 0.25, "apfl_alpha_lr": 0.5},
    "fedrep": {"personal": "fedrep", "fedrep_head_epochs": 2},
    "moon": {"moon": {"mu": 5.0, "temperature": 0.5}},
}

# float32 recording, float64 recomputation: differences of a few float32 ulps of the values
TOL = 2e-6
STATISTICAL = ("dp_noise_sd_relative_error", "dp_noise_sd_z", "dp_noise_mean_z")


def _experiment(variants_by_name=VARIANTS, name="federated_trace", **changes):
    variants = []
    for name_, over in variants_by_name.items():
        over = dict(over)
        v = {"name": name_, "federation": {k: x for k, x in over.items() if k not in ("optimizer", "strategy")}}
        if "optimizer" in over:
            v["optimizer"] = dict(BASE["optimizer"], **over["optimizer"])
        if "strategy" in over:
            v["strategy"] = over["strategy"]
        variants.append(v)
    exp = dict(BASE, name=name, variants=variants)
    for key, value in changes.items():
        exp[key] = dict(BASE[key], **value)
    return exp


def run_traced(tmp_path_factory, exp, stem):
    """`exp` run by the `continual` CLI into a temporary results file (the test is skipped
    without a binary); the file's path."""
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (set CONTINUAL_BIN, put it on PATH, or swift build -c release): trace check skipped")
    return _run(binary, exp, tmp_path_factory.mktemp("trace") / stem)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = run_traced(tmp_path_factory, _experiment(), "trace")
    return path, FT.load_runs(path)


@pytest.fixture(scope="module")
def full_batch(tmp_path_factory):
    exp = _experiment(FULL_BATCH, name="federated_trace_full_batch", training={"batch_size": 1000},
                      federation={"local_epochs": 3})
    return FT.load_runs(run_traced(tmp_path_factory, exp, "full_batch"))


def _worst(checks):
    return max((v for k, v in checks.items() if k not in STATISTICAL), default=0.0)


def test_every_algorithm_matches_its_paper(traced):
    path, runs = traced
    assert sorted(r["name"] for r in runs) == sorted(VARIANTS)
    report = {}
    for run in runs:
        checks = FT.check_run(run)
        report[run["name"]] = checks
        print(f"{run['name']:22s} max abs difference {_worst(checks):.2e}  ({len(checks)} checks)")
        bad = {k: v for k, v in checks.items() if k not in STATISTICAL and v > TOL}
        assert not bad, f"{run['name']}: {bad}"
        assert checks.get("global") is not None, f"{run['name']}: no server step was checked"
    if os.environ.get("FEDTRACE_REPORT"):
        with open(os.environ["FEDTRACE_REPORT"], "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)


def test_local_steps_match_their_papers(full_batch):
    """The local rounds (3 full-batch steps) recomputed with a numpy MLP: FedAvg's SGD (with
    momentum and weight decay), FedProx's proximal gradient, SCAFFOLD's corrected step, FedDyn's
    regularised step, q-FedAvg's Fₖ, Ditto's personal proximal step, pFedMe's bi-level step and
    Per-FedAvg's first-order and Hessian-free meta-steps."""
    assert sorted(r["name"] for r in full_batch) == sorted(FULL_BATCH)
    for run in full_batch:
        checks = FT.check_run(run)
        local = {k: v for k, v in checks.items() if k.startswith("local_") or k == "qfed_loss"}
        print(f"{run['name']:22s} local steps: " + ", ".join(f"{k} {v:.1e}" for k, v in sorted(local.items())))
        assert local, f"{run['name']}: no local step was recomputed"
        bad = {k: v for k, v in checks.items() if k not in STATISTICAL and v > TOL}
        assert not bad, f"{run['name']}: {bad}"


def test_client_rules_are_checked(traced):
    _, runs = traced
    by = {r["name"]: FT.check_run(r) for r in runs}
    for name, keys in {"scaffold": ["scaffold_ci", "scaffold_delta_ci", "server_state", "carry_client_state"],
                       "feddyn": ["client_state", "server_state", "carry_client_state"],
                       "fednova_weight_decay": ["fednova_normaliser"], "fednova_momentum": ["fednova_normaliser"],
                       "ditto": ["carry_personal_model"], "apfl": ["carry_personal_model", "carry_apfl_alpha"],
                       "moon": ["moon_previous"], "fedadam": ["server_moments"], "fedbuff": ["fedbuff_staleness", "fedbuff_weights"],
                       "int8": ["encoding_decoded"], "top_k": ["encoding_decoded"], "dp_clip": ["dp_clip_norm_excess", "aggregate"]}.items():
        for k in keys:
            assert k in by[name], f"{name}: check {k} did not run"
    failures = {r["name"]: sum(int(x[k].sum()) for x in r["rounds"] for k in ("dropped", "straggler")) for r in runs}
    for name in ("stragglers", "scaffold_stragglers", "secure_dropouts", "feddyn_dropouts"):
        assert failures[name] > 0, f"{name}: no client failed, the failure paths went unchecked"
    assert "straggler_keeps_state" in by["scaffold_stragglers"]


def test_dp_noise_matches_its_calibration(traced):
    _, runs = traced
    run = next(r for r in runs if r["name"] == "dp_fedavg")
    checks = FT.check_run(run)
    # the added noise has sd sigma*C: within 5 standard errors of its estimate, and mean 0
    assert checks["dp_noise_sd_z"] < 5, checks
    assert checks["dp_noise_mean_z"] < 5, checks
    wrong = json.loads(json.dumps(run["config"]))
    wrong["federation"]["noise_multiplier"] = 1.3
    assert FT.check_run(dict(run, config=wrong))["dp_noise_sd_z"] > 5


def test_a_wrong_weight_fails(traced):
    """The negative test: FedAvg recomputed with uniform instead of sample weights, and a trace
    whose sample counts are tampered with, both disagree by far more than the tolerance."""
    _, runs = traced
    run = next(r for r in runs if r["name"] == "fedavg")
    assert len(set(run["rounds"][0]["samples"][run["rounds"][0]["completed"] == 1])) > 1, "equal sample counts cannot tell the weights apart"
    uniform = FT.check_run(run, uniform_fedavg=True)
    assert uniform["aggregate"] > 100 * TOL and uniform["global"] > 100 * TOL, uniform
    tampered = dict(run, rounds=[dict(r) for r in run["rounds"]])
    s = tampered["rounds"][1]["samples"].copy()
    s[0] *= 3
    tampered["rounds"][1]["samples"] = s
    assert FT.check_run(tampered)["aggregate"] > 100 * TOL
    # and the SCAFFOLD rule with K off by one step
    sc = next(r for r in runs if r["name"] == "scaffold")
    bent = dict(sc, rounds=[dict(r, applied_steps=r["applied_steps"] + 1) for r in sc["rounds"]])
    assert FT.check_run(bent)["scaffold_ci"] > 100 * TOL


def test_rules_by_hand():
    """The paper rules on numbers small enough to check by hand."""
    U = np.array([[1.0, -2.0], [3.0, 0.0], [-1.0, 4.0]])
    assert np.allclose(P.weighted_mean(U, [1, 2, 1]), [1.5, 0.5])
    assert np.allclose(P.median(U), [1.0, 0.0])
    assert np.allclose(P.trimmed_mean(np.vstack([U, [[100, 100]]]), 0.25), [2.0, 2.0])
    assert P.fednova_normaliser(14, 0.1, weight_decay=0.05) == pytest.approx(13.554, abs=1e-3)
    assert P.fednova_normaliser(3, 0.1, momentum=0.5) == pytest.approx((3 - 0.5 * 0.875 / 0.5) / 0.5)
    # q = 0 is the unweighted mean; L δ/L cancels
    assert np.allclose(P.qfedavg(U, [0.3, 0.5, 0.7], 0.0, 20.0), U.mean(0))
    assert np.allclose(P.krum(np.array([[0.0], [0.1], [0.2], [5.0], [0.15]]), 1), [0.15])


def _flower():
    try:
        from flwr.server.strategy import aggregate as A
    except ImportError:
        pytest.skip("flwr (Flower) is not installed: its aggregate functions are an optional second oracle (pip install flwr)")
    return A


def _rounds_with_aggregate(run):
    for rnd in run["rounds"]:
        if "aggregate" in rnd:
            done = rnd["completed"] == 1
            yield rnd, rnd["update"][done].astype(float), rnd["samples"][done]


def test_flower_aggregates_agree(traced):
    """Flower's aggregate functions on the traced updates give the toolkit's aggregate: weighted
    mean, median, trimmed mean, Krum, Multi-Krum (unweighted: Flower weighs its selection by
    samples, the paper does not, so every update gets weight 1) and Bulyan."""
    A = _flower()
    _, runs = traced
    rules = {"fedavg": lambda U, n: A.aggregate([([u], int(k)) for u, k in zip(U, n)])[0],
             "median": lambda U, n: A.aggregate_median([([u], 1) for u in U])[0],
             "trimmed_mean": lambda U, n: A.aggregate_trimmed_avg([([u], 1) for u in U], 0.2)[0],
             "krum": lambda U, n: A.aggregate_krum([([u], 1) for u in U], 1, 0)[0],
             "multi_krum": lambda U, n: A.aggregate_krum([([u], 1) for u in U], 1, 3)[0],
             "bulyan": lambda U, n: A.aggregate_bulyan([([u], 1) for u in U], 1, A.aggregate_krum, to_keep=0)[0]}
    worst = {}
    for run in runs:
        if run["name"] not in rules:
            continue
        for rnd, U, n in _rounds_with_aggregate(run):
            diff = np.abs(rules[run["name"]](U, n) - rnd["aggregate"]).max()
            worst[run["name"]] = max(worst.get(run["name"], 0.0), float(diff))
    print("Flower oracle:", {k: f"{v:.1e}" for k, v in worst.items()})
    assert set(worst) == set(rules)
    assert all(v <= TOL for k, v in worst.items() if k != "bulyan"), worst


def test_flower_bulyan_differs_only_in_its_last_picks(traced):
    """Bulyan's last picks run Krum on 2f + 1 … 2f + 2 updates, where Krum's n − f − 2 nearest
    neighbours are ≤ 0 and the paper leaves the score undefined: the toolkit sums none (its pick
    is then the lowest client id), Flower one. With Flower's convention the harness's Bulyan is
    Flower's; with the toolkit's it is the toolkit's (test_every_algorithm_matches_its_paper)."""
    A = _flower()
    _, runs = traced
    run = next(r for r in runs if r["name"] == "bulyan")
    for rnd, U, _ in _rounds_with_aggregate(run):
        flower = A.aggregate_bulyan([([u], 1) for u in U], 1, A.aggregate_krum, to_keep=0)[0]
        assert np.abs(flower - P.bulyan(U, 1, least=1)).max() <= TOL


def test_flower_server_optimizers_agree(traced):
    """Flower's FedAvgM, FedAdam, FedYogi and FedAdagrad strategies, fed the traced client models,
    reach the traced global models. Flower's FedAdam adds Adam's bias correction (Kingma & Ba),
    which Reddi et al.'s Algorithm 2 and the toolkit leave out: its η is divided by that factor
    each round so that the two agree when everything else does."""
    _flower()
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server import strategy as St
    _, runs = traced
    worst = {}
    for run in runs:
        fed = run["config"]["federation"]
        name = run["name"]
        if name not in ("fedavgm", "fedadam", "fedyogi", "fedadagrad"):
            continue
        S, lr = run["shared"], fed["server_lr"]
        x0 = run["rounds"][0]["global_before"][S].astype(float)
        init = ndarrays_to_parameters([x0])
        if name == "fedavgm":
            strat = St.FedAvgM(initial_parameters=init, server_learning_rate=lr, server_momentum=fed["server_beta1"])
        else:
            cls = {"fedadam": St.FedAdam, "fedyogi": St.FedYogi, "fedadagrad": St.FedAdagrad}[name]
            kw = {} if name == "fedadagrad" else {"beta_1": fed["server_beta1"], "beta_2": fed["server_beta2"]}
            strat = cls(initial_parameters=init, eta=lr, tau=fed["server_tau"], **kw)
            strat.beta_1 = fed["server_beta1"]  # Flower's FedAdagrad has no beta_1 argument (0); Reddi et al. keep m
        for t, (rnd, U, n) in enumerate(_rounds_with_aggregate(run)):
            x = rnd["global_before"][S].astype(float)
            if name == "fedadam":
                b1, b2 = fed["server_beta1"], fed["server_beta2"]
                strat.eta = lr * (1 - b1 ** (t + 2)) / np.sqrt(1 - b2 ** (t + 2))
            results = [(None, FitRes(Status(Code.OK, ""), ndarrays_to_parameters([x + u]), int(k), {})) for u, k in zip(U, n)]
            # Flower counts rounds from 1; FedAdam's correction uses server_round + 1
            params, _ = strat.aggregate_fit(t + 1, results, [])
            got = parameters_to_ndarrays(params)[0]
            worst[name] = max(worst.get(name, 0.0), float(np.abs(got - rnd["global_after"][S]).max()))
    print("Flower server optimizers:", {k: f"{v:.1e}" for k, v in worst.items()})
    assert set(worst) == {"fedavgm", "fedadam", "fedyogi", "fedadagrad"}
    assert all(v <= TOL for v in worst.values()), worst


def test_local_checks_can_fail(full_batch):
    """A wrong constant in a local rule shows: MOON without its term, Ditto's λ and FedProx's μ
    off by a fifth, each far above the tolerance."""
    runs = {r["name"]: r for r in full_batch}
    for name, key, path, value in [("moon", "local_moon", ("moon", "mu"), 1e-9),
                                   ("ditto", "local_ditto_personal", ("ditto_lambda",), 0.6),
                                   ("fedprox", "local_fedprox", ("proximal_mu",), 0.4)]:
        run = runs[name]
        wrong = json.loads(json.dumps(run["config"]))
        node = wrong["federation"]
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        assert FT.check_run(dict(run, config=wrong))[key] > 100 * TOL, name
