"""Plain-Python references that only tests compare the lab against."""

import numpy as np

from lab import game
from lab.evaluation import exact_ceiling
from lab.game import opponents
from lab.game.solver import Solved


def _level(codes):
    """The non-terminal positions among `codes` with their children (illegal moves -> code 0)."""
    codes = codes[~game.TERMINAL[codes]]
    return codes, np.maximum(game.AFTER[codes], 0)


def best_response(opponent: str, player: int) -> np.ndarray:
    """The move table of the perfect player that best exploits `opponent` in seat `player` (1 X,
    2 O): the player whose results are lab.evaluation.evaluate.ceiling(opponent, player), written as a table
    over lab.game's codes.

    At each of its positions it considers only the moves that keep the minimax value
    (lab.game.OPTIMAL: a perfect player never gives a result away) and plays the one maximising
    its expected (win - loss) under the opponent's move table; among moves equal on that (within
    lab.evaluation.exact_ceiling.TIE_TOLERANCE) the one with the higher win probability, then the lowest
    cell index (equal win and loss means equal draw, so this last choice never changes a result).
    """
    if player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    side = 1 if player == 1 else -1
    opponent_moves = opponents.table(opponent)
    value = np.stack([game.WINNER == side, game.WINNER == 0, game.WINNER == -side], axis=1) * 1.0
    moves = np.zeros((game.N_CODES, 9))
    levels = [_level(codes) for codes in game.DEPTHS if (~game.TERMINAL[codes]).any()]
    for codes, children in reversed(levels):
        child = value[children]  # (n, 9, 3)
        score = np.where(game.OPTIMAL[codes], child[..., 0] - child[..., 2], -np.inf)
        tied = score >= score.max(axis=1, keepdims=True) - exact_ceiling.TIE_TOLERANCE
        best = np.where(tied, child[..., 0], -np.inf).argmax(axis=1)
        mine = game.TO_MOVE[codes] == side
        here = np.where(mine[:, None], np.eye(9)[best], opponent_moves[codes])
        moves[codes[mine]] = here[mine]
        value[codes] = np.einsum("nm,nmk->nk", here, child)
    return moves


def optimal_moves(solved: Solved, x: int, o: int) -> list[int]:
    """The cells that keep the minimax value of the reachable position with X's stones x and O's
    o of a lab.game.solver.solve (none if the game is over there): perfect play, one position
    at a time. ValueError if it is not reachable."""
    depth = bin(x | o).count("1")
    valid = not x & o and not (x | o) >> solved.cells and depth < len(solved.keys)
    keys, key = (solved.keys[depth], x | o << solved.cells) if valid else (solved.keys[0][:0], 0)
    index = int(np.searchsorted(keys, np.uint64(key)))
    if keys[index:index + 1].tolist() != [key]:
        raise ValueError(f"no reachable position has X on {x:#x} and O on {o:#x}")
    if depth == len(solved.children) or solved.winner[depth][index] != 0:
        return []
    empty = [c for c in range(solved.cells) if not (x | o) >> c & 1]
    after = solved.value[depth + 1][solved.children[depth][index]]
    return [c for c, v in zip(empty, after) if v == solved.value[depth][index]]
