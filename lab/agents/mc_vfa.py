"""Monte Carlo afterstate values fitted by a numpy network (seed 000).

The agent judges a move by the afterstate it produces (the board right after its move). A net
of `layers` x `neurons` tanh units maps the 9 cells of an afterstate to a value in (-1, 1) from the
agent's side. Between updates the policy is fixed, so the `episodes_per_update` episodes of one
iteration are played as one batch by the compiled game kernel. After them every afterstate the
agent produced gets the every-visit Monte Carlo mean of its returns (G = r + gamma G, reward +1 win,
-1 loss, 0 otherwise) and the net takes one full-batch gradient step towards those means.
"""

from dataclasses import dataclass

import numpy as np

from lab import game, opponents
from lab.agents import base
from lab.config import Knobs, RunConfig, require
from lab.nets import MLP

SELF_PLAY = False


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
    epsilon_decay: float
    """epsilon is multiplied by this after every update"""
    alpha_decay: float
    """alpha is multiplied by this after every update"""

    def check(self):
        require(0 <= self.gamma <= 1, "gamma", self.gamma, "in [0, 1]")
        require(self.memory in ("clear", "keep"), "memory", self.memory, "'clear' or 'keep'")
        require(0 <= self.epsilon <= 1, "epsilon", self.epsilon, "in [0, 1]")
        for key in ("epsilon_decay", "alpha_decay"):
            require(0 < getattr(self, key) <= 1, key, getattr(self, key), "in (0, 1]")


class Agent(base.Agent):
    """Plays the move whose afterstate the net values most."""

    algorithm = "mc_vfa"

    def __init__(self, net: MLP, player: int):
        self.net = net
        self.player = player

    def scores(self, codes):
        after = game.AFTER[codes]
        legal = after >= 0
        # Positions share afterstates: value each distinct one once.
        unique, index = np.unique(after[legal], return_inverse=True)
        scores = np.full(after.shape, -np.inf, dtype=np.float32)
        scores[legal] = self.net(game.BOARDS[unique])[index, 0]
        return scores

    def arrays(self):
        return {**self.net.arrays(), "player": np.array(self.player)}

    @classmethod
    def from_arrays(cls, arrays):
        return cls(MLP.from_arrays(arrays), int(arrays["player"]))


class Learner:
    def __init__(self, cfg: Config, run: RunConfig):
        self.cfg, self.run = cfg, run
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.net = MLP([9] + [cfg.neurons] * cfg.layers + [1], self.rng)
        self.alpha, self.epsilon = cfg.alpha, cfg.epsilon
        self.opponent = opponents.table(run.opponent)
        self.side = 1 if run.player == 1 else -1
        # The positions where the agent moves; the afterstates it can produce from them.
        mover = game.TO_MOVE[game.DECISIONS] == self.side
        self.decisions = game.DECISIONS[mover]
        self.legal = game.LEGAL[self.decisions]
        self.after = np.where(self.legal, game.AFTER[self.decisions], 0)
        self.afterstates = np.unique(self.after[self.legal])
        self.explore = game.uniform_over(self.legal)
        self.moves = np.zeros((game.N_CODES, 9))
        self.return_sums = np.zeros(game.N_CODES)
        self.visits = np.zeros(game.N_CODES)

    def _move_table(self) -> np.ndarray:
        """The epsilon-greedy policy of the current net at every agent decision."""
        values = np.zeros(game.N_CODES, dtype=np.float32)
        values[self.afterstates] = self.net(game.BOARDS[self.afterstates])[:, 0]
        greedy = game.greedy(values[self.after], self.legal)
        self.moves[self.decisions] = greedy if self.epsilon == 0 else (
            (1 - self.epsilon) * greedy + self.epsilon * self.explore)
        return self.moves

    def iterate(self) -> np.ndarray:
        agent = self._move_table()
        seats = (agent, self.opponent) if self.side == 1 else (self.opponent, agent)
        trajectories, winners = game.play(self.run.episodes_per_update, *seats)

        # Every-visit Monte Carlo: the agent's k-th of K afterstates returns r * gamma^(K-1-k).
        mine = trajectories[:, (0 if self.side == 1 else 1) :: 2]
        played = mine >= 0
        steps_to_end = played.sum(axis=1, keepdims=True) - 1 - np.arange(mine.shape[1])
        returns = (self.side * winners)[:, None] * self.cfg.gamma ** steps_to_end
        self.return_sums += np.bincount(mine[played], returns[played], game.N_CODES)
        self.visits += np.bincount(mine[played], minlength=game.N_CODES)

        seen = np.flatnonzero(self.visits)
        self.net.fit_step(game.BOARDS[seen], self.return_sums[seen] / self.visits[seen], self.alpha)
        if self.cfg.memory == "clear":
            self.return_sums[seen] = 0.0
            self.visits[seen] = 0.0
        self.alpha *= self.cfg.alpha_decay
        self.epsilon *= self.cfg.epsilon_decay
        return game.tally(winners)

    def agent(self) -> Agent:
        return Agent(self.net, self.run.player)
