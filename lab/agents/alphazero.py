"""AlphaZero: a policy + value net guiding PUCT search, trained on its own search (write-up 002).

The net (`layers` x `neurons` tanh units) reads the board from the side to move's view (own marks
+1, the opponent's -1) and outputs 9 move logits (softmax over the legal moves: the priors P) and
a value v = tanh(.) in (-1, 1), the expected result for the side to move.

Search: PUCT with no rollouts (lab.agents.puct), a new leaf's net value backed up. The net
is fixed while games are played, so its priors and values are computed once per net for every
one of the 4,520 decision positions in one vectorised pass (the ultimate batch of leaf
evaluations); the search then reads them.

One iteration:
1. `episodes_per_update` games with the best net. With `opponent=self` it plays both seats;
   against a fixed opponent it plays seat `player` and only its own positions are kept. At each of
   its moves: a search of `simulations` with Dirichlet(dirichlet_alpha) noise mixed into the root
   priors (weight dirichlet_weight); the visit counts, normalised, are the policy target; the
   move is drawn in proportion to the visit counts for the first `temperature_moves` moves of the
   game, then it is the most visited. Every position's value target is the game's result from
   its mover's view.
2. The candidate net (kept across iterations) takes `train_steps` SGD steps on minibatches drawn
   uniformly from the positions of the last `window` games, each position in a random one of its
   8 symmetric images, on the loss (z - v)^2 - pi . log p + l2 |weights|^2.
3. Gating. Self-play: the candidate plays the best `gating_games` games, seats alternated, both
   searching without noise (first `temperature_moves` moves drawn from the visit counts so that
   games differ); it replaces the best unless it won fewer games. Against a fixed opponent: each
   net plays `gating_games` games in seat `player` against it; the candidate replaces the best
   unless its wins minus losses are lower. gating_games = 0 always replaces.

Write-up 002's own net is an option: `activation=relu` (its hidden units) and `head=mse12` (its 12
outputs: the one-hot result of the game for the side to move, [win, draw, loss], then the 9
moves, all fitted by mean squared error; here the move part's target is the visit-count policy).
The priors are then the 9 move outputs, floored at PRIOR_FLOOR on the legal moves and normalised,
and the value is output[win] - output[loss], clipped to [-1, 1]. A checkpoint's net says which
head it has (10 or 12 outputs).

The greedy agent runs the same search without noise from the position it is asked about and plays
the most visited move: deterministic, so its scores survive a checkpoint exactly.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, nets, opponents
from lab.agents import base, puct
from lab.knobs import Knobs, RunConfig, require, side
from lab.nets import MLP


@dataclass(frozen=True)
class Config(Knobs):
    layers: int
    """hidden layers of the policy + value net"""
    neurons: int
    """units in each hidden layer"""
    alpha: float
    """SGD step size on the mean loss of a minibatch"""
    simulations: int
    """PUCT simulations per move (training games, gating and the trained agent)"""
    c_puct: float
    """weight of the prior-guided exploration term in PUCT"""
    dirichlet_alpha: float
    """concentration of the Dirichlet noise mixed into the root priors in training games"""
    dirichlet_weight: float
    """share of the Dirichlet noise in the root priors (0 = no noise)"""
    temperature_moves: int
    """moves at the start of a game drawn in proportion to visit counts (then the most visited)"""
    window: int
    """the positions of this many most recent training games form the training set"""
    train_steps: int
    """SGD steps per iteration, each on a minibatch drawn from the window"""
    batch_size: int
    """positions per SGD step"""
    l2: float
    """weight decay: l2 |weights|^2 is added to the loss"""
    gating_games: int
    """games of the match deciding whether the candidate net replaces the best (0 = always)"""
    activation: str
    """hidden units: tanh, or relu (write-up 002's net)"""
    head: str
    """softmax_value: 9 logits + a tanh value; mse12: write-up 002's 12 outputs fitted by MSE"""

    def check(self):
        require(self.layers >= 1, "layers", self.layers, "a positive integer")
        require(self.activation in ("tanh", "relu"), "activation", self.activation, "tanh or relu")
        require(self.head in HEADS, "head", self.head, f"one of {', '.join(HEADS)}")
        for key in ("simulations", "window", "train_steps", "batch_size"):
            require(getattr(self, key) >= 1, key, getattr(self, key), "a positive integer")
        require(self.c_puct > 0, "c_puct", self.c_puct, "positive")
        require(self.dirichlet_alpha > 0, "dirichlet_alpha", self.dirichlet_alpha, "positive")
        require(0 <= self.dirichlet_weight <= 1, "dirichlet_weight", self.dirichlet_weight, "in [0, 1]")
        require(0 <= self.temperature_moves <= 9, "temperature_moves", self.temperature_moves, "in 0..9")
        require(self.l2 >= 0, "l2", self.l2, "non-negative")
        require(self.gating_games >= 0, "gating_games", self.gating_games, "a non-negative integer")


# ---- the net: priors and values --------------------------------------------------------------


def mover_view(codes: np.ndarray) -> np.ndarray:
    """(n, 9) boards with the side to move's marks +1 and the opponent's -1."""
    return game.BOARDS[codes] * game.TO_MOVE[codes][:, None]


HEADS = {"softmax_value": 10, "mse12": 12}
"""The values of the `head` knob and the net outputs they need."""
PRIOR_FLOOR = 1e-3
"""mse12: the least prior a legal move gets (a regressed probability can be 0 or negative)."""


def priors_and_values(outputs: np.ndarray, legal: np.ndarray):
    """The priors over the legal moves (n, 9) and the values (n,) from the net's outputs: softmax
    of the logits and tanh of the value output (10 outputs), or write-up 002's head (12 outputs,
    see the module doc)."""
    if outputs.shape[1] == HEADS["mse12"]:
        moves = np.where(legal, np.maximum(outputs[:, 3:], PRIOR_FLOOR), 0.0)
        return moves / moves.sum(axis=1, keepdims=True), np.clip(outputs[:, 0] - outputs[:, 2], -1, 1)
    return _softmax_value(outputs, legal)


@njit(cache=True)
def _softmax_value(outputs, legal):
    """The softmax head: priors = softmax of the 9 logits over the legal moves, value = tanh of
    output 9, in float64 by lab.nets' exp and tanh (numpy's differ between CPUs)."""
    priors, values = np.zeros((len(outputs), 9)), np.empty(len(outputs))
    for r in range(len(outputs)):
        top = -np.inf
        for m in range(9):
            if legal[r, m]:
                top = max(top, np.float64(outputs[r, m]))
        total = 0.0
        for m in range(9):
            if legal[r, m]:
                priors[r, m] = nets.exp(np.float64(outputs[r, m]) - top)
                total += priors[r, m]
        for m in range(9):
            priors[r, m] /= total
        values[r] = nets.tanh(np.float64(outputs[r, 9]))
    return priors, values


def net_tables(net: MLP):
    """The net's priors (N_CODES, 9) and values (N_CODES,) at every decision position, for the side
    to move; terminal positions hold their exact value (-1: the side that just moved won)."""
    priors = np.zeros((game.N_CODES, 9))
    values = (game.WINNER * game.TO_MOVE).astype(np.float64)
    codes = game.DECISIONS
    priors[codes], values[codes] = priors_and_values(net(mover_view(codes)), game.LEGAL[codes])
    return priors, values


def symmetric_images(codes: np.ndarray, policies: np.ndarray, images: np.ndarray):
    """Each position and its (n, 9) move policy seen through symmetry images[i] (lab.game's
    SYMMETRIES: cell j of the image is cell SYMMETRIES[k, j] of the original, moves alike)."""
    image_codes = game.symmetric_codes(codes)[images, np.arange(len(codes))]
    return image_codes, np.take_along_axis(policies, game.SYMMETRIES[images], axis=1)


# ---- games between a searching net and another side ----------------------------------------


_NO_PRIORS, _NO_VALUES = np.zeros((1, 9)), np.zeros(1)


class Contestant(NamedTuple):
    """One side of the games `play_games` plays: a net searching with its tables, or a fixed move
    table. Compiled code takes every field as an array, so the unused ones are placeholders."""

    searches: bool
    priors: np.ndarray
    """the net's priors (net_tables), if it searches"""
    values: np.ndarray
    """the net's values (net_tables), if it searches"""
    moves: np.ndarray
    """a move table, if it does not search"""

    @classmethod
    def searching(cls, net: MLP) -> "Contestant":
        # the self-play placeholder move table: a read-only table like every opponent's, so both
        # kinds of Contestant have one type for numba
        return cls(True, *net_tables(net), opponents.for_training(opponents.SELF))

    @classmethod
    def playing(cls, moves: np.ndarray) -> "Contestant":
        return cls(False, _NO_PRIORS, _NO_VALUES, moves)


@njit(cache=True)
def play_games(n, x, o, params, rules):
    """Play n games of Contestant x (X) against Contestant o (O). A searching side moves by PUCT
    search on its own tables, the other samples its move table. Returns positions (n, 9) (the
    code before move t, -1 after the end), policies (n, 9, 9) (normalised root visit counts;
    zeros for the moves of a side that does not search) and winners (n,) (1, -1, 0)."""
    after, terminal, winner = rules.after, rules.terminal, rules.winner
    tree = puct.new_tree(params.simulations)
    positions = np.full((n, 9), -1, dtype=np.int64)
    policies = np.zeros((n, 9, 9))
    winners = np.empty(n, dtype=np.int8)
    for g in range(n):
        code, t = 0, 0
        while not terminal[code]:
            mover = x if t % 2 == 0 else o
            positions[g, t] = code
            if mover.searches:
                counts = puct.search(code, mover.priors, mover.values, params, tree, rules)
                policies[g, t, :] = counts / counts.sum()
                move = puct.choose(counts, t < params.temperature_moves)
            else:
                move = game.sample_move(mover.moves, code)
            code = after[code, move]
            t += 1
        winners[g] = winner[code]
    return positions, policies, winners


# ---- the agent and the learner ----------------------------------------------------------------


class Agent(base.Agent):
    """Plays the most visited move of a noise-free search guided by the net."""

    algorithm = "alphazero"

    def __init__(self, net: MLP, simulations: int, c_puct: float):
        self.net, self.simulations, self.c_puct = net, simulations, c_puct
        self.priors, self.values = net_tables(net)

    def scores(self, codes):
        return puct.root_counts(np.asarray(codes, dtype=np.int64), self.priors, self.values,
                                puct.Params.greedy(self.simulations, self.c_puct), game.RULES)

    def arrays(self):
        return {**self.net.arrays(), "simulations": np.array(self.simulations),
                "c_puct": np.array(self.c_puct)}

    @classmethod
    def from_arrays(cls, arrays):
        return cls(MLP.from_arrays(arrays), int(arrays["simulations"]), float(arrays["c_puct"]))


class Learner(base.Learner):
    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.candidate = MLP([9] + [knobs.neurons] * knobs.layers + [HEADS[knobs.head]], self.rng,
                             output="linear", hidden=knobs.activation)
        self.best = self.candidate.copy()
        self.self_play = run.opponent == opponents.SELF
        self.opponent = (None if self.self_play
                         else Contestant.playing(opponents.for_training(run.opponent)))
        self.side = None if self.self_play else side(run.player)
        self.training, self.gating = puct.Params.of(knobs, noise=True), puct.Params.of(knobs, noise=False)
        self.games = 0
        # The training window: one row per position of the recent games, with its game number.
        self.codes = np.empty(0, dtype=np.int64)
        self.policies = np.empty((0, 9))
        self.outcomes = np.empty(0)
        self.game_ids = np.empty(0, dtype=np.int64)

    def _pairing(self, contestant: Contestant):
        """(X, O) for a game of `contestant` in seat `run.player` against the fixed opponent."""
        return (contestant, self.opponent) if self.side == 1 else (self.opponent, contestant)

    def iterate(self) -> np.ndarray:
        n = self.run.episodes_per_update
        best = Contestant.searching(self.best)
        x, o = (best, best) if self.self_play else self._pairing(best)
        positions, policies, winners = play_games(n, x, o, self.training, game.RULES)
        self._remember(positions, policies, winners)
        self._train()
        if self._candidate_holds_up(best):
            self.best = self.candidate.copy()
        return game.tally(winners)

    def _remember(self, positions, policies, winners):
        """Add the searched positions of the new games to the window; drop games too old."""
        searched = policies.sum(axis=2) > 0
        game_ids = np.broadcast_to(self.games + np.arange(len(winners))[:, None], searched.shape)
        codes = positions[searched]
        self.games += len(winners)
        self.codes = np.concatenate([self.codes, codes])
        self.policies = np.concatenate([self.policies, policies[searched]])
        outcomes = np.broadcast_to(winners[:, None], searched.shape)[searched] * game.TO_MOVE[codes]
        self.outcomes = np.concatenate([self.outcomes, outcomes])
        self.game_ids = np.concatenate([self.game_ids, game_ids[searched]])
        keep = self.game_ids >= self.games - self.knobs.window
        self.codes, self.policies = self.codes[keep], self.policies[keep]
        self.outcomes, self.game_ids = self.outcomes[keep], self.game_ids[keep]

    def _train(self):
        """`train_steps` SGD steps, each on `batch_size` positions drawn uniformly from the window,
        each seen in one of its 8 symmetric images drawn at random (augmentation)."""
        net, size = self.candidate, self.knobs.batch_size
        for _ in range(self.knobs.train_steps):
            rows = self.rng.integers(len(self.codes), size=size)
            images = self.rng.integers(len(game.SYMMETRIES), size=size)
            codes, policies = symmetric_images(self.codes[rows], self.policies[rows], images)
            outcomes = self.outcomes[rows]
            acts = net.activations(mover_view(codes))
            if self.knobs.head == "mse12":  # d/d(outputs) of mean |outputs - [result, pi]|^2
                results = np.eye(3)[(1 - outcomes).astype(np.int64)]  # win, draw, loss
                d_outputs = 2.0 * (acts[-1] - np.hstack([results, policies]))
            else:
                p, v = priors_and_values(acts[-1], game.LEGAL[codes])
                # d/d(outputs) of mean[(z - v)^2 - pi . log softmax(logits)]
                d_value = 2.0 * (v - outcomes) * (1.0 - v * v)
                d_outputs = np.hstack([p - policies, d_value[:, None]])
            grads = net.gradients(acts, d_outputs / size)
            for i, w in enumerate(net.weights):
                grads[i] = grads[i] + 2.0 * self.knobs.l2 * w
            net.descend(grads, self.knobs.alpha)

    def _candidate_holds_up(self, best: Contestant) -> bool:
        """The gating match (see the module docstring)."""
        n = self.knobs.gating_games
        if n == 0:
            return True
        candidate = Contestant.searching(self.candidate)
        if self.self_play:
            _, _, as_x = play_games(n - n // 2, candidate, best, self.gating, game.RULES)
            _, _, as_o = play_games(n // 2, best, candidate, self.gating, game.RULES)
            candidate_wins = (as_x == 1).sum() + (as_o == -1).sum()
            best_wins = (as_x == -1).sum() + (as_o == 1).sum()
            return candidate_wins >= best_wins
        scores = []
        for contestant in (candidate, best):
            _, _, winners = play_games(n, *self._pairing(contestant), self.gating, game.RULES)
            scores.append((self.side * winners).sum())  # wins minus losses
        return scores[0] >= scores[1]

    def agent(self) -> Agent:
        return Agent(self.best, self.knobs.simulations, self.knobs.c_puct)


ALGORITHM = base.Algorithm("alphazero", Config, Learner, Agent, self_play=True)
