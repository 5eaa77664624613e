"""The rules against DESIGN.md's ground truths, by enumeration."""

from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from lab import game
from lab.game import opponents


def test_reachable_positions():
    assert game.REACHABLE.sum() == 5478
    assert (game.REACHABLE & game.TERMINAL).sum() == 958
    assert len(game.DECISIONS) == 4520


def test_positions_up_to_symmetry():
    reachable = np.flatnonzero(game.REACHABLE)
    assert len(np.unique(game.symmetric_codes(reachable).min(axis=0))) == 765
    assert len(np.unique(game.CANONICAL[reachable])) == 765
    # every image of a board has that board's canonical code, itself one of the images
    images = game.symmetric_codes(reachable)
    assert (game.CANONICAL[images] == game.CANONICAL[reachable]).all()
    assert (images == game.CANONICAL[reachable]).any(axis=0).all()


@cache
def _complete_games(code=game.EMPTY):
    """Complete games from a position by result {1: X wins, -1: O wins, 0: draws}; the count
    depends only on the position, so memoising by code keeps the enumeration exact."""
    if game.TERMINAL[code]:
        return {int(game.WINNER[code]): 1}
    totals = {}
    for move in np.flatnonzero(game.LEGAL[code]):
        for result, n in _complete_games(game.AFTER[code, move]).items():
            totals[result] = totals.get(result, 0) + n
    return totals


def test_complete_games_by_result():
    games = _complete_games()
    assert sum(games.values()) == 255168
    assert games == {1: 131184, -1: 77904, 0: 46080}


@cache
def _random_vs_random(code=game.EMPTY):
    if game.TERMINAL[code]:
        return {r: Fraction(int(game.WINNER[code] == r)) for r in (1, -1, 0)}
    moves = np.flatnonzero(game.LEGAL[code])
    results = [_random_vs_random(game.AFTER[code, m]) for m in moves]
    return {r: sum(res[r] for res in results) / len(moves) for r in (1, -1, 0)}


def test_random_vs_random_exact():
    assert _random_vs_random() == {1: Fraction(737, 1260), -1: Fraction(121, 420), 0: Fraction(8, 63)}


def test_perfect_play_is_a_draw():
    assert game.VALUE[game.EMPTY] == 0
    assert game.OPTIMAL[game.EMPTY].all()  # every opening move keeps the draw


@pytest.mark.parametrize("line", game.LINES.tolist())
def test_every_line_wins_for_both_sides(line):
    for mark in (1, -1):
        board = np.zeros(9, dtype=int)
        board[line] = mark
        assert game.WINNER[game.encode(board)] == mark


def test_columns_and_diagonals_win():
    # write-up 003's program missed column wins: check one column and one diagonal explicitly
    assert game.WINNER[game.encode([1, -1, 0, 1, -1, 0, 1, 0, 0])] == 1
    assert game.WINNER[game.encode([-1, 1, 1, 0, -1, 1, 0, 0, -1])] == -1


def test_codes_round_trip_and_moves():
    board = np.array([1, 0, -1, 0, 1, 0, 0, 0, -1])
    code = game.encode(board)
    assert (game.BOARDS[code] == board).all()
    assert game.TO_MOVE[code] == 1
    after = game.BOARDS[game.AFTER[code, 1]]
    assert after[1] == 1 and (np.delete(after, 1) == np.delete(board, 1)).all()
    assert game.AFTER[code, 0] == -1  # occupied cell


def test_terminal_positions_have_no_legal_moves():
    assert not game.LEGAL[game.TERMINAL].any()
    assert game.LEGAL[game.DECISIONS].any(axis=1).all()


@pytest.mark.parametrize("bad", [[1, 2, 0, 0, 0, 0, 0, 0, 0], [0] * 8, "xo"])
def test_encode_rejects_bad_boards(bad):
    with pytest.raises(ValueError, match="9 cells"):
        game.encode(bad)


def test_batched_random_games_match_exact_rates():
    game.seed_kernels(0)
    random = opponents.table("random")
    trajectories, winners = game.play(200_000, random, random)
    rates = np.array([(winners == 1).sum(), (winners == -1).sum(), (winners == 0).sum()]) / len(winners)
    assert rates == pytest.approx([737 / 1260, 121 / 420, 8 / 63], abs=0.004)
    # every trajectory is a legal game: consecutive codes differ by one move of the side to move
    first = trajectories[:, 0]
    assert game.TO_MOVE[first].tolist() == [-1] * len(first)  # after X's first move, O is to move
    ends = (trajectories >= 0).sum(axis=1) - 1
    assert game.TERMINAL[trajectories[np.arange(len(ends)), ends]].all()


def test_onestep_takes_wins_but_never_blocks():
    onestep = opponents.table("onestep")
    x_can_win = game.encode([1, 1, 0, -1, -1, 0, 0, 0, 0])
    assert onestep[x_can_win].tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0]
    must_block = game.encode([1, 1, 0, -1, 0, 0, 0, 0, 0])  # O to move, no win of its own
    assert onestep[must_block][game.LEGAL[must_block]] == pytest.approx(1 / 6)
