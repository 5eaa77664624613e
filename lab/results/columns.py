"""The columns of a run table: one schema for every run file, whatever its algorithm and board.
A row is one iteration of one run: `schema()` gives the run id, every knob of every algorithm,
the training metrics, where the time went, the evaluation and the provenance, in that order."""

import typing
from functools import cache

import pyarrow as pa

from lab import agents
from lab.config import jobs
from lab.evaluation import evaluate
from lab.results import provenance
from lab.knobs import RunConfig

_ARROW = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}
METRICS = [
    ("iteration", pa.int64()), ("episodes", pa.int64()),
    ("p1_wins", pa.int64()), ("p2_wins", pa.int64()), ("draws", pa.int64()),
    ("p1_win_rate", pa.float64()), ("p2_win_rate", pa.float64()), ("draw_rate", pa.float64()),
    ("train_seconds", pa.float64()), ("status", pa.string()), ("error", pa.string()),
    ("train_epsilon", pa.float64()),
]
TIMING = [("eval_seconds", pa.float64()), ("startup_seconds", pa.float64()),
          ("wall_seconds", pa.float64())]
"""Where a run's time went on its worker: train_seconds and eval_seconds are cumulative to each
iteration, numba compilation excluded; startup_seconds (on every row) is importing the lab on the
process's first run plus compiling or loading kernels; wall_seconds is the whole, start-up included."""
EVALUATION = [(evaluate.column(seat, key), _ARROW[kind])
              for seat in (1, 2) for key, kind in evaluate.KEYS.items()]
EVALUATION += [(evaluate.alternated_column(key), pa.float64()) for key in evaluate.ALTERNATED_KEYS]
"""Exact evaluation (lab.evaluation.evaluate.exact) of the agent in each seat, and with seats alternated
(lab.evaluation.evaluate.alternated) for agents evaluated in both; null where not evaluated."""

BOARDS = [("evaluation", pa.string())] + [
    (evaluate.column(seat, key), _ARROW[kind]) for seat in (1, 2)
    for key, kind in evaluate.BOARD_KEYS.items() if key not in evaluate.KEYS]
"""Evaluation on bigger m,n,k boards (lab.evaluation.evaluate): "exact" or "games", and the columns
3x3's evaluation has not (perfect, block and mcts shares, intervals, games); null on 3x3."""
TABLES = [("table_entries", pa.int64()), ("table_bytes", pa.int64())]
"""A tabular learner's table of visited positions on a bigger board (lab.game.sparse): its
positions and bytes, on every evaluated row; null elsewhere (3x3's tables are fixed, nets have none)."""
BOARD_COLUMNS = (*jobs.GAME_KEYS, *(name for name, _ in BOARDS + TABLES))
"""The columns bigger boards brought: fingerprint leaves them out where null (3x3 runs)."""

PBT = [("pbt_trial", pa.string())]
"""The member of a population-based-training search that trained each row (else null)."""
PROVENANCE = [(name, pa.timestamp("us", tz="UTC") if name.endswith("_utc") else
                pa.bool_() if name == "git_dirty" else pa.string()) for name in provenance.COLUMNS]
"""Which code on which machine trained the run, and when (lab.results.provenance)."""
CODE = ("lab_version", "git_commit", "git_dirty")
"""The provenance columns that say which code trained a run (lab.results.provenance.code but the command)"""
CIRCUMSTANCES = ("train_seconds", *(name for name, _ in TIMING), *provenance.COLUMNS)
"""The columns that differ between two runs of the same job (when, where, by which command, how
fast): the same configuration and seed give the same rows otherwise, wherever they run."""


@cache
def schema() -> pa.Schema:
    """The one schema of every run file (a knob an algorithm does not use is null in its rows, so
    files of different algorithms concatenate without surprises)."""
    fields = {"run_id": pa.string()}
    for key, kind in typing.get_type_hints(RunConfig).items():
        fields[key] = _ARROW[next(t for t in typing.get_args(kind) or (kind,) if t is not type(None))]
    # A knob an algorithm added later (its Config's ADDED) comes after the others: where another
    # algorithm has it already, the column keeps its place, so files and fingerprints keep theirs.
    knobs = [(key, kind) for added in (False, True) for algorithm in agents.REGISTRY.values()
             for key, kind in typing.get_type_hints(algorithm.Config).items()
             if (key in algorithm.Config.ADDED) == added]
    for key, kind in knobs:
        if fields.setdefault(key, _ARROW[kind]) != _ARROW[kind]:
            raise TypeError(f"knob {key!r} has two types across algorithms")
    for part in (METRICS, TIMING, EVALUATION, BOARDS, TABLES, PBT, PROVENANCE):
        fields.update(part)
    return pa.schema(list(fields.items()))
