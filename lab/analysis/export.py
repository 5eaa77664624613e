"""A results_dir in the experiment trackers users already look at: `lab-export RESULTS_DIR --to
mlflow|tensorboard` (the `tracking` extra: pip install -e '.[tracking]').

The run tables stay the source of truth; a tracker holds a view of them, written after the fact:
- one tracker run per lab run: its knobs as params, its provenance and status as tags, the
  training win rates of every iteration and every exact-evaluation column as metrics at step =
  training episodes (so the last value is the final one), and its checkpoint as an artifact
  (MLflow);
- one parent run per sweep record in `_sweeps/` (MLflow), holding the runs that sweep trained:
  those that started after its record was written and before the next one's;
- TensorBoard: a folder per run under `_tensorboard/`, with HParams summaries (the knobs, the
  final evaluation) so TensorBoard's table, parallel-coordinates and scatter views work.

Exporting again adds only the runs not exported yet (MLflow: a run is known by its `lab.run_id`
tag; TensorBoard: by its folder). MLflow's default store is a SQLite file in
`RESULTS_DIR/_mlflow/`; `--uri` names any tracking URI.
"""

import argparse
import logging
import multiprocessing
import os
import shutil
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from lab import cli, results
from lab.analysis import summary
from lab.results import columns
from lab.cli import fail, first_line, one_line, plural, results_dir_argument

TARGETS = ("mlflow", "tensorboard")
MLFLOW, TENSORBOARD = "_mlflow", "_tensorboard"
"""The folders of a results_dir an export writes by default (skipped by the lab's readers)"""
EXPORTED = ".lab_started"
"""In a run's TensorBoard folder: the start (ms) of the run it holds; another start exports it again"""
RUN_ID_TAG, RECORD_TAG = "lab.run_id", "lab.sweep_record"
TRAINING = ("p1_win_rate", "p2_win_rate", "draw_rate", "train_epsilon")
"""The per-iteration training columns exported as metrics"""
TAGS = ("status", "error", "started_utc", "finished_utc", "lab_version", "git_commit", "git_dirty",
        "command", "host", "python_version", "numpy_version", "numba_version", "ray_version",
        "pandas_version")
EVALUATED = tuple(name for name, _ in columns.EVALUATION)
"""The exact-evaluation columns (eval_p1_..., eval_p2_..., eval_alternated_...)"""
STATUS = {"finished": "FINISHED", "failed": "FAILED", "stopped": "KILLED"}
"""A lab run's status as MLflow's run status"""


def knobs(row: pd.Series) -> dict:
    """The knobs of a run (one of its rows) that it sets: plain Python values, nulls left out."""
    return {k: _python_value(row[k]) for k in summary.knob_columns(row) if not pd.isna(row[k])}


def metrics(rows: pd.DataFrame) -> list[tuple[str, float, int]]:
    """(name, value, step) of every training and evaluation value of a run, step = episodes."""
    names = [c for c in (*TRAINING, *EVALUATED) if c in rows.columns]
    values = rows[names].astype("float64").to_numpy()
    steps = rows["episodes"].astype("int64").to_numpy()
    kept = np.isfinite(values)  # nulls between evaluations, where an algorithm has no epsilon
    r, c = np.nonzero(kept)
    return [(names[j], float(values[i, j]), int(steps[i])) for i, j in zip(r, c)]


def final(rows: pd.DataFrame) -> dict[str, float]:
    """The last evaluation of a run: every eval_ column of its last evaluated row, and per seat and
    opponent `..._win_minus_loss`, the objective the summary ranks by."""
    evaluated = [c for c in EVALUATED if c in rows.columns]
    last = rows.dropna(subset=evaluated, how="all").sort_values("iteration").tail(1)
    if last.empty:
        return {}
    ends = {c: float(last[c].iloc[0]) for c in evaluated if not pd.isna(last[c].iloc[0])}
    scores = {win[:-len("win")] + "win_minus_loss": ends[win] - ends[win[:-len("win")] + "loss"]
              for win in ends if win.endswith("_win") and win[:-len("win")] + "loss" in ends}
    return ends | scores


def records(results_dir: Path) -> list[tuple[pd.Timestamp, Path, dict]]:
    """(when the sweep started, file, record) of results_dir's sweep records, oldest first."""
    out = []
    for path in sorted((results_dir / results.SWEEPS).glob("*.yaml")):
        record = yaml.safe_load(path.read_text()) or {}
        if "started_utc" in record:
            out.append((pd.Timestamp(record["started_utc"]), path, record))
    return sorted(out, key=lambda r: r[0])


# ---- MLflow -------------------------------------------------------------------------------------


class MlflowStore:
    """results_dir's experiment in an MLflow store (created if new; default: SQLite in
    RESULTS_DIR/_mlflow), the runs exported there before, and a parent run per sweep record."""

    def __init__(self, results_dir: Path, uri: str | None = None, experiment: str | None = None):
        folder = results_dir / MLFLOW
        if uri is None:
            folder.mkdir(parents=True, exist_ok=True)
            uri = f"sqlite:///{folder / 'mlflow.db'}"
        self.results_dir, self.uri, self.client = results_dir, uri, _client(uri)
        name = experiment or results_dir.name
        found = self.client.get_experiment_by_name(name)
        self.experiment_id = found.experiment_id if found else self.client.create_experiment(
            name, artifact_location=(folder / "artifacts").as_uri() if uri.startswith("sqlite:") else None,
            tags={"lab.results_dir": str(results_dir)})
        self.known = _known(self.client, self.experiment_id)
        self.parents = {path.name: self.known.get(f"{RECORD_TAG}={path.name}", (None,))[0]
                        or _parent_run(self.client, self.experiment_id, path, when, record)
                        for when, path, record in records(results_dir)}

    def export(self, table: pd.DataFrame) -> int:
        """Export `table`'s runs not in the store yet, or trained again since (another start: the old
        MLflow run is deleted); how many were written. Thousands of runs go out from a process per
        core: MLflow's store spends its time in Python per call, a few calls per run."""
        todo = [r for r, rows in table.groupby("run_id", sort=False) if self._stale(r, rows)]
        workers = min(os.cpu_count() or 1, max(1, len(todo) // PER_WORKER))
        if workers == 1:
            written = _export_runs(self.client, self.results_dir, self.experiment_id,
                                   table[table["run_id"].isin(todo)], self.parents)
        else:
            chunks = [(self.results_dir, self.uri, self.experiment_id, todo[i::workers], self.parents)
                      for i in range(workers)]
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                written = sum(pool.map(_export_chunk, chunks))
        self.known.update({f"{RUN_ID_TAG}={r}": (None, _millis(_started(rows)))
                           for r, rows in table[table["run_id"].isin(todo)].groupby("run_id")})
        return written

    def _stale(self, run_id: str, rows: pd.DataFrame) -> bool:
        """Whether a run is not in the store as it is now; a version of it trained before is deleted."""
        mlflow_id, started = self.known.get(f"{RUN_ID_TAG}={run_id}", (None, None))
        now = _millis(_started(rows))
        if mlflow_id is not None and now is not None and started != now:
            self.client.delete_run(mlflow_id)
            return True
        return f"{RUN_ID_TAG}={run_id}" not in self.known


PER_WORKER = 200
"""Runs that pay for a further export process (a second or so to start it and open the store)"""


def _export_chunk(args) -> int:
    """`_export_runs` in a worker process of its own: its own client and share of the table."""
    results_dir, uri, experiment_id, run_ids, parents = args
    table = results.load(results_dir)
    return _export_runs(_client(uri), results_dir, experiment_id, table[table["run_id"].isin(run_ids)],
                        parents)


def _export_runs(client, results_dir: Path, experiment_id: str, table: pd.DataFrame, parents: dict) -> int:
    """One MLflow run per lab run of `table`, under the run of the sweep that trained it."""
    # the tracking extra, optional (~1 s): only an export
    from mlflow.entities import Metric, Param
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    sweeps = records(results_dir)
    for run_id, rows in table.groupby("run_id", sort=True):
        first = rows.iloc[0]
        tags = {RUN_ID_TAG: run_id,
                **{k: str(_python_value(first[k])) for k in TAGS if k in rows and not pd.isna(first[k])}}
        # its sweep's record: the last one written before it started (just before its sweep trained)
        before = [path for when, path, _ in sweeps if "started_utc" in rows and when <= first["started_utc"]]
        if before:
            tags["mlflow.parentRunId"] = parents[before[-1].name]
        started = _millis(first.get("started_utc"))
        run = client.create_run(experiment_id, start_time=started, tags=tags,
                                run_name=f"{first['algorithm']}-{run_id}")
        params = [Param(k, str(v)) for k, v in knobs(first).items()]
        values = [Metric(k, v, started or 0, step) for k, v, step in metrics(rows)]
        for i in range(0, max(len(params), 1), 100):  # log_batch takes at most 100 params
            client.log_batch(run.info.run_id, params=params[i:i + 100], metrics=values[:1000] if i == 0 else [])
        for i in range(1000, len(values), 1000):  # and 1,000 metrics
            client.log_batch(run.info.run_id, metrics=values[i:i + 1000])
        checkpoint = results.checkpoint(results_dir, run_id)
        if checkpoint.exists():  # into the run's artifact URI, known here: MlflowClient.log_artifact
            # would read the whole run back from the store to find it (a third of a run's time
            # when it has few metrics)
            get_artifact_repository(run.info.artifact_uri, tracking_uri=client.tracking_uri).log_artifact(
                str(checkpoint))
        client.set_terminated(run.info.run_id, status=STATUS.get(str(first["status"]), "FINISHED"),
                              end_time=_millis(first.get("finished_utc")))
    return table["run_id"].nunique()


def _parent_run(client, experiment_id, path: Path, when: pd.Timestamp, record: dict) -> str:
    """An MLflow run standing for one sweep record: its overrides and settings as params."""
    from mlflow.entities import Param  # the tracking extra, optional (~1 s): only an export

    tags = {RECORD_TAG: path.name, "command": str(record.get("command", "")),
            **{f"code.{k}": str(v) for k, v in (record.get("code") or {}).items()}}
    run = client.create_run(experiment_id, start_time=_millis(when), tags=tags, run_name=f"sweep {path.stem}")
    params = [Param("overrides", " ".join(map(str, record.get("overrides") or []))[:6000]),
              *(Param(f"runs.{k}", str(v)) for k, v in (record.get("runs") or {}).items())]
    client.log_batch(run.info.run_id, params=params)
    client.set_terminated(run.info.run_id, end_time=_millis(when))
    return run.info.run_id


def _known(client, experiment_id) -> dict[str, tuple[str, int]]:
    """'tag=value' -> (MLflow run id, start time in ms) of every run of the experiment the lab
    exported before."""
    known, token = {}, None
    while True:
        page = client.search_runs([experiment_id], max_results=5000, page_token=token)
        for run in page:
            for tag in (RUN_ID_TAG, RECORD_TAG):
                if tag in run.data.tags:
                    known[f"{tag}={run.data.tags[tag]}"] = run.info.run_id, run.info.start_time
        token = page.token
        if not token:
            return known


def _client(uri: str):
    """An MLflow client of the store at `uri`; SQLite stores without a sync to disk at every commit
    (MLflow commits a few times per run): an export is written again by running it again, so what a
    crash could lose is never lost."""
    # the tracking extra (MLflow and its SQLAlchemy), optional (~1 s): only an export
    from mlflow.tracking import MlflowClient
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not event.contains(Engine, "connect", _unsynced):
        event.listen(Engine, "connect", _unsynced)
    # MLflow logs its store's setup at INFO on stderr ("Creating initial MLflow database tables..."):
    # noise beside the export's own line; its warnings still show
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=uri)


def _unsynced(connection, _record) -> None:
    if isinstance(connection, sqlite3.Connection):
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=OFF")


# ---- TensorBoard --------------------------------------------------------------------------------


def to_tensorboard(results_dir: Path, table: pd.DataFrame, logdir: Path | None) -> int:
    """A folder per run not exported yet, or trained again since, under logdir (default
    RESULTS_DIR/_tensorboard): its curves as scalars and its knobs and final evaluation as an
    HParams session."""
    # the tracking extra, optional: only an export to TensorBoard
    from tensorboardX import SummaryWriter
    from tensorboardX.summary import hparams

    logdir = logdir or results_dir / TENSORBOARD
    written = 0
    for run_id, rows in table.groupby("run_id", sort=True):
        folder = logdir / f"{rows['algorithm'].iloc[0]}-{run_id}"
        version = str(_millis(_started(rows)))
        if (folder / EXPORTED).exists() and (folder / EXPORTED).read_text() == version:
            continue
        partial = logdir / f".{folder.name}.partial"  # whole, or not there
        shutil.rmtree(partial, ignore_errors=True)
        with SummaryWriter(logdir=str(partial)) as writer:
            for name, value, step in metrics(rows):
                writer.add_scalar(f"{'train' if name in TRAINING else 'eval'}/{name}", value, step)
            ends = {f"final/{k}": v for k, v in final(rows).items()}
            hparam_values = {k: v if isinstance(v, (bool, int, float, str)) else str(v)
                             for k, v in knobs(rows.iloc[0]).items()}
            for summary in hparams(hparam_values, ends):
                writer.file_writer.add_summary(summary)
            for name, value in ends.items():
                writer.add_scalar(name, value, int(rows["episodes"].max()))
        (partial / EXPORTED).write_text(version)
        shutil.rmtree(folder, ignore_errors=True)  # a version trained before
        partial.rename(folder)
        written += 1
    return written


# ---- as a sweep saves its runs (hydra.launcher.track) ------------------------------------------


class Tracker:
    """Exports a sweep's runs to `to` one at a time as its driver saves them, into results_dir's
    default store, as a later `lab-export RESULTS_DIR --to TO` would; opened at the first run."""

    def __init__(self, results_dir: Path, to: str):
        self.results_dir, self.to, self.store = Path(results_dir).resolve(), to, None

    def __call__(self, run_id: str) -> bool:
        """Export the saved run `run_id` unless the store holds it; whether it was written."""
        rows = results.read_runs(self.results_dir, [run_id])  # as lab-export reads it
        if self.to == "tensorboard":
            return to_tensorboard(self.results_dir, rows, None) == 1
        self.store = self.store or MlflowStore(self.results_dir)
        return self.store.export(rows) == 1


# ---- the command line ---------------------------------------------------------------------------


def export(results_dir, to: str, uri: str | None = None, experiment: str | None = None) -> int:
    """Export results_dir's runs to `to` (TARGETS); returns how many runs were written."""
    if to not in TARGETS:
        raise ValueError(f"--to {to!r} is not allowed: {' or '.join(TARGETS)}")
    results_dir = Path(results_dir).resolve()
    table = results.load(results_dir)
    if to == "mlflow":
        return MlflowStore(results_dir, uri, experiment).export(table)
    return to_tensorboard(results_dir, table, Path(uri) if uri else None)


@one_line(results.ResultsError)  # a results_dir that is not one: exit 2; a folder it cannot write: exit 1
def main() -> None:
    parser = cli.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", help="a sweep's results_dir (holds <run_id>.parquet files)")
    parser.add_argument("--to", required=True, choices=TARGETS)
    parser.add_argument("--uri", help="MLflow: a tracking URI (default: SQLite in RESULTS_DIR/_mlflow); "
                                      "TensorBoard: the log folder (default: RESULTS_DIR/_tensorboard)")
    parser.add_argument("--experiment", help="MLflow experiment name (default: the results_dir's name)")
    args = parser.parse_args()
    start = time.perf_counter()
    results_dir_argument(args.results_dir)
    try:
        written = export(args.results_dir, args.to, args.uri, args.experiment)
    except ImportError as exc:
        fail(f"exporting to {args.to} needs the tracking extra ({exc.name} is missing): "
             "pip install -e '.[tracking]'")
    except Exception as exc:  # noqa: BLE001 - only MLflow's own errors are answered here
        if type(exc).__module__.split(".")[0] != "mlflow":
            raise
        fail(f"--uri {args.uri}: MLflow cannot use it ({first_line(exc)})" if args.uri else
             f"MLflow: {first_line(exc)}")
    print(f"{plural(written, 'run')} exported to {args.to} in {time.perf_counter() - start:.1f} s "
          f"(runs exported before are kept)")


def _python_value(value):
    """A table cell as a plain Python value (a numpy scalar unwrapped), for a tracker's API."""
    return value.item() if hasattr(value, "item") else value


def _started(rows: pd.DataFrame):
    """When a run's training started, if recorded: its version (a run trained again starts later)."""
    return rows["started_utc"].iloc[0] if "started_utc" in rows else None


def _millis(when) -> int | None:
    if pd.isna(when):
        return None
    return int(pd.Timestamp(when).timestamp() * 1000)


if __name__ == "__main__":
    main()
