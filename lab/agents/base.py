"""The learner contract: what every algorithm provides, and what every trained agent is.

An algorithm (lab/agents/<name>.py) provides an `Algorithm` record: its knobs (a `Knobs`
dataclass), its `Learner` and its `Agent`. The run loop (lab.run) only ever talks to these types.
"""

import abc
import io
from dataclasses import dataclass

import numpy as np
from numba import njit

from lab import game
from lab.knobs import Knobs, RunConfig
from lab.nets import MLP


class Agent(abc.ABC):
    """A trained greedy player. Subclasses score moves; the best-scoring legal moves are its play.

    `scores` must work from any reachable position, for the side to move there.
    """

    algorithm: str = ""

    @abc.abstractmethod
    def scores(self, codes: np.ndarray) -> np.ndarray:
        """(n, 9) move scores at board codes, higher is better; illegal entries are ignored."""

    @abc.abstractmethod
    def arrays(self) -> dict:
        """The agent's parameters as named numpy arrays (numbers and strings only)."""

    @classmethod
    @abc.abstractmethod
    def from_arrays(cls, arrays: dict) -> "Agent":
        """The agent whose `arrays()` these are."""

    def policy(self, codes: np.ndarray) -> np.ndarray:
        """(n, 9) probabilities of the greedy move, shared equally among tied best moves."""
        codes = np.asarray(codes)
        return game.greedy(self.scores(codes), game.LEGAL[codes])

    def move_table(self) -> np.ndarray:
        """The greedy policy at every reachable decision position as a move table (lab.game):
        one scores call for all of them, the compiled greedy writing the table (q_table 0.6 ->
        0.2 ms)."""
        return game.greedy_table(game.DECISIONS, self.scores(game.DECISIONS))

    def act(self, board, rng: np.random.Generator | None = None) -> int:
        """A greedy legal move for the side to move on `board` (ties broken at random)."""
        code = game.encode(board)
        if game.TERMINAL[code]:
            raise ValueError("the game is over: there is no move to make")
        probs = self.policy(np.array([code]))[0]
        return int((rng or np.random.default_rng()).choice(9, p=probs))

    def save(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, algorithm=np.array(self.algorithm), **self.arrays())
        return buffer.getvalue()


class Learner(abc.ABC):
    """Trains one agent: built from the algorithm's knobs and the run's, then stepped by the run
    loop one update at a time."""

    def __init__(self, knobs: Knobs, run: RunConfig):
        self.knobs, self.run = knobs, run  # as in lab.config.Job: the algorithm's knobs, the run's

    @abc.abstractmethod
    def iterate(self) -> np.ndarray:
        """Play `run.episodes_per_update` training episodes, update once, and return their
        [X wins, O wins, draws]."""

    @abc.abstractmethod
    def agent(self) -> Agent:
        """The current greedy agent as a snapshot: later training never changes it."""

    def exploration(self) -> float | None:
        """The epsilon of the last `iterate`'s training games (its last game's where epsilon
        decays per game); None for a learner that does not explore epsilon-greedily. This base
        version is a constant `epsilon` knob; learners that decay it override it."""
        epsilon = getattr(self.knobs, "epsilon", None)
        return None if epsilon is None else float(epsilon)


@dataclass(frozen=True)
class Algorithm:
    """One learning algorithm as the lab sees it."""

    name: str
    """the value of the `algorithm` knob"""
    Config: type[Knobs]
    """the knobs it uses (shared ones such as alpha included)"""
    Learner: type[Learner]
    Agent: type[Agent]
    self_play: bool
    """whether it also trains with opponent=self"""


class QTableAgent(Agent):
    """Plays the move of highest Q in a (3^9, 9) table of Q(position, move)."""

    def __init__(self, q: np.ndarray):
        self.q = q

    def scores(self, codes):
        return self.q[codes]

    def arrays(self):
        return {"q": self.q}

    @classmethod
    def from_arrays(cls, arrays):
        return cls(np.asarray(arrays["q"], dtype=float))


OTHER = "other_"
"""The checkpoint prefix of a self-play agent's second net (the seat that is not `player`)."""


class NetAgent(Agent):
    """An agent whose parameters are one MLP, trained in seat `player` (1 X, 2 O); trained in
    self-play, a second MLP, `other`, for the other seat."""

    def __init__(self, net: MLP, player: int, other: MLP | None = None):
        self.net = net
        self.player = player
        self.other = other

    def outputs(self, x: np.ndarray, net: MLP | None = None) -> np.ndarray:
        """Output 0 of the net (`net`, else the agent's) at each row of a large batch x: the
        arithmetic of MLP.__call__ (bit-identical results) done in place, the bias added by a
        compiled loop. MLP keeps every layer's activations for backprop, and on thousands of rows
        those fresh arrays page-fault on every call: 1.8 -> 0.9 ms for the 5,477 afterstates of a
        5 x 32 net."""
        net = net or self.net
        h = np.asarray(x, dtype=net.weights[0].dtype)
        last = len(net.weights) - 1
        for i, (w, b) in enumerate(zip(net.weights, net.biases)):
            h = h @ w
            _add_to_rows(h, b)
            if i < last and net.hidden == "relu":
                np.maximum(h, 0, out=h)
            elif not (i == last and net.output == "linear"):
                np.tanh(h, out=h)
        return h[:, 0]

    def arrays(self):
        other = {} if self.other is None else self.other.arrays(OTHER)
        return {**self.net.arrays(), "player": np.array(self.player), **other}

    @classmethod
    def from_arrays(cls, arrays):
        other = MLP.from_arrays(arrays, OTHER) if f"{OTHER}linear_output" in arrays else None
        return cls(MLP.from_arrays(arrays), int(arrays["player"]), other)


@njit(cache=True)
def _add_to_rows(h, b):
    """h += b, row by row: the same IEEE additions as numpy's broadcast add, 3x faster (numpy
    loops over a row of 32 at a time)."""
    for r in range(h.shape[0]):
        for j in range(h.shape[1]):
            h[r, j] += b[j]
