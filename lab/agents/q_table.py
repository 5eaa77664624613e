"""Tabular Q learning by on-policy TD, epsilon-greedy with decay (write-up 001, first part).

The agent keeps Q(position, move) for its own positions in a (3^9, 9) array, every entry starting
at 0, and plays epsilon-greedy on it (ties broken at random). Rewards come only at the end: +1 when
the agent wins, -1 when it loses, 0 for a draw. Gamma is 1, and the update after each of the
agent's moves is the notebook's:

- its move wins: Q(board, move) = 1; its move fills the board: Q(board, move) = 0 (both certain);
- the opponent's reply ends the game: Q(board, move) moves a step alpha towards the result (-1 for
  a loss, 0 for a draw: the reply was chance, so one game is only evidence);
- in every case the previous (board, move) of the episode moves towards the current one:
  Q(prev) += alpha (Q(board, move) - Q(prev)), an on-policy (SARSA-like) TD step.

Epsilon is multiplied by epsilon_decay_per_game before every game (so, as in the notebook, the
first game already uses epsilon * epsilon_decay_per_game). The notebook plays X against a random
O; here the agent takes either seat against any fixed opponent. Updates happen every step, so the
episodes run one after another in a compiled loop, `train`; `reference_train` is the same loop in
plain Python.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, opponents
from lab.agents import base
from lab.knobs import Knobs, RunConfig, require, side


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


class Agent(base.QTableAgent):
    """Plays the move of highest Q; positions it never trained on score 0 (ties: any move)."""

    algorithm = "q_table"


class Params(NamedTuple):
    """The numbers `train` uses, as one argument (by name: no two can be swapped)."""

    side: int
    """the agent's mark: 1 (X, moves first) or -1 (O)"""
    alpha: float
    """TD step size"""
    epsilon_decay_per_game: float
    """epsilon is multiplied by this before every game"""

    @classmethod
    def of(cls, knobs: Config, run: RunConfig) -> "Params":
        return cls(side(run.player), knobs.alpha, knobs.epsilon_decay_per_game)


@njit(cache=True)
def train(q, epsilon, opponent_moves, n, params, rules):
    """Play n episodes of the agent learning q against move table opponent_moves. Returns the
    decayed epsilon and the results [X wins, O wins, draws]."""
    after, terminal, winner, legal = rules.after, rules.terminal, rules.winner, rules.legal
    side, alpha = params.side, params.alpha
    tally = np.zeros(3, dtype=np.int64)
    for _ in range(n):
        epsilon *= params.epsilon_decay_per_game
        code = 0
        if side == -1:  # the opponent opens
            code = after[code, game.sample_move(opponent_moves, code)]
        prev_code = -1
        prev_move = -1
        while True:
            move, _ = game.epsilon_greedy(q[code], legal[code], epsilon)
            nxt = after[code, move]
            if terminal[nxt]:
                q[code, move] = winner[nxt] * side  # our move won (1) or drew (0): certain
            else:
                nxt = after[nxt, game.sample_move(opponent_moves, nxt)]
                if terminal[nxt]:  # the opponent's reply won (-1) or drew (0): one sample of it
                    q[code, move] += alpha * (winner[nxt] * side - q[code, move])
            if prev_code >= 0:
                q[prev_code, prev_move] += alpha * (q[code, move] - q[prev_code, prev_move])
            if terminal[nxt]:
                break
            prev_code, prev_move = code, move
            code = nxt
        game.count_result(tally, winner[nxt])
    return epsilon, tally


def reference_train(q, epsilon, opponent_moves, n, params, stream: game.Stream):
    """`train` in plain Python, drawing from `stream` what the kernel draws from numba's random
    stream: from the same seed it plays the same games and leaves the same q, epsilon and tally."""
    winners = []
    for _ in range(n):
        epsilon *= params.epsilon_decay_per_game
        code = game.EMPTY
        if params.side == -1:  # the opponent opens
            code = game.AFTER[code, stream.sample_move(opponent_moves[code])]
        previous = None  # the agent's previous (position, move) in this game
        while True:
            move, _ = stream.epsilon_greedy(q[code], game.LEGAL[code], epsilon)
            after_move = game.AFTER[code, move]
            if game.TERMINAL[after_move]:  # the agent's move ended the game: a certain result
                q[code, move] = game.WINNER[after_move] * params.side
                end = after_move
            else:
                end = game.AFTER[after_move, stream.sample_move(opponent_moves[after_move])]
                if game.TERMINAL[end]:  # the opponent's reply ended it: one sample of the result
                    q[code, move] += params.alpha * (game.WINNER[end] * params.side - q[code, move])
            if previous is not None:  # on-policy TD: the previous pair moves towards this one
                q[previous] += params.alpha * (q[code, move] - q[previous])
            if game.TERMINAL[end]:
                break
            previous, code = (code, move), end
        winners.append(game.WINNER[end])
    return epsilon, game.tally(np.array(winners))


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.q = np.zeros((game.N_CODES, 9))
        self.epsilon = knobs.epsilon
        self.params = Params.of(knobs, run)
        self.opponent = opponents.for_training(run.opponent)

    def iterate(self) -> np.ndarray:
        self.epsilon, tally = train(self.q, self.epsilon, self.opponent,
                                    self.run.episodes_per_update, self.params, game.RULES)
        return tally

    def exploration(self) -> float:
        return float(self.epsilon)  # the last game's: epsilon decays before every game

    def agent(self) -> Agent:
        return Agent(self.q.copy())


ALGORITHM = base.Algorithm("q_table", Config, Learner, Agent, self_play=False)
