"""PUCT search guided by a net's priors and values, compiled, on arrays (lab.agents.alphazero).

From the root, descend by argmax over legal moves of
Q(s, a) + c_puct P(s, a) sqrt(max(N(s), 1)) / (1 + N(s, a)), with Q = 0 for unvisited moves (the
max makes a node's first visit follow its priors); a newly reached position is a leaf whose net
value is backed up, negated at each level (the mover alternates); terminal positions back up
their exact result. Each simulation adds one node, so the tree lives in small arrays (`Tree`) and
`search` is compiled with numba; `reference_search` is the same search in plain Python. The
priors and values are tables over every position (alphazero.net_tables), read, not computed,
by the search.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game


class Params(NamedTuple):
    """The numbers the search and the games use, as one argument (by name)."""

    simulations: int
    """PUCT simulations per move"""
    c_puct: float
    """weight of the prior-guided exploration term"""
    dirichlet_alpha: float
    """concentration of the root noise"""
    dirichlet_weight: float
    """share of the noise in the root priors (0: no noise, as in gating and the trained agent)"""
    temperature_moves: int
    """moves at the start of a game drawn in proportion to visit counts"""

    @classmethod
    def of(cls, knobs, noise: bool) -> "Params":
        """The search of an alphazero Config's knobs, with root noise or without."""
        return cls(knobs.simulations, knobs.c_puct, knobs.dirichlet_alpha,
                   knobs.dirichlet_weight if noise else 0.0, knobs.temperature_moves)

    @classmethod
    def greedy(cls, simulations: int, c_puct: float) -> "Params":
        """A noise-free search whose most visited move is played (the trained agent)."""
        return cls(simulations, c_puct, 1.0, 0.0, 0)


class Tree(NamedTuple):
    """A search tree in arrays, one row per node (node 0 the root): work space that a search
    overwrites, big enough for simulations + 1 nodes (`new_tree`)."""

    codes: np.ndarray
    """(size,) the node's position"""
    children: np.ndarray
    """(size, 9) the node reached by each move, -1 while unexpanded"""
    visits: np.ndarray
    """(size, 9) N(s, a)"""
    totals: np.ndarray
    """(size, 9) W(s, a), the sum of the values backed up through the move (mover's view)"""
    priors: np.ndarray
    """(size, 9) P(s, a), with the noise at the root"""


@njit(cache=True)
def new_tree(simulations):
    size = simulations + 1
    return Tree(np.empty(size, np.int64), np.empty((size, 9), np.int64), np.empty((size, 9)),
                np.empty((size, 9)), np.empty((size, 9)))


@njit(inline="always")
def _open(tree, node, code, priors):
    """Node `node` of the tree becomes position `code`: no children, no visits, the net's priors."""
    tree.codes[node] = code
    tree.children[node, :] = -1
    tree.visits[node, :] = 0.0
    tree.totals[node, :] = 0.0
    tree.priors[node, :] = priors[code]


# One compiled loop: the descent and the backup stay inline in it (a call per step of every
# simulation would cost the search speed), and it reads line for line as reference_search.
@njit(cache=True)
def search(root, priors, values, params, tree, rules):
    """PUCT search of params.simulations from position `root` guided by a net's priors and
    values (net_tables) in work space `tree`. Returns the root's visit counts (a view into the
    tree: read them before the next search)."""
    after, legal, terminal = rules.after, rules.legal, rules.terminal
    codes, children, visits, totals, tree_priors = tree
    _open(tree, 0, root, priors)
    if params.dirichlet_weight > 0.0:
        noise = np.zeros(9)
        for m in range(9):
            if legal[root, m]:
                noise[m] = np.random.gamma(params.dirichlet_alpha, 1.0)
        noise /= noise.sum()
        weight = params.dirichlet_weight
        tree_priors[0, :] = (1.0 - weight) * tree_priors[0, :] + weight * noise
    n_nodes = 1
    path_nodes = np.empty(9, np.int64)
    path_moves = np.empty(9, np.int64)
    for _ in range(params.simulations):
        node, depth = 0, 0
        while True:
            code = codes[node]
            if terminal[code]:
                value = values[code]
                break
            sqrt_visits = np.sqrt(max(visits[node].sum(), 1.0))
            best, best_score = -1, -np.inf
            for m in range(9):
                if legal[code, m]:
                    n = visits[node, m]
                    q = totals[node, m] / n if n > 0 else 0.0
                    score = q + params.c_puct * tree_priors[node, m] * sqrt_visits / (1.0 + n)
                    if score > best_score:
                        best, best_score = m, score
            path_nodes[depth], path_moves[depth] = node, best
            depth += 1
            child = children[node, best]
            if child < 0:  # a new leaf: the net's value (or the exact one if the game is over)
                child = n_nodes
                n_nodes += 1
                code = after[code, best]
                _open(tree, child, code, priors)
                children[node, best] = child
                value = values[code]
                break
            node = child
        # `value` is for the side to move at the end of the path; each edge above belongs to the
        # other side, so the sign flips level by level.
        for d in range(depth - 1, -1, -1):
            value = -value
            visits[path_nodes[d], path_moves[d]] += 1.0
            totals[path_nodes[d], path_moves[d]] += value
    return visits[0]


def reference_search(root: int, priors, values, params: Params, stream: game.Stream | None = None):
    """`search` in plain Python, a node a dict: the root's visit counts (9,). With root noise
    (params.dirichlet_weight > 0) it draws the noise from `stream` as the kernel draws it from
    numba's stream, so from the same seed both searches are the same."""

    def node(code):
        return {"code": code, "children": {}, "N": np.zeros(9), "W": np.zeros(9),
                "P": priors[code].copy()}

    tree = node(root)
    if params.dirichlet_weight > 0.0:
        noise = np.zeros(9)
        for m in np.flatnonzero(game.LEGAL[root]):
            noise[m] = stream.gamma(params.dirichlet_alpha)
        total = 0.0
        for x in noise:  # summed in order, as the kernel sums
            total += x
        noise /= total
        weight = params.dirichlet_weight
        tree["P"] = (1.0 - weight) * tree["P"] + weight * noise
    for _ in range(params.simulations):
        current, path = tree, []
        while True:  # descend by PUCT until a new leaf or the end of the game
            code = current["code"]
            if game.TERMINAL[code]:
                value = values[code]
                break
            sqrt_visits = np.sqrt(max(current["N"].sum(), 1.0))
            best, best_score = -1, -np.inf
            for m in np.flatnonzero(game.LEGAL[code]):
                n = current["N"][m]
                q = current["W"][m] / n if n > 0 else 0.0
                score = q + params.c_puct * current["P"][m] * sqrt_visits / (1.0 + n)
                if score > best_score:
                    best, best_score = m, score
            path.append((current, best))
            if best not in current["children"]:  # a new leaf: its value from the net's table
                current["children"][best] = node(game.AFTER[code, best])
                value = values[game.AFTER[code, best]]
                break
            current = current["children"][best]
        for parent, move in reversed(path):  # back up, from the mover's view at each level
            value = -value
            parent["N"][move] += 1.0
            parent["W"][move] += value
    return tree["N"]


@njit(cache=True)
def root_counts(roots, priors, values, params, rules):
    """(n, 9) visit counts of a search from each root (zeros at terminal roots)."""
    tree = new_tree(params.simulations)
    counts = np.zeros((roots.shape[0], 9))
    for i in range(roots.shape[0]):
        if not rules.terminal[roots[i]]:
            counts[i] = search(roots[i], priors, values, params, tree, rules)
    return counts


@njit(cache=True)
def choose(counts, sample):
    """A move drawn in proportion to visit counts, or the most visited (ties at random); on any
    board (lab.agents.mnk_alphazero's too)."""
    if sample:
        u = np.random.random() * counts.sum()
        for m in range(counts.shape[0]):
            u -= counts[m]
            if counts[m] > 0 and u < 0:
                return m
    ties = np.flatnonzero(counts == counts.max())
    return ties[np.random.randint(ties.shape[0])]
