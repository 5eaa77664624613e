"""One configuration -> a trained agent, one tidy row per iteration, and a checkpoint.

`run` never raises for a failing learner: an exception or a diverging network ends the run with
status "failed" and the error in every row, so a sweep records it and goes on.
"""

import contextlib
import io
import json
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numba.core import event

import lab
from lab import evaluate, provenance
from lab.agents.base import Agent
from lab.config import Job
from lab.knobs import RunConfig

_IMPORT_SECONDS = time.perf_counter() - lab.IMPORT_STARTED
_first_run_in_process = True

# numba holds its compiler lock while it compiles a kernel or loads it from its on-disk cache: the
# time under the lock is the start-up a worker's first runs pay, kept out of train/eval seconds.
_compiling = event.TimingListener()
event.register("numba:compiler_lock", _compiling)


def in_the_driver() -> None:
    """This process is a sweep's driver: its imports are the sweep's fixed cost, not its first
    run's start-up."""
    global _first_run_in_process
    _first_run_in_process = False


def _compile_seconds() -> float:
    return _compiling.duration if _compiling.done else 0.0


class _Clock:
    """Seconds of `with clock:` blocks, minus the numba compilation inside them."""

    def __init__(self):
        self.seconds = self.compiling = 0.0

    def __enter__(self):
        self._start, self._compiled = time.perf_counter(), _compile_seconds()

    def __exit__(self, *exc):
        compiling = _compile_seconds() - self._compiled
        self.seconds += time.perf_counter() - self._start - compiling
        self.compiling += compiling


@dataclass
class RunResult:
    run_id: str
    rows: pd.DataFrame
    checkpoint: bytes | None
    """the final agent as .npz bytes (None when the run failed)"""

    @property
    def failed(self) -> bool:
        return bool((self.rows["status"] == "failed").any())

    @property
    def stopped(self) -> bool:
        return bool((self.rows["status"] == "stopped").any())


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} in a run row")


def snapshot(learner, rows: list[dict], train_seconds: float) -> bytes:
    """A run in progress as .npz bytes: the learner's whole training state (Learner.state) and
    the rows trained so far (JSON). Never pickled; `resume` reads it back."""
    progress = json.dumps({"rows": rows, "train_seconds": train_seconds}, default=_plain)
    buffer = io.BytesIO()
    np.savez(buffer, run_progress=np.array(progress), **learner.state())
    return buffer.getvalue()


def resume(data: bytes, learner) -> tuple[list[dict], float]:
    """Restore a `snapshot` into a freshly built learner; the rows and training seconds so far."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = dict(archive)
    progress = json.loads(str(arrays.pop("run_progress")))
    learner.restore(arrays)
    return progress["rows"], progress["train_seconds"]


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def evaluation(agent: Agent, run_cfg: RunConfig) -> dict:
    """lab.evaluate.exact of the agent in the seats it trains in (both in self-play), as
    columns eval_p<seat>_<key>; evaluated in both seats, also the seats-alternated results
    (lab.evaluate.alternated) as eval_alternated_<key>."""
    seats = run_cfg.seats
    moves = agent.move_table(seats[0] if len(seats) == 1 else None)
    measured = {seat: evaluate.exact(moves, seat) for seat in seats}
    columns = {evaluate.column(seat, key): value
               for seat, result in measured.items() for key, value in result.items()}
    if len(measured) == 2:
        columns.update({evaluate.alternated_column(key): value for key, value in
                        evaluate.alternated(measured[1], measured[2]).items()})
    return columns


def run(job: Job, code: dict | None = None, *, state_path=None, save_every: int | None = None,
        report=None, start: bytes | None = None, run_id: str | None = None) -> RunResult:
    """Train one validated run (lab.config.job). `code` is the driver's lab.provenance.code()
    (this process's when None), stamped with the run's times and machine on every row.

    Resuming: with `state_path` and `save_every`, the run's training state (`snapshot`) is written
    there atomically every `save_every` iterations, and a run that finds a state there starts from
    it instead of from zero (the file is removed when the run ends). `start` is such a snapshot
    given directly (a search's checkpoint). `report(iteration, rows, learner)`, called after every
    evaluation, ends the run early with status "stopped" when it returns True (a search
    scheduler's decision). `run_id` replaces the job's (a search trial whose knobs change)."""
    global _first_run_in_process
    started, wall = pd.Timestamp.now(tz="UTC"), time.perf_counter()
    startup = _IMPORT_SECONDS if _first_run_in_process else 0.0
    _first_run_in_process = False
    run_cfg = job.run
    columns = {"run_id": run_id or job.run_id, **job.identity()}
    rows, checkpoint, error, stopped = [], None, None, False
    episodes = 0
    training, evaluating = _Clock(), _Clock()
    state_path = Path(state_path) if state_path is not None else None
    try:
        learner = job.algorithm.Learner(job.knobs, run_cfg)
        if start is None and state_path is not None and state_path.exists():
            start = state_path.read_bytes()
        if start is not None:
            rows, training.seconds = resume(start, learner)
            for row in rows:
                row["run_id"] = columns["run_id"]
            episodes = rows[-1]["episodes"] if rows else 0
            evaluating.seconds = rows[-1].get("eval_seconds", 0.0) if rows else 0.0
        for iteration in range(len(rows) + 1, run_cfg.iterations + 1):
            with training:
                p1_wins, p2_wins, draws = learner.iterate()
            episodes += run_cfg.episodes_per_update
            n = run_cfg.episodes_per_update
            rows.append({
                **columns,
                "iteration": iteration,
                "episodes": int(episodes),
                "p1_wins": int(p1_wins), "p2_wins": int(p2_wins), "draws": int(draws),
                "p1_win_rate": p1_wins / n, "p2_win_rate": p2_wins / n, "draw_rate": draws / n,
                "train_epsilon": learner.exploration(),
            })
            evaluated = iteration % run_cfg.eval_every == 0 or iteration == run_cfg.iterations
            if evaluated:
                with evaluating:
                    rows[-1].update(evaluation(learner.agent(), run_cfg))
            rows[-1].update(train_seconds=training.seconds, eval_seconds=evaluating.seconds)
            if evaluated and report is not None and report(iteration, rows, learner):
                stopped = iteration < run_cfg.iterations
                if stopped:
                    break
            if save_every and state_path is not None and iteration % save_every == 0 \
                    and iteration < run_cfg.iterations:
                _write_atomic(state_path, snapshot(learner, rows, training.seconds))
        checkpoint = learner.agent().to_bytes()
        if state_path is not None:
            state_path.unlink(missing_ok=True)
    except Exception as exc:  # noqa: BLE001 - any learner failure is recorded, not raised
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
    if error is not None and not rows:
        rows.append({**columns, "iteration": 0, "episodes": 0, "train_seconds": training.seconds,
                     "eval_seconds": evaluating.seconds})
    frame = pd.DataFrame(rows)
    frame["status"] = "failed" if error else "stopped" if stopped else "finished"
    frame["error"] = error
    frame["startup_seconds"] = startup + training.compiling + evaluating.compiling
    frame["wall_seconds"] = startup + time.perf_counter() - wall
    stamp = {"started_utc": started, "finished_utc": pd.Timestamp.now(tz="UTC"),
             **(code or provenance.code()), **provenance.machine()}
    frame = frame.assign(**stamp)
    return RunResult(columns["run_id"], frame, checkpoint)


def lost(job: Job, exc: BaseException) -> RunResult:
    """A run lost with the process that trained it (a Ray task failed for good, a fork died):
    one failed row, so the sweep records it and the next one re-trains it."""
    return RunResult(job.run_id, pd.DataFrame([{
        "run_id": job.run_id, **job.identity(), "iteration": 0, "episodes": 0,
        "train_seconds": 0.0, "status": "failed", "error": f"{type(exc).__name__}: {exc}",
    }]), None)


def run_batch(jobs: list[Job], code: dict, signal: str | None = None) -> list[RunResult]:
    """Train the jobs one after another: one Ray task of a sweep (lab.schedule.batches). Creates
    the file `signal` first, if given: the driver's forks (lab.forks) stop when it appears."""
    if signal is not None:
        with contextlib.suppress(OSError):  # a signal that cannot be given changes no result
            Path(signal).touch()
    return [run(job, code) for job in jobs]
