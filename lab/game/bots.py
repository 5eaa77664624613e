"""Fixed opponents on any m,n,k board (lab.game.bitboards), compiled, and their games.

The bots, each chosen by a spec (`bot(name, simulations)`): random, onestep and block mean what
lab.game.opponents' 3x3 move tables mean, and

- mcts: UCT (UCB1 selection, uniformly random rollouts) with `simulations` playouts per move and
  a solver (MCTS-Solver, Winands et al. 2008): a position is lost for its mover once one reply
  wins, won once every reply loses, and the proof passes up; a proven node is not searched
  again, a proven winning move is played at once, a proven losing move only when all lose. Every
  node expanded is checked for an immediate win, so one is always taken.
- perfect: uniform among the moves that keep the position's minimax value (lab.game.solver's
  solution): only on boards of at most 16 cells (4x4).

All draw from the compiled kernels' random stream, seeded per call: the same seed, the same moves
and tallies. Besides the board they need one `Tree` (MCTS's nodes, perfect's table).
"""

import functools
from typing import NamedTuple

import numpy as np
from numba import njit

from lab.game import solver
from lab.game.bitboards import cells_in, empty_mask, place, random_move, rollout, wins

ANY_BOARD = ("random", "onestep", "block", "mcts")
"""The bots that play on every board (evaluation by games plays them)."""
NAMES = (*ANY_BOARD, "perfect")
"""The bots, in the order of their kind codes in the compiled kernels."""
RANDOM, ONESTEP, BLOCK, MCTS, PERFECT = range(len(NAMES))
UNKNOWN, WON, LOST, DRAWN = 0, 1, 2, 3
"""A node's status, for the player who moved into it: not proven, won, lost, a full board drawn."""
X_WINS, O_WINS, DRAW = 0, 1, 2
"""Results: the tally's indices, and the winning side (0 X, 1 O) or a draw."""
EXPLORATION = 0.5
"""UCB1's exploration constant (rewards in [0, 1]), chosen by measurement on 5x5 k4 at 1,000
simulations: with 0.5 the search prevented an open three (tests/test_bots.py) in 20 of 20 seeds
and lost 1 game of 1,000 as O to onestep; with UCB1's textbook sqrt(2), 16 of 20 and 3 of 400."""


class Bot(NamedTuple):
    """Which bot plays a seat: a name of NAMES, and for mcts its simulations per move."""

    name: str  # random, onestep, block, mcts or perfect
    simulations: int = 0  # MCTS playouts per move (0 for the other bots)

    def __str__(self):
        return f"{self.name} {self.simulations}" if self.name == "mcts" else self.name


def bot(name: str, simulations: int | None = None) -> Bot:
    """The spec of a bot, checked (ValueError in one line): simulations an integer >= 1 for mcts,
    None for the others."""
    if name not in NAMES:
        raise ValueError(f"unknown bot {name!r}; allowed: {', '.join(NAMES)}")
    if name != "mcts":
        if simulations is not None:
            raise ValueError(f"simulations applies to mcts only, got simulations={simulations!r} for {name}")
        return Bot(name)
    if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 1:
        raise ValueError(f"simulations (MCTS playouts per move) must be an integer >= 1, got {simulations!r}")
    return Bot(name, int(simulations))


class Tree(NamedTuple):
    """What the bots need. The MCTS tree, preallocated, a node per index (0 the root), a node's
    children contiguous (S simulations expand at most S nodes: 1 + S * cells in all); perfect's
    table, empty where the board is not solved: the keys x | o << cells of the open positions,
    depth d's sorted at solved_keys[solved_starts[d]:solved_starts[d + 1]], and the cells that
    keep each one's minimax value as a uint16 bit mask."""

    x: np.ndarray  # X's stones (uint64)
    o: np.ndarray  # O's stones (uint64)
    mover: np.ndarray  # the side that moved into the node: 0 X, 1 O
    cell: np.ndarray  # the cell of that move
    first: np.ndarray  # the node's first child
    count: np.ndarray  # its number of children; -1 until expanded
    visits: np.ndarray  # simulations through the node
    reward: np.ndarray  # their reward summed for the mover: 1 a win, 1/2 a draw
    status: np.ndarray  # UNKNOWN, WON, LOST (proven for the mover) or DRAWN (a full board)
    solved_keys: np.ndarray
    solved_moves: np.ndarray
    solved_starts: np.ndarray


def tree(shape, simulations: int, perfect: bool = True) -> Tree:
    """The Tree for board `shape`: room for a search of `simulations`, and if `perfect` on a board
    the lab solves, perfect's table (from the exact evaluation's solve; 4x4: 3 s, 0.3 GB + 86 MB)."""
    size = 1 + max(simulations, 1) * shape.m * shape.n
    solvable = perfect and shape.m * shape.n <= solver.MAX_CELLS
    table = perfect_table(shape.m, shape.n, shape.k) if solvable else \
        (np.zeros(0, np.uint64), np.zeros(0, np.uint16), np.zeros(1, np.int64))
    nodes = (np.uint64, np.uint64, np.int8, np.int64, np.int64, np.int64, np.int64, np.float64, np.int8)
    return Tree(*(np.zeros(size, dtype) for dtype in nodes), *table)


@njit(cache=True)
def _optimal_masks(keys, winner, children, value, value_next, cells):
    """The open positions' keys among `keys` (one depth), and each one's value-keeping cells' mask."""
    full = (np.uint64(1) << np.uint64(cells)) - np.uint64(1)
    open_keys = keys[winner == 0]
    moves = np.zeros(len(open_keys), np.uint16)
    r = 0
    for i in range(len(keys)):
        if winner[i] != 0:
            continue
        empty, j = ~(keys[i] | (keys[i] >> np.uint64(cells))) & full, 0
        for c in range(cells):
            if (empty >> np.uint64(c)) & np.uint64(1):
                if value_next[children[i, j]] == value[i]:
                    moves[r] |= np.uint16(1 << c)
                j += 1
        r += 1
    return open_keys, moves


@functools.lru_cache(maxsize=1)
def perfect_table(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """perfect's table (Tree.solved_keys, solved_moves, solved_starts), once per process."""
    solved = solver.solve(m, n, k)
    keys, moves = zip(*(_optimal_masks(solved.keys[d], solved.winner[d], solved.children[d],
                                       solved.value[d], solved.value[d + 1], solved.cells)
                        for d in range(len(solved.children))))
    return np.concatenate(keys), np.concatenate(moves), np.cumsum([0, *map(len, keys)]).astype(np.int64)


@njit(cache=True)
def winning_cells(board, stones, empty):
    """The empty cells where a stone added to `stones` completes a line, as a mask."""
    found = np.uint64(0)
    for cell in range(board.m * board.n):
        bit = np.uint64(1) << np.uint64(cell)
        if empty & bit and wins(board, stones | bit, cell):
            found |= bit
    return found


@njit(cache=True)
def rule_move(board, kind, mine, theirs):
    """The move of random, onestep or block, with stones `mine` to move against `theirs`."""
    empty = empty_mask(board, mine, theirs)
    if kind != RANDOM:
        chances = winning_cells(board, mine, empty)
        if chances:
            return random_move(chances, cells_in(chances))
        if kind == BLOCK:
            threats = winning_cells(board, theirs, empty)
            if threats:
                return random_move(threats, cells_in(threats))
    return random_move(empty, cells_in(empty))


@njit(cache=True)
def _expand(board, t, node, size):
    """Give `node` a child per legal move from index `size`, proving what one move decides; the
    next free index."""
    empty = empty_mask(board, t.x[node], t.o[node])
    side = 1 - t.mover[node]
    t.first[node] = size
    child = size
    for cell in range(board.m * board.n):
        bit = np.uint64(1) << np.uint64(cell)
        if not empty & bit:
            continue
        t.x[child], t.o[child] = (t.x[node] | bit, t.o[node]) if side == 0 else (t.x[node], t.o[node] | bit)
        t.mover[child], t.cell[child], t.count[child] = side, cell, -1
        t.visits[child], t.reward[child], t.status[child] = 0, 0.0, UNKNOWN
        if wins(board, t.x[child] if side == 0 else t.o[child], cell):
            t.status[child] = WON
            t.status[node] = LOST  # its player to move wins at once
        elif empty == bit:
            t.status[child] = DRAWN
        child += 1
    t.count[node] = child - size
    return child


@njit(cache=True)
def _select(t, node):
    """The child UCB1 prefers, proven losing moves skipped, unvisited ones first; ties at random
    (the scan starts at a random child)."""
    log_visits = np.log(max(t.visits[node], 1))
    count = t.count[node]
    start = int(np.random.random() * count)
    best, best_score = -1, -np.inf
    for i in range(count):
        child = t.first[node] + (start + i) % count
        if t.status[child] == LOST:
            continue
        if t.visits[child] == 0:
            return child
        score = t.reward[child] / t.visits[child] + EXPLORATION * np.sqrt(log_visits / t.visits[child])
        if score > best_score:
            best, best_score = child, score
    return best


@njit(cache=True)
def _backup(t, path, depth, result):
    """Add the simulation's result to the nodes on the path, and pass proofs up it."""
    for i in range(depth, -1, -1):
        node = path[i]
        t.visits[node] += 1
        t.reward[node] += 1.0 if result == t.mover[node] else 0.5 if result == DRAW else 0.0
        if i == 0:
            break
        parent = path[i - 1]
        if t.status[node] == WON:
            t.status[parent] = LOST
        elif t.status[node] == LOST and t.status[parent] == UNKNOWN:
            every_reply_loses = True
            for child in range(t.first[parent], t.first[parent] + t.count[parent]):
                every_reply_loses &= t.status[child] == LOST
            if every_reply_loses:
                t.status[parent] = WON


@njit(cache=True)
def _search(board, t, simulations, x, o, side):
    """Run the simulations from the position, `side` to move; the root is node 0."""
    t.x[0], t.o[0], t.mover[0], t.cell[0], t.count[0] = x, o, 1 - side, -1, -1
    t.visits[0], t.reward[0], t.status[0] = 0, 0.0, UNKNOWN
    size = 1
    path = np.empty(board.m * board.n + 1, np.int64)
    path[0] = 0
    for _ in range(simulations):
        if t.status[0] != UNKNOWN:
            break  # proven: nothing left to learn
        node, depth = 0, 0
        while t.count[node] > 0 and t.status[node] == UNKNOWN:
            node = _select(t, node)
            depth += 1
            path[depth] = node
        if t.status[node] == UNKNOWN:
            size = _expand(board, t, node, size)
        status = t.status[node]
        if status == WON:
            result = t.mover[node]
        elif status == LOST:
            result = 1 - t.mover[node]
        elif status == DRAWN:
            result = DRAW
        else:
            result = rollout(board, t.x[node], t.o[node], 1 - t.mover[node])
        _backup(t, path, depth, result)


@njit(cache=True)
def _mcts_move(board, t, simulations, x, o, side):
    """A proven winning move, else the most visited move not proven to lose (of all, if all do)."""
    _search(board, t, simulations, x, o, side)
    best, best_visits, losing, losing_visits = -1, -1, -1, -1
    for child in range(t.first[0], t.first[0] + t.count[0]):
        if t.status[child] == WON:
            return t.cell[child]
        if t.status[child] == LOST:
            if t.visits[child] > losing_visits:
                losing, losing_visits = child, t.visits[child]
        elif t.visits[child] > best_visits:
            best, best_visits = child, t.visits[child]
    return t.cell[best if best >= 0 else losing]


@njit(cache=True)
def _perfect_move(board, t, x, o):
    """A uniformly random move among those that keep the position's minimax value."""
    depth = cells_in(x | o)
    if depth + 1 >= len(t.solved_starts):
        raise ValueError("the perfect bot needs the board solved: at most 16 cells, and a tree "
                         "built with its table (tree(shape, simulations))")
    start, stop = t.solved_starts[depth], t.solved_starts[depth + 1]
    key = x | (o << np.uint64(board.m * board.n))
    i = start + np.searchsorted(t.solved_keys[start:stop], key)
    if i == stop or t.solved_keys[i] != key:
        raise ValueError("the perfect bot was asked to move in a position the game cannot reach "
                         "or that is over")
    moves = np.uint64(t.solved_moves[i])
    return random_move(moves, cells_in(moves))


@njit(cache=True)
def bot_move(board, t, kind, simulations, x, o, side):
    """The cell bot `kind` plays with `side` (0 X, 1 O) to move."""
    if kind == MCTS:
        return _mcts_move(board, t, simulations, x, o, side)
    if kind == PERFECT:
        return _perfect_move(board, t, x, o)
    return rule_move(board, kind, x, o) if side == 0 else rule_move(board, kind, o, x)


@njit(cache=True)
def _play(board, t, kinds, simulations, games, seed, tally):
    np.random.seed(seed)
    cells = board.m * board.n
    for _ in range(games):
        x, o = np.uint64(0), np.uint64(0)
        result = DRAW
        for ply in range(cells):
            side = ply % 2
            cell = bot_move(board, t, kinds[side], simulations[side], x, o, side)
            x, o, won = place(board, x, o, side, cell)
            if won:
                result = side
                break
        tally[result] += 1


def _checked(player: Bot, shape) -> Bot:
    """A Bot built by hand, checked as bot() checks a spec, that can play on board `shape`."""
    if player.name == "perfect" and shape.m * shape.n > solver.MAX_CELLS:
        raise ValueError(f"the perfect bot plays only on boards the lab solves (at most "
                         f"{solver.MAX_CELLS} cells), got m={shape.m}, n={shape.n}")
    return bot(player.name, player.simulations if player.name == "mcts" or player.simulations else None)


def _checked_count(key, value, least):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{key} must be an integer >= {least}, got {value!r}")


def play_match(shape, x_bot: Bot, o_bot: Bot, games: int, seed: int) -> np.ndarray:
    """Tally [X wins, O wins, draws] of `games` games of x_bot (X) and o_bot (O) on board `shape`."""
    _checked_count("games", games, 0)
    _checked_count("seed", seed, 0)
    bots = [_checked(b, shape) for b in (x_bot, o_bot)]
    kinds = np.array([NAMES.index(b.name) for b in bots], dtype=np.int64)
    simulations = np.array([b.simulations for b in bots], dtype=np.int64)
    tally = np.zeros(3, dtype=np.int64)
    t = tree(shape, int(simulations.max()), perfect=PERFECT in kinds)
    _play(shape, t, kinds, simulations, games, seed, tally)
    return tally


@njit(cache=True)
def _moves(board, t, kind, simulations, x, o, seed, out):
    np.random.seed(seed)
    for i in range(len(x)):
        out[i] = bot_move(board, t, kind, simulations, x[i], o[i], cells_in(x[i]) - cells_in(o[i]))


def moves(shape, player: Bot, x, o, seed: int) -> np.ndarray:
    """The cells `player` plays, with the given seed, at the positions of X's stones x and O's o
    (bit mask arrays; X moves where both have as many)."""
    _checked_count("seed", seed, 0)
    player = _checked(player, shape)
    x, o = np.atleast_1d(np.asarray(x, np.uint64)), np.atleast_1d(np.asarray(o, np.uint64))
    for a, b in zip(x.tolist(), o.tolist()):
        if a & b or a.bit_count() - b.bit_count() not in (0, 1) or a | b >= int(shape.full):
            raise ValueError("x and o must be positions with a move left: no shared or off-board "
                             "cell, a free cell, X with as many stones as O or one more")
    t = tree(shape, player.simulations, perfect=player.name == "perfect")
    out = np.empty(len(x), np.int64)
    _moves(shape, t, NAMES.index(player.name), player.simulations, x, o, seed, out)
    return out
