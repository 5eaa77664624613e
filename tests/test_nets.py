import numpy as np
import pytest

from numba import njit

from lab import nets
from lab.agents import puct
from lab.nets import MLP


@njit
def nets_exp(y):
    return nets.exp(y)


def _loss(net, x, target):
    return 0.5 * float(((net(x) - target) ** 2).sum())


@pytest.mark.parametrize("output, hidden", [("tanh", "tanh"), ("linear", "tanh"),
                                            ("linear", "relu"), ("tanh", "relu")])
def test_gradients_match_finite_differences(output, hidden):
    rng = np.random.default_rng(0)
    net = MLP([9, 7, 5, 3], rng, output=output, dtype=np.float64, hidden=hidden)
    x = rng.integers(-1, 2, size=(11, 9)).astype(float)
    target = rng.uniform(-1, 1, size=(11, 3))
    acts = net.activations(x)
    grads = net.gradients(acts, acts[-1] - target)
    eps = 1e-6
    for param, grad in zip(net.params, grads):
        for index in [tuple(i) for i in np.ndindex(param.shape)][::3]:
            saved = param[index]
            param[index] = saved + eps
            up = _loss(net, x, target)
            param[index] = saved - eps
            down = _loss(net, x, target)
            param[index] = saved
            assert grad[index] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-7)


def test_init_scale_follows_seed_000():
    net = MLP([400, 600, 1], np.random.default_rng(1))
    assert net.weights[0].std() == pytest.approx(1 / np.sqrt(1000), rel=0.02)
    assert net.weights[1].shape == (600, 1)
    assert net.output == "tanh" and np.abs(net(np.ones((3, 400)))).max() < 1


def test_fit_step_lowers_the_loss():
    rng = np.random.default_rng(2)
    net = MLP([9, 16, 16, 1], rng)
    x = rng.integers(-1, 2, size=(50, 9)).astype(float)
    target = np.tanh(x.sum(axis=1, keepdims=True))
    losses = [net.fit_step(x, target, 0.01) for _ in range(200)]
    assert losses[-1] < 0.2 * losses[0]


def test_divergence_is_refused_and_parameters_kept():
    net = MLP([2, 3, 1], np.random.default_rng(3), output="linear")
    before = [p.copy() for p in net.params]
    with pytest.raises(FloatingPointError, match="diverged"):
        net.descend([np.full(p.shape, np.inf) for p in net.params], 1.0)
    assert all((a == b).all() for a, b in zip(before, net.params))


def test_arrays_round_trip():
    net = MLP([9, 4, 1], np.random.default_rng(4), output="linear")
    copy = MLP.from_arrays(net.arrays(prefix="v_"), prefix="v_")
    x = np.random.default_rng(5).normal(size=(6, 9))
    assert copy.output == "linear"
    assert np.array_equal(copy(x), net(x))


def test_relu_nets_round_trip_and_tanh_checkpoints_are_unchanged():
    rng = np.random.default_rng(1)
    relu = MLP([9, 6, 2], rng, output="linear", hidden="relu")
    x = rng.integers(-1, 2, size=(5, 9))
    assert (relu.activations(x)[1] >= 0).all()
    restored = MLP.from_arrays(relu.arrays())
    assert restored.hidden == "relu" and np.array_equal(restored(x), relu(x))
    assert relu.copy().hidden == "relu"
    tanh = MLP([9, 6, 2], rng)
    assert "relu" not in tanh.arrays() and MLP.from_arrays(tanh.arrays()).hidden == "tanh"
    compiled = relu.compiled()
    assert np.array_equal(nets.forward(*compiled, relu.activations(x)[0]), relu.activations(x)[-1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, n_in, n_out", [(13, 9, 7), (8, 5, 1), (3, 4, 2), (37, 18, 1)])
def test_the_passes_add_in_their_fixed_order(dtype, n, n_in, n_out):
    """Each kernel gives exactly the bits of numpy's elementwise IEEE arithmetic done in the order
    its docstring states (no BLAS, no reordering): results that cannot depend on the machine."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n_in)).astype(dtype)
    w = rng.standard_normal((n_in, n_out)).astype(dtype)
    b = rng.standard_normal(n_out).astype(dtype)
    delta = rng.standard_normal((n, n_out)).astype(dtype)
    z = np.broadcast_to(b, (n, n_out)).copy()
    for k in range(n_in):
        z = z + x[:, k : k + 1] * w[k]
    assert np.array_equal(nets.dense(x, w, b, nets.LINEAR), z)
    g = np.zeros((n_in, n_out), dtype)
    for r in range(n):
        g = g + x[r][:, None] * delta[r][None, :]
    assert np.array_equal(nets.weight_gradient(x, delta), g)
    s = np.zeros(n_out, dtype)
    for r in range(n):
        s = s + delta[r]
    assert np.array_equal(nets.column_sums(delta), s)
    below = np.zeros((n, n_in), dtype)
    for j in range(n_out):
        below = below + delta[:, j : j + 1] * w[:, j]
    a = np.tanh(x)
    assert np.array_equal(nets.back(delta, w, a, nets.TANH), below * (dtype(1) - a * a))


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 2e-7), (np.float64, 5e-16)])
def test_tanh_and_exp_are_close_to_the_true_functions(dtype, tolerance):
    x = np.linspace(-30, 30, 200_001).astype(dtype)
    z = nets.dense(x[:, None], np.ones((1, 1), dtype), np.zeros(1, dtype), nets.TANH)[:, 0]
    assert z.dtype == dtype
    assert np.abs(z - np.tanh(x.astype(np.float64))).max() < tolerance
    assert z[x >= 20].min() == 1 and z[x <= -20].max() == -1
    y = np.linspace(-40, 0, 10_001)
    one_empty = 1.0 - np.eye(9)[[0] * len(y)]  # the net's input rows: cell 0 empty, the rest taken
    probs = puct.priors_and_values(np.column_stack([y] * 9 + [y]).astype(np.float32), one_empty)[0]
    assert (probs[:, 0] == 1).all()  # one legal move: all of the probability
    mine = np.array([nets_exp(v) for v in y])
    assert np.abs(mine / np.exp(y) - 1).max() < 1e-12 and nets_exp(-41.0) == 0
