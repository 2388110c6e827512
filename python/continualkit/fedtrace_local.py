"""The local rounds of `continualkit.fedtrace`, recomputed from the papers with a float64 numpy
MLP (ReLU hidden layers, a linear output layer, the mean softmax cross-entropy over a batch;
parameters layer by layer as W [inputs × outputs] row-major, then b, y = act(x·W + b)).

Each local step is one step on one batch of the client's round data: the trace records the rows
every step visited (`data_order`, and `personal_order` for Ditto's and APFL's personal learner);
each pass over the n rows is cut into batches of `training.batch_size` in that order, the last
one partial (`batches`). A trace without an order (written before it was recorded) is
recomputed only when its rounds are full-batch, where the order cannot matter.
`check_local(run, out)` adds `local_<algorithm>` (max |recorded − recomputed| over the clients'
local models or personal models) and `qfed_loss` (q-FedAvg's Fₖ) to `out`.
"""
from __future__ import annotations

import numpy as np


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

    def loss_grad(self, w, x, y, dz_hidden=None, task=True, dz_logits=None):
        """Mean cross-entropy over the rows and its gradient (plus `dz_hidden`, a gradient on the
        last hidden layer's activations, MOON's, and `dz_logits`, one on the logits, LwF's;
        `task` False: those gradients alone)."""
        acts = self.forward(w, x)
        logits = acts[-1]
        z = logits - logits.max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        n = len(y)
        loss = -np.log(p[np.arange(n), y]).mean()
        d = p.copy()
        d[np.arange(n), y] -= 1
        d = d / n if task else np.zeros_like(d)
        if dz_logits is not None:
            d = d + dz_logits
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


def batches(order, n, size):
    """The steps' batches from a recorded order: each pass over the n rows cut into batches of
    `size`, the last one partial (a pass cut short by a steps budget ends the order)."""
    out = []
    for start in range(0, len(order), n):
        one = order[start:start + n]
        out += [one[k:k + size] for k in range(0, len(one), size)]
    return out


def local_round(run, rnd, i, net, x, y, bs):
    """The paper's local model after the client's round on the batches `bs` (index arrays into
    its round data, one per step; None where not recomputed)."""
    from .fedtrace_clients import local_optimizer
    fed = run["config"]["federation"]
    lr, momentum, decay = local_optimizer(run["config"])
    w0 = rnd["global_before"].astype(float)
    personal = fed["personal"]
    if personal == "pfedme":
        return _pfedme(fed, net, w0, x, y, lr, bs)
    if personal == "per_fedavg":
        return _per_fedavg(fed, net, w0, x, y, lr, bs)
    if personal == "fedrep":
        return _fedrep(run, rnd, i, net, x, y, lr, bs)
    if personal == "apfl" or len(run["shared"]) < len(w0):
        return None  # APFL: its v is checked; FedPer: the head it starts from is not traced
    ci = _row(rnd, "client_state_before", i, len(w0))
    c = rnd["server_state_before"].astype(float) if "server_state_before" in rnd else None
    teachers = _teachers(run, rnd, i)
    w, buf = w0.copy(), None
    for b in bs:
        xb, yb = x[b], y[b]
        _, g = net.loss_grad(w, xb, yb)
        if fed.get("proximal_mu", 0) > 0:
            g = g + fed["proximal_mu"] * (w - w0)                     # FedProx, eq. 2
        if fed["aggregation"] == "scaffold":
            g = g + c - ci                                              # SCAFFOLD, Algorithm 1 line 10
        if fed["aggregation"] == "feddyn":
            g = g - ci + fed["feddyn_alpha"] * (w - w0)                 # FedDyn, Algorithm 1 line 5
        if fed.get("moon"):
            g = g + _moon_gradient(fed["moon"], net, w, w0, rnd, i, xb)   # MOON, eq. 3–4
        for teacher, lam, T, scale in teachers:
            g = g + _distillation_gradient(net, w, teacher, xb, lam, T, scale)
        w, buf = _sgd(w, g, lr, momentum, decay, buf)
    return w


def _teachers(run, rnd, i):
    """FLwF-2T's teachers (Usmanova et al. 2021), each (model, λ, T, s): the `lwf` strategy's old
    model (`lwf_previous`, the client's model at its last consolidation; none before its first)
    and, with `server_distillation` β > 0, the server model the client received this round."""
    out = []
    prev = rnd.get("lwf_previous")
    if _lwf(run) and prev is not None and not np.isnan(prev[i]).all():
        o = _lwf(run)
        T = o.get("temperature", 2.0)
        out.append((prev[i].astype(float), o.get("lambda", 1.0), T, T * T if o.get("temperature_scaling") else 1.0))
    fed = run["config"]["federation"]
    if fed.get("server_distillation", 0) > 0:
        out.append((rnd["global_before"].astype(float), fed["server_distillation"],
                    fed.get("server_distillation_temperature", 2.0), 1.0))
    return out


def _lwf(run):
    """The run's `lwf` strategy options (None without one)."""
    return next((s for s in run["config"]["strategy"] if s.get("type") == "lwf"), None)


def _distillation_gradient(net, w, teacher, x, lam, T, scale):
    """λ·s·∇ of the batch mean of KL(softmax(z_t/T) ‖ softmax(z/T)), z_t the teacher's logits
    (Li & Hoiem's distillation, as LwF's term writes it): ∂/∂z = λ·s·(softmax(z/T) − softmax(z_t/T))/(T·n)."""
    def soft(z):
        e = np.exp(z / T - (z / T).max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    z, zt = net.forward(w, x)[-1], net.forward(teacher, x)[-1]
    dz = lam * scale * (soft(z) - soft(zt)) / (T * len(x))
    return net.loss_grad(w, x, np.zeros(len(x), int), task=False, dz_logits=dz)[1]


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


def _fedrep(run, rnd, i, net, x, y, lr, bs):
    """FedRep (Collins et al. 2021, Algorithm 1): `fedrep_head_epochs` passes on the head (the
    output layer) with the body frozen, then the body's steps with the head frozen; the body starts
    at the received one, the head where the client's last round left it."""
    fed = run["config"]["federation"]
    S = run["shared"]
    body = np.zeros(len(rnd["global_before"]), bool)
    body[S] = True
    w = rnd["global_before"].astype(float).copy()
    head = run.setdefault("_fedrep_heads", {}).get(int(rnd["client"][i]))
    if head is not None:
        w[~body] = head
    size = run["config"]["training"]["batch_size"]
    h = fed["fedrep_head_epochs"] * -(-len(x) // size)
    for mask, phase in ((~body, bs[:h]), (body, bs[h:])):
        for b in phase:
            w = w - lr * net.loss_grad(w, x[b], y[b])[1] * mask
    run["_fedrep_heads"][int(rnd["client"][i])] = rnd["local_model"][i][~body].astype(float)
    return w


def apfl_personal(run, rnd, i, net, x, y, bs, personal_bs):
    """APFL (Deng et al. 2020, Algorithm 1) per local step, with w the client's FedAvg iterate
    before the step: v̄ = αv + (1 − α)w; v ← v − η·α∇f(v̄); α ← α − η_α⟨v − w, ∇f(v̄)⟩ (v before
    its step), clipped to [0, 1]; v's steps run on the personal learner's batches, w's on the
    local ones. Returns (v, α)."""
    from .fedtrace_clients import local_optimizer
    fed = run["config"]["federation"]
    lr = local_optimizer(run["config"])[0]
    rate = float(np.float32(fed.get("apfl_alpha_lr") or lr))
    w = rnd["global_before"].astype(float)
    v = rnd["personal_before"][i].astype(float)
    a = float(rnd["apfl_alpha_before"][i])
    for b, pb in zip(bs, personal_bs):
        g = net.loss_grad(a * v + (1 - a) * w, x[pb], y[pb])[1]
        v, a = v - lr * a * g, min(1.0, max(0.0, a - rate * float(np.dot(v - w, g))))
        w = w - lr * net.loss_grad(w, x[b], y[b])[1]
    return v, a


def _row(rnd, key, i, width):
    row = rnd.get(key)
    return np.zeros(width) if row is None or np.isnan(row[i]).all() else row[i].astype(float)


def _pfedme(fed, net, w, x, y, lr, bs):
    """pFedMe (Dinh et al. 2020, Algorithm 1): per local step, on one batch D, K steps of ν on
    f(θ; D) + (λ/2)‖θ − w‖² (θ warm-started), then w ← w − ηλ(w − θ)."""
    lam, K = fed["pfedme_lambda"], fed["pfedme_inner_steps"]
    nu = float(np.float32(fed.get("pfedme_personal_lr") or lr))
    theta = w.copy()
    for b in bs:
        for _ in range(K):
            theta = theta - nu * (net.loss_grad(theta, x[b], y[b])[1] + lam * (theta - w))
        w = w - lr * lam * (w - theta)
    return w


def _per_fedavg(fed, net, w, x, y, beta, bs):
    """Per-FedAvg (Fallah et al. 2020, Algorithm 1), each step on fresh batches D, D′ (D″):
    w′ = w − α∇f(w; D); first-order w ← w − β∇f(w′; D′); Hessian-free subtracts
    α·[∇f(w + δu; D″) − ∇f(w − δu; D″)]/(2δ), u = ∇f(w′; D′)."""
    alpha = float(np.float32(fed["per_fedavg_alpha"]))
    hf = fed.get("per_fedavg_variant") == "hessian_free"
    k = 3 if hf else 2
    for s in range(0, len(bs) - k + 1, k):
        d1, d2 = bs[s], bs[s + 1]
        u = net.loss_grad(w - alpha * net.loss_grad(w, x[d1], y[d1])[1], x[d2], y[d2])[1]
        if hf:
            d3, delta = bs[s + 2], float(np.float32(fed["per_fedavg_delta"]))
            u = u - alpha * (net.loss_grad(w + delta * u, x[d3], y[d3])[1] - net.loss_grad(w - delta * u, x[d3], y[d3])[1]) / (2 * delta)
        w = w - beta * u
    return w


def ditto_personal(run, rnd, i, net, x, y, bs):
    """Ditto (Li et al. 2021, Algorithm 1, the proximal step) on the personal learner's batches:
    v ← (v − η∇F(v) + ηλw)/(1 + ηλ)."""
    from .fedtrace_clients import local_optimizer
    lr = local_optimizer(run["config"])[0]
    lam = run["config"]["federation"]["ditto_lambda"]
    w = rnd["global_before"].astype(float)
    v = rnd["personal_before"][i].astype(float)
    for b in bs:
        v = (v - lr * net.loss_grad(v, x[b], y[b])[1] + lr * lam * w) / (1 + lr * lam)
    return v


def _orders(run, rnd, key):
    """Each client's recorded batches (`key`: data_order or personal_order), a list per client
    (None: not stated); without the dataset, a full-batch round's one batch per local step."""
    counts, size = rnd["data_count"], run["config"]["training"]["batch_size"]
    if key not in rnd:
        if key == "data_order" and counts.max() <= size:
            return [[np.arange(n)] * int(k) for n, k in zip(counts, rnd["local_steps"])]
        return [None] * len(counts)
    ends = np.cumsum(rnd[key + "_count"])
    return [batches(rnd[key][e - m:e].astype(int), int(n), size) if m > 0 else None
            for e, m, n in zip(ends, rnd[key + "_count"], counts)]


def _put(out, key, value):
    out[key] = max(out.get(key, 0.0), float(value))


def check_local(run, out):
    """Recompute every completed client's local round whose batches the trace states."""
    fed = run["config"]["federation"]
    if any(s.get("type") not in ("naive", "lwf") for s in run["config"]["strategy"]):
        return out  # another strategy's plugins join the local objective
    for rnd in run["rounds"]:
        if "data_count" not in rnd:
            return out
        starts = np.concatenate([[0], np.cumsum(rnd["data_count"])])
        orders, personal = _orders(run, rnd, "data_order"), _orders(run, rnd, "personal_order")
        for i in np.flatnonzero(rnd["completed"] == 1):
            x = rnd["data_inputs"][starts[i]:starts[i + 1]].astype(float)
            y = rnd["data_labels"][starts[i]:starts[i + 1]].astype(int)
            net = _model(run, x.shape[1], len(rnd["global_before"]))
            if fed["aggregation"] == "qfedavg":
                _put(out, "qfed_loss", abs(net.loss_grad(rnd["global_before"].astype(float), x, y)[0] - rnd["loss"][i]))
            if orders[i] is None:
                continue
            per_step = {"per_fedavg": 3 if fed.get("per_fedavg_variant") == "hessian_free" else 2}.get(fed["personal"], 1)
            _put(out, "order_steps", abs(len(orders[i]) - per_step * int(rnd["local_steps"][i])))
            w = local_round(run, rnd, i, net, x, y, orders[i])
            if w is not None:
                key = "local_" + (fed["personal"] if fed["personal"] in ("pfedme", "per_fedavg", "fedrep") else
                                  "moon" if fed.get("moon") else
                                  "flwf" if fed.get("server_distillation", 0) > 0 or _lwf(run) else
                                  "fedprox" if fed["aggregation"] == "fedavg" and fed.get("proximal_mu", 0) > 0 else fed["aggregation"])
                _put(out, key, np.abs(w - rnd["local_model"][i]).max())
            if fed["personal"] == "ditto" and personal[i] is not None:
                _put(out, "local_ditto_personal", np.abs(ditto_personal(run, rnd, i, net, x, y, personal[i]) - rnd["personal_after"][i]).max())
            if fed["personal"] == "apfl" and personal[i] is not None:
                v, a = apfl_personal(run, rnd, i, net, x, y, orders[i], personal[i])
                _put(out, "local_apfl_personal", np.abs(v - rnd["personal_after"][i]).max())
                _put(out, "local_apfl_alpha", abs(a - rnd["apfl_alpha_after"][i]))
    return out
