"""Fixed opponents as move tables (see lab.game): usable in either seat, in training and in
exact evaluation alike.

- random: a uniformly random legal move.
- onestep: an immediate win if it has one (uniform among them), else a uniformly random move. It
  never blocks (write-up 000's OneStepPolicy).
- block: an immediate win if possible, else a move that blocks the opponent's immediate win, else
  random.
- perfect: a minimax-optimal move, uniform among equally good ones.

`opponent=PATH.npz`, a trained agent frozen, plays its greedy move table on 3x3 (`for_training`;
tied best moves share the probability), itself elsewhere (`checkpoint`, read by the reader
lab.agents registers here: this module sits below the learners).
"""

from functools import cache

import numpy as np

from lab.game import BOARDS, LEGAL, N_CODES, OPTIMAL, POW3, TO_MOVE, WINNER, uniform_over

NAMES = ("random", "onestep", "block", "perfect")


def _winning_cells(side: np.ndarray) -> np.ndarray:
    """(N_CODES, 9): the empty cells where a mark of `side` (per code) completes a line."""
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


def is_checkpoint(name) -> bool:
    """Whether an `opponent` value names a checkpoint file rather than a fixed opponent."""
    return isinstance(name, str) and name.endswith(".npz")


_read_checkpoint = None
"""path -> the trained agent in that checkpoint; registered by lab.agents."""


def read_checkpoints_with(read) -> None:
    """Register how checkpoints are read (lab.agents does, on import: it owns the registry)."""
    global _read_checkpoint
    _read_checkpoint = read


def checkpoint(path: str):
    """The trained agent in the checkpoint at `path`."""
    if _read_checkpoint is None:
        raise RuntimeError("import lab.agents first: it registers the checkpoint reader")
    return _read_checkpoint(path)


def for_training(name: str) -> np.ndarray:
    """The move table, read-only, of a 3x3 learner's `opponent`. In self-play its kernel never
    reads it: the random opponent's fills the argument (same type, no second compilation; a read
    by mistake would still play legal moves)."""
    if not is_checkpoint(name):
        return table("random" if name == SELF else name)
    moves = np.ascontiguousarray(checkpoint(name).move_table(), dtype=np.float64)
    moves.flags.writeable = False
    return moves
