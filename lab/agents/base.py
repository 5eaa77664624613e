"""The learner contract: what every algorithm provides, and what every trained agent is.

An algorithm (lab/agents/<name>.py) provides an `Algorithm` record: its knobs (a `Knobs`
dataclass), its `Learner` and its `Agent`. The run loop (lab.run) only ever talks to these types.
"""

import abc
import dataclasses
import json

import numpy as np
from numba import njit

from lab import game
from lab.game import bitboards, bots, engine
from lab.files import npz_bytes
from lab.compat.numba import kernel_stream, set_kernel_stream
from lab.knobs import TTT, Knobs, RunConfig, side


_SEAT_DECISIONS = {seat: game.DECISIONS[game.TO_MOVE[game.DECISIONS] == side(seat)] for seat in (1, 2)}
"""The decision positions where each seat moves."""


class Agent(abc.ABC):
    """A trained greedy player on the board `shape` (m, n, k): subclasses score moves, and the
    best-scoring legal moves are its play. Positions are lab.game.engine's: board codes on 3x3,
    elsewhere an (n, 2) array of (x, o) uint64 bitboards; `scores` works from any reachable open
    position, for the side to move there (X when both have as many stones)."""

    algorithm: str = ""
    shape: tuple = TTT
    seats: tuple = (1, 2)
    """The seats (1 X, 2 O) it learned to play: both, unless it trained in one seat only"""

    @abc.abstractmethod
    def scores(self, positions: np.ndarray) -> np.ndarray:
        """(n, cells) move scores at positions, higher is better; illegal entries are ignored."""

    @abc.abstractmethod
    def arrays(self) -> dict:
        """The agent's parameters as named numpy arrays (numbers and strings only)."""

    @classmethod
    @abc.abstractmethod
    def from_arrays(cls, arrays: dict) -> "Agent":
        """The agent whose `arrays()` these are."""

    def policy(self, positions: np.ndarray) -> np.ndarray:
        """(n, cells) probabilities of the greedy move, shared equally among tied best moves."""
        positions = np.asarray(positions)
        if self.shape == TTT:  # compiled, for the exact evaluation's 4,520 positions at a time
            return game.greedy(self.scores(positions), game.LEGAL[positions])
        empty = engine.inputs(engine.of(self.shape), positions, np.int8) == 0
        scores = np.where(empty, self.scores(positions), -np.inf)
        best = empty & (scores == scores.max(axis=1, keepdims=True))
        return best / best.sum(axis=1, keepdims=True)

    def move_table(self, seat: int | None = None) -> np.ndarray:
        """3x3's: the greedy policy at every reachable decision position as a move table (lab.game);
        with `seat`, only where that seat moves (the rows its exact evaluation reads; the rest 0)."""
        codes = game.DECISIONS if seat is None else _SEAT_DECISIONS[seat]
        return game.greedy_table(codes, self.scores(codes))

    def frozen(self):
        """Bigger boards': the agent as a learner's opponent, a NamedTuple whose move
        lab.game.engine.plays registers for the kernels (3x3's opponents play `move_table`)."""
        raise NotImplementedError(f"a {self.algorithm} agent does not play as an opponent on a bigger board")

    def play(self, opponent: bots.Bot, seat: int, games: int, seed: int) -> np.ndarray:
        """Bigger boards': [X wins, O wins, draws] of `games` games of the agent, `frozen`, in seat
        `seat` against bot `opponent`, drawn with `seed` (the kernels' stream is left as it was)."""
        board, kinds = engine.of(self.shape), [bots.NAMES.index(opponent.name)] * 2
        fixed = engine.fixed_opponent(kinds, opponent.simulations, lambda: bots.tree(
            board, opponent.simulations, perfect=opponent.name == "perfect"))
        agent, before = self.frozen(), kernel_stream()
        game.seed_kernels(seed)
        tally = match(board, agent, fixed, seat - 1, games)
        set_kernel_stream(before)
        return tally

    def act(self, board, rng: np.random.Generator | None = None) -> int:
        """A greedy legal move (ties at random) for the side to move on `board`: its m * n cells row
        by row (nine on 3x3), 1 X, -1 O, 0 empty."""
        if self.shape == TTT:
            position = np.array([game.encode(board)])
            over = game.TERMINAL[position[0]]
        else:
            position, over = _bitboards(board, self.shape)
        if over:
            raise ValueError("the game is over: there is no move to make")
        probs = self.policy(position)[0]
        return int((rng or np.random.default_rng()).choice(len(probs), p=probs))

    def save(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    def to_bytes(self) -> bytes:
        return npz_bytes(algorithm=np.array(self.algorithm), **self.arrays())


def by_side(agent: Agent, positions: np.ndarray, score) -> np.ndarray:
    """The scores at positions of an agent that scores each seat its own way: score(seat, positions)."""
    cells = engine.inputs(engine.of(agent.shape), positions, np.int8)
    o_moves = cells.sum(axis=1) != 0  # O has one stone less
    out = np.zeros(cells.shape)
    for seat, rows in ((1, ~o_moves), (2, o_moves)):
        if rows.any():
            part = score(seat, positions[rows])
            out = out.astype(part.dtype, copy=False)
            out[rows] = part
    return out


@njit(cache=True)
def match(g, agent, fixed, me, n):
    """[X wins, O wins, draws] of n games on the board g: side `me` (0 X, 1 O) played by `agent`
    (an `Agent.frozen`), the other by `fixed` (lab.game.engine.fixed_opponent)."""
    tally = np.zeros(3, np.int64)
    for _ in range(n):
        pos, side = engine.start(g), 0
        while True:
            if side == me:
                cell = engine.opponent_move(g, agent, pos, side)
            else:
                cell = engine.opponent_move(g, fixed, pos, side)
            pos, won, over = engine.play(g, pos, cell, side)
            if over:
                tally[side if won else engine.DRAW] += 1
                break
            side = 1 - side
    return tally


def _bitboards(board, shape) -> tuple[np.ndarray, bool]:
    """A bigger board's cells as a position (1, 2) of X's and O's bitboards, and whether its game is over."""
    m, n, k = shape
    cells = np.asarray(board).ravel()
    lead = (cells == 1).sum() - (cells == -1).sum()  # X moves first: as many stones as O, or one more
    if cells.shape != (m * n,) or not np.isin(cells, (-1, 0, 1)).all() or lead not in (0, 1):
        raise ValueError(f"a board of m, n, k = {shape} is {m * n} cells of 1 (X), -1 (O) or 0 (empty), X "
                         f"having as many stones as O or one more, got {board!r}")
    x, o = (sum(1 << int(c) for c in np.flatnonzero(cells == mark)) for mark in (1, -1))
    return np.array([[x, o]], np.uint64), bitboards.over(bitboards.board(m, n, k), x, o)


class Learner(abc.ABC):
    """Trains one agent: built from the algorithm's knobs and the run's, stepped by the run loop."""

    def __init__(self, knobs: Knobs, run: RunConfig):
        self.knobs, self.run = knobs, run

    @abc.abstractmethod
    def iterate(self) -> np.ndarray:
        """Play `run.episodes_per_update` training episodes, update once, and return their
        [X wins, O wins, draws]."""

    @abc.abstractmethod
    def agent(self) -> Agent:
        """The current greedy agent as a snapshot: later training never changes it."""

    @classmethod
    def check_run(cls, knobs: Knobs, run: RunConfig) -> None:
        """Refuse, before anything runs, with a one-line ConfigError naming the key, a run this
        learner could not hold (tabular ones: tables that could outgrow memory)."""

    def memory(self) -> dict:
        """Run-table columns of the memory its tables take, added to every evaluated row."""
        return {}

    def exploration(self) -> float | None:
        """The epsilon of the last training game (here the `epsilon` knob), None if none."""
        epsilon = getattr(self.knobs, "epsilon", None)
        return None if epsilon is None else float(epsilon)

    # Training state (resuming, PBT): the attributes go into an .npz, arrays as arrays, the rest
    # into one JSON document, with numba's random state; loading writes saved values into a fresh
    # learner and runs no code. What the knobs determine is rebuilt (NamedTuples, the opponent,
    # DERIVED), so a learner restored under mutated knobs (PBT) trains with them.
    NOT_STATE = ("knobs", "run", "opponent")
    DERIVED: tuple[str, ...] = ()
    """Further attributes that the knobs determine (rebuilt, not saved)"""

    def state(self) -> dict:
        """The whole training state as {"json": str, <name>: ndarray, ...} for np.savez."""
        arrays = {}
        skip = set(self.NOT_STATE) | set(self.DERIVED)
        tree = {name: _encode(value, f"a{i}", arrays) for i, (name, value) in enumerate(vars(self).items())
                if name not in skip and not _is_namedtuple(value)}
        kernel = kernel_stream()
        document = {"attributes": tree, "kernel_rng": [kernel[0], list(map(int, kernel[1]))],
                    "knobs": _encode(dataclasses.asdict(self.knobs), "k", {})}
        return {"json": np.array(json.dumps(document)), **arrays}

    def restore(self, state: dict) -> None:
        """Overwrite this (freshly built) learner's training state with a saved one (`state`)."""
        document = json.loads(str(state["json"]))
        saved_knobs = _decode(document.get("knobs", {"dict": {}}), None, {})
        knobs = dataclasses.asdict(self.knobs)
        for name, value in document["attributes"].items():
            if name in self.NOT_STATE or name in self.DERIVED:
                continue
            value = _decode(value, getattr(self, name, None), state)
            old, new = saved_knobs.get(name), knobs.get(name)
            if (isinstance(value, float) and isinstance(old, (int, float)) and isinstance(new, (int, float))
                    and old != new):  # a decaying knob that PBT mutated: the same decay, the new start
                value = value * new / old if old else float(new)
            setattr(self, name, value)
        index, keys = document["kernel_rng"]
        set_kernel_stream((int(index), [int(k) for k in keys]))


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _encode(value, key: str, arrays: dict):
    """A JSON-able description of `value`; its arrays go to `arrays` under names made from key."""
    if isinstance(value, np.ndarray):
        arrays[key] = value
        return {"array": key}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.str}
    if isinstance(value, np.random.Generator):
        return {"generator": value.bit_generator.state}
    if _is_namedtuple(value):
        return {"derived": True}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple":
                [_encode(v, f"{key}_{i}", arrays) for i, v in enumerate(value)]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _encode(v, f"{key}_{i}", arrays) for i, (k, v) in enumerate(value.items())}}
    if isinstance(value, dict) and all(isinstance(k, (int, np.integer)) for k in value):
        return {"int_dict": [[int(k), _encode(v, f"{key}_{i}", arrays)] for i, (k, v) in enumerate(value.items())]}
    if hasattr(value, "__dict__"):
        return {"object": {k: _encode(v, f"{key}_{i}", arrays) for i, (k, v) in enumerate(vars(value).items())}}
    raise TypeError(f"cannot save learner state of type {type(value).__name__}")


def _decode(value, current, arrays: dict):
    """The saved `value` as an object, written into `current` (the fresh learner's) where that is
    an object (an MLP, a Generator) so that only data, never a type, comes from the file."""
    if not isinstance(value, dict):
        return value
    if "array" in value:
        return np.asarray(arrays[value["array"]])
    if "scalar" in value:
        return np.dtype(value["dtype"]).type(value["scalar"])
    if "generator" in value:
        if not isinstance(current, np.random.Generator):
            raise ValueError("saved state has a random generator where the learner has none")
        current.bit_generator.state = value["generator"]
        return current
    if "derived" in value:
        return current
    if "list" in value or "tuple" in value:
        items = value.get("list", value.get("tuple"))
        old = list(current) if isinstance(current, (list, tuple)) else []
        out = [_decode(v, old[i] if i < len(old) else None, arrays) for i, v in enumerate(items)]
        return out if "list" in value else tuple(out)
    if "dict" in value or "int_dict" in value:
        old = current if isinstance(current, dict) else {}
        items = value["dict"].items() if "dict" in value else [(int(k), v) for k, v in value["int_dict"]]
        return {k: _decode(v, old.get(k), arrays) for k, v in items}
    if "object" in value:
        if current is None or not hasattr(current, "__dict__"):
            raise ValueError("saved state has an object where the learner has none")
        for k, v in value["object"].items():
            setattr(current, k, _decode(v, getattr(current, k, None), arrays))
        return current
    raise ValueError(f"unknown entry in saved learner state: {sorted(value)}")


@dataclasses.dataclass(frozen=True)
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
