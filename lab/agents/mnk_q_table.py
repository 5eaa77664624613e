"""q_table on bigger m,n,k boards: tabular Q by on-policy TD, on a table of visited positions.

The algorithm is lab.agents.q_table's (its knobs, its `Config`, its update): the agent keeps
Q(position, move) for the positions where it is to move, every entry starting at 0, plays
epsilon-greedy on it (ties at random), epsilon multiplied by epsilon_decay_per_game before every
game, gamma 1, and after each of its moves

- its move wins: Q(board, move) = 1; its move fills the board: Q(board, move) = 0 (both certain);
- the opponent's reply ends the game: Q(board, move) moves a step alpha towards the result (-1 a
  loss, 0 a draw);
- in every case the previous (board, move) of the game moves towards the current one:
  Q(prev) += alpha (Q(board, move) - Q(prev)).

Here positions are lab.mnk's bitboards, Q rows (a value per cell) live in a lab.mnk_table table
of the positions the agent has moved from, and the opponent is a lab.mnk_bots bot, all in one
compiled loop, `train`. The agent trains in one seat against a fixed opponent (as on 3x3).
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, mnk, mnk_bots, mnk_table
from lab.agents import base, mnk_tabular, q_table
from lab.knobs import RunConfig
from lab.mnk import empty_mask, random_move
from lab.mnk_table import full, insert

READING = mnk_tabular.Reading(afterstates=False, draw_value=0.0, members=1)


class Agent(mnk_tabular.Agent):
    """Plays the move of highest Q; positions it never trained on score 0 (ties: any move)."""

    algorithm = "q_table"


class Params(NamedTuple):
    """The numbers `train` uses, as one argument (by name: no two can be swapped)."""

    side: int
    """the agent's side: 0 X (moves first), 1 O"""
    alpha: float
    """TD step size"""
    epsilon_decay_per_game: float
    """epsilon is multiplied by this before every game"""
    per_game: int
    """the most positions one game adds to the table: the agent's moves"""


def depths(run: RunConfig) -> range:
    """The numbers of stones on the board where the agent is to move: its table's positions."""
    return range(run.player - 1, run.m * run.n, 2)


@njit(cache=True)
def train(board, t, tree, kinds, simulations, epsilon, n, params, tally):
    """Play up to n games of the agent learning table t against the bot of kinds; stop before a
    game that could take t over half full. Adds the results to tally [X wins, O wins, draws];
    returns (games played, the decayed epsilon)."""
    cells, me, alpha = board.m * board.n, params.side, params.alpha
    for g in range(n):
        if full(t, params.per_game):
            return g, epsilon
        epsilon *= params.epsilon_decay_per_game
        x, o, ply, result = np.uint64(0), np.uint64(0), 0, mnk_bots.DRAW
        if me == 1:  # the opponent opens
            cell = mnk_bots.bot_move(board, tree, kinds[0], simulations[0], x, o, 0)
            x, o, _ = mnk_tabular.place(board, x, o, 0, cell)
            ply = 1
        prev, prev_cell = -1, -1
        while True:
            slot = insert(t, x, o)
            empty = empty_mask(board, x, o)
            if np.random.random() < epsilon:
                cell = random_move(empty, cells - ply)
            else:
                cell = mnk_tabular.best_cell(t.values[slot], empty, cells)
            x, o, won = mnk_tabular.place(board, x, o, me, cell)
            ply += 1
            end = won or ply == cells
            if end:  # our move won (1) or drew (0): certain
                t.values[slot, cell] = 1.0 if won else 0.0
                result = me if won else mnk_bots.DRAW
            else:
                reply = mnk_bots.bot_move(board, tree, kinds[1 - me], simulations[1 - me], x, o, 1 - me)
                x, o, won = mnk_tabular.place(board, x, o, 1 - me, reply)
                ply += 1
                end = won or ply == cells
                if end:  # the opponent's reply won (-1) or drew (0): one sample of it
                    t.values[slot, cell] += alpha * ((-1.0 if won else 0.0) - t.values[slot, cell])
                    result = 1 - me if won else mnk_bots.DRAW
            if prev >= 0:
                t.values[prev, prev_cell] += alpha * (t.values[slot, cell] - t.values[prev, prev_cell])
            if end:
                break
            prev, prev_cell = slot, cell
        tally[result] += 1
    return n, epsilon


class Learner(base.Learner):
    DERIVED = ("board", "kinds", "simulations", "tree")

    def __init__(self, knobs: q_table.Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.board = mnk.board(*run.game)
        self.table = mnk_table.Table(run.m * run.n, 0.0)
        self.epsilon = knobs.epsilon
        self.params = Params(run.player - 1, knobs.alpha, knobs.epsilon_decay_per_game,
                             len(depths(run)))
        self.kinds, self.simulations, self.tree = mnk_tabular.opponents(run)

    @classmethod
    def check_run(cls, knobs: q_table.Config, run: RunConfig) -> None:
        mnk_table.check_fits(run, "q_table", depths(run), run.m * run.n)

    def iterate(self) -> np.ndarray:
        tally = np.zeros(3, np.int64)

        def play(view, games):
            played, self.epsilon = train(self.board, view, self.tree, self.kinds, self.simulations,
                                         self.epsilon, games, self.params, tally)
            return played
        mnk_tabular.in_batches(self.table, self.params.per_game, self.run.episodes_per_update, play)
        return tally

    def exploration(self) -> float:
        return float(self.epsilon)  # the last game's: epsilon decays before every game

    def memory(self) -> dict:
        return self.table.columns()

    def agent(self) -> Agent:
        return Agent(self.table.copy(), self.run.game, READING)


ALGORITHM = base.Algorithm("q_table", q_table.Config, Learner, Agent, self_play=False)
