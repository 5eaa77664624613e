"""Knobs: the typed, validated settings of a run. `RunConfig` holds the knobs every run has; each
algorithm's `Config` (a frozen dataclass deriving from `Knobs`) the knobs it uses, each stored in
its declared type (`epsilon=1` and `epsilon=1.0` are one run). It imports nothing of the lab.
"""

import dataclasses
import functools
import typing
from dataclasses import dataclass


class ConfigError(ValueError):
    """A knob has a value the lab cannot run; the message names the key and what is allowed."""


def require(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={value!r} is not allowed: {key} must be {allowed}")


def is_kind(value, kind) -> bool:
    """Whether `value` is acceptable for a field of type `kind` (an int is a float; a bool is
    neither)."""
    if kind in (int, float):
        return isinstance(value, (int, kind)) and not isinstance(value, bool)
    return isinstance(value, kind)


KIND_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}

SHARED_RULES = {
    "layers": (lambda v: v >= 0,
               "a non-negative integer (0, no hidden layer, only where the algorithm allows it)"),
    "neurons": (lambda v: v >= 1, "a positive integer"),
    "alpha": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "epsilon": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
}
"""The rules of knobs that mean the same in every algorithm that uses them; an algorithm may
narrow a shared rule in its `check`, never widen it."""


_hints = functools.cache(typing.get_type_hints)  # a Config's field types, resolved once, not at every call


class Knobs:
    """Base of every algorithm's Config: checks each field's type and the shared rules, stores
    each value in its field's type (canonical: 1 and 1.0 are one float), then runs `check`."""

    ADDED = {}  # knobs added after runs were stored -> the value those runs had (lab.config.jobs.identity)

    def __post_init__(self):
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            value, kind = getattr(self, f.name), hints[f.name]
            require(is_kind(value, kind), f.name, value, KIND_NAMES[kind])
            object.__setattr__(self, f.name, kind(value))  # frozen dataclass: set once, here
            if f.name in SHARED_RULES:
                ok, allowed = SHARED_RULES[f.name]
                require(ok(value), f.name, value, allowed)
        self.check()

    def check(self) -> None:
        """Algorithm-specific rules; raise ConfigError through `require`."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


TTT = (3, 3, 3)
"""(m, n, k) of tic-tac-toe, the default game: lab.game's tables, run ids without the game keys"""


@dataclass(frozen=True)
class RunConfig:
    """The knobs every run has, whatever its algorithm."""

    algorithm: str
    """which learner trains the agent: one of lab.agents.ALGORITHMS (mc_vfa, q_table, td_value,
    negamax_q, q_net, alphazero)"""
    opponent: str
    """who the agent trains against: random, onestep (wins if it can, never blocks), block (wins,
    else blocks), mcts (MCTS-Solver of mcts_simulations playouts), perfect (minimax; where the lab
    solves the board: at most 16 cells), self (self-play), or PATH.npz: a checkpoint of any
    algorithm on the same board, frozen, playing its greedy moves"""
    player: int | None
    """the agent's seat: 1 = X (moves first), 2 = O; ignored in self-play, where the agent takes
    both seats (stored as null)"""
    episodes_per_update: int
    """training episodes (games) between two updates"""
    iterations: int
    """number of updates; total episodes = episodes_per_update x iterations"""
    seed: int
    """seeds every random stream of the run (0 to 2**32 - 1)"""
    eval_every: int
    """exact evaluation of the greedy agent every this many iterations and at the last; null =
    about 50 per run"""
    m: int
    """the board's columns (game=ttt: 3; game=mnk_4_4_4, mnk_5_5_4, or any m,n,k the engine
    lab.game.bitboards holds)"""
    n: int
    """the board's rows"""
    k: int
    """stones in a row that win"""
    mcts_simulations: int
    """MCTS playouts per move of opponent=mcts"""
    eval_games: int
    """games against each opponent at every evaluation by games (boards of more than 16 cells,
    where the exact pass cannot enumerate); null = 9,600, which makes every 95% interval at most
    2 points wide"""

    @property
    def game(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def bigger_board(self) -> bool:
        """Whether the run plays an m,n,k game other than tic-tac-toe (3,3,3), on lab.game.bitboards'
        bitboards instead of lab.game's tables."""
        return self.game != TTT

    @property
    def seats(self) -> tuple[int, ...]:
        """The seats the agent trains in and is evaluated in: both in self-play."""
        return (1, 2) if self.player is None else (self.player,)


@dataclass(frozen=True)
class ResultsSettings:
    """Keys that steer where and whether a run happens, never what it computes (checked by
    lab.config.jobs.check_settings)."""

    results_dir: str
    """where run tables, checkpoints, figures and the summary land (relative to where the sweep
    is launched)"""
    force: bool
    """re-run runs already finished in results_dir"""
    on_code_change: str
    """runs finished in results_dir by another code version: reuse them (with a note) or rerun them"""


RUN_KEYS = tuple(f.name for f in dataclasses.fields(RunConfig))
SETTINGS = tuple(f.name for f in dataclasses.fields(ResultsSettings))


def side(seat: int) -> int:
    """The mark of a seat on the board: seat 1 (X) plays +1, seat 2 (O) plays -1."""
    return 1 if seat == 1 else -1
