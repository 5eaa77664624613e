"""Tabular Q learning by on-policy TD, epsilon-greedy with decay (write-up 001, first part).

The agent keeps Q(position, move) for its own positions, every entry starting at 0, and plays
epsilon-greedy on it (ties at random). Rewards come only at the end: +1 win, -1 loss, 0 draw.
Gamma is 1, and the update after each of the agent's moves is the notebook's:

- its move wins: Q(board, move) = 1; its move fills the board: Q(board, move) = 0 (both certain);
- the opponent's reply ends the game: Q(board, move) moves a step alpha towards the result (-1 for
  a loss, 0 for a draw: the reply was chance, so one game is only evidence);
- in every case the previous (board, move) of the episode moves towards the current one:
  Q(prev) += alpha (Q(board, move) - Q(prev)), an on-policy (SARSA-like) TD step.

Epsilon is multiplied by epsilon_decay_per_game before every game, the first included (as in the
notebook). The notebook plays X against a random O; here the agent takes either seat against any
fixed opponent, on any m,n,k board. The episodes run one after another in a compiled loop,
`train`, against lab.game.engine: the table has a row per board code on 3x3, per position the
agent moved from on bigger boards (lab.game.sparse). tests/learner_references.py has the 3x3
loop in plain Python.
"""

from collections import namedtuple
from dataclasses import astuple, dataclass

import numpy as np
from numba import njit

from lab import game
from lab.game import engine, sparse
from lab.agents import base, tabular
from lab.knobs import Knobs, RunConfig, require


@dataclass(frozen=True)
class Config(Knobs):
    alpha: float
    """TD step size (the notebook's rho)"""
    epsilon: float
    """probability of a random move before the first decay"""
    epsilon_decay_per_game: float
    """epsilon is multiplied by this before every game"""

    def check(self):
        require(0 < self.epsilon_decay_per_game <= 1, "epsilon_decay_per_game",
                self.epsilon_decay_per_game, "in (0, 1]")


class Agent(tabular.Agent):
    """Plays the move of highest Q; positions it never trained on score 0 (ties: any move)."""

    algorithm = "q_table"  # its table read as tabular.Agent's default: a Q value per cell


Params = namedtuple("Params", ("side", "per_game", *Config.names()))
"""`train`'s numbers, read by name: the agent's side (0 X, 1 O), the most positions one game adds
to a table of visited positions, then the knobs (epsilon, which decays, is an argument)."""


def depths(run: RunConfig) -> range:
    """The numbers of stones on the board where the agent is to move: its table's positions."""
    return range(run.player - 1, run.m * run.n, 2)


@njit(cache=True)
def train(g, table, opponent, epsilon, n, params, tally):
    """`tabular.Learner.train_on`'s n episodes on the game g; returns (played, the decayed epsilon)."""
    q, me, alpha = engine.values(table), params.side, params.alpha
    for played in range(n):
        if not engine.room(table, params.per_game):
            return played, epsilon
        epsilon *= params.epsilon_decay_per_game
        pos = engine.start(g)
        if me == 1:  # the opponent opens
            pos, _, _ = engine.play(g, pos, engine.opponent_move(g, opponent, pos, 0), 0)
        prev, prev_move, result = -1, -1, engine.DRAW
        while True:
            here = engine.row(table, pos)
            move, _ = engine.epsilon_greedy(g, q[here], pos, epsilon)
            pos, won, over = engine.play(g, pos, move, me)
            if over:  # our move won (1) or drew (0): certain
                q[here, move] = 1.0 if won else 0.0
                result = me if won else engine.DRAW
            else:
                pos, won, over = engine.play(g, pos, engine.opponent_move(g, opponent, pos, 1 - me), 1 - me)
                if over:  # the opponent's reply won (-1) or drew (0): one sample of it
                    q[here, move] += alpha * ((-1.0 if won else 0.0) - q[here, move])
                    result = 1 - me if won else engine.DRAW
            if prev >= 0:
                q[prev, prev_move] += alpha * (q[here, move] - q[prev, prev_move])
            if over:
                break
            prev, prev_move = here, move
        tally[result] += 1
    return n, epsilon


class Learner(tabular.Learner):
    TABLE_NAME = "q"

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.q = np.zeros((game.N_CODES, 9)) if self.dense() else sparse.Table(run.m * run.n, 0.0)
        self.epsilon = knobs.epsilon
        self.params = Params(run.player - 1, len(depths(run)), *astuple(knobs))

    @classmethod
    def check_run(cls, knobs: Config, run: RunConfig) -> None:
        if run.bigger_board:
            sparse.check_fits(run, "q_table", depths(run), run.m * run.n)

    def train_on(self, table, episodes: int, tally) -> int:
        played, self.epsilon = train(self.game, table, self.opponent, self.epsilon, episodes, self.params,
                                     tally)
        return played

    def exploration(self) -> float:
        return float(self.epsilon)  # the last game's: epsilon decays before every game

    def agent(self) -> Agent:
        return Agent(self.q.copy(), self.run.game)


ALGORITHM = base.Algorithm("q_table", Config, Learner, Agent, self_play=False)
