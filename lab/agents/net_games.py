"""The compiled games of the net learners, mc_vfa and q_net, written once against lab.game.engine.

Between two updates a learner's policy is fixed, so an iteration's games are played as one batch
by `play_games`: the learner's side plays epsilon-greedy on what its net says of each legal move
(mc_vfa: the value of the afterstate; q_net: Q of the position and move), ties at random, and a
fixed opponent (or, in self-play, the other seat's net) plays the other side. On 3x3 the net is
asked about each afterstate or position once per batch and the answer remembered (`memory`).

What a net says of the moves at a position (`afterstate_values`, `q_values`) is written the way
lab.game.engine writes the game: a function the kernel calls, its body compiled for the engine of `g`.
"""

import numpy as np
from numba import njit
from numba.extending import overload

from lab import game
from lab.game import engine
from lab.game.engine import AFTER, LEGAL, tabulated
from lab.nets import forward


@njit(cache=True)
def play_games(g, nets, learns, opponent, n, epsilon, lookup, afterstates):
    """Play n games on the game g: the side s (0 X, 1 O) with learns[s] is played by nets[s]
    (CompiledNets), epsilon-greedy on afterstate_values if `afterstates` (`lookup`:
    code_inputs) else on q_values (`lookup`: q_net's pair codes); the other side by
    the fixed `opponent`. Returns (positions, cells, plies, results): engine.history's positions
    after each ply, game after game, each game taking a board's cells of room; the cell of each
    ply (-1 past the end); the plies each game lasted; the side that won each, or DRAW."""
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
            # the choice and draws of engine.epsilon_greedy, except that epsilon 0 (write-up
            # 000's) draws nothing, and the net is asked only for greedy moves
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


def agent(learner, Agent):
    """The agent of a net learner (mc_vfa's or q_net's) with copies of its nets as they are, on
    the learner's board: in self-play both seats' nets, else the learner's net and seat."""
    nets = (learner.nets[1].copy(), 1, learner.nets[2].copy()) if len(learner.run.seats) == 2 else (
        learner.net.copy(), learner.run.player, None)
    return Agent(*nets, learner.knobs.symmetry, learner.run.game)


def afterstate_values(g, nets, side, memo, known, inputs, pos, scratch, out):
    """out[cell] = the value net nets[side] gives the position after `side` plays each legal
    cell. On 3x3 each afterstate is valued once, when first needed (one pass of the net over
    those not valued yet), and remembered in memo[side, code] (known[side, code] flags it) for
    the rest of the batch, the net's input of a code being inputs[code] (`code_inputs`); on
    bitboards the afterstates are valued in one pass at each call. `scratch`: (cells, cells)
    rows in the net's precision."""


def q_values(g, nets, side, memo, known, pairs, pos, scratch, out):
    """out[cell] = Q(pos, cell) of each legal cell by net nets[side], whose input width says how:
    a Q per cell from the position's cells (width = cells), or one Q per row of the cells and the
    move one-hot (width = 2 cells). On 3x3 the net sees each (code, cell) as the pair pairs[code,
    cell] (code * 9 + cell, or its canonical image), and a position's values are computed once,
    when first needed, and remembered in memo[side, code] (known[side, code] flags them) for the
    rest of the batch; on bitboards they are computed at each call. `scratch`: (cells, width) rows
    in the net's precision."""


def memory(g, dtype):
    """(values, known): room for `afterstate_values` and `q_values` to remember each side's values
    (3x3: a row of a value per cell for each code; bitboards remember nothing)."""


@overload(afterstate_values, inline="always")
def _afterstate_values(g, nets, side, memo, known, inputs, pos, scratch, out):
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
                _bitboard_cells(after_x, after_o, cells, scratch[count])
                count += 1
        weights, biases, hidden, output = nets[side]
        _on_empty_cells(forward(weights, biases, hidden, output, scratch[:count])[:, 0], empty, cells, out)
    return on_bitboards


@njit(inline="always")
def _code_cells(code, row):
    """row[:9] = the cells of a 3x3 board code (its base-3 digits, cell 0 the lowest: 1 X, 2 O)."""
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


@overload(q_values, inline="always")
def _q_values(g, nets, side, memo, known, pairs, pos, scratch, out):
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
        weights, biases, hidden, output = nets[side]
        if weights[0].shape[0] == cells:  # a Q per cell: one pass from the position's cells
            _bitboard_cells(x, o, cells, scratch[0])
            q = forward(weights, biases, hidden, output, scratch[:1])[0]
            for cell in range(cells):
                out[cell] = q[cell]
            return
        count = 0
        for cell in range(cells):
            if empty & (np.uint64(1) << np.uint64(cell)):
                _bitboard_cells(x, o, cells, scratch[count])
                scratch[count, cells:] = 0.0
                scratch[count, cells + cell] = 1.0
                count += 1
        _on_empty_cells(forward(weights, biases, hidden, output, scratch[:count])[:, 0], empty, cells, out)
    return on_bitboards


@overload(memory, inline="always")
def _memory(g, dtype):
    size, width = (game.N_CODES, 9) if tabulated(g) else (1, 1)
    return lambda g, dtype: (np.empty((2, size, width), dtype), np.zeros((2, size), np.bool_))


def code_inputs(g, symmetry: bool) -> np.ndarray:
    """The net inputs `afterstate_values` reads on 3x3: each code's cells (+1 X, -1 O, 0 empty),
    of its canonical image with `symmetry`; elsewhere an empty array, unread."""
    if not tabulated(g):
        return np.zeros((0, g.m * g.n), np.int8)
    return game.BOARDS[game.CANONICAL] if symmetry else game.BOARDS

