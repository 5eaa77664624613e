"""The exact pass on small m,n,k boards (4x4 included): every reachable position, solved, and the
exact win/draw/loss of a policy against random, OneStep and a perfect player.

lab.game indexes 3x3 by base-3 codes; 4x4 would need 3**16 (43 million) for its 9.7 million
reachable positions. Here depth d (stones on the board) holds the sorted uint64 keys
`x | o << cells` of the positions reached after d moves (X first; play stops at a win or a full
board), a position is its index in its depth, and `children[d][i, j]` is the index at depth
d + 1 after the j-th empty cell of position i, so the passes never search.

- `solve(m, n, k)` enumerates (compiled moves, numpy's sort for the transpositions) and finds
  every position's minimax value by backward induction over the depths.
- `exact(solved, policy, player)` carries reach probabilities forward, depth by depth, over the
  positions reached only, the policy in one seat and each of random, onestep (an immediate win if
  any, uniform among them, else random; it never blocks) and perfect (uniform among the
  value-keeping moves) in the other, and sums them where the games end; alongside, the count of
  lines of play (any opponent move, the policy's every supported move) and how often the policy
  keeps the value: 3x3's exact measures (lab.evaluate), on every board it solves.

Costs on 4x4, and why bigger boards are refused: docs/speed.md (Bigger boards); `python -m
lab.bench --exact` measures them.
"""

import functools
from typing import Callable, NamedTuple

import numpy as np
from numba import njit

from lab.game import bitboards

MAX_CELLS = 16
"""Boards the exact pass takes: 4x4 has 9.7 million reachable positions (seconds, under 1 GB);
20 cells would have up to 740 million, 25 cells (5x5) up to 1.6e11."""
OPPONENTS = ("random", "onestep", "perfect")
"""The fixed players exact() measures against (and a policy may be named as)."""
POLICY_BATCH = 65_536
"""Positions a policy function is asked about at once: its scratch arrays (a net's afterstates,
cells x cells floats a position) stay small when a policy of ties reaches millions of positions"""
RESULTS = ("win", "draw", "loss")
LINES = len(OPPONENTS)
"""exact()'s column of reach that counts lines of play (after one per opponent)"""


class Solved(NamedTuple):
    """The reachable positions of one board, depth by depth, with their minimax values."""

    board: bitboards.Board
    """the shape and its win-check tables"""
    keys: tuple
    """keys[d]: sorted uint64 keys x | o << cells of the positions after d moves"""
    winner: tuple
    """winner[d]: int8, 1 X has a line, -1 O has one, 0 nobody (terminal too at a full board)"""
    children: tuple
    """children[d]: int32 (positions, cells - d), the child's index at depth d + 1 after each
    empty cell in increasing order; -1 rows at terminal positions"""
    value: tuple
    """value[d]: int8 minimax value from X's view (1 X wins, 0 draw, -1 O wins)"""

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


@functools.lru_cache(maxsize=1)  # one board's pass held per process (4x4: 0.3 GB)
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


def optimal_moves(solved: Solved, x: int, o: int) -> list[int]:
    """The cells that keep the minimax value of the reachable position with X's stones x and O's
    o (none if the game is over there): perfect play. ValueError if it is not reachable."""
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


# ---- exact evaluation: reach probabilities forward over the depths ----------------------------

@njit(cache=True)
def _fixed_weights(kind, row, mover, value_here, value_next, winner_next, weights):
    """Fill weights[j], the probability of the move to child row[j], for fixed player
    OPPONENTS[kind]: uniform over all moves (random), the winning ones if any (onestep), the
    value-keeping ones (perfect)."""
    chosen = 0
    for j in range(len(row)):
        child = row[j]
        take = (kind == 0) or (kind == 1 and winner_next[child] == mover) or \
               (kind == 2 and value_next[child] == value_here)
        weights[j] = 1.0 if take else 0.0
        chosen += take
    if chosen == 0:  # onestep without a winning move plays at random
        weights[:] = 1.0
        chosen = len(row)
    weights /= chosen


@njit(cache=True)
def _fixed_rows(kind, keys, winner, children, value, value_next, winner_next, cells, depth):
    """The move probabilities, by cell, of fixed player OPPONENTS[kind] at the open positions of
    `depth`, in key order."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    mover = 1 if depth % 2 == 0 else -1
    rows = np.zeros((np.sum(winner == 0), cells))
    weights = np.empty(cells - depth)
    r = 0
    for i in range(len(keys)):
        if winner[i] == 0:
            _fixed_weights(kind, children[i], mover, value[i], value_next, winner_next, weights)
            empty, j = ~(keys[i] | (keys[i] >> np.uint64(cells))) & mask, 0
            for c in range(cells):
                if (empty >> np.uint64(c)) & np.uint64(1):
                    rows[r, c] = weights[j]
                    j += 1
            r += 1
    return rows


@njit(cache=True)
def _first_bad(rows, keys, cells):
    """The first row that is not a probability distribution over the empty cells of its position
    (non-negative, 0 on stones, summing to 1 within 1e-9; NaN fails), -1 if none."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    for r in range(len(rows)):
        stones, total, ok = (keys[r] | (keys[r] >> np.uint64(cells))) & mask, 0.0, True
        for c in range(cells):
            p = rows[r, c]
            ok &= (p >= 0.0) & ((((stones >> np.uint64(c)) & np.uint64(1)) == 0) | (p == 0.0))
            total += p
        if not (ok and abs(total - 1.0) <= 1e-9):
            return r
    return -1


@njit(cache=True)
def _spread(frontier, reach, keys, winner, children, value, value_next, winner_next, cells,
            depth, agent, mine, rows, reach_next, reached, optimal):
    """Carry the reach of the positions `frontier` (indices at `depth`, increasing) to their
    children, marking in `reached` those that get some. Column o < LINES of reach is the game
    against OPPONENTS[o]; column LINES counts lines of play: every move of the opponent, every
    move of the policy's support. Where the policy moves (`mine`), it is fixed player
    OPPONENTS[agent], or for agent -1 `rows` holds its move probabilities by cell at the
    frontier's open positions, in order; there `optimal` adds up its probability of keeping the
    value, and counts the positions. The games move together, edge by edge: one cache line per
    child, not four."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    mover, games = 1 if depth % 2 == 0 else -1, reach.shape[1]
    weights = np.empty((games, cells - depth))
    r = -1
    for f in range(len(frontier)):
        i = frontier[f]
        if winner[i] != 0:
            continue
        r += 1
        if rows.shape[0]:
            empty, j = ~(keys[i] | (keys[i] >> np.uint64(cells))) & mask, 0
            for c in range(cells):
                if (empty >> np.uint64(c)) & np.uint64(1):
                    weights[:, j] = rows[r, c]
                    j += 1
        else:
            for o in range(LINES):
                _fixed_weights(agent if mine else o, children[i], mover, value[i], value_next,
                               winner_next, weights[o])
        kept = 0.0
        for j in range(cells - depth):
            child = children[i, j]
            if mine:
                kept += weights[0, j] * (value_next[child] == value[i])
            weights[LINES, j] = 1.0 if not mine or weights[0, j] > 0.0 else 0.0
            for o in range(games):
                carried = reach[f, o] * weights[o, j]
                if carried > 0.0:
                    reach_next[child, o] += carried
                    reached[child] = True
        if mine:
            optimal[0] += kept
            optimal[1] += 1.0


@njit(cache=True)
def _collect(frontier, reach, winner, side, full, outcome):
    """Add the reach of the frontier's positions that end the game to outcome[:, win / draw /
    loss] (from `side`'s view; a full board without a line is a draw)."""
    for f in range(len(frontier)):
        w = winner[frontier[f]]
        if w != 0 or full:
            outcome[:, 0 if w == side else 2 if w == -side else 1] += reach[f]


def _kind(name: str) -> int:
    """The index of a fixed player in OPPONENTS; ValueError naming the allowed ones."""
    if name not in OPPONENTS:
        raise ValueError(f"unknown player {name!r}; allowed: {', '.join(OPPONENTS)}")
    return OPPONENTS.index(name)


def _side(player) -> int:
    if isinstance(player, bool) or player not in (1, 2):
        raise ValueError(f"player must be 1 (X, moves first) or 2 (O), got {player!r}")
    return 1 if player == 1 else -1


def _seat_depths(solved: Solved, side: int) -> range:
    """The depths where `side` moves: X at the even ones."""
    return range(0 if side == 1 else 1, len(solved.children), 2)


def decisions(solved: Solved, player: int) -> tuple[np.ndarray, np.ndarray]:
    """The (x, o) bitboards of the positions where the seat moves, depth by depth, in key order:
    the rows of a move table for exact()."""
    depths = _seat_depths(solved, _side(player))
    return split(solved, np.concatenate([solved.keys[d][solved.winner[d] == 0] for d in depths]))


def _fixed_table(solved: Solved, name: str, depth: int) -> np.ndarray:
    args = (solved.keys[depth], solved.winner[depth], solved.children[depth], solved.value[depth],
            solved.value[depth + 1], solved.winner[depth + 1], solved.cells, depth)
    return _fixed_rows(_kind(name), *args)


def table(solved: Solved, name: str, player: int) -> np.ndarray:
    """The move table (rows: decisions(solved, player); columns: cells) of fixed player `name`."""
    depths = _seat_depths(solved, _side(player))
    return np.concatenate([_fixed_table(solved, name, d) for d in depths])


def _policy_rows(solved: Solved, policy, side: int) -> Callable[[int, np.ndarray], np.ndarray]:
    """(depth, open positions reached there) -> the policy's rows at them, checked."""
    if callable(policy):
        return lambda depth, at: _checked(solved, policy(*split(solved, solved.keys[depth][at])),
                                          solved.keys[depth][at])
    if not isinstance(policy, np.ndarray):
        raise ValueError(f"a policy is one of {', '.join(OPPONENTS)}, a move table or a function "
                         f"(x, o) -> move probabilities, got {type(policy).__name__}")
    sizes = [int((solved.winner[d] == 0).sum()) for d in _seat_depths(solved, side)]
    if policy.shape != (sum(sizes), solved.cells):
        raise ValueError(f"a move table for this seat has shape {(sum(sizes), solved.cells)} "
                         f"(rows: decisions()), got {policy.shape}")
    starts = dict(zip(_seat_depths(solved, side), np.cumsum([0] + sizes)))
    rank = lambda depth, at: np.searchsorted(np.flatnonzero(solved.winner[depth] == 0), at)
    return lambda depth, at: _checked(solved, policy[starts[depth] + rank(depth, at)],
                                      solved.keys[depth][at])


def _checked(solved: Solved, rows, keys: np.ndarray) -> np.ndarray:
    """rows as float64, if they are move probabilities at the positions of keys; else ValueError."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.shape != (len(keys), solved.cells):
        raise ValueError(f"the policy gave move probabilities of shape {rows.shape} for "
                         f"{len(keys)} positions, expected {(len(keys), solved.cells)}")
    bad = _first_bad(rows, keys, solved.cells)
    if bad >= 0:
        raise ValueError(f"the policy's moves are not a probability distribution over the empty "
                         f"cells at {picture(solved, keys[bad])}: {rows[bad].tolist()}")
    return rows


def picture(solved: Solved, key) -> str:
    """A position in one line, row by row from the top: X, O or . per cell, rows split by /."""
    x, o, m = int(key) & (1 << solved.cells) - 1, int(key) >> solved.cells, solved.board.m
    cells = "".join("X" if x >> c & 1 else "O" if o >> c & 1 else "." for c in range(solved.cells))
    return "/".join(cells[r:r + m] for r in range(0, solved.cells, m))


def exact(solved: Solved, policy, player: int) -> dict:
    """Exact measures of `policy` in seat `player` (1 X, 2 O), from its side, as lab.evaluate
    names them:

    - `<opponent>_win`, `_draw`, `_loss` for each of OPPONENTS: the probability of each result;
    - `winning_lines`, `drawing_lines`, `losing_lines`, `total_lines` and `never_loses`: the move
      sequences to the end of a game in which every policy move has non-zero probability and
      the opponent plays any legal move, by result (write-up 004's metric: counted, not
      weighted);
    - `optimal_move_rate`: over the policy's positions those lines reach, the mean probability
      it keeps the minimax value.

    policy: a name in OPPONENTS, a move table with rows decisions(solved, player) and a column
    per cell, or a function (x, o) -> such rows for the positions given by their bitboards
    (uint64 arrays), called at the depths where the seat moves, POLICY_BATCH positions at a
    time. Only the positions the games reach are visited (random's, which every line reaches),
    so a function is asked (and a table checked) only there: for a greedy policy, a fraction of
    the seat's positions."""
    side, named = _side(player), isinstance(policy, str)
    agent = _kind(policy) if named else -1
    rows_at = None if named else _policy_rows(solved, policy, side)
    outcome, no_rows = np.zeros((LINES + 1, 3)), np.zeros((0, solved.cells))
    frontier, reach, optimal = np.zeros(1, dtype=np.int64), np.ones((1, LINES + 1)), np.zeros(2)
    for depth, winner in enumerate(solved.winner):
        _collect(frontier, reach, winner, side, depth == solved.cells, outcome)
        if depth == len(solved.children):
            break
        mine = (depth % 2 == 0) == (side == 1)
        at = frontier[winner[frontier] == 0]  # the open positions reached
        rows = np.concatenate([rows_at(depth, at[i:i + POLICY_BATCH]) for i in range(0, len(at), POLICY_BATCH)]) \
            if mine and not named and len(at) else no_rows
        reach_next = np.zeros((len(solved.keys[depth + 1]), LINES + 1))  # touched if reached
        reached = np.zeros(len(solved.keys[depth + 1]), dtype=np.bool_)
        _spread(frontier, reach, solved.keys[depth], winner, solved.children[depth],
                solved.value[depth], solved.value[depth + 1], solved.winner[depth + 1],
                solved.cells, depth, agent, mine, rows, reach_next, reached, optimal)
        frontier = np.flatnonzero(reached)
        reach = reach_next[frontier]
    won, drawn, lost = (int(n) for n in outcome[LINES])
    return {**{f"{name}_{result}": float(outcome[o, r])
               for o, name in enumerate(OPPONENTS) for r, result in enumerate(RESULTS)},
            "winning_lines": won, "drawing_lines": drawn, "losing_lines": lost,
            "total_lines": won + drawn + lost, "never_loses": lost == 0,
            "optimal_move_rate": float(optimal[0] / optimal[1]) if optimal[1] else float("nan")}


def lowest_optimal(solved: Solved, player: int) -> Callable:
    """The perfect player that plays its lowest optimal cell, as a function of (x, o): a
    deterministic policy, as a greedy agent's; policy.asked counts the positions asked about."""
    cell = {d: _fixed_table(solved, "perfect", d).argmax(axis=1)
            for d in _seat_depths(solved, _side(player))}

    def policy(x, o):
        depth, policy.asked = bin(int(x[0] | o[0])).count("1"), policy.asked + len(x)
        keys = x | o << np.uint64(solved.cells)
        at = np.searchsorted(solved.keys[depth][solved.winner[depth] == 0], keys)
        return np.eye(solved.cells)[cell[depth][at]]
    policy.asked = 0
    return policy
