"""The compiled loops compute what their plain-Python references (tests/learner_references.py)
compute.

Each learner's algorithm is stated twice: a compiled kernel, and a plain-Python function there.
Where the kernel is a sequential loop (q_table, td_value, negamax_q) the reference makes the same
random draws in the same order through references.Stream, so both must agree exactly, step by step.
mc_vfa's kernel plays a whole iteration as a batch with afterstates valued lazily and then fits
batched Monte Carlo means, while its reference plays one game at a time from numpy's own stream:
they start from the same net but draw different games, so they are compared on outcome statistics
across seeds (the exact loss probabilities of the final agents, lab.evaluation.evaluate.exact, no game noise).
"""

import numpy as np
import pytest

from lab import game
from lab.evaluation import evaluate
from lab.agents import mc_vfa, td_value
from lab.nets import MLP

import learner_references as references

# A small net that learns visibly in 2,000 episodes as O against OneStep: its exact loss
# probability against OneStep is 0.79 before training and about 0.56 after, with a seed-to-seed sd
# of about 0.055 (over seeds 100-147: fast path 0.561, plain loop 0.558).
MC_VFA = ["layers=2", "neurons=8", "alpha=0.02", "episodes_per_update=50", "player=2",
          "opponent=onestep", "epsilon=0", "epsilon_decay_per_update=1"]
ITERATIONS = 40
SEEDS = range(12)


def onestep_losses(nets, symmetry) -> np.ndarray:
    return np.array([evaluate.exact(mc_vfa.Agent(net, 2, symmetry=symmetry), 2)["onestep_loss"]
                     for net in nets])


@pytest.mark.parametrize("symmetry", [False, True])
def test_mc_vfa_fast_path_learns_like_the_plain_loop(make_learner, symmetry):
    learners = [make_learner("mc_vfa", *MC_VFA, f"symmetry={symmetry}", f"seed={seed}")
                for seed in SEEDS]
    before = onestep_losses((MLP([9, 8, 8, 1], np.random.default_rng(seed)) for seed in SEEDS),
                            symmetry).mean()
    for learner in learners:
        for _ in range(ITERATIONS):
            learner.iterate()
    fast = onestep_losses((learner.net for learner in learners), symmetry)
    plain = onestep_losses((references.mc_vfa(learner.knobs, learner.run, ITERATIONS)
                            for learner in learners), symmetry)
    # Both learned: the mean drops by ~0.23, four times the per-seed sd.
    assert fast.mean() < before - 0.12 and plain.mean() < before - 0.12, (before, fast, plain)
    # Same distribution: the difference of two 12-seed means with sd ~0.055 each has sd ~0.022;
    # 0.07 is about three of those, and under a third of the learning effect.
    assert abs(fast.mean() - plain.mean()) < 0.07, (fast, plain)


@pytest.mark.parametrize("seat,opponent", [(1, "random"), (2, "onestep")])
def test_q_table_kernel_is_its_reference_step_by_step(make_learner, seat, opponent):
    learner = make_learner("q_table", f"opponent={opponent}", f"player={seat}",
                           "episodes_per_update=300", "alpha=0.5", "epsilon=1.0",
                           "epsilon_decay_per_game=0.99", "seed=5")
    tally = learner.iterate()
    q = np.zeros((game.N_CODES, 9))
    epsilon, plain_tally = references.q_table(q, 1.0, learner.opponent, 300, learner.params,
                                                   references.Stream(5))
    assert tally.tolist() == plain_tally.tolist() and epsilon == learner.epsilon
    assert np.count_nonzero(q) > 100
    np.testing.assert_array_equal(learner.q, q)


@pytest.mark.parametrize("overrides", [("opponent=random", "player=1"),
                                       ("opponent=onestep", "player=2", "draw_value=0.5"),
                                       ("opponent=self", "epsilon=0.3"),
                                       ("opponent=random", "player=2", "update=end_of_game"),
                                       ("opponent=self", "update=end_of_game")])
def test_td_value_kernel_is_its_reference_step_by_step(make_learner, overrides):
    learner = make_learner("td_value", *overrides, "episodes_per_update=1000", "seed=6")
    tally = learner.iterate()
    values = td_value.initial_values(learner.knobs.draw_value)
    plain_tally = references.td_value(values, learner.opponent, 1000, learner.params,
                                           references.Stream(6))
    assert tally.tolist() == plain_tally.tolist()
    assert np.count_nonzero(values != td_value.initial_values(learner.knobs.draw_value)) > 100
    np.testing.assert_array_equal(learner.values, values)


@pytest.mark.parametrize("overrides", [("opponent=self", "ensemble=3"),
                                       ("opponent=random", "player=2"),
                                       ("opponent=onestep", "player=1")])
def test_negamax_q_kernel_is_its_reference_step_by_step(make_learner, overrides):
    learner = make_learner("negamax_q", *overrides, "episodes_per_update=200", "seed=7")
    tallies = [learner.iterate() for _ in range(2)]  # the second continues the ensemble's order
    q = np.zeros_like(learner.q)
    stream = references.Stream(7)
    plain = [references.negamax_q(q, first, learner.opponent, 200, learner.params, stream)
             for first in (0, 200)]
    assert [t.tolist() for t in tallies] == [t.tolist() for t in plain]
    assert np.count_nonzero(q) > 100
    np.testing.assert_array_equal(learner.q, q)
