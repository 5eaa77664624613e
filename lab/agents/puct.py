"""PUCT search guided by a policy + value net, compiled, on every board (lab.agents.alphazero).

From the root, descend by argmax over the moves a node allows of
Q(s, a) + c_puct P(s, a) sqrt(max(N(s), 1)) / (1 + N(s, a)), Q = 0 for unvisited moves (the max
makes a node's first visit follow its priors); each simulation adds one leaf, whose value is
backed up, negated at each level. The tree lives in small arrays (`Tree`), the search is one
compiled loop on lab.game.bitboards.

The net is read at each new leaf (`head` turns its outputs into priors over the empty cells and
a value). Positions the rules decide get their exact value instead: lost (-1, for the side to
move) if the previous move completed a line, drawn on a full board, won (+1) if the side to move
can complete a line or, with no threat against it, make two winning cells at once (a double
threat), lost if the opponent has two already. Against exactly one the search only plays the
block (any other move loses at once). At the root, a win, a forced block or a double threat is
played without searching (the counts all on those cells). Without noise the search is
deterministic: the most visited move is a function of the position.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import nets
from lab.game.bitboards import empty_mask, wins
from lab.game.bots import cells_in, winning_cells
from lab.nets import forward

PRIOR_FLOOR = 1e-3
"""mse12's head: the least prior an empty cell gets (a regressed probability can be 0 or less)."""


class Params(NamedTuple):
    """The numbers the search and the games use, as one argument (by name): alphazero's knobs."""

    simulations: int
    c_puct: float
    dirichlet_alpha: float
    dirichlet_weight: float  # 0: no noise, as in gating and the trained agent
    temperature_moves: int


@njit(cache=True)
def head(outputs, board, priors):
    """Writes the priors over the empty cells (where `board`, the net's input row, is 0) into
    `priors` and returns the value, from the net's outputs: softmax_value's softmax of the cells'
    logits and tanh of the last; mse12's cells floored at PRIOR_FLOOR and normalised, and win -
    loss clipped to [-1, 1]. In float64 by lab.nets' exp and tanh (the same bits anywhere)."""
    cells = board.shape[0]
    regressed = outputs.shape[0] == cells + 3
    top = -np.inf
    for j in range(cells):
        if board[j] == 0:
            top = max(top, np.float64(outputs[j]))
    total = 0.0
    for j in range(cells):
        if board[j] != 0:
            priors[j] = 0.0
        elif regressed:
            priors[j] = max(np.float64(outputs[3 + j]), PRIOR_FLOOR)
        else:
            priors[j] = nets.exp(np.float64(outputs[j]) - top)
        total += priors[j]
    for j in range(cells):
        priors[j] /= total
    if regressed:
        return min(1.0, max(-1.0, np.float64(outputs[0]) - np.float64(outputs[2])))
    return nets.tanh(np.float64(outputs[cells]))


@njit(cache=True)
def priors_and_values(outputs, boards):
    """The priors (n, cells) and values (n,) of the net's outputs at a batch of its inputs."""
    priors, values = np.zeros(boards.shape), np.empty(boards.shape[0])
    for r in range(boards.shape[0]):
        values[r] = head(outputs[r], boards[r], priors[r])
    return priors, values


class Tree(NamedTuple):
    """A search's work space, a row per node (node 0 the root), for simulations + 1 nodes."""

    x: np.ndarray  # X's stones at the node
    o: np.ndarray  # O's stones
    children: np.ndarray  # (nodes, cells) the node after each cell, -1 while unexpanded
    visits: np.ndarray  # (nodes, cells) N(s, a)
    totals: np.ndarray  # (nodes, cells) W(s, a): the values backed up through the move, its mover's view
    priors: np.ndarray  # (nodes, cells) P(s, a), with the noise at the root
    # the cells to play (uint64): the wins, the block of a single threat, the double threats to
    # make, else every empty cell
    moves: np.ndarray
    exact: np.ndarray  # whether `value` is the game's (the rules decide it), not the net's
    value: np.ndarray  # the node's value for its side to move


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
    """Make `node` the position (x, o), `side` (0 X, 1 O) to move, reached by a stone on `cell`:
    its value, exact where the rules decide it, else the net's (with its priors, which a root the
    rules leave open gets too), and the cells to play there."""
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
        net_value = head(forward(weights, biases, hidden, output, inputs)[0], inputs[0], priors[node])
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


@njit(cache=True)
def choose(counts, sample):
    """A move drawn in proportion to visit counts, or the most visited (ties at random)."""
    if sample:
        u = np.random.random() * counts.sum()
        for m in range(counts.shape[0]):
            u -= counts[m]
            if counts[m] > 0 and u < 0:
                return m
    ties = np.flatnonzero(counts == counts.max())
    return ties[np.random.randint(ties.shape[0])]
