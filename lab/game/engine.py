"""One interface to the m,n,k game for the compiled learners, whatever the board.

A learner's kernel is written once against the functions below, the game its first argument `g`;
numba compiles each body for the type of `g` (numba.extending.overload), so nothing is decided
while games are played. Sides are 0 (X, moves first) and 1 (O); a result is the winner or DRAW.

- `TTT` (3x3, tabulated): a position is its base-3 code, a learner's table dense (a row per
  code); opponents are move tables (lab.game.opponents) or `Bots` searching at a code's bitboards.
- `lab.game.bitboards.Board` (up to 64 cells): a position is (x, o), X's and O's uint64 bitboards,
  a learner's table lab.game.sparse's; opponents are lab.game.bots' (`RuleBots`, or `Bots`).

numba counts a reference for every array of a bundle (an engine, a table, a tree) handed on to
another compiled function, at every call (10-30% of the bigger boards' learners' speed): bodies read
a bundle in place where the work is short (a probe, a row), hand it on only where it is long (a line
check, a search). A table is read and written in place alike (a compiled insert between in-place
reads played other games than it should have).
"""

from typing import NamedTuple

import numpy as np
from numba import types
from numba.extending import overload

from lab import game
from lab.game import bitboards, bots, sparse

DRAW = 2
"""A game's result when nobody completed a line (the tally's third entry)"""

AFTER, TERMINAL, WINNER, LEGAL = 0, 9, 10, 11
"""The columns of the tabulated engine's rows, one per 3x3 code: lab.game's AFTER (9 columns),
TERMINAL, WINNER and LEGAL (9)."""


def _tabulate() -> np.ndarray:
    # One int16 array, not a bundle: a read out of a bundle counts a reference (3x3's learners: 30%)
    rows = np.zeros((game.N_CODES, LEGAL + 9), np.int16)
    rows[:, AFTER:AFTER + 9] = game.AFTER
    rows[:, TERMINAL] = game.TERMINAL
    rows[:, WINNER] = game.WINNER
    rows[:, LEGAL:LEGAL + 9] = game.LEGAL
    return rows


TTT = _tabulate()
"""3x3, tabulated: lab.game's rules as rows over all 3**9 board codes (the columns above)"""
THREE = bitboards.board(3, 3, 3)
"""3x3 as bitboards: where the tabulated engine's MCTS opponent searches (at lab.game.STONES)"""


class RuleBots(NamedTuple):
    """A fixed opponent needing no tree (random, onestep, block) on a bitboard engine."""

    kinds: tuple  # the lab.game.bots kind (NAMES' index) of X's seat and O's, indexed by side


class Bots(NamedTuple):
    """A fixed opponent on a bitboard engine that may search: MCTS or perfect."""

    kinds: tuple  # as RuleBots'
    simulations: int  # MCTS playouts per move
    tree: bots.Tree  # the search tree MCTS reuses, or perfect's table


def fixed_opponent(kinds: tuple[int, int], simulations: int, tree_of) -> RuleBots | Bots:
    """RuleBots of `kinds` unless a seat searches, then Bots with `tree_of()` (apart: handed on at
    every move, the Tree's twelve arrays cost the tabular learners a third of their speed)."""
    if {bots.MCTS, bots.PERFECT} & set(kinds):
        return Bots(tuple(kinds), simulations, tree_of())
    return RuleBots(tuple(kinds))


def of(shape: tuple[int, int, int]):
    """The engine of the m,n,k board `shape`: tabulated for 3x3, bitboards for every other."""
    return TTT if tuple(shape) == (3, 3, 3) else bitboards.board(*shape)


def tabulated(g) -> bool:
    """Whether `g` (an engine, or numba's type of one) is the tabulated one."""
    return isinstance(g, (types.Array, np.ndarray))


def compiled(typing):
    """A stub named as `typing`, compiled inlined as the body `typing` returns for its argument
    types (numba.extending.overload): each engine's body chosen once, when a kernel compiles."""
    def stub(*args):
        pass
    stub.__name__ = stub.__qualname__ = typing.__name__
    stub.__doc__ = typing.__doc__
    overload(stub, inline="always")(typing)
    return stub


def cells(g):
    """The board's number of cells (Python calls it too)."""
    return 9 if tabulated(g) else g.m * g.n


@overload(cells, inline="always")
def _cells(g):
    if tabulated(g):
        return lambda g: 9
    return lambda g: g.m * g.n


@compiled
def start(g):
    """The empty board."""
    if tabulated(g):
        return lambda g: 0
    return lambda g: (np.uint64(0), np.uint64(0))


@compiled
def play(g, pos, cell, side):
    """(the position after `side` plays `cell` at `pos`, whether it made a line, whether the game is over)."""
    if tabulated(g):
        def on_codes(g, pos, cell, side):
            after = np.int64(g[pos, AFTER + cell])
            return after, g[after, WINNER] != 0, g[after, TERMINAL] != 0
        return on_codes

    def on_bitboards(g, pos, cell, side):
        x, o, won = bitboards.place(g, pos[0], pos[1], side, cell)
        return (x, o), won, won | ((x | o) == g.full)
    return on_bitboards


@compiled
def random_cell(g, pos):
    """A uniformly random legal cell at `pos`."""
    if tabulated(g):
        return lambda g, pos: game.random_move(g, pos, LEGAL)

    def on_bitboards(g, pos):
        empty = g.full & ~(pos[0] | pos[1])
        return bitboards.random_move(empty, bots.cells_in(empty))
    return on_bitboards


@compiled
def best_cell(g, scores, pos):
    """A legal cell of the highest score at `pos` (ties at random); `scores` has an entry per cell."""
    if tabulated(g):
        return lambda g, scores, pos: game.best_move(scores, g, pos, LEGAL)
    return lambda g, scores, pos: bitboards.best_cell(scores, g.full & ~(pos[0] | pos[1]), g.m * g.n)


@compiled
def afterstate_scores(g, table, pos, side, draw_value, out):
    """out[cell]: the value after `side` plays each legal cell, 1 if it completes a line,
    draw_value if it fills the board, else the table's (one value a row)."""
    if tabulated(g):  # finished positions hold their fixed values in the table
        def on_codes(g, table, pos, side, draw_value, out):
            for cell in range(9):
                out[cell] = table[g[pos, AFTER + cell]] if g[pos, LEGAL + cell] else 0.0
        return on_codes

    def visited(g, table, pos, side, draw_value, out):  # finished afterstates are never stored
        x, o = pos
        empty = g.full & ~(x | o)
        for cell in range(g.m * g.n):
            bit = np.uint64(1) << np.uint64(cell)
            if empty & bit:
                after_x, after_o, won = bitboards.place(g, x, o, side, cell)
                if won:
                    out[cell] = 1.0
                elif empty == bit:
                    out[cell] = draw_value
                else:
                    slot = sparse.slot_of(table, after_x, after_o)
                    out[cell] = table.values[slot, 0] if table.x[slot] != sparse.FREE else table.default
    return visited


@compiled
def q_scores(table, g, pos, member, out):
    """Member `member`'s Q value per cell at `pos`: its row of a dense (K, codes, cells) table, or
    `out` filled from a visited positions' table (members side by side; absent: the default)."""
    if isinstance(table, types.Array):
        return lambda table, g, pos, member, out: table[member, pos]
    def visited(table, g, pos, member, out):
        x, o = pos
        slot = sparse.slot_of(table, x, o)
        held, cells, empty = table.x[slot] != sparse.FREE, g.m * g.n, g.full & ~(x | o)
        for cell in range(cells):
            if empty & (np.uint64(1) << np.uint64(cell)):
                out[cell] = table.values[slot, member * cells + cell] if held else table.default
        return out
    return visited


@compiled
def best_q(table, g, pos, member):
    """The highest Q of member `member` over the legal cells at `pos` (a table's default if absent)."""
    if isinstance(table, types.Array):
        def dense(table, g, pos, member):
            best = -np.inf
            for cell in range(9):
                if g[pos, LEGAL + cell] and table[member, pos, cell] > best:
                    best = table[member, pos, cell]
            return best
        return dense

    def visited(table, g, pos, member):
        x, o = pos
        slot = sparse.slot_of(table, x, o)
        if table.x[slot] == sparse.FREE:
            return table.default
        cells, empty = g.m * g.n, g.full & ~(x | o)
        best = -np.inf
        for cell in range(cells):
            if empty & (np.uint64(1) << np.uint64(cell)):
                best = max(best, table.values[slot, member * cells + cell])
        return best
    return visited


@compiled
def q_step(table, g, slot, member, cell, target, alpha):
    """Move member `member`'s Q of `cell` in row `slot` a step alpha towards `target`."""
    if isinstance(table, types.Array):
        def dense(table, g, slot, member, cell, target, alpha):
            table[member, slot, cell] += alpha * (target - table[member, slot, cell])
        return dense

    def visited(table, g, slot, member, cell, target, alpha):
        column = member * g.m * g.n + cell
        table.values[slot, column] += alpha * (target - table.values[slot, column])
    return visited


@compiled
def history(g, size):
    """Room for `size` positions of a game (`keep`, `kept`)."""
    if tabulated(g):
        return lambda g, size: np.empty(size, np.int64)
    return lambda g, size: np.empty((size, 2), np.uint64)


@compiled
def keep(positions, i, pos):
    """Store `pos` as position i."""
    if positions.ndim == 1:
        def code(positions, i, pos):
            positions[i] = pos
        return code

    def bitboards(positions, i, pos):
        positions[i, 0], positions[i, 1] = pos
    return bitboards


@compiled
def kept(positions, i):
    """Position i."""
    if positions.ndim == 1:
        return lambda positions, i: positions[i]
    return lambda positions, i: (positions[i, 0], positions[i, 1])


@compiled
def read(table, slot):
    """The value of row `slot` of a table of one value a row."""
    if isinstance(table, types.Array):
        return lambda table, slot: table[slot]
    return lambda table, slot: table.values[slot, 0]


@compiled
def add(table, slot, change):
    """Add `change` to the value of row `slot` of a table of one value a row."""
    if isinstance(table, types.Array):
        def dense(table, slot, change):
            table[slot] += change
        return dense

    def visited(table, slot, change):
        table.values[slot, 0] += change
    return visited


@compiled
def epsilon_greedy(g, scores, pos, epsilon):
    """(with probability epsilon a random legal cell at `pos`, else a best-scoring one, ties at
    random; whether it was random). An overload: an njit function here cost 3x3's learners 30%."""
    def choose(g, scores, pos, epsilon):
        if np.random.random() < epsilon:
            return random_cell(g, pos), True
        return best_cell(g, scores, pos), False
    return choose


def _is_a(typ, cls) -> bool:
    """Whether numba's type `typ` is that of a `cls` NamedTuple."""
    return isinstance(typ, types.BaseNamedTuple) and typ.instance_class is cls


@compiled
def opponent_move(g, opponent, pos, side):
    """The cell an opponent (3x3's move table, `RuleBots`, `Bots`, or a NamedTuple whose module
    registers its move by `plays`) plays with `side` to move at `pos`."""
    if tabulated(g) and isinstance(opponent, types.Array):
        return lambda g, opponent, pos, side: game.sample_move(opponent, pos)
    if tabulated(g) and _is_a(opponent, Bots):
        return lambda g, opponent, pos, side: bots.bot_move(
            THREE, opponent.tree, opponent.kinds[side], opponent.simulations,
            game.STONES[pos, 0], game.STONES[pos, 1], side)
    if _is_a(opponent, RuleBots):
        return lambda g, opponent, pos, side: bots.rule_move(g, opponent.kinds[side], pos[side], pos[1 - side])
    if _is_a(opponent, Bots):
        return lambda g, opponent, pos, side: bots.bot_move(
            g, opponent.tree, opponent.kinds[side], opponent.simulations, pos[0], pos[1], side)
    return None


def plays(cls):
    """Register the decorated compiled function as `opponent_move` for NamedTuple `cls`: how the
    kernels play a trained agent frozen on a bigger board (lab.agents.base.Agent.frozen)."""
    def register(move):
        overload(opponent_move, inline="always")(
            lambda g, opponent, pos, side: move if _is_a(opponent, cls) else None)
        return move
    return register


@compiled
def row(table, pos):
    """The row of a learner's table that holds `pos` (added if new, on a table of visited positions)."""
    if isinstance(table, types.Array):
        return lambda table, pos: pos
    def visited(table, pos):  # lab.game.sparse.insert, read in place (see the module doc)
        x, o = pos
        slot = sparse.slot_of(table, x, o)
        if table.x[slot] == sparse.FREE:
            table.x[slot] = x
            table.o[slot] = o
            table.values[slot, :] = table.default
            table.size[0] += 1
        return slot
    return visited


@compiled
def values(table):
    """The (rows, width) array of a learner's table."""
    if isinstance(table, types.Array):
        return lambda table: table
    return lambda table: table.values


@compiled
def room(table, positions):
    """Whether a game adding up to `positions` rows keeps the table at most half full (dense: always)."""
    if isinstance(table, types.Array):
        return lambda table, positions: True
    return lambda table, positions: not sparse.full(table, positions)


# The same game, seen from Python: what a learner needs of the positions its kernel recorded.
def records(positions: np.ndarray, games: int) -> np.ndarray:
    """A kernel's `history(g, games * cells)` as a row of positions per game."""
    return positions.reshape(games, -1, *positions.shape[1:])


def distinct(g, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct positions, each position's index among them), in the order of their keys
    (a code; x | o << cells)."""
    if tabulated(g):
        return np.unique(positions, return_inverse=True)
    x, o = positions[:, 0], positions[:, 1]
    order = np.lexsort((x, o))  # np.unique(axis=0): 3x slower
    x, o = x[order], o[order]
    first = np.ones(len(order), np.bool_)
    first[1:] = (x[1:] != x[:-1]) | (o[1:] != o[:-1])
    inverse = np.empty(len(order), np.int64)
    inverse[order] = np.cumsum(first) - 1
    return positions[order[first]], inverse


def fold(g, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each position's canonical image under the board's symmetries, (n, cells) the cell each
    cell becomes there): lab.game.CANONICAL_PAIR's on 3x3, lab.game.bitboards.fold's elsewhere."""
    if tabulated(g):
        return game.CANONICAL[positions], game.CANONICAL_PAIR[positions] % 9
    return bitboards.fold(positions, bitboards.places(g.m, g.n))


def canonical(g, positions: np.ndarray) -> np.ndarray:
    """Each position's canonical image (`fold`)."""
    return game.CANONICAL[positions] if tabulated(g) else fold(g, positions)[0]


def canonical_pairs(g, positions: np.ndarray, moves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (position, move) pair as its canonical image (`fold`): symmetric pairs share one."""
    if tabulated(g):
        return np.divmod(game.CANONICAL_PAIR[positions, moves], 9)
    images, places = fold(g, positions)
    return images, places[np.arange(len(moves)), moves]


def positions_of(g, x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The engine's positions (codes on 3x3, else (n, 2)) of the stones x and o (uint64 arrays)."""
    x, o = np.asarray(x, np.uint64), np.asarray(o, np.uint64)
    if tabulated(g):
        bits = np.arange(9, dtype=np.uint64)
        digits = (x[:, None] >> bits & 1) + 2 * (o[:, None] >> bits & 1)
        return digits.astype(np.int64) @ game.POW3
    return np.stack([x, o], axis=1)


def inputs(g, positions: np.ndarray, dtype) -> np.ndarray:
    """(n, cells) net inputs of positions: +1 X, -1 O, 0 empty."""
    if tabulated(g):
        return game.BOARDS[positions]
    return bitboards.cell_inputs(positions[:, 0], positions[:, 1], g.m * g.n, dtype)
