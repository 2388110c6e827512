"""The local rounds of `continualkit.fedtrace`, recomputed from the papers with a float64 numpy
MLP (ReLU hidden layers, a linear output layer, the mean softmax cross-entropy over a batch;
parameters layer by layer as W [inputs × outputs] row-major, then b, y = act(x·W + b)).

Only full-batch rounds are recomputed (`training.batch_size` ≥ every client's round data, so the
batch order cannot matter): each local step is then one step on all the round's rows.
`check_local(run, out)` adds `local_<algorithm>` (max |recorded − recomputed| over the clients'
local models or personal models) and `qfed_loss` (q-FedAvg's Fₖ) to `out`.
"""
from __future__ import annotations

import numpy as np

from . import fedrules as P


class MLP:
    """Shapes of the run's MLP (`model.hidden`, `activation` relu) for inputs of `d` features."""

    def __init__(self, d, hidden, outputs):
        self.sizes = [d] + list(hidden) + [outputs]

    def split(self, w):
        out, k = [], 0
        for a, b in zip(self.sizes, self.sizes[1:]):
            out.append((w[k:k + a * b].reshape(a, b), w[k + a * b:k + a * b + b]))
            k += a * b + b
        return out

    def forward(self, w, x):
        """Activations of every layer (the input first) and the logits."""
        acts = [x]
        layers = self.split(w)
        for i, (W, b) in enumerate(layers):
            z = acts[-1] @ W + b
            acts.append(np.maximum(z, 0) if i < len(layers) - 1 else z)
        return acts

    def loss_grad(self, w, x, y, dz_hidden=None, task=True):
        """Mean cross-entropy over the rows and its gradient (plus `dz_hidden`, a gradient on the
        last hidden layer's activations, MOON's; `task` False: that gradient alone)."""
        acts = self.forward(w, x)
        logits = acts[-1]
        z = logits - logits.max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        n = len(y)
        loss = -np.log(p[np.arange(n), y]).mean()
        d = p.copy()
        d[np.arange(n), y] -= 1
        d = d / n if task else np.zeros_like(d)
        grads = []
        layers = self.split(w)
        for i in range(len(layers) - 1, -1, -1):
            W, _ = layers[i]
            grads.append(np.concatenate([(acts[i].T @ d).ravel(), d.sum(0)]))
            if i > 0:
                d = d @ W.T
                if i == len(layers) - 1 and dz_hidden is not None:
                    d = d + dz_hidden
                d = d * (acts[i] > 0)
        return loss, np.concatenate(grads[::-1])


def _model(run, d, parameters):
    """The run's MLP; its outputs follow from the parameter count."""
    cfg = run["config"]
    assert cfg["model"].get("activation", "relu") == "relu", "the harness's MLP is ReLU"
    sizes = [d] + list(cfg["model"]["hidden"])
    rest = parameters - sum(a * b + b for a, b in zip(sizes, sizes[1:]))
    return MLP(d, cfg["model"]["hidden"], rest // (sizes[-1] + 1))


def _sgd(w, g, lr, momentum, decay, buf):
    """Local SGD: d = g + wd·w; heavy ball buf = μ·buf + d; w − η·buf."""
    d = g + decay * w
    if momentum > 0:
        buf = d if buf is None else momentum * buf + d
        d = buf
    return w - lr * d, buf


def local_round(run, rnd, i, net, x, y):
    """The paper's local model after the client's round (None where not recomputed)."""
    from .fedtrace_clients import local_optimizer
    fed = run["config"]["federation"]
    lr, momentum, decay = local_optimizer(run["config"])
    w0 = rnd["global_before"].astype(float)
    steps = int(rnd["local_steps"][i])
    personal = fed["personal"]
    if personal == "pfedme":
        return _pfedme(fed, net, w0, x, y, lr, steps)
    if personal == "per_fedavg":
        return _per_fedavg(fed, net, w0, x, y, lr, steps)
    if personal == "fedrep":
        return _fedrep(run, rnd, i, net, x, y, lr)
    if personal == "apfl" or fed.get("server_distillation", 0) > 0:
        return None
    ci = _row(rnd, "client_state_before", i, len(w0))
    c = rnd["server_state_before"].astype(float) if "server_state_before" in rnd else None
    w, buf = w0.copy(), None
    for _ in range(steps):
        _, g = net.loss_grad(w, x, y)
        if fed.get("proximal_mu", 0) > 0:
            g = g + fed["proximal_mu"] * (w - w0)                     # FedProx, eq. 2
        if fed["aggregation"] == "scaffold":
            g = g + c - ci                                              # SCAFFOLD, Algorithm 1 line 10
        if fed["aggregation"] == "feddyn":
            g = g - ci + fed["feddyn_alpha"] * (w - w0)                 # FedDyn, Algorithm 1 line 5
        if fed.get("moon"):
            g = g + _moon_gradient(fed["moon"], net, w, w0, rnd, i, x)   # MOON, eq. 3–4
        w, buf = _sgd(w, g, lr, momentum, decay, buf)
    return w


def _moon_gradient(moon, net, w, w_global, rnd, i, x):
    """μ·∇ of the batch mean of ℓ_con = −log(e^{s_g/τ} / (e^{s_g/τ} + e^{s_p/τ})) (Li, He & Song
    2021, eq. 3), s the cosine similarity of the last hidden layer's activations z under the model
    with z_glob (the received model) and z_prev (the client's previous model); 0 without one."""
    prev = rnd["moon_previous"][i] if "moon_previous" in rnd else None
    if prev is None or np.isnan(prev).all():
        return np.zeros_like(w)
    width = len(prev)
    def z_of(params):
        full = np.concatenate([params[:width], w[width:]])
        return net.forward(full, x)[-2]
    z, zg, zp = z_of(w), z_of(w_global), z_of(prev.astype(float))
    tau = moon.get("temperature", 0.5)
    def cos(a, b):
        # PyTorch's CosineSimilarity: a·b / max(‖a‖‖b‖, 1e-8), and its gradient in a
        na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
        den = np.maximum(na * nb, 1e-8)
        s = (a * b).sum(1) / den
        small = na * nb <= 1e-8
        grad = b / den[:, None] - np.where(small, 0, s / np.where(small, 1, na ** 2))[:, None] * a
        return s, grad
    (sg, dg), (sp, dp) = cos(z, zg), cos(z, zp)
    sigma = 1 / (1 + np.exp(-(sp - sg) / tau))
    dz = moon["mu"] * (sigma / tau)[:, None] * (dp - dg) / len(x)
    return net.loss_grad(w, x, np.zeros(len(x), int), dz_hidden=dz, task=False)[1]


def _fedrep(run, rnd, i, net, x, y, lr):
    """FedRep (Collins et al. 2021, Algorithm 1): `fedrep_head_epochs` steps on the head (the
    output layer) with the body frozen, then `local_epochs` steps on the body with the head frozen;
    the body starts at the received one, the head where the client's last round left it."""
    fed = run["config"]["federation"]
    S = run["shared"]
    body = np.zeros(len(rnd["global_before"]), bool)
    body[S] = True
    w = rnd["global_before"].astype(float).copy()
    head = run.setdefault("_fedrep_heads", {}).get(int(rnd["client"][i]))
    if head is not None:
        w[~body] = head
    for mask, steps in ((~body, fed["fedrep_head_epochs"]), (body, fed["local_epochs"])):
        for _ in range(steps):
            w = w - lr * net.loss_grad(w, x, y)[1] * mask
    run["_fedrep_heads"][int(rnd["client"][i])] = rnd["local_model"][i][~body].astype(float)
    return w


def apfl_personal(run, rnd, i, net, x, y):
    """APFL (Deng et al. 2020, Algorithm 1) per local step, with w the client's FedAvg iterate
    before the step: v̄ = αv + (1 − α)w; v ← v − η·α∇f(v̄); α ← α − η_α⟨v − w, ∇f(v̄)⟩ (v before
    its step), clipped to [0, 1]. Returns (v, α)."""
    from .fedtrace_clients import local_optimizer
    fed = run["config"]["federation"]
    lr = local_optimizer(run["config"])[0]
    rate = float(np.float32(fed.get("apfl_alpha_lr") or lr))
    w = rnd["global_before"].astype(float)
    v = rnd["personal_before"][i].astype(float)
    a = float(rnd["apfl_alpha_before"][i])
    for _ in range(int(rnd["local_steps"][i])):
        g = net.loss_grad(a * v + (1 - a) * w, x, y)[1]
        v, a = v - lr * a * g, min(1.0, max(0.0, a - rate * float(np.dot(v - w, g))))
        w = w - lr * net.loss_grad(w, x, y)[1]
    return v, a


def _row(rnd, key, i, width):
    row = rnd.get(key)
    return np.zeros(width) if row is None or np.isnan(row[i]).all() else row[i].astype(float)


def _pfedme(fed, net, w, x, y, lr, steps):
    """pFedMe (Dinh et al. 2020, Algorithm 1): per local step K steps of ν on
    f(θ) + (λ/2)‖θ − w‖² (θ warm-started), then w ← w − ηλ(w − θ)."""
    lam, K = fed["pfedme_lambda"], fed["pfedme_inner_steps"]
    nu = float(np.float32(fed.get("pfedme_personal_lr") or lr))
    theta = w.copy()
    for _ in range(steps):
        for _ in range(K):
            theta = theta - nu * (net.loss_grad(theta, x, y)[1] + lam * (theta - w))
        w = w - lr * lam * (w - theta)
    return w


def _per_fedavg(fed, net, w, x, y, beta, steps):
    """Per-FedAvg (Fallah et al. 2020, Algorithm 1): w′ = w − α∇f(w); first-order
    w ← w − β∇f(w′); Hessian-free subtracts α·[∇f(w + δu) − ∇f(w − δu)]/(2δ), u = ∇f(w′)."""
    alpha = float(np.float32(fed["per_fedavg_alpha"]))
    for _ in range(steps):
        u = net.loss_grad(w - alpha * net.loss_grad(w, x, y)[1], x, y)[1]
        if fed.get("per_fedavg_variant") == "hessian_free":
            delta = float(np.float32(fed["per_fedavg_delta"]))
            u = u - alpha * (net.loss_grad(w + delta * u, x, y)[1] - net.loss_grad(w - delta * u, x, y)[1]) / (2 * delta)
        w = w - beta * u
    return w


def ditto_personal(run, rnd, i, net, x, y):
    """Ditto (Li et al. 2021, Algorithm 1, the proximal step): v ← (v − η∇F(v) + ηλw)/(1 + ηλ)."""
    from .fedtrace_clients import local_optimizer
    lr = local_optimizer(run["config"])[0]
    lam = run["config"]["federation"]["ditto_lambda"]
    w = rnd["global_before"].astype(float)
    v = rnd["personal_before"][i].astype(float)
    for _ in range(int(rnd["local_steps"][i])):
        v = (v - lr * net.loss_grad(v, x, y)[1] + lr * lam * w) / (1 + lr * lam)
    return v


def check_local(run, out):
    """Recompute every completed client's local round of a full-batch run."""
    fed = run["config"]["federation"]
    for rnd in run["rounds"]:
        if "data_count" not in rnd:
            return out
        starts = np.concatenate([[0], np.cumsum(rnd["data_count"])])
        if rnd["data_count"].max() > run["config"]["training"]["batch_size"]:
            return out  # mini-batches: their order is not in the trace
        for i in np.flatnonzero(rnd["completed"] == 1):
            x = rnd["data_inputs"][starts[i]:starts[i + 1]].astype(float)
            y = rnd["data_labels"][starts[i]:starts[i + 1]].astype(int)
            net = _model(run, x.shape[1], len(rnd["global_before"]))
            if fed["aggregation"] == "qfedavg":
                F = net.loss_grad(rnd["global_before"].astype(float), x, y)[0]
                out["qfed_loss"] = max(out.get("qfed_loss", 0.0), abs(F - rnd["loss"][i]))
            w = local_round(run, rnd, i, net, x, y)
            if w is not None:
                key = "local_" + (fed["personal"] if fed["personal"] in ("pfedme", "per_fedavg", "fedrep") else
                                  "moon" if fed.get("moon") else
                                  "fedprox" if fed["aggregation"] == "fedavg" and fed.get("proximal_mu", 0) > 0 else fed["aggregation"])
                out[key] = max(out.get(key, 0.0), float(np.abs(w - rnd["local_model"][i]).max()))
            if fed["personal"] == "ditto":
                v = ditto_personal(run, rnd, i, net, x, y)
                out["local_ditto_personal"] = max(out.get("local_ditto_personal", 0.0),
                                                  float(np.abs(v - rnd["personal_after"][i]).max()))
            if fed["personal"] == "apfl":
                v, a = apfl_personal(run, rnd, i, net, x, y)
                out["local_apfl_personal"] = max(out.get("local_apfl_personal", 0.0),
                                                 float(np.abs(v - rnd["personal_after"][i]).max()))
                out["local_apfl_alpha"] = max(out.get("local_apfl_alpha", 0.0), abs(a - rnd["apfl_alpha_after"][i]))
    return out
