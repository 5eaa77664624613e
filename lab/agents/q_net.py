"""A Q network trained on TD targets (write-up 001, second part), on every m,n,k board.

The agent plays seat `player` against a fixed opponent. A net of `layers` x `neurons` tanh units
with a linear output gives Q(position, move), the expected discounted result from the agent's
side (+1 win, `loss_reward` (-1) loss, 0 draw), in one of two ways (`head`): from the cells (1 X,
-1 O, 0 empty) and the move one-hot, one Q a row (write-up 001's net, 3x3's default), or from the
cells alone, a Q per cell (the bigger boards' default: one pass a position where 5x5 has up to 25
moves).

The policy is fixed between updates, so an iteration's `episodes_per_update` episodes are one
batch of compiled games (lab.agents.net_games), epsilon-greedy on Q, ties at random; on 3x3 a
position's Q values are computed once, when first needed, and remembered for the batch. Then each
agent move (s, a) gets the on-policy TD target gamma Q(s', a'), (s', a') the agent's next position
and move in that game (Q by the net that played, one batched pass), or the final reward when the
game ends at that move or the opponent's reply; the net takes `epochs` full-batch gradient steps
on the mean squared TD error. Epsilon decays geometrically from `epsilon` at the first iteration
to `epsilon_final` at the last, as the write-up's notebook does.

In self-play (`opponent=self`, the notebook's "Q network per player") each seat has its own net,
playing its side epsilon-greedy and fitting its own seat's moves; the agent holds both nets.
"""

from dataclasses import dataclass

import numpy as np

from lab import game
from lab.game import engine
from lab.agents import base, net_games
from lab.knobs import Knobs, RunConfig, require
from lab.nets import MLP

HEADS = ("move", "cells")  # the values of the `head` knob


@dataclass(frozen=True)
class Config(Knobs):
    ADDED = {"loss_reward": -1.0, "head": "move"}  # a 3x3 run at these keeps the run id it had before the knob

    head: str
    """'move': Q of the cells + a move one-hot (write-up 001's); 'cells': a Q per cell from the cells alone"""
    layers: int
    """hidden layers of the Q net (0: a linear Q function of its inputs, the write-up's first net)"""
    neurons: int
    """units in each hidden layer"""
    alpha: float
    """gradient step size (on the mean squared TD error of a batch)"""
    gamma: float
    """discount of the TD target r + gamma Q(next)"""
    loss_reward: float
    """reward of a lost game (a win is +1, a draw 0): -1 values a loss like a win's opposite; below -1
    the agent gives up some wins to lose less (at -1 left out of the run id and the results)"""
    epsilon: float
    """probability of a random move at the first iteration"""
    epsilon_final: float
    """probability of a random move at the last iteration (geometric decay in between)"""
    epochs: int
    """full-batch gradient steps on each iteration's samples"""
    symmetry: bool
    """fold the board's symmetries (8 of a square, 4 of a rectangle): symmetric (position, move) pairs share
    one net input and mean target"""

    def check(self):
        require(0 < self.epsilon <= 1, "epsilon", self.epsilon, "in (0, 1]")
        require(0 < self.epsilon_final <= 1, "epsilon_final", self.epsilon_final, "in (0, 1]")
        require(self.epochs >= 1, "epochs", self.epochs, "a positive integer")
        require(self.head in HEADS, "head", self.head, f"one of {', '.join(HEADS)}")
        require(self.loss_reward < 0, "loss_reward", self.loss_reward, "negative (a loss is worse than a draw)")


def per_cell(net: MLP, cells: int) -> bool:
    """Whether `net` gives a Q per cell (head 'cells'), not one Q of a (position, move) row."""
    return net.weights[0].shape[0] == cells


def pair_q(net: MLP, g, positions: np.ndarray, moves: np.ndarray, symmetry: bool = False) -> np.ndarray:
    """Q by `net` of each (position, move) pair on the game g (lab.game.engine's positions); with
    `symmetry` of the pair's canonical image (lab.game.engine.canonical_pairs)."""
    if symmetry:
        positions, moves = engine.canonical_pairs(g, positions, moves)
    cells = engine.cells(g)
    board = engine.inputs(g, positions, net.weights[0].dtype)
    if per_cell(net, cells):
        return net(board)[np.arange(len(moves)), moves]
    return net(np.hstack([board, np.eye(cells, dtype=board.dtype)[moves]]))[:, 0]


class Agent(net_games.Agent):
    """Plays the legal move with the highest Q."""

    algorithm = "q_net"
    AFTERSTATES = False

    def seat_scores(self, seat: int, codes):
        """3x3: (n, 9) Q by seat `seat`'s net of each move at `codes`, -inf where illegal."""
        rows, moves = np.nonzero(game.LEGAL[codes])
        q = np.full((len(codes), 9), -np.inf)
        q[rows, moves] = pair_q(self.seat_net(seat), engine.TTT, codes[rows], moves, self.symmetry)
        return q

    def board_scores(self, seat: int, positions):
        """Bigger boards: Q by seat `seat`'s net of every cell at the positions, taken cells included."""
        net, g, cells = self.seat_net(seat), self.board, self.board.m * self.board.n
        moves = np.broadcast_to(np.arange(cells), (len(positions), cells))
        if self.symmetry:
            positions, moves = engine.fold(g, positions)
        if per_cell(net, cells):
            return np.take_along_axis(net(engine.inputs(g, positions, net.weights[0].dtype)), moves, axis=1)
        return pair_q(net, g, np.repeat(positions, cells, axis=0), moves.ravel()).reshape(-1, cells)


class Learner(net_games.Learner):
    DERIVED = (*net_games.Learner.DERIVED, "epsilons")  # rebuilt on restore (`iteration` is kept)
    AGENT = Agent

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.cells = run.m * run.n
        inputs, outputs = (self.cells, self.cells) if knobs.head == "cells" else (2 * self.cells, 1)
        self.make_nets(inputs, outputs, np.random.default_rng(run.seed), output="linear")
        steps = max(run.iterations - 1, 1)
        ratio = knobs.epsilon_final / knobs.epsilon  # Python's pow: numpy's array power is CPU-specific code
        self.epsilons = np.array([knobs.epsilon * ratio ** (i / steps) for i in range(run.iterations)])
        self.iteration = 0

    def iterate(self) -> np.ndarray:
        epsilon = self.epsilons[min(self.iteration, len(self.epsilons) - 1)]
        self.iteration += 1
        positions, cells, plies, results = self.play(epsilon)
        for seat in self.run.seats:
            self._fit(seat, *self._samples(seat, positions, cells, plies, results))
        return np.bincount(results, minlength=3)

    def _samples(self, seat: int, positions, cells, plies, results):
        """Seat `seat`'s moves in a batch of games as (positions moved from, moves) and their TD
        targets: gamma Q(next position, next move) while the seat moves again in that game, else
        the final reward from its side (1 won, 0 draw, loss_reward lost)."""
        columns = np.arange(seat - 1, self.cells, 2)  # the plies of the seat's moves
        before = np.concatenate([np.zeros_like(positions[:, :1]), positions[:, :-1]], axis=1)[:, columns]
        played = columns[None, :] < plies[:, None]
        continues = columns[None, :] + 2 < plies[:, None]
        states, moves = before[played], cells[:, columns][played]
        taken = np.zeros(played.shape)
        taken[played] = pair_q(self.nets[seat], self.game, states, moves, self.knobs.symmetry)
        next_q = np.hstack([taken[:, 1:], np.zeros((len(plies), 1))])
        reward = np.where(results == seat - 1, 1.0, np.where(results == engine.DRAW, 0.0, self.knobs.loss_reward))
        targets = np.where(continues, self.knobs.gamma * next_q, reward[:, None])
        return states, moves, targets[played]

    def _fit(self, seat: int, states, moves, targets) -> None:
        """`epochs` full-batch gradient steps on the mean squared TD error 1/2 mean (Q - target)^2,
        summed over distinct (position, move) pairs (folded with `symmetry`) weighted by their
        count, towards their mean target: samples repeat, so the same gradient at a fraction of the
        cost. With a Q per cell, one pass a distinct position and the error on the move's output."""
        if self.knobs.symmetry:
            states, moves = engine.canonical_pairs(self.game, states, moves)
        positions, row = engine.distinct(self.game, states)
        pairs, inverse, counts = np.unique(row * self.cells + moves, return_inverse=True, return_counts=True)
        mean_targets = np.bincount(inverse, targets) / counts
        weights = counts / len(targets)
        rows, moves = pairs // self.cells, pairs % self.cells
        net = self.nets[seat]
        board = engine.inputs(self.game, positions, net.weights[0].dtype)
        cells = per_cell(net, self.cells)
        inputs = board if cells else np.hstack([board[rows], np.eye(self.cells, dtype=board.dtype)[moves]])
        for _ in range(self.knobs.epochs):
            acts = net.activations(inputs)
            if cells:
                error = np.zeros_like(acts[-1])
                error[rows, moves] = weights * (acts[-1][rows, moves] - mean_targets)
            else:
                error = weights[:, None] * (acts[-1] - mean_targets[:, None])
            net.descend(net.gradients(acts, error), self.knobs.alpha)


ALGORITHM = base.Algorithm("q_net", Config, Learner, Agent, self_play=True)
