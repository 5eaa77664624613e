"""A small numpy multilayer perceptron: init, forward, backprop, gradient step, save and load.

Write-up 000's network: tanh on every layer (the output too: values in (-1, 1)), weights and
biases drawn from N(0, 1) / sqrt(n_in + n_out), float32 by default (the values only rank moves).
Other learners use a linear output and hand `gradients` the derivative of their own loss.

Same bits on every machine: the passes are compiled loops that add every sum in one fixed order
(each pass's docstring states it) and compute tanh from + - x / alone, which IEEE 754 rounds
exactly and numba compiles without fusing or reordering. BLAS and numpy's tanh pick their code by
the CPU and round differently, and a net near a decision boundary then plays differently. For
the lab's small nets these loops are as fast as BLAS or faster (docs/speed.md).
"""

from typing import NamedTuple

import numpy as np
from numba import njit

LINEAR, TANH, RELU = 0, 1, 2
"""Activation codes of the compiled passes."""
_CODES = {"linear": LINEAR, "tanh": TANH, "relu": RELU}

_F = np.float32
"""Constants as float32: exact in either precision, they keep a float32 pass in float32 and a
float64 pass in float64."""


class CompiledNet(NamedTuple):
    """An MLP's parameters as compiled code takes them (one argument)."""

    weights: tuple  # the weight matrices, input layer first
    biases: tuple  # the bias vectors, input layer first
    hidden: int  # activation code of the hidden layers (TANH or RELU)
    output: int  # activation code of the last layer (TANH or LINEAR)


class MLP:
    def __init__(self, sizes, rng: np.random.Generator, output: str = "tanh", dtype=np.float32,
                 hidden: str = "tanh"):
        """sizes: [inputs, hidden..., outputs]; the last layer's activation `output` (tanh or
        linear), the others' `hidden` (tanh or relu)."""
        if output not in ("tanh", "linear") or hidden not in ("tanh", "relu"):
            raise ValueError(f"output must be 'tanh' or 'linear' and hidden 'tanh' or 'relu', got "
                             f"{output!r}, {hidden!r}")
        self.output, self.hidden = output, hidden
        self.weights, self.biases = [], []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            scale = 1.0 / np.sqrt(n_in + n_out)
            self.weights.append((rng.standard_normal((n_in, n_out)) * scale).astype(dtype))
            self.biases.append((rng.standard_normal(n_out) * scale).astype(dtype))

    @property
    def params(self):
        return self.weights + self.biases

    def _inputs(self, x) -> np.ndarray:
        return np.ascontiguousarray(x, dtype=self.weights[0].dtype)

    def activations(self, x: np.ndarray) -> list:
        """Outputs of every layer for a batch x of shape (n, inputs), the input first."""
        acts, net = [self._inputs(x)], self.compiled()
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            acts.append(dense(acts[-1], w, b, net.output if i == len(self.weights) - 1 else net.hidden))
        return acts

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The outputs (n, outputs) for a batch x, without keeping the hidden layers."""
        net = self.compiled()
        return forward(net.weights, net.biases, net.hidden, net.output, self._inputs(x))

    def compiled(self) -> CompiledNet:
        """The parameters as one argument for compiled kernels (see `forward`)."""
        return CompiledNet(tuple(self.weights), tuple(self.biases), _CODES[self.hidden], _CODES[self.output])

    def gradients(self, acts: list, d_output: np.ndarray) -> list:
        """Gradients of a loss with respect to params (same order), given dLoss/dOutput."""
        grad_w, grad_b = [], []
        delta = np.ascontiguousarray(d_output, dtype=self.weights[0].dtype)
        if self.output == "tanh":
            delta = delta * (1.0 - acts[-1] * acts[-1])  # tanh'(z) = 1 - tanh(z)^2
        for i in range(len(self.weights) - 1, -1, -1):
            grad_w.append(weight_gradient(acts[i], delta))
            grad_b.append(column_sums(delta))
            if i:
                delta = back(delta, self.weights[i], acts[i], _CODES[self.hidden])
        return grad_w[::-1] + grad_b[::-1]

    def descend(self, grads: list, alpha: float) -> None:
        """One gradient step of size alpha; refuses to write non-finite parameters."""
        with np.errstate(over="ignore", invalid="ignore"):  # non-finite results are refused below
            new = [(p - alpha * g).astype(p.dtype) for p, g in zip(self.params, grads)]
        if not all(np.isfinite(p).all() for p in new):
            raise FloatingPointError("network diverged: a gradient step produced NaN or inf")
        n = len(self.weights)
        self.weights, self.biases = new[:n], new[n:]

    def fit_step(self, x: np.ndarray, target: np.ndarray, alpha: float) -> float:
        """One full-batch step on the loss 1/2 sum (output - target)^2; returns the loss."""
        acts = self.activations(x)
        error = acts[-1] - np.asarray(target, dtype=acts[-1].dtype).reshape(acts[-1].shape)
        self.descend(self.gradients(acts, error), alpha)
        return 0.5 * float((error * error).sum())

    def copy(self) -> "MLP":
        """An independent copy: training this net afterwards leaves the copy unchanged."""
        return MLP.from_arrays({name: np.copy(array) for name, array in self.arrays().items()})

    def arrays(self, prefix: str = "") -> dict:
        """Parameters as named arrays for a checkpoint."""
        named = {f"{prefix}w{i}": w for i, w in enumerate(self.weights)}
        named.update({f"{prefix}b{i}": b for i, b in enumerate(self.biases)})
        named[f"{prefix}linear_output"] = np.array(self.output == "linear")
        if self.hidden == "relu":  # only then: tanh nets' checkpoints stay as they were
            named[f"{prefix}relu"] = np.array(True)
        return named

    @classmethod
    def from_arrays(cls, arrays, prefix: str = "") -> "MLP":
        net = cls.__new__(cls)
        net.output = "linear" if bool(arrays[f"{prefix}linear_output"]) else "tanh"
        net.hidden = "relu" if bool(arrays.get(f"{prefix}relu", False)) else "tanh"
        count = sum(1 for k in arrays if k.startswith(f"{prefix}w") and k[len(prefix) + 1 :].isdigit())
        net.weights = [np.ascontiguousarray(arrays[f"{prefix}w{i}"]) for i in range(count)]
        net.biases = [np.ascontiguousarray(arrays[f"{prefix}b{i}"]) for i in range(count)]
        widths = [w.shape[0] for w in net.weights[:1]] + [b.shape[0] for b in net.biases]
        chained = all(w.shape == (n_in, n_out) and b.shape == (n_out,)  # the compiled passes check no index
                      for w, b, n_in, n_out in zip(net.weights, net.biases, widths, widths[1:]))
        if not count or not chained or f"{prefix}b{count}" in arrays:
            raise ValueError(f"its {prefix}net's layers do not chain: weights "
                             f"{[w.shape for w in net.weights]}, biases {[b.shape for b in net.biases]}")
        return net


# ---- the compiled passes ------------------------------------------------------------------------
# error_model="numpy": a division by zero gives inf, as in numpy, instead of a check per division
# that keeps LLVM from vectorising the loop.


@njit(cache=True, inline="always", error_model="numpy")
def tanh(x):
    """tanh from + - x / alone, in x's precision: tanh(x/16) by its [7/6] Pade approximant (the
    continued fraction x / (1 + x^2 / (3 + ...)) cut after seven terms), doubled four times by
    tanh(2y) = 2 tanh(y) / (1 + tanh(y)^2). Within 2e-7 of tanh in float32 and 5e-16 in float64,
    vectorised, the same bits on every IEEE machine."""
    y = min(max(x * _F(0.0625), _F(-1.25)), _F(1.25))  # |x| >= 20 gives +-1 exactly
    y2 = y * y
    t = y * (_F(135135.0) + y2 * (_F(17325.0) + y2 * (_F(378.0) + y2))) / (
        _F(135135.0) + y2 * (_F(62370.0) + y2 * (_F(3150.0) + y2 * _F(28.0))))
    t = _F(2.0) * t / (_F(1.0) + t * t)
    t = _F(2.0) * t / (_F(1.0) + t * t)
    t = _F(2.0) * t / (_F(1.0) + t * t)
    return _F(2.0) * t / (_F(1.0) + t * t)


@njit(cache=True, inline="always")
def _activate(z, activation):
    if activation == TANH:
        for r in range(z.shape[0]):
            for j in range(z.shape[1]):
                z[r, j] = tanh(z[r, j])
    elif activation == RELU:
        for r in range(z.shape[0]):
            for j in range(z.shape[1]):
                z[r, j] = max(z[r, j], _F(0.0))


@njit(cache=True, error_model="numpy")
def dense(x, w, b, activation):
    """activation(x @ w + b) for a batch x (n, n_in): output (r, j) starts from b[j] and adds
    x[r, k] w[k, j] for k = 0, 1, ... in turn. Eight rows at a time share each weight load (1.6x
    faster than four on 32 neurons), and the loop over j vectorises; a single output keeps eight
    rows' sums in registers instead."""
    n, n_in = x.shape
    n_out = w.shape[1]
    z = np.empty((n, n_out), w.dtype)
    if n_out == 1:
        _single_output(x, w[:, 0], b[0], z[:, 0])
    else:
        _outputs(x, w, b, z)
    _activate(z, activation)
    return z


@njit(cache=True, inline="always")
def _outputs(x, w, b, z):
    """z = x @ w + b for several outputs, in the order `dense` states, eight rows at a time."""
    n, n_in = x.shape
    n_out = w.shape[1]
    full = n - n % 8
    for r in range(0, full, 8):
        for j in range(n_out):
            # one chained assignment: split in two, LLVM vectorises the loop worse (1.2x slower)
            z[r, j] = z[r + 1, j] = z[r + 2, j] = z[r + 3, j] = z[r + 4, j] = z[r + 5, j] = z[r + 6, j] = z[r + 7, j] = b[j]
        for k in range(n_in):
            x0, x1, x2, x3 = x[r, k], x[r + 1, k], x[r + 2, k], x[r + 3, k]
            x4, x5, x6, x7 = x[r + 4, k], x[r + 5, k], x[r + 6, k], x[r + 7, k]
            for j in range(n_out):
                wj = w[k, j]
                z[r, j] += x0 * wj
                z[r + 1, j] += x1 * wj
                z[r + 2, j] += x2 * wj
                z[r + 3, j] += x3 * wj
                z[r + 4, j] += x4 * wj
                z[r + 5, j] += x5 * wj
                z[r + 6, j] += x6 * wj
                z[r + 7, j] += x7 * wj
    for r in range(full, n):
        for j in range(n_out):
            z[r, j] = b[j]
        for k in range(n_in):
            for j in range(n_out):
                z[r, j] += x[r, k] * w[k, j]


@njit(cache=True, inline="always")
def _single_output(x, w, b, z):
    """z[r] = b + x[r, 0] w[0] + x[r, 1] w[1] + ..., in that order, eight rows at a time."""
    n, n_in = x.shape
    full = n - n % 8
    for r in range(0, full, 8):
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = b
        for k in range(n_in):
            s0 += x[r, k] * w[k]
            s1 += x[r + 1, k] * w[k]
            s2 += x[r + 2, k] * w[k]
            s3 += x[r + 3, k] * w[k]
            s4 += x[r + 4, k] * w[k]
            s5 += x[r + 5, k] * w[k]
            s6 += x[r + 6, k] * w[k]
            s7 += x[r + 7, k] * w[k]
        z[r], z[r + 1], z[r + 2], z[r + 3] = s0, s1, s2, s3
        z[r + 4], z[r + 5], z[r + 6], z[r + 7] = s4, s5, s6, s7
    for r in range(full, n):
        s = b
        for k in range(n_in):
            s += x[r, k] * w[k]
        z[r] = s


@njit(cache=True)
def forward(weights, biases, hidden, output, x):
    """The net's outputs (n, outputs) for the batch x: `dense` layer after layer (the fields of
    a CompiledNet; a kernel passing the bundle itself runs ~5% slower)."""
    h = x
    last = len(weights) - 1
    for i in range(len(weights)):
        h = dense(h, weights[i], biases[i], output if i == last else hidden)
    return h


@njit(cache=True, error_model="numpy")
def weight_gradient(a, delta):
    """a.T @ delta, (n_in, n_out): entry (k, j) adds a[r, k] delta[r, j] for r = 0, 1, ... in
    turn, four rows per pass over the entries."""
    n, n_in = a.shape
    n_out = delta.shape[1]
    g = np.zeros((n_in, n_out), delta.dtype)
    full = n - n % 4
    for r in range(0, full, 4):
        for k in range(n_in):
            a0, a1, a2, a3 = a[r, k], a[r + 1, k], a[r + 2, k], a[r + 3, k]
            for j in range(n_out):
                g[k, j] = (((g[k, j] + a0 * delta[r, j]) + a1 * delta[r + 1, j])
                           + a2 * delta[r + 2, j]) + a3 * delta[r + 3, j]
    for r in range(full, n):
        for k in range(n_in):
            for j in range(n_out):
                g[k, j] += a[r, k] * delta[r, j]
    return g


@njit(cache=True)
def column_sums(delta):
    """delta summed over its rows, row after row."""
    s = np.zeros(delta.shape[1], delta.dtype)
    for r in range(delta.shape[0]):
        for j in range(delta.shape[1]):
            s[j] += delta[r, j]
    return s


@njit(cache=True)
def back(delta, w, a, activation):
    """The error at the layer below: (delta @ w.T) times the derivative of its activation,
    written through its outputs a (tanh: 1 - a^2; relu: 1 where a > 0). Each sum starts from 0
    and adds delta[r, j] w[k, j] for j = 0, 1, ... in turn (`dense` over w transposed)."""
    below = dense(delta, np.ascontiguousarray(w.T), np.zeros(w.shape[0], w.dtype), LINEAR)
    for r in range(below.shape[0]):
        for k in range(below.shape[1]):
            if activation == RELU:
                below[r, k] = below[r, k] if a[r, k] > 0 else _F(0.0)
            else:
                below[r, k] *= _F(1.0) - a[r, k] * a[r, k]
    return below


@njit(cache=True, inline="always", error_model="numpy")
def exp(y):
    """e^y for y <= 0 (a softmax's logits less their maximum) from + and x alone, in float64:
    e^(y/4096) by its Taylor polynomial of degree 6, squared twelve times; within 1e-12 relative
    of the true value, the same bits on every IEEE machine. Below -40 (under 5e-18) it gives 0."""
    if y < -40.0:
        return 0.0
    z = y * (1.0 / 4096.0)
    e = 1.0 + z * (1.0 + z * (1.0 / 2 + z * (1.0 / 6 + z * (1.0 / 24 + z * (1.0 / 120 + z * (1.0 / 720))))))
    for _ in range(12):
        e = e * e
    return e
