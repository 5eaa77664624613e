"""Sutton and Barto's afterstate value table (seed 003; their book, chapter 1).

V(s) estimates the chance that the player who just moved into position s goes on to win. Every
position starts at 0.5; finished games are fixed at 1 for the player who won with their move and
at `draw_value` for a full board without a winner (the book counts a draw like a loss, 0, since it
estimates the probability of winning; 0.5 makes a draw worth half a win). The player moves
epsilon-greedily: with probability epsilon a random move, otherwise the move to the afterstate of
highest value (ties at random). After each greedy move from afterstate s (the player's previous
one) to s', V(s) += alpha (V(s') - V(s)); an exploratory move updates nothing, so random moves do
not drag values down. When the opponent's move ends the game, the player's last afterstate moves
towards what that is worth to it: 0 for a loss, draw_value for a draw.

Positions where X just moved and positions where O just moved are disjoint, so one array from the
mover's view holds X's table and O's table side by side. Against a fixed opponent only the
agent's seat learns; in self-play (opponent=self) each side is a learner with its own afterstates
in the same array, and the trained agent plays either seat. Updates happen every step, so the
episodes run one after another in a compiled loop.
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

from lab import game, opponents
from lab.agents import base
from lab.knobs import Knobs, RunConfig, require



@dataclass(frozen=True)
class Config(Knobs):
    alpha: float
    """TD step size"""
    epsilon: float
    """probability of an exploratory (random) move"""
    draw_value: float
    """the fixed value of a drawn final position to both players (the book: 0, a non-win)"""

    def check(self):
        require(0 <= self.draw_value <= 1, "draw_value", self.draw_value, "in [0, 1]")


class Agent(base.Agent):
    """Plays the move to the afterstate of highest value."""

    algorithm = "td_value"

    def __init__(self, values: np.ndarray):
        self.values = values

    def scores(self, codes):
        after = game.AFTER[codes]
        return np.where(after >= 0, self.values[np.maximum(after, 0)], -np.inf)

    def arrays(self):
        return {"values": self.values}

    @classmethod
    def from_arrays(cls, arrays):
        return cls(np.asarray(arrays["values"], dtype=float))


def initial_values(draw_value: float) -> np.ndarray:
    """0.5 everywhere except finished games: 1 for the mover's win, draw_value for a draw (a
    player can only win with their own move)."""
    return np.where(game.TERMINAL, np.where(game.WINNER != 0, 1.0, draw_value), 0.5)


@njit(cache=True)
def train(v, opponent_moves, random_moves, learner_x, learner_o, n, alpha, epsilon, draw_value,
          after, terminal, winner, to_move, legal, tally):
    """Play n episodes; the sides flagged as learners (learner_x, learner_o) play epsilon-greedy on
    v and update it, a non-learning side plays opponent_moves. Results go to tally
    ([X wins, O wins, draws])."""
    move_values = np.empty(9)
    last = np.empty(2, dtype=np.int64)  # each side's latest afterstate (index 0 X, 1 O)
    for _ in range(n):
        last[:] = -1
        code = 0
        while True:
            i = 0 if to_move[code] == 1 else 1
            if not (learner_x if i == 0 else learner_o):
                code = after[code, game.sample_move(opponent_moves, code)]
            else:
                if np.random.random() < epsilon:
                    nxt = after[code, game.sample_move(random_moves, code)]
                else:
                    for m in range(9):
                        move_values[m] = v[after[code, m]] if legal[code, m] else 0.0
                    nxt = after[code, game.best_move(move_values, legal[code])]
                    if last[i] >= 0:
                        v[last[i]] += alpha * (v[nxt] - v[last[i]])
                last[i] = nxt
                code = nxt
            if terminal[code]:
                break
        # The side that did not make the final move learns what its last afterstate led to.
        other = 1 - i
        if last[other] >= 0 and (learner_x if other == 0 else learner_o):
            result = 0.0 if winner[code] != 0 else draw_value
            v[last[other]] += alpha * (result - v[last[other]])
        tally[0 if winner[code] == 1 else 1 if winner[code] == -1 else 2] += 1


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.values = initial_values(knobs.draw_value)
        self_play = run.opponent == "self"
        self.learners = (self_play or run.player == 1, self_play or run.player == 2)
        # In self-play the opponent table is never consulted; any move table fills the argument.
        self.opponent = opponents.table("random" if self_play else run.opponent)

    def iterate(self) -> np.ndarray:
        tally = np.zeros(3, dtype=np.int64)
        train(self.values, self.opponent, opponents.table("random"), *self.learners,
              self.run.episodes_per_update, self.knobs.alpha, self.knobs.epsilon, self.knobs.draw_value,
              game.AFTER, game.TERMINAL, game.WINNER, game.TO_MOVE, game.LEGAL, tally)
        return tally

    def agent(self) -> Agent:
        return Agent(self.values.copy())


ALGORITHM = base.Algorithm("td_value", Config, Learner, Agent, self_play=True)
