"""The m,n,k game a move at a time from plain Python, on every board: what a learner that is not
compiled plays with (docs/architecture.md's walk-through).

Each move is lab.game.engine's, compiled once per engine, so a position is the engine's (a board code
on 3x3, an (x, o) pair of uint64 bitboards elsewhere), the random cells come from the compiled
kernels' stream (lab.game.seed_kernels), and an opponent is what the compiled learners play
(lab.agents.tabular.opponent: a move table on 3x3, lab.game.bots' bots elsewhere). Keys name
positions by one integer, for tables of them: the code on 3x3, x | o << cells elsewhere.
"""

import numpy as np
from numba import njit

from lab import game
from lab.game import engine

MAX_CELLS = 31
"""Boards whose positions `key` names in one non-negative int64 (5x5 included): O's stones sit
above X's, and -1 marks a taken cell in `afterstate_keys`"""


@njit(cache=True)
def start(g):
    """The empty board."""
    return engine.start(g)


@njit(cache=True)
def play(g, pos, cell, side):
    """(the position after `side` (0 X, 1 O) plays `cell` at `pos`, line made, game over)."""
    return engine.play(g, pos, cell, side)


@njit(cache=True)
def random_cell(g, pos):
    """A uniformly random legal cell at `pos`."""
    return engine.random_cell(g, pos)


@njit(cache=True)
def opponent_move(g, opponent, pos, side):
    """The cell the fixed `opponent` plays with `side` to move at `pos`."""
    return engine.opponent_move(g, opponent, pos, side)


def key(g, pos) -> int:
    """The position's key."""
    if engine.tabulated(g):
        return int(pos)
    return int(pos[0]) | int(pos[1]) << engine.cells(g)


def afterstate_keys(g, positions: np.ndarray) -> np.ndarray:
    """(n, cells) int64: the key after the side to move plays each cell at each of the engine's
    positions, -1 where the cell is taken."""
    if engine.tabulated(g):
        return game.AFTER[positions].astype(np.int64)
    cells = engine.cells(g)
    if cells > MAX_CELLS:
        raise ValueError(f"a position's key needs a board of at most {MAX_CELLS} cells, got {cells}")
    x, o = (positions[:, i, None].astype(np.int64) for i in (0, 1))
    bits = np.int64(1) << np.arange(cells, dtype=np.int64)
    x_moves = np.bitwise_count(x) == np.bitwise_count(o)
    after_x = np.where(x_moves, x | bits, x)
    after_o = np.where(x_moves, o, o | bits)
    return np.where((x | o) & bits, -1, after_x | after_o << cells)
