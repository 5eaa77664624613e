"""q_net on bigger m,n,k boards: a Q network trained on TD targets, on bitboards.

The algorithm is lab.agents.q_net's (its knobs, its `Config`): between updates the policy is
fixed and the `episodes_per_update` games of an iteration are played with it, epsilon-greedy;
each agent move (s, a) gets the on-policy TD target gamma Q(s', a'), where (s', a') is the
agent's next position and move in that game, with Q from the net that played the games, or the
final reward alone (+1 win, `loss_reward` loss, 0 draw, from the agent's side) when the game
ends at that move or at the opponent's reply. The net then takes `epochs` full-batch gradient
steps on the mean squared TD error, distinct (position, move) samples weighted by their count
(the same gradient). Epsilon decays geometrically from `epsilon` at the first iteration to
`epsilon_final` at the last. In self-play (`opponent=self`) each seat has its own net, the net
of the side to move plays, and each net fits its own seat's moves.

What differs from 3x3, and why:

- The net maps the m * n cells (+1 X, -1 O, 0 empty) to m * n outputs, Q of a move to each cell,
  and illegal moves (taken cells) are masked out of the argmax; 3x3's net takes the cells and a
  move one-hot (18 inputs) to one Q. One pass per position instead of one per legal move: on
  5x5 that is 25 times fewer rows, and the agent's moves are picked inside the compiled games.
- 3x3 caches Q and the epsilon-greedy move table per lab.game board code (3**9 codes), and plays
  the iteration's episodes as one vectorised batch over codes; no such table exists beyond 3x3.
  Here the games are compiled (`play_games`) against lab.mnk_bots' bots (random, onestep, block,
  mcts with `mcts_simulations`) or between the two seats' nets, and the Q of every agent move is
  recomputed after the games by one batched pass of the same net (the same values it played by).
- Symmetry folding (lab.game.canonical_pairs) is 3x3's: refused here by lab.config.
"""

import dataclasses

import numpy as np
from numba import njit

from lab import game, mnk, mnk_bots
from lab.agents import base, mc_vfa, q_net
from lab.compat.numba import kernel_stream, set_kernel_stream
from lab.knobs import RunConfig
from lab.mnk import cell_inputs, empty_mask, random_move, wins
from lab.nets import MLP, forward

NET = -1
"""The kind, in `play_games`' kinds, of a seat played by its net (the others: lab.mnk_bots')."""


@njit(cache=True)
def q_move(board, net, x, o, inputs):
    """The empty cell of highest Q for the side to move, ties broken at random; `inputs` is
    scratch space, (1, cells) in the net's precision."""
    weights, biases, hidden, output = net
    cells = board.m * board.n
    empty = empty_mask(board, x, o)
    for j in range(cells):
        b = np.uint64(1) << np.uint64(j)
        inputs[0, j] = 1.0 if x & b else -1.0 if o & b else 0.0
    q = forward(weights, biases, hidden, output, inputs)[0]
    moves = np.empty(cells, np.int64)
    ties = 0
    best = -np.inf
    for cell in range(cells):
        if not empty & (np.uint64(1) << np.uint64(cell)):
            continue
        if q[cell] > best:
            best, ties = q[cell], 0
        if q[cell] == best:
            moves[ties] = cell
            ties += 1
    return moves[int(np.random.random() * ties)]


@njit(cache=True)
def play_games(board, nets, kinds, simulations, tree, n, epsilon):
    """Play n games; seat s (0 X, 1 O) is played by nets[s] if kinds[s] == NET (epsilon-greedy
    on Q), else by the lab.mnk_bots bot of that kind. Returns (x, o, cells, plies, results): the
    stones after each ply of each game (n, cells), the cell of each ply (-1 past the end), the
    plies played, and X_WINS, O_WINS or DRAW."""
    size = board.m * board.n
    xs = np.zeros((n, size), np.uint64)
    os = np.zeros((n, size), np.uint64)
    cells = np.full((n, size), -1, np.int64)
    plies = np.empty(n, np.int64)
    results = np.empty(n, np.int8)
    inputs = np.empty((1, size), dtype=nets[0][0][0].dtype)
    for g in range(n):
        x, o = np.uint64(0), np.uint64(0)
        result, ply = mnk_bots.DRAW, 0
        while ply < size:
            side = ply % 2
            if kinds[side] != NET:
                cell = mnk_bots.bot_move(board, tree, kinds[side], simulations[side], x, o, side)
            elif epsilon > 0.0 and np.random.random() < epsilon:
                cell = random_move(empty_mask(board, x, o), size - ply)
            else:
                cell = q_move(board, nets[side], x, o, inputs)
            bit = np.uint64(1) << np.uint64(cell)
            if side == 0:
                x |= bit
            else:
                o |= bit
            xs[g, ply], os[g, ply], cells[g, ply] = x, o, cell
            ply += 1
            if wins(board, x if side == 0 else o, cell):
                result = side
                break
        plies[g], results[g] = ply, result
    return xs, os, cells, plies, results


class Agent(mc_vfa.BoardAgent):
    """Plays the empty cell of highest Q, on the board (m, n, k); trained in self-play it holds a
    net per seat (`net` for seat `player`, `other` for the other one). Checkpoints as mc_vfa's."""

    algorithm = "q_net"

    def play(self, opponent: mnk_bots.Bot, seat: int, games: int, seed: int) -> np.ndarray:
        kinds = np.array([mnk_bots.NAMES.index(opponent.name)] * 2, np.int64)
        kinds[seat - 1] = NET
        simulations = np.full(2, opponent.simulations, np.int64)
        net = self.seat_net(seat).compiled()
        before = kernel_stream()
        game.seed_kernels(seed)
        results = play_games(self.board, (net, net), kinds, simulations,
                             mnk_bots.tree(self.board, opponent.simulations), games, 0.0)[-1]
        set_kernel_stream(before)
        return np.bincount(results, minlength=3)

    def policy(self, seat: int):
        """The greedy policy of seat `seat` as lab.mnk_exact.exact takes it: (x, o) bitboards ->
        move probabilities per cell, tied best moves sharing."""
        net, cells = self.seat_net(seat), self.board.m * self.board.n

        def rows(x, o):
            empty = cell_inputs(x | o, np.zeros_like(x), cells, np.int8) == 0
            q = np.where(empty, net(cell_inputs(x, o, cells, net.weights[0].dtype)), -np.inf)
            best = empty & (q == q.max(axis=1, keepdims=True))
            return best / best.sum(axis=1, keepdims=True)
        return rows


class Learner(base.Learner):
    DERIVED = ("board", "tree", "kinds", "simulations", "epsilons")

    def __init__(self, knobs: q_net.Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.board = mnk.board(run.m, run.n, run.k)
        self.cells = run.m * run.n
        sizes = [self.cells] + [knobs.neurons] * knobs.layers + [self.cells]
        self.nets = {seat: MLP(sizes, self.rng, output="linear") for seat in run.seats}
        steps = max(run.iterations - 1, 1)
        ratio = knobs.epsilon_final / knobs.epsilon  # Python's pow, as 3x3's (same bits everywhere)
        self.epsilons = np.array([knobs.epsilon * ratio ** (i / steps) for i in range(run.iterations)])
        self.iteration = 0
        opponent = None if run.opponent == "self" else mnk_bots.bot(
            run.opponent, run.mcts_simulations if run.opponent == "mcts" else None)
        kind = NET if opponent is None else mnk_bots.NAMES.index(opponent.name)
        self.kinds = np.array([NET if seat in run.seats else kind for seat in (1, 2)], np.int64)
        self.simulations = np.full(2, run.mcts_simulations, np.int64)
        self.tree = mnk_bots.tree(self.board, run.mcts_simulations if run.opponent == "mcts" else 1)

    def iterate(self) -> np.ndarray:
        epsilon = self.epsilons[min(self.iteration, len(self.epsilons) - 1)]
        self.iteration += 1
        nets = tuple(self.nets[seat if seat in self.nets else self.run.player].compiled()
                     for seat in (1, 2))
        xs, os, cells, plies, results = play_games(self.board, nets, self.kinds, self.simulations,
                                                   self.tree, self.run.episodes_per_update, epsilon)
        for seat in self.run.seats:
            self._fit(seat, *self._samples(seat, xs, os, cells, plies, results))
        self.played_epsilon = epsilon
        return np.bincount(results, minlength=3)

    def exploration(self) -> float:
        return float(self.played_epsilon)

    def _samples(self, seat: int, xs, os, cells, plies, results):
        """The moves of seat `seat` in a batch of games as (x, o, move) of the position moved
        from, and their TD targets: gamma Q(next position, next move) while the seat moves again
        in that game, else the final reward from its side."""
        n = len(plies)
        columns = np.arange(seat - 1, self.cells, 2)  # the plies of the seat's moves
        start = np.zeros((n, 1), np.uint64)
        before_x, before_o = (np.hstack([start, s[:, :-1]])[:, columns] for s in (xs, os))
        played = columns[None, :] < plies[:, None]
        continues = columns[None, :] + 2 < plies[:, None]
        x, o, moves = before_x[played], before_o[played], cells[:, columns][played]
        net = self.nets[seat]
        taken = np.zeros(played.shape)
        taken[played] = net(cell_inputs(x, o, self.cells, net.weights[0].dtype))[np.arange(len(moves)), moves]
        next_q = np.hstack([taken[:, 1:], np.zeros((n, 1))])
        reward = np.where(results == seat - 1, 1.0,
                          np.where(results == mnk_bots.DRAW, 0.0, self.knobs.loss_reward))
        targets = np.where(continues, self.knobs.gamma * next_q, reward[:, None])
        return x, o, moves, targets[played]

    def _fit(self, seat: int, x, o, moves, targets) -> None:
        """`epochs` full-batch gradient steps on 1/2 mean (Q(s, a) - target)^2, as 3x3's: over
        distinct (position, move) pairs weighted by their count, towards their mean target (the
        same gradient); one net pass per distinct position, the error on the move's output."""
        positions, row = np.unique(np.stack([x, o], axis=1), axis=0, return_inverse=True)
        pairs, inverse, counts = np.unique(row.reshape(-1) * self.cells + moves,
                                           return_inverse=True, return_counts=True)
        mean_targets = np.bincount(inverse, targets) / counts
        weights = counts / len(targets)
        rows, moves = pairs // self.cells, pairs % self.cells
        net = self.nets[seat]
        inputs = cell_inputs(positions[:, 0], positions[:, 1], self.cells, net.weights[0].dtype)
        for _ in range(self.knobs.epochs):
            acts = net.activations(inputs)
            error = np.zeros_like(acts[-1])
            error[rows, moves] = weights * (acts[-1][rows, moves] - mean_targets)
            net.descend(net.gradients(acts, error), self.knobs.alpha)

    def agent(self) -> Agent:
        shape = self.run.game
        if len(self.run.seats) == 2:
            return Agent(self.nets[1].copy(), 1, shape, self.nets[2].copy())
        return Agent(self.nets[self.run.player].copy(), self.run.player, shape)


ALGORITHM = dataclasses.replace(q_net.ALGORITHM, BoardAgent=Agent, BoardLearner=Learner)
"""q_net on every board: 3x3's module's record with this module's agent and learner"""
