"""Monte Carlo afterstate values fitted by a numpy network (seed 000).

The agent judges a move by the afterstate it produces (the board right after its move). A net
of `layers` x `neurons` tanh units maps the 9 cells of an afterstate to a value in (-1, 1) from the
agent's side. Between updates the policy is fixed, so the `episodes_per_update` episodes of one
iteration are played as one batch by a compiled kernel that values each afterstate the games
need once, when first needed, with the compiled forward pass of lab.nets (the games of one
iteration meet about a fifth of the agent's 2,700 afterstates; a numpy pass over all of them took
half of the iteration's time). After them every afterstate the agent produced gets the
every-visit Monte Carlo mean of its returns (G = r + gamma G, reward +1 win, -1 loss, 0 otherwise)
and the net takes one full-batch gradient step towards those means.
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

from lab import game, opponents
from lab.agents import base
from lab.knobs import Knobs, RunConfig, require
from lab.nets import MLP, first_outputs



@dataclass(frozen=True)
class Config(Knobs):
    layers: int
    """hidden layers of the value net"""
    neurons: int
    """units in each hidden layer"""
    alpha: float
    """gradient step size"""
    gamma: float
    """discount of the Monte Carlo returns"""
    memory: str
    """'clear': fit the last episodes_per_update episodes' afterstates, then forget them (the
    seed's program); 'keep': fit every afterstate seen so far (the seed's article)"""
    epsilon: float
    """probability of a random move at the first iteration (0 = greedy, as in the seed)"""
    epsilon_decay_per_update: float
    """epsilon is multiplied by this after every update"""
    alpha_decay_per_update: float
    """alpha is multiplied by this after every update"""

    def check(self):
        require(self.memory in ("clear", "keep"), "memory", self.memory, "'clear' or 'keep'")
        for key in ("epsilon_decay_per_update", "alpha_decay_per_update"):
            require(0 < getattr(self, key) <= 1, key, getattr(self, key), "in (0, 1]")


class Agent(base.NetAgent):
    """Plays the move whose afterstate the net values most."""

    algorithm = "mc_vfa"

    def scores(self, codes):
        after = game.AFTER[codes]
        legal = after >= 0
        # Positions share afterstates: value each distinct one once.
        unique, index = np.unique(after[legal], return_inverse=True)
        scores = np.full(after.shape, -np.inf, dtype=np.float32)
        scores[legal] = self.net(game.BOARDS[unique])[index, 0]
        return scores


@njit(cache=True)
def play(weights, biases, linear_output, side, epsilon, opponent_moves, random_moves, trajectories,
         winners, boards, after, terminal, winner, legal):
    """Play len(winners) games of the net's agent on `side` (1 X, -1 O), epsilon-greedy on the
    net's afterstate values with ties broken at random, against the move table opponent_moves.
    Fills trajectories and winners as game.play_games does."""
    values = np.empty(boards.shape[0], dtype=np.float32)
    known = np.zeros(boards.shape[0], dtype=np.bool_)
    missing = np.empty((9, boards.shape[1]), dtype=np.float32)
    scores = np.empty(9, dtype=np.float32)
    for g in range(winners.shape[0]):
        code = 0
        t = 0
        while True:
            if (t % 2 == 0) != (side == 1):
                move = game.sample_move(opponent_moves, code)
            elif epsilon > 0.0 and np.random.random() < epsilon:
                move = game.sample_move(random_moves, code)
            else:
                count = 0
                for m in range(9):
                    if legal[code, m] and not known[after[code, m]]:
                        missing[count] = boards[after[code, m]]
                        count += 1
                if count:
                    new_values = first_outputs(weights, biases, linear_output, missing[:count])
                    count = 0
                    for m in range(9):
                        if legal[code, m] and not known[after[code, m]]:
                            values[after[code, m]] = new_values[count]
                            known[after[code, m]] = True
                            count += 1
                for m in range(9):
                    scores[m] = values[after[code, m]] if legal[code, m] else 0.0
                move = game.best_move(scores, legal[code])
            code = after[code, move]
            trajectories[g, t] = code
            t += 1
            if terminal[code]:
                break
        trajectories[g, t:] = -1
        winners[g] = winner[code]


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.net = MLP([9] + [knobs.neurons] * knobs.layers + [1], self.rng)
        self.alpha, self.epsilon = knobs.alpha, knobs.epsilon
        self.opponent = opponents.table(run.opponent)
        self.explore = game.uniform_over(game.LEGAL)
        self.side = 1 if run.player == 1 else -1
        self.return_sums = np.zeros(game.N_CODES)
        self.visits = np.zeros(game.N_CODES)

    def iterate(self) -> np.ndarray:
        n = self.run.episodes_per_update
        trajectories, winners = np.empty((n, 9), dtype=np.int64), np.empty(n, dtype=np.int8)
        play(*self.net.compiled(), self.side, self.epsilon, self.opponent, self.explore,
             trajectories, winners, game.BOARDS, game.AFTER, game.TERMINAL, game.WINNER, game.LEGAL)

        # Every-visit Monte Carlo: the agent's k-th of K afterstates returns r * gamma^(K-1-k).
        mine = trajectories[:, (0 if self.side == 1 else 1) :: 2]
        played = mine >= 0
        steps_to_end = played.sum(axis=1, keepdims=True) - 1 - np.arange(mine.shape[1])
        returns = (self.side * winners)[:, None] * self.knobs.gamma ** steps_to_end
        self.return_sums += np.bincount(mine[played], returns[played], game.N_CODES)
        self.visits += np.bincount(mine[played], minlength=game.N_CODES)

        seen = np.flatnonzero(self.visits)
        self.net.fit_step(game.BOARDS[seen], self.return_sums[seen] / self.visits[seen], self.alpha)
        if self.knobs.memory == "clear":
            self.return_sums[seen] = 0.0
            self.visits[seen] = 0.0
        self.alpha *= self.knobs.alpha_decay_per_update
        self.epsilon *= self.knobs.epsilon_decay_per_update
        return game.tally(winners)

    def agent(self) -> Agent:
        return Agent(self.net.copy(), self.run.player)


ALGORITHM = base.Algorithm("mc_vfa", Config, Learner, Agent, self_play=False)
