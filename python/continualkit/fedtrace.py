"""Recompute a traced federated run's server and client steps from the papers' equations
(`continualkit.fedrules`), independently of the Swift code, and report the largest absolute
difference per check (docs/federated.md, "Checking the arithmetic: the trace harness").

A run writes its trace with `"federation": {"trace": {"rounds": N}}` (docs/results-format.md,
`federation/trace/`). `check_file(path)` returns, per run, {check name: max |recorded − recomputed|}
over the traced rounds; integer checks (bytes, staleness) are exact differences. The server steps
are here, the clients' state rules, carried state and bytes in `fedtrace_clients`, the local
rounds (full-batch runs) in `fedtrace_local`.

    python -m continualkit.fedtrace results.h5
"""
from __future__ import annotations

import json
import sys

import h5py
import numpy as np

from . import fedrules as P
from .fedtrace_clients import check_bytes, check_clients, local_optimizer
from .fedtrace_local import check_local

# rules that need at least this many updates: (aggregation, fed) -> count
_NEEDS = {"krum": lambda f: max(2 * f.get("byzantine", 1) + 3, f.get("krum_selected", 1) + f.get("byzantine", 1)),
          "multi_krum": lambda f: max(2 * f.get("byzantine", 1) + 3, f.get("krum_selected", 2) + f.get("byzantine", 1)),
          "bulyan": lambda f: 4 * f.get("byzantine", 1) + 3}


def load_runs(path):
    """Every run of a results file that holds a trace: its config, federation attributes,
    shared-parameter index, traced rounds (dicts of arrays) and FedBuff's step table."""
    runs = []
    with h5py.File(path, "r") as f:
        for rid, g in f["runs"].items():
            if "federation" not in g or "trace" not in g["federation"]:
                continue
            fg = g["federation"]
            tg = fg["trace"]
            rounds = [{k: v[()] for k, v in tg[name].items()} | {"round": int(tg[name].attrs["round"])}
                      for name in sorted(k for k in tg if k.startswith("round_"))]
            fb = {k: v[()] for k, v in fg["fedbuff"].items()} if "fedbuff" in fg else None
            runs.append({"run_id": rid, "name": str(g.attrs.get("variant", rid)),
                         "config": json.loads(g.attrs["config_json"]), "clients": int(fg.attrs["clients"]),
                         "q": float(fg.attrs["sampling_rate"]), "shared": tg["shared_index"][()],
                         "rounds": rounds, "fedbuff": fb})
    return runs


def _rows(rnd):
    """The completed rows' updates (float64) and sample counts."""
    done = rnd["completed"].astype(bool)
    upd = rnd["update"][done].astype(float) if "update" in rnd else np.zeros((0, 0))
    return done, upd, rnd["samples"][done]


def aggregate(run, rnd, uniform_fedavg=False):
    """The rule's aggregate as the paper writes it, or None when the round has none."""
    fed = run["config"]["federation"]
    lr, momentum, decay = local_optimizer(run["config"])
    done, U, n = _rows(rnd)
    rule = fed["aggregation"]
    if fed.get("clip_norm") is not None:
        return None  # DP-FedAvg: checked by check_dp
    if len(U) == 0 or len(U) < _NEEDS.get(rule, lambda f: 1)(fed):
        return None
    if rule == "fedavg":
        return P.uniform_mean(U) if uniform_fedavg else P.weighted_mean(U, n)
    if rule in ("scaffold", "feddyn"):
        return P.uniform_mean(U)
    if rule == "median":
        return P.median(U)
    if rule == "trimmed_mean":
        return P.trimmed_mean(U, fed["trim_fraction"])
    if rule in ("krum", "multi_krum"):
        return P.krum(U, fed["byzantine"], fed["krum_selected"])
    if rule == "bulyan":
        return P.bulyan(U, fed["byzantine"])
    if rule == "fednova":
        a = [P.fednova_normaliser(int(t), lr, momentum, fed.get("proximal_mu", 0), decay) for t in rnd["applied_steps"][done]]
        keep = np.asarray(a) > 0
        return P.fednova(U[keep], n[keep], np.asarray(a)[keep]) if keep.any() else None
    if rule == "qfedavg":
        lip = fed.get("qfed_lipschitz") or 1.0 / lr
        return P.qfedavg(U, rnd["loss"][done], fed["qfed_q"], lip)
    raise ValueError(f"no paper rule for aggregation {rule}")


def check_dp(run, rnd, out):
    """DP-FedAvg (McMahan et al. 2018): the clipped updates' sum / (qN) plus noise N(0, (σC)²)/(qN).
    Returns the noise the round added (sum units), to test its spread over the rounds."""
    fed = run["config"]["federation"]
    C, qN = fed["clip_norm"], run["q"] * run["clients"]
    done, U, _ = _rows(rnd)
    clipped = np.array([P.clip(u, C) for u in U]) if len(U) else np.zeros((0, len(run["shared"])))
    if len(U):
        # the Swift side clips in float32: allow its rounding above C
        _put(out, "dp_clip_norm_excess", max(0.0, float(np.linalg.norm(clipped, axis=1).max() - C * (1 + 1e-6))))
    if "aggregate" not in rnd:
        return np.zeros(0)
    noise = rnd["aggregate"].astype(float) * qN - clipped.sum(0)
    if fed.get("noise_multiplier", 0) == 0:
        _put(out, "aggregate", float(np.abs(noise).max() / qN))
    return noise


def _put(out, key, value):
    out[key] = max(out.get(key, 0.0), float(value))


def _transform(run, agg, h_after):
    fed = run["config"]["federation"]
    if fed["personal"] == "pfedme":
        return fed["pfedme_beta"] * agg
    if fed["aggregation"] == "feddyn":
        return agg - h_after / fed["feddyn_alpha"]
    return agg


def check_server(run, uniform_fedavg=False):
    """Recompute every traced round's server step; {check: max abs difference}."""
    fed, out = run["config"]["federation"], {}
    S = run["shared"]
    m = v = np.zeros(len(S))
    state = np.zeros(len(S))
    noises = []
    for rnd in run["rounds"]:
        x = rnd["global_before"].astype(float)
        frozen = np.setdiff1d(np.arange(len(x)), S)
        _put(out, "frozen", np.abs(rnd["global_after"][frozen] - x[frozen]).max(initial=0))
        if fed.get("fedbuff") is not None:
            continue  # check_fedbuff
        state = _server_state(run, rnd, state, out)
        if fed.get("clip_norm") is not None:
            noises.append(check_dp(run, rnd, out))
            agg = rnd["aggregate"].astype(float) if "aggregate" in rnd else None
        else:
            agg = aggregate(run, rnd, uniform_fedavg)
            if agg is not None and "aggregate" in rnd:
                _put(out, "aggregate", np.abs(agg - rnd["aggregate"]).max())
        if agg is None:
            _put(out, "aggregated_when_it_should_not", "aggregate" in rnd)
            _put(out, "global", np.abs(rnd["global_after"] - x).max())
            continue
        _put(out, "missing_aggregate", "aggregate" not in rnd)
        upd = _transform(run, agg, state)
        _put(out, "server_update", np.abs(upd - rnd["server_update"]).max())
        x1, m, v = P.server_optimizer(fed["server_optimizer"], fed["server_lr"], x[S], upd, m, v,
                                      fed.get("server_beta1", 0.9), fed.get("server_beta2", 0.99), fed.get("server_tau", 1e-3))
        _put(out, "global", np.abs(x1 - rnd["global_after"][S]).max())
        if "server_first_moment" in rnd:
            _put(out, "server_moments", np.abs(m - rnd["server_first_moment"]).max())
        if "server_second_moment" in rnd:
            _put(out, "server_moments", np.abs(v - rnd["server_second_moment"]).max())
    if fed.get("noise_multiplier", 0) > 0:
        _noise_spread(run, np.concatenate(noises), out)
    return out


def _server_state(run, rnd, state, out):
    """SCAFFOLD's c or FedDyn's h: the recorded state before the round must be the previous
    round's (zero at the start); returns the paper's state after the round."""
    fed = run["config"]["federation"]
    if fed["aggregation"] not in ("scaffold", "feddyn"):
        return state
    _put(out, "server_state_carry", np.abs(rnd["server_state_before"] - state).max())
    done, U, _ = _rows(rnd)
    c = rnd["server_state_before"].astype(float)
    if fed["aggregation"] == "scaffold":
        new = P.scaffold_server(c, rnd["control_delta"][done].astype(float), run["clients"]) if len(U) else c
    else:
        new = P.feddyn_server(c, U, fed["feddyn_alpha"], run["clients"])[0] if len(U) else c
    _put(out, "server_state", np.abs(new - rnd["server_state_after"]).max())
    return new


def _noise_spread(run, noise, out):
    """The added noise's standard deviation against σC: the relative error, and how many of its
    standard errors (1/√(2n)) it lies off (a 5-σ bound fails a wrong calibration)."""
    fed = run["config"]["federation"]
    sd = fed["noise_multiplier"] * fed["clip_norm"]
    rel = noise.std() / sd - 1
    out["dp_noise_sd_relative_error"] = float(abs(rel))
    out["dp_noise_sd_z"] = float(abs(rel) * np.sqrt(2 * len(noise)))
    out["dp_noise_mean_z"] = float(abs(noise.mean()) / (sd / np.sqrt(len(noise))))


def check_fedbuff(run, out):
    """FedBuff (Nguyen et al. 2022, Algorithm 1): each server step is the staleness-weighted mean
    of the K buffered updates, τ = server steps between the client's download and the step."""
    fed, fb = run["config"]["federation"], run["fedbuff"]
    cfg, S = fed["fedbuff"], run["shared"]
    traced = {r["round"]: r for r in run["rounds"]}
    step_round = fb.get("step_round", np.zeros(0, int))
    for r, rnd in traced.items():
        x = rnd["global_before"].astype(float)[S]
        for k in np.flatnonzero(step_round == r):
            rounds_d = fb["step_download_rounds"][k]
            tau = k - np.array([(step_round < d).sum() for d in rounds_d])
            _put(out, "fedbuff_staleness", np.abs(tau - fb["step_staleness"][k]).max())
            s = P.staleness_weight(tau, cfg.get("staleness_exponent", 0.5))
            _put(out, "fedbuff_weights", np.abs(s - fb["step_weights"][k]).max())
            rows = [_row_of(traced.get(int(d)), int(c)) for c, d in zip(fb["step_clients"][k], rounds_d)]
            if any(rw is None for rw in rows):
                return out  # an update from an untraced round: stop at this round
            U = np.array([rw[0] for rw in rows])
            if cfg.get("weighting", "uniform") == "uniform":
                step = (s[:, None] * U).sum(0) / len(U)
            else:
                n = np.array([rw[1] for rw in rows], float)
                step = ((s * n)[:, None] * U).sum(0) / n.sum()
            x = x + fed["server_lr"] * step
        _put(out, "global", np.abs(x - rnd["global_after"][S]).max())
    return out


def _row_of(rnd, client):
    if rnd is None:
        return None
    i = np.flatnonzero((rnd["client"] == client) & (rnd["completed"] == 1))
    return (rnd["update"][i[0]].astype(float), int(rnd["samples"][i[0]])) if len(i) else None


def check_run(run, uniform_fedavg=False):
    """Every check of one run: server step, client rules, state carried between rounds, bytes."""
    out = check_server(run, uniform_fedavg)
    if run["config"]["federation"].get("fedbuff") is not None:
        check_fedbuff(run, out)
    check_clients(run, out)
    check_local(run, out)
    check_bytes(run, out)
    return out


def check_file(path, uniform_fedavg=False):
    """{run name: {check: max abs difference}} for every traced run of a results file."""
    return {r["name"]: check_run(r, uniform_fedavg) for r in load_runs(path)}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    for path in argv:
        for name, checks in check_file(path).items():
            worst = max((v for k, v in checks.items() if not k.startswith("dp_noise")), default=0.0)
            print(f"{name}: max abs difference {worst:.3g}  " + ", ".join(f"{k}={v:.3g}" for k, v in sorted(checks.items())))


if __name__ == "__main__":
    main()
