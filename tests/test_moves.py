"""lab.game.moves, the game a move at a time from plain Python: the same positions, moves and keys as
the compiled engine's on 3x3 and on a bigger board."""

import numpy as np
import pytest

from lab import game
from lab.game import engine, moves


def test_on_3x3_positions_are_codes_and_afterstates_are_lab_games():
    g = engine.of((3, 3, 3))
    pos = moves.start(g)
    assert pos == game.EMPTY and moves.key(g, pos) == game.EMPTY
    pos, won, over = moves.play(g, pos, 4, 0)
    assert pos == game.AFTER[game.EMPTY, 4] and not won and not over
    codes = game.DECISIONS[:500]
    np.testing.assert_array_equal(moves.afterstate_keys(g, codes), game.AFTER[codes])


def test_on_4x4_each_afterstate_key_is_the_key_of_the_move_played():
    g = engine.of((4, 4, 4))
    game.seed_kernels(3)
    pos, side, over = moves.start(g), 0, False
    while not over:
        keys = moves.afterstate_keys(g, np.array([pos]))[0]
        taken = (int(pos[0]) | int(pos[1])) >> np.arange(16) & 1
        assert ((keys < 0) == taken.astype(bool)).all()
        cell = moves.random_cell(g, pos)
        pos, won, over = moves.play(g, pos, cell, side)
        assert keys[cell] == moves.key(g, pos) == int(pos[0]) | int(pos[1]) << 16
        side = 1 - side


def test_a_board_too_big_for_one_int64_key_is_refused():
    g = engine.of((6, 6, 4))
    with pytest.raises(ValueError, match="at most 31 cells, got 36"):
        moves.afterstate_keys(g, np.zeros((1, 2), np.uint64))
