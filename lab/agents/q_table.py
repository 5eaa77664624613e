"""Tabular Q learning by on-policy TD, epsilon-greedy with decay (seed 001, first part).

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
first game already uses epsilon * epsilon_decay_per_game). The notebook plays X against a random O; here the agent
takes either seat against any fixed opponent. Updates happen every step, so the episodes run one
after another in a compiled loop.
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


@njit(cache=True)
def train(q, opponent_moves, random_moves, side, n, alpha, epsilon, epsilon_decay,
          after, terminal, winner, legal, tally):
    """Play n episodes of the agent (seat `side`: 1 X, -1 O) learning q; count results in tally
    ([X wins, O wins, draws]). Returns the decayed epsilon."""
    for _ in range(n):
        epsilon *= epsilon_decay
        code = 0
        if side == -1:  # the opponent opens
            code = after[code, game.sample_move(opponent_moves, code)]
        prev_code = -1
        prev_move = -1
        while True:
            if np.random.random() < epsilon:
                move = game.sample_move(random_moves, code)
            else:
                move = game.best_move(q[code], legal[code])
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
        tally[0 if winner[nxt] == 1 else 1 if winner[nxt] == -1 else 2] += 1
    return epsilon


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.q = np.zeros((game.N_CODES, 9))
        self.epsilon = knobs.epsilon
        self.side = 1 if run.player == 1 else -1
        self.opponent = opponents.table(run.opponent)

    def iterate(self) -> np.ndarray:
        tally = np.zeros(3, dtype=np.int64)
        self.epsilon = train(
            self.q, self.opponent, opponents.table("random"), self.side,
            self.run.episodes_per_update, self.knobs.alpha, self.epsilon, self.knobs.epsilon_decay_per_game,
            game.AFTER, game.TERMINAL, game.WINNER, game.LEGAL, tally)
        return tally

    def agent(self) -> Agent:
        return Agent(self.q.copy())


ALGORITHM = base.Algorithm("q_table", Config, Learner, Agent, self_play=False)
