"""The client side of `continualkit.fedtrace`: each client's extra-state rule (SCAFFOLD's cᵢ,
FedDyn's ∇Lₖ, FedNova's aᵢ), the state a client carries from one of its rounds to the next
(controls, personal models, APFL's α, MOON's previous model), the update encodings, and the bytes
that travel."""
from __future__ import annotations

import numpy as np

from . import fedrules as P


def _put(out, key, value):
    out[key] = max(out.get(key, 0.0), float(value))


def local_optimizer(cfg):
    """The local SGD's η, momentum and weight decay as its steps apply them (float32 values)."""
    opt = cfg["optimizer"]
    return tuple(float(np.float32(opt.get(k, 0.0))) for k in ("lr", "momentum", "weight_decay"))


def _state(rnd, i, width):
    """A client's recorded state before the round (a NaN row or none written: never set, i.e. zero)."""
    row = rnd.get("client_state_before")
    return np.zeros(width) if row is None or np.isnan(row[i]).all() else row[i].astype(float)


def check_clients(run, out):
    """SCAFFOLD option II, FedDyn line 6 and FedNova's aᵢ per completed client; carried state."""
    cfg = run["config"]
    fed = cfg["federation"]
    lr, momentum, decay = local_optimizer(cfg)
    for rnd in run["rounds"]:
        x = rnd["global_before"].astype(float)
        for i in np.flatnonzero(rnd["completed"] == 1):
            if fed["aggregation"] == "scaffold":
                _scaffold(rnd, i, x, lr, out)
            elif fed["aggregation"] == "feddyn":
                expect = P.feddyn_client(_state(rnd, i, len(x)), rnd["local_model"][i].astype(float),
                                         x, fed["feddyn_alpha"])
                _put(out, "client_state", np.abs(expect - rnd["client_state_after"][i]).max())
            elif fed["aggregation"] == "fednova":
                a = P.fednova_normaliser(int(rnd["applied_steps"][i]), lr, momentum, fed.get("proximal_mu", 0), decay)
                _put(out, "fednova_normaliser", abs(a - rnd["normaliser"][i]))
        if fed["aggregation"] in ("scaffold", "feddyn") and "client_state_after" in rnd:
            # a straggler's update never reaches the server: it keeps its state (SCAFFOLD's cᵢ, FedDyn's ∇Lₖ)
            for i in np.flatnonzero(rnd["straggler"] == 1):
                _put(out, "straggler_keeps_state", np.abs(_state(rnd, i, len(x)) - np.nan_to_num(rnd["client_state_after"][i])).max())
        # the upload is the local model's shared part minus the received one (float32 difference)
        done = rnd["completed"] == 1
        if done.any() and "local_model" in rnd and "update_raw" not in rnd and fed.get("attack") is None:
            S = run["shared"]
            diff = rnd["local_model"][done][:, S].astype(np.float32) - rnd["global_before"][S].astype(np.float32)
            _put(out, "upload_is_local_minus_global", np.abs(diff - rnd["update"][done]).max())
    _carry(run, out)
    return out


def _scaffold(rnd, i, x, lr, out):
    """cᵢ⁺ = cᵢ − c + (x − yᵢ)/(Kη), Δcᵢ = cᵢ⁺ − cᵢ, K the applied steps."""
    ci = _state(rnd, i, len(x))
    c = rnd["server_state_before"].astype(float)
    K = int(rnd["applied_steps"][i])
    expect = P.scaffold_client(ci, c, x, rnd["local_model"][i].astype(float), K, lr)
    _put(out, "scaffold_ci", np.abs(expect - rnd["client_state_after"][i]).max())
    _put(out, "scaffold_delta_ci", np.abs((expect - ci) - rnd["control_delta"][i]).max())


_CARRIED = [("client_state_after", "client_state_before", "carry_client_state"),
            ("personal_after", "personal_before", "carry_personal_model"),
            ("apfl_alpha_after", "apfl_alpha_before", "carry_apfl_alpha")]


def _carry(run, out):
    """What a client holds at the start of a round is what it held at the end of its previous
    traced round (SCAFFOLD/FedDyn state, Ditto/APFL personal model, APFL's α), and MOON's
    previous model is the local model its previous round trained."""
    last = {}
    moon = run["config"]["federation"].get("moon") is not None
    for rnd in run["rounds"]:
        trained = (rnd["completed"] == 1) | (rnd["straggler"] == 1)
        for i in np.flatnonzero(trained):
            cid = int(rnd["client"][i])
            prev = last.get(cid)
            if prev is not None:
                for after, before, key in _CARRIED:
                    if before in rnd and not np.isnan(prev[after]).all():
                        _put(out, key, np.abs(np.asarray(prev[after]) - rnd[before][i]).max())
                if moon:
                    width = rnd["moon_previous"].shape[1]
                    _put(out, "moon_previous", np.abs(prev["local_model"][:width] - rnd["moon_previous"][i]).max())
            elif moon and "moon_previous" in rnd:
                # a first traced round: the round-0 client has no previous model (NaN row)
                if rnd["round"] == 0:
                    _put(out, "moon_previous_first_round", 0.0 if np.isnan(rnd["moon_previous"][i]).all() else 1.0)
            last[cid] = {k: rnd[k][i] for k in ("client_state_after", "personal_after", "apfl_alpha_after", "local_model")
                         if k in rnd}
            for after, _, _ in _CARRIED:
                last[cid].setdefault(after, np.array(np.nan))


def check_bytes(run, out):
    """Per client and round: upload = the encoded update + the float32 arrays sent beside it
    (SCAFFOLD's Δcᵢ), download = the float32 shared model + what comes down beside it (SCAFFOLD's
    c); with secure aggregation (Bonawitz et al. 2017, as docs/federated.md counts it) two 32-byte
    keys, an 80-byte share pair per other participant, the masked update as 4-byte ring elements
    and a 32-byte share per dropout, and (64 + 80) bytes received per other participant."""
    fed = run["config"]["federation"]
    S = len(run["shared"])
    extra = S if fed["aggregation"] == "scaffold" else 0
    secure = fed.get("secure_aggregation", False)
    for rnd in run["rounds"]:
        done, drop, late = (rnd[k] == 1 for k in ("completed", "dropped", "straggler"))
        took_part = done | drop | late
        m, failed = int(took_part.sum()), int((drop | late).sum())
        for i in np.flatnonzero(took_part):
            up = 0
            if done[i]:
                enc = _encoded_bytes(run, rnd, i, out)
                up = 4 * (S + extra) + 32 * failed if secure else enc + 4 * extra
            down = 4 * S + 4 * extra
            if secure:
                up += 64 + (m - 1) * 80
                down += (m - 1) * (64 + 80)
            _put(out, "bytes_up", abs(int(rnd["bytes_up"][i]) - up))
            _put(out, "bytes_down", abs(int(rnd["bytes_down"][i]) - down))


def _encoded_bytes(run, rnd, i, out):
    """The encoded update's bytes; with an encoding, checks its decoding against the upload."""
    fed = run["config"]["federation"]
    enc = fed.get("encoding", "float32")
    raw = rnd["update_raw"][i] if "update_raw" in rnd else rnd["update"][i]
    decoded, nbytes = P.encode(raw, enc, fed.get("top_k_fraction", 0.1))
    _put(out, "encoding_decoded", np.abs(decoded - rnd["update"][i]).max())
    return nbytes

