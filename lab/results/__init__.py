"""Where runs land: one Parquet file per run, written atomically, read back as one tidy table.

A results directory holds `<run_id>.parquet` files (one row per iteration, every knob on every
row) beside `_checkpoints/`, `_figures/`, `_summary/`, `_sweeps/` and `_index/`: pyarrow skips
names starting with `_` or `.`, so `pandas.read_parquet(DIR)` reads exactly the run tables, never
a half-written (hidden, temporary) one. `_index/<stored|table>/` caches the runs in parts, each
row keyed by its run file's name, size and modification time, so that a reader reads only new or
rewritten files; deleting the index is always safe, and a damaged part is rebuilt.
"""

import contextlib
import hashlib
import typing
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lab.evaluation import evaluate
from lab.results import columns
from lab.files import npz_arrays, write_atomic, write_group

CHECKPOINTS = "_checkpoints"
FIGURES = "_figures"
INDEX = "_index"
SWEEPS = "_sweeps"
"""The folder of sweep records: the composed config and command of each sweep that trained"""
SEARCH = "_search"
"""The folder of a search's own state and outcome (lab.search): Optuna's storage, best.yaml, figures"""


class ResultsError(RuntimeError):
    """A results directory holds something that is not a readable run table."""


def arrow_table(rows: pd.DataFrame) -> pa.Table:
    """The rows of a DataFrame in the schema (pandas' own conversion reads the timezone-aware
    columns through a call pandas deprecates)."""
    return table_of(rows.to_dict("records"))


def fingerprint(rows: pd.DataFrame, checkpoint: bytes | None = None) -> str:
    """A short hash of what a run's configuration and seed determine, the same on any machine
    (tests/test_same_rows.py): its rows (lab.results.columns.CIRCUMSTANCES left out, and the columns of
    bigger boards where null; floats to 12 decimals) and, if given, its checkpoint's arrays."""
    table = arrow_table(rows).drop_columns(list(columns.CIRCUMSTANCES))
    unused = [name for name in columns.BOARD_COLUMNS if table[name].null_count == len(table)]
    table = table.drop_columns(unused)
    digest = hashlib.sha256(table.to_pandas().round(12).to_csv(index=False).encode())
    if checkpoint is not None:
        arrays = npz_arrays(checkpoint)
        for name in sorted(arrays):
            array = arrays[name]
            digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode() + array.tobytes())
    return digest.hexdigest()[:16]


def table_of(records: list[dict]) -> pa.Table:
    """Rows (dicts, as lab.run gives them) in the schema, built column by column without
    pandas (a tenth of `arrow_table`'s time); NaN becomes null, as pandas' conversion makes it."""
    present = set().union(*records)
    arrays = [pa.array([row.get(field.name) for row in records], field.type, from_pandas=True)
              if field.name in present else pa.nulls(len(records), field.type) for field in columns.schema()]
    return pa.table(arrays, schema=columns.schema())


def parquet_bytes(table: pa.Table) -> bytes:
    """A run table as a Parquet file's bytes, written as cheaply as a worker can: without the Arrow
    schema (Parquet's types read back the same, tests/test_results.py; it was a third of a short
    run's file), dictionary encoding (a fifth of the time; snappy finds the repeated strings) or
    column statistics (a quarter of the time, and a file is one row group a reader reads anyway)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, store_schema=False, use_dictionary=False, write_statistics=False)
    return sink.getvalue().to_pybytes()


class Packed(typing.NamedTuple):
    """A run ready to store (`pack`); once stored (`commit`), its table alone, for the index."""

    run_id: str
    table: pa.Table
    parquet: bytes | None
    """None once the worker wrote it"""
    checkpoint: bytes | None
    key: str | None = None
    """its index key (`index_key`), once written"""
    store_seconds: float = 0.0
    """the worker's time packing and storing it (its share of its batch's)"""

    @property
    def status(self) -> str:
        return status_of(self.table["status"].to_pylist())

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def error(self) -> str | None:
        return self.table["error"][0].as_py()

    @property
    def rows(self) -> pd.DataFrame:
        """The run's rows as `load` gives them (for Hydra's callbacks and the trackers)."""
        return self.table.to_pandas(types_mapper=_NULLABLE.get)

    def __reduce__(self):
        # Its table travels as one Arrow IPC stream: pickled column by column, a run table of
        # this schema took 3.7 ms to send and 1.9 ms to receive, the driver's whole budget.
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.table.schema) as stream:
            stream.write_table(self.table)
        return _unpickled, (sink.getvalue(), self.run_id, *self[2:])


def _unpickled(stream: pa.Buffer, run_id: str, *rest) -> Packed:
    return Packed(run_id, pa.ipc.open_stream(stream).read_all(), *rest)


def pack(ran: list) -> list[Packed]:
    """RunResults (lab.run) packed for storing, each run's table a slice of one table of all their
    rows: pyarrow's cost is per column, and a short run's own table cost five times as much."""
    table = table_of([row for result in ran for row in result.records])
    packs, start = [], 0
    for result in ran:
        part = table.slice(start, len(result.records))
        start += len(result.records)
        packs.append(Packed(result.run_id, part, parquet_bytes(part), result.checkpoint))
    return packs


def commit(results_dir, packs: list[Packed]) -> list[Packed]:
    """Store packed runs into results_dir at once, durably (lab.files.write_group: one flush to
    the disk for them all): each checkpoint before its table, whose presence marks the run done.
    Returns them written (with their index keys); a run is stored only when this returns."""
    results_dir = Path(results_dir)
    files = [(results_dir / CHECKPOINTS / f"{p.run_id}.npz", p.checkpoint) for p in packs if p.checkpoint is not None]
    files += [(results_dir / f"{p.run_id}.parquet", p.parquet) for p in packs]
    write_group(files)
    return [p._replace(parquet=None, checkpoint=None, key=index_key(results_dir / f"{p.run_id}.parquet"))
            for p in packs]


class Writer:
    """Keeps the index of one results_dir as a sweep stores runs into it: the runs it is told of
    (`record`) are added a part of about `part_rows` (PART_ROWS) at a time, the last by `flush`."""

    COMBINED = 128
    """Run tables joined into one as they come: a part of thousands of one-row tables joined at
    once costs three times as much, and at the sweep's end (1.5 s for 3,000 runs of 179 columns)"""

    def __init__(self, results_dir, part_rows: int = None):
        self.results_dir = Path(results_dir)
        self.tables, self.waiting, self.counts, self.stored = [], [], [], []  # stored: index rows, keys too
        self.rows = 0
        self.part_rows = part_rows or PART_ROWS

    def record(self, written: list[Packed]) -> None:
        """Add runs stored in results_dir (`commit`) to the index."""
        for packed in written:
            self.waiting.append(packed.table)
            self.counts.append(packed.table.num_rows)
            self.stored.append({**_stored_values(packed.table), "_key": packed.key})
            self.rows += packed.table.num_rows
        if len(self.waiting) >= self.COMBINED:
            self._combine()
        if self.rows >= self.part_rows:
            self.flush()

    def _combine(self) -> None:
        self.tables.append(pa.concat_tables(self.waiting).combine_chunks())  # one chunk: Parquet pays per chunk
        self.waiting = []

    def flush(self) -> None:
        if not self.stored:
            return
        if self.waiting:
            self._combine()
        table = pa.concat_tables(self.tables).combine_chunks()
        keys = np.repeat(np.array([row["_key"] for row in self.stored], dtype=object), self.counts)
        table = table.append_column("_key", pa.array(keys, pa.string()))
        for name, part in (("table", table), ("stored", pa.Table.from_pylist(self.stored, schema=_STORED_SCHEMA))):
            with contextlib.suppress(OSError):  # the index is a cache: the runs are saved anyway
                _write_part(self.results_dir / INDEX / name, [part])
        self.tables, self.counts, self.stored = [], [], []
        self.rows = 0


def run_files(results_dir) -> list[Path]:
    return sorted(p for p in Path(results_dir).glob("*.parquet") if not p.name.startswith((".", "_")))


def read_run(path: Path, columns=None) -> pa.Table:
    """One run table (these columns of it), or a ResultsError naming the file."""
    try:
        with pq.ParquetFile(path) as f:
            table = f.read(columns=columns, use_threads=False)  # `_indexed` reads files in parallel
        if not {"run_id", "status"} <= set(table.column_names):  # read() skips missing columns
            raise pa.ArrowInvalid("it has no run_id and status columns")
        return table
    except (pa.ArrowException, OSError) as exc:
        raise ResultsError(
            f"results_dir holds {path}, which is not a readable run table ({exc}); "
            "results_dir must hold only run tables: move it out"
        ) from None


PART_ROWS = 5_000
"""A sweep adds the runs it saves to the index in parts of about this many rows (some 8 MB):
bounded memory in the driver, few parts to read."""


def index_key(path: Path) -> str:
    """A run file's index key: its name, size and modification time (a rewrite changes it)."""
    stat = path.stat()
    return f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}"


PART = ".part"
"""The index parts' suffix: Parquet files, but not named *.parquet, so that a glob for run tables,
recursive or not (DuckDB's read_parquet('DIR/**/*.parquet')), never reads a row twice"""


def _write_part(folder: Path, tables: list[pa.Table]) -> None:
    """One more part of an index, under a name of its own; not flushed to the disk (a part torn by
    a crash is read as damaged, and its runs from their files)."""
    table = pa.concat_tables(tables, promote_options="permissive")  # not combined: the same file, one copy less
    write_atomic(folder / f"{uuid.uuid4().hex}{PART}", lambda f: pq.write_table(table, f))


def _indexed(results_dir, name: str, read, write: bool) -> pa.Table | None:
    """`read(path)` of every run file in results_dir, concatenated, through the index
    results_dir/_index/<name>/ (parts; see the module doc); None when there is no run file.
    With `write`, the index is brought up to date when it was not: a part with the files read
    now, or, when parts hold what no file holds any more, one part with everything instead."""
    keys = {index_key(path): path for path in run_files(results_dir)}
    folder = Path(results_dir) / INDEX / name
    parts = sorted(folder.glob(f"*{PART}"))
    before = list(folder.glob("*.parquet"))  # parts written before PART, removed when it is written
    cached, seen, stale = [], set(), False
    for part in parts:
        try:
            table = pq.read_table(part)
            wanted = pc.is_in(table["_key"], value_set=pa.array(list(keys.keys() - seen), pa.string()))
            kept = table if pc.all(wanted).as_py() is not False else table.filter(wanted)
        except (pa.ArrowException, OSError, KeyError):  # damaged, or replaced meanwhile: re-read
            stale = True
            continue
        stale |= kept.num_rows < table.num_rows  # removed or rewritten files, or a repeat
        seen.update(pc.unique(kept["_key"]).to_pylist())
        cached.append(kept)
    new = [key for key in keys if key not in seen]
    with ThreadPoolExecutor() as pool:  # pyarrow reads without the GIL; small files cost per file
        read_now = list(pool.map(read, [keys[key] for key in new]))
    added = [t.append_column("_key", pa.array([key] * t.num_rows, pa.string()))
             for key, t in zip(new, read_now)]
    tables = cached + added
    # one chunk per column instead of one per file: to_pandas takes half the time
    table = pa.concat_tables(tables, promote_options="permissive").combine_chunks() if tables else None
    if write and (added or stale):
        with contextlib.suppress(OSError):  # a read-only results_dir: read without the index
            for part in before:
                part.unlink(missing_ok=True)
            if stale:
                if table is not None:
                    _write_part(folder, [table])
                for part in parts:
                    part.unlink(missing_ok=True)
            else:
                _write_part(folder, added)
    return table.drop_columns("_key") if table is not None else None


class Stored(typing.NamedTuple):
    """What resuming needs to know of a stored run."""

    status: str
    """'finished', 'failed' or 'stopped' (ended early by a search scheduler)"""
    code: Mapping
    """lab_version, git_commit and git_dirty of the code that trained it (None where the file has
    no such column: a run stored before the lab recorded provenance)"""


_STORED = ("run_id", "status", *columns.CODE)


def status_of(statuses) -> str:
    """The status of a run from its rows' (or of a trial from its runs'): failed, stopped or finished."""
    seen = set(statuses)
    return "failed" if "failed" in seen else "stopped" if "stopped" in seen else "finished"


def first_values(table: pa.Table, names) -> dict:
    """The first row's values of these columns (None where the table has no such column)."""
    where = {name: table.schema.get_field_index(name) for name in names}  # column_names would build them all
    return {name: table.column(i)[0].as_py() if i >= 0 and table.num_rows else None for name, i in where.items()}


_STORED_SCHEMA = pa.schema([("run_id", pa.string()), ("status", pa.string()),
                            *((name, dict(columns.PROVENANCE)[name]) for name in columns.CODE),
                            ("_key", pa.string())])
"""The stored index's rows (`stored`): a run's id, status and code, and its file's key."""


def _stored_values(table: pa.Table) -> dict:
    """What resuming needs of a run's table (a run stored before provenance lacks columns.CODE;
    a table without a run id counts as failed)."""
    values = first_values(table, _STORED)
    status = status_of(table["status"].to_pylist()) if values["run_id"] is not None else "failed"
    return {**values, "status": status}


def _stored_row(path: Path) -> pa.Table:
    """The stored index's row of a run file (read from its columns, not footer statistics: those,
    read on threads, kept ~180 MB per 1,000 files)."""
    table = read_run(path, columns=list(_STORED))
    return pa.Table.from_pylist([_stored_values(table)], schema=_STORED_SCHEMA.remove(len(_STORED_SCHEMA) - 1))


def stored(results_dir, write_index: bool = False) -> dict[str, Stored]:
    """run_id -> its Stored status and code for every run in results_dir. Planning a sweep writes
    nothing (a dry run or a refused grid leaves the disk as it was); `write_index` indexes the runs
    found here, and the sweep's Writer the runs it saves."""
    table = _indexed(results_dir, "stored", _stored_row, write_index)
    if table is None:
        return {}
    return {row["run_id"]: Stored(row["status"], {name: row[name] for name in columns.CODE})
            for row in table.to_pylist() if row["run_id"]}


def statuses(results_dir, write_index: bool = False) -> dict[str, str]:
    """run_id -> 'finished', 'failed' or 'stopped' for every run stored in results_dir (`stored`)."""
    return {run_id: s.status for run_id, s in stored(results_dir, write_index).items()}


_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
"""Integer and boolean columns stay integers and booleans in pandas where some rows are null (the
evaluation columns between evaluations, the knobs an algorithm does not use, a failed run's row)."""


def _frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=_NULLABLE.get).sort_values(["run_id", "iteration"], ignore_index=True)


def load(results_dir) -> pd.DataFrame:
    """Every run in results_dir as one DataFrame, one row per (run, iteration); brings the index up
    to date."""
    table = _indexed(results_dir, "table", read_run, write=True)
    if table is None:
        missing = not Path(results_dir).exists()
        raise ResultsError(f"{results_dir}: no such folder" if missing else f"no run tables (*.parquet) in {results_dir}")
    return _frame(table)


def read_runs(results_dir, run_ids) -> pd.DataFrame:
    """Only these runs of results_dir (from their files, not through the index: a few runs of a big
    directory), as `load` gives them; runs without a file are left out."""
    paths = [Path(results_dir) / f"{run_id}.parquet" for run_id in dict.fromkeys(run_ids)]
    tables = [read_run(path) for path in paths if path.exists()]
    if not tables:
        return pd.DataFrame(columns=columns.schema().names)
    return _frame(pa.concat_tables(tables, promote_options="permissive"))


def runs(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run of a loaded table (`load`): its last row."""
    return frame.sort_values(["run_id", "iteration"]).groupby("run_id", sort=False).tail(1) \
        .reset_index(drop=True)


def evaluations(frame: pd.DataFrame) -> pd.DataFrame:
    """The evaluation points of a loaded table as a long table: one row per (run, evaluated
    iteration, seat evaluated: the agent's, both in self-play) with a `seat` column and
    lab.evaluation.evaluate's measures under their plain keys (random_win, ...), beside every other column."""
    keys = [*evaluate.KEYS, *(key for key in evaluate.BOARD_KEYS if key not in evaluate.KEYS)]
    plain = {seat: {evaluate.column(seat, key): key for key in keys if evaluate.column(seat, key) in frame.columns}
             for seat in (1, 2)}
    keep = [c for c in frame.columns if c not in {**plain[1], **plain[2]}]
    parts = []
    for seat, names in plain.items():
        if not set(evaluate.column(seat, key) for key in evaluate.KEYS) <= set(frame.columns):
            continue
        evaluated = frame[evaluate.column(seat, "random_win")].notna()
        in_seat = (frame["opponent"] == "self") | (frame["player"] == seat)
        rows = frame.loc[evaluated & in_seat, keep + list(names)]
        parts.append(rows.rename(columns=names).assign(seat=seat))
    if not parts:
        return pd.DataFrame(columns=keep + ["seat", *evaluate.KEYS])
    return pd.concat(parts, ignore_index=True)


def checkpoint(results_dir, run_id: str) -> Path:
    return Path(results_dir) / CHECKPOINTS / f"{run_id}.npz"
