"""A policy's exact measures on a board lab.game.solver solved: reach probabilities carried
forwards, depth by depth, over the positions the games reach only.

`exact(solved, policy, player)` plays the policy in one seat and random, onestep and perfect in
the other, and sums the games where they end; alongside, it counts the lines of play and how often
the policy keeps the value. Costs on 4x4: docs/speed.md (Bigger boards), `python -m lab.bench
--exact`.
"""

import functools
from typing import Callable

import numpy as np
from numba import njit

from lab.game.solver import Solved, picture, split

OPPONENTS = ("random", "onestep", "perfect")
"""The fixed players exact() measures against (and a policy may be named as)."""
POLICY_BATCH = 65_536
"""Positions a policy function is asked about at once: its scratch arrays (a net's afterstates,
cells x cells floats a position) stay small when a policy of ties reaches millions of positions"""
RESULTS = ("win", "draw", "loss")


@njit(cache=True)
def _fixed_weights(kind, row, mover, value_here, value_next, winner_next, weights):
    """weights[j]: fixed player OPPONENTS[kind]'s probability of the move to child row[j], uniform
    over all moves (random), the winning ones else all (onestep), the value-keeping ones (perfect)."""
    if kind == 0:
        weights[:] = 1.0 / len(row)
        return
    chosen = 0
    for j in range(len(row)):
        child = row[j]
        take = (kind == 1 and winner_next[child] == mover) or (kind == 2 and value_next[child] == value_here)
        weights[j] = 1.0 if take else 0.0
        chosen += take
    if chosen == 0:  # onestep without a winning move plays at random
        weights[:] = 1.0
        chosen = len(row)
    weights /= chosen


@njit(cache=True)
def _fixed_rows(kind, keys, winner, children, value, value_next, winner_next, cells, depth):
    """Fixed player OPPONENTS[kind]'s move probabilities by cell at `depth`'s open positions."""
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
    """The first row that is no distribution over its position's empty cells (>= 0, 0 on stones,
    summing to 1 within 1e-9; NaN fails), -1 if none."""
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
            depth, agent, mine, kinds, rows, reach_next, reached, optimal):
    """Carry the reach of the positions `frontier` (indices at `depth`, increasing) to their
    children, marking in `reached` those that get some. Column o of reach is the game against
    OPPONENTS[kinds[o]]; the last counts lines of play (every opponent move, every move of the
    policy's support). Where the policy moves (`mine`) it is OPPONENTS[agent], or for agent -1
    `rows` holds its move probabilities at the frontier's open positions, in order; `optimal`
    sums its probability of keeping the value and counts the positions. The games move together,
    edge by edge: one cache line per child, not one per game."""
    mask = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    mover, lines = 1 if depth % 2 == 0 else -1, len(kinds)
    weights = np.empty((lines + 1, cells - depth))
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
        else:  # the fixed policy's weights once, each opponent's own
            for o in range(lines):
                if mine and o:
                    weights[o] = weights[0]
                else:
                    _fixed_weights(agent if mine else kinds[o], children[i], mover, value[i],
                                   value_next, winner_next, weights[o])
        kept = 0.0
        for j in range(cells - depth):
            child = children[i, j]
            if mine:
                kept += weights[0, j] * (value_next[child] == value[i])
            weights[lines, j] = 1.0 if not mine or weights[0, j] > 0.0 else 0.0
            for o in range(lines + 1):
                carried = reach[f, o] * weights[o, j]
                if carried > 0.0:
                    reach_next[child, o] += carried
                    reached[child] = True
        if mine:
            optimal[0] += kept
            optimal[1] += 1.0


@njit(cache=True)
def _collect(frontier, reach, winner, side, full, outcome):
    """Add the reach of the frontier's finished positions to outcome[:, win / draw / loss] from
    `side`'s view (a full board without a line: a draw)."""
    for f in range(len(frontier)):
        w = winner[frontier[f]]
        if w != 0 or full:
            outcome[:, 0 if w == side else 2 if w == -side else 1] += reach[f]


def _kind(name: str) -> int:
    """The index of a fixed player in OPPONENTS."""
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
    """The (x, o) bitboards of the seat's positions, by depth and key: a move table's rows."""
    depths = _seat_depths(solved, _side(player))
    return split(solved, np.concatenate([solved.keys[d][solved.winner[d] == 0] for d in depths]))


def _fixed_table(solved: Solved, name: str, depth: int) -> np.ndarray:
    return _fixed_rows(_kind(name), solved.keys[depth], solved.winner[depth], solved.children[depth],
                       solved.value[depth], solved.value[depth + 1], solved.winner[depth + 1],
                       solved.cells, depth)


def table(solved: Solved, name: str, player: int) -> np.ndarray:
    """The move table (rows: decisions(solved, player); columns: cells) of fixed player `name`."""
    depths = _seat_depths(solved, _side(player))
    return np.concatenate([_fixed_table(solved, name, d) for d in depths])


def _decision_rows(solved: Solved, policy: np.ndarray, side: int) -> tuple:
    """Each position's row in a move table over decisions() (-1 at the other depths), the
    table's shape checked."""
    depths, first, rows = _seat_depths(solved, side), 0, []
    for depth, winner in enumerate(solved.winner):
        rank = np.cumsum(winner == 0) - 1 + first
        rows.append(rank if depth in depths else np.full(len(winner), -1))
        first += int((winner == 0).sum()) if depth in depths else 0
    if policy.shape != (first, solved.cells):
        raise ValueError(f"a move table for this seat has shape {(first, solved.cells)} "
                         f"(rows: decisions()), got {policy.shape}")
    return tuple(rows)


def _checked(solved: Solved, rows, keys: np.ndarray) -> np.ndarray:
    """rows as float64, if they are move probabilities at the positions of keys."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.shape != (len(keys), solved.cells):
        raise ValueError(f"the policy gave move probabilities of shape {rows.shape} for "
                         f"{len(keys)} positions, expected {(len(keys), solved.cells)}")
    bad = _first_bad(rows, keys, solved.cells)
    if bad >= 0:
        raise _not_moves(solved, keys[bad], rows[bad])
    return rows


def _not_moves(solved: Solved, key, row) -> ValueError:
    return ValueError(f"the policy's moves are not a probability distribution over the empty "
                      f"cells at {picture(solved, key)}: {row.tolist()}")


def exact(solved: Solved, policy, player: int) -> dict:
    """Exact measures of `policy` in seat `player` (1 X, 2 O), from its side, as lab.evaluation.evaluate
    names them:

    - `<opponent>_win`, `_draw`, `_loss` for each of OPPONENTS: each result's probability;
    - `winning_lines`, `drawing_lines`, `losing_lines`, `total_lines` and `never_loses`: the move
      sequences to a game's end in which every policy move has non-zero probability and the
      opponent plays any legal move, by result (write-up 004's metric: counted, not weighted);
    - `optimal_move_rate`: over the policy's positions those lines reach, the mean probability
      it keeps the minimax value.

    policy: a name in OPPONENTS, a move table with rows decisions(solved, player) and a column
    per cell, or a function (x, o) -> such rows for the positions given by their bitboards
    (uint64 arrays), asked POLICY_BATCH positions at a time only where the games reach (for a
    greedy policy, a fraction of the seat's positions)."""
    side = _side(player)
    if callable(policy):
        return _measures(_asking, OPPONENTS, solved, policy, side)
    if isinstance(policy, np.ndarray):
        return measure(solved, policy, _decision_rows(solved, policy, side), player)
    if not isinstance(policy, str):
        raise ValueError(f"a policy is one of {', '.join(OPPONENTS)}, a move table or a function "
                         f"(x, o) -> move probabilities, got {type(policy).__name__}")
    no_rows = tuple(np.zeros(0, np.int64) for _ in solved.winner)
    return _measures(_walking, OPPONENTS, solved, _kind(policy), np.zeros((0, solved.cells)), no_rows, side)


def measure(solved: Solved, table: np.ndarray, rows: tuple, player: int, against=OPPONENTS) -> dict:
    """exact() of a move table whose row rows[depth][i] holds the policy at position i of that
    depth (any numbering: 3x3's codes, say), the rows reached checked."""
    return _measures(_walking, against, solved, -1, np.asarray(table, np.float64), rows, _side(player))


def _walking(solved, agent, table, rows, side, kinds, outcome, optimal) -> None:
    bad = _walk(solved.keys, solved.winner, solved.children, solved.value, solved.cells, side,
                agent, kinds, table, rows, outcome, optimal)
    if bad[0] >= 0:
        raise _not_moves(solved, solved.keys[bad[0]][bad[1]], table[rows[bad[0]][bad[1]]])


@functools.lru_cache(maxsize=None)
def _games(against: tuple) -> tuple[np.ndarray, tuple]:
    """The kinds of the players `against` and the keys of their shares, in outcome's order."""
    return (np.array([_kind(name) for name in against], np.int64),
            tuple(f"{name}_{result}" for name in against for result in RESULTS))


def _measures(walk, against, *args) -> dict:
    """The measures (see exact) of the games `walk(*args, kinds, outcome, optimal)` plays."""
    kinds, keys = _games(tuple(against))
    outcome, optimal = np.zeros((len(kinds) + 1, 3)), np.zeros(2)
    walk(*args, kinds, outcome, optimal)
    won, drawn, lost = (int(n) for n in outcome[-1])
    return {**dict(zip(keys, outcome[:-1].ravel().tolist())),
            "winning_lines": won, "drawing_lines": drawn, "losing_lines": lost,
            "total_lines": won + drawn + lost, "never_loses": lost == 0,
            "optimal_move_rate": float(optimal[0] / optimal[1]) if optimal[1] else float("nan")}


@njit(cache=True)
def _step(frontier, reach, keys, winner, children, value, value_next, winner_next, cells, depth,
          side, agent, kinds, rows, outcome, optimal):
    """One depth of exact(): the games ending collected, the others spread; the next frontier, reach."""
    _collect(frontier, reach, winner, side, False, outcome)
    reach_next = np.zeros((len(winner_next), reach.shape[1]))  # touched where reached
    reached = np.zeros(len(winner_next), dtype=np.bool_)
    _spread(frontier, reach, keys, winner, children, value, value_next, winner_next, cells, depth,
            agent, (depth % 2 == 0) == (side == 1), kinds, rows, reach_next, reached, optimal)
    following = np.flatnonzero(reached)
    return following, reach_next[following]


@njit(cache=True)
def _walk(keys, winner, children, value, cells, side, agent, kinds, table, rows, outcome, optimal):
    """exact() of OPPONENTS[agent], or for agent -1 of `table` (see measure), in one compiled
    pass: (depth, index) of the first position reached whose row is no distribution, else (-1, -1)."""
    frontier, reach = np.zeros(1, np.int64), np.ones((1, len(kinds) + 1))
    for depth in range(len(children)):
        moves = np.zeros((0, cells))
        if agent < 0 and (depth % 2 == 0) == (side == 1):
            at = frontier[winner[depth][frontier] == 0]
            moves = np.empty((len(at), cells))
            for r in range(len(at)):
                moves[r] = table[rows[depth][at[r]]]
            bad = _first_bad(moves, keys[depth][at], cells)
            if bad >= 0:
                return depth, at[bad]
        frontier, reach = _step(frontier, reach, keys[depth], winner[depth], children[depth],
                                value[depth], value[depth + 1], winner[depth + 1], cells, depth,
                                side, agent, kinds, moves, outcome, optimal)
    _collect(frontier, reach, winner[len(children)], side, len(children) == cells, outcome)
    return -1, -1


def _asking(solved: Solved, policy, side: int, kinds, outcome, optimal) -> None:
    """exact() of a policy function, asked depth by depth at the open positions reached."""
    frontier, reach = np.zeros(1, dtype=np.int64), np.ones((1, len(kinds) + 1))
    for depth in range(len(solved.children)):
        rows, at = np.zeros((0, solved.cells)), frontier[solved.winner[depth][frontier] == 0]
        if (depth % 2 == 0) == (side == 1) and len(at):
            asked = [solved.keys[depth][at[i:i + POLICY_BATCH]] for i in range(0, len(at), POLICY_BATCH)]
            rows = np.concatenate([_checked(solved, policy(*split(solved, keys)), keys) for keys in asked])
        frontier, reach = _step(frontier, reach, solved.keys[depth], solved.winner[depth],
                                solved.children[depth], solved.value[depth], solved.value[depth + 1],
                                solved.winner[depth + 1], solved.cells, depth, side, -1, kinds,
                                rows, outcome, optimal)
    _collect(frontier, reach, solved.winner[-1], side, len(solved.children) == solved.cells, outcome)


def lowest_optimal(solved: Solved, player: int) -> Callable:
    """The perfect player playing its lowest optimal cell, as a function of (x, o) (deterministic,
    as a greedy agent); policy.asked counts the positions asked about."""
    cell = {d: _fixed_table(solved, "perfect", d).argmax(axis=1)
            for d in _seat_depths(solved, _side(player))}

    def policy(x, o):
        depth, policy.asked = bin(int(x[0] | o[0])).count("1"), policy.asked + len(x)
        keys = x | o << np.uint64(solved.cells)
        at = np.searchsorted(solved.keys[depth][solved.winner[depth] == 0], keys)
        return np.eye(solved.cells)[cell[depth][at]]
    policy.asked = 0
    return policy
