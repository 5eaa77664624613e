"""A small numpy multilayer perceptron: init, forward, backprop, gradient step, save and load.

Seed 000's network: tanh on every layer (the output too, so values live in (-1, 1)), weights and
biases drawn from N(0, 1) / sqrt(n_in + n_out), loss 1/2 sum (v - target)^2 over the batch and one
full-batch gradient step per update. Parameters and passes are float32 by default: tanh is about
four times faster on float32 arrays, and the values only rank moves. Other learners reuse it with a linear output and their own
loss by handing `gradients` the derivative of their loss with respect to the output.

`first_outputs` is the same forward pass compiled, for game kernels that need the values of a few
inputs at a time while they play (a numpy call costs more than such a tiny batch's arithmetic);
a kernel takes the net as one `CompiledNet` bundle (`MLP.compiled()`).
"""

from typing import NamedTuple

import numpy as np
from numba import njit


class CompiledNet(NamedTuple):
    """An MLP's parameters as compiled code takes them (one argument)."""

    weights: tuple
    """the weight matrices, input layer first"""
    biases: tuple
    """the bias vectors, input layer first"""
    linear_output: bool
    """the last layer has no tanh"""


class MLP:
    def __init__(self, sizes, rng: np.random.Generator, output: str = "tanh", dtype=np.float32,
                 hidden: str = "tanh"):
        """sizes: [inputs, hidden..., outputs]; output: 'tanh' or 'linear' activation of the last
        layer; hidden: 'tanh' or 'relu' activation of the others (seed 002's net is ReLU)."""
        if output not in ("tanh", "linear"):
            raise ValueError(f"output must be 'tanh' or 'linear', got {output!r}")
        if hidden not in ("tanh", "relu"):
            raise ValueError(f"hidden must be 'tanh' or 'relu', got {hidden!r}")
        self.output, self.hidden = output, hidden
        self.weights, self.biases = [], []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            scale = 1.0 / np.sqrt(n_in + n_out)
            self.weights.append((rng.standard_normal((n_in, n_out)) * scale).astype(dtype))
            self.biases.append((rng.standard_normal(n_out) * scale).astype(dtype))

    @property
    def params(self):
        return self.weights + self.biases

    def activations(self, x: np.ndarray) -> list:
        """Outputs of every layer for a batch x of shape (n, inputs), the input first."""
        acts = [np.asarray(x, dtype=self.weights[0].dtype)]
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            z = acts[-1] @ w + b
            if i == last:
                acts.append(z if self.output == "linear" else np.tanh(z))
            else:
                acts.append(np.maximum(z, 0) if self.hidden == "relu" else np.tanh(z))
        return acts

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.activations(x)[-1]

    def compiled(self) -> CompiledNet:
        """The parameters as one argument for compiled kernels (see `first_outputs`)."""
        if self.hidden != "tanh":
            raise ValueError("first_outputs computes tanh hidden layers only")
        return CompiledNet(tuple(self.weights), tuple(self.biases), self.output == "linear")

    def gradients(self, acts: list, d_output: np.ndarray) -> list:
        """Gradients of a loss with respect to params (same order), given dLoss/dOutput."""
        grad_w, grad_b = [], []
        delta = np.asarray(d_output, dtype=self.weights[0].dtype)
        for i in reversed(range(len(self.weights))):
            out = acts[i + 1]
            last = i == len(self.weights) - 1
            if (self.hidden == "relu" and not last):
                delta = delta * (out > 0)  # relu'(z) = 1 where z > 0
            elif not (last and self.output == "linear"):
                delta = delta * (1.0 - out * out)  # tanh'(z) = 1 - tanh(z)^2
            grad_w.append(acts[i].T @ delta)
            grad_b.append(delta.sum(axis=0))
            if i:
                delta = delta @ self.weights[i].T
        return grad_w[::-1] + grad_b[::-1]

    def descend(self, grads: list, alpha: float) -> None:
        """One gradient step of size alpha; refuses to write non-finite parameters."""
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
        relu = f"{prefix}relu" in arrays and bool(arrays[f"{prefix}relu"])
        net.hidden = "relu" if relu else "tanh"
        count = sum(1 for k in arrays if k.startswith(f"{prefix}w") and k[len(prefix) + 1 :].isdigit())
        net.weights = [np.asarray(arrays[f"{prefix}w{i}"]) for i in range(count)]
        net.biases = [np.asarray(arrays[f"{prefix}b{i}"]) for i in range(count)]
        return net


@njit(cache=True)
def tanh(z):
    """tanh of a float32 through exp: about three times faster than libm's tanhf in compiled
    loops, within 2e-7 of np.tanh (exp overflows to inf for large z, giving exactly 1)."""
    one = np.float32(1.0)
    return one - np.float32(2.0) / (np.exp(np.float32(2.0) * z) + one)


@njit(cache=True)
def first_outputs(weights, biases, linear_output, x):
    """Output 0 of the net (the fields of a CompiledNet) for each row of the float32 batch x,
    compiled. It takes the fields, not the bundle: passing the bundle costs a caller's loop ~5%."""
    h = x
    last = len(weights) - 1
    for i in range(len(weights)):
        w, b = weights[i], biases[i]
        n_in, n_out = w.shape
        z = np.empty((h.shape[0], n_out), dtype=w.dtype)
        for r in range(h.shape[0]):
            for j in range(n_out):
                z[r, j] = b[j]
            for k in range(n_in):
                hk = h[r, k]
                for j in range(n_out):
                    z[r, j] += hk * w[k, j]
            if not (i == last and linear_output):
                for j in range(n_out):
                    z[r, j] = tanh(z[r, j])
        h = z
    return h[:, 0]
