"""Exact evaluation against ground truths and against an independent brute force.

The brute force below is plain Python over 9-tuples with exact fractions: it shares no code with
lab.evaluation.evaluate, lab.game or lab.game.opponents, so agreement checks the tables and the vectorised passes.
"""

from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from lab import game
from lab.evaluation import evaluate
from lab.game import opponents
from lab.agents import base
from references import best_response

# --- an independent tic-tac-toe in plain Python --------------------------------------------------

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
EMPTY = (0,) * 9


def winner(board):
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


def mover(board):
    return 1 if board.count(1) == board.count(-1) else -1


def over(board):
    return winner(board) != 0 or 0 not in board


def empty_cells(board):
    return [i for i in range(9) if board[i] == 0]


def play(board, cell):
    return board[:cell] + (mover(board),) + board[cell + 1:]


def uniform(cells):
    return {cell: Fraction(1, len(cells)) for cell in cells}


def random_policy(board):
    return uniform(empty_cells(board))


def onestep_policy(board):
    wins = [c for c in empty_cells(board) if winner(play(board, c)) == mover(board)]
    return uniform(wins or empty_cells(board))


POLICIES = {"random": random_policy, "onestep": onestep_policy}


@cache
def minimax(board):
    """Game value from X's view under perfect play."""
    if over(board):
        return winner(board)
    values = [minimax(play(board, c)) for c in empty_cells(board)]
    return max(values) if mover(board) == 1 else min(values)


def result(board, side):
    """(win, draw, loss) of a finished game from `side`'s view."""
    w = winner(board)
    return (Fraction(int(w == side)), Fraction(int(w == 0)), Fraction(int(w == -side)))


def brute_outcomes(agent_policy, opponent_policy, side):
    @cache
    def value(board):
        if over(board):
            return result(board, side)
        policy = agent_policy if mover(board) == side else opponent_policy
        total = [Fraction(0)] * 3
        for cell, p in policy(board).items():
            total = [t + p * v for t, v in zip(total, value(play(board, cell)))]
        return tuple(total)

    return value(EMPTY)


def brute_minimax(board):
    """The game-theoretic value of a board from X's view (1, 0, -1)."""
    @cache
    def value(board):
        if over(board):
            return winner(board)
        children = [value(play(board, c)) for c in empty_cells(board)]
        return max(children) if mover(board) == 1 else min(children)

    return value(board)


def brute_ceiling(opponent_policy, side):
    """Expectimax over the value-keeping moves: the agent maximises (win - loss), then win."""
    @cache
    def value(board):
        if over(board):
            return result(board, side)
        if mover(board) == side:
            keep = [c for c in empty_cells(board)
                    if brute_minimax(play(board, c)) == brute_minimax(board)]
            return max((value(play(board, c)) for c in keep), key=lambda v: (v[0] - v[2], v[0]))
        total = [Fraction(0)] * 3
        for cell, p in opponent_policy(board).items():
            total = [t + p * v for t, v in zip(total, value(play(board, cell)))]
        return tuple(total)

    return value(EMPTY)


def brute_line_counts(agent_policy, side):
    """(winning, drawing, losing, total) lines, following every agent move of non-zero
    probability: every line enumerated one by one, its end classified."""
    counts = [0, 0, 0, 0]
    stack = [EMPTY]
    while stack:
        board = stack.pop()
        if over(board):
            w = winner(board)
            counts[0 if w == side else 2 if w == -side else 1] += 1
            counts[3] += 1
            continue
        cells = agent_policy(board) if mover(board) == side else empty_cells(board)
        stack.extend(play(board, c) for c in cells)
    return tuple(counts)


def brute_optimal_move_rate(agent_policy, side):
    reached, stack = set(), [EMPTY]
    while stack:
        board = stack.pop()
        if board in reached or over(board):
            continue
        reached.add(board)
        cells = agent_policy(board) if mover(board) == side else empty_cells(board)
        stack.extend(play(board, c) for c in cells)
    rates = [sum(p for c, p in agent_policy(b).items() if minimax(play(b, c)) == minimax(b))
             for b in reached if mover(b) == side]
    return sum(rates) / len(rates)


def assert_outcomes(measured, prefix, expected):
    for key, value in zip(("win", "draw", "loss"), expected):
        assert measured[f"{prefix}_{key}"] == pytest.approx(float(value), abs=1e-12), key


def code(board):
    return game.encode(board)


# --- ground truths -------------------------------------------------------------------------------

def test_random_agent_against_random_is_the_known_ground_truth():
    x = evaluate.exact(opponents.table("random"), 1)
    o = evaluate.exact(opponents.table("random"), 2)
    x_wins, o_wins, draws = Fraction(737, 1260), Fraction(121, 420), Fraction(8, 63)
    assert_outcomes(x, "random", (x_wins, draws, o_wins))
    assert_outcomes(o, "random", (o_wins, draws, x_wins))


def test_random_agent_lines_are_all_complete_games():
    x = evaluate.exact(opponents.table("random"), 1)
    o = evaluate.exact(opponents.table("random"), 2)
    assert x["total_lines"] == o["total_lines"] == 255_168
    assert x["losing_lines"] == o["winning_lines"] == 77_904  # O wins
    assert o["losing_lines"] == x["winning_lines"] == 131_184  # X wins
    assert x["drawing_lines"] == o["drawing_lines"] == 46_080
    assert not x["never_loses"] and not o["never_loses"]


def test_result_keys_and_types():
    measured = evaluate.exact(opponents.table("onestep"), 1)
    assert tuple(measured) == tuple(evaluate.KEYS)
    assert {k: type(v) for k, v in measured.items()} == evaluate.KEYS
    for name in evaluate.OPPONENTS:
        total = sum(measured[f"{name}_{r}"] for r in ("win", "draw", "loss"))
        assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("player", [1, 2])
def test_perfect_agents_never_lose_and_the_best_reaches_the_ceiling(player):
    # Uniform among minimax moves (the `perfect` opponent) and the perfect player that best
    # exploits each opponent are both perfect; only the latter reaches the ceiling.
    uniform = evaluate.exact(opponents.table("perfect"), player)
    for name in evaluate.OPPONENTS:
        best = evaluate.exact(best_response(name, player), player)
        for measured in (uniform, best):
            assert measured["losing_lines"] == 0 and measured["never_loses"]
            assert measured["total_lines"] > 0
            assert measured["optimal_move_rate"] == pytest.approx(1.0, abs=1e-12)
            assert measured[f"{name}_loss"] == 0.0
        top = evaluate.ceiling(name, player)
        assert_outcomes(best, name, (top["win"], top["draw"], top["loss"]))
        assert uniform[f"{name}_win"] < top["win"]


# --- against the independent brute force ---------------------------------------------------------

def table_policy(table):
    """A brute-force policy reading a lab move table (the agent under test)."""
    def policy(board):
        row = table[code(board)]
        return {c: Fraction(float(p)) for c, p in enumerate(row) if p > 0}
    return policy


@pytest.mark.parametrize("opponent", evaluate.OPPONENTS)
def test_onestep_agent_as_x_matches_brute_force(opponent):
    measured = evaluate.exact(opponents.table("onestep"), 1)
    expected = brute_outcomes(onestep_policy, POLICIES[opponent], side=1)
    assert_outcomes(measured, opponent, expected)


@pytest.mark.parametrize("player", [1, 2])
def test_lines_and_optimal_move_rate_match_brute_force_with_ties(player):
    # OneStep has many tied moves: every one of them must be followed.
    side = 1 if player == 1 else -1
    measured = evaluate.exact(opponents.table("onestep"), player)
    expected = brute_line_counts(onestep_policy, side)
    assert tuple(measured[k] for k in ("winning_lines", "drawing_lines", "losing_lines",
                                       "total_lines")) == expected
    rate = brute_optimal_move_rate(onestep_policy, side)
    assert measured["optimal_move_rate"] == pytest.approx(float(rate), abs=1e-12)


@pytest.mark.parametrize("opponent, player", [  # one case in the fast tier, every case in slow
    ("onestep", 2), *(pytest.param(o, p, marks=pytest.mark.slow) for o in evaluate.OPPONENTS
                      for p in (1, 2) if (o, p) != ("onestep", 2))])
def test_ceiling_matches_brute_force_expectimax(opponent, player):
    side = 1 if player == 1 else -1
    best = evaluate.ceiling(opponent, player)
    win, draw, loss = brute_ceiling(POLICIES[opponent], side)
    assert (best["win"], best["draw"], best["loss"]) == pytest.approx(
        (float(win), float(draw), float(loss)), abs=1e-12)


@pytest.mark.parametrize("player", [1, 2])
@pytest.mark.parametrize("opponent", evaluate.OPPONENTS)
def test_best_response_reaches_the_ceiling_and_no_fixed_policy_beats_it(opponent, player):
    best = evaluate.ceiling(opponent, player)
    measured = evaluate.exact(best_response(opponent, player), player)
    assert_outcomes(measured, opponent, (best["win"], best["draw"], best["loss"]))
    for name in opponents.NAMES:
        other = evaluate.exact(opponents.table(name), player)
        margin = other[f"{opponent}_win"] - other[f"{opponent}_loss"]
        assert margin <= best["win"] - best["loss"] + 1e-12


# --- agents and bad input ------------------------------------------------------------------------

class LowestCellAgent(base.Agent):
    """Prefers the lowest free cell: deterministic, no ties."""

    def scores(self, codes):
        return np.tile(-np.arange(9.0), (len(codes), 1))

    def arrays(self):
        return {}

    @classmethod
    def from_arrays(cls, arrays):
        return cls()


def test_an_agent_object_is_measured_through_its_move_table():
    lowest = lambda board: {empty_cells(board)[0]: Fraction(1)}  # noqa: E731
    for player, side in ((1, 1), (2, -1)):
        measured = evaluate.exact(LowestCellAgent(), player)
        assert_outcomes(measured, "random", brute_outcomes(lowest, random_policy, side))
        assert tuple(measured[k] for k in ("winning_lines", "drawing_lines", "losing_lines",
                                           "total_lines")) == brute_line_counts(lowest, side)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="player"):
        evaluate.exact(opponents.table("random"), 0)
    with pytest.raises(ValueError, match="shape"):
        evaluate.exact(np.zeros((9, 9)), 1)
    illegal = np.array(opponents.table("random"))
    start = code([1, 0, 0, 0, 0, 0, 0, 0, 0])  # O to move; cell 0 is taken
    illegal[start] = 0.0
    illegal[start, 0] = 1.0
    with pytest.raises(ValueError, match="probability distribution"):
        evaluate.exact(illegal, 2)
    evaluate.exact(illegal, 1)  # O's rows do not matter when the agent plays X
    missing = np.array(opponents.table("random"))
    missing[game.EMPTY] = 0.0
    with pytest.raises(ValueError, match="probability distribution"):
        evaluate.exact(missing, 1)


# --- the opponents block and perfect -------------------------------------------------------------

def test_block_takes_a_win_then_blocks_then_plays_at_random():
    block = opponents.table("block")
    # O to move, X threatens 0-1-2 and O has no win: O must take cell 2.
    assert block[code([1, 1, 0, 0, -1, 0, 0, 0, 0])].tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0]
    # X to move threatens 0-1-2 and O threatens 3-4-5: X wins rather than blocks.
    assert block[code([1, 1, 0, -1, -1, 0, 0, 0, 0])].tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0]
    # X to move, two O threats: both blocks share the probability.
    assert block[code([1, -1, 1, -1, -1, 0, 1, 0, 0])].tolist() == [0, 0, 0, 0, 0, 0.5, 0, 0.5, 0]


def test_block_everywhere_matches_its_definition():
    block = opponents.table("block")
    for c in game.DECISIONS:
        board = tuple(int(v) for v in game.BOARDS[c])
        me = mover(board)
        cells = empty_cells(board)
        wins = [m for m in cells if winner(play(board, m)) == me]
        threats = [m for m in cells if winner(board[:m] + (-me,) + board[m + 1:]) == -me]
        expected = uniform(wins or threats or cells)
        assert dict(enumerate(block[c])) == pytest.approx(
            {m: float(expected.get(m, 0)) for m in range(9)}), board


@pytest.mark.parametrize("player", [1, 2])
def test_perfect_plays_only_minimax_moves_and_all_of_them(player):
    perfect = opponents.table("perfect")
    side = 1 if player == 1 else -1
    for c in game.DECISIONS[game.TO_MOVE[game.DECISIONS] == side]:
        board = tuple(int(v) for v in game.BOARDS[c])
        good = [m for m in empty_cells(board) if minimax(play(board, m)) == minimax(board)]
        assert np.flatnonzero(perfect[c]).tolist() == good, board
        assert perfect[c][good] == pytest.approx(1 / len(good))


@pytest.mark.parametrize("argv, board", [(["3", "3"], "3x3 k3"), (["3"], "3x3 k3"), (["4", "3"], "4x3 k3")])
def test_the_ceiling_command_fills_n_and_k_from_the_board_given(argv, board, capsys):
    from lab.evaluation import exact_ceiling

    exact_ceiling.main(argv)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{board}: solved in") and len(lines) == 2 + 6  # a header, 3 opponents x 2 seats
