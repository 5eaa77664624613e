"""td_value on bigger m,n,k boards: Sutton and Barto's afterstate values, on a table of visited
positions.

The algorithm is lab.agents.td_value's (its knobs, its `Config`, both its `update` rules): V(s)
estimates the chance that the side that just moved into position s goes on to win, 0.5 for a
position never visited; a move that completes a line is worth 1 and one that fills the board
without a line `draw_value`, fixed (those afterstates end the game and are never stored). A
learning side moves epsilon-greedily on the values of the afterstates of its moves (ties at
random); with update=td, after each greedy move from afterstate s (the side's previous one) to
s', V(s) += alpha (V(s') - V(s)) (an exploratory move updates nothing), and when the opponent's
move ends the game the side's last afterstate moves towards 0 (a loss) or draw_value (a draw);
with update=end_of_game, when the game ends every afterstate the side moved into gets
+1/len(visited) if it won, -1/len(visited) otherwise, len(visited) counting all its moves.

Here afterstates are lab.mnk bitboards whose values live in a lab.mnk_table table of the
afterstates the learning sides moved into (X's and O's are disjoint by their numbers of stones, so
one table holds both), and a fixed opponent is a lab.mnk_bots bot, all in one compiled loop,
`train`. In self-play (opponent=self) both sides learn, as on 3x3.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, mnk, mnk_bots, mnk_table
from lab.agents import base, mnk_tabular, td_value
from lab.knobs import RunConfig
from lab.mnk import empty_mask, random_move
from lab.mnk_table import full, insert


class Agent(mnk_tabular.Agent):
    """Plays the move to the afterstate of highest value."""

    algorithm = "td_value"


class Params(NamedTuple):
    """The numbers `train` uses, as one argument (by name: no two can be swapped)."""

    alpha: float
    """TD step size"""
    epsilon: float
    """probability of an exploratory (random) move"""
    draw_value: float
    """the value of a drawn final position"""
    end_of_game: bool
    """write-up 003's rule (update=end_of_game) instead of TD steps"""
    per_game: int
    """the most afterstates one game adds to the table: the learning sides' moves"""


def depths(run: RunConfig) -> range:
    """The numbers of stones of the learning sides' unfinished afterstates: the table's positions
    (X's after an odd number of moves, O's after an even one)."""
    first = 1 if 1 in run.seats else 2
    return range(first, run.m * run.n, 1 if len(run.seats) == 2 else 2)


@njit(cache=True)
def _end_of_game(t, visited, count, result):
    """Write-up 003's update: each side's afterstates of the game (slots, -1 for the finished
    one) move by +-1/count, +1 for the side that won (result: 0 X, 1 O, 2 a draw)."""
    for side in range(2):
        if count[side] > 0:
            step = (1.0 if result == side else -1.0) / count[side]
            for i in range(count[side]):
                if visited[side, i] >= 0:
                    t.values[visited[side, i], 0] += step


@njit(cache=True)
def train(board, t, tree, kinds, simulations, n, params, tally):
    """Play up to n games, a side of kind TABLE learning t epsilon-greedily, the other its bot;
    stop before a game that could take t over half full. Adds the results to tally; returns the
    games played."""
    cells, alpha = board.m * board.n, params.alpha
    reading = mnk_tabular.Reading(True, params.draw_value, 1)
    scores = np.empty(cells)
    last = np.empty(2, np.int64)  # each side's latest stored afterstate, -1 none
    visited = np.empty((2, (cells + 1) // 2), np.int64)  # end_of_game: the side's afterstates
    count = np.zeros(2, np.int64)
    for g in range(n):
        if full(t, params.per_game):
            return g
        x, o, result = np.uint64(0), np.uint64(0), mnk_bots.DRAW
        last[:], count[:] = -1, 0
        for ply in range(cells):
            side = ply % 2
            empty = empty_mask(board, x, o)
            if kinds[side] != mnk_tabular.TABLE:
                cell = mnk_bots.bot_move(board, tree, kinds[side], simulations[side], x, o, side)
                x, o, won = mnk_tabular.place(board, x, o, side, cell)
            elif np.random.random() < params.epsilon:  # explore: a random move, no update
                x, o, won = mnk_tabular.place(board, x, o, side, random_move(empty, cells - ply))
            else:
                mnk_tabular.scores_at(board, t, reading, x, o, side, -1, scores)
                cell = mnk_tabular.best_cell(scores, empty, cells)
                x, o, won = mnk_tabular.place(board, x, o, side, cell)
                if last[side] >= 0 and not params.end_of_game:  # a greedy move: TD step
                    t.values[last[side], 0] += alpha * (scores[cell] - t.values[last[side], 0])
            finished = won or ply == cells - 1
            if kinds[side] == mnk_tabular.TABLE:
                last[side] = -1 if finished else insert(t, x, o)
                visited[side, count[side]] = last[side]
                count[side] += 1
            if finished:
                result = side if won else mnk_bots.DRAW
                break
        if params.end_of_game:
            _end_of_game(t, visited, count, result)
        elif last[1 - side] >= 0:  # the side that did not end the game learns what it led to
            target = 0.0 if won else params.draw_value
            t.values[last[1 - side], 0] += alpha * (target - t.values[last[1 - side], 0])
        tally[result] += 1
    return n


class Learner(base.Learner):
    DERIVED = ("board", "kinds", "simulations", "tree")

    def __init__(self, knobs: td_value.Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.board = mnk.board(*run.game)
        self.table = mnk_table.Table(1, 0.5)
        self.params = Params(knobs.alpha, knobs.epsilon, knobs.draw_value,
                             knobs.update == "end_of_game", len(depths(run)))
        self.kinds, self.simulations, self.tree = mnk_tabular.opponents(run)

    @classmethod
    def check_run(cls, knobs: td_value.Config, run: RunConfig) -> None:
        mnk_table.check_fits(run, "td_value", depths(run), 1)

    def iterate(self) -> np.ndarray:
        tally = np.zeros(3, np.int64)
        mnk_tabular.in_batches(
            self.table, self.params.per_game, self.run.episodes_per_update,
            lambda view, games: train(self.board, view, self.tree, self.kinds, self.simulations,
                                      games, self.params, tally))
        return tally

    def memory(self) -> dict:
        return self.table.columns()

    def agent(self) -> Agent:
        reading = mnk_tabular.Reading(True, self.knobs.draw_value, 1)
        return Agent(self.table.copy(), self.run.game, reading)


ALGORITHM = base.Algorithm("td_value", td_value.Config, Learner, Agent, self_play=True)
