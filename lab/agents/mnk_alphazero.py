"""alphazero on bigger m,n,k boards: PUCT search guided by a policy + value net, on bitboards.

The algorithm is lab.agents.alphazero's, with its knobs (its `Config`; its docstring tells the
iteration): games searched with Dirichlet noise at the root, the normalised visit counts as
policy targets and the game's result as value targets, SGD on the positions of the last `window`
games, gating. The net reads the board from the side to move's view (a cell: +1 its own stone,
-1 the opponent's, 0 empty) and outputs m * n move logits (softmax over the empty cells: the
priors) and a value (tanh). Each position is trained in a random image among the board's
symmetries (8 on a square board, 4 otherwise).

Where the net is read differs. 3x3 computes its priors and values once per net at all 4,520
positions; a bigger board has too many (4x4: 9.7 million), so here the compiled search
(`search`) calls the net (lab.nets.forward, one row) at each new leaf, on lab.game.bitboards.
Positions the rules decide get their exact value instead (no net call): lost (-1, for the side
to move) if the previous move completed a line, drawn on a full board, won (+1) if the side to
move can complete a line or, with no threat against it, make two winning cells at once (a double
threat: the opponent blocks one at most), lost if the opponent has two already. Where the
opponent has exactly one, the search only plays the block (any other move loses at once), so it
spends its simulations on the lines that matter. At the root, a win, a forced block or a double
threat is played without searching (the counts all on those cells). Without noise the search is
deterministic: the agent's most visited move is a function of the position.

Its games are compiled too (`play_games`): each seat either searches with its net or is a
lab.game.bots bot (random, onestep, block, mcts with `mcts_simulations`, perfect where the lab
solves the board). head=mse12 (write-up 002's 12 outputs) is 3x3's only (refused by `check_run`).
"""

import dataclasses
from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game, nets
from lab.game import bitboards, bots
from lab.agents import alphazero, base
from lab.agents.puct import Params, choose
from lab.compat.numba import kernel_stream, set_kernel_stream
from lab.knobs import RunConfig, require
from lab.game.bitboards import empty_mask, wins
from lab.game.bots import cells_in, winning_cells
from lab.nets import MLP, forward

NET = -1
"""The kind, in `play_games`' kinds, of a seat that searches with its net (else a bot's kind)."""


def symmetries(m: int, n: int) -> np.ndarray:
    """(images, m * n): cell j of image i is cell [i, j] of the original; the board's 4 flips
    and turns (8 on a square board, whose transpose is one too)."""
    rows, cols = np.divmod(np.arange(m * n), m)
    images = []
    for transpose in (False, True) if m == n else (False,):
        r0, c0 = (cols, rows) if transpose else (rows, cols)
        for r in (r0, n - 1 - r0):
            for c in (c0, m - 1 - c0):
                images.append(r * m + c)
    return np.array(images)


# ---- the net's head and the search tree ---------------------------------------------------------


@njit(cache=True)
def _head(outputs, board, priors):
    """Writes the priors (softmax of the logits over the empty cells, where `board`, the net's
    input row, is 0) into `priors`; returns the value tanh(last output). In float64 by lab.nets'
    exp and tanh, the same bits on every machine."""
    cells = board.shape[0]
    top = -np.inf
    for j in range(cells):
        if board[j] == 0:
            top = max(top, np.float64(outputs[j]))
    total = 0.0
    for j in range(cells):
        priors[j] = nets.exp(np.float64(outputs[j]) - top) if board[j] == 0 else 0.0
        total += priors[j]
    for j in range(cells):
        priors[j] /= total
    return nets.tanh(np.float64(outputs[cells]))


@njit(cache=True)
def priors_and_values(outputs, boards):
    """The priors (n, cells) and values (n,) of the net's outputs at a batch of its inputs."""
    priors, values = np.zeros(boards.shape), np.empty(boards.shape[0])
    for r in range(boards.shape[0]):
        values[r] = _head(outputs[r], boards[r], priors[r])
    return priors, values


class Tree(NamedTuple):
    """A search's work space, a row per node (node 0 the root), for simulations + 1 nodes."""

    x: np.ndarray
    """X's stones at the node"""
    o: np.ndarray
    """O's stones"""
    children: np.ndarray
    """(nodes, cells) the node after each cell, -1 while unexpanded"""
    visits: np.ndarray
    """(nodes, cells) N(s, a)"""
    totals: np.ndarray
    """(nodes, cells) W(s, a): the values backed up through the move, its mover's view"""
    priors: np.ndarray
    """(nodes, cells) P(s, a), with the noise at the root"""
    moves: np.ndarray
    """the cells to play (uint64): the wins, the block of a single threat, the double threats
    to make, else every empty cell"""
    exact: np.ndarray
    """whether `value` is the game's (the rules decide it), not the net's"""
    value: np.ndarray
    """the node's value for its side to move"""


def new_tree(cells: int, simulations: int) -> Tree:
    size = simulations + 1
    return Tree(np.zeros(size, np.uint64), np.zeros(size, np.uint64), np.zeros((size, cells), np.int64),
                np.zeros((size, cells)), np.zeros((size, cells)), np.zeros((size, cells)),
                np.zeros(size, np.uint64), np.zeros(size, np.bool_), np.zeros(size))


@njit(cache=True)
def _forks(board, mine, empty):
    """The empty cells where a stone added to `mine` makes two cells that complete a line (a
    double threat), as a mask."""
    found = np.uint64(0)
    for cell in range(board.m * board.n):
        bit = np.uint64(1) << np.uint64(cell)
        if empty & bit and cells_in(winning_cells(board, mine | bit, empty & ~bit)) >= 2:
            found |= bit
    return found


@njit(cache=True)
def _leaf(board, net, tree, node, x, o, side, cell, inputs, root):
    """Make `node` the position (x, o), `side` (0 X, 1 O) to move, reached by the other side's
    stone on `cell`: its value, exact where the rules decide it (module doc), else the net's
    (with its priors, which a root the rules leave open gets too), and the cells to play there."""
    weights, biases, hidden, output = net
    xs, os, children, visits, totals, priors, moves, exact, value = tree
    xs[node], os[node] = x, o
    children[node, :] = -1
    visits[node, :] = 0.0
    totals[node, :] = 0.0
    mine, theirs = (x, o) if side == 0 else (o, x)
    empty = empty_mask(board, x, o)
    moves[node], exact[node], value[node] = empty, True, 0.0
    if not root and wins(board, theirs, cell):
        value[node] = -1.0
    elif empty != 0:
        chances = winning_cells(board, mine, empty)
        threats = winning_cells(board, theirs, empty)
        if chances:
            moves[node], value[node] = chances, 1.0
        elif cells_in(threats) >= 2:
            value[node] = -1.0
        elif threats:
            exact[node], moves[node] = False, threats
        else:
            forks = _forks(board, mine, empty)
            exact[node] = forks != 0
            moves[node], value[node] = (forks, 1.0) if forks else (empty, 0.0)
    if not exact[node] or (root and moves[node] == empty):
        for j in range(board.m * board.n):
            bit = np.uint64(1) << np.uint64(j)
            inputs[0, j] = 1.0 if mine & bit else -1.0 if theirs & bit else 0.0
        net_value = _head(forward(weights, biases, hidden, output, inputs)[0], inputs[0], priors[node])
        if not exact[node]:
            value[node] = net_value


@njit(cache=True)
def _select(board, tree, node, c_puct):
    """The allowed cell (Tree.moves) of highest Q + c_puct P sqrt(max(N, 1)) / (1 + n), Q = 0 unvisited."""
    xs, os, children, visits, totals, priors, moves, exact, value = tree
    allowed = moves[node]
    sqrt_visits = np.sqrt(max(visits[node].sum(), 1.0))
    best, best_score = -1, -np.inf
    for m in range(board.m * board.n):
        if allowed >> np.uint64(m) & np.uint64(1):
            n = visits[node, m]
            q = totals[node, m] / n if n > 0 else 0.0
            score = q + c_puct * priors[node, m] * sqrt_visits / (1.0 + n)
            if score > best_score:
                best, best_score = m, score
    return best


@njit(cache=True)
def search(board, net, x, o, side, params, tree, inputs):
    """The root's visit counts (cells,) of a PUCT search of params.simulations from the position
    (x, o), `side` to move, guided by `net` (a CompiledNet) in work space `tree` (new_tree);
    inputs: scratch (1, cells) in the net's precision."""
    xs, os, children, visits, totals, priors, moves, exact, value = tree
    cells = board.m * board.n
    counts = np.zeros(cells)
    empty = empty_mask(board, x, o)
    _leaf(board, net, tree, 0, x, o, side, -1, inputs, True)
    if moves[0] != empty:  # the rules chose (a win, a block, a double threat to make): no search
        for m in range(cells):
            counts[m] = 1.0 if moves[0] >> np.uint64(m) & np.uint64(1) else 0.0
        return counts
    if params.dirichlet_weight > 0.0:
        noise = np.zeros(cells)
        for m in range(cells):
            if empty >> np.uint64(m) & np.uint64(1):
                noise[m] = np.random.gamma(params.dirichlet_alpha, 1.0)
        weight = params.dirichlet_weight
        priors[0, :] = (1.0 - weight) * priors[0, :] + weight * noise / noise.sum()
    n_nodes = 1
    path_nodes, path_moves = np.empty(cells, np.int64), np.empty(cells, np.int64)
    for _ in range(params.simulations):
        node, depth, mover = 0, 0, side
        while depth == 0 or not exact[node]:
            best = _select(board, tree, node, params.c_puct)
            path_nodes[depth], path_moves[depth] = node, best
            depth += 1
            mover = 1 - mover
            child = children[node, best]
            if child < 0:  # a new leaf
                child, n_nodes = n_nodes, n_nodes + 1
                bit = np.uint64(1) << np.uint64(best)
                after_x, after_o = (xs[node] | bit, os[node]) if mover == 1 else (xs[node], os[node] | bit)
                _leaf(board, net, tree, child, after_x, after_o, mover, best, inputs, False)
                children[node, best] = child
                node = child
                break
            node = child
        # value[node] is for its side to move; each edge above is the other side's move
        backed = value[node]
        for d in range(depth - 1, -1, -1):
            backed = -backed
            visits[path_nodes[d], path_moves[d]] += 1.0
            totals[path_nodes[d], path_moves[d]] += backed
    counts[:] = visits[0]
    return counts


# ---- games ------------------------------------------------------------------------------------


@njit(cache=True)
def play_games(board, nets, kinds, params, simulations, tree, bot_tree, n, record):
    """Play n games; seat s (0 X, 1 O) searches with nets[s] if kinds[s] == NET, else is the
    lab.game.bots bot of that kind (simulations[s] playouts for mcts, in bot_tree). Returns
    (x, o, searched, policies, results): the stones before each ply (n, cells), whether a net
    searched there, its normalised visit counts (n, cells, cells; only with `record`, else
    empty) and the results (X_WINS, O_WINS or DRAW)."""
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
            if kinds[side] == NET:
                counts = search(board, nets[side], x, o, side, params, tree, inputs)
                searched[g, ply] = True
                if record:
                    policies[g, ply, :] = counts / counts.sum()
                cell = choose(counts, ply < params.temperature_moves)
            else:
                cell = bots.bot_move(board, bot_tree, kinds[side], simulations[side], x, o, side)
            bit = np.uint64(1) << np.uint64(cell)
            if side == 0:
                x |= bit
            else:
                o |= bit
            ply += 1
            if wins(board, x if side == 0 else o, cell):
                result = side
                break
        results[g] = result
    return xs, os, searched, policies, results


@njit(cache=True)
def visit_counts(board, net, xs, os, params, tree):
    """(n, cells): at each position (X's stones xs, O's os), the visit counts of a search (no
    noise: params.dirichlet_weight 0) from there, for the side to move."""
    cells = board.m * board.n
    out = np.zeros((xs.shape[0], cells))
    inputs = np.empty((1, cells), dtype=net[0][0].dtype)
    for i in range(xs.shape[0]):
        side = 0 if cells_in(xs[i]) == cells_in(os[i]) else 1
        out[i] = search(board, net, xs[i], os[i], side, params, tree, inputs)
    return out


# ---- the agent and the learner ----------------------------------------------------------------


class Agent(base.Agent):
    """Plays the most visited move of a noise-free search guided by its net, on the board
    (m, n, k); one net for both seats (it reads the board from the mover's view)."""

    algorithm = "alphazero"

    def __init__(self, net: MLP, simulations: int, c_puct: float, shape: tuple):
        self.net, self.simulations, self.c_puct, self.shape = net, simulations, c_puct, tuple(shape)
        self.board = bitboards.board(*self.shape)
        self.params = Params.greedy(simulations, c_puct)

    def scores(self, positions):
        """The visit counts of a noise-free search from each position: its moves are the most
        visited cells, tied ones sharing."""
        positions = np.asarray(positions, np.uint64).reshape(-1, 2)
        net, tree = self.net.compiled(), new_tree(self.board.m * self.board.n, self.simulations)
        return visit_counts(self.board, net, positions[:, 0], positions[:, 1], self.params, tree)

    def play(self, opponent: bots.Bot, seat: int, games: int, seed: int) -> np.ndarray:
        """Tally [X wins, O wins, draws] of `games` greedy games in seat `seat` against bot
        `opponent`, drawn with `seed`; the compiled kernels' random stream is left as it was."""
        kinds = np.array([bots.NAMES.index(opponent.name)] * 2, np.int64)
        kinds[seat - 1] = NET
        net = self.net.compiled()
        before = kernel_stream()
        game.seed_kernels(seed)
        results = play_games(self.board, (net, net), kinds, self.params,
                             np.full(2, opponent.simulations, np.int64),
                             new_tree(self.board.m * self.board.n, self.simulations),
                             bots.tree(self.board, opponent.simulations,
                                           perfect=opponent.name == "perfect"), games, False)[-1]
        set_kernel_stream(before)
        return np.bincount(results, minlength=3)

    def arrays(self) -> dict:
        return {**self.net.arrays(), "simulations": np.array(self.simulations),
                "c_puct": np.array(self.c_puct), "board": np.array(self.shape)}

    @classmethod
    def from_arrays(cls, arrays) -> "Agent":
        shape = tuple(int(v) for v in arrays["board"])
        return cls(MLP.from_arrays(arrays), int(arrays["simulations"]), float(arrays["c_puct"]), shape)


class Learner(base.Learner):
    DERIVED = ("board", "kinds", "bot_simulations", "images")

    @classmethod
    def check_run(cls, knobs: alphazero.Config, run: RunConfig) -> None:
        require(knobs.head == "softmax_value", "head", knobs.head, f"softmax_value on game "
                f"m={run.m}, n={run.n}, k={run.k}: write-up 002's 12 outputs are 3x3's")

    def __init__(self, knobs: alphazero.Config, run: RunConfig):
        super().__init__(knobs, run)
        self.rng = np.random.default_rng(run.seed)
        game.seed_kernels(run.seed)
        self.board = bitboards.board(*run.game)
        self.cells = cells = run.m * run.n
        self.candidate = MLP([cells] + [knobs.neurons] * knobs.layers + [cells + 1], self.rng,
                             output="linear", hidden=knobs.activation)
        self.best = self.candidate.copy()
        self.self_play = run.opponent == "self"
        kind = NET if self.self_play else bots.NAMES.index(run.opponent)
        self.kinds = np.array([NET if seat in run.seats else kind for seat in (1, 2)], np.int64)
        self.bot_simulations = np.full(2, run.mcts_simulations, np.int64)
        self.bot_tree = bots.tree(self.board, run.mcts_simulations if run.opponent == "mcts" else 1,
                                      perfect=run.opponent == "perfect")
        self.images = symmetries(run.m, run.n)
        self.training, self.gating = Params.of(knobs, noise=True), Params.of(knobs, noise=False)
        self.games = 0
        # The training window: a row per searched position of the recent games, the mover's view.
        self.mine = np.empty(0, np.uint64)
        self.theirs = np.empty(0, np.uint64)
        self.policies = np.empty((0, cells))
        self.outcomes = np.empty(0)
        self.game_ids = np.empty(0, np.int64)

    def _play(self, nets: tuple, kinds, params: Params, n: int, record: bool):
        return play_games(self.board, tuple(net.compiled() for net in nets), kinds, params,
                          self.bot_simulations, new_tree(self.cells, self.knobs.simulations),
                          self.bot_tree, n, record)

    def iterate(self) -> np.ndarray:
        played = self._play((self.best, self.best), self.kinds, self.training,
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
        self.mine = np.concatenate([self.mine, np.where(side == 0, x, o)])
        self.theirs = np.concatenate([self.theirs, np.where(side == 0, o, x)])
        self.policies = np.concatenate([self.policies, policies[games, plies]])
        outcome = np.where(result == bots.DRAW, 0.0, np.where(result == side, 1.0, -1.0))
        self.outcomes = np.concatenate([self.outcomes, outcome])
        self.game_ids = np.concatenate([self.game_ids, self.games + games])
        self.games += len(results)
        keep = self.game_ids >= self.games - self.knobs.window
        self.mine, self.theirs, self.policies = self.mine[keep], self.theirs[keep], self.policies[keep]
        self.outcomes, self.game_ids = self.outcomes[keep], self.game_ids[keep]

    def _train(self):
        """`train_steps` SGD steps, each on `batch_size` positions drawn uniformly from the window,
        each in a random one of the board's symmetric images, on the loss
        (z - v)^2 - pi . log p + l2 |weights|^2."""
        net, size = self.candidate, self.knobs.batch_size
        dtype = net.weights[0].dtype
        for _ in range(self.knobs.train_steps):
            rows = self.rng.integers(len(self.outcomes), size=size)
            image = self.images[self.rng.integers(len(self.images), size=size)]
            boards = bitboards.cell_inputs(self.mine[rows], self.theirs[rows], self.cells, dtype)
            boards = np.take_along_axis(boards, image, axis=1)
            policies = np.take_along_axis(self.policies[rows], image, axis=1)
            acts = net.activations(boards)
            p, v = priors_and_values(acts[-1], boards)
            d_value = 2.0 * (v - self.outcomes[rows]) * (1.0 - v * v)
            grads = net.gradients(acts, np.hstack([p - policies, d_value[:, None]]) / size)
            for i, w in enumerate(net.weights):
                grads[i] = grads[i] + 2.0 * self.knobs.l2 * w
            net.descend(grads, self.knobs.alpha)

    def _candidate_holds_up(self) -> bool:
        """The gating match, as 3x3's (lab.agents.alphazero's docstring)."""
        n = self.knobs.gating_games
        if n == 0:
            return True
        if self.self_play:
            both = np.array([NET, NET], np.int64)
            as_x = self._play((self.candidate, self.best), both, self.gating, n - n // 2, False)[-1]
            as_o = self._play((self.best, self.candidate), both, self.gating, n // 2, False)[-1]
            candidate_wins = (as_x == bots.X_WINS).sum() + (as_o == bots.O_WINS).sum()
            best_wins = (as_x == bots.O_WINS).sum() + (as_o == bots.X_WINS).sum()
            return candidate_wins >= best_wins
        side = self.run.player - 1
        scores = []
        for net in (self.candidate, self.best):
            results = self._play((net, net), self.kinds, self.gating, n, False)[-1]
            scores.append((results == side).sum() - (results == 1 - side).sum())  # wins - losses
        return scores[0] >= scores[1]

    def agent(self) -> Agent:
        return Agent(self.best.copy(), self.knobs.simulations, self.knobs.c_puct, self.run.game)


ALGORITHM = dataclasses.replace(alphazero.ALGORITHM, BoardAgent=Agent, BoardLearner=Learner)
"""alphazero on every board: 3x3's module's record with this module's agent and learner"""
