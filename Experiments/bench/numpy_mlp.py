"""The numpy side of the benchmarks (width_batch.py, full_run.py): an MLP of dense ReLU layers
and one output logit trained with binary cross-entropy and plain SGD, written as a researcher
would in numpy (float32): `x @ w`, bias and ReLU as array operations, the loss's gradient, the
transposed products, in-place updates. The products are those ContinualKit's step computes
(forward, weight gradient, every input gradient but the first layer's)."""
import numpy as np


class NumpyMLP:
    def __init__(self, sizes, seed=0, lr=0.01):
        rng = np.random.default_rng(seed)
        self.ws = [(rng.standard_normal((a, b)) * np.sqrt(2 / a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
        self.bs = [np.zeros(b, np.float32) for b in sizes[1:]]
        self.lr = np.float32(lr)

    def forward(self, x):
        """Every layer's output, the input first; the last is the logit [n × 1]."""
        acts = [x]
        for i, (w, b) in enumerate(zip(self.ws, self.bs)):
            h = acts[-1] @ w
            h += b
            if i < len(self.ws) - 1:
                np.maximum(h, 0, out=h)
            acts.append(h)
        return acts

    def step(self, x, y):
        """One SGD step on a batch (y: [n × 1] of 0/1); returns the mean loss."""
        acts = self.forward(x)
        z = acts[-1]
        loss = float(np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))
        d = (1 / (1 + np.exp(-z)) - y) / np.float32(len(x))
        for i in range(len(self.ws) - 1, -1, -1):
            gw, gb = acts[i].T @ d, d.sum(axis=0)
            if i > 0:
                d = d @ self.ws[i].T
                d *= acts[i] > 0
            self.ws[i] -= self.lr * gw
            self.bs[i] -= self.lr * gb
        return loss
