"""mc_vfa on bigger m,n,k boards: Monte Carlo afterstate values fitted by a numpy net, on bitboards.

The algorithm is lab.agents.mc_vfa's (its knobs, its `Config`): the agent plays the move whose
afterstate its net values most, epsilon-greedy; after `episodes_per_update` games every afterstate
it produced gets the every-visit Monte Carlo mean of its returns (G = r + gamma G, the rewards of
mc_vfa.targets: +1 win, `loss_reward` loss, 0 draw) and the net takes one full-batch gradient step
towards those means. The net's inputs are the board's m * n cells (+1 X, -1 O, 0 empty).

A separate module because 3x3's cannot be shared without changing its bits or its speed: it
indexes afterstates by lab.game's 3**9 board codes (values cached per code in its kernel, returns
summed by np.bincount over codes, move tables for its opponents), none of which exists beyond
3x3. Here positions are lab.mnk's two uint64 bitboards, the opponents are lab.mnk_bots' compiled
bots (random, onestep, block, mcts with `mcts_simulations`, perfect on boards the lab solves) and
self-play gives each seat its own net, both playing in the compiled games (`play_games`).
Afterstates are Python-int keys x | o << cells in a dict of [return sum, visits]. Not yet:
symmetry folding (refused by lab.config).
"""


import numpy as np
from numba import njit

from lab import game, mnk, mnk_bots
from lab.files import npz_bytes
from lab.agents import base, mc_vfa
from lab.compat.numba import kernel_stream, set_kernel_stream
from lab.knobs import RunConfig
from lab.mnk import empty_mask, random_move, wins
from lab.nets import MLP, forward

NET = -1
"""The kind, in `play_games`' kinds, of a seat played by its net (the others: lab.mnk_bots')."""


@njit(cache=True)
def net_move(board, net, x, o, side, inputs):
    """The empty cell whose afterstate `net` values most for `side` (0 X, 1 O), ties broken at
    random; `inputs` is scratch space, (cells, cells) in the net's precision."""
    weights, biases, hidden, output = net
    cells = board.m * board.n
    empty = empty_mask(board, x, o)
    moves = np.empty(cells, np.int64)
    count = 0
    for cell in range(cells):
        bit = np.uint64(1) << np.uint64(cell)
        if not empty & bit:
            continue
        after_x, after_o = (x | bit, o) if side == 0 else (x, o | bit)
        for j in range(cells):
            b = np.uint64(1) << np.uint64(j)
            inputs[count, j] = 1.0 if after_x & b else -1.0 if after_o & b else 0.0
        moves[count] = cell
        count += 1
    values = forward(weights, biases, hidden, output, inputs[:count])[:, 0]
    best = values.max()
    ties = 0
    for i in range(count):
        if values[i] == best:
            moves[ties] = moves[i]
            ties += 1
    return moves[int(np.random.random() * ties)]


@njit(cache=True)
def play_games(board, nets, kinds, simulations, tree, n, epsilon):
    """Play n games; seat s (0 X, 1 O) is played by nets[s] if kinds[s] == NET (epsilon-greedy),
    else by the lab.mnk_bots bot of that kind. Returns (x, o, plies, results): the stones after
    each ply of each game (n, cells), the plies played, and X_WINS, O_WINS or DRAW."""
    cells = board.m * board.n
    xs = np.zeros((n, cells), np.uint64)
    os = np.zeros((n, cells), np.uint64)
    plies = np.empty(n, np.int64)
    results = np.empty(n, np.int8)
    inputs = np.empty((cells, cells), dtype=nets[0][0][0].dtype)
    for g in range(n):
        x, o = np.uint64(0), np.uint64(0)
        result, ply = mnk_bots.DRAW, 0
        while ply < cells:
            side = ply % 2
            if kinds[side] != NET:
                cell = mnk_bots.bot_move(board, tree, kinds[side], simulations[side], x, o, side)
            elif epsilon > 0.0 and np.random.random() < epsilon:
                cell = random_move(empty_mask(board, x, o), cells - ply)
            else:
                cell = net_move(board, nets[side], x, o, side, inputs)
            bit = np.uint64(1) << np.uint64(cell)
            if side == 0:
                x |= bit
            else:
                o |= bit
            xs[g, ply], os[g, ply] = x, o
            ply += 1
            if wins(board, x if side == 0 else o, cell):
                result = side
                break
        plies[g], results[g] = ply, result
    return xs, os, plies, results


def cell_inputs(x: np.ndarray, o: np.ndarray, cells: int, dtype) -> np.ndarray:
    """(len, cells) net inputs of positions given by bitboards: +1 X, -1 O, 0 empty."""
    shifts = np.arange(cells, dtype=np.uint64)
    stones = lambda b: ((np.asarray(b, np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(dtype)
    return stones(x) - stones(o)


class Agent:
    """Plays the move whose afterstate its net values most, on the board (m, n, k); trained in
    self-play it holds a net per seat (`net` for seat `player`, `other` for the other one)."""

    algorithm = "mc_vfa"
    games = staticmethod(play_games)
    """the compiled games `play` plays (each bigger-board algorithm's own, same arguments)"""

    def __init__(self, net: MLP, player: int, shape: tuple, other: MLP | None = None):
        self.net, self.player, self.shape, self.other = net, player, tuple(shape), other
        self.board = mnk.board(*self.shape)

    def seat_net(self, seat: int) -> MLP:
        return self.net if seat == self.player or self.other is None else self.other

    def policy(self, seat: int):
        """The greedy policy of seat `seat` as lab.mnk_exact.exact takes it: (x, o) bitboards ->
        move probabilities per cell, tied best moves sharing."""
        net, cells = self.seat_net(seat), self.board.m * self.board.n
        side = 0 if seat == 1 else 1

        def rows(x, o):
            empty = cell_inputs(x | o, np.zeros_like(x), cells, np.int8) == 0
            after = cell_inputs(x, o, cells, net.weights[0].dtype)[:, None, :].repeat(cells, axis=1)
            after[:, np.arange(cells), np.arange(cells)] = 1.0 if side == 0 else -1.0
            values = net(after.reshape(-1, cells))[:, 0].reshape(len(x), cells)
            values = np.where(empty, values, -np.inf)
            best = empty & (values == values.max(axis=1, keepdims=True))
            return best / best.sum(axis=1, keepdims=True)
        return rows

    def play(self, opponent: mnk_bots.Bot, seat: int, games: int, seed: int) -> np.ndarray:
        """Tally [X wins, O wins, draws] of `games` greedy games in seat `seat` against bot
        `opponent`, drawn with `seed`; the compiled kernels' random stream is left as it was."""
        kinds = np.array([mnk_bots.NAMES.index(opponent.name)] * 2, np.int64)
        kinds[seat - 1] = NET
        simulations = np.full(2, opponent.simulations, np.int64)
        net = self.seat_net(seat).compiled()
        before = kernel_stream()
        game.seed_kernels(seed)
        results = self.games(self.board, (net, net), kinds, simulations,
                             mnk_bots.tree(self.board, opponent.simulations), games, 0.0)[-1]
        set_kernel_stream(before)
        return np.bincount(results, minlength=3)

    def arrays(self) -> dict:
        other = {} if self.other is None else self.other.arrays(base.OTHER)
        return {**self.net.arrays(), "player": np.array(self.player), **other,
                "board": np.array(self.shape)}

    @classmethod
    def from_arrays(cls, arrays) -> "Agent":
        selfplay = f"{base.OTHER}linear_output" in arrays
        other = MLP.from_arrays(arrays, base.OTHER) if selfplay else None
        shape = tuple(int(v) for v in arrays["board"])
        return cls(MLP.from_arrays(arrays), int(arrays["player"]), shape, other)

    def to_bytes(self) -> bytes:
        return npz_bytes(algorithm=np.array(self.algorithm), **self.arrays())


class Learner(base.Learner):
    DERIVED = ("board", "tree", "kinds", "simulations")

    def __init__(self, knobs: mc_vfa.Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.board = mnk.board(run.m, run.n, run.k)
        self.cells = run.m * run.n
        self.nets = {seat: MLP([self.cells] + [knobs.neurons] * knobs.layers + [1], self.rng,
                               dtype=mc_vfa.PRECISIONS[knobs.precision]) for seat in run.seats}
        self.alpha, self.epsilon = knobs.alpha, knobs.epsilon
        self.returns = {seat: {} for seat in run.seats}
        """per seat, afterstate key x | o << cells -> [sum of its returns, visits]"""
        opponent = None if run.opponent == "self" else mnk_bots.bot(
            run.opponent, run.mcts_simulations if run.opponent == "mcts" else None)
        kind = NET if opponent is None else mnk_bots.NAMES.index(opponent.name)
        self.kinds = np.array([NET if seat in run.seats else kind for seat in (1, 2)], np.int64)
        self.simulations = np.full(2, run.mcts_simulations, np.int64)
        self.tree = mnk_bots.tree(self.board, run.mcts_simulations if run.opponent == "mcts" else 1)

    def iterate(self) -> np.ndarray:
        nets = tuple(self.nets[seat if seat in self.nets else self.run.player].compiled()
                     for seat in (1, 2))
        xs, os, plies, results = play_games(self.board, nets, self.kinds, self.simulations,
                                            self.tree, self.run.episodes_per_update, self.epsilon)
        for seat in self.run.seats:
            self._fit(seat, xs, os, plies, results)
        self.alpha *= self.knobs.alpha_decay_per_update
        self.played_epsilon = self.epsilon
        self.epsilon *= self.knobs.epsilon_decay_per_update
        return np.bincount(results, minlength=3)

    def _fit(self, seat: int, xs, os, plies, results) -> None:
        """Every-visit Monte Carlo for the net of `seat`: its k-th of K afterstates in a game
        returns r * gamma^(K-1-k), r its result's target; one full-batch step towards the means."""
        columns = np.arange(seat - 1, self.cells, 2)  # the plies of the seat's moves
        played = columns[None, :] < plies[:, None]
        steps_to_end = played.sum(axis=1, keepdims=True) - 1 - np.arange(len(columns))
        discounts = np.cumprod(np.r_[1.0, np.full(len(columns), self.knobs.gamma)])
        result = np.where(results == seat - 1, 1, np.where(results == mnk_bots.DRAW, 0, -1))
        reward = mc_vfa.targets(result, self.knobs.loss_reward)
        returns = (reward[:, None] * discounts[np.maximum(steps_to_end, 0)])[played]
        table = self.returns[seat]
        for x, o, g in zip(xs[:, columns][played].tolist(), os[:, columns][played].tolist(),
                           returns.tolist()):
            entry = table.setdefault(x | o << self.cells, [0.0, 0])
            entry[0] += g
            entry[1] += 1
        keys = sorted(table)
        x = np.array([key & ((1 << self.cells) - 1) for key in keys], np.uint64)
        o = np.array([key >> self.cells for key in keys], np.uint64)
        net = self.nets[seat]
        targets = np.array([table[key][0] / table[key][1] for key in keys])
        net.fit_step(cell_inputs(x, o, self.cells, net.weights[0].dtype), targets, self.alpha)
        if self.knobs.memory == "clear":
            table.clear()

    def exploration(self) -> float:
        return float(self.played_epsilon)

    def agent(self) -> Agent:
        shape = self.run.game
        if len(self.run.seats) == 2:
            return Agent(self.nets[1].copy(), 1, shape, self.nets[2].copy())
        return Agent(self.nets[self.run.player].copy(), self.run.player, shape)


ALGORITHM = base.Algorithm("mc_vfa", mc_vfa.Config, Learner, Agent, self_play=True)
