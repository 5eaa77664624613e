"""AlphaZero: a policy + value net guiding PUCT search, trained on its own search (seed 002).

The net (`layers` x `neurons` tanh units) reads the board from the side to move's view (own marks
+1, the opponent's -1) and outputs 9 move logits (softmax over the legal moves: the priors P) and
a value v = tanh(.) in (-1, 1), the expected result for the side to move.

Search (PUCT, no rollouts): from the root, descend by argmax over legal moves of
Q(s, a) + c_puct P(s, a) sqrt(max(N(s), 1)) / (1 + N(s, a)), with Q = 0 for unvisited moves (the
max makes a node's first visit follow its priors); a newly reached position is a leaf whose net
value is backed up, negated at each level (the mover alternates); terminal positions back up
their exact result. Each simulation adds one node, so the tree lives in small arrays and is
compiled with numba. The net is fixed while games are played, so its priors and values are
computed once per net for every one of the 4,520 decision positions in one vectorised pass (the
ultimate batch of leaf evaluations); the search then reads them.

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

The greedy agent runs the same search without noise from the position it is asked about and plays
the most visited move: deterministic, so its scores survive a checkpoint exactly.
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

from lab import game, opponents
from lab.agents import base
from lab.knobs import Knobs, RunConfig, require
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

    def check(self):
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


def priors_and_values(outputs: np.ndarray, legal: np.ndarray):
    """Softmax of the logits over the legal moves (n, 9) and tanh of the value output (n,)."""
    logits = np.where(legal, outputs[:, :9], -np.inf)
    logits = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    return exp / exp.sum(axis=1, keepdims=True), np.tanh(outputs[:, 9])


def net_tables(net: MLP):
    """The net's priors (N_CODES, 9) and values (N_CODES,) at every decision position, for the side
    to move; terminal positions hold their exact value (-1: the player who just moved won)."""
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


# ---- the search: compiled, on arrays ----------------------------------------------------------


@njit(cache=True)
def _search(root, priors, values, simulations, c_puct, noise_alpha, noise_weight, after, legal,
            terminal, tree_codes, children, visits, totals, tree_priors, counts):
    """PUCT search of `simulations` from position `root`; writes the root's visit counts to
    `counts`. The tree arrays are work space of at least simulations + 1 nodes."""
    tree_codes[0] = root
    children[0, :] = -1
    visits[0, :] = 0.0
    totals[0, :] = 0.0
    tree_priors[0, :] = priors[root]
    if noise_weight > 0.0:
        noise = np.zeros(9)
        for m in range(9):
            if legal[root, m]:
                noise[m] = np.random.gamma(noise_alpha, 1.0)
        noise /= noise.sum()
        tree_priors[0, :] = (1.0 - noise_weight) * tree_priors[0, :] + noise_weight * noise
    n_nodes = 1
    path_nodes = np.empty(9, np.int64)
    path_moves = np.empty(9, np.int64)
    for _ in range(simulations):
        node, depth = 0, 0
        while True:
            code = tree_codes[node]
            if terminal[code]:
                value = values[code]
                break
            sqrt_visits = np.sqrt(max(visits[node].sum(), 1.0))
            best, best_score = -1, -np.inf
            for m in range(9):
                if legal[code, m]:
                    n = visits[node, m]
                    q = totals[node, m] / n if n > 0 else 0.0
                    score = q + c_puct * tree_priors[node, m] * sqrt_visits / (1.0 + n)
                    if score > best_score:
                        best, best_score = m, score
            path_nodes[depth], path_moves[depth] = node, best
            depth += 1
            child = children[node, best]
            if child < 0:  # a new leaf: the net's value (or the exact one if the game is over)
                child = n_nodes
                n_nodes += 1
                code = after[code, best]
                tree_codes[child] = code
                children[child, :] = -1
                visits[child, :] = 0.0
                totals[child, :] = 0.0
                tree_priors[child, :] = priors[code]
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
    counts[:] = visits[0]


@njit(cache=True)
def _tree(simulations):
    size = simulations + 1
    return (np.empty(size, np.int64), np.empty((size, 9), np.int64), np.empty((size, 9)),
            np.empty((size, 9)), np.empty((size, 9)))


@njit(cache=True)
def _root_counts(roots, priors, values, simulations, c_puct, after, legal, terminal):
    """(n, 9) visit counts of a noise-free search from each root (zeros at terminal roots)."""
    tree_codes, children, visits, totals, tree_priors = _tree(simulations)
    counts = np.zeros((roots.shape[0], 9))
    for i in range(roots.shape[0]):
        if not terminal[roots[i]]:
            _search(roots[i], priors, values, simulations, c_puct, 1.0, 0.0, after, legal, terminal,
                    tree_codes, children, visits, totals, tree_priors, counts[i])
    return counts


@njit(cache=True)
def _choose(counts, sample):
    """A move drawn in proportion to visit counts, or the most visited (ties at random)."""
    if sample:
        u = np.random.random() * counts.sum()
        for m in range(9):
            u -= counts[m]
            if counts[m] > 0 and u < 0:
                return m
    best = counts.max()
    ties = np.flatnonzero(counts == best)
    return ties[np.random.randint(ties.shape[0])]


@njit(cache=True)
def _play(n_games, x_priors, x_values, o_priors, o_values, x_moves, o_moves, x_searches, o_searches,
          simulations, c_puct, noise_alpha, noise_weight, temperature_moves, after, legal, terminal,
          winner, positions, policies, winners):
    """Play n_games. A searching seat moves by PUCT search on its own tables; the other seat
    samples its move table. Fills positions[g, t] (code before move t, -1 after the end),
    policies[g, t] (normalised root visit counts; zeros for moves of a non-searching seat) and
    winners[g] (1, -1, 0)."""
    tree_codes, children, visits, totals, tree_priors = _tree(simulations)
    counts = np.zeros(9)
    for g in range(n_games):
        code, t = 0, 0
        policies[g, :, :] = 0.0
        positions[g, :] = -1
        while not terminal[code]:
            x_turn = t % 2 == 0
            positions[g, t] = code
            if (x_searches and x_turn) or (o_searches and not x_turn):
                _search(code, x_priors if x_turn else o_priors, x_values if x_turn else o_values,
                        simulations, c_puct, noise_alpha, noise_weight, after, legal, terminal,
                        tree_codes, children, visits, totals, tree_priors, counts)
                policies[g, t, :] = counts / counts.sum()
                move = _choose(counts, t < temperature_moves)
            else:
                move = game.sample_move(x_moves if x_turn else o_moves, code)
            code = after[code, move]
            t += 1
        winners[g] = winner[code]


class Player:
    """One seat's way of moving in `play`: searching with a net's tables, or a fixed move table.
    The compiled kernel takes every argument as an array, so the unused one is a placeholder."""

    def __init__(self, net: MLP | None = None, moves: np.ndarray | None = None):
        self.searches = net is not None
        self.priors, self.values = net_tables(net) if net is not None else (np.zeros((1, 9)), np.zeros(1))
        self.moves = moves if moves is not None else np.zeros((1, 9))


def play(n: int, x: Player, o: Player, cfg: Config, noise: bool):
    """n games: (positions (n, 9) codes before each move, policies (n, 9, 9), winners (n,))."""
    positions = np.empty((n, 9), dtype=np.int64)
    policies = np.empty((n, 9, 9))
    winners = np.empty(n, dtype=np.int8)
    _play(n, x.priors, x.values, o.priors, o.values, x.moves, o.moves, x.searches, o.searches,
          cfg.simulations, cfg.c_puct, cfg.dirichlet_alpha, cfg.dirichlet_weight if noise else 0.0,
          cfg.temperature_moves, game.AFTER, game.LEGAL, game.TERMINAL, game.WINNER,
          positions, policies, winners)
    return positions, policies, winners


# ---- the agent and the learner ----------------------------------------------------------------


class Agent(base.Agent):
    """Plays the most visited move of a noise-free search guided by the net."""

    algorithm = "alphazero"

    def __init__(self, net: MLP, simulations: int, c_puct: float):
        self.net, self.simulations, self.c_puct = net, simulations, c_puct
        self.priors, self.values = net_tables(net)

    def scores(self, codes):
        codes = np.asarray(codes, dtype=np.int64)
        return _root_counts(codes, self.priors, self.values, self.simulations, self.c_puct,
                            game.AFTER, game.LEGAL, game.TERMINAL)

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
        self.candidate = MLP([9] + [knobs.neurons] * knobs.layers + [10], self.rng, output="linear")
        self.best = self.candidate.copy()
        self.self_play = run.opponent == "self"
        self.opponent = None if self.self_play else Player(moves=opponents.table(run.opponent))
        self.side = 1 if run.player == 1 else -1
        self.games = 0
        # The training window: one row per position of the recent games, with its game number.
        self.codes = np.empty(0, dtype=np.int64)
        self.policies = np.empty((0, 9))
        self.outcomes = np.empty(0)
        self.game_ids = np.empty(0, dtype=np.int64)

    def _seats(self, player: Player):
        """(X, O) for a game of `player` in seat `run.player` against the fixed opponent."""
        return (player, self.opponent) if self.side == 1 else (self.opponent, player)

    def iterate(self) -> np.ndarray:
        n = self.run.episodes_per_update
        best = Player(self.best)
        seats = (best, best) if self.self_play else self._seats(best)
        positions, policies, winners = play(n, *seats, self.knobs, noise=True)
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
            p, v = priors_and_values(acts[-1], game.LEGAL[codes])
            # d/d(outputs) of mean[(z - v)^2 - pi . log softmax(logits)]
            d_value = 2.0 * (v - outcomes) * (1.0 - v * v)
            grads = net.gradients(acts, np.hstack([p - policies, d_value[:, None]]) / size)
            for i, w in enumerate(net.weights):
                grads[i] = grads[i] + 2.0 * self.knobs.l2 * w
            net.descend(grads, self.knobs.alpha)

    def _candidate_holds_up(self, best: Player) -> bool:
        """The gating match (see the module docstring)."""
        n = self.knobs.gating_games
        if n == 0:
            return True
        candidate = Player(self.candidate)
        if self.self_play:
            _, _, as_x = play(n - n // 2, candidate, best, self.knobs, noise=False)
            _, _, as_o = play(n // 2, best, candidate, self.knobs, noise=False)
            candidate_wins = (as_x == 1).sum() + (as_o == -1).sum()
            best_wins = (as_x == -1).sum() + (as_o == 1).sum()
            return candidate_wins >= best_wins
        scores = []
        for player in (candidate, best):
            _, _, winners = play(n, *self._seats(player), self.knobs, noise=False)
            scores.append((self.side * winners).sum())  # wins minus losses
        return scores[0] >= scores[1]

    def agent(self) -> Agent:
        return Agent(self.best, self.knobs.simulations, self.knobs.c_puct)


ALGORITHM = base.Algorithm("alphazero", Config, Learner, Agent, self_play=True)
