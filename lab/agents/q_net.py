"""A Q network over (board, one-hot move) trained on TD targets (write-up 001, second part).

The agent plays seat `player` against a fixed opponent. A net of `layers` x `neurons` tanh units
with a linear output maps 18 inputs, the 9 cells (1 X, -1 O, 0 empty) and the move one-hot, to
Q(board, move): the expected discounted result from the agent's side (+1 win, `loss_reward` (-1)
loss, 0 draw).

Between updates the policy is fixed, so the `episodes_per_update` episodes of an iteration are
played as one batch, move by move, with one vectorised net pass per move over the new positions
the agent reached (the net is evaluated once per position per iteration). Each agent move (s, a)
of those episodes gets the write-up's on-policy TD target r + gamma Q(s', a'), where (s', a') is the
agent's next position and move in that episode, with Q from the same pass; a move that ends the
game (or after which the opponent ends it) gets the final reward alone. The net then takes
`epochs` full-batch gradient steps on these samples (the write-up's few epochs per game).
Epsilon decays geometrically from `epsilon` at the first iteration to `epsilon_final` at the
last, as the write-up's notebook does.

In self-play (`opponent=self`, the notebook's "Q network per player") each seat has its own net,
both learning from the same batch of games: at each move the net of the side to move plays
epsilon-greedy, and after the games each net fits the TD targets of its own seat's moves. The
positions where X moves and where O moves are disjoint, so one Q table holds both nets' values
at the positions they reached. The agent holds both nets and plays either seat.
"""

from dataclasses import dataclass

import numpy as np

from lab import game, opponents
from lab.agents import base
from lab.knobs import Knobs, RunConfig, require, side
from lab.nets import MLP

MOVES = np.eye(9)


@dataclass(frozen=True)
class Config(Knobs):
    ADDED = {"loss_reward": -1.0}  # a run at -1 keeps the run id it had before the knob

    layers: int
    """hidden layers of the Q net (0: a linear Q function of the 18 inputs, the write-up's first net)"""
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
    """fold the board's 8 symmetries: the net sees each (position, move) as its canonical image
    (lab.game.canonical_pairs), so symmetric pairs share one input and one mean target"""

    def check(self):
        require(0 < self.epsilon <= 1, "epsilon", self.epsilon, "in (0, 1]")
        require(0 < self.epsilon_final <= 1, "epsilon_final", self.epsilon_final, "in (0, 1]")
        require(self.epochs >= 1, "epochs", self.epochs, "a positive integer")
        require(self.loss_reward < 0, "loss_reward", self.loss_reward, "negative (a loss is worse than a draw)")


def q_inputs(codes: np.ndarray, moves: np.ndarray, symmetry: bool = False) -> np.ndarray:
    """(n, 18) net inputs: the board cells of each code and its move one-hot; with `symmetry`,
    of the pair's canonical image."""
    if symmetry:
        codes, moves = game.canonical_pairs(codes, moves)
    return np.hstack([game.BOARDS[codes], MOVES[moves]])


def q_values(net: MLP, codes: np.ndarray, symmetry: bool = False) -> np.ndarray:
    """(n, 9) Q values of every legal move at each code (-inf where illegal)."""
    rows, moves = np.nonzero(game.LEGAL[codes])
    q = np.full((len(codes), 9), -np.inf)
    q[rows, moves] = net(q_inputs(codes[rows], moves, symmetry))[:, 0]
    return q


class Agent(base.NetAgent):
    """Plays the legal move with the highest Q value. Trained in self-play it holds a net per
    seat, `net` for seat `player` and `other` for the other seat, and plays either seat."""

    algorithm = "q_net"

    def scores(self, codes):
        # q_values' one batch over every (position, legal move) pair, through the in-place pass
        codes = np.asarray(codes)
        rows, moves = np.nonzero(game.LEGAL[codes])
        q = np.full((len(codes), 9), -np.inf)
        if self.other is None:
            q[rows, moves] = self.outputs(q_inputs(codes[rows], moves, self.symmetry))
            return q
        mine = game.TO_MOVE[codes[rows]] == side(self.player)
        for net, pick in ((self.net, mine), (self.other, ~mine)):
            inputs = q_inputs(codes[rows[pick]], moves[pick], self.symmetry)
            q[rows[pick], moves[pick]] = self.outputs(inputs, net)
        return q


class Learner(base.Learner):
    DERIVED = ("epsilons",)  # the exploration schedule: the knobs' (a restored state keeps `iteration`)

    def __init__(self, knobs: Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        # A net per seat it learns in: one against a fixed opponent, X's then O's in self-play.
        self.nets = {seat: MLP([18] + [knobs.neurons] * knobs.layers + [1], self.rng,
                               output="linear") for seat in run.seats}
        self.net = self.nets[run.seats[0]]
        self.opponent = opponents.for_training(run.opponent)
        steps = max(run.iterations - 1, 1)
        ratio = knobs.epsilon_final / knobs.epsilon  # Python's pow: numpy's array power is CPU-specific code
        self.epsilons = np.array([knobs.epsilon * ratio ** (i / steps) for i in range(run.iterations)])
        self.iteration = 0
        self.q = np.zeros((game.N_CODES, 9))
        self.policy = np.zeros((game.N_CODES, 9))  # the epsilon-greedy move table where evaluated
        self.evaluated_at = np.zeros(game.N_CODES, dtype=np.int64)  # iteration q[code] is from

    def iterate(self) -> np.ndarray:
        epsilon = self.epsilons[min(self.iteration, len(self.epsilons) - 1)]
        self.iteration += 1
        trajectories, moves, winners = self._play_episodes(epsilon)
        for seat in self.run.seats:
            self._fit(*self._samples(trajectories, moves, winners, seat), seat)
        self.played_epsilon = epsilon
        return game.tally(winners)

    def exploration(self) -> float:
        return float(self.played_epsilon)

    def _play_episodes(self, epsilon: float):
        """The iteration's episodes as one batch, move by move: (trajectories, moves, winners),
        trajectories and winners as lab.game.play returns them and moves[g, t] the cell of move t
        (-1 after the end). The policy is fixed, so the net is evaluated once per iteration at
        each position the agent actually reaches (a few hundred, not all 2,000+)."""
        n = self.run.episodes_per_update
        codes = np.zeros(n, dtype=np.int64)
        trajectories = np.full((n, 9), -1, dtype=np.int64)
        moves = np.full((n, 9), -1, dtype=np.int64)
        for t in range(9):
            live = np.flatnonzero(~game.TERMINAL[codes])
            if live.size == 0:
                break
            here = codes[live]
            seat = 1 + t % 2  # the seat of move t: X moves first
            if seat in self.run.seats:
                new = np.unique(here[self.evaluated_at[here] != self.iteration])
                self.evaluated_at[new] = self.iteration
                self.q[new] = q_values(self.nets[seat], new, self.knobs.symmetry)
                legal = game.LEGAL[new]
                self.policy[new] = (1 - epsilon) * game.greedy(self.q[new], legal) + epsilon * game.uniform_over(legal)
                probs = self.policy[here]
            else:
                probs = self.opponent[here]
            cumulative = probs.cumsum(axis=1)
            draws = self.rng.random(len(here))[:, None] * cumulative[:, -1:]
            move = (cumulative > draws).argmax(axis=1)
            moves[live, t] = move
            codes[live] = game.AFTER[here, move]
            trajectories[live, t] = codes[live]
        return trajectories, moves, game.WINNER[codes]

    def _samples(self, trajectories, moves, winners, seat=None):
        """The (position, move) pairs of the agent's seat `seat` (its only one against a fixed
        opponent) in a batch of episodes and their TD targets."""
        seat = seat or self.run.seats[0]
        first_column = seat - 1  # the seat's moves are columns first_column::2
        n = len(winners)
        # before[:, t] is the position move t was played from; two -1 columns past the end (of
        # positions and of moves) let every agent move look two moves ahead to its own next one.
        before = np.hstack([np.zeros((n, 1), np.int64), trajectories, np.full((n, 2), -1)])
        moves = np.hstack([moves, np.full((n, 2), -1)])
        columns = np.arange(first_column, 9, 2)
        states, actions, afters = before[:, columns], moves[:, columns], before[:, columns + 1]
        next_states, next_actions = before[:, columns + 2], moves[:, columns + 2]
        played = afters >= 0
        continues = before[:, columns + 3] >= 0  # the agent moves again in this episode
        result = side(seat) * winners
        reward = np.broadcast_to(np.where(result < 0, self.knobs.loss_reward, result)[:, None], played.shape)
        next_q = self.q[np.where(continues, next_states, 0), np.where(continues, next_actions, 0)]
        targets = np.where(continues, self.knobs.gamma * next_q, reward)
        return states[played], actions[played], targets[played]

    def _fit(self, states, actions, targets, seat=None):
        """`epochs` full-batch gradient steps on the mean squared TD error 1/2 mean (Q - target)^2.

        Samples repeat (every episode starts from the same few positions), so the loss is summed
        over distinct (position, move) pairs weighted by their count, towards their mean target:
        the same gradient at a fraction of the cost. With `symmetry` the pairs are folded first:
        symmetric pairs are one pair.
        """
        if self.knobs.symmetry:
            states, actions = game.canonical_pairs(states, actions)
        pairs, inverse, counts = np.unique(states * 9 + actions, return_inverse=True, return_counts=True)
        mean_targets = np.bincount(inverse, targets) / counts
        weights = (counts / len(targets))[:, None]
        inputs = q_inputs(pairs // 9, pairs % 9)
        net = self.nets[seat or self.run.seats[0]]
        for _ in range(self.knobs.epochs):
            acts = net.activations(inputs)
            error = acts[-1] - mean_targets[:, None]
            net.descend(net.gradients(acts, weights * error), self.knobs.alpha)

    def agent(self) -> Agent:
        if len(self.run.seats) == 2:
            return Agent(self.nets[1].copy(), 1, self.nets[2].copy(), self.knobs.symmetry)
        return Agent(self.net.copy(), self.run.player, symmetry=self.knobs.symmetry)


ALGORITHM = base.Algorithm("q_net", Config, Learner, Agent, self_play=True)
