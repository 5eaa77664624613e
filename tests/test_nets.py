import numpy as np
import pytest

from lab.nets import MLP


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
    with pytest.raises(ValueError, match="tanh hidden layers only"):
        relu.compiled()
