"""The m,n,k game (m columns, n rows, k in a row wins; X moves first): tic-tac-toe is (3, 3, 3).

Here, tic-tac-toe's rules as lookup tables over base-3 board codes (every board's on bitboards:
lab.game.bitboards; the interface the compiled learners play through: lab.game.engine).

A board is 9 cells, row-major (0 top-left .. 8 bottom-right): 1 = X, -1 = O, 0 = empty. Its code
is sum(digit[i] * 3**i) with digit 0 = empty, 1 = X, 2 = O; rules, values and policies are
arrays indexed by code, built once at import by vectorised numpy. A *move table* is a (3**9, 9)
float array, for each position the probability of each move for the side to move: opponents,
greedy agents and epsilon-greedy mixtures alike, so one kernel plays any of them against any
other, and the exact evaluator reads the same tables.
"""

import numpy as np
from numba import njit

N_CODES = 3**9
EMPTY = 0
POW3 = 3 ** np.arange(9, dtype=np.int64)
LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]]
)
# The 8 symmetries of the square as cell permutations: board[SYMMETRIES[k]] is transform k.
_GRID = np.arange(9).reshape(3, 3)
SYMMETRIES = np.array(
    [np.rot90(g, r).ravel() for g in (_GRID, _GRID.T) for r in range(4)], dtype=np.int64
)


def _build_tables():
    digits = (np.arange(N_CODES)[:, None] // POW3) % 3
    boards = np.where(digits == 2, -1, digits).astype(np.int8)
    line_sums = boards[:, LINES].sum(axis=2)
    x_wins = (line_sums == 3).any(axis=1)
    o_wins = (line_sums == -3).any(axis=1)
    winner = np.where(x_wins, 1, np.where(o_wins, -1, 0)).astype(np.int8)
    n_x = (boards == 1).sum(axis=1)
    n_o = (boards == -1).sum(axis=1)
    to_move = np.where(n_x == n_o, 1, -1).astype(np.int8)
    terminal = x_wins | o_wins | (n_x + n_o == 9)
    legal = (boards == 0) & ~terminal[:, None]
    mover_digit = np.where(to_move == 1, 1, 2)
    after = np.where(legal, np.arange(N_CODES)[:, None] + POW3 * mover_digit[:, None], -1)
    return boards, winner, to_move, terminal, legal, after.astype(np.int64)


BOARDS, WINNER, TO_MOVE, TERMINAL, LEGAL, AFTER = _build_tables()
"""BOARDS[c] cells; WINNER[c] 1/-1/0; TO_MOVE[c] 1 (X) or -1 (O); TERMINAL[c]; LEGAL[c, m];
AFTER[c, m] the code after the side to move plays m (-1 where illegal)."""
STONES = np.stack([(BOARDS == mark) @ (np.uint64(1) << np.arange(9, dtype=np.uint64))
                   for mark in (1, -1)], axis=1)
"""STONES[c]: X's and O's stones at code c as uint64 bitboards (cell i is bit i: lab.game.bitboards')"""


def _reachable_by_depth():
    depths = [np.array([EMPTY])]
    while True:
        nxt = AFTER[depths[-1]]
        nxt = np.unique(nxt[nxt >= 0])
        if nxt.size == 0:
            return depths
        depths.append(nxt)


DEPTHS = _reachable_by_depth()
"""DEPTHS[d]: codes of the positions reachable from the empty board after d moves."""
REACHABLE = np.zeros(N_CODES, dtype=bool)
REACHABLE[np.concatenate(DEPTHS)] = True
DECISIONS = np.flatnonzero(REACHABLE & ~TERMINAL)
"""Codes of every reachable position where somebody still has to move."""


def _minimax_values():
    value = np.where(TERMINAL, WINNER, 0).astype(np.int8)
    for codes in reversed(DEPTHS):
        codes = codes[~TERMINAL[codes]]
        children = np.where(LEGAL[codes], value[np.maximum(AFTER[codes], 0)], 0)
        x_best = np.where(LEGAL[codes], children, -2).max(axis=1)
        o_best = np.where(LEGAL[codes], children, 2).min(axis=1)
        value[codes] = np.where(TO_MOVE[codes] == 1, x_best, o_best)
    return value


VALUE = _minimax_values()
"""VALUE[c]: the game-theoretic result of reachable position c under perfect play, from X's view
(1 X wins, 0 draw, -1 O wins)."""
OPTIMAL = LEGAL & (VALUE[np.maximum(AFTER, 0)] == VALUE[:, None])
"""OPTIMAL[c, m]: move m keeps the minimax value of reachable position c."""


def encode(board) -> int:
    """Code of a board given as 9 cells in {1, -1, 0}."""
    cells = np.asarray(board).ravel()
    if cells.shape != (9,) or not np.isin(cells, (-1, 0, 1)).all():
        raise ValueError(f"a board is 9 cells of 1 (X), -1 (O) or 0 (empty), got {board!r}")
    return int((np.where(cells == -1, 2, cells) * POW3).sum())


def symmetric_codes(codes: np.ndarray) -> np.ndarray:
    """(8, n) codes of the 8 symmetric images of each board."""
    images = BOARDS[np.asarray(codes)][:, SYMMETRIES]  # (n, 8, 9)
    digits = np.where(images == -1, 2, images).astype(np.int64)
    return (digits @ POW3).T


def _canonical_tables():
    images = symmetric_codes(np.arange(N_CODES))  # (8, N_CODES)
    pairs = (9 * images)[:, :, None] + np.argsort(SYMMETRIES, axis=1)[:, None, :]  # cell m's place
    return images.min(axis=0), pairs.min(axis=0)


CANONICAL, CANONICAL_PAIR = _canonical_tables()
"""CANONICAL[c]: the least code among board c's 8 symmetric images (5,478 reachable positions,
765 classes); CANONICAL_PAIR[c, m]: 9 x code + cell of the least image of the pair (board c,
move m), so that symmetric pairs (the empty board's 8, say) share one image."""


def uniform_over(mask: np.ndarray) -> np.ndarray:
    """Move table spreading each row's probability evenly over its True entries."""
    mask = np.asarray(mask, dtype=bool)
    counts = mask.sum(axis=-1, keepdims=True)
    return np.divide(mask, counts, out=np.zeros(mask.shape), where=counts > 0)


def greedy(scores: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Move probabilities of playing the best-scoring legal move, ties shared equally (scores
    compare in their own dtype: equal float32 scores tie)."""
    scores, legal = np.asarray(scores), np.asarray(legal, dtype=bool)
    probs = np.empty(scores.shape)
    rows = np.arange(scores.size // 9)
    _greedy_rows(scores.reshape(-1, 9), legal.reshape(-1, 9), probs.reshape(-1, 9), rows)
    return probs


def greedy_table(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """greedy() of scores[i] written into row codes[i] of a move table (0 elsewhere)."""
    table = np.zeros((N_CODES, 9))
    _greedy_rows(np.asarray(scores), LEGAL, table, np.asarray(codes))
    return table


@njit(cache=True)
def _greedy_rows(scores, legal, probs, rows):
    """greedy() of scores[r] into probs[rows[r]], legal moves legal[rows[r]]; a NaN leaves the row 0
    (the exact evaluation refuses it). No branches on the unpredictable scores: 2x faster."""
    for r in range(len(rows)):
        row, best, nan = rows[r], -np.inf, False
        for m in range(9):
            score = scores[r, m] if legal[row, m] else -np.inf
            nan |= np.isnan(score)
            best = max(best, score)
        ties = 0
        for m in range(9):
            ties += legal[row, m] & (scores[r, m] == best)
        share = 1.0 / ties if ties and not nan else 0.0
        for m in range(9):
            probs[row, m] = share if legal[row, m] & (scores[r, m] == best) else 0.0


# ---- compiled helpers: the moves every kernel shares -------------------------------------------

# All kernels of a process draw from one random stream, numba's np.random (`seed_kernels`), and
# make their moves through these helpers, so each kind of move draws the same way everywhere: a
# move from a move table one draw, a uniformly random move one draw, a best move one draw per
# extra tied move, an epsilon-greedy choice one draw to decide first. Helpers called at every
# move are inlined (a call costs about their work) and read flags in place (`legal[row, first +
# m]`): a row view costs a reference count per call.


@njit(cache=True)
def seed_kernels(seed):
    """Seed the random stream the compiled kernels draw from (one per process; where it stands:
    lab.compat.numba.kernel_stream)."""
    np.random.seed(seed)


@njit(cache=True)
def sample_move(probs, code):
    """Draw a move from row `code` of a move table."""
    u = np.random.random()
    last = -1
    for m in range(9):
        p = probs[code, m]
        if p > 0.0:
            last = m
            u -= p
            if u < 0.0:
                return m
    return last  # rounding left a sliver of probability: take the last possible move


@njit(cache=True, inline="always")
def random_move(legal, row, first):
    """A uniformly random legal move, legal[row, first + m] flagging move m: sample_move's very
    draw on a row of uniform_over(LEGAL), the random opponent's table, without the table."""
    count = 0
    for m in range(9):
        if legal[row, first + m]:
            count += 1
    p = 1.0 / count
    u = np.random.random()
    last = -1
    for m in range(9):
        if legal[row, first + m]:
            last = m
            u -= p
            if u < 0.0:
                return m
    return last


@njit(cache=True, inline="always")
def best_move(scores, legal, row, first):
    """A legal move (legal[row, first + m]) of the highest score, ties at random (one pass)."""
    move = -1
    ties = 0
    for m in range(9):
        if not legal[row, first + m]:
            continue
        if move < 0 or scores[m] > scores[move]:
            move = m
            ties = 1
        elif scores[m] == scores[move]:
            ties += 1
            if np.random.random() * ties < 1.0:  # keep each of the tied moves with chance 1/ties
                move = m
    return move


@njit(cache=True)
def play_games(x_moves, o_moves, trajectories, winners, after, terminal, winner):
    """Play len(winners) games of move table x_moves (X) against o_moves (O): trajectories[g, t]
    the code after move t (the rest -1), winners[g] 1 (X won), -1 (O won) or 0 (draw). The
    tables are arguments: numba caches no function that reads large global arrays."""
    for g in range(winners.shape[0]):
        code = 0
        t = 0
        while True:
            probs = x_moves if t % 2 == 0 else o_moves
            code = after[code, sample_move(probs, code)]
            trajectories[g, t] = code
            t += 1
            if terminal[code]:
                break
        trajectories[g, t:] = -1
        winners[g] = winner[code]


def play(n: int, x_moves: np.ndarray, o_moves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """n games between two move tables: (trajectories (n, 9) codes, winners (n,))."""
    trajectories = np.empty((n, 9), dtype=np.int64)
    winners = np.empty(n, dtype=np.int8)
    play_games(x_moves, o_moves, trajectories, winners, AFTER, TERMINAL, WINNER)
    return trajectories, winners
