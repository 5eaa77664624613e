"""Monte Carlo afterstate values fitted by a numpy network (write-up 000).

The agent judges a move by the afterstate it produces (the board right after its move). A net
of `layers` x `neurons` tanh units maps the 9 cells of an afterstate to a value in (-1, 1) from the
agent's side. Between updates the policy is fixed, so the `episodes_per_update` episodes of one
iteration are played as one batch by a compiled kernel that values each afterstate the games
need once, when first needed, with the compiled forward pass of lab.nets (the games of one
iteration meet about a fifth of the agent's 2,700 afterstates; a numpy pass over all of them took
half of the iteration's time). After them every afterstate the agent produced gets the
every-visit Monte Carlo mean of its returns (G = r + gamma G, reward +1 win, `loss_reward` (-1)
loss, 0 otherwise; `targets`) and the net takes one full-batch gradient step towards those means.
`play_episodes` is the compiled batch of games; `reference_train` states the whole algorithm one
game at a time in plain Python (against a fixed opponent).

In self-play (`opponent=self`, as write-up 000 tried) each seat has its own net, both learning from
the same games: X's net plays in the compiled games as above, and O's, whose policy is just as
fixed until the update, plays as its epsilon-greedy move table of the iteration; after the games
each net takes its step towards the Monte Carlo means of its own seat's afterstates. The agent
holds both nets and plays either seat. (Write-up 000's other regime, an O net against a frozen X net,
is `opponent=PATH.npz` with an X checkpoint: lab.opponents.)
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, opponents
from lab.agents import base
from lab.knobs import Knobs, RunConfig, require, side
from lab.nets import MLP, forward


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
    """'clear': fit the last episodes_per_update episodes' afterstates, then forget them (the
    seed's program); 'keep': fit every afterstate seen so far (the write-up's article)"""
    epsilon: float
    """probability of a random move at the first iteration (0 = greedy, as in the seed)"""
    epsilon_decay_per_update: float
    """epsilon is multiplied by this after every update"""
    alpha_decay_per_update: float
    """alpha is multiplied by this after every update"""
    precision: str
    """the value net's numbers: float32 or float64 (a saturated float32 net ties every move)"""
    symmetry: bool
    """fold the board's 8 symmetries: the net sees each afterstate as its canonical image
    (lab.game.CANONICAL), so symmetric afterstates share one input and one Monte Carlo mean"""

    def check(self):
        require(self.layers >= 1, "layers", self.layers, "a positive integer")
        require(self.loss_reward < 0, "loss_reward", self.loss_reward,
                "negative (a loss is worse than a draw)")
        require(self.memory in ("clear", "keep"), "memory", self.memory, "'clear' or 'keep'")
        require(self.precision in PRECISIONS, "precision", self.precision,
                f"one of {', '.join(PRECISIONS)}")
        for key in ("epsilon_decay_per_update", "alpha_decay_per_update"):
            require(0 < getattr(self, key) <= 1, key, getattr(self, key), "in (0, 1]")


def targets(results, loss_reward: float):
    """The reward the net fits for each game's result from the agent's side (+1 won, 0 draw, -1
    lost): 1, 0 or loss_reward, divided by -loss_reward when that is below -1 (a tanh output
    cannot reach below -1; scaling all rewards alike keeps the order of the moves' values)."""
    return np.where(np.asarray(results) < 0, loss_reward, results) / max(1.0, -loss_reward)


PRECISIONS = {"float32": np.float32, "float64": np.float64}
"""The values of the `precision` knob and the number types they give the net."""

FOLD = np.append(game.CANONICAL, game.N_CODES)
"""FOLD[c]: the canonical code of afterstate c; FOLD[-1], where an illegal move's -1 lands, is
N_CODES (an extra last entry of the arrays over codes)."""
FOLDED_RULES = game.RULES._replace(boards=game.BOARDS[game.CANONICAL])
"""The rules with each board's cells replaced by its canonical image's: `play_episodes` reads
rules.boards only as the net's inputs."""


class Agent(base.NetAgent):
    """Plays the move whose afterstate the net values most. Trained in self-play it holds a net
    per seat, `net` for seat `player` and `other` for the other seat, and plays either seat."""

    algorithm = "mc_vfa"

    def scores(self, codes):
        if self.other is None:
            return self.net_scores(self.net, codes)
        codes = np.asarray(codes)
        mine = game.TO_MOVE[codes] == side(self.player)
        out = np.empty((len(codes), 9), dtype=self.net.weights[0].dtype)
        out[mine] = self.net_scores(self.net, codes[mine])
        out[~mine] = self.net_scores(self.other, codes[~mine])
        return out

    def net_scores(self, net: MLP, codes):
        """(n, 9) values of each move's afterstate at `codes` by `net`, -inf where illegal."""
        after = np.take(game.AFTER, codes, axis=0)  # np.take: row gathers 3-5x faster than []
        if self.symmetry:
            after = np.take(FOLD, after)
        # Positions share afterstates: value each distinct one once, all in one batch (found by a
        # mask, not np.unique's sort: the same codes, 0.4 ms less). The arrays over codes have an
        # extra last entry, where the -1 of an illegal move lands: it scores -inf.
        distinct = np.zeros(game.N_CODES + 1, dtype=bool)
        distinct[after] = True
        unique = np.flatnonzero(distinct[:-1])
        values = np.full(game.N_CODES + 1, -np.inf, dtype=net.weights[0].dtype)
        values[unique] = self.outputs(np.take(game.BOARDS, unique, axis=0), net)
        return values[after]


class Params(NamedTuple):
    """The numbers `play_episodes` uses, as one argument (by name)."""

    side: int
    """the agent's mark: 1 (X, moves first) or -1 (O)"""
    epsilon: float
    """probability of a random move in this iteration's episodes"""


@njit(cache=True)
def play_episodes(net, n, opponent_moves, random_moves, params, rules):
    """Play n episodes of the agent (the CompiledNet `net`) against move table opponent_moves: the
    agent plays epsilon-greedy on the net's afterstate values, ties broken at random, its random
    moves drawn from random_moves (the random opponent's table). Returns (trajectories, winners)
    as lab.game.play does.

    Each afterstate is valued once, when a game first needs it, and remembered for the rest of
    the batch (the policy is fixed until the update)."""
    after, terminal, winner, legal, boards = (rules.after, rules.terminal, rules.winner,
                                              rules.legal, rules.boards)
    weights, biases, hidden, output = net
    side, epsilon = params.side, params.epsilon
    trajectories = np.empty((n, 9), dtype=np.int64)
    winners = np.empty(n, dtype=np.int8)
    dtype = weights[0].dtype  # the net's precision: float32 or float64
    values = np.empty(boards.shape[0], dtype=dtype)
    known = np.zeros(boards.shape[0], dtype=np.bool_)
    missing = np.empty((9, boards.shape[1]), dtype=dtype)
    scores = np.empty(9, dtype=dtype)
    for g in range(n):
        code = 0
        t = 0
        while True:
            if (t % 2 == 0) != (side == 1):
                move = game.sample_move(opponent_moves, code)
            # lab.engine.epsilon_greedy's choice and draws, except that epsilon 0 (the seed's) draws
            # nothing and the net values afterstates only for greedy moves (and sample_move on
            # the random table keeps this loop ~2% faster than game.random_move)
            elif epsilon > 0.0 and np.random.random() < epsilon:
                move = game.sample_move(random_moves, code)
            else:
                count = 0  # value the afterstates not valued yet, in one pass of the net
                for m in range(9):
                    if legal[code, m] and not known[after[code, m]]:
                        missing[count] = boards[after[code, m]]
                        count += 1
                if count:
                    new_values = forward(weights, biases, hidden, output, missing[:count])[:, 0]
                    count = 0
                    for m in range(9):
                        if legal[code, m] and not known[after[code, m]]:
                            values[after[code, m]] = new_values[count]
                            known[after[code, m]] = True
                            count += 1
                for m in range(9):
                    scores[m] = values[after[code, m]] if legal[code, m] else 0.0
                move = game.best_move(scores, legal, code, 0)
            code = after[code, move]
            trajectories[g, t] = code
            t += 1
            if terminal[code]:
                break
        trajectories[g, t:] = -1
        winners[g] = winner[code]
    return trajectories, winners


def reference_train(knobs: Config, run: RunConfig, iterations: int) -> MLP:
    """The Learner's algorithm as plainly as possible: one game at a time in Python, the net asked
    about each decision's afterstates, returns G = r + gamma G walked back through the game,
    running means with step 1/N, one full-batch gradient step per iteration. Returns the net.

    It starts from the Learner's net (same seed) but draws its games from numpy's stream, not the
    kernel's, so the two agree in distribution, not game by game: the tests compare what they
    learn across seeds."""
    rng = np.random.default_rng(run.seed)
    net = MLP([9] + [knobs.neurons] * knobs.layers + [1], rng, dtype=PRECISIONS[knobs.precision])
    opponent, me = opponents.table(run.opponent), side(run.player)
    alpha, epsilon = knobs.alpha, knobs.epsilon
    fold = FOLD if knobs.symmetry else np.arange(game.N_CODES)
    means, counts = {}, {}  # per afterstate: the mean of its returns, their number
    for _ in range(iterations):
        for _ in range(run.episodes_per_update):
            code, afterstates = game.EMPTY, []
            while not game.TERMINAL[code]:
                moves = np.flatnonzero(game.LEGAL[code])
                if game.TO_MOVE[code] != me:
                    move = rng.choice(9, p=opponent[code])
                elif epsilon > 0 and rng.random() < epsilon:
                    move = rng.choice(moves)
                else:
                    values = net(game.BOARDS[fold[game.AFTER[code, moves]]])[:, 0]
                    move = rng.choice(moves[values == values.max()])
                code = game.AFTER[code, move]
                if game.TO_MOVE[code] != me:  # the agent just moved: an afterstate of its own
                    afterstates.append(fold[code])
            reward, g = targets(me * game.WINNER[code], knobs.loss_reward), 0.0
            for k, afterstate in enumerate(reversed(afterstates)):
                g = (reward if k == 0 else 0.0) + knobs.gamma * g
                counts[afterstate] = counts.get(afterstate, 0) + 1
                mean = means.get(afterstate, 0.0)
                means[afterstate] = mean + (g - mean) / counts[afterstate]
        seen = sorted(means)
        net.fit_step(game.BOARDS[seen], np.array([means[c] for c in seen]), alpha)
        if knobs.memory == "clear":
            means, counts = {}, {}
        alpha *= knobs.alpha_decay_per_update
        epsilon *= knobs.epsilon_decay_per_update
    return net


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        # A net per seat it learns in: one against a fixed opponent, X's then O's in self-play.
        self.nets = {seat: MLP([9] + [knobs.neurons] * knobs.layers + [1], self.rng,
                               dtype=PRECISIONS[knobs.precision]) for seat in run.seats}
        self.net = self.nets[run.seats[0]]
        self.alpha, self.epsilon = knobs.alpha, knobs.epsilon
        self.opponent = opponents.for_training(run.opponent)
        self.rules = FOLDED_RULES if knobs.symmetry else game.RULES
        self.rewards = targets(np.array([-1, 0, 1]), knobs.loss_reward)  # by result + 1: one lookup an update
        self.return_sums = {seat: np.zeros(game.N_CODES) for seat in run.seats}
        self.visits = {seat: np.zeros(game.N_CODES) for seat in run.seats}

    def iterate(self) -> np.ndarray:
        seat = self.run.seats[0]
        opponent = self.opponent if len(self.run.seats) == 1 else self._o_policy()
        trajectories, winners = play_episodes(self.nets[seat].compiled(),
                                              self.run.episodes_per_update, opponent,
                                              opponents.table("random"),
                                              Params(side(seat), self.epsilon), self.rules)
        for seat in self.run.seats:
            self._fit(seat, trajectories, winners)
        self.alpha *= self.knobs.alpha_decay_per_update
        self.played_epsilon = self.epsilon
        self.epsilon *= self.knobs.epsilon_decay_per_update
        return game.tally(winners)

    def _o_policy(self) -> np.ndarray:
        """Self-play: O's net as the move table of this iteration (its policy is fixed until the
        update): epsilon-greedy on its afterstate values, tied best moves sharing. X's net plays
        in the compiled games as the agent does against a fixed opponent."""
        greedy = Agent(self.nets[2], 2, symmetry=self.knobs.symmetry).move_table()
        return (1 - self.epsilon) * greedy + self.epsilon * opponents.table("random")

    def _fit(self, seat: int, trajectories, winners) -> None:
        """Every-visit Monte Carlo for the net of `seat`: its k-th of K afterstates in a game
        returns r * gamma^(K-1-k), r its result's target; one full-batch step towards the means."""
        sums, visits = self.return_sums[seat], self.visits[seat]
        mine = trajectories[:, seat - 1 :: 2]  # the columns of the seat's moves
        played = mine >= 0
        steps_to_end = played.sum(axis=1, keepdims=True) - 1 - np.arange(mine.shape[1])
        # gamma^k as products, not numpy's power (CPU-specific code): the same bits everywhere
        discounts = np.cumprod(np.r_[1.0, np.full(mine.shape[1], self.knobs.gamma)])
        rewards = self.rewards[side(seat) * winners + 1]
        returns = rewards[:, None] * discounts[np.maximum(steps_to_end, 0)]
        afterstates = mine[played]
        if self.knobs.symmetry:
            afterstates = FOLD[afterstates]
        sums += np.bincount(afterstates, returns[played], game.N_CODES)
        visits += np.bincount(afterstates, minlength=game.N_CODES)

        seen = np.flatnonzero(visits)
        self.nets[seat].fit_step(game.BOARDS[seen], sums[seen] / visits[seen], self.alpha)
        if self.knobs.memory == "clear":
            sums[seen] = 0.0
            visits[seen] = 0.0

    def exploration(self) -> float:
        return float(self.played_epsilon)

    def agent(self) -> Agent:
        if len(self.run.seats) == 2:
            return Agent(self.nets[1].copy(), 1, self.nets[2].copy(), self.knobs.symmetry)
        return Agent(self.net.copy(), self.run.player, symmetry=self.knobs.symmetry)


ALGORITHM = base.Algorithm("mc_vfa", Config, Learner, Agent, self_play=True)
