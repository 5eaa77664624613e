"""The compiled games of the net learners, mc_vfa and q_net, written once against lab.engine.

Between two updates a learner's policy is fixed, so an iteration's games are played as one batch
by `play_games`: the learner's side plays epsilon-greedy on what its net says of each legal move
(mc_vfa: the value of the afterstate; q_net: Q of the position and move), ties at random, and a
fixed opponent (or, in self-play, the other seat's net) plays the other side. On 3x3 the net is
asked about each afterstate or position once per batch and the answer remembered (lab.engine's
`memo`).
"""

import numpy as np
from numba import njit

from lab import engine


@njit(cache=True)
def play_games(g, nets, learns, opponent, n, epsilon, lookup, afterstates):
    """Play n games on the game g: the side s (0 X, 1 O) with learns[s] is played by nets[s]
    (CompiledNets), epsilon-greedy on engine.afterstate_values if `afterstates` (`lookup`:
    engine.code_inputs) else on engine.q_values (`lookup`: q_net's pair codes); the other side by
    the fixed `opponent`. Returns (positions, cells, plies, results): engine.history's positions
    after each ply, game after game, each game taking a board's cells of room; the cell of each
    ply (-1 past the end); the plies each game lasted; the side that won each, or DRAW."""
    size = engine.cells(g)
    positions = engine.history(g, n * size)
    cells = np.full((n, size), -1, np.int64)
    plies = np.empty(n, np.int64)
    results = np.empty(n, np.int8)
    first = nets[0][0][0]  # X's first weights: the nets' precision and input width
    memo, known = engine.memo(g, first.dtype)
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
                    engine.afterstate_values(g, nets, side, memo, known, lookup, pos, scratch, scores)
                else:
                    engine.q_values(g, nets, side, memo, known, lookup, pos, scratch, scores)
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
