"""Tables of visited positions for the tabular learners on boards too big to tabulate, compiled.

4x4 has 43 million board codes, 5x5 about 1e11 positions, so bigger boards keep rows only for the
positions visited: an open-addressing hash table (linear probing) keyed by the two uint64
bitboards, `width` float64 a row. A position not in it reads as `default` in every column
(inserting it writes that first); entries are never removed.

The table stays at most half full: a learner's loop stops before a game that could take it past
half (`full`), the table doubles (`Table.make_room`, rehashed in slot order) and the loop goes
on, its random stream untouched, so the games and the table are the same whatever the pauses. A
saved state holds the arrays as they are: a resumed run continues with the very same slots.

A table of capacity C (a power of two) takes C x (16 + 8 width) bytes (`table_entries`,
`table_bytes` in every evaluated row); `check_fits` refuses a run whose table could outgrow
MEMORY_LIMIT before it starts.
"""

from math import comb
from typing import NamedTuple

import numpy as np
from numba import njit

from lab.knobs import ConfigError, RunConfig

FREE = np.uint64(2**64 - 1)
"""The x key of a free slot: X never holds every cell (O holds at least one after X's first)"""
INITIAL_CAPACITY = 1024
MEMORY_LIMIT = 4 * 2**30
"""Bytes a run's table may need at the most; `check_fits` refuses beyond. A run's peak memory is
about 2.4 times its table's: the agent evaluated and checkpointed is a copy (5x5 negamax_q with a
3.4 GiB table peaked at 8.0 GiB), so a run at the limit stays under half the development
machine's 23 GB."""
KEY_BYTES = 16
"""Bytes of a slot's key: the two uint64 bitboards"""


class View(NamedTuple):
    """A table as its compiled kernels take it."""

    x: np.ndarray  # uint64 per slot: X's stones, FREE where the slot is free
    o: np.ndarray  # uint64 per slot: O's stones
    values: np.ndarray  # (capacity, width) float64 rows
    size: np.ndarray  # [entries]: counted in place by `insert`
    default: float  # the value of every column of a position not in the table


class Table:
    """A table of visited positions: keys, rows, entries (see the module doc)."""

    def __init__(self, width: int, default: float, capacity: int = INITIAL_CAPACITY):
        self.x = np.full(capacity, FREE, np.uint64)
        self.o = np.zeros(capacity, np.uint64)
        self.values = np.zeros((capacity, width))
        self.size = np.zeros(1, np.int64)
        self.default = float(default)

    def view(self) -> View:
        return View(self.x, self.o, self.values, self.size, self.default)

    @property
    def entries(self) -> int:
        return int(self.size[0])

    @property
    def nbytes(self) -> int:
        return self.x.nbytes + self.o.nbytes + self.values.nbytes

    def columns(self) -> dict:
        """Its run-table columns: table_entries, table_bytes."""
        return {"table_entries": self.entries, "table_bytes": self.nbytes}

    def make_room(self, per_game: int) -> None:
        """Double the table until a game adding `per_game` positions keeps it at most half full."""
        capacity = len(self.x)
        while self.entries + per_game > capacity // 2:
            capacity *= 2
        if capacity == len(self.x):
            return
        bigger = Table(self.values.shape[1], self.default, capacity)
        _copy(self.view(), bigger.view())
        self.x, self.o, self.values, self.size = bigger.x, bigger.o, bigger.values, bigger.size

    def copy(self) -> "Table":
        """A table of its own with the same slots and rows (a snapshot later inserts leave alone)."""
        table = Table(self.values.shape[1], self.default, 1)
        table.x, table.o, table.values, table.size = (a.copy() for a in (self.x, self.o, self.values, self.size))
        return table

    def compact(self) -> dict:
        """The entries in slot order: {"x", "o", "values"} (a checkpoint's table)."""
        used = self.x != FREE
        return {"x": self.x[used], "o": self.o[used], "values": self.values[used]}

    @classmethod
    def from_entries(cls, x, o, values, default: float) -> "Table":
        """The table, at most half full, of these entries (as `compact` gives them)."""
        values = np.asarray(values, np.float64)
        table = cls(values.shape[1], default)
        table.make_room(len(x))
        _fill(table.view(), np.asarray(x, np.uint64), np.asarray(o, np.uint64), values)
        return table


@njit(cache=True, inline="always")
def slot_of(t, x, o):
    """The slot of position (x, o): where it is, or the free slot where it would go."""
    mask = np.uint64(len(t.x) - 1)
    h = x * np.uint64(0x9E3779B97F4A7C15) ^ (o + np.uint64(0x632BE59BD9B4E019)) * np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(31)
    slot = h & mask
    while t.x[slot] != FREE and (t.x[slot] != x or t.o[slot] != o):
        slot = (slot + np.uint64(1)) & mask
    return np.int64(slot)


@njit(cache=True, inline="always")
def find(t, x, o):
    """The slot of position (x, o), or -1 if the table does not hold it."""
    slot = slot_of(t, x, o)
    return -1 if t.x[slot] == FREE else slot


@njit(cache=True, inline="always")
def insert(t, x, o):
    """The slot of position (x, o), inserted with the default row if new (the caller keeps the
    table at most half full: a free slot is always found)."""
    slot = slot_of(t, x, o)
    if t.x[slot] == FREE:
        t.x[slot], t.o[slot] = x, o
        t.values[slot, :] = t.default
        t.size[0] += 1
    return slot


@njit(cache=True, inline="always")
def full(t, per_game):
    """Whether a game adding `per_game` positions could take the table past half full."""
    return t.size[0] + per_game > len(t.x) // 2


@njit(cache=True)
def _copy(old, new):
    for slot in range(len(old.x)):
        if old.x[slot] != FREE:
            new.values[insert(new, old.x[slot], old.o[slot])] = old.values[slot]


@njit(cache=True)
def _fill(t, xs, os, values):
    for i in range(len(xs)):
        t.values[insert(t, xs[i], os[i])] = values[i]


def positions_bound(cells: int, depths) -> int:
    """An upper bound of the positions of d stones for d in `depths`: X's ceil(d / 2) and O's
    floor(d / 2) anywhere (reachable or not)."""
    return sum(comb(cells, (d + 1) // 2) * comb(cells - (d + 1) // 2, d // 2) for d in depths)


def bytes_for(entries: int, width: int) -> int:
    """The bytes of a table holding `entries` positions at most half full."""
    capacity = INITIAL_CAPACITY
    while entries > capacity // 2:
        capacity *= 2
    return capacity * (KEY_BYTES + 8 * width)


def check_fits(run: RunConfig, algorithm: str, depths, width: int) -> None:
    """Refuse, in one line naming `iterations` (`episodes_per_update` when one update's games
    could not fit), a run whose table could need more than MEMORY_LIMIT bytes: its entries
    bounded by min(positions_bound, games x len(depths)), a table holding positions with a
    number of stones in `depths` and `width` values each."""
    per_game, cells = len(depths), run.m * run.n
    bound = min(positions_bound(cells, depths), run.episodes_per_update * run.iterations * per_game)
    needed = bytes_for(bound + per_game, width)
    if needed <= MEMORY_LIMIT:
        return
    capacity = 2 ** ((MEMORY_LIMIT // (KEY_BYTES + 8 * width)).bit_length() - 1)
    games = (capacity // 2 - per_game) // per_game
    key, value, most = "iterations", run.iterations, games // run.episodes_per_update
    per_update = f" with episodes_per_update={run.episodes_per_update}"
    if most < 1:  # one update's games already could not fit
        key, value, most, per_update = "episodes_per_update", run.episodes_per_update, games, ""
    raise ConfigError(
        f"{key}={value!r} is not allowed: {key} must be at most {most:,}{per_update} for "
        f"algorithm={algorithm} on game m={run.m}, n={run.n}, k={run.k}: its table of visited "
        f"positions could reach {bound:,} entries, a table of {needed / 2**30:,.1f} GiB (at most "
        f"half full), over the {MEMORY_LIMIT / 2**30:g} GiB limit (lab.game.sparse.MEMORY_LIMIT)")
