"""Sutton and Barto's afterstate value table (write-up 003; their book, chapter 1).

V(s) estimates the chance that the side that just moved into position s goes on to win. Every
position starts at 0.5; finished games are fixed at 1 for the side that won with its move and at
`draw_value` for a full board without a winner (the book counts a draw like a loss, 0, since it
estimates the probability of winning; 0.5 makes a draw worth half a win). A learning side moves
epsilon-greedily: with probability epsilon a random move, otherwise the move to the afterstate of
highest value (ties at random). After each greedy move from afterstate s (the side's previous
one) to s', V(s) += alpha (V(s') - V(s)); an exploratory move updates nothing, so random moves do
not drag values down. When the opponent's move ends the game, the side's last afterstate moves
towards what that is worth to it: 0 for a loss, draw_value for a draw.

`update=end_of_game` is write-up 003's own rule (the post's program; `update=td`, the default, is
the book's): no step during the game; at its end every afterstate the side moved into, explored
or greedy, gets +1/len(visited) if the side won, else -1/len(visited) (a draw is not a win, as in
the post), len(visited) the side's moves in the game. Finished positions keep their values.

X's afterstates and O's are disjoint, so one array from the mover's view holds both tables.
Against a fixed opponent only the agent's seat learns; in self-play (opponent=self) both sides
learn, and the trained agent plays either seat. The episodes run one after another in a compiled
loop, `train`, against lab.game.engine: the table has a value per board code on 3x3 (finished
ones at their fixed values), per unfinished afterstate a learning side moved into on bigger
boards (lab.game.sparse). tests/learner_references.py has the 3x3 loop in plain Python.
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
    """TD step size"""
    epsilon: float
    """probability of an exploratory (random) move"""
    draw_value: float
    """the fixed value of a drawn final position to both sides (the book: 0, a non-win)"""
    update: str
    """td: the book's TD step after greedy moves; end_of_game: write-up 003's +-1/len(visited) at the end"""

    def check(self):
        require(0 <= self.draw_value <= 1, "draw_value", self.draw_value, "in [0, 1]")
        require(self.update in UPDATES, "update", self.update, f"one of {', '.join(UPDATES)}")


UPDATES = ("td", "end_of_game")  # the values of the `update` knob (see the module doc)


class Agent(tabular.Agent):
    """Plays the move to the afterstate of highest value."""

    algorithm = "td_value"
    DENSE = "values"
    READING = tabular.Reading(afterstates=True, draw_value=0.0, members=1)  # 3x3's table holds draws' values


def initial_values(draw_value: float) -> np.ndarray:
    """0.5 everywhere except finished games: 1 for the mover's win, draw_value for a draw (a
    side can only win with its own move)."""
    return np.where(game.TERMINAL, np.where(game.WINNER != 0, 1.0, draw_value), 0.5)


Params = namedtuple("Params", ("x_learns", "o_learns", "per_game", "end_of_game", *Config.names()))
"""`train`'s numbers, read by name: whether X and O learn (both in self-play; else that side plays
the opponent), the most afterstates one game adds to a table of visited positions, whether the
update is write-up 003's rule (end_of_game), then the knobs."""


def depths(run: RunConfig) -> range:
    """The numbers of stones of the learning sides' unfinished afterstates: the table's positions
    on a bigger board (X's after an odd number of moves, O's after an even one)."""
    first = 1 if 1 in run.seats else 2
    return range(first, run.m * run.n, 1 if len(run.seats) == 2 else 2)


@njit(cache=True)
def train(g, table, opponent, n, params, tally):
    """`tabular.Learner.train_on`'s n episodes on the game g: a side that learns plays
    epsilon-greedy on the table's afterstate values and updates them, the other `opponent`."""
    alpha, cells = params.alpha, engine.cells(g)
    scores = np.empty(cells)
    last = np.empty(2, dtype=np.int64)  # each side's latest unfinished afterstate's row, -1 none
    visited = np.empty((2, cells // 2 + 1), dtype=np.int64)  # end_of_game: each side's afterstates (-1 finished)
    count = np.zeros(2, dtype=np.int64)
    for played in range(n):
        if not engine.room(table, params.per_game):
            return played
        last[:] = -1
        count[:] = 0
        pos, ply, result = engine.start(g), 0, engine.DRAW
        while True:
            side = ply % 2
            ply += 1
            if not (params.x_learns if side == 0 else params.o_learns):
                pos, won, over = engine.play(g, pos, engine.opponent_move(g, opponent, pos, side), side)
            else:
                explored = np.random.random() < params.epsilon
                if explored:
                    cell = engine.random_cell(g, pos)
                else:  # the afterstates scored only for a greedy move: a bigger board's are lookups
                    engine.afterstate_scores(g, table, pos, side, params.draw_value, scores)
                    cell = engine.best_cell(g, scores, pos)
                pos, won, over = engine.play(g, pos, cell, side)
                if not explored and last[side] >= 0 and not params.end_of_game:  # a greedy move: TD step
                    engine.add(table, last[side], alpha * (scores[cell] - engine.read(table, last[side])))
                last[side] = -1 if over else engine.row(table, pos)
                visited[side, count[side]] = last[side]
                count[side] += 1
            if over:
                result = side if won else engine.DRAW
                break
        if params.end_of_game:  # write-up 003: +-1/len(visited) on every unfinished afterstate of the game
            for j in range(2):
                for k in range(count[j]):
                    if visited[j, k] >= 0:
                        engine.add(table, visited[j, k], (1.0 if result == j else -1.0) / count[j])
        else:  # the side that did not make the final move learns what its last afterstate led to
            other = 1 - side
            if last[other] >= 0:
                target = 0.0 if result != engine.DRAW else params.draw_value
                engine.add(table, last[other], alpha * (target - engine.read(table, last[other])))
        tally[result] += 1
    return n


class Learner(tabular.Learner):
    TABLE_NAME = "values"

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.values = initial_values(knobs.draw_value) if self.dense() else sparse.Table(1, 0.5)
        self.params = Params(1 in run.seats, 2 in run.seats, len(depths(run)), knobs.update == "end_of_game",
                             *astuple(knobs))

    @classmethod
    def check_run(cls, knobs: Config, run: RunConfig) -> None:
        if run.bigger_board:
            sparse.check_fits(run, "td_value", depths(run), 1)

    def train_on(self, table, episodes: int, tally) -> int:
        return train(self.game, table, self.opponent, episodes, self.params, tally)

    def agent(self) -> Agent:
        reading = tabular.Reading(True, self.knobs.draw_value, 1)
        return Agent(self.values.copy(), self.run.game, reading)


ALGORITHM = base.Algorithm("td_value", Config, Learner, Agent, self_play=True)
