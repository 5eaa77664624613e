"""Test tiers and checks shared by the learners' tests.

Tiers: `-m "not slow and not integration"` is the fast tier for everyday work: it runs in this
process only, and a guard below fails any of its tests that starts a process or Ray.
`integration` tests drive real sweeps (subprocesses, Ray, a notebook kernel, killed processes);
`slow` tests train for tens of seconds to check learning thresholds.
"""

import os
import platform
import subprocess

import numpy as np
import pytest

from lab import agents, game
from lab.results import provenance
from lab.config.compose import compose
from lab.config.jobs import job, parse
from lab.run import run


provenance.code()  # asks git once per process (cached), before the guard below starts refusing


def pytest_terminal_summary(terminalreporter):
    """The CPU the suite ran on, last: the golden runs (tests/test_same_rows.py) promise the same
    rows on every CPU, and a log that names the CPU shows on which ones they held."""
    try:
        with open("/proc/cpuinfo") as info:
            model = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):  # not Linux
        model = platform.processor() or "unknown"
    terminalreporter.write_line(f"CPU: {model} ({platform.machine()})")


ONE_CLUSTER = ("test_cluster.py", "test_cluster_ray.py", "test_cluster_slurm.py")
"""Files whose tests share one cluster of namespaces (tests/cluster/cluster.sh)."""
LONGEST = (*ONE_CLUSTER, "test_same_rows.py", "test_kill.py", "test_defaults.py", "test_analysis.py")
"""Files of several minutes each, started first so that no worker ends the suite alone with one."""


def pytest_collection_modifyitems(items):
    """Under pytest-xdist (`-n auto`: --dist loadgroup in pyproject.toml) a file's tests stay on
    one worker, so a module's fixtures are built once, and the cluster tier's files share one
    worker, as they share one cluster; the longest files start first."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("cluster" if name in ONE_CLUSTER else name))
    items.sort(key=lambda item: item.path.name not in LONGEST)  # stable: each file's order kept


@pytest.fixture(autouse=True)
def _fast_tier_stays_in_process(request, monkeypatch):
    """A test outside the integration and slow tiers may start no process and no Ray."""
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker("slow"):
        return

    def refuse(*args, **kwargs):
        raise AssertionError("this test starts a process or Ray: mark it @pytest.mark.integration")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr("os.fork", refuse)  # multiprocessing's fork (lab.execution.workers)
    monkeypatch.setattr("ray.init", refuse)


def _run_and_restore(tmp_path, *overrides):
    """A tiny run through lab.run.run: it must produce one finished row per iteration and a
    checkpoint that lab.agents.load restores to the agent a learner trained on the same knobs
    holds (same scores everywhere), playing legal moves from every reachable position.
    Returns the restored agent and the run's rows."""
    cfg = compose(*overrides)
    result = run(job(cfg))
    rows = result.rows
    n, iterations = cfg["episodes_per_update"], cfg["iterations"]
    assert (rows["status"] == "finished").all(), rows["error"].iloc[0]
    assert rows["iteration"].tolist() == list(range(1, iterations + 1))
    assert (rows[["p1_wins", "p2_wins", "draws"]].sum(axis=1) == n).all()
    assert rows["episodes"].iloc[-1] == n * iterations
    # the last row carries the exact evaluation of every seat the agent trained in
    run_cfg, knobs = parse(cfg)
    seats = (1, 2) if run_cfg.player is None else (run_cfg.player,)
    for seat in seats:
        assert 0 <= rows[f"eval_p{seat}_random_win"].iloc[-1] <= 1
        assert rows[f"eval_p{seat}_total_lines"].iloc[-1] > 0

    path = tmp_path / "agent.npz"
    path.write_bytes(result.checkpoint)
    restored = agents.load(path)
    assert restored.algorithm == cfg["algorithm"]
    learner = agents.get(cfg["algorithm"]).Learner(knobs, run_cfg)
    for _ in range(iterations):
        learner.iterate()
    trained = learner.agent()
    assert np.array_equal(restored.scores(game.DECISIONS), trained.scores(game.DECISIONS))

    probs = restored.policy(game.DECISIONS)  # the greedy moves act() draws from, everywhere
    assert np.allclose(probs.sum(axis=1), 1) and not probs[~game.LEGAL[game.DECISIONS]].any()
    rng = np.random.default_rng(0)
    for code in rng.choice(game.DECISIONS, 300):
        assert game.LEGAL[code, restored.act(game.BOARDS[code], rng)]
    return restored, rows


@pytest.fixture
def run_and_restore(tmp_path):
    return lambda *overrides: _run_and_restore(tmp_path, *overrides)


@pytest.fixture
def make_learner():
    """make_learner(algorithm, *overrides, train=False): the algorithm's Learner on the composed
    knobs (its defaults plus `overrides`); with train=True, after its `iterations` updates."""

    def make(algorithm, *overrides, train=False):
        run_cfg, knobs = parse(compose(f"algorithm={algorithm}", *overrides))
        learner = agents.get(algorithm).Learner(knobs, run_cfg)
        for _ in range(run_cfg.iterations if train else 0):
            learner.iterate()
        return learner

    return make
