"""Monte Carlo afterstate values fitted by a numpy network (write-up 000), on every m,n,k board.

The agent judges a move by its afterstate (the board right after it): a net of `layers` x
`neurons` tanh units maps an afterstate's cells (+1 X, -1 O, 0 empty) to a value in (-1, 1) for
the agent. The policy is fixed between updates, so an iteration's `episodes_per_update` episodes
are one batch of compiled games (lab.agents.net_games); on 3x3 each afterstate is valued once,
when first needed, and remembered for the batch (its games meet about a fifth of the agent's
2,700 afterstates). Then every afterstate the agent produced gets the every-visit Monte Carlo
mean of its returns (G = r + gamma G, reward +1 win, `loss_reward` loss, 0 draw; `targets`), and
the net takes one full-batch gradient step towards those means. tests/learner_references.py
states the algorithm on 3x3 one game at a time in plain Python.

In self-play (`opponent=self`, as write-up 000 tried) each seat has its own net, playing its
side epsilon-greedy and fitting its own seat's afterstates; the agent holds both nets.
(Write-up 000's other regime, an O net against a frozen X net, is `opponent=PATH.npz` with an X
checkpoint on 3x3: lab.game.opponents.)
"""

from dataclasses import dataclass
import numpy as np

from lab import game
from lab.game import engine
from lab.agents import base, net_games
from lab.knobs import Knobs, RunConfig, require


@dataclass(frozen=True)
class Config(Knobs):
    ADDED = {"loss_reward": -1.0}  # a run at -1 keeps the run id it had before the knob

    layers: int
    """hidden layers of the value net"""
    neurons: int
    """units in each hidden layer"""
    alpha: float
    """gradient step size"""
    gamma: float
    """discount of the Monte Carlo returns"""
    loss_reward: float
    """reward of a lost game (a win is +1, a draw 0); below -1 the agent gives up some wins to lose
    less, and the net fits the returns divided by -loss_reward, inside its tanh output's (-1, 1)
    (at -1 left out of the run id and the results)"""
    memory: str
    """'clear': fit each update's afterstates, then forget them (the seed's); 'keep': all seen so far"""
    epsilon: float
    """probability of a random move at the first iteration (0 = greedy, as in the seed)"""
    epsilon_decay_per_update: float
    """epsilon is multiplied by this after every update"""
    alpha_decay_per_update: float
    """alpha is multiplied by this after every update"""
    precision: str
    """the value net's numbers: float32 or float64 (a saturated float32 net ties every move)"""
    symmetry: bool
    """fold the board's symmetries (8 of a square, 4 of a rectangle): symmetric afterstates share one net
    input and one Monte Carlo mean"""

    def check(self):
        require(self.layers >= 1, "layers", self.layers, "a positive integer")
        require(self.loss_reward < 0, "loss_reward", self.loss_reward,
                "negative (a loss is worse than a draw)")
        require(self.memory in ("clear", "keep"), "memory", self.memory, "'clear' or 'keep'")
        require(self.precision in PRECISIONS, "precision", self.precision, f"one of {', '.join(PRECISIONS)}")
        for key in ("epsilon_decay_per_update", "alpha_decay_per_update"):
            require(0 < getattr(self, key) <= 1, key, getattr(self, key), "in (0, 1]")


def targets(results, loss_reward: float):
    """The reward the net fits for each game's result from the agent's side (+1 won, 0 draw, -1
    lost): 1, 0 or loss_reward, divided by -loss_reward below -1 (a tanh output stays above -1)."""
    return np.where(np.asarray(results) < 0, loss_reward, results) / max(1.0, -loss_reward)


PRECISIONS = {"float32": np.float32, "float64": np.float64}  # the `precision` knob's values

FOLD = np.append(game.CANONICAL, game.N_CODES)
"""FOLD[c]: the canonical code of afterstate c; FOLD[-1], where an illegal move's -1 lands, is
N_CODES (an extra last entry of the arrays over codes)."""


class Agent(net_games.Agent):
    """Plays the move whose afterstate the net values most."""

    algorithm = "mc_vfa"
    AFTERSTATES = True

    def seat_scores(self, seat: int, codes):
        """3x3: (n, 9) values of each move's afterstate by seat `seat`'s net, -inf where illegal."""
        net = self.seat_net(seat)
        after = np.take(game.AFTER, codes, axis=0)  # np.take: row gathers 3-5x faster than []
        if self.symmetry:
            after = np.take(FOLD, after)
        # Value each distinct afterstate once, in one batch (a mask: np.unique's sort costs 0.4 ms
        # more); the -1 of an illegal move lands on the extra last entry (FOLD), which scores -inf.
        distinct = np.zeros(game.N_CODES + 1, dtype=bool)
        distinct[after] = True
        unique = np.flatnonzero(distinct[:-1])
        values = np.full(game.N_CODES + 1, -np.inf, dtype=net.weights[0].dtype)
        values[unique] = net(np.take(game.BOARDS, unique, axis=0))[:, 0]
        return values[after]

    def board_scores(self, seat, positions):
        """Bigger boards: the values seat `seat`'s net gives the position after each cell."""
        net, cells = self.seat_net(seat), self.board.m * self.board.n
        after = np.repeat(positions, cells, axis=0)
        after[:, seat - 1] |= np.tile(np.uint64(1) << np.arange(cells, dtype=np.uint64), len(positions))
        if self.symmetry:
            after = engine.canonical(self.board, after)
        return net(engine.inputs(self.board, after, net.weights[0].dtype))[:, 0].reshape(len(positions), cells)


class Learner(net_games.Learner):
    AGENT = Agent

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        self.make_nets(run.m * run.n, 1, self.rng, dtype=PRECISIONS[knobs.precision])
        self.alpha, self.epsilon = knobs.alpha, knobs.epsilon
        self.rewards = targets(np.array([-1, 0, 1]), knobs.loss_reward)  # by result + 1: one lookup an update
        self.kept = {seat: None for seat in run.seats}
        """memory=keep: per seat, the afterstates seen so far (engine.distinct's order), the sums of
        their returns and their visits"""

    def iterate(self) -> np.ndarray:
        positions, _, plies, results = self.play(self.epsilon)
        for seat in self.run.seats:
            self._fit(seat, positions, plies, results)
        self.alpha *= self.knobs.alpha_decay_per_update
        self.epsilon *= self.knobs.epsilon_decay_per_update
        return np.bincount(results, minlength=3)

    def _fit(self, seat: int, positions, plies, results) -> None:
        """Every-visit Monte Carlo for seat `seat`'s net (the module doc): one full-batch step."""
        columns = np.arange(seat - 1, positions.shape[1], 2)  # the plies of the seat's moves
        played = columns[None, :] < plies[:, None]
        steps_to_end = played.sum(axis=1, keepdims=True) - 1 - np.arange(len(columns))
        # gamma^k as products, not numpy's power (CPU-specific code): the same bits everywhere
        discounts = np.cumprod(np.r_[1.0, np.full(len(columns), self.knobs.gamma)])
        result = np.where(results == seat - 1, 1, np.where(results == engine.DRAW, 0, -1))
        returns = self.rewards[result + 1][:, None] * discounts[np.maximum(steps_to_end, 0)]
        afterstates = positions[:, columns][played]
        if self.knobs.symmetry:
            afterstates = engine.canonical(self.game, afterstates)
        seen, inverse = engine.distinct(self.game, afterstates)
        sums = np.bincount(inverse, returns[played], len(seen))
        visits = np.bincount(inverse, minlength=len(seen)).astype(float)
        if self.knobs.memory == "keep":
            seen, sums, visits = self.kept[seat] = self._remember(self.kept[seat], seen, sums, visits)
        net = self.nets[seat]
        net.fit_step(engine.inputs(self.game, seen, net.weights[0].dtype), sums / visits, self.alpha)

    def _remember(self, kept, seen, sums, visits):
        """The afterstates kept so far and these, each once, with their sums and visits added."""
        if kept is None:
            return seen, sums, visits
        old, old_sums, old_visits = kept
        both, inverse = engine.distinct(self.game, np.concatenate([old, seen]))
        sums, visits = (np.bincount(inverse, np.concatenate(pair), len(both))
                        for pair in ((old_sums, sums), (old_visits, visits)))
        return both, sums, visits


ALGORITHM = base.Algorithm("mc_vfa", Config, Learner, Agent, self_play=True)
