"""What the net learners, mc_vfa and q_net, share: their compiled games, Learner and Agent.

An iteration's games are one batch (`play_games`): the learner's side plays epsilon-greedy on what
its net says of each legal move (mc_vfa: the afterstate's value, `afterstate_values`; q_net: Q of
the position and move, `q_values`), ties at random, and a fixed opponent or, in self-play, the
other seat's net plays the other side. On 3x3 the net's answers are remembered for the batch
(`memory`); with the board's symmetries the nets see each position as its canonical image
(`lookup_for`). The scoring functions, like lab.game.engine's, have a body compiled per engine.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game
from lab.agents import base, tabular
from lab.game import bitboards, engine
from lab.game.engine import AFTER, LEGAL, compiled, tabulated
from lab.knobs import TTT
from lab.nets import MLP, forward


@njit(cache=True)
def play_games(g, nets, learns, opponent, n, epsilon, lookup, afterstates):
    """Play n games on the game g, side s (0 X, 1 O) by nets[s] (CompiledNets) if learns[s], else
    by `opponent`. Returns engine.history's positions after each ply (cells of room a game), the
    cell of each ply (n, cells; -1 past the end), the plies of each game and its winner or DRAW."""
    size = engine.cells(g)
    positions = engine.history(g, n * size)
    cells = np.full((n, size), -1, np.int64)
    plies = np.empty(n, np.int64)
    results = np.empty(n, np.int8)
    first = nets[0][0][0]  # X's first weights: the nets' precision and input width
    memo, known = memory(g, first.dtype)
    scratch = np.empty((size, first.shape[0]), first.dtype)
    scores = np.empty(size, first.dtype)
    for i in range(n):
        pos = engine.start(g)
        ply, side, won = 0, 0, False
        while True:
            side = ply % 2
            if not learns[side]:
                cell = engine.opponent_move(g, opponent, pos, side)
            # engine.epsilon_greedy's draws, except that epsilon 0 draws nothing, and the net is
            # asked only for greedy moves
            elif epsilon > 0.0 and np.random.random() < epsilon:
                cell = engine.random_cell(g, pos)
            else:
                if afterstates:
                    afterstate_values(g, nets, side, memo, known, lookup, pos, scratch, scores)
                else:
                    q_values(g, nets, side, memo, known, lookup, pos, scratch, scores)
                cell = engine.best_cell(g, scores, pos)
            pos, won, over = engine.play(g, pos, cell, side)
            engine.keep(positions, i * size + ply, pos)
            cells[i, ply] = cell
            ply += 1
            if over:
                break
        plies[i] = ply
        results[i] = side if won else engine.DRAW
    return positions, cells, plies, results


class Learner(tabular.Learner):
    """What mc_vfa's and q_net's Learners share: a net per seat they learn in (`nets`, X's then O's
    in self-play; `net` the first), `lookup` (lookup_for's), an iteration's games, the agent."""

    DERIVED = ("game", "opponent", "lookup")

    def make_nets(self, inputs: int, outputs: int, rng, **options) -> None:
        sizes = [inputs] + [self.knobs.neurons] * self.knobs.layers + [outputs]
        self.nets = {seat: MLP(sizes, rng, **options) for seat in self.run.seats}
        self.net = self.nets[self.run.seats[0]]
        self.lookup = lookup_for(self.game, self.AGENT.AFTERSTATES, self.knobs.symmetry)

    def play(self, epsilon):
        """`play_games` of an iteration at `epsilon`, the positions as engine.records."""
        n = self.run.episodes_per_update
        nets = tuple(self.nets.get(seat, self.net).compiled() for seat in (1, 2))
        learns = tuple(seat in self.run.seats for seat in (1, 2))
        positions, cells, plies, results = play_games(self.game, nets, learns, self.opponent, n, epsilon,
                                                      self.lookup, self.AGENT.AFTERSTATES)
        self.played_epsilon = epsilon
        return engine.records(positions, n), cells, plies, results

    def exploration(self) -> float:
        return float(self.played_epsilon)

    def agent(self):
        """The subclass's `AGENT` with copies of the nets: both seats' in self-play, else one."""
        nets = (self.nets[1].copy(), 1, self.nets[2].copy()) if len(self.run.seats) == 2 else (
            self.net.copy(), self.run.player, None)
        return self.AGENT(*nets, self.knobs.symmetry, self.run.game)


@compiled
def afterstate_values(g, nets, side, memo, known, inputs, pos, scratch, out):
    """out[cell] = the value net nets[side] gives the position after `side` plays each legal
    cell. On 3x3 an afterstate (input inputs[code]) is valued when first needed and remembered in
    memo[side, code] (flagged in known) for the batch; on bitboards one pass a call. `scratch`:
    (cells, cells) rows in the net's precision."""
    if tabulated(g):
        def on_codes(g, nets, side, memo, known, inputs, pos, scratch, out):
            count = 0
            for cell in range(9):
                if g[pos, LEGAL + cell] and not known[side, g[pos, AFTER + cell]]:
                    scratch[count] = inputs[g[pos, AFTER + cell]]
                    count += 1
            if count:
                weights, biases, hidden, output = nets[side]
                new = forward(weights, biases, hidden, output, scratch[:count])[:, 0]
                count = 0
                for cell in range(9):
                    if g[pos, LEGAL + cell] and not known[side, g[pos, AFTER + cell]]:
                        memo[side, g[pos, AFTER + cell], 0] = new[count]
                        known[side, g[pos, AFTER + cell]] = True
                        count += 1
            for cell in range(9):
                out[cell] = memo[side, g[pos, AFTER + cell], 0] if g[pos, LEGAL + cell] else 0.0
        return on_codes

    def on_bitboards(g, nets, side, memo, known, inputs, pos, scratch, out):
        x, o = pos
        cells, empty = g.m * g.n, g.full & ~(x | o)
        count = 0
        for cell in range(cells):
            bit = np.uint64(1) << np.uint64(cell)
            if empty & bit:
                after_x, after_o = (x | bit, o) if side == 0 else (x, o | bit)
                if len(inputs) > 1:  # the board's symmetries (`lookup_for`): the afterstate's canonical image
                    after_x, after_o = bitboards.canonical(after_x, after_o, inputs)
                _bitboard_cells(after_x, after_o, cells, scratch[count])
                count += 1
        weights, biases, hidden, output = nets[side]
        _on_empty_cells(forward(weights, biases, hidden, output, scratch[:count])[:, 0], empty, cells, out)
    return on_bitboards


@njit(inline="always")
def _code_cells(code, row):
    """row[:9] = the cells of a 3x3 board code (base-3 digits, cell 0 the lowest: 1 X, 2 O)."""
    for cell in range(9):
        digit = code % 3
        row[cell] = 1.0 if digit == 1 else -1.0 if digit == 2 else 0.0
        code //= 3


@njit(inline="always")
def _bitboard_cells(x, o, cells, row):
    """row[:cells] = the cells of the position (x, o): +1 X, -1 O, 0 empty."""
    for cell in range(cells):
        bit = np.uint64(1) << np.uint64(cell)
        row[cell] = 1.0 if x & bit else -1.0 if o & bit else 0.0


@njit(inline="always")
def _on_empty_cells(values, empty, cells, out):
    """out[cell] = the next of `values` for each empty cell, in cell order (the net's rows)."""
    count = 0
    for cell in range(cells):
        if empty & (np.uint64(1) << np.uint64(cell)):
            out[cell] = values[count]
            count += 1


@compiled
def q_values(g, nets, side, memo, known, pairs, pos, scratch, out):
    """out[cell] = Q(pos, cell) of each legal cell by net nets[side]: a Q per cell from the cells
    (input width = cells), or one Q a row of the cells and the move one-hot (width = 2 cells). On
    3x3 the net sees (code, cell) as pairs[code, cell] (`lookup_for`), and a position's values are
    remembered as afterstate_values' are; on bitboards computed at each call."""
    if tabulated(g):
        def on_codes(g, nets, side, memo, known, pairs, pos, scratch, out):
            if not known[side, pos]:
                weights, biases, hidden, output = nets[side]
                if weights[0].shape[0] == 9:  # a Q per cell: one pass from the (canonical) code's cells
                    _code_cells(pairs[pos, 0] // 9, scratch[0])
                    q = forward(weights, biases, hidden, output, scratch[:1])[0]
                    for cell in range(9):
                        memo[side, pos, cell] = q[pairs[pos, cell] % 9]
                else:
                    count = 0
                    for cell in range(9):
                        if g[pos, LEGAL + cell]:
                            _code_cells(pairs[pos, cell] // 9, scratch[count])
                            scratch[count, 9:] = 0.0
                            scratch[count, 9 + pairs[pos, cell] % 9] = 1.0
                            count += 1
                    values = forward(weights, biases, hidden, output, scratch[:count])[:, 0]
                    count = 0
                    for cell in range(9):
                        if g[pos, LEGAL + cell]:
                            memo[side, pos, cell] = values[count]
                            count += 1
                known[side, pos] = True
            for cell in range(9):
                out[cell] = memo[side, pos, cell]
        return on_codes

    def on_bitboards(g, nets, side, memo, known, pairs, pos, scratch, out):
        x, o = pos
        cells, empty = g.m * g.n, g.full & ~(x | o)
        moves = pairs[0]  # the cell the net sees each cell as: itself (the identity's `lookup_for`) or,
        if len(pairs) > 1:  # with the board's symmetries, its place in the canonical image
            moves = np.empty(cells, np.int64)
            x, o = bitboards.canonical_moves(x, o, pairs, moves)
        weights, biases, hidden, output = nets[side]
        if weights[0].shape[0] == cells:  # a Q per cell: one pass from the position's cells
            _bitboard_cells(x, o, cells, scratch[0])
            q = forward(weights, biases, hidden, output, scratch[:1])[0]
            for cell in range(cells):
                out[cell] = q[moves[cell]]
            return
        count = 0
        for cell in range(cells):
            if empty & (np.uint64(1) << np.uint64(cell)):
                _bitboard_cells(x, o, cells, scratch[count])
                scratch[count, cells:] = 0.0
                scratch[count, cells + moves[cell]] = 1.0
                count += 1
        _on_empty_cells(forward(weights, biases, hidden, output, scratch[:count])[:, 0], empty, cells, out)
    return on_bitboards


@compiled
def memory(g, dtype):
    """(values, known): room for `afterstate_values` and `q_values` to remember each side's values
    (3x3: a value per cell for each code; bitboards remember nothing)."""
    size, width = (game.N_CODES, 9) if tabulated(g) else (1, 1)
    return lambda g, dtype: (np.empty((2, size, width), dtype), np.zeros((2, size), np.bool_))


def lookup_for(g, afterstates: bool, symmetry: bool) -> np.ndarray:
    """What `afterstate_values` (afterstates) or `q_values` reads beside the position. On 3x3 the
    net input of each afterstate code (its cells: +1 X, -1 O, 0 empty) or the pair code each
    (code, cell) is seen as (code * 9 + cell), of its canonical image with `symmetry`; on bitboards
    the place of each cell in each of the board's symmetric images (lab.game.bitboards.places),
    only the identity's without `symmetry`."""
    if not tabulated(g):
        places = bitboards.places(g.m, g.n)
        return places if symmetry else places[:1]
    if afterstates:
        return game.BOARDS[game.CANONICAL] if symmetry else game.BOARDS
    return game.CANONICAL_PAIR if symmetry else np.arange(game.N_CODES * 9).reshape(-1, 9)


class Frozen(NamedTuple):
    """A net agent as a learner's opponent on a bigger board (`Agent.frozen`), with the room
    `afterstate_values` and `q_values` use."""

    nets: tuple  # the CompiledNets of X's seat and O's
    afterstates: bool  # mc_vfa's reading (afterstate values), else q_net's (Q values)
    memo: np.ndarray
    known: np.ndarray
    lookup: np.ndarray
    scratch: np.ndarray
    scores: np.ndarray


@engine.plays(Frozen)
def _frozen_move(g, opponent, pos, side):
    nets, memo, known, lookup, scratch, scores = (opponent.nets, opponent.memo, opponent.known,
                                                  opponent.lookup, opponent.scratch, opponent.scores)
    if opponent.afterstates:
        afterstate_values(g, nets, side, memo, known, lookup, pos, scratch, scores)
    else:
        q_values(g, nets, side, memo, known, lookup, pos, scratch, scores)
    return engine.best_cell(g, scores, pos)


OTHER = "other_"
"""The checkpoint prefix of a self-play agent's second net (the seat that is not `player`)."""


class Agent(base.Agent):
    """An MLP trained in seat `player` (1 X, 2 O) on the board `shape`, and in self-play a second,
    `other`, for the other seat; with `symmetry` its nets see positions as their canonical image."""

    AFTERSTATES: bool
    """whether the nets value afterstates (mc_vfa), else moves (q_net)"""

    def __init__(self, net: MLP, player: int, other: MLP | None = None, symmetry: bool = False,
                 shape: tuple = TTT):
        self.net, self.player, self.other, self.symmetry = net, player, other, symmetry
        self.shape = tuple(shape)
        self.board = None if self.shape == TTT else bitboards.board(*self.shape)

    def scores(self, positions):
        """The side to move's net's scores: 3x3's `seat_scores` (-inf where illegal), elsewhere
        `board_scores` (filled cells scored too, and ignored)."""
        if self.board is not None:
            return base.by_side(self, np.asarray(positions, np.uint64).reshape(-1, 2), self.board_scores)
        if self.other is None:
            return self.seat_scores(self.player, positions)
        return base.by_side(self, np.asarray(positions), self.seat_scores)

    @property
    def seats(self) -> tuple:
        """Its seat `player` only, against a fixed opponent; both in self-play"""
        return (1, 2) if self.other is not None else (self.player,)

    def seat_net(self, seat: int) -> MLP:
        """The net that plays seat `seat`."""
        return self.net if seat == self.player or self.other is None else self.other

    def frozen(self) -> Frozen:
        nets = tuple(self.seat_net(s).compiled() for s in (1, 2))
        first = nets[0][0][0]  # X's first weights: the precision and the input width
        cells = self.board.m * self.board.n
        return Frozen(nets, self.AFTERSTATES, np.empty((2, 1, 1), first.dtype), np.zeros((2, 1), np.bool_),
                      lookup_for(self.board, self.AFTERSTATES, self.symmetry),
                      np.empty((cells, first.shape[0]), first.dtype), np.zeros(cells, first.dtype))

    def arrays(self):
        other = {} if self.other is None else self.other.arrays(OTHER)
        board = {} if self.board is None else {"board": np.array(self.shape)}
        return {**self.net.arrays(), "player": np.array(self.player), **other,
                "symmetry": np.array(self.symmetry), **board}

    @classmethod
    def from_arrays(cls, arrays):
        other = MLP.from_arrays(arrays, OTHER) if f"{OTHER}linear_output" in arrays else None
        symmetry = "symmetry" in arrays and bool(arrays["symmetry"])  # saved before the knob: off
        shape = tuple(int(v) for v in arrays["board"]) if "board" in arrays else TTT
        return cls(MLP.from_arrays(arrays), int(arrays["player"]), other, symmetry, shape)
