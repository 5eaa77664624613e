"""The fast paths learn what a plain one-episode-at-a-time loop learns (issue 6).

mc_vfa plays a whole iteration in a compiled kernel that values afterstates lazily and then fits
batched Monte Carlo means. Below is the seed's algorithm written as plainly as possible: one game
at a time in Python, the net asked about each decision's afterstates, returns G = r + gamma G
walked back through the game, running means with step 1/N, then one full-batch gradient step.
Both start from the same net (same seed) but draw their games from different random streams, so
they are compared on outcome statistics across seeds: the exact loss probabilities of the final
agents (lab.evaluate.exact, no game noise).

The tabular learners' kernels are already sequential loops, compiled: q_table's is checked to be
its update rule, step by step, against a plain Python transcription fed the same random stream.
"""

import numpy as np

from lab import config, evaluate, game, opponents
from lab.compose import compose
from lab.agents import mc_vfa
from lab.nets import MLP

# A small net that learns visibly in 2,000 episodes as O against OneStep: its exact loss
# probability against OneStep is 0.79 before training and about 0.56 after, with a seed-to-seed sd
# of about 0.055 (over seeds 100-147: fast path 0.561, plain loop 0.558).
KNOBS = ["layers=2", "neurons=8", "alpha=0.02", "episodes_per_update=50", "player=2",
         "opponent=onestep"]
ITERATIONS = 40
SEEDS = range(12)


def plain_mc_vfa(seed: int, layers=2, neurons=8, alpha=0.02, gamma=0.95, episodes=50) -> MLP:
    """Seed 000's loop for O against OneStep, memory 'clear', epsilon 0."""
    rng = np.random.default_rng(seed)
    net = MLP([9] + [neurons] * layers + [1], rng)
    onestep = opponents.table("onestep")
    for _ in range(ITERATIONS):
        means, counts = {}, {}
        for _ in range(episodes):
            code, afterstates = game.EMPTY, []
            while not game.TERMINAL[code]:
                if game.TO_MOVE[code] == 1:
                    move = rng.choice(9, p=onestep[code])
                else:
                    moves = np.flatnonzero(game.LEGAL[code])
                    values = net(game.BOARDS[game.AFTER[code, moves]])[:, 0]
                    move = rng.choice(moves[values == values.max()])
                    afterstates.append(game.AFTER[code, move])
                code = game.AFTER[code, move]
            reward, g = -game.WINNER[code], 0.0  # +1 when O won, -1 when X won
            for k, afterstate in enumerate(reversed(afterstates)):
                g = (reward if k == 0 else 0.0) + gamma * g
                counts[afterstate] = counts.get(afterstate, 0) + 1
                mean = means.get(afterstate, 0.0)
                means[afterstate] = mean + (g - mean) / counts[afterstate]
        seen = sorted(means)
        net.fit_step(game.BOARDS[seen], np.array([means[c] for c in seen]), alpha)
    return net


def fast_mc_vfa(seed: int) -> MLP:
    run_cfg, knobs = config.parse(compose(*KNOBS, f"seed={seed}"))
    learner = mc_vfa.Learner(knobs, run_cfg)
    for _ in range(ITERATIONS):
        learner.iterate()
    return learner.net


def onestep_losses(nets) -> np.ndarray:
    return np.array([evaluate.exact(mc_vfa.Agent(net, 2), 2)["onestep_loss"] for net in nets])


def test_mc_vfa_fast_path_learns_like_the_plain_loop():
    before = onestep_losses(MLP([9, 8, 8, 1], np.random.default_rng(seed)) for seed in SEEDS).mean()
    fast = onestep_losses(fast_mc_vfa(seed) for seed in SEEDS)
    plain = onestep_losses(plain_mc_vfa(seed) for seed in SEEDS)
    # Both learned: the mean drops by ~0.23, four times the per-seed sd.
    assert fast.mean() < before - 0.12 and plain.mean() < before - 0.12, (before, fast, plain)
    # Same distribution: the difference of two 12-seed means with sd ~0.055 each has sd ~0.022;
    # 0.07 is about three of those, and under a third of the learning effect.
    assert abs(fast.mean() - plain.mean()) < 0.07, (fast, plain)


def plain_q_table(seed: int, side: int, games: int, alpha: float, epsilon: float, decay: float):
    """Seed 001's tabular Q (on-policy TD, gamma 1) one game at a time in plain Python.

    It draws from the same Mersenne Twister stream as the compiled kernels (numba's np.random,
    seeded like numpy's legacy RandomState) in the same order, so it must reproduce the kernel
    exactly: a move from a move table is one draw walked through the probabilities, and ties
    among best moves take one draw per extra tied move (keep the newcomer with chance 1/ties)."""
    stream = np.random.RandomState(seed)
    opponent, explore = opponents.table("random"), opponents.table("random")

    def draw(probs):
        moves = np.flatnonzero(probs > 0)
        u = stream.random_sample()
        for m in moves:
            u -= probs[m]
            if u < 0:
                return m
        return moves[-1]

    def best(values, legal):
        choice, ties = -1, 0
        for m in np.flatnonzero(legal):
            if choice < 0 or values[m] > values[choice]:
                choice, ties = m, 1
            elif values[m] == values[choice]:
                ties += 1
                if stream.random_sample() * ties < 1:
                    choice = m
        return choice

    q = np.zeros((game.N_CODES, 9))
    tally = np.zeros(3, dtype=int)
    for _ in range(games):
        epsilon *= decay
        code = game.EMPTY if side == 1 else game.AFTER[game.EMPTY, draw(opponent[game.EMPTY])]
        previous = None
        while True:
            explores = stream.random_sample() < epsilon
            move = draw(explore[code]) if explores else best(q[code], game.LEGAL[code])
            after = game.AFTER[code, move]
            if not game.TERMINAL[after]:
                after = game.AFTER[after, draw(opponent[after])]
            result = game.WINNER[after] * side
            if game.TERMINAL[game.AFTER[code, move]]:  # the agent's own move: a known result
                q[code, move] = result
            elif game.TERMINAL[after]:  # the opponent's reply: one sample of the result
                q[code, move] += alpha * (result - q[code, move])
            if previous is not None:
                q[previous] += alpha * (q[code, move] - q[previous])
            if game.TERMINAL[after]:
                break
            previous, code = (code, move), after
        tally[{1: 0, -1: 1, 0: 2}[game.WINNER[after]]] += 1
    return q, tally


def test_q_table_kernel_is_the_plain_update_rule_step_by_step():
    from lab.agents import q_table

    for player, side in ((1, 1), (2, -1)):
        run_cfg, knobs = config.parse(compose(
            "algorithm=q_table", "opponent=random", f"player={player}", "episodes_per_update=300",
            "alpha=0.5", "epsilon=1.0", "epsilon_decay_per_game=0.99", "seed=5"))
        learner = q_table.Learner(knobs, run_cfg)
        tally = learner.iterate()
        q, plain_tally = plain_q_table(5, side, 300, 0.5, 1.0, 0.99)
        assert tally.tolist() == plain_tally.tolist()
        assert np.count_nonzero(q) > 100
        np.testing.assert_allclose(learner.q, q, rtol=0, atol=1e-12)
