"""Issue 43, item 1 (leftovers): local rounds with mini-batches and FLwF-2T's distillation,
recomputed from the trace. The trace records the rows every local step visited (`data_order`,
`personal_order`); `continualkit.fedtrace_local` cuts each pass of that order into batches of
`training.batch_size` (the last one partial) and retrains every client's round with its own
float64 MLP from the papers' equations. FLwF-2T (Usmanova et al. 2021) distils two teachers: the
`lwf` strategy's old model (`lwf_previous`, the client's model at its last consolidation) and the
server model the client received.

Batch 10 (it divides few clients' round data: most rounds end on a partial batch), one local
epoch as in the converged tables, two for some configurations and a steps budget that cuts a pass
short; skipped without a `continual` binary (CONTINUAL_BIN)."""
import json

import numpy as np
import pytest

from continualkit import fedtrace as FT
from test_federated_trace import STATISTICAL, TOL, _experiment, run_traced

LWF = [{"type": "lwf", "lambda": 1.0, "temperature": 2.0}]

# name: federation overrides (and optional "optimizer" and "strategy" overrides)
MINI_BATCH = {
    "fedavg": {},
    "fedavg_2_epochs": {"local_epochs": 2},
    "fedavg_steps_budget": {"local_epochs": 3, "local_steps": 7},
    "fedavg_momentum_decay": {"optimizer": {"momentum": 0.9, "weight_decay": 0.01}},
    "fedprox": {"proximal_mu": 0.5},
    "scaffold": {"aggregation": "scaffold", "local_epochs": 2},
    "feddyn": {"aggregation": "feddyn", "feddyn_alpha": 0.1},
    "fednova_weight_decay": {"aggregation": "fednova", "optimizer": {"weight_decay": 0.05}},
    "ditto": {"personal": "ditto", "ditto_lambda": 0.5, "local_epochs": 2},
    "apfl": {"personal": "apfl", "apfl_alpha": 0.25, "apfl_alpha_lr": 0.5},
    "pfedme": {"personal": "pfedme", "pfedme_lambda": 15, "pfedme_inner_steps": 3, "pfedme_personal_lr": 0.02},
    "per_fedavg": {"personal": "per_fedavg", "per_fedavg_alpha": 0.02, "local_epochs": 2},
    "per_fedavg_hf": {"personal": "per_fedavg", "per_fedavg_alpha": 0.02, "per_fedavg_variant": "hessian_free", "local_epochs": 2},
    "fedrep": {"personal": "fedrep", "fedrep_head_epochs": 2},
    "moon": {"moon": {"mu": 5.0, "temperature": 0.5}},
    "flwf_server_teacher": {"server_distillation": 0.5, "server_distillation_temperature": 3.0, "local_epochs": 2},
    "flwf2t": {"strategy": LWF, "server_distillation": 0.5, "server_distillation_temperature": 3.0, "local_epochs": 2},
    "flwf2t_per_round": {"strategy": LWF, "server_distillation": 0.5, "server_distillation_temperature": 3.0,
                         "consolidate": "round", "local_epochs": 2},
}


@pytest.fixture(scope="module")
def mini_batch(tmp_path_factory):
    # 2 classes an experience: the clients cross experience boundaries, so FLwF-2T's first teacher exists
    exp = _experiment(MINI_BATCH, name="federated_trace_mini_batch", training={"batch_size": 10},
                      scenario={"classes_per_experience": 2})
    return {r["name"]: r for r in FT.load_runs(run_traced(tmp_path_factory, exp, "mini_batch"))}


def _local(checks):
    return {k: v for k, v in checks.items() if k.startswith("local_") or k in ("qfed_loss", "order_steps")}


def test_mini_batch_rounds_match_their_papers(mini_batch):
    """Every configuration's local models (and Ditto's and APFL's personal models) retrained on
    the recorded batches agree with the trace; the order has as many batches as the round's steps."""
    assert sorted(mini_batch) == sorted(MINI_BATCH)
    for name, run in sorted(mini_batch.items()):
        checks = FT.check_run(run)
        local = _local(checks)
        print(f"{name:22s} local steps: " + ", ".join(f"{k} {v:.1e}" for k, v in sorted(local.items())))
        assert len(local) > 1 and local["order_steps"] == 0, f"{name}: {local}"
        bad = {k: v for k, v in checks.items() if k not in STATISTICAL and v > TOL}
        assert not bad, f"{name}: {bad}"


def test_the_fixture_has_partial_batches_passes_and_teachers(mini_batch):
    """The cases the recomputation must get right occur: rounds whose data batch 10 does not
    divide, two passes over the data, a pass cut short by the steps budget, and FLwF-2T's first
    teacher present for some clients (absent before their first boundary)."""
    rounds = [r for run in mini_batch.values() for r in run["rounds"]]
    assert any((r["data_count"][r["completed"] == 1] % 10 != 0).any() for r in rounds)
    two = mini_batch["fedavg_2_epochs"]["rounds"][0]
    assert (two["data_order_count"] == 2 * two["data_count"]).all()
    budget = mini_batch["fedavg_steps_budget"]["rounds"][0]
    assert (budget["local_steps"] <= 7).all() and (budget["data_order_count"] % budget["data_count"] != 0).any()
    for name in ("flwf2t", "flwf2t_per_round"):
        has = [(~np.isnan(r["lwf_previous"]).all(1)).sum() for r in mini_batch[name]["rounds"] if "lwf_previous" in r]
        assert sum(has) > 0, f"{name}: no client distilled its first teacher"
    assert "personal_order" in mini_batch["ditto"]["rounds"][0]


def _wrong(run, **federation):
    cfg = json.loads(json.dumps(run["config"]))
    cfg["federation"].update(federation)
    return dict(run, config=cfg)


def test_mini_batch_checks_can_fail(mini_batch):
    """A batch order off by one row, FLwF-2T's server temperature or first teacher's temperature
    wrong, or its first teacher left out each disagree by far more than the tolerance."""
    run = mini_batch["fedavg"]
    def off_by_one(r):
        # each client's order rolled by one row: every batch loses a row to the next one
        ends = np.cumsum(r["data_order_count"])
        return np.concatenate([np.roll(r["data_order"][e - m:e], 1) for e, m in zip(ends, r["data_order_count"])])
    shifted = dict(run, rounds=[dict(r, data_order=off_by_one(r)) for r in run["rounds"]])
    assert FT.check_run(shifted)["local_fedavg"] > 100 * TOL
    flwf = mini_batch["flwf2t"]
    assert FT.check_run(_wrong(flwf, server_distillation_temperature=2.0))["local_flwf"] > 100 * TOL
    cold = json.loads(json.dumps(flwf["config"]))
    cold["strategy"][0]["temperature"] = 3.0
    assert FT.check_run(dict(flwf, config=cold))["local_flwf"] > 100 * TOL
    orphan = dict(flwf, rounds=[{k: v for k, v in r.items() if k != "lwf_previous"} for r in flwf["rounds"]])
    assert FT.check_run(orphan)["local_flwf"] > 100 * TOL
