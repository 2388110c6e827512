"""The federated algorithms' server and client rules as their papers write them, in float64 numpy.

Written from the papers (cited per function), not from the Swift sources, so that
`continualkit.fedtrace` can recompute a traced run's steps independently. Each function takes the
round's values (updates as rows of a 2-D array, in client order) and returns the paper's quantity.
"""
from __future__ import annotations

import numpy as np


def weighted_mean(updates, samples):
    """FedAvg (McMahan et al. 2017, Algorithm 1): Σ_k (n_k / n) Δ_k."""
    w = np.asarray(samples, dtype=float)
    return (w[:, None] * updates).sum(0) / w.sum()


def uniform_mean(updates):
    """The unweighted mean (1/|S|) Σ Δ_k (SCAFFOLD's and FedDyn's server average)."""
    return updates.mean(0)


def median(updates):
    """Coordinate-wise median (Yin et al. 2018); an even count averages the two middle values."""
    return np.median(updates, axis=0)


def trimmed_mean(updates, beta):
    """Coordinate-wise β-trimmed mean (Yin et al. 2018): drop ⌊βn⌋ largest and smallest values."""
    n = len(updates)
    k = int(np.floor(beta * n))
    s = np.sort(updates, axis=0)
    return s[k:n - k].mean(0)


def krum_scores(updates, f, least=0):
    """Krum (Blanchard et al. 2017): each update's sum of squared distances to its n − f − 2
    nearest others (at least `least`: outside Krum's domain n > 2f + 2, which Bulyan's last picks
    reach, the paper defines no count; the toolkit sums none (0), Flower one)."""
    n = len(updates)
    d = ((updates[:, None, :] - updates[None, :, :]) ** 2).sum(-1)
    nearest = max(least, n - f - 2)
    return np.array([np.sort(np.delete(d[i], i))[:nearest].sum() for i in range(n)])


def krum(updates, f, m=1):
    """Krum (m = 1) or Multi-Krum (the mean of the m best-scoring; ties: lower index)."""
    scores = krum_scores(updates, f)
    order = sorted(range(len(updates)), key=lambda i: (scores[i], i))[:m]
    return updates[sorted(order)].mean(0)


def bulyan(updates, f, least=0):
    """Bulyan (El Mhamdi et al. 2018): θ = n − 2f updates picked one by one by Krum among the
    rest, then per coordinate the mean of the β = θ − 2f picked values closest to their median.
    The last picks run Krum on fewer than 2f + 3 updates; `least` as in `krum_scores`."""
    remaining = list(range(len(updates)))
    picked = []
    while len(picked) < len(updates) - 2 * f:
        scores = krum_scores(updates[remaining], f, least)
        best = min(range(len(remaining)), key=lambda i: (scores[i], i))
        picked.append(remaining.pop(best))
    sel = updates[picked]
    beta = len(picked) - 2 * f
    med = np.median(sel, axis=0)
    out = np.empty(sel.shape[1])
    for j in range(sel.shape[1]):
        col = sel[:, j]
        order = sorted(range(len(col)), key=lambda i: (abs(col[i] - med[j]), col[i]))
        out[j] = col[order[:beta]].mean()
    return out


def fednova_normaliser(tau, lr, momentum=0.0, mu=0.0, weight_decay=0.0):
    """FedNova's ‖a_i‖₁ (Wang et al. 2020, §4): τ for SGD; with momentum ρ,
    [τ − ρ(1 − ρ^τ)/(1 − ρ)]/(1 − ρ); with a proximal term μ (and coupled weight decay, which
    contracts the iterate the same way) Σ_{k<τ} (1 − ηc)^k = [1 − (1 − ηc)^τ]/(ηc), c = μ + wd."""
    if tau <= 0:
        return 0.0
    if momentum > 0:
        return (tau - momentum * (1 - momentum ** tau) / (1 - momentum)) / (1 - momentum)
    c = lr * (mu + weight_decay)
    return (1 - (1 - c) ** tau) / c if c > 0 else float(tau)


def fednova(updates, samples, a):
    """FedNova's aggregate (Wang et al. 2020, eq. 6): τ_eff Σ p_i Δ_i / a_i, τ_eff = Σ p_i a_i."""
    p = np.asarray(samples, float) / np.sum(samples)
    a = np.asarray(a, float)
    return (p * a).sum() * ((p / a)[:, None] * updates).sum(0)


def qfedavg(updates, losses, q, lipschitz):
    """q-FedAvg (Li et al. 2020, Algorithm 2): with Δw_k = L(w − w̄_k) = −L δ_k,
    Δ_k = F_k^q Δw_k, h_k = q F_k^(q−1) ‖Δw_k‖² + L F_k^q, w⁺ = w − ΣΔ_k / Σh_k. Returns w⁺ − w.
    F_k gets 1e-10 (Flower's guard against 0^(q−1))."""
    F = np.asarray(losses, float) + 1e-10
    dw = -lipschitz * updates
    num = ((F ** q)[:, None] * dw).sum(0)
    h = (q * F ** (q - 1) * (dw ** 2).sum(1) + lipschitz * F ** q).sum()
    return -num / h


def clip(update, bound):
    """DP-FedAvg's clipping (McMahan et al. 2018): Δ · min(1, C/‖Δ‖)."""
    n = np.linalg.norm(update)
    return update * min(1.0, bound / n) if n > 0 else update


def server_optimizer(kind, lr, x, delta, m, v, beta1=0.9, beta2=0.99, tau=1e-3):
    """Reddi et al. 2021, Algorithm 2 (−Δ the pseudo-gradient; moments start at 0), and FedAvgM
    (Hsu et al. 2019: v ← βv + Δ, x ← x + ηv). Returns (x⁺, m⁺, v⁺)."""
    if kind == "sgd":
        return x + lr * delta, m, v
    if kind == "fedavgm":
        m = beta1 * m + delta
        return x + lr * m, m, v
    m = beta1 * m + (1 - beta1) * delta
    d2 = delta ** 2
    if kind == "fedadam":
        v = beta2 * v + (1 - beta2) * d2
    elif kind == "fedyogi":
        v = v - (1 - beta2) * d2 * np.sign(v - d2)
    elif kind == "fedadagrad":
        v = v + d2
    else:
        raise ValueError(f"unknown server optimizer {kind}")
    return x + lr * m / (np.sqrt(v) + tau), m, v


def scaffold_client(ci, c, x, y, steps, lr):
    """SCAFFOLD option II (Karimireddy et al. 2020, Algorithm 1 line 12): c_i⁺ = c_i − c + (x − y)/(Kη)."""
    return ci - c + (x - y) / (steps * lr)


def scaffold_server(c, control_deltas, clients):
    """SCAFFOLD's c ← c + (1/N) Σ_{i∈S} Δc_i (Algorithm 1 line 17, N all clients)."""
    return c + control_deltas.sum(0) / clients


def feddyn_client(grad, theta_k, theta, alpha):
    """FedDyn (Acar et al. 2021, Algorithm 1 line 6): ∇L_k(θ_k^t) = ∇L_k(θ_k^{t−1}) − α(θ_k^t − θ^{t−1})."""
    return grad - alpha * (theta_k - theta)


def feddyn_server(h, updates, alpha, clients):
    """FedDyn lines 8–9: h⁺ = h − α(1/m)Σ_{k∈P}(θ_k − θ); θ⁺ = mean θ_k − h⁺/α. Returns (h⁺, θ⁺ − θ)."""
    h = h - alpha * updates.sum(0) / clients
    return h, updates.mean(0) - h / alpha


def staleness_weight(tau, exponent):
    """FedBuff's s(τ) = (1 + τ)^−a (Nguyen et al. 2022; a = ½ in the paper)."""
    return (1.0 + np.asarray(tau, float)) ** (-exponent)


def encode(update, encoding, top_k_fraction=0.1):
    """An update as the server decodes it and its bytes: float32, float16 (IEEE half, round to
    nearest even), int8 (one float32 scale max|Δ|/127, values rounded to nearest even) or top-k
    (the ⌈f·n⌉ largest |Δ|, ties the lower index, as (int32 index, float32 value) pairs)."""
    u = np.asarray(update, np.float32)
    n = u.size
    if encoding == "float32":
        return u.astype(float), 4 * n
    if encoding == "float16":
        return u.astype(np.float16).astype(float), 2 * n
    if encoding == "int8":
        m = np.abs(u).max()
        if m == 0:
            return np.zeros(n), n + 4
        scale = np.float32(m / np.float32(127))
        qv = np.clip(np.rint(u / scale), -127, 127).astype(np.float32)
        return (qv * scale).astype(float), n + 4
    if encoding == "top_k":
        k = min(n, max(1, int(np.ceil(top_k_fraction * n))))
        order = sorted(range(n), key=lambda i: (-abs(float(u[i])), i))[:k]
        out = np.zeros(n)
        out[order] = u[order]
        return out, 8 * k
    raise ValueError(f"unknown encoding {encoding}")
