"""Evaluation results unchanged on random, trained and perfect agents (issue 16).

lab.evaluation.evaluate.exact runs lab.game.solver's compiled pass forwards over the positions the games
reach, and agents build their move tables from one batched pass with a compiled greedy. The plain
numpy versions before issue 16 are kept below as the specification: the DP over lab.game.DEPTHS,
the greedy policy with ties shared equally, and the net agents' scores as they were computed. New
and old must agree: ints and bools exactly, floats within 1e-12 (the forward pass sums in another
order than the backward DP: they differ in the last bits).
"""

import numpy as np
import pytest

from lab import agents, game
from lab.config import jobs
from lab.evaluation import evaluate
from lab.game import opponents
from lab.agents import mc_vfa, q_net
from lab.config.compose import compose
from references import best_response

# --- the specification: the numpy implementation before issue 16 ---------------------------------

def level(codes):
    codes = codes[~game.TERMINAL[codes]]
    return codes, np.maximum(game.AFTER[codes], 0), game.LEGAL[codes]


LEVELS = [level(codes) for codes in game.DEPTHS if (~game.TERMINAL[codes]).any()]


def reference_check(table, side):
    mine = game.DECISIONS[game.TO_MOVE[game.DECISIONS] == side]
    rows, legal = table[mine], game.LEGAL[mine]
    bad = ~np.isfinite(rows).all(axis=1) | (rows < 0).any(axis=1)
    bad |= (np.where(legal, 0, rows) != 0).any(axis=1) | (np.abs(rows.sum(axis=1) - 1) > 1e-9)
    if bad.any():
        code = int(mine[np.argmax(bad)])
        raise ValueError(f"the move table is not a probability distribution over the legal moves "
                         f"at board {game.BOARDS[code].tolist()} (code {code}): {table[code]}")


def reference_outcomes(agent_moves, opponent_moves, side):
    value = np.stack([game.WINNER == side, game.WINNER == 0, game.WINNER == -side], axis=1) * 1.0
    for codes, children, _ in reversed(LEVELS):
        agents_turn = (game.TO_MOVE[codes] == side)[:, None]
        moves = np.where(agents_turn, agent_moves[codes], opponent_moves[codes])
        value[codes] = np.einsum("nm,nmk->nk", moves, value[children])
    return value[game.EMPTY]


def followed(agent_moves, codes, legal, side):
    return np.where((game.TO_MOVE[codes] == side)[:, None], agent_moves[codes] > 0, legal)


def reference_lines(agent_moves, side):
    """(winning, drawing, losing, total) lines from the empty board."""
    total = np.ones(game.N_CODES, dtype=np.int64)
    won = (game.WINNER == side).astype(np.int64)
    lost = (game.WINNER == -side).astype(np.int64)
    drawn = total - won - lost
    for codes, children, legal in reversed(LEVELS):
        follow = followed(agent_moves, codes, legal, side)
        for counts in (total, won, drawn, lost):
            counts[codes] = (follow * counts[children]).sum(axis=1)
    return tuple(int(counts[game.EMPTY]) for counts in (won, drawn, lost, total))


def reference_optimal_move_rate(agent_moves, side):
    reached = np.zeros(game.N_CODES, dtype=bool)
    reached[game.EMPTY] = True
    for codes, children, legal in LEVELS:
        follow = followed(agent_moves, codes, legal, side) & reached[codes][:, None]
        reached[children[follow]] = True
    mine = game.DECISIONS[reached[game.DECISIONS] & (game.TO_MOVE[game.DECISIONS] == side)]
    return float((agent_moves[mine] * game.OPTIMAL[mine]).sum(axis=1).mean())


def reference_exact(table, player):
    side = 1 if player == 1 else -1
    reference_check(table, side)
    result = {}
    for name in evaluate.OPPONENTS:
        win, draw, loss = reference_outcomes(table, opponents.table(name), side)
        result.update({f"{name}_win": float(win), f"{name}_draw": float(draw),
                       f"{name}_loss": float(loss)})
    winning, drawing, losing, total = reference_lines(table, side)
    result.update(losing_lines=losing, total_lines=total, never_loses=losing == 0,
                  optimal_move_rate=reference_optimal_move_rate(table, side),
                  winning_lines=winning, drawing_lines=drawing)
    return result


def reference_greedy(scores, legal):
    masked = np.where(legal, scores, -np.inf)
    best = masked.max(axis=-1, keepdims=True)
    return game.uniform_over(legal & (masked == best))


def assert_same(measured, expected):
    assert list(measured) == list(expected)
    for key, value in expected.items():
        assert type(measured[key]) is type(value), key
        if isinstance(value, float):
            assert measured[key] == pytest.approx(value, rel=0, abs=1e-12), key
        else:
            assert measured[key] == value, key


# --- fixed tables: random, perfect and the other opponents, best responses, random ties ----------

def random_greedy_tables(n):
    """Greedy tables over random small-integer scores: many ties, of every size."""
    rng = np.random.default_rng(16)
    return [reference_greedy(rng.integers(0, 3, (game.N_CODES, 9)), game.LEGAL) for _ in range(n)]


def random_mixed_tables(n):
    """Tables with arbitrary probabilities (not greedy) on random subsets of the legal moves."""
    rng = np.random.default_rng(17)
    tables = []
    for _ in range(n):
        weights = rng.random((game.N_CODES, 9)) * game.LEGAL * (rng.random((game.N_CODES, 9)) < 0.6)
        none = weights.sum(axis=1) == 0
        weights[none] = game.LEGAL[none]
        totals = weights.sum(axis=1, keepdims=True)
        tables.append(np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0))
    return tables


@pytest.mark.parametrize("player", [1, 2])
@pytest.mark.parametrize("name", opponents.NAMES)
def test_opponent_tables_as_agents(name, player):
    # random is the uniform random agent, perfect the uniform minimax one
    table = opponents.table(name)
    assert_same(evaluate.exact(table, player), reference_exact(table, player))


@pytest.mark.parametrize("player", [1, 2])
@pytest.mark.parametrize("opponent", evaluate.OPPONENTS)
def test_best_responses_and_ceilings(opponent, player):
    table = best_response(opponent, player)
    assert_same(evaluate.exact(table, player), reference_exact(table, player))
    side = 1 if player == 1 else -1
    win, draw, loss = reference_outcomes(table, opponents.table(opponent), side)
    assert_same(evaluate.ceiling(opponent, player),
                {"win": float(win), "draw": float(draw), "loss": float(loss)})


@pytest.mark.parametrize("player", [1, 2])
def test_random_tables_with_ties_and_mixed_probabilities(player):
    for table in random_greedy_tables(5) + random_mixed_tables(5):
        assert_same(evaluate.exact(table, player), reference_exact(table, player))


def test_bad_tables_are_refused_where_the_specification_refuses_them():
    rng = np.random.default_rng(3)
    faults = [lambda row, m: 0.0 * row, lambda row, m: np.where(np.arange(9) == m, np.nan, row),
              lambda row, m: np.where(np.arange(9) == m, row + 1e-8, row),
              lambda row, m: np.where(np.arange(9) == m, np.inf, row),
              lambda row, m: np.where(np.arange(9) == m, -np.inf, row), lambda row, m: row[::-1]]
    for trial in range(60):
        table = np.array(opponents.table("random"))
        for code in rng.choice(game.DECISIONS, 2):
            table[code] = faults[trial % len(faults)](table[code], rng.integers(9))
        for player in (1, 2):
            try:
                expected = reference_exact(table, player)
            except ValueError:
                with pytest.raises(ValueError, match="^the policy's moves are not a probability "
                                                     "distribution over the empty cells at "):
                    evaluate.exact(table, player)
            else:
                assert_same(evaluate.exact(table, player), expected)


# --- the compiled greedy -------------------------------------------------------------------------

def test_greedy_matches_the_numpy_greedy_with_ties_infinities_and_nan():
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        for trial in range(12):
            scores = (rng.integers(-3, 3, (game.N_CODES, 9)) / 3).astype(dtype)
            # near ties: one unit in the last place apart is not a tie
            near = rng.random(game.N_CODES) < 0.3
            toward = rng.choice([-np.inf, 0.5, np.inf], (near.sum(), 9))
            scores[near] = np.nextafter(dtype(0.5), toward, dtype=dtype)
            scores[rng.random(scores.shape) < 0.05] = -np.inf
            scores[rng.random(scores.shape) < 0.05] = np.inf
            if trial % 3 == 0:
                scores[rng.random(scores.shape) < 0.02] = np.nan  # rows with a NaN stay 0
            assert np.array_equal(game.greedy(scores, game.LEGAL),
                                  reference_greedy(scores, game.LEGAL))
            decisions = scores[game.DECISIONS]
            expected = np.zeros((game.N_CODES, 9))
            expected[game.DECISIONS] = reference_greedy(decisions, game.LEGAL[game.DECISIONS])
            assert np.array_equal(game.greedy_table(game.DECISIONS, decisions), expected)
    one = game.DECISIONS[7]  # a single row, as act() asks
    assert np.array_equal(game.greedy(scores[one], game.LEGAL[one]),
                          reference_greedy(scores[one], game.LEGAL[one]))


# --- agents: greedy tables from the learners, trained a few iterations ---------------------------

def reference_scores(agent, codes):
    """The agents' scores as computed before: mc_vfa valued the distinct afterstates with np.unique
    and MLP.__call__, q_net a batch of (cells, one-hot move) rows; the others are unchanged."""
    if isinstance(agent, mc_vfa.Agent):
        after = game.AFTER[codes]
        legal = after >= 0
        unique, index = np.unique(after[legal], return_inverse=True)
        scores = np.full(after.shape, -np.inf, dtype=np.float32)
        scores[legal] = agent.net(game.BOARDS[unique])[index, 0]
        return scores
    if isinstance(agent, q_net.Agent):  # the write-up's net: (cells, one-hot move) -> Q
        rows, moves = np.nonzero(game.LEGAL[codes])
        scores = np.full((len(codes), 9), -np.inf)
        scores[rows, moves] = agent.net(np.hstack([game.BOARDS[codes[rows]], np.eye(9)[moves]]))[:, 0]
        return scores
    return agent.scores(codes)


def reference_move_table(agent):
    table = np.zeros((game.N_CODES, 9))
    table[game.DECISIONS] = reference_greedy(reference_scores(agent, game.DECISIONS),
                                             game.LEGAL[game.DECISIONS])
    return table


AGENTS = {
    "mc_vfa": ["layers=5", "neurons=32", "episodes_per_update=50", "symmetry=false"],  # as specified
    "q_net": ["episodes_per_update=50", "symmetry=false"],  # as specified
    "q_table": ["episodes_per_update=500"],
    "td_value": ["episodes_per_update=500"],
    "negamax_q": ["opponent=self", "episodes_per_update=500"],
}


def trained_agents(name, iterations=4):
    """The agent after each of the first iterations of a learner with the algorithm's defaults."""
    run_cfg, knobs = jobs.parse(compose(f"algorithm={name}", *AGENTS[name]))
    learner = agents.get(name).Learner(knobs, run_cfg)
    for _ in range(iterations):
        learner.iterate()
        yield learner.agent()


@pytest.mark.parametrize("name", AGENTS)
def test_trained_agents_move_tables_and_evaluations(name):
    for agent in trained_agents(name):
        table = agent.move_table()
        assert np.array_equal(table, reference_move_table(agent))
        for player in (1, 2):
            assert_same(evaluate.exact(table, player), reference_exact(table, player))


def test_tied_net_values_share_the_move_as_before():
    # A zero last layer gives every afterstate the same float32 value: every legal move ties.
    agent = next(trained_agents("mc_vfa", iterations=1))
    agent.net.weights[-1] = np.zeros_like(agent.net.weights[-1])
    table = agent.move_table()
    assert np.array_equal(table, reference_move_table(agent))
    assert np.array_equal(table[game.DECISIONS], game.uniform_over(game.LEGAL[game.DECISIONS]))
