"""One interface to the m,n,k game for the compiled learners, whatever the board.

A learner's kernel is written once against the functions below, the game its first argument `g`;
numba compiles each function's body for the type of `g` (numba.extending.overload), so nothing is
decided while games are played:

- `TTT` (3x3, tabulated): a position is its base-3 code, the rules lab.game's tables, a row per
  code. Opponents are move tables (lab.game.opponents) or `Bots` searching at each code's bitboards;
  a learner's table is dense, a row per code.
- `lab.game.bitboards.Board` (up to 64 cells): a position is (x, o), X's and O's uint64
  bitboards. Opponents are lab.game.bots' (`RuleBots`, or `Bots` with a tree); a learner's table
  is a lab.game.sparse table of the positions visited.

Random draws are those of lab.game's, lab.game.bitboards' and lab.game.bots' helpers. Sides are 0
(X, moves first) and 1 (O); a game's result is the side that won, or DRAW.

numba counts a reference for every array of a bundle (an engine, a table, a tree) that a body
hands on to another compiled function, at every call: so the bodies read a bundle's arrays in
place where the work is short (a probe, a row) and hand it on only where it is long (a line
check, a search); handed on, they cost the bigger boards' learners 10-30% of their speed. A
table is read and written in place alike: a kernel that read a table in place around a compiled
insert into it played other games than it should have.
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
"""The columns of the tabulated engine's rows (one row per 3x3 board code): AFTER + cell the code
after the side to move plays cell (-1 where illegal), TERMINAL whether the game is over, WINNER
1 X won, -1 O won, 0 nobody (yet), LEGAL + cell whether cell is a move of the side to move."""


def _tabulate() -> np.ndarray:
    # One int16 array, not a bundle of tables: a kernel counts a reference at each read of an
    # array out of a bundle (3x3's learners ran 30% slower so); a position's rules share a line.
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
    """A fixed opponent on a bitboard engine that needs no tree: random, onestep or block."""

    kinds: tuple  # the lab.game.bots kind (NAMES' index) of X's seat and O's, indexed by side


class Bots(NamedTuple):
    """A fixed opponent on a bitboard engine that may search: MCTS or perfect."""

    kinds: tuple  # as RuleBots'
    simulations: int  # MCTS playouts per move
    tree: bots.Tree  # the search tree MCTS reuses, or perfect's table


def fixed_opponent(kinds: tuple[int, int], simulations: int, tree_of) -> RuleBots | Bots:
    """The opponent of bot `kinds` (and learners' seats): RuleBots unless a seat searches, then
    Bots with `tree_of()` (apart: handed on at every move, the Tree's twelve arrays cost the
    tabular learners a third of their speed against random)."""
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
    """The function kernels call by `typing`'s name: a stub whose body numba compiles, inlined,
    as the function `typing` returns for the types of the arguments (numba.extending.overload),
    so each engine's implementation is chosen once, when a kernel compiles."""
    def stub(*args):
        pass
    stub.__name__ = stub.__qualname__ = typing.__name__
    stub.__doc__ = typing.__doc__
    overload(stub, inline="always")(typing)
    return stub


def cells(g):
    """The board's number of cells (the one function here that Python calls too)."""
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
    """out[cell] = the value of the position after `side` plays each legal cell: 1 if it
    completes a line, draw_value if it fills the board, else the table's (one value a row)."""
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
    """The Q values of member `member` at `pos`, a value per cell, of a table of K members' Q rows:
    its own row (dense, K x codes x cells), or `out` filled (visited positions' table, members side
    by side; a position not in it reads as the default)."""
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
    """(a learner's move at `pos`: with probability epsilon a random legal cell, else a best-scoring
    one, ties at random; whether it was the random one). An overload, as what it calls: an njit
    function between them cost 3x3's learners 30% of their speed."""
    if tabulated(g):
        def on_codes(g, scores, pos, epsilon):
            if np.random.random() < epsilon:
                return game.random_move(g, pos, LEGAL), True
            return game.best_move(scores, g, pos, LEGAL), False
        return on_codes

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
    """The cell an opponent plays with `side` to move at `pos`: a move table (3x3's), `RuleBots`
    or `Bots`; an opponent of another NamedTuple type by the move its module registers (`plays`)."""
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
    """Register the decorated function, compiled, as `opponent_move` for opponents of NamedTuple
    `cls`: how the learners' kernels play a trained agent frozen on a bigger board
    (lab.agents.base.Agent.frozen), written beside that agent's scoring."""
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
    """A kernel's `history(g, games * cells)` of each game's positions ply by ply, as one row per
    game: (games, cells) codes on 3x3, (games, cells, 2) (x, o) bitboards elsewhere."""
    return positions.reshape(games, -1, *positions.shape[1:])


def distinct(g, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct positions in order, the index of each position among them): codes in
    increasing order, bitboards by O's stones then X's (the order of x | o << cells)."""
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
    """(each position's canonical image among the board's symmetric ones, (n, cells) the cell
    each cell becomes there): on 3x3 lab.game.CANONICAL and CANONICAL_PAIR's, elsewhere
    lab.game.bitboards.canonical's."""
    if tabulated(g):
        return game.CANONICAL[positions], game.CANONICAL_PAIR[positions] % 9
    return bitboards.fold(positions, bitboards.places(g.m, g.n))


def canonical(g, positions: np.ndarray) -> np.ndarray:
    """Each position's canonical image (`fold`)."""
    return game.CANONICAL[positions] if tabulated(g) else fold(g, positions)[0]


def canonical_pairs(g, positions: np.ndarray, moves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (position, move) pair as its canonical image (`fold`): symmetric pairs share one."""
    if tabulated(g):
        return game.canonical_pairs(positions, moves)
    images, places = fold(g, positions)
    return images, places[np.arange(len(moves)), moves]


def positions_of(g, x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The engine's positions of the stones x and o (uint64 bitboards, one pair per position):
    codes on 3x3, an (n, 2) array elsewhere."""
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
