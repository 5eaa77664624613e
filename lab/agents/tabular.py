"""What the tabular learners (q_table, td_value, negamax_q) share: their Learners' start (the
game's engine, the fixed opponent) and iteration, and their trained agent, one class for every
board: on 3x3 it reads a dense table, on bigger boards a table of visited positions
(lab.game.sparse), its rows read as `Reading` says: a Q per cell (q_table, negamax_q), or a value
per afterstate (td_value; finished afterstates have fixed values and are never stored).
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from lab import game
from lab.game import opponents
from lab.game import bitboards, bots, engine
from lab.agents import base
from lab.knobs import TTT
from lab.game.bitboards import empty_mask
from lab.game.bots import cells_in
from lab.game.sparse import Table, View, find

TABLE = -1
"""The kind, beside lab.game.bots' bot kinds, of a seat played from the table"""


class Reading(NamedTuple):
    """How a table's rows score the moves of a position."""

    afterstates: bool
    """a move scores the value of the position after it (else the position's row: a Q per cell)"""
    draw_value: float
    """afterstates: the fixed value of a move that fills the board without a line (a line: 1)"""
    members: int
    """Q rows: tables side by side in a row, cells values each; the greedy score is their sum"""


@njit(cache=True)
def scores_at(board, t, reading, x, o, side, out):
    """out[cell] = the score of each empty cell for `side` (0 X, 1 O) to move at (x, o), other
    cells left as they are; Q rows sum the first `reading.members` members."""
    if reading.afterstates:
        engine.afterstate_scores(board, t, (x, o), side, reading.draw_value, out)
        return
    cells = board.m * board.n
    empty = empty_mask(board, x, o)
    slot = find(t, x, o)
    for cell in range(cells):
        if empty & (np.uint64(1) << np.uint64(cell)):
            total = 0.0
            for m in range(reading.members):
                total += t.values[slot, m * cells + cell] if slot >= 0 else t.default
            out[cell] = total


@njit(cache=True)
def score_rows(board, t, reading, xs, os):
    """(len(xs), cells) scores of the cells at each position for the side to move; filled cells 0."""
    rows = np.zeros((len(xs), board.m * board.n))
    for i in range(len(xs)):
        side = 0 if cells_in(xs[i]) == cells_in(os[i]) else 1
        scores_at(board, t, reading, xs[i], os[i], side, rows[i])
    return rows


class Frozen(NamedTuple):
    """A tabular agent as a learner's opponent on a bigger board (`Agent.frozen`)."""

    table: View
    reading: Reading
    scores: np.ndarray  # room for a score per cell


@engine.plays(Frozen)
def _frozen_move(g, opponent, pos, side):
    scores_at(g, opponent.table, opponent.reading, pos[0], pos[1], side, opponent.scores)
    return engine.best_cell(g, opponent.scores, pos)


class Agent(base.Agent):
    """Plays greedily from its table, in either seat, on the board `shape` (m, n, k)."""

    DENSE = "q"
    """the name of a 3x3 table among the checkpoint's arrays"""
    READING = Reading(afterstates=False, draw_value=0.0, members=1)
    """how a 3x3 table is read (a bigger board's checkpoint says its own)"""

    def __init__(self, table, shape: tuple = TTT, reading: Reading | None = None):
        self.table, self.shape, self.reading = table, tuple(shape), reading or self.READING
        self.dense = isinstance(table, np.ndarray)
        self.board = None if self.dense else bitboards.board(*self.shape)

    def scores(self, positions):
        if self.dense:  # 3x3's codes index the rows; finished afterstates hold their fixed values
            if not self.reading.afterstates:
                return self.table[positions]
            after = game.AFTER[positions]
            return np.where(after >= 0, self.table[np.maximum(after, 0)], -np.inf)
        positions = np.asarray(positions, np.uint64).reshape(-1, 2)
        return score_rows(self.board, self.table.view(), self.reading, positions[:, 0], positions[:, 1])

    def frozen(self) -> Frozen:
        return Frozen(self.table.view(), self.reading, np.zeros(self.board.m * self.board.n))

    def arrays(self) -> dict:
        if self.dense:
            return {self.DENSE: self.table}
        return {**self.table.compact(), "default": np.array(self.table.default),
                **{name: np.array(value) for name, value in self.reading._asdict().items()},
                "board": np.array(self.shape)}

    @classmethod
    def from_arrays(cls, arrays) -> "Agent":
        if "board" not in arrays:
            return cls(np.asarray(arrays[cls.DENSE], dtype=float))
        table = Table.from_entries(arrays["x"], arrays["o"], arrays["values"], float(arrays["default"]))
        reading = Reading(bool(arrays["afterstates"]), float(arrays["draw_value"]), int(arrays["members"]))
        return cls(table, tuple(int(v) for v in arrays["board"]), reading)


def opponent(g, run):
    """The opponent a learner's kernel (alphazero's too) plays on the game g (lab.game.engine):
    3x3's move table (lab.game.opponents), a bigger board's checkpoint frozen, or the lab.game.bots
    bot of each seat it does not train in (TABLE where it does; on 3x3 mcts only)."""
    if engine.tabulated(g) and run.opponent != "mcts":
        return opponents.for_training(run.opponent)
    if opponents.is_checkpoint(run.opponent):
        return opponents.checkpoint(run.opponent).frozen()
    bot = None if run.opponent == "self" else bots.bot(
        run.opponent, run.mcts_simulations if run.opponent == "mcts" else None)
    kinds = [TABLE if seat in run.seats else bots.NAMES.index(bot.name) for seat in (1, 2)]
    simulations = run.mcts_simulations if run.opponent == "mcts" else 1
    board = engine.THREE if engine.tabulated(g) else g
    return engine.fixed_opponent(kinds, run.mcts_simulations, lambda: bots.tree(
        board, simulations, perfect=run.opponent == "perfect"))


class Learner(base.Learner):
    """The start of the tabular (and net) Learners: the kernels' random stream seeded, the game's
    engine (`game`) and the fixed opponent (`opponent`). A tabular learner names its table's
    attribute (`TABLE_NAME`) and plays its kernel in `train_on`."""

    DERIVED = ("game", "opponent")
    TABLE_NAME = ""
    """the attribute holding a tabular learner's table"""

    def __init__(self, knobs, run):
        super().__init__(knobs, run)
        game.seed_kernels(run.seed)
        self.game = engine.of(run.game)
        self.opponent = opponent(self.game, run)

    def dense(self) -> bool:
        """Whether the learner's table is a dense array (3x3's), not a table of visited positions."""
        return engine.tabulated(self.game)

    def train_on(self, table, episodes: int, tally: np.ndarray) -> int:
        """Play up to `episodes` on `table` (a dense array or a table's view), adding the results to
        tally; return how many were played (fewer where a table of visited positions needs room)."""
        raise NotImplementedError

    def iterate(self) -> np.ndarray:
        """`train_on` the table `episodes_per_update` episodes, growing a table of visited
        positions whenever `train_on` stops short."""
        tally, table, played = np.zeros(3, np.int64), getattr(self, self.TABLE_NAME), 0
        if self.dense():
            self.train_on(table, self.run.episodes_per_update, tally)
            return tally
        while played < self.run.episodes_per_update:
            table.make_room(self.params.per_game)
            played += self.train_on(table.view(), self.run.episodes_per_update - played, tally)
        return tally

    def memory(self) -> dict:
        """A table of visited positions' entries and bytes (none for a dense table or a net)."""
        return {} if self.dense() or not self.TABLE_NAME else getattr(self, self.TABLE_NAME).columns()
