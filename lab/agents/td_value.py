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

`update=end_of_game` is write-up 003's own rule instead (the post's program; the book's is the
default, `update=td`): no step during the game; when it ends, every afterstate the side moved
into in that game, explored or greedy, gets +1/len(visited) if the side won and -1/len(visited)
otherwise (a draw counts as not winning, as in the post), len(visited) being the number of the
side's moves in the game. Finished positions keep their fixed values under both rules.

Positions where X just moved and positions where O just moved are disjoint, so one array from the
mover's view holds X's table and O's table side by side. Against a fixed opponent only the
agent's seat learns; in self-play (opponent=self) each side is a learner with its own afterstates
in the same array, and the trained agent plays either seat. Updates happen every step, so the
episodes run one after another in a compiled loop, `train`; `reference_train` is the same loop in
plain Python.
"""

from dataclasses import dataclass
from typing import NamedTuple

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
    """the fixed value of a drawn final position to both sides (the book: 0, a non-win)"""
    update: str
    """td: the book's TD step after greedy moves; end_of_game: write-up 003's +-1/len(visited) at the end"""

    def check(self):
        require(0 <= self.draw_value <= 1, "draw_value", self.draw_value, "in [0, 1]")
        require(self.update in UPDATES, "update", self.update, f"one of {', '.join(UPDATES)}")


UPDATES = ("td", "end_of_game")
"""The values of the `update` knob (see the module doc)."""


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
    side can only win with its own move)."""
    return np.where(game.TERMINAL, np.where(game.WINNER != 0, 1.0, draw_value), 0.5)


class Params(NamedTuple):
    """The numbers `train` uses, as one argument (by name: no two can be swapped)."""

    x_learns: bool
    """X plays epsilon-greedy on the values and learns (else X plays the opponent's move table)"""
    o_learns: bool
    """the same for O (both in self-play)"""
    alpha: float
    """TD step size"""
    epsilon: float
    """probability of an exploratory (random) move"""
    draw_value: float
    """the value of a drawn final position"""
    end_of_game: bool
    """write-up 003's rule (update=end_of_game) instead of TD steps"""

    @classmethod
    def of(cls, knobs: Config, run: RunConfig) -> "Params":
        return cls(1 in run.seats, 2 in run.seats, knobs.alpha, knobs.epsilon, knobs.draw_value,
                   knobs.update == "end_of_game")


@njit(cache=True)
def train(v, opponent_moves, n, params, rules):
    """Play n episodes; a side that learns plays epsilon-greedy on v and updates it, a side that
    does not plays move table opponent_moves. Returns the results [X wins, O wins, draws]."""
    after, terminal, winner, to_move, legal = (rules.after, rules.terminal, rules.winner,
                                               rules.to_move, rules.legal)
    alpha = params.alpha
    tally = np.zeros(3, dtype=np.int64)
    move_values = np.empty(9)
    last = np.empty(2, dtype=np.int64)  # each side's latest afterstate (index 0 X, 1 O)
    visited = np.empty((2, 5), dtype=np.int64)  # end_of_game: each side's afterstates this game
    count = np.zeros(2, dtype=np.int64)
    for _ in range(n):
        last[:] = -1
        count[:] = 0
        code = 0
        while True:
            i = 0 if to_move[code] == 1 else 1
            if not (params.x_learns if i == 0 else params.o_learns):
                code = after[code, game.sample_move(opponent_moves, code)]
            else:
                # game.epsilon_greedy's draws, written out: handing it this buffer costs ~10%
                if np.random.random() < params.epsilon:  # explore: a random move, no update
                    nxt = after[code, game.random_move(legal[code])]
                else:
                    for m in range(9):
                        move_values[m] = v[after[code, m]] if legal[code, m] else 0.0
                    nxt = after[code, game.best_move(move_values, legal[code])]
                    if last[i] >= 0 and not params.end_of_game:  # a greedy move: TD step
                        v[last[i]] += alpha * (v[nxt] - v[last[i]])
                last[i] = nxt
                visited[i, count[i]] = nxt
                count[i] += 1
                code = nxt
            if terminal[code]:
                break
        if params.end_of_game:  # write-up 003: +-1/len(visited) on every afterstate of the game
            for j in range(2):
                if count[j] > 0:
                    step = (1.0 if winner[code] == (1 if j == 0 else -1) else -1.0) / count[j]
                    for k in range(count[j]):
                        if not terminal[visited[j, k]]:
                            v[visited[j, k]] += step
        else:
            # The side that did not make the final move learns what its last afterstate led to.
            other = 1 - i
            if last[other] >= 0 and (params.x_learns if other == 0 else params.o_learns):
                result = 0.0 if winner[code] != 0 else params.draw_value
                v[last[other]] += alpha * (result - v[last[other]])
        game.count_result(tally, winner[code])
    return tally


def reference_train(v, opponent_moves, n, params, stream: game.Stream):
    """`train` in plain Python, drawing from `stream` what the kernel draws from numba's random
    stream: from the same seed it plays the same games and leaves the same values and tally."""
    learns = {1: params.x_learns, -1: params.o_learns}  # by side: X 1, O -1
    winners = []
    for _ in range(n):
        last = {1: None, -1: None}  # each side's latest afterstate
        visited = {1: [], -1: []}  # each side's afterstates in this game (end_of_game)
        code = game.EMPTY
        while not game.TERMINAL[code]:
            mover = game.TO_MOVE[code]
            if not learns[mover]:
                code = game.AFTER[code, stream.sample_move(opponent_moves[code])]
                continue
            legal = game.LEGAL[code]
            move, explored = stream.epsilon_greedy(np.where(legal, v[game.AFTER[code]], 0.0), legal,
                                                   params.epsilon)
            code = game.AFTER[code, move]
            if not params.end_of_game and not explored and last[mover] is not None:
                v[last[mover]] += params.alpha * (v[code] - v[last[mover]])  # TD, greedy moves only
            last[mover] = code
            visited[mover].append(code)
        if params.end_of_game:  # write-up 003: every afterstate of the game moves by +-1/len(visited)
            for side, states in visited.items():
                won = game.WINNER[code] == side
                for state in states:
                    if not game.TERMINAL[state]:
                        v[state] += (1.0 if won else -1.0) / len(states)
        else:
            other = -mover  # did not make the final move: its last afterstate led to a loss or draw
            if learns[other] and last[other] is not None:
                result = 0.0 if game.WINNER[code] != 0 else params.draw_value
                v[last[other]] += params.alpha * (result - v[last[other]])
        winners.append(game.WINNER[code])
    return game.tally(np.array(winners))


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.values = initial_values(knobs.draw_value)
        self.params = Params.of(knobs, run)
        self.opponent = opponents.for_training(run.opponent)

    def iterate(self) -> np.ndarray:
        return train(self.values, self.opponent, self.run.episodes_per_update, self.params,
                     game.RULES)

    def agent(self) -> Agent:
        return Agent(self.values.copy())


ALGORITHM = base.Algorithm("td_value", Config, Learner, Agent, self_play=True)
