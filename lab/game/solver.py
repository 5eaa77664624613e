"""Small m,n,k boards (4x4 included) solved: every reachable position and its minimax value.

3x3's base-3 codes would need 3**16 (43 million) on 4x4 for its 9.7 million reachable positions.
Here depth d (stones on the board) holds the sorted uint64 keys `x | o << cells` of the positions
reached after d moves, a position is its index in its depth, and `children[d][i, j]` the index at
depth d + 1 after the j-th empty cell of position i, so the passes never search. `solve` enumerates
them (compiled moves, numpy's sort for the transpositions) and finds the values by backward
induction; lab.game.measures measures a policy on the result, lab.evaluation.exact_ceiling the ceiling.
Costs on 4x4, and why bigger boards are refused: docs/speed.md (Bigger boards).
"""

import functools
from typing import NamedTuple

import numpy as np
from numba import njit

from lab.game import bitboards

MAX_CELLS = 16
"""Boards the exact pass takes: 4x4 has 9.7 million reachable positions (seconds, under 1 GB);
20 cells would have up to 740 million, 25 cells (5x5) up to 1.6e11."""


class Solved(NamedTuple):
    """The reachable positions of one board, depth by depth, with their minimax values."""

    board: bitboards.Board  # the shape and its win-check tables
    keys: tuple  # keys[d]: sorted uint64 keys x | o << cells of the positions after d moves
    winner: tuple  # winner[d]: int8, 1 X has a line, -1 O has one, 0 nobody (terminal too at a full board)
    children: tuple  # children[d]: int32 (positions, cells - d), the child's index at depth d + 1
    # after each empty cell in increasing order; -1 rows at terminal positions
    value: tuple  # value[d]: int8 minimax value from X's view (1 X wins, 0 draw, -1 O wins)

    @property
    def cells(self) -> int:
        return self.board.m * self.board.n


def check_size(m, n, k) -> None:
    """Raise ValueError in one line unless m, n, k make a board the exact pass can enumerate."""
    bitboards.check_shape(m, n, k)
    if m * n > MAX_CELLS:
        raise ValueError(f"the exact pass takes m * n at most {MAX_CELLS} cells (4x4: 9.7 million "
                         f"positions; 20 cells: up to 740 million), got m={m}, n={n}: {m * n}")


@njit(cache=True)
def _child_keys(keys, winner, cells, depth):
    """The keys after every move from the open positions at `depth`, cell by cell: for each cell,
    those of the positions where it is empty, in key order. Adding one bit that none of them has
    keeps their order, so each cell's run is sorted already."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    stone = np.uint64(depth % 2 * cells)  # X moves at even depths; O's stones sit above X's
    out = np.empty(np.sum(winner == 0) * (cells - depth), dtype=np.uint64)
    e = 0
    for c in range(cells):
        bit = np.uint64(1) << np.uint64(c)
        for i in range(len(keys)):
            if winner[i] == 0 and not ((keys[i] | (keys[i] >> np.uint64(cells))) & mask) & bit:
                out[e] = keys[i] | (bit << stone)
                e += 1
    return out


@njit(cache=True)
def _child_index(keys, winner, following, cells, depth):
    """children for `depth` (see Solved): each cell's sorted run of child keys is found in the
    sorted `following` by one forward walk, not a search per child."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    stone = np.uint64(depth % 2 * cells)
    index = np.full((len(keys), cells - depth), -1, dtype=np.int32)
    moves_seen = np.zeros(len(keys), dtype=np.int64)  # the column of each position's next move
    for c in range(cells):
        bit, f = np.uint64(1) << np.uint64(c), 0
        for i in range(len(keys)):
            if winner[i] == 0 and not ((keys[i] | (keys[i] >> np.uint64(cells))) & mask) & bit:
                child = keys[i] | (bit << stone)
                while following[f] < child:
                    f += 1
                index[i, moves_seen[i]] = f
                moves_seen[i] += 1
    return index


@njit(cache=True)
def _winners(keys, windows, cells, mover):
    """1 or -1 (the mover) where the mover's stones cover a window, else 0."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    shift = np.uint64(0 if mover == 1 else cells)
    out = np.zeros(len(keys), dtype=np.int8)
    for i in range(len(keys)):
        stones = (keys[i] >> shift) & mask
        for window in windows:
            if stones & window == window:
                out[i] = mover
                break
    return out


def _enumerate(board: bitboards.Board):
    """(keys, winner, children) of every reachable position, depth by depth."""
    cells, windows = board.m * board.n, np.unique(board.windows)
    keys, winner, children = [np.zeros(1, dtype=np.uint64)], [np.zeros(1, dtype=np.int8)], []
    for depth in range(cells):
        after = np.sort(_child_keys(keys[depth], winner[depth], cells, depth), kind="stable")
        if after.size == 0:  # every position at this depth is a win
            break
        # stable: timsort, which merges the runs (numpy 2.4's np.unique: 26x longer on 11M keys)
        following = after[np.concatenate(([True], after[1:] != after[:-1]))]
        children.append(_child_index(keys[depth], winner[depth], following, cells, depth))
        keys.append(following)
        winner.append(_winners(following, windows, cells, 1 if depth % 2 == 0 else -1))
    return keys, winner, children


def _minimax(keys, winner, children) -> list:
    """Each depth's minimax values, from the last depth back (terminal: the winner)."""
    value = [None] * len(keys)
    value[-1] = winner[-1].copy()  # the last depth is all terminal
    for depth in range(len(children) - 1, -1, -1):
        after = value[depth + 1][np.maximum(children[depth], 0)]
        best = after.max(axis=1) if depth % 2 == 0 else after.min(axis=1)
        value[depth] = np.where(winner[depth] != 0, winner[depth], best).astype(np.int8)
    return value


@functools.lru_cache(maxsize=2)  # two boards held per process (4x4: 0.3 GB), as 3x3 and 4x4 runs alternate
def solve(m: int, n: int, k: int) -> Solved:
    """Every reachable position of the m,n,k board (at most MAX_CELLS cells) and its value."""
    check_size(m, n, k)
    board = bitboards.board(m, n, k)
    keys, winner, children = _enumerate(board)
    value = _minimax(keys, winner, children)
    return Solved(board, tuple(keys), tuple(winner), tuple(children), tuple(value))


def counts(solved: Solved) -> dict:
    """Positions by depth, their total, and the terminal ones: X wins, O wins, draws."""
    by_depth = [len(keys) for keys in solved.keys]
    full = len(solved.keys) - 1 == solved.cells
    draws = int((solved.winner[-1] == 0).sum()) if full else 0
    return {"positions": sum(by_depth), "by_depth": by_depth,
            "x_wins": sum(int((w == 1).sum()) for w in solved.winner),
            "o_wins": sum(int((w == -1).sum()) for w in solved.winner), "draws": draws}


def split(solved: Solved, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (x, o) bitboards of keys."""
    cells = np.uint64(solved.cells)
    return keys & ((np.uint64(1) << cells) - np.uint64(1)), keys >> cells


def picture(solved: Solved, key) -> str:
    """A position in one line, row by row from the top: X, O or . per cell, rows split by /."""
    x, o, m = int(key) & (1 << solved.cells) - 1, int(key) >> solved.cells, solved.board.m
    cells = "".join("X" if x >> c & 1 else "O" if o >> c & 1 else "." for c in range(solved.cells))
    return "/".join(cells[r:r + m] for r in range(0, solved.cells, m))
