"""Where runs land: one Parquet file per run, written atomically, read back as one tidy table.

A results directory holds `<run_id>.parquet` files (one row per iteration, every knob repeated on
every row), `_checkpoints/<run_id>.npz` and `_figures/`. Names starting with `_` or `.` are skipped
by pyarrow's dataset discovery, so `pandas.read_parquet(DIR)` reads exactly the run tables, and a
half-written file (always a hidden temporary name until its atomic rename) is never read.
"""

import os
import tempfile
import typing
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from lab import agents, evaluate, provenance
from lab.knobs import RunConfig

CHECKPOINTS = "_checkpoints"
FIGURES = "_figures"
_ARROW = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}
METRICS = [
    ("iteration", pa.int64()), ("episodes", pa.int64()),
    ("p1_wins", pa.int64()), ("p2_wins", pa.int64()), ("draws", pa.int64()),
    ("p1_win_rate", pa.float64()), ("p2_win_rate", pa.float64()), ("draw_rate", pa.float64()),
    ("train_seconds", pa.float64()), ("status", pa.string()), ("error", pa.string()),
    ("train_epsilon", pa.float64()),
]
EVALUATION = [(evaluate.column(seat, key), _ARROW[kind])
              for seat in (1, 2) for key, kind in evaluate.KEYS.items()]
EVALUATION += [(evaluate.alternated_column(key), pa.float64()) for key in evaluate.ALTERNATED_KEYS]
"""Exact evaluation (lab.evaluate.exact) of the agent in each seat, and with seats alternated
(lab.evaluate.alternated) for agents evaluated in both; null where not evaluated."""


SEARCH = [("pbt_trial", pa.string())]
"""A population-based-training search's runs (lab.search.PBT_TRIAL): the trial that trained each
row (null in every other run)."""


PROVENANCE = [(name, pa.timestamp("us", tz="UTC") if name.endswith("_utc") else
                pa.bool_() if name == "git_dirty" else pa.string()) for name in provenance.COLUMNS]
"""Which code on which machine trained the run, and when (lab.provenance)."""


CIRCUMSTANCES = ("train_seconds", *provenance.COLUMNS)
"""The columns that differ between two runs of the same job: when, where, by which command and
how fast (the same configuration and seed give the same rows otherwise, alone, in a sweep,
serially or on Ray)."""


class ResultsError(RuntimeError):
    """A results directory holds something that is not a readable run table."""


@cache
def schema() -> pa.Schema:
    """The one schema of every run file: run id, every knob of every algorithm, the metrics.

    A knob an algorithm does not use is null in its rows, so files of different algorithms
    concatenate without surprises.
    """
    fields = {"run_id": pa.string()}
    for key, kind in typing.get_type_hints(RunConfig).items():
        fields[key] = _ARROW[next(t for t in typing.get_args(kind) or (kind,) if t is not type(None))]
    for algorithm in agents.REGISTRY.values():
        for key, kind in typing.get_type_hints(algorithm.Config).items():
            if fields.setdefault(key, _ARROW[kind]) != _ARROW[kind]:
                raise TypeError(f"knob {key!r} has two types across algorithms")
    fields.update(METRICS)
    fields.update(EVALUATION)
    fields.update(SEARCH)
    fields.update(PROVENANCE)
    return pa.schema(list(fields.items()))


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _atomic_write(path: Path, write) -> None:
    """Write via a hidden temporary file in the same directory, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())  # mkstemp makes files private; results are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def arrow_table(rows: pd.DataFrame) -> pa.Table:
    """The rows in the schema: the columns they have converted, the others typed nulls (a
    column of NaN cannot become a timestamp or a string)."""
    have = [field for field in schema() if field.name in rows.columns]
    table = pa.Table.from_pandas(rows[[f.name for f in have]], schema=pa.schema(have),
                                 preserve_index=False)
    return pa.table([table[f.name] if f.name in rows.columns else pa.nulls(len(rows), f.type)
                     for f in schema()], schema=schema())


def save(result, results_dir) -> Path:
    """Store a RunResult: its checkpoint first, then its table (whose presence marks it done)."""
    results_dir = Path(results_dir)
    if result.checkpoint is not None:
        ck = results_dir / CHECKPOINTS / f"{result.run_id}.npz"
        _atomic_write(ck, lambda f: f.write(result.checkpoint))
    table = arrow_table(result.rows)
    path = results_dir / f"{result.run_id}.parquet"
    _atomic_write(path, lambda f: pq.write_table(table, f))
    return path


def run_files(results_dir) -> list[Path]:
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        return []
    return sorted(p for p in results_dir.glob("*.parquet") if not p.name.startswith((".", "_")))


def _read(path: Path, columns=None) -> pa.Table:
    """One run table (these columns of it), or a ResultsError naming the file."""
    try:
        with pq.ParquetFile(path) as f:
            table = f.read(columns=columns, use_threads=False)  # _read_all reads files in parallel
        if not {"run_id", "status"} <= set(table.column_names):  # read() skips missing columns
            raise pa.ArrowInvalid("it has no run_id and status columns")
        return table
    except (pa.ArrowException, OSError) as exc:
        raise ResultsError(
            f"results_dir holds {path}, which is not a readable run table ({exc}); "
            "results_dir must hold only run tables: move it out"
        ) from None


def _read_all(files, read):
    """`read` of every file, on threads (pyarrow reads and decodes without the GIL): thousands
    of small run tables cost mostly per-file work. Raises the first failing file's error."""
    with ThreadPoolExecutor() as pool:
        return list(pool.map(read, files))


def _status(path: Path) -> tuple[str | None, str]:
    table = _read(path, columns=["run_id", "status"]).to_pydict()
    run_id = table["run_id"][0] if table["run_id"] else None
    return run_id, ("failed" if "failed" in table["status"] else
                    "stopped" if "stopped" in table["status"] else "finished")


def statuses(results_dir) -> dict[str, str]:
    """run_id -> 'finished', 'failed' or 'stopped' (ended early by a search scheduler) for every
    run stored in results_dir."""
    return {run_id: status for run_id, status in _read_all(run_files(results_dir), _status) if run_id}


_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
"""Integer and boolean columns stay integers and booleans in pandas where some rows are null (the
evaluation columns between evaluations, the knobs an algorithm does not use, a failed run's row)."""


def load(results_dir) -> pd.DataFrame:
    """Every run in results_dir as one DataFrame, one row per (run, iteration)."""
    files = run_files(results_dir)
    if not files:
        raise ResultsError(f"no run tables (*.parquet) in {results_dir}")
    table = pa.concat_tables(_read_all(files, _read), promote_options="permissive")
    # one chunk per column instead of one per file: to_pandas then takes half the time
    frame = table.combine_chunks().to_pandas(types_mapper=_NULLABLE.get)
    return frame.sort_values(["run_id", "iteration"], ignore_index=True)


def runs(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run of a loaded table (`load`): its last row, so its knobs, status, error,
    final training rates, final exact evaluation and provenance."""
    return frame.sort_values(["run_id", "iteration"]).groupby("run_id", sort=False).tail(1) \
        .reset_index(drop=True)


def evaluations(frame: pd.DataFrame) -> pd.DataFrame:
    """The evaluation points of a loaded table as a long table: one row per (run, evaluated
    iteration, seat evaluated) with a `seat` column and the measures of lab.evaluate.exact under
    their plain keys (random_win, ..., optimal_move_rate), beside every other column.

    The seat evaluated is the one the agent trained in (both in self-play)."""
    columns = {seat: {evaluate.column(seat, key): key for key in evaluate.KEYS} for seat in (1, 2)}
    keep = [c for c in frame.columns if c not in {**columns[1], **columns[2]}]
    parts = []
    for seat, names in columns.items():
        if not set(names) <= set(frame.columns):
            continue
        evaluated = frame[next(iter(names))].notna()
        in_seat = (frame["opponent"] == "self") | (frame["player"] == seat)
        rows = frame.loc[evaluated & in_seat, keep + list(names)]
        parts.append(rows.rename(columns=names).assign(seat=seat))
    if not parts:
        return pd.DataFrame(columns=keep + ["seat", *evaluate.KEYS])
    return pd.concat(parts, ignore_index=True)


def checkpoint(results_dir, run_id: str) -> Path:
    return Path(results_dir) / CHECKPOINTS / f"{run_id}.npz"
