"""Fixed opponents as move tables (see lab.game): usable in either seat, in training and in
exact evaluation alike.

- random: a uniformly random legal move.
- onestep: an immediate win if it has one (uniform among them), else a uniformly random move. It
  never blocks (seed 000's OneStepPolicy).
- block: an immediate win if possible, else a move that blocks the opponent's immediate win, else
  random.
- perfect: a minimax-optimal move, uniform among equally good ones.

`for_training` is what a learner's kernel gets for its `opponent` knob, self-play included.
"""

from functools import cache

import numpy as np

from lab.game import BOARDS, LEGAL, N_CODES, OPTIMAL, POW3, TO_MOVE, WINNER, uniform_over

NAMES = ("random", "onestep", "block", "perfect")


def _winning_cells(side: np.ndarray) -> np.ndarray:
    """(N_CODES, 9) mask: an empty cell where a mark of `side` (per code) completes a line."""
    digit = np.where(side == 1, 1, 2)[:, None]
    with_mark = np.arange(N_CODES)[:, None] + POW3 * digit
    return LEGAL & (BOARDS == 0) & (WINNER[np.where(LEGAL, with_mark, 0)] == side[:, None])


def _prefer(*masks: np.ndarray) -> np.ndarray:
    """Row by row, the first mask with any True entry (the last one as the fallback)."""
    chosen = masks[-1]
    for mask in reversed(masks[:-1]):
        chosen = np.where(mask.any(axis=1, keepdims=True), mask, chosen)
    return chosen


@cache
def table(name: str) -> np.ndarray:
    """The move table of a fixed opponent, read-only."""
    wins = _winning_cells(TO_MOVE)
    masks = {
        "random": lambda: LEGAL,
        "onestep": lambda: _prefer(wins, LEGAL),
        "block": lambda: _prefer(wins, _winning_cells(-TO_MOVE), LEGAL),
        "perfect": lambda: OPTIMAL,
    }
    if name not in masks:
        raise ValueError(f"unknown opponent {name!r}; allowed: {', '.join(NAMES)}")
    moves = uniform_over(masks[name]())
    moves.flags.writeable = False
    return moves


SELF = "self"
"""The `opponent` knob's value for self-play: the learner plays both seats."""


def for_training(name: str) -> np.ndarray:
    """The move table of the opponent a learner trains against (its `opponent` knob).

    In self-play (`self`) the learner plays both seats, so its kernel never consults the table;
    the random opponent's table fills the argument (same type, so no second compilation, and a
    read by mistake would still play legal moves)."""
    return table("random" if name == SELF else name)
