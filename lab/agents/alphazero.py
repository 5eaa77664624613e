"""AlphaZero: a policy + value net guiding PUCT search, trained on its own search (write-up 002),
on every board.

The net (`layers` x `neurons`) reads the board from the side to move's view (+1 its own stone, -1
the opponent's, 0 empty) and gives a logit per cell (softmax over the empty cells: the priors P)
and a value v = tanh(.) in (-1, 1) for the side to move. The search (lab.agents.puct) reads it at
each new leaf and leaves the positions the rules decide (a win, a forced block, a double threat)
to the rules.

One iteration:
1. `episodes_per_update` games with the best net: in both seats with `opponent=self`, else in seat
   `player`, only its own positions kept. Each of its moves searches `simulations` with
   Dirichlet(dirichlet_alpha) noise mixed into the root priors (weight dirichlet_weight); the
   normalised visit counts are the policy target, and the move is drawn from them for the first
   `temperature_moves` moves of the game, then the most visited. A position's value target is the
   game's result for its mover.
2. The candidate net (kept across iterations) takes `train_steps` SGD steps on minibatches drawn
   uniformly from the positions of the last `window` games, each in a random one of the board's
   symmetric images (8 on a square board, else 4), on the loss (z - v)^2 - pi . log p + l2 |w|^2.
3. Gating. Self-play: the candidate plays the best `gating_games` games, seats alternated, both
   searching without noise (the first `temperature_moves` moves drawn, so that games differ), and
   replaces it unless it won fewer. Against a fixed opponent: each net plays `gating_games` games in
   seat `player`; the candidate replaces the best unless its wins minus losses are lower.
   gating_games = 0 always replaces.

Write-up 002's own net: `activation=relu` and `head=mse12` (outputs [win, draw, loss] for the side
to move, then a move per cell, 12 on 3x3, all fitted by mean squared error, the moves towards the
visit-count policy). A checkpoint's net says its head (cells + 1 or cells + 3 outputs).
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, types

from lab import game
from lab.game import opponents
from lab.agents import base, tabular
from lab.agents.puct import Params, choose, new_tree, priors_and_values, search, visit_counts
from lab.game import bitboards, bots, engine
from lab.knobs import TTT, Knobs, RunConfig, require
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
    """softmax_value: cell logits + tanh value; mse12: write-up 002's [win, draw, loss, a cell each] by MSE"""

    def check(self):
        for key in ("layers", "simulations", "window", "train_steps", "batch_size"):
            require(getattr(self, key) >= 1, key, getattr(self, key), "a positive integer")
        require(self.activation in ("tanh", "relu"), "activation", self.activation, "tanh or relu")
        require(self.head in HEADS, "head", self.head, f"one of {', '.join(HEADS)}")
        require(self.c_puct > 0, "c_puct", self.c_puct, "positive")
        require(self.dirichlet_alpha > 0, "dirichlet_alpha", self.dirichlet_alpha, "positive")
        require(0 <= self.dirichlet_weight <= 1, "dirichlet_weight", self.dirichlet_weight, "in [0, 1]")
        require(0 <= self.temperature_moves <= 9, "temperature_moves", self.temperature_moves, "in 0..9")
        require(self.l2 >= 0, "l2", self.l2, "non-negative")
        require(self.gating_games >= 0, "gating_games", self.gating_games, "a non-negative integer")


HEADS = {"softmax_value": 1, "mse12": 3}
"""The values of the `head` knob and the net outputs they need beyond one per cell."""


@njit(cache=True)
def _code(x, o):
    """The 3x3 board code (lab.game) of the bitboards x, o."""
    code = 0
    for cell in range(9):
        bit = np.uint64(1) << np.uint64(cell)
        code += game.POW3[cell] * (1 if x & bit else 2 if o & bit else 0)
    return code


@engine.compiled
def fixed_move(board, opponent, x, o, side):
    """The move of the seat the net does not play: 3x3's move table's, else lab.agents.tabular.opponent's."""
    if isinstance(opponent, types.Array):
        return lambda board, opponent, x, o, side: game.sample_move(opponent, _code(x, o))
    return lambda board, opponent, x, o, side: engine.opponent_move(board, opponent, (x, o), side)


@njit(cache=True)
def play_games(board, nets, searches, params, tree, opponent, n, record):
    """Play n games; seat s (0 X, 1 O) searches with nets[s] if searches[s], else plays `fixed_move`.
    Returns the stones x, o before each ply (n, cells), whether a net searched there, its normalised
    visit counts (n, cells, cells; empty unless `record`) and the results (X_WINS, O_WINS or DRAW)."""
    cells = board.m * board.n
    xs = np.zeros((n, cells), np.uint64)
    os = np.zeros((n, cells), np.uint64)
    searched = np.zeros((n, cells), np.bool_)
    policies = np.zeros((n if record else 0, cells, cells))
    results = np.empty(n, np.int8)
    inputs = np.empty((1, cells), dtype=nets[0][0][0].dtype)
    for g in range(n):
        x, o = np.uint64(0), np.uint64(0)
        result, ply = bots.DRAW, 0
        while ply < cells:
            side = ply % 2
            xs[g, ply], os[g, ply] = x, o
            if searches[side]:
                counts = search(board, nets[side], x, o, side, params, tree, inputs)
                searched[g, ply] = True
                if record:
                    policies[g, ply, :] = counts / counts.sum()
                cell = choose(counts, ply < params.temperature_moves)
            else:
                cell = fixed_move(board, opponent, x, o, side)
            x, o, won = bitboards.place(board, x, o, side, cell)
            ply += 1
            if won:
                result = side
                break
        results[g] = result
    return xs, os, searched, policies, results


class Frozen(NamedTuple):
    """An alphazero agent as a learner's opponent on a bigger board (`Agent.frozen`): the most
    visited move of its noise-free search."""

    net: tuple  # its CompiledNet
    params: Params
    tree: tuple  # the search's work space (lab.agents.puct.new_tree)
    inputs: np.ndarray  # scratch (1, cells) in the net's precision


@engine.plays(Frozen)
def _frozen_move(g, opponent, pos, side):
    return choose(search(g, opponent.net, pos[0], pos[1], side, opponent.params, opponent.tree, opponent.inputs),
                  False)


class Agent(base.Agent):
    """Plays the most visited move of a noise-free search guided by its net, in either seat:
    deterministic, so its scores survive a checkpoint."""

    algorithm = "alphazero"

    def __init__(self, net: MLP, simulations: int, c_puct: float, shape: tuple = TTT):
        self.net, self.simulations, self.c_puct, self.shape = net, simulations, c_puct, tuple(shape)
        self.board = bitboards.board(*self.shape)
        self.params = Params(simulations, c_puct, 1.0, 0.0, 0)  # no noise; the most visited move

    def scores(self, positions):
        """The visit counts of a noise-free search from each position."""
        if self.shape == TTT:
            x, o = game.STONES[np.asarray(positions, np.int64)].T
        else:
            x, o = np.asarray(positions, np.uint64).reshape(-1, 2).T
        net, tree = self.net.compiled(), new_tree(self.board.m * self.board.n, self.simulations)
        return visit_counts(self.board, net, np.ascontiguousarray(x, np.uint64),
                            np.ascontiguousarray(o, np.uint64), self.params, tree)

    def frozen(self) -> Frozen:
        net, cells = self.net.compiled(), self.board.m * self.board.n
        inputs = np.empty((1, cells), net[0][0].dtype)
        return Frozen(net, self.params, new_tree(cells, self.simulations), inputs)

    def arrays(self) -> dict:
        board = {} if self.shape == TTT else {"board": np.array(self.shape)}
        return {**self.net.arrays(), "simulations": np.array(self.simulations),
                "c_puct": np.array(self.c_puct), **board}

    @classmethod
    def from_arrays(cls, arrays) -> "Agent":
        shape = tuple(int(v) for v in arrays["board"]) if "board" in arrays else TTT
        return cls(MLP.from_arrays(arrays), int(arrays["simulations"]), float(arrays["c_puct"]), shape)


class Learner(base.Learner):
    DERIVED = ("board", "searches", "images")

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.board = bitboards.board(*run.game)
        self.cells = cells = run.m * run.n
        self.candidate = MLP([cells] + [knobs.neurons] * knobs.layers + [cells + HEADS[knobs.head]],
                             self.rng, output="linear", hidden=knobs.activation)
        self.best = self.candidate.copy()
        self.self_play = run.opponent == opponents.SELF
        self.searches = np.array([seat in run.seats for seat in (1, 2)])
        # the other seat: 3x3's move table (writable: one array type for numba), else tabular.opponent's
        if run.game == TTT and run.opponent not in ("mcts", opponents.SELF):
            self.opponent = np.array(opponents.for_training(run.opponent))
        else:
            self.opponent = tabular.opponent(self.board, run)
        self.images = bitboards.symmetries(run.m, run.n)
        self.training = Params(knobs.simulations, knobs.c_puct, knobs.dirichlet_alpha, knobs.dirichlet_weight,
                               knobs.temperature_moves)
        self.gating = self.training._replace(dirichlet_weight=0.0)
        self.games = 0
        # The training window: a row per searched position of the recent games, the mover's view.
        self.mine, self.theirs = np.empty(0, np.uint64), np.empty(0, np.uint64)
        self.policies, self.outcomes, self.game_ids = np.empty((0, cells)), np.empty(0), np.empty(0, np.int64)

    def _play(self, nets: tuple, searches, params: Params, n: int, record: bool):
        return play_games(self.board, tuple(net.compiled() for net in nets), searches, params,
                          new_tree(self.cells, self.knobs.simulations), self.opponent, n, record)

    def iterate(self) -> np.ndarray:
        played = self._play((self.best, self.best), self.searches, self.training,
                            self.run.episodes_per_update, True)
        self._remember(*played)
        self._train()
        if self._candidate_holds_up():
            self.best = self.candidate.copy()
        return np.bincount(played[-1], minlength=3)

    def _remember(self, xs, os, searched, policies, results):
        """Add the searched positions of the new games to the window; drop games too old."""
        games, plies = np.nonzero(searched)
        x, o, side, result = xs[games, plies], os[games, plies], plies % 2, results[games]
        outcome = np.where(result == bots.DRAW, 0.0, np.where(result == side, 1.0, -1.0))
        new = (np.where(side == 0, x, o), np.where(side == 0, o, x), policies[games, plies], outcome,
               self.games + games)
        old = (self.mine, self.theirs, self.policies, self.outcomes, self.game_ids)
        window = [np.concatenate(pair) for pair in zip(old, new)]
        self.games += len(results)
        keep = window[-1] >= self.games - self.knobs.window
        self.mine, self.theirs, self.policies, self.outcomes, self.game_ids = (a[keep] for a in window)

    def _train(self):
        """`train_steps` SGD steps, each on `batch_size` positions drawn uniformly from the window,
        each in a random one of the board's symmetric images (the module doc's loss)."""
        net, size = self.candidate, self.knobs.batch_size
        dtype = net.weights[0].dtype
        for _ in range(self.knobs.train_steps):
            rows = self.rng.integers(len(self.outcomes), size=size)
            image = self.images[self.rng.integers(len(self.images), size=size)]
            boards = bitboards.cell_inputs(self.mine[rows], self.theirs[rows], self.cells, dtype)
            boards = np.take_along_axis(boards, image, axis=1)
            policies = np.take_along_axis(self.policies[rows], image, axis=1)
            outcomes = self.outcomes[rows]
            acts = net.activations(boards)
            if self.knobs.head == "mse12":  # d/d(outputs) of mean |outputs - [result, pi]|^2
                results = np.eye(3)[(1 - outcomes).astype(np.int64)]  # win, draw, loss
                d_outputs = 2.0 * (acts[-1] - np.hstack([results, policies]))
            else:  # d/d(outputs) of mean[(z - v)^2 - pi . log softmax(logits)]
                p, v = priors_and_values(acts[-1], boards)
                d_value = 2.0 * (v - outcomes) * (1.0 - v * v)
                d_outputs = np.hstack([p - policies, d_value[:, None]])
            grads = net.gradients(acts, d_outputs / size)
            for i, w in enumerate(net.weights):
                grads[i] = grads[i] + 2.0 * self.knobs.l2 * w
            net.descend(grads, self.knobs.alpha)

    def _candidate_holds_up(self) -> bool:
        """The gating match (see the module docstring)."""
        n = self.knobs.gating_games
        if n == 0:
            return True
        if self.self_play:
            both = np.array([True, True])
            as_x = self._play((self.candidate, self.best), both, self.gating, n - n // 2, False)[-1]
            as_o = self._play((self.best, self.candidate), both, self.gating, n // 2, False)[-1]
            candidate_wins = (as_x == bots.X_WINS).sum() + (as_o == bots.O_WINS).sum()
            best_wins = (as_x == bots.O_WINS).sum() + (as_o == bots.X_WINS).sum()
            return candidate_wins >= best_wins
        side = self.run.player - 1
        scores = []
        for net in (self.candidate, self.best):
            results = self._play((net, net), self.searches, self.gating, n, False)[-1]
            scores.append((results == side).sum() - (results == 1 - side).sum())  # wins - losses
        return scores[0] >= scores[1]

    def agent(self) -> Agent:
        return Agent(self.best.copy(), self.knobs.simulations, self.knobs.c_puct, self.run.game)


ALGORITHM = base.Algorithm("alphazero", Config, Learner, Agent, self_play=True)
